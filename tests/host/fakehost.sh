#!/usr/bin/env bash
# Simulated GPU hosts for testing roce-gen's bash bundles without RDMA hardware.
#
# A fake host is a directory ROOT holding the parts of /sys, /proc and /etc the scripts
# read (every path is reached as "$ROCE_GEN_ROOT/sys/...") plus stand-ins for the host
# tools (tests/host/stubs/, copied to ROOT/lib/fakehost/; ROOT/bin/TOOL links to the ones
# the host has installed, and `ln -s stub ROOT/bin/TOOL` adds another) that keep their
# state in the same tree (layout: tests/host/fixtures/README.md). Nothing in ROOT points
# outside it, so a tree can be copied (cp -a) and used as a template.
#
#   fakehost.sh create ROOT --kind ofed|inbox --host NAME
#                           --nic DEV:IF:BDF:MAC [--nic ...] [--missing DEV ...]
#                           [--lldp none|lldpd|lldpad] [--rootfs TYPE] [--mount PATH:TYPE ...]
#                           [--naming kernel|rdma]
#       e.g. --nic mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:01:00:00
#       --missing DEV leaves that NIC out entirely (card absent), so a test can pass the
#       plan's NIC list unchanged. Every NIC has a 400G CMIS optic (.fake/net/IF/module.txt,
#       a copy of fixtures/ethtool-m/cmis-400g-4lane.txt), link modes up to 400G, pause and
#       RDMA health counters. --lldp installs lldpd (lldpcli) or
#       lldpad (lldptool), running, with NIC N (from 0) cabled to leaf-N+1 port Eth1/1 in
#       .fake/lldp/IF; the default is none. ROOT must be absent or empty.
#       --naming rdma: the host has rdma-core's udev rule 60-rdma-persistent-naming.rules and
#       rdma_rename (stubs/rdma_rename), and its RDMA devices the names they gave them (DEV is the
#       kernel's name, mlx5_N; 0000:1a:00.0 becomes rocep26s0f0), as on an inbox Ubuntu or RHEL;
#       kernel (the default): the kernel's names stay, as with MLNX_OFED or NAME_KERNEL.
#       --rootfs: the root file system as the kernel's mount tables show it (proc/self/mountinfo
#       and proc/mounts, fs/proc_namespace.c show_mountinfo and show_vfsmnt, with sysfs, proc and
#       configfs mounted): xfs (the default with --kind ofed, RHEL's) or ext4 (inbox, Ubuntu's) on
#       /dev/sda2; tmpfs (a stateless node's root in memory, Warewulf's), rootfs (never switched
#       from the initramfs), overlay (over a read-only image, dracut's), nfs4 (a diskless node's
#       NFS root). --mount PATH:tmpfs|xfs|ext4 mounts another file system at PATH after them
#       (e.g. /var/lib/roce-gen:tmpfs).
#       The GID table of each port (ports/1/gids, gid_attrs/types, gid_attrs/ndevs, 16 entries;
#       a ConnectX has a few hundred) holds what the kernel puts there for the netdev's
#       addresses: the IPv6 link-local GID from the MAC at 0 (RoCE v1) and 1 (RoCE v2), then
#       each address, as an IPv4-mapped GID for IPv4, at the next two free indexes (v1, v2);
#       an unused entry reads as the zero GID with empty type and netdev files (driverfs
#       refuses to read those, EINVAL, as the kernel does).
#   fakehost.sh rename ROOT IF NEWNAME
#       the kernel renames netdev IF (dev_change_name, as udev's naming or a .link file does):
#       everything that shows the name follows (sys/class/net, the PCI function's net/ entry,
#       the GID table's ndevs, the stand-ins' state in .fake/*/IF); ifindex, MAC and settings stay.
#   fakehost.sh altname ROOT IF ALTNAME
#       adds an alternative name to IF (`ip link property add dev IF altname ALTNAME`): `ip`
#       shows and resolves it (.fake/net/IF/altnames); sysfs has no directory for it.
#   fakehost.sh addr ROOT IF [CIDR ...]
#       IF's addresses become the CIDRs (none: no address), in .fake/net/IF/addrs, and its
#       port's GID table follows, as when they are configured on a real host.
#   fakehost.sh vfs ROOT IF N [--uevents]
#       echo N > sriov_numvfs of the PF under IF: N SR-IOV VFs as the kernel lays them out
#       (virtfnK and physfn links, sriov_* attributes), each with a netdev IFvK and an RDMA
#       device (the next mlx5_M) at the kernel's defaults: RDMA-CM ToS 0, no verbs traffic
#       class; 0 removes them (or gives the PF SR-IOV and no VFs). --uevents: their uevents go
#       through the host's udev rules, then systemd runs the jobs they queued.
#   fakehost.sh snapshot ROOT [DIR ...]
#       "path=value" for every regular file under the DIRs (relative to ROOT; default
#       sys .fake), sorted; trailing newlines dropped, \ newline tab CR escaped as
#       \\ \n \t \r. Diff two snapshots to see what a script changed.
#   fakehost.sh run ROOT -- CMD [ARG ...]
#       runs CMD with ROCE_GEN_ROOT=ROOT, PATH=ROOT/bin:/usr/bin:/bin, STUB_LOG=ROOT/stub.log;
#       as root inside `unshare --mount --uts --net --fork` so tools the stubs do not
#       cover see an empty network namespace (FAKEHOST_ISOLATION=none disables that).
#       Isolated runs see ROOT/sys through driverfs (driverfs/driverfs.py, FUSE; Python
#       from FAKEHOST_PYTHON, default /usr/bin/python3, with python3-fusepy): the files
#       are the same, but the mlx5 attributes (traffic_class, ecn/*, mtu, rdma_cm configfs)
#       refuse what the kernel refuses and print what it prints. No FUSE: exit 2.
#       Says on stderr which way it ran; returns CMD's status.
#   fakehost.sh reload ROOT [--how openibd|modprobe|devlink|mlxfwreset|recovery|rescan]
#       the driver comes back (default `openibd restart`): runtime settings back to the driver
#       defaults, the RDMA devices unregistered and registered again with their uevents, which
#       tests/host/udevd/udevd.py runs through the host's udev rules (rdma-core's renaming
#       included); with openibd, ROOT/etc/infiniband/post-start-hook.sh if executable (via
#       run); then systemd runs the jobs they queued (a restarted unit runs). The hook's status.
#       See fakehost-reload.sh.
#   fakehost.sh reboot ROOT
#       a reboot: every card's firmware takes its next-boot NV values (.fake/nvconfig/*,
#       stubs/nvconfig.sh), systemd queues a start job for each enabled unit, the devices come
#       up as in reload (coldplug's `add` events, openibd's hook where OFED is), then the jobs
#       run: the boot unit runs once, as at a real boot.
#   fakehost.sh lag ROOT BOND DEV SLAVE,SLAVE[,...] [--switchdev]
#       the host bonds the PFs SLAVE,... (each with its own RDMA device) into BOND and mlx5
#       activates RoCE LAG: as the kernel lays it out, BOND is a netdev with no device link
#       (bond_sysfs.c: bonding/slaves "S1 S2", bonding/mode "802.3ad 4"; lower_S links, each
#       slave's master and upper_BOND links and bonding_slave/ files, bond_sysfs_slave.c); the
#       slaves take BOND's MAC, the first slave's (bond_enslave); the slaves' RDMA devices are
#       unregistered and one LAG device DEV (mlx5_bond_N) is registered on the first slave's PCI
#       function (mlx5_ib main.c: name "mlx5_bond_%d", parent the LAG master PF), its port 1
#       carrying BOND's GIDs (roce_gid_mgmt: the bond's addresses, gid_attrs/ndevs "BOND"); the
#       slaves' addresses move to BOND, as a bonded host's network configuration has them. The
#       per-port driver files (qos/, ecn/, the DCB state) stay on each slave. Unless the slaves
#       are every PF of one card, mlx5 makes no LAG (lag.c): the bond is made, DEV is not, and
#       each port keeps its RDMA device. The card's VFs are no ports of it; in the eswitch's
#       legacy mode a PF with VFs stops the LAG (lag.c mlx5_lag_check_prereq), in switchdev mode
#       (--switchdev) it does not, and each VF has a representor netdev on its PF's function
#       (en_rep.c: SET_NETDEV_DEV to the PF, phys_port_name pfNvfM), named IF + pfNvfM.
#   fakehost.sh create ... --netmgr IF:nm|networkd|netplan|ifcfg[:MTU] [--netmgr ...]
#   fakehost.sh reactivate ROOT IF
#       a network manager for IF, and what it does when it activates IF again: see
#       fakehost-netmgr.sh.
#   fakehost.sh pcitree ROOT TOPOLOGY [--acs on|off] [--mrrs BYTES] [--iommu-type DMA-FQ|identity]
#       the host's PCI tree becomes TOPOLOGY's (e.g. fixtures/pci/hgx-8gpu.json): root ports,
#       switches, GPUs and NICs nested as sysfs nests them, each with its configuration space
#       and attributes, drivers and IOMMU groups (pcitree.py, whose header says what is written
#       and what the options do). Create the host with its NICs at the topology's NIC addresses
#       (fixtures/pci/README.md lists the --nic arguments): each such function, with its VFs, is
#       moved from sys/devices/pci0000:00 into the tree and every link to it follows, so rename,
#       vfs, lag, addr and the stand-ins work on as before. A NIC at another address stays where
#       it is (said on stderr); a topology NIC the host lacks is a bare function, its driver
#       bound, without netdev.
#   fakehost.sh nccl ROOT VERSION|none
#       NCCL's library as its package installs it: a shared object with the soname libnccl.so.2
#       named libnccl.so.VERSION in usr/lib/x86_64-linux-gnu (built by cc, an empty library:
#       only its name and soname matter), the distribution's ld.so.conf, and the linker cache
#       built over the root by glibc's own ldconfig (-r ROOT), which also makes the soname's link,
#       as the package's trigger does. An earlier version's files go (an upgrade); `none` removes
#       NCCL. The host's ldconfig stand-in is that same ldconfig reading the root's cache.
#
# Or `source` this file and call fakehost_create / fakehost_addr / fakehost_snapshot /
# fakehost_run / fakehost_reload / fakehost_reboot.
# Bash 4.2 compatible; the functions run in subshells so they never change the caller's
# shell options.

case ${BASH_SOURCE[0]} in
  */*) FAKEHOST_DIR=${BASH_SOURCE[0]%/*} ;;
  *) FAKEHOST_DIR=. ;;
esac
FAKEHOST_DIR=$(cd "$FAKEHOST_DIR" && pwd)
FAKEHOST_STUBS=$FAKEHOST_DIR/stubs
FAKEHOST_FIXTURES=$FAKEHOST_DIR/fixtures
# shellcheck source=SCRIPTDIR/fakehost-netmgr.sh disable=SC1091
. "$FAKEHOST_DIR/fakehost-netmgr.sh"
# shellcheck source=SCRIPTDIR/fakehost-reload.sh disable=SC1091
. "$FAKEHOST_DIR/fakehost-reload.sh"

# Tools every fake host has (iproute2, ethtool, systemd and udev, hostname, kmod), and the ones
# only MLNX_OFED / DOCA-OFED installs (mlnx-tools, ofed-scripts and perftest, which their
# installers put on every host; an inbox host gets perftest from the distribution, by hand).
FAKEHOST_COMMON_TOOLS='dcb ethtool ip rdma systemctl hostname modprobe udevadm ldconfig'
# (lldpcli / lldptool come with --lldp.)
FAKEHOST_OFED_TOOLS='ofed_info mlnx_qos cma_roce_mode cma_roce_tos ibdev2netdev ib_write_bw'
# The DCQCN files of an OFED port and their firmware defaults (driver reload restores them).
FAKEHOST_DCQCN_DEFAULTS='roce_rp/clamp_tgt_rate=0 roce_rp/clamp_tgt_rate_after_time_inc=1
  roce_rp/rpg_time_reset=300 roce_rp/rpg_byte_reset=32767 roce_rp/rpg_threshold=1
  roce_rp/rpg_max_rate=0 roce_rp/rpg_ai_rate=5 roce_rp/rpg_hai_rate=50 roce_rp/rpg_gd=11
  roce_rp/rpg_min_dec_fac=50 roce_rp/rpg_min_rate=1 roce_rp/rate_to_set_on_first_cnp=0
  roce_rp/dce_tcp_g=1019 roce_rp/dce_tcp_rtt=1 roce_rp/rate_reduce_monitor_period=4
  roce_rp/initial_alpha_value=1023 roce_np/min_time_between_cnps=4'
# Entries of each port's GID table.
FAKEHOST_GIDS=16
# The root file systems `create --rootfs` knows.
FAKEHOST_ROOTFS='xfs ext4 tmpfs rootfs overlay nfs4'

fakehost_usage() {
  printf '%s\n' 'usage: fakehost.sh create ROOT --kind ofed|inbox --host NAME --nic DEV:IF:BDF:MAC [--nic ...] [--missing DEV ...]' \
    '       fakehost.sh rename ROOT IF NEWNAME' \
    '       fakehost.sh altname ROOT IF ALTNAME' \
    '       fakehost.sh addr ROOT IF [CIDR ...]' \
    '       fakehost.sh lag ROOT BOND DEV SLAVE,SLAVE[,...] [--switchdev]' \
    '       fakehost.sh snapshot ROOT [DIR ...]' \
    '       fakehost.sh run ROOT -- CMD [ARG ...]' \
    '       fakehost.sh vfs ROOT IF N [--uevents]' \
    '       fakehost.sh reload ROOT [--how openibd|modprobe|devlink|mlxfwreset|recovery|rescan]' \
    '       fakehost.sh reboot ROOT' \
    '       fakehost.sh reactivate ROOT IF' \
    '       fakehost.sh pcitree ROOT TOPOLOGY [--acs on|off] [--mrrs BYTES] [--iommu-type DMA-FQ|identity]' \
    '       fakehost.sh nccl ROOT VERSION|none' >&2
}

fakehost_create() (
  set -eu
  die() {
    printf 'fakehost create: %s\n' "$*" >&2
    exit 2
  }
  # put REL VALUE: write one file of the fake root (VALUE may hold several lines). root is
  # fakehost_create's (the sourced parts' functions have their own, in their subshells).
  # shellcheck disable=SC2031
  put() {
    [[ -d $root/${1%/*} ]] || mkdir -p -- "$root/${1%/*}"
    printf '%s\n' "$2" >"$root/$1"
  }
  # link REL TARGET: symlink with a relative TARGET, so the tree stays copyable.
  # shellcheck disable=SC2031
  link() {
    [[ -d $root/${1%/*} ]] || mkdir -p -- "$root/${1%/*}"
    ln -s -- "$2" "$root/$1"
  }

  local root=${1-} kind='' host='' lldp=none naming=kernel rootfs='' spec dev ifc bdf mac i=0 d m kernel
  local -a nics=() missing=() f=() mb=() mounts=() netmgr=()
  local -A seen=()
  [[ -n $root && $root != -* ]] || die 'usage: fakehost.sh create ROOT --kind ofed|inbox --host NAME --nic DEV:IF:BDF:MAC ...'
  shift
  while (($#)); do
    (($# >= 2)) || die "$1 needs a value"
    case $1 in
      --kind) kind=$2 ;;
      --host) host=$2 ;;
      --nic) nics+=("$2") ;;
      --missing) missing+=("$2") ;;
      --lldp) lldp=$2 ;;
      --naming) naming=$2 ;;
      --netmgr) netmgr+=("$2") ;;
      --rootfs) rootfs=$2 ;;
      --mount) mounts+=("$2") ;;
      *) die "unknown option $1" ;;
    esac
    shift 2
  done
  [[ $kind == ofed || $kind == inbox ]] || die '--kind must be ofed or inbox'
  [[ -n $host && $host != *$'\n'* ]] || die '--host NAME is required'
  [[ $lldp == none || $lldp == lldpd || $lldp == lldpad ]] || die '--lldp must be none, lldpd or lldpad'
  [[ $naming == kernel || $naming == rdma ]] || die '--naming must be kernel or rdma'
  # The root file system: the distribution's installer default unless asked.
  if [[ -z $rootfs ]]; then
    if [[ $kind == ofed ]]; then rootfs=xfs; else rootfs=ext4; fi
  fi
  [[ " $FAKEHOST_ROOTFS " == *" $rootfs "* ]] || die "--rootfs must be one of: $FAKEHOST_ROOTFS"
  for d in ${mounts[@]+"${mounts[@]}"}; do
    [[ $d =~ ^(/[A-Za-z0-9_./-]*[A-Za-z0-9_-]):(tmpfs|xfs|ext4)$ ]] || die "bad --mount $d (want /PATH:tmpfs|xfs|ext4)"
  done
  if [[ -e $root ]]; then
    [[ -d $root && -z $(ls -A -- "$root") ]] || die "$root exists and is not an empty directory"
  fi
  mkdir -p -- "$root"
  root=$(cd -- "$root" && pwd)
  # Every folder of the host-wide part in one mkdir: a tool start each costs more than the rest.
  mkdir -p -- "$root/.fake/systemd/enabled" "$root/.fake/systemd/active" "$root/.fake/fail" \
    "$root/.fake/output" "$root/etc/systemd/system" "$root/bin" "$root/lib/fakehost" \
    "$root/proc/self" "$root/proc/sys/kernel/random" "$root/proc/sys/net/ipv4/conf/all" \
    "$root/proc/sys/net/ipv4/conf/default" "$root/sys/class/infiniband" "$root/sys/class/net" \
    "$root/sys/kernel/config/rdma_cm" "$root/sys/bus/pci/drivers/mlx5_core" \
    "$root/sys/bus/pci/devices" "$root"/sys/module/{mlx5_core,mlx5_ib,ib_core,ib_uverbs,rdma_cm,rdma_ucm}

  # Host-wide files. Versions are fixed, plausible values (RHEL 9.4 + MLNX_OFED 24.10,
  # Ubuntu 22.04 with the inbox driver); tests overwrite them where they matter.
  put .fake/hostname "$host"
  put .fake/kind "$kind"
  put etc/hostname "$host"
  if [[ $kind == ofed ]]; then
    kernel=5.14.0-427.13.1.el9_4.x86_64
    put .fake/ofed_version 'MLNX_OFED_LINUX-24.10-1.1.4.0:'
    put sys/module/mlx5_core/version '24.10-1.1.4' # OFED modules carry their version
    put etc/os-release 'NAME="Red Hat Enterprise Linux"
VERSION="9.4 (Plow)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="9.4"
PRETTY_NAME="Red Hat Enterprise Linux 9.4 (Plow)"'
  else
    kernel=5.15.0-105-generic
    put etc/os-release 'PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian'
  fi
  for m in mlx5_core mlx5_ib ib_core ib_uverbs rdma_cm rdma_ucm; do
    put "sys/module/$m/initstate" live
  done
  put proc/sys/kernel/osrelease "$kernel"
  # This boot's id (the kernel's random UUID of the boot, drivers/char/random.c); health.sh
  # compares the one apply saw with it for reboot_required.
  put proc/sys/kernel/random/boot_id 6f1c7d2e-3a4b-4c5d-9e8f-0a1b2c3d4e5f
  put proc/cmdline "BOOT_IMAGE=/vmlinuz-$kernel root=/dev/sda2 ro iommu=pt"
  # IPv4 ARP and reverse-path sysctls (lib-net.sh reads them; the kernel uses the larger of all
  # and the device's). The kernel's defaults are 0; the distributions set rp_filter to 2
  # (loose): RHEL through systemd's sysctl.d/50-default.conf (default and every device, not
  # all), Ubuntu through procps' 10-network-security.conf (default and all). A new netdev
  # starts with default's values (devinet.c inetdev_init copies them).
  local rpf_all=0
  [[ $kind == ofed ]] || rpf_all=2
  for d in all default; do
    put "proc/sys/net/ipv4/conf/$d/arp_ignore" 0
    put "proc/sys/net/ipv4/conf/$d/arp_announce" 0
  done
  put proc/sys/net/ipv4/conf/all/rp_filter "$rpf_all"
  put proc/sys/net/ipv4/conf/default/rp_filter 2
  fakehost_mounts "$root" "$rootfs" ${mounts[@]+"${mounts[@]}"}
  # rdma_cm's configfs folder is there (made above: the module is loaded); the per-device folders
  # are made by mkdir, which the driver filesystem (tests/host/driverfs) answers as configfs does.
  # The arp and rp_filter values a new netdev starts with, and the per-port texts, read once.
  local arp_ignore arp_announce rp_filter module modes
  read -r arp_ignore <"$root/proc/sys/net/ipv4/conf/default/arp_ignore"
  read -r arp_announce <"$root/proc/sys/net/ipv4/conf/default/arp_announce"
  read -r rp_filter <"$root/proc/sys/net/ipv4/conf/default/rp_filter"
  IFS= read -r -d '' module <"$FAKEHOST_FIXTURES/ethtool-m/cmis-400g-4lane.txt" || true
  # mlx5 link modes of a 400G port (kernel link-mode names, in bit order).
  printf -v modes '%s/Full\n' 25000baseCR 25000baseKR 25000baseSR 50000baseKR 50000baseSR \
    50000baseCR 50000baseLR_ER_FR 50000baseDR 100000baseKR2 100000baseSR2 100000baseCR2 \
    100000baseLR2_ER2_FR2 100000baseDR2 200000baseKR4 200000baseSR4 200000baseLR4_ER4_FR4 \
    200000baseDR4 200000baseCR4 100000baseKR 100000baseSR 100000baseLR_ER_FR 100000baseCR \
    100000baseDR 200000baseKR2 200000baseSR2 200000baseLR2_ER2_FR2 200000baseDR2 200000baseCR2 \
    400000baseKR4 400000baseSR4 400000baseLR4_ER4_FR4 400000baseDR4 400000baseCR4
  modes=${modes%$'\n'}
  local -a pci_links=() dirs=()

  for spec in ${nics[@]+"${nics[@]}"}; do
    IFS=: read -r -a f <<<"$spec"
    ((${#f[@]} == 11)) || die "bad --nic $spec (want DEV:IF:BDF:MAC, e.g. mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:01:00:00)"
    dev=${f[0]} ifc=${f[1]} bdf=${f[2]}:${f[3]}:${f[4]}
    mac=${f[5]}:${f[6]}:${f[7]}:${f[8]}:${f[9]}:${f[10]}
    bdf=${bdf,,} mac=${mac,,}
    [[ $dev =~ ^[A-Za-z0-9_.-]+$ && $ifc =~ ^[A-Za-z0-9_.-]+$ ]] || die "bad device or interface name in $spec"
    [[ $bdf =~ ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] || die "bad PCI address in $spec"
    [[ $mac =~ ^([0-9a-f]{2}:){5}[0-9a-f]{2}$ ]] || die "bad MAC in $spec"
    for d in "dev $dev" "if $ifc" "pci $bdf" "mac $mac"; do
      [[ -z ${seen[$d]-} ]] || die "duplicate $d"
      seen[$d]=1
    done
    for d in ${missing[@]+"${missing[@]}"}; do [[ $d == "$dev" ]] && continue 2; done

    # Layout as in real sysfs, except that class/net/IF and class/infiniband/DEV are the
    # directories (so snapshots show readable paths) and the PCI function links to them.
    local pci=sys/devices/pci0000:00/$bdf net=sys/class/net/$ifc ib=sys/class/infiniband/$dev lo hi
    # The port's folders in one mkdir (put and link then find them made).
    d=$root/$ib/ports/1
    dirs=("$root/$pci/net" "$root/$pci/infiniband" "$root/$net" "$d/hw_counters" "$d/gids"
      "$d/gid_attrs/types" "$d/gid_attrs/ndevs" "$root/proc/sys/net/ipv4/conf/$ifc"
      "$root/.fake/net/$ifc" "$root/.fake/dcb/$ifc")
    [[ $lldp == none ]] || dirs+=("$root/.fake/lldp")
    [[ $kind != ofed ]] || dirs+=("$root/$net/qos" "$root/$net/ecn/roce_np/enable" "$root/$net/ecn/roce_rp/enable" "$root/$ib/tc/1")
    mkdir -p -- "${dirs[@]}"
    put "$pci/vendor" 0x15b3
    put "$pci/device" 0x1021 # ConnectX-7, matching firmware 28.x
    put "$pci/current_link_speed" '32.0 GT/s PCIe'
    put "$pci/max_link_speed" '32.0 GT/s PCIe'
    put "$pci/current_link_width" 16
    put "$pci/max_link_width" 16
    printf -v lo '%02x' $((0x20 + 2 * i))
    printf -v hi '%02x' $((0x21 + 2 * i))
    put "$pci/resource" "0x000000${lo}000000 0x000000${hi}ffffff 0x000000000014220c"
    link "$pci/driver" ../../../bus/pci/drivers/mlx5_core
    link "$pci/net/$ifc" "../../../../class/net/$ifc"
    link "$pci/infiniband/$dev" "../../../../class/infiniband/$dev"
    pci_links+=("$bdf") # sys/bus/pci/devices/BDF and drivers/mlx5_core/BDF, after the loop

    put "proc/sys/net/ipv4/conf/$ifc/arp_ignore" "$arp_ignore"
    put "proc/sys/net/ipv4/conf/$ifc/arp_announce" "$arp_announce"
    put "proc/sys/net/ipv4/conf/$ifc/rp_filter" "$rp_filter"
    put "$net/mtu" 1500
    put "$net/operstate" up
    put "$net/carrier" 1
    put "$net/dev_id" 0x0
    put "$net/address" "$mac"
    put "$net/ifindex" $((i + 2)) # 1 is lo on a real host
    put "$net/speed" 400000
    link "$net/device" "../../../devices/pci0000:00/$bdf"

    put "$ib/fw_ver" 28.39.1002
    put "$ib/board_id" MT_0000000838
    put "$ib/node_type" '1: CA'
    put "$ib/hca_type" MT4129
    put "$ib/ports/1/state" '4: ACTIVE'
    put "$ib/ports/1/phys_state" '5: LinkUp'
    put "$ib/ports/1/link_layer" Ethernet
    put "$ib/ports/1/rate" '400 Gb/sec (4X NDR)'
    # RoCE health counters (mlx5 hw_counters): a little congestion, no retransmission.
    for d in out_of_sequence packet_seq_err local_ack_timeout_err roce_adp_retrans np_ecn_marked_roce_packets; do
      put "$ib/ports/1/hw_counters/$d" 0
    done
    put "$ib/ports/1/hw_counters/np_cnp_sent" $((1200 + i))
    put "$ib/ports/1/hw_counters/rp_cnp_handled" $((900 + i))
    put "$ib/ports/1/hw_counters/duplicate_request" 0
    link "$ib/device" "../../../devices/pci0000:00/$bdf"

    put ".fake/net/$ifc/pause" 'on on off' # rx tx autoneg: mlx5's default global pause
    # A 400G SR4 optic (OSFP, CMIS): ethtool's own printout of it (fixtures/ethtool-m/).
    printf '%s' "$module" >"$root/.fake/net/$ifc/module.txt"
    put ".fake/net/$ifc/modes" "$modes"
    put ".fake/net/$ifc/lanes" 4
    # The port's counters (the hardware counts them all; the ethtool stand-in lists them as mlx5
    # does: priority N's PFC counters only with PFC on N, the global ones, priority 0's
    # registers, only while 802.3x pause is on): a realistic mlx5 subset; NIC 0 on a new host
    # (no PFC, pause on) prints fixtures/ethtool/stats.txt.
    put ".fake/net/$ifc/stats" "rx_packets 123456
rx_bytes 98765432
tx_packets 654321
tx_bytes 87654321
rx_csum_unnecessary 120034
rx_out_of_buffer 0
rx_vport_unicast_packets 123400
rx_vport_unicast_bytes 98760000
tx_vport_unicast_packets 654300
tx_vport_unicast_bytes 87650000
rx_vport_rdma_unicast_packets 88231904
rx_vport_rdma_unicast_bytes 361397278720
tx_vport_rdma_unicast_packets 91502377
tx_vport_rdma_unicast_bytes 374793435136
rx_packets_phy 88355360
rx_bytes_phy 361496043520
tx_packets_phy 92156698
tx_bytes_phy 374881085457
rx_crc_errors_phy 0
rx_symbol_err_phy 0
rx_discards_phy 0
tx_discards_phy 0
rx_pause_ctrl_phy 0
tx_pause_ctrl_phy 0
rx_prio3_bytes 361397278720
rx_prio3_packets 88231904
tx_prio3_bytes 374793435136
tx_prio3_packets 91502377
rx_prio0_pause $((3 * i))
rx_prio0_pause_duration 0
tx_prio0_pause $((4 * i))
tx_prio0_pause_duration 0
rx_prio0_pause_transition 0
rx_prio3_pause $((10 * i))
rx_prio3_pause_duration 0
tx_prio3_pause $((20 * i))
tx_prio3_pause_duration 0
rx_prio3_pause_transition 0
tx_pause_storm_warning_events 0
tx_pause_storm_error_events 0
module_unplug 0
module_bus_stuck 0"
    if [[ $lldp != none ]]; then
      put ".fake/lldp/$ifc" "switch=leaf-$((i + 1))
port=Eth1/1
port_type=ifname
descr=$host:$ifc"
    fi
    : >"$root/.fake/net/$ifc/addrs"       # no IP address
    fakehost_gid_table "$root" "$ifc"    # so only the link-local GIDs
    # DCB netlink state of the driver (stubs/mlx5-dcb.sh): PCP trust (empty APP table),
    # no PFC, cable length 7 m, OS-controlled DCBX.
    : >"$root/.fake/dcb/$ifc/app"
    put ".fake/dcb/$ifc/pfc" 0,0,0,0,0,0,0,0
    put ".fake/dcb/$ifc/cable_len" 7
    put ".fake/dcb/$ifc/dcbx" 'host cee ieee'
    if [[ $kind == ofed ]]; then
      # OFED-only sysfs (mlnx-ofa_kernel en_sysfs.c): the qos group (tc_num, maxrate,
      # prio2buffer, buffer_size; no trust/pfc/dscp2prio since OFED 4.2), ECN per
      # priority, CNP marking.
      put "$net/qos/tc_num" 0
      put "$net/qos/maxrate" '0 0 0 0 0 0 0 0 '
      printf 'Priority\tBuffer\n' >"$root/$net/qos/prio2buffer"
      for ((d = 0; d < 8; d++)); do printf '%d\t\t0\n' "$d"; done >>"$root/$net/qos/prio2buffer"
      printf 'Port buffer size = 262016\nSpare buffer size = 0\nBuffer\tSize\txoff_threshold\txon_threshold\n0\t262016\t0\t\t0\n' >"$root/$net/qos/buffer_size"
      for ((d = 1; d < 8; d++)); do printf '%d\t0\t0\t\t0\n' "$d"; done >>"$root/$net/qos/buffer_size"
      for d in 0 1 2 3 4 5 6 7; do
        # Firmware default ROCE_CC_PRIO_MASK_P1=255: congestion control on every priority.
        put "$net/ecn/roce_np/enable/$d" 1
        put "$net/ecn/roce_rp/enable/$d" 1
      done
      put "$net/ecn/roce_np/cnp_dscp" 48     # firmware default CNP_DSCP_P1
      put "$net/ecn/roce_np/cnp_802p_prio" 6 # firmware default CNP_802P_PRIO_P1
      # DCQCN parameters (en_sysfs.c's roce_rp and roce_np files) at the firmware defaults
      # mlxconfig lists for a ConnectX-7 (RPG_AI_RATE_P1 5, ... MIN_TIME_BETWEEN_CNPS_P1 4).
      for d in $FAKEHOST_DCQCN_DEFAULTS; do put "$net/ecn/${d%%=*}" "${d#*=}"; done
      : >"$root/$ib/tc/1/traffic_class" # empty: no global tclass set
    fi
    i=$((i + 1))
  done

  if ((${#pci_links[@]})); then
    ln -s -t "$root/sys/bus/pci/devices" -- "${pci_links[@]/#/../../../devices/pci0000:00/}"
    ln -s -t "$root/sys/bus/pci/drivers/mlx5_core" -- "${pci_links[@]/#/../../../../devices/pci0000:00/}"
  fi

  # The stand-ins are copied, not linked, so the tree does not depend on the repository; the
  # tools link to them (relative links, one ln for all).
  cp -- "$FAKEHOST_STUBS"/* "$root/lib/fakehost/"
  local -a tools=(stub) names=()
  read -r -a names <<<"$FAKEHOST_COMMON_TOOLS"
  tools+=("${names[@]}")
  if [[ $kind == ofed ]]; then
    read -r -a names <<<"$FAKEHOST_OFED_TOOLS"
    tools+=("${names[@]}")
  fi
  case $lldp in
    lldpd) tools+=(lldpcli) ;;
    lldpad) tools+=(lldptool) ;;
  esac
  [[ $lldp == none ]] || : >"$root/.fake/systemd/active/$lldp.service"
  ln -s -t "$root/bin" -- "${tools[@]/#/../lib/fakehost/}"
  ((${#netmgr[@]} == 0)) || fakehost_netmgr "$root" "${netmgr[@]}"
  [[ $naming == kernel ]] || fakehost_rdma_naming "$root"
)

# fakehost_mounts ROOT ROOTFS [PATH:TYPE ...]: ROOT/proc/self/mountinfo and ROOT/proc/mounts of
# a host whose root is ROOTFS (create --rootfs), with sysfs, proc and configfs, then the other
# mounts in order, each line as fs/proc_namespace.c prints it: show_mountinfo `ID PARENT MAJ:MIN
# ROOT POINT MNTOPTS TAGS - TYPE SOURCE SUPEROPTS`, show_vfsmnt `SOURCE POINT TYPE OPTS 0 0`
# (" rw", the super block's flags, the mount's, then the file system's own show_options).
fakehost_mounts() (
  set -eu
  local root=$1 fs=$2 id=22 rid parent tag=1 minor=24 e src dev mnt own point type info='' table=''
  shift 2
  local -a all=()
  # POINT TYPE SOURCE MAJ:MIN MOUNT-FLAGS FS-OPTIONS (",..." or "-" for none)
  case $fs in
    xfs) all+=("/ xfs /dev/sda2 8:2 ,relatime ,attr2,inode64,logbufs=8,logbsize=32k,noquota") ;;
    ext4) all+=("/ ext4 /dev/sda2 8:2 ,relatime ,errors=remount-ro") ;;
    tmpfs) all+=("/ tmpfs tmpfs 0:20 ,relatime ,size=32844600k,nr_inodes=8211150,inode64") ;;
    rootfs) all+=("/ rootfs rootfs 0:1 - ,size=32844600k,nr_inodes=8211150") ;;
    overlay) all+=("/ overlay overlay 0:20 ,relatime ,lowerdir=/run/rootfsbase,upperdir=/run/overlayfs,workdir=/run/ovlwork") ;;
    nfs4) all+=("/ nfs4 10.0.0.1:/srv/images/compute 0:20 ,relatime ,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.21,local_lock=none,addr=10.0.0.1") ;;
  esac
  all+=("/sys sysfs sysfs 0:21 ,nosuid,nodev,noexec,relatime -"
    "/proc proc proc 0:22 ,nosuid,nodev,noexec,relatime -"
    "/sys/kernel/config configfs configfs 0:23 ,nosuid,nodev,noexec,relatime -")
  for e in "$@"; do
    case ${e##*:} in
      tmpfs) all+=("${e%:*} tmpfs tmpfs 0:$minor ,nosuid,nodev,relatime ,size=4096k,mode=755,inode64") ;;
      xfs) all+=("${e%:*} xfs /dev/sdb1 8:17 ,relatime ,attr2,inode64,logbufs=8,logbsize=32k,noquota") ;;
      ext4) all+=("${e%:*} ext4 /dev/sdb1 8:17 ,relatime -") ;;
    esac
    minor=$((minor + 1))
  done
  # Mount ids: the root's 22 (1 when it is the initramfs itself), the others from 23 on.
  rid=22
  [[ $fs != rootfs ]] || rid=1
  for e in "${all[@]}"; do
    read -r point type src dev mnt own <<<"$e"
    [[ $mnt != - ]] || mnt=''
    [[ $own != - ]] || own=''
    case $point in
      /) id=$rid parent=1 ;;
      /sys/kernel/config) parent=23 ;;
      *) parent=$rid ;;
    esac
    info+="$id $parent $dev / $point rw$mnt shared:$tag - $type $src rw$own"$'\n'
    table+="$src $point $type rw$mnt$own 0 0"$'\n'
    [[ $point != / ]] || id=22
    id=$((id + 1)) tag=$((tag + 1))
  done
  [[ -d $root/proc/self ]] || mkdir -p -- "$root/proc/self"
  printf '%s' "$info" >"$root/proc/self/mountinfo"
  printf '%s' "$table" >"$root/proc/mounts"
)

# fakehost_pci_dir ROOT BDF: REPLY = the folder of PCI function BDF relative to ROOT
# (sys/devices/pci0000:00/BDF as create makes it, deeper once pcitree has nested it under its
# bridges), through its sys/bus/pci/devices link; status 1 when ROOT has no such function.
fakehost_pci_dir() {
  local link=$1/sys/bus/pci/devices/$2 t
  REPLY=sys/devices/pci0000:00/$2
  [[ -L $link ]] || return 1
  t=$(readlink -- "$link")
  [[ $t == ../../../devices/* ]] || return 1
  REPLY=sys/${t#../../../}
}

# fakehost_up DIR: REPLY = the ../ that lead from DIR (relative to ROOT, under sys/) to ROOT/sys,
# for links that sysfs makes relative (a function's driver, net/IF, infiniband/DEV).
fakehost_up() {
  local rest=${1#sys/}
  REPLY=../
  while [[ $rest == */* ]]; do
    REPLY+=../
    rest=${rest#*/}
  done
}

# fakehost_pcitree ROOT TOPOLOGY [OPTION ...]: see the usage above.
fakehost_pcitree() (
  set -eu
  local root=${1-} topo=${2-}
  if [[ -z $root || ! -d $root/.fake ]]; then
    printf 'fakehost pcitree: %s is not a fake host root\n' "$root" >&2
    exit 2
  fi
  [[ -f $topo ]] || {
    printf 'fakehost pcitree: no topology file %s\n' "$topo" >&2
    exit 2
  }
  shift 2
  exec "${FAKEHOST_PYTHON:-/usr/bin/python3}" "$FAKEHOST_DIR/pcitree.py" "$root" "$topo" "$@"
)

# fakehost_nccl ROOT VERSION|none: see the usage above.
fakehost_nccl() (
  set -eu
  local root=${1-} version=${2-} lib
  if [[ -z $root || ! -d $root/.fake ]]; then
    printf 'fakehost nccl: %s is not a fake host root\n' "$root" >&2
    exit 2
  fi
  [[ $version == none || $version =~ ^2\.[0-9]+\.[0-9]+$ ]] || {
    printf 'fakehost nccl: bad version %s (want 2.X.Y or none)\n' "$version" >&2
    exit 2
  }
  lib=$root/usr/lib/x86_64-linux-gnu
  mkdir -p -- "$lib" "$root/etc/ld.so.conf.d"
  printf 'include /etc/ld.so.conf.d/*.conf\n' >"$root/etc/ld.so.conf"
  printf '# Multiarch support\n/usr/lib/x86_64-linux-gnu\n' >"$root/etc/ld.so.conf.d/x86_64-linux-gnu.conf"
  rm -f -- "$lib"/libnccl.so*
  [[ $version == none ]] ||
    cc -shared -nostdlib -Wl,-soname,libnccl.so.2 -o "$lib/libnccl.so.$version" -x c /dev/null
  /sbin/ldconfig -r "$root"
)

# fakehost_rename ROOT IF NEWNAME: see the usage above.
fakehost_rename() (
  set -eu
  shopt -s nullglob
  local root=${1-} old=${2-} new=${3-} pci f d
  if [[ -z $root || ! -d $root/.fake ]]; then
    printf 'fakehost rename: %s is not a fake host root\n' "$root" >&2
    exit 2
  fi
  [[ $old =~ ^[A-Za-z0-9_.-]+$ && -d $root/sys/class/net/$old ]] || {
    printf 'fakehost rename: no interface %s\n' "$old" >&2
    exit 2
  }
  # The kernel's dev_valid_name: at most 15 bytes, no / or space; and not taken.
  [[ $new =~ ^[A-Za-z0-9_.-]{1,15}$ && $new != . && $new != .. ]] || {
    printf 'fakehost rename: %s is not a valid interface name\n' "$new" >&2
    exit 2
  }
  if [[ -e $root/sys/class/net/$new ]] || grep -qsxF -- "$new" "$root"/.fake/net/*/altnames; then
    printf 'fakehost rename: %s is taken (File exists)\n' "$new" >&2
    exit 2
  fi
  cd -- "$root"
  pci=$(readlink -- "sys/class/net/$old/device") || pci=''
  mv -- "sys/class/net/$old" "sys/class/net/$new"
  if [[ -n $pci ]]; then
    fakehost_pci_dir . "${pci##*/}" || true
    pci=$REPLY
    fakehost_up "$pci/net"
    rm -f -- "$pci/net/$old"
    ln -s -- "${REPLY}class/net/$new" "$pci/net/$new"
  fi
  # proc/sys/net/ipv4/conf/IF follows too, values kept (devinet.c inetdev_event NETDEV_CHANGENAME
  # registers the device's sysctls again under the new name).
  for d in .fake/net .fake/dcb .fake/lldp .fake/cma proc/sys/net/ipv4/conf; do
    [[ ! -e $d/$old ]] || mv -- "$d/$old" "$d/$new"
  done
  # The GID table shows each entry's netdev by its current name (core/sysfs.c print_ndev).
  for f in sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*; do
    if [[ $(<"$f") == "$old" ]]; then printf '%s\n' "$new" >"$f"; fi
  done
)

# fakehost_altname ROOT IF ALTNAME: see the usage above.
fakehost_altname() (
  set -eu
  local root=${1-} ifc=${2-} alt=${3-}
  if [[ -z $root || ! -d $root/.fake ]]; then
    printf 'fakehost altname: %s is not a fake host root\n' "$root" >&2
    exit 2
  fi
  [[ $ifc =~ ^[A-Za-z0-9_.-]+$ && -d $root/sys/class/net/$ifc ]] || {
    printf 'fakehost altname: no interface %s\n' "$ifc" >&2
    exit 2
  }
  # ALTIFNAMSIZ is 128; a name or altname of any interface cannot be taken twice.
  [[ $alt =~ ^[A-Za-z0-9_.-]{1,127}$ ]] || {
    printf 'fakehost altname: %s is not a valid name\n' "$alt" >&2
    exit 2
  }
  if [[ -e $root/sys/class/net/$alt ]] || grep -qsxF -- "$alt" "$root"/.fake/net/*/altnames; then
    printf 'fakehost altname: %s is taken (File exists)\n' "$alt" >&2
    exit 2
  fi
  mkdir -p -- "$root/.fake/net/$ifc"
  printf '%s\n' "$alt" >>"$root/.fake/net/$ifc/altnames"
)

# fakehost_vfs ROOT IF N [--uevents]: `echo N > sriov_numvfs` on the PF under IF, with the kernel's
# layout (drivers/pci/iov.c: pci_iov_add_virtfn puts each VF on the bus at the PF's routing ID +
# sriov_offset + K * sriov_stride, and links `virtfnK` in the PF's folder and `physfn` in the
# VF's, both through ../; sriov_numvfs, sriov_totalvfs, sriov_offset, sriov_stride are the PF's
# attributes). Each VF has an mlx5 netdev IFvK and an RDMA device mlx5_M (the next free number),
# whose RDMA-CM ToS and traffic class start at the kernel's defaults (ToS 0, no class). N = 0
# gives the PF its SR-IOV attributes and no VFs, or removes the VFs it has (sriov_numvfs_store:
# 0 disables them); N VFs while the PF has some is EBUSY ("Disable before enabling"), the same N
# nothing. With --uevents, on a running host: each VF's netdev and RDMA device send their uevent
# through the host's udev rules (`add`, or `remove` before they go; udevd.py, "udev: ..." lines
# on stdout), then systemd runs the jobs the rules queued (fakehost_run_jobs).
fakehost_vfs() (
  set -eu
  shopt -s nullglob
  local root=${1-} ifc=${2-} n=${3-} ev=${4-} pf bdf dom bus devfn k rid vbdf vif vdev m=0 pfib have=0 link ib
  if [[ -z $root || ! -d $root/.fake ]]; then
    printf 'fakehost vfs: %s is not a fake host root\n' "$root" >&2
    exit 2
  fi
  [[ $ifc =~ ^[A-Za-z0-9_.-]+$ && -d $root/sys/class/net/$ifc && $n =~ ^[0-8]$ && ( -z $ev || $ev == --uevents ) ]] || {
    printf 'fakehost vfs: want IF (an interface), N (0 to 8) and perhaps --uevents\n' >&2
    exit 2
  }
  root=$(cd -- "$root" && pwd)
  pf=$(readlink -- "$root/sys/class/net/$ifc/device")
  bdf=${pf##*/}
  dom=${bdf%%:*} bus=${bdf#*:} bus=${bus%%:*} devfn=${bdf##*:}
  # ConnectX: the first VF two functions past the PF's (a dual-function card), stride 1.
  put() { mkdir -p -- "$(dirname -- "$root/$1")" && printf '%s\n' "$2" >"$root/$1"; }
  lnk() { mkdir -p -- "$(dirname -- "$root/$1")" && ln -sfn -- "$2" "$root/$1"; }
  # The PF's folder, wherever the PCI tree nests it; its VFs are made beside it.
  fakehost_pci_dir "$root" "$bdf" || true
  local dir=$REPLY up
  if [[ -f $root/$dir/sriov_numvfs ]]; then
    have=$(<"$root/$dir/sriov_numvfs")
    ((n != have)) || exit 0
  fi
  if ((n > 0 && have > 0)); then
    printf 'fakehost vfs: %s already has %d VFs (EBUSY: write 0 to sriov_numvfs first)\n' "$bdf" "$have" >&2
    exit 1
  fi
  put "$dir/sriov_totalvfs" 8
  put "$dir/sriov_offset" 2
  put "$dir/sriov_stride" 1
  if ((n == 0)); then
    for link in "$root/$dir"/virtfn*; do
      vbdf=$(readlink -- "$link") vbdf=${vbdf##*/}
      local v=$root/${dir%/*}/$vbdf
      for ib in "$v"/infiniband/*; do
        [[ -z $ev ]] || fakehost_udev "$root" remove "infiniband/${ib##*/}"
        # The RDMA-CM values the kernel kept for the device go with it (cma_configfs.c).
        rm -rf -- "$root/sys/class/infiniband/${ib##*/}" "$root/.fake/cma/${ib##*/}"
      done
      for vif in "$v"/net/*; do
        [[ -z $ev ]] || fakehost_udev "$root" remove "net/${vif##*/}"
        rm -rf -- "$root/sys/class/net/${vif##*/}"
      done
      rm -rf -- "$v" "$root/sys/bus/pci/devices/$vbdf" "$link"
    done
    put "$dir/sriov_numvfs" 0
    [[ -z $ev ]] || fakehost_run_jobs "$root"
    exit 0
  fi
  put "$dir/sriov_numvfs" "$n"
  while [[ -e $root/sys/class/infiniband/mlx5_$m ]]; do m=$((m + 1)); done
  for ((k = 0; k < n; k++)); do
    rid=$(((0x$bus << 8) + (0x${devfn%.*} << 3) + ${devfn#*.} + 2 + k))
    vbdf=$(printf '%s:%02x:%02x.%d' "$dom" $((rid >> 8)) $(((rid >> 3) & 31)) $((rid & 7)))
    vif=${ifc%np[0-9]*}v$k vdev=mlx5_$m
    m=$((m + 1))
    local v=${dir%/*}/$vbdf
    put "$v/vendor" 0x15b3
    put "$v/device" 0x101e # ConnectX Family mlx5Gen Virtual Function
    lnk "$v/physfn" "../$bdf"
    lnk "$dir/virtfn$k" "../$vbdf"
    fakehost_up "$v"
    up=$REPLY
    lnk "$v/driver" "${up}bus/pci/drivers/mlx5_core"
    lnk "$v/net/$vif" "../${up}class/net/$vif"
    lnk "$v/infiniband/$vdev" "../${up}class/infiniband/$vdev"
    lnk "sys/bus/pci/devices/$vbdf" "../../../${v#sys/}"
    put "sys/class/net/$vif/mtu" 1500
    put "sys/class/net/$vif/operstate" up
    put "sys/class/net/$vif/address" "$(printf '02:00:00:00:%02x:%02x' $((rid >> 8)) $((rid & 255)))"
    lnk "sys/class/net/$vif/device" "../../../${v#sys/}"
    put "sys/class/infiniband/$vdev/node_type" '1: CA'
    put "sys/class/infiniband/$vdev/ports/1/state" '4: ACTIVE'
    put "sys/class/infiniband/$vdev/ports/1/link_layer" Ethernet
    lnk "sys/class/infiniband/$vdev/device" "../../../${v#sys/}"
    # OFED's verbs traffic class (main_ext.c), unset; the PF's shows whether the host has it.
    for pfib in "$root/$dir/infiniband/"*; do break; done
    if [[ -e $root/sys/class/infiniband/${pfib##*/}/tc/1/traffic_class ]]; then
      mkdir -p -- "$root/sys/class/infiniband/$vdev/tc/1"
      : >"$root/sys/class/infiniband/$vdev/tc/1/traffic_class"
    fi
    # mlx5_core probes the VF: its netdev, then its RDMA device (mlx5_ib), each with its uevent.
    if [[ -n $ev ]]; then
      fakehost_udev "$root" add "net/$vif"
      fakehost_udev "$root" add "infiniband/$vdev"
    fi
  done
  [[ -z $ev ]] || fakehost_run_jobs "$root"
)

# fakehost_v6_full ADDR: an IPv6 address as the kernel prints a GID (%pI6: eight groups of
# four hex digits). REPLY = the text; status 1 when ADDR is not one.
fakehost_v6_full() {
  local a=${1,,} head tail g i n out=''
  local -a h=() t=()
  [[ $a =~ ^[0-9a-f:]+$ ]] || return 1
  if [[ $a == *::* ]]; then head=${a%%::*} tail=${a#*::}; else head=$a tail=''; fi
  [[ -n $head ]] && IFS=: read -r -a h <<<"$head"
  [[ -n $tail ]] && IFS=: read -r -a t <<<"$tail"
  n=$((8 - ${#h[@]} - ${#t[@]}))
  ((n >= 0)) || return 1
  [[ $a == *::* ]] || ((n == 0)) || return 1
  for g in ${h[@]+"${h[@]}"}; do out+=$(printf '%04x:' "$((16#$g))"); done
  for ((i = 0; i < n; i++)); do out+='0000:'; done
  for g in ${t[@]+"${t[@]}"}; do out+=$(printf '%04x:' "$((16#$g))"); done
  REPLY=${out%:}
}

# fakehost_gid_table ROOT IF: rebuilds port 1's GID table of IF's RDMA device from IF's MAC and
# .fake/net/IF/addrs, as the kernel's roce_gid_mgmt keeps it (see the usage above).
fakehost_gid_table() (
  set -eu
  local root=$1 ifc=$2 dev='' base mac line ip k n=2 zero
  local -a mb=() gid=() type=()
  # A bond slave's GIDs are the bond's (the LAG device's table); a bond's LAG device is on no
  # PCI function of the bond's own (fakehost_lag records it).
  [[ ! -e $root/sys/class/net/$ifc/master ]] || exit 0
  if [[ -f $root/.fake/lag/$ifc ]]; then
    dev=$root/sys/class/infiniband/$(<"$root/.fake/lag/$ifc")
  else
    for dev in "$root/sys/class/net/$ifc/device/infiniband"/*; do [[ -e $dev ]] && break; done
  fi
  [[ -n $dev && -e $dev ]] || exit 0 # no RDMA device on this netdev: no GID table
  base=$root/sys/class/infiniband/${dev##*/}/ports/1
  [[ -d $base/gids && -d $base/gid_attrs/types && -d $base/gid_attrs/ndevs ]] ||
    mkdir -p -- "$base/gids" "$base/gid_attrs/types" "$base/gid_attrs/ndevs"
  IFS= read -r mac <"$root/sys/class/net/$ifc/address"
  IFS=: read -r -a mb <<<"$mac"
  gid[0]=$(printf 'fe80:0000:0000:0000:%02x%s:%sff:fe%s:%s%s' "$((0x${mb[0]} ^ 2))" "${mb[1]}" "${mb[2]}" "${mb[3]}" "${mb[4]}" "${mb[5]}")
  gid[1]=${gid[0]} type[0]='IB/RoCE v1' type[1]='RoCE v2'
  if [[ -f $root/.fake/net/$ifc/addrs ]]; then
    while IFS= read -r line || [[ -n $line ]]; do
      ip=${line%%/*}
      if [[ $ip =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
        ip=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "${BASH_REMATCH[4]}")
      elif [[ $ip == *:* && ${ip,,} != fe80:* ]] && fakehost_v6_full "$ip"; then
        ip=$REPLY # the link-local address is the default GID already
      else
        continue
      fi
      ((n + 1 < FAKEHOST_GIDS)) || break
      gid[n]=$ip type[n]='IB/RoCE v1'
      gid[n + 1]=$ip type[n + 1]='RoCE v2'
      n=$((n + 2))
    done <"$root/.fake/net/$ifc/addrs"
  fi
  zero=0000:0000:0000:0000:0000:0000:0000:0000
  for ((k = 0; k < FAKEHOST_GIDS; k++)); do
    printf '%s\n' "${gid[k]:-$zero}" >"$base/gids/$k"
    if [[ -n ${type[k]-} ]]; then
      printf '%s\n' "${type[k]}" >"$base/gid_attrs/types/$k"
      printf '%s\n' "$ifc" >"$base/gid_attrs/ndevs/$k"
    else
      : >"$base/gid_attrs/types/$k"
      : >"$base/gid_attrs/ndevs/$k"
    fi
  done
)

# fakehost_addr ROOT IF [CIDR ...]: sets IF's addresses and its port's GID table.
fakehost_addr() (
  set -eu
  local root=${1-} ifc=${2-} a
  if [[ -z $root || ! -d $root/.fake ]]; then
    printf 'fakehost addr: %s is not a fake host root\n' "$root" >&2
    exit 2
  fi
  if [[ -z $ifc || $ifc == */* || ! -d $root/sys/class/net/$ifc ]]; then
    printf 'fakehost addr: no interface %s\n' "$ifc" >&2
    exit 2
  fi
  shift 2
  for a in "$@"; do
    [[ $a =~ ^[0-9A-Fa-f.:]+/[0-9]{1,3}$ ]] || {
      printf 'fakehost addr: %s is not an address with a prefix length\n' "$a" >&2
      exit 2
    }
  done
  mkdir -p -- "$root/.fake/net/$ifc"
  if (($#)); then printf '%s\n' "$@" >"$root/.fake/net/$ifc/addrs"; else : >"$root/.fake/net/$ifc/addrs"; fi
  fakehost_gid_table "$root" "$ifc"
)

# fakehost_lag ROOT BOND DEV SLAVE,SLAVE[,...]: see the usage above.
fakehost_lag() (
  set -eu
  shopt -s nullglob
  local root=${1-} bond=${2-} dev=${3-} list=${4-} s d first='' mac='' idx=1 pci rdma switchdev=no vf k
  local -a slaves=()
  [[ ${5-} != --switchdev ]] || switchdev=yes
  if [[ -z $root || ! -d $root/.fake ]]; then
    printf 'fakehost lag: %s is not a fake host root\n' "$root" >&2
    exit 2
  fi
  [[ $bond =~ ^[A-Za-z0-9_.-]{1,15}$ && ! -e $root/sys/class/net/$bond ]] || {
    printf 'fakehost lag: %s is not a free interface name\n' "$bond" >&2
    exit 2
  }
  [[ $dev =~ ^mlx5_bond_[0-9]+$ && ! -e $root/sys/class/infiniband/$dev ]] || {
    printf 'fakehost lag: %s is not a free LAG device name (mlx5_bond_N)\n' "$dev" >&2
    exit 2
  }
  root=$(cd -- "$root" && pwd)
  IFS=, read -r -a slaves <<<"$list"
  ((${#slaves[@]} >= 1)) || {
    echo 'fakehost lag: no slaves' >&2
    exit 2
  }
  cd -- "$root"
  for s in "${slaves[@]}"; do
    [[ $s =~ ^[A-Za-z0-9_.-]+$ && -d sys/class/net/$s && -e sys/class/net/$s/device ]] || {
      printf 'fakehost lag: %s is not a PCI function'"'"'s interface\n' "$s" >&2
      exit 2
    }
  done
  for d in sys/class/net/*/ifindex; do
    if (($(<"$d") >= idx)); then idx=$(($(<"$d") + 1)); fi
  done
  first=${slaves[0]}
  mac=$(<"sys/class/net/$first/address")
  # mlx5 activates the hardware LAG only when every PF of the card is a slave of the one bond
  # (lag.c mlx5_lag_netdev_event: is_bonded needs num_slaves == ldev->ports, all of one card);
  # otherwise the bond is made and every port keeps its own RDMA device.
  pci=$(readlink -- "sys/class/net/$first/device")
  pci=${pci##*/}
  local hw=1 n=0
  for d in sys/bus/pci/devices/"${pci%.*}".*/net/*; do
    [[ ! -e ${d%/net/*}/physfn ]] || continue # a VF
    n=$((n + 1))
    [[ " ${slaves[*]} " == *" ${d##*/} "* ]] || hw=0
    # In legacy mode a PF with VFs makes no LAG.
    ! compgen -G "${d%/net/*}/virtfn*" >/dev/null || [[ $switchdev == yes ]] || hw=0
  done
  ((n == ${#slaves[@]})) || hw=0
  if [[ $switchdev == yes ]]; then
    # Each VF's representor: a netdev on its PF's function.
    for s in "${slaves[@]}"; do
      pci=$(readlink -- "sys/class/net/$s/device")
      fakehost_pci_dir . "${pci##*/}" || true
      pci=$REPLY
      k=0
      for vf in "$pci"/virtfn*; do
        [[ -e $vf ]] || continue
        d=${s}pf${pci: -1}vf$k
        mkdir -p -- "sys/class/net/$d" "$pci/net"
        printf 'pf%svf%s\n' "${pci: -1}" "$k" >"sys/class/net/$d/phys_port_name"
        printf '%s\n' up >"sys/class/net/$d/operstate"
        fakehost_up "$pci/net"
        ln -s -- "${REPLY}class/net/$d" "$pci/net/$d"
        ln -s -- "../../../${pci#sys/}" "sys/class/net/$d/device"
        k=$((k + 1))
      done
    done
  fi
  for s in "${slaves[@]}"; do
    ((hw)) || break
    # The slaves' RDMA devices go (mlx5_lag_remove_devices); the first slave's becomes the LAG
    # device, kept on its PCI function with its ports, counters and traffic class file.
    pci=$(readlink -- "sys/class/net/$s/device")
    fakehost_pci_dir . "${pci##*/}" || true
    pci=$REPLY
    for rdma in "$pci"/infiniband/*; do
      d=${rdma##*/}
      rm -f -- "$rdma"
      rm -rf -- ".fake/cma/$d"
      if [[ $s == "$first" ]]; then
        mv -- "sys/class/infiniband/$d" "sys/class/infiniband/$dev"
        fakehost_up "$pci/infiniband"
        ln -s -- "${REPLY}class/infiniband/$dev" "$pci/infiniband/$dev"
      else
        rm -rf -- "sys/class/infiniband/$d"
      fi
    done
  done
  d=sys/class/net/$bond
  mkdir -p -- "$d/bonding" ".fake/net/$bond" ".fake/lag" "proc/sys/net/ipv4/conf/$bond"
  for s in arp_ignore arp_announce rp_filter; do
    cp -- "proc/sys/net/ipv4/conf/default/$s" "proc/sys/net/ipv4/conf/$bond/$s"
  done
  ((hw == 0)) || printf '%s\n' "$dev" >".fake/lag/$bond"
  cp -- "sys/class/net/$first/mtu" "$d/mtu"
  printf '%s\n' up >"$d/operstate"
  printf '%s\n' 1 >"$d/carrier"
  printf '%s\n' 0x0 >"$d/dev_id" # every netdev has one (net-sysfs.c)
  printf '%s\n' "$mac" >"$d/address"
  printf '%s\n' "$idx" >"$d/ifindex"
  printf '%s\n' $((400000 * ${#slaves[@]})) >"$d/speed"
  printf '%s\n' '802.3ad 4' >"$d/bonding/mode"
  printf '%s\n' "${slaves[*]}" >"$d/bonding/slaves"
  : >".fake/net/$bond/addrs"
  for s in "${slaves[@]}"; do
    ln -s -- "../$s" "$d/lower_$s"
    ln -s -- "../$bond" "sys/class/net/$s/master"
    ln -s -- "../$bond" "sys/class/net/$s/upper_$bond"
    mkdir -p -- "sys/class/net/$s/bonding_slave"
    printf '%s\n' active >"sys/class/net/$s/bonding_slave/state"
    printf '%s\n' up >"sys/class/net/$s/bonding_slave/mii_status"
    cp -- "sys/class/net/$s/address" "sys/class/net/$s/bonding_slave/perm_hwaddr"
    printf '%s\n' "$mac" >"sys/class/net/$s/address"
    if [[ -s .fake/net/$s/addrs ]]; then cat -- ".fake/net/$s/addrs" >>".fake/net/$bond/addrs"; fi
    : >".fake/net/$s/addrs"
  done
  fakehost_gid_table "$root" "$bond"
)

fakehost_snapshot() (
  set -eu
  local root=${1-} d f v
  local -a dirs=()
  if [[ -z $root || ! -d $root/.fake ]]; then
    printf 'fakehost snapshot: %s is not a fake host root\n' "$root" >&2
    exit 2
  fi
  shift
  (($#)) || set -- sys .fake
  cd -- "$root"
  for d in "$@"; do [[ -d $d ]] && dirs+=("$d"); done
  ((${#dirs[@]})) || exit 0
  export LC_ALL=C
  find "${dirs[@]}" -type f -print0 | sort -z | while IFS= read -r -d '' f; do
    v=''
    IFS= read -r -d '' v <"$f" || true # whole file, without forking
    while [[ $v == *$'\n' ]]; do v=${v%$'\n'}; done
    v=${v//\\/\\\\}
    v=${v//$'\n'/\\n}
    v=${v//$'\t'/\\t}
    v=${v//$'\r'/\\r}
    printf '%s=%s\n' "$f" "$v"
  done
)

fakehost_run() {
  local root=${1-} unshare py
  if [[ -z $root || ! -d $root/.fake ]]; then
    printf 'fakehost run: %s is not a fake host root\n' "$root" >&2
    return 2
  fi
  shift
  [[ ${1-} == -- ]] && shift
  if (($# == 0)); then
    echo 'fakehost run: usage: fakehost.sh run ROOT -- CMD [ARG ...]' >&2
    return 2
  fi
  root=$(cd -- "$root" && pwd)
  if ((EUID == 0)) && [[ ${FAKEHOST_ISOLATION-} != none ]]; then
    unshare=$(command -v unshare) || unshare=''
    # As root a script could touch the real machine through a tool no stub covers, so
    # refuse rather than silently run unisolated.
    if [[ -z $unshare ]] || ! "$unshare" --mount --uts --net --fork true >/dev/null 2>&1; then
      echo 'fakehost run: running as root but unshare --mount --uts --net failed; set FAKEHOST_ISOLATION=none to run anyway' >&2
      return 2
    fi
    # Inside the namespace driverfs covers ROOT/sys with the kernel's attribute semantics;
    # without FUSE the run fails rather than fall back to plain files.
    py=${FAKEHOST_PYTHON:-/usr/bin/python3}
    if [[ ! -x $py || ! -f $FAKEHOST_DIR/driverfs/driverfs.py ]]; then
      echo "fakehost run: driverfs needs $py (with python3-fusepy) and $FAKEHOST_DIR/driverfs/driverfs.py" >&2
      return 2
    fi
    echo 'fakehost run: isolated (root: unshare --mount --uts --net --fork)' >&2
    # shellcheck disable=SC2016 # expanded by the inner bash, which gets the function's text
    FAKEHOST_RUN_INNER=$(declare -f fakehost_run_inner) "$unshare" --mount --uts --net --fork -- \
      "$BASH" -c 'eval "$FAKEHOST_RUN_INNER"; unset FAKEHOST_RUN_INNER; fakehost_run_inner "$@"' \
      fakehost-run "$root" "$py" "$FAKEHOST_DIR/driverfs/driverfs.py" "$@"
  else
    if ((EUID == 0)); then
      echo 'fakehost run: not isolated (FAKEHOST_ISOLATION=none)' >&2
    else
      echo 'fakehost run: not isolated (not root)' >&2
    fi
    ROCE_GEN_ROOT=$root PATH=$root/bin:/usr/bin:/bin STUB_LOG=$root/stub.log "$@"
  fi
}

# fakehost_run_inner ROOT PYTHON DRIVERFS CMD [ARG ...]: the isolated half of fakehost_run,
# run by a bash inside the new mount namespace (fakehost_run passes its text in the
# environment, so it needs nothing else from this file). Starts the driverfs daemon on ROOT/sys (it serves the folder
# it covers) and waits until the kernel has mounted it, runs CMD with the fake host's
# environment, and on every way out stops the daemon, which unmounts: SIGTERM, then SIGKILL
# after 5 s. Returns CMD's status, or 2 when driverfs did not mount. A ROOT/sys that already
# is driverfs (a run inside a run) is used as it is.
fakehost_run_inner() {
  local root=$1 py=$2 drv=$3 esc mp rest line mounted=0
  shift 3
  esc=${root//\\/\\134}/sys # the mount point as /proc/self/mountinfo spells it
  esc=${esc// /\\040}
  esc=${esc//$'\t'/\\011}
  esc=${esc//$'\n'/\\012}
  while read -r _ _ _ _ mp rest; do
    if [[ $mp == "$esc" && $rest == *' - fuse.driverfs '* ]]; then mounted=1; fi
  done </proc/self/mountinfo
  if ((mounted == 0)); then
    # The daemon says "ready" on fd 3 once mounted and holds fd 3 until it exits.
    # Imported rather than run as the main script, so that Python keeps its compiled code
    # (driverfs/__pycache__) instead of compiling a thousand lines at each start.
    # shellcheck disable=SC2016 # Python's text
    coproc FAKEHOST_DRIVERFS { exec "$py" -c 'import sys; sys.dont_write_bytecode = False; sys.path.insert(0, sys.argv.pop(1)); import driverfs; sys.exit(driverfs.main(sys.argv))' \
      "${drv%/*}" --ready-fd 3 "$root" 3>&1 1>&2 </dev/null; }
    fakehost_pid=$FAKEHOST_DRIVERFS_PID fakehost_mnt=$root/sys
    exec {fakehost_fd}<&"${FAKEHOST_DRIVERFS[0]}"
    trap 'kill -TERM "$fakehost_pid" 2>/dev/null
      read -r -t 5 _ <&"$fakehost_fd"
      if (($? > 128)); then kill -KILL "$fakehost_pid" 2>/dev/null; umount -l "$fakehost_mnt" 2>/dev/null; fi
      wait "$fakehost_pid" 2>/dev/null' EXIT
    trap 'exit 129' HUP
    trap 'exit 130' INT
    trap 'exit 143' TERM
    # Five minutes: only a broken FUSE setup waits that long, never a loaded machine.
    if ! read -r -t 300 line <&"$fakehost_fd" || [[ $line != ready ]]; then
      printf 'fakehost run: driverfs did not mount on %s/sys (the reason is above); the fake sysfs needs FUSE (/dev/fuse) and python3-fusepy\n' "$root" >&2
      return 2
    fi
  fi
  ROCE_GEN_ROOT=$root PATH=$root/bin:/usr/bin:/bin STUB_LOG=$root/stub.log "$@"
}

fakehost_main() {
  local cmd=${1-}
  (($#)) && shift
  case $cmd in
    create) fakehost_create "$@" ;;
    addr) fakehost_addr "$@" ;;
    lag) fakehost_lag "$@" ;;
    rename) fakehost_rename "$@" ;;
    altname) fakehost_altname "$@" ;;
    snapshot) fakehost_snapshot "$@" ;;
    run) fakehost_run "$@" ;;
    reload) fakehost_reload "$@" ;;
    reboot) fakehost_reboot "$@" ;;
    reactivate) fakehost_reactivate "$@" ;;
    vfs) fakehost_vfs "$@" ;;
    pcitree) fakehost_pcitree "$@" ;;
    nccl) fakehost_nccl "$@" ;;
    *)
      fakehost_usage
      return 2
      ;;
  esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -u
  fakehost_main "$@"
fi

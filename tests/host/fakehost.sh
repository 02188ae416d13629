#!/usr/bin/env bash
# Simulated GPU hosts for testing roce-gen's bash bundles without RDMA hardware.
#
# A fake host is a directory ROOT holding the parts of /sys, /proc and /etc the scripts
# read (every path is reached as "$ROCE_GEN_ROOT/sys/...") plus ROOT/bin, stand-ins for
# the host tools (tests/host/stubs/stub) that keep their state in the same tree. Nothing
# in ROOT points outside it, so a tree can be copied (cp -a) and used as a template.
#
#   fakehost.sh create ROOT --kind ofed|inbox --host NAME
#                           --nic DEV:IF:BDF:MAC [--nic ...] [--missing DEV ...]
#                           [--lldp none|lldpd|lldpad]
#       e.g. --nic mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:01:00:00
#       --missing DEV leaves that NIC out entirely (card absent), so a test can pass the
#       plan's NIC list unchanged. Every NIC has a 400G optic (.fake/net/IF/module), link
#       modes up to 400G, pause and RDMA health counters. --lldp installs lldpd (lldpcli) or
#       lldpad (lldptool), running, with NIC N (from 0) cabled to leaf-N+1 port Eth1/1 in
#       .fake/lldp/IF; the default is none. ROOT must be absent or empty.
#   fakehost.sh snapshot ROOT [DIR ...]
#       "path=value" for every regular file under the DIRs (relative to ROOT; default
#       sys .fake), sorted; trailing newlines dropped, \ newline tab CR escaped as
#       \\ \n \t \r. Diff two snapshots to see what a script changed.
#   fakehost.sh run ROOT -- CMD [ARG ...]
#       runs CMD with ROCE_GEN_ROOT=ROOT, PATH=ROOT/bin:/usr/bin:/bin, STUB_LOG=ROOT/stub.log;
#       as root inside `unshare --mount --uts --net --fork` so tools the stubs do not
#       cover see an empty network namespace (FAKEHOST_ISOLATION=none disables that).
#       Says on stderr which way it ran; returns CMD's status.
#
# Or `source` this file and call fakehost_create / fakehost_snapshot / fakehost_run.
# Bash 4.2 compatible; the functions run in subshells so they never change the caller's
# shell options.

case ${BASH_SOURCE[0]} in
  */*) FAKEHOST_DIR=${BASH_SOURCE[0]%/*} ;;
  *) FAKEHOST_DIR=. ;;
esac
FAKEHOST_DIR=$(cd "$FAKEHOST_DIR" && pwd)
FAKEHOST_STUB=$FAKEHOST_DIR/stubs/stub

# Tools every fake host has (iproute2, ethtool, systemd, hostname, kmod), and the ones
# only MLNX_OFED / DOCA-OFED installs (mlnx-tools and ofed-scripts).
FAKEHOST_COMMON_TOOLS='dcb ethtool ip systemctl hostname modprobe'
FAKEHOST_OFED_TOOLS='ofed_info mlnx_qos cma_roce_mode cma_roce_tos ibdev2netdev'

fakehost_usage() {
  printf '%s\n' 'usage: fakehost.sh create ROOT --kind ofed|inbox --host NAME --nic DEV:IF:BDF:MAC [--nic ...] [--missing DEV ...]' \
    '       fakehost.sh snapshot ROOT [DIR ...]' \
    '       fakehost.sh run ROOT -- CMD [ARG ...]' >&2
}

fakehost_create() (
  set -eu
  die() {
    printf 'fakehost create: %s\n' "$*" >&2
    exit 2
  }
  # put REL VALUE: write one file of the fake root (VALUE may hold several lines).
  put() {
    [[ -d $root/${1%/*} ]] || mkdir -p -- "$root/${1%/*}"
    printf '%s\n' "$2" >"$root/$1"
  }
  # link REL TARGET: symlink with a relative TARGET, so the tree stays copyable.
  link() {
    [[ -d $root/${1%/*} ]] || mkdir -p -- "$root/${1%/*}"
    ln -s -- "$2" "$root/$1"
  }

  local root=${1-} kind='' host='' lldp=none spec dev ifc bdf mac i=0 d m kernel
  local -a nics=() missing=() f=() mb=()
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
      *) die "unknown option $1" ;;
    esac
    shift 2
  done
  [[ $kind == ofed || $kind == inbox ]] || die '--kind must be ofed or inbox'
  [[ -n $host && $host != *$'\n'* ]] || die '--host NAME is required'
  [[ $lldp == none || $lldp == lldpd || $lldp == lldpad ]] || die '--lldp must be none, lldpd or lldpad'
  if [[ -e $root ]]; then
    [[ -d $root && -z $(ls -A -- "$root") ]] || die "$root exists and is not an empty directory"
  fi
  mkdir -p -- "$root"
  root=$(cd -- "$root" && pwd)

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
  put proc/cmdline "BOOT_IMAGE=/vmlinuz-$kernel root=/dev/sda2 ro iommu=pt"
  put proc/mounts 'sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
configfs /sys/kernel/config configfs rw,nosuid,nodev,noexec,relatime 0 0'
  mkdir -p -- "$root/sys/class/infiniband" "$root/sys/class/net" "$root/sys/kernel/config/rdma_cm" \
    "$root/sys/bus/pci/drivers/mlx5_core" "$root/.fake/systemd/enabled" "$root/.fake/systemd/active" \
    "$root/.fake/fail" "$root/.fake/output" "$root/etc/systemd/system" "$root/bin"

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
    local pci=sys/devices/pci0000:00/$bdf net=sys/class/net/$ifc ib=sys/class/infiniband/$dev
    put "$pci/vendor" 0x15b3
    put "$pci/device" 0x1021 # ConnectX-7, matching firmware 28.x
    put "$pci/current_link_speed" '32.0 GT/s PCIe'
    put "$pci/max_link_speed" '32.0 GT/s PCIe'
    put "$pci/current_link_width" 16
    put "$pci/max_link_width" 16
    link "$pci/driver" ../../../bus/pci/drivers/mlx5_core
    link "$pci/net/$ifc" "../../../../class/net/$ifc"
    link "$pci/infiniband/$dev" "../../../../class/infiniband/$dev"
    link "sys/bus/pci/devices/$bdf" "../../../devices/pci0000:00/$bdf"
    link "sys/bus/pci/drivers/mlx5_core/$bdf" "../../../../devices/pci0000:00/$bdf"

    put "$net/mtu" 1500
    put "$net/operstate" up
    put "$net/carrier" 1
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
    # GIDs 0/1: the IPv6 link-local address from the MAC, as RoCE v1 and v2 entries.
    IFS=: read -r -a mb <<<"$mac"
    d=$(printf 'fe80:0000:0000:0000:%02x%s:%sff:fe%s:%s%s' "$((0x${mb[0]} ^ 2))" "${mb[1]}" "${mb[2]}" "${mb[3]}" "${mb[4]}" "${mb[5]}")
    put "$ib/ports/1/gids/0" "$d"
    put "$ib/ports/1/gids/1" "$d"
    put "$ib/ports/1/gid_attrs/ndevs/0" "$ifc"
    put "$ib/ports/1/gid_attrs/ndevs/1" "$ifc"
    put "$ib/ports/1/gid_attrs/types/0" 'IB/RoCE v1'
    put "$ib/ports/1/gid_attrs/types/1" 'RoCE v2'
    link "$ib/device" "../../../devices/pci0000:00/$bdf"

    # rdma_cm configfs, already mkdir'ed (a real configfs creates ports/ on mkdir).
    put "sys/kernel/config/rdma_cm/$dev/ports/1/default_roce_mode" 'IB/RoCE v1'
    put "sys/kernel/config/rdma_cm/$dev/ports/1/default_roce_tos" 0

    put ".fake/net/$ifc/pause" 'on on off' # rx tx autoneg: mlx5's default global pause
    # A 400G SR4 optic (OSFP, CMIS) in good health, with the module's warning thresholds.
    put ".fake/net/$ifc/module" "layout=cmis
vendor=NVIDIA
pn=MMA4Z00-NS400
sn=MT2330FT0$i
temp=4$i.50
tx=-0.50 -0.62 -0.41 -0.55
rx=-1.10 -1.32 -0.98 -1.21
temp_hi=75
tx_lo=-6.40
tx_hi=4.00
rx_lo=-9.90
rx_hi=4.00"
    put ".fake/net/$ifc/modes" '25000
50000
100000
200000
400000'
    put ".fake/net/$ifc/lanes" 4
    put ".fake/net/$ifc/stats" "rx_packets 123456
tx_packets 654321
rx_pause_ctrl_phy 0
tx_pause_ctrl_phy 0
rx_prio3_pause $((10 * i))
tx_prio3_pause $((20 * i))"
    if [[ $lldp != none ]]; then
      put ".fake/lldp/$ifc" "switch=leaf-$((i + 1))
port=Eth1/1
port_type=ifname
descr=$host:$ifc"
    fi
    : >"$root/.fake/net/$ifc/addrs"       # no IP address
    mkdir -p -- "$root/.fake/dcb/$ifc"
    : >"$root/.fake/dcb/$ifc/dscp-prio" # empty DCB APP table
    if [[ $kind == ofed ]]; then
      # OFED-only sysfs (mlnx-ofa_kernel en_sysfs.c): QoS, ECN per priority, CNP marking.
      put "$net/qos/trust" pcp
      put "$net/qos/pfc" 0,0,0,0,0,0,0,0
      put "$net/qos/dscp2prio" "$(for ((d = 0; d < 64; d++)); do echo "$d $((d >> 3))"; done)"
      for d in 0 1 2 3 4 5 6 7; do
        # Firmware default ROCE_CC_PRIO_MASK_P1=255: congestion control on every priority.
        put "$net/ecn/roce_np/enable/$d" 1
        put "$net/ecn/roce_rp/enable/$d" 1
      done
      put "$net/ecn/roce_np/cnp_dscp" 48     # firmware default CNP_DSCP_P1
      put "$net/ecn/roce_np/cnp_802p_prio" 6 # firmware default CNP_802P_PRIO_P1
      mkdir -p -- "$root/$ib/tc/1"
      : >"$root/$ib/tc/1/traffic_class" # empty: no global tclass set
    else
      put ".fake/dcb/$ifc/pfc" 0,0,0,0,0,0,0,0
    fi
    i=$((i + 1))
  done

  # The stub is copied, not linked, so the tree does not depend on the repository.
  cp -- "$FAKEHOST_STUB" "$root/bin/stub"
  chmod 755 "$root/bin/stub"
  for d in $FAKEHOST_COMMON_TOOLS; do ln -s stub "$root/bin/$d"; done
  if [[ $kind == ofed ]]; then
    for d in $FAKEHOST_OFED_TOOLS; do ln -s stub "$root/bin/$d"; done
  fi
  case $lldp in
    lldpd) d=lldpcli ;;
    lldpad) d=lldptool ;;
    *) d='' ;;
  esac
  if [[ -n $d ]]; then
    ln -s stub "$root/bin/$d"
    : >"$root/.fake/systemd/active/$lldp.service"
  fi
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
  local root=${1-} unshare
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
    echo 'fakehost run: isolated (root: unshare --mount --uts --net --fork)' >&2
    ROCE_GEN_ROOT=$root PATH=$root/bin:/usr/bin:/bin STUB_LOG=$root/stub.log \
      "$unshare" --mount --uts --net --fork -- "$@"
  else
    if ((EUID == 0)); then
      echo 'fakehost run: not isolated (FAKEHOST_ISOLATION=none)' >&2
    else
      echo 'fakehost run: not isolated (not root)' >&2
    fi
    ROCE_GEN_ROOT=$root PATH=$root/bin:/usr/bin:/bin STUB_LOG=$root/stub.log "$@"
  fi
}

fakehost_main() {
  local cmd=${1-}
  (($#)) && shift
  case $cmd in
    create) fakehost_create "$@" ;;
    snapshot) fakehost_snapshot "$@" ;;
    run) fakehost_run "$@" ;;
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

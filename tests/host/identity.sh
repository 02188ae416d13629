#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2034 # the library reads the plan values this test sets
# Function tests of what the bundle's scripts know about the host (templates/host/lib-checks.sh):
# host names compared by their short forms, the netdev a host renamed found by its altname or
# its planned PCI address and MAC (never one that misses either, never one of several), the
# reader of `ip -o link show` and of the kernel's mount tables, and the persistence warning of a
# root, unit, bundle or state folder that does not survive a reboot. On simulated hosts made by
# fakehost.sh create (plain trees: no root, no FUSE, nothing run but the ip stand-in); the
# readers on the fixtures. Prints "N passed, M failed" and exits 1 on a failure.
# Usage: identity.sh [BASH]   (the bash that runs the functions; default: this one)

set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$HERE/../../templates/host
FX=$HERE/fixtures
if [ $# -gt 0 ] && [ -z "${IDENTITY_INNER-}" ]; then
  IDENTITY_INNER=1 exec "$1" "${BASH_SOURCE[0]}"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-identity.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=../../templates/host/lib.sh
. "$LIB/lib.sh"
# shellcheck source=assert.sh
. "$HERE/assert.sh"
# This test's plan data, as plan.sh would set it.
# shellcheck disable=SC2034 # the library reads these
{
  RG_CLUSTER=test RG_HOST=gpu-001.dc1.example RG_PERSIST=yes RG_INSTALL_DIR=/opt/roce-gen/test
  RG_NIC_IBDEV=(mlx5_0 mlx5_1) RG_NIC_PCI=(0000:1a:00.0 '') RG_NIC_MAC=(b8:3f:d2:0a:00:00 '')
}
# The ip stand-in, found first on PATH, as on a fake host.
mkdir -p "$TMP/bin"
ln -s "$HERE/stubs/ip" "$TMP/bin/ip"
PATH=$TMP/bin:/usr/bin:/bin

# forget: a fresh list of checks.
forget() { RG_C_ID=() RG_C_NIC=() RG_C_STATUS=() RG_C_SEV=() RG_C_EXP=() RG_C_ACT=() RG_C_MSG=() RG_C_KIND=() RG_C_FROM=(); }
# msg ID NIC: the message of a check.
msg() {
  local i
  for ((i = 0; i < ${#RG_C_ID[@]}; i++)); do
    if [ "${RG_C_ID[i]}" = "$1" ] && [ "${RG_C_NIC[i]}" = "$2" ]; then printf '%s' "${RG_C_MSG[i]}"; fi
  done
}
# has TEXT PART: prints yes when TEXT contains PART.
has() { case $1 in *"$2"*) echo yes ;; *) echo "no: $1" ;; esac; }

# --- host names ----------------------------------------------------------------------------

rg_short_name GPU-001.dc1.example
eq 'short name of an FQDN' gpu-001 "$REPLY"
rg_short_name gpu-001
eq 'short name of a short name' gpu-001 "$REPLY"
for c in "gpu-001.dc1.example|gpu-001|pass" "gpu-001|gpu-001.dc1.example|pass" "gpu-001|GPU-001|pass" \
  "gpu-001.dc1.example|gpu-001.dc1.example|pass" "gpu-001.dc1.example|gpu-001.other.example|pass" \
  "gpu-001.dc1.example|gpu-002|fail" "gpu-001|gpu-0011|fail" "gpu-001||fail" "gpu-001.dc1|gpu-001-dc1|fail"; do
  IFS='|' read -r RG_HOST RG_OBSERVED_HOST want <<<"$c"
  forget
  rg_check_hostname
  eq "hostname: plan $RG_HOST, host ${RG_OBSERVED_HOST:-unset}" "$want" "$(rg_status_of hostname ""; printf %s "$REPLY")"
done
RG_HOST=gpu-001.dc1.example RG_OBSERVED_HOST=gpu-001
forget
rg_check_hostname
eq 'hostname: the message says the short names matched' 'host name is gpu-001: gpu-001.dc1.example by its short name' "$(msg hostname "")"
RG_OBSERVED_HOST=localhost RG_IDENTIFIED_BY="MAC b8:3f:d2:0a:00:00"
forget
rg_check_hostname
eq 'hostname: another name, identified by run-here.sh: warn' warn "$(rg_status_of hostname ""; printf %s "$REPLY")"
RG_IDENTIFIED_BY=""

# --- the readers ---------------------------------------------------------------------------

eq 'ip -o link show: the name' enp26s0f1np1 "$(rg_link_name <"$FX/ip/link-altname-oneline.txt")"
eq 'ip link show: the name' enp26s0f1np1 "$(rg_link_name <"$FX/ip/link-altname.txt")"
eq 'ip link show of a VLAN: its own name' bond0.100 \
  "$(printf '7: bond0.100@bond0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 4200 qdisc noqueue state UP mode DEFAULT group default qlen 1000\n' | rg_link_name)"
rg_link_name <<<'Device "ens9" does not exist.'
eq 'ip error text is no name' 1 $?
rg_link_name </dev/null
eq 'no output is no name' 1 $?

# mounts FIXTURE mountinfo|mounts: a root whose mount table is the fixture.
mounts() {
  RG_ROOT=$TMP/m.$RANDOM
  if [ "$2" = mountinfo ]; then
    mkdir -p "$RG_ROOT/proc/self"
    cp "$FX/mounts/$1" "$RG_ROOT/proc/self/mountinfo"
  else
    mkdir -p "$RG_ROOT/proc"
    cp "$FX/mounts/$1" "$RG_ROOT/proc/mounts"
  fi
  rg_read_mounts
}
mounts mountinfo-xfs.txt mountinfo
eq 'mountinfo: points and types' '/ /sys /proc /sys/kernel/config|xfs sysfs proc configfs' "${RG_MNT_POINT[*]}|${RG_MNT_TYPE[*]}"
eq 'mountinfo xfs: /' xfs "$(rg_mount_type /)"
eq 'mountinfo xfs: the state folder' xfs "$(rg_mount_type /var/lib/roce-gen)"
eq 'mountinfo xfs: under /sys' sysfs "$(rg_mount_type /sys/class/net)"
eq 'mountinfo xfs: /system is not under /sys' xfs "$(rg_mount_type /system)"
mounts mounts-tmpfs.txt mounts
eq 'mounts tmpfs: /' tmpfs "$(rg_mount_type /opt/roce-gen/test)"
mounts mounts-rhel7.txt mounts
eq 'mounts of RHEL 7: the real root after the initramfs rootfs' xfs "$(rg_mount_type /etc/systemd/system)"
eq 'mounts of RHEL 7: /run' tmpfs "$(rg_mount_type /run/roce-gen.lock)"
mounts mountinfo-overlay-state.txt mountinfo
eq 'overlay root: /' overlay "$(rg_mount_type /)"
eq 'overlay root: the unit folder bound from a disk' ext4 "$(rg_mount_type /etc/systemd/system)"
eq 'overlay root: the state folder bound from a disk' ext4 "$(rg_mount_type /var/lib/roce-gen/test/saved-state.tsv)"
eq 'overlay root: the install folder' overlay "$(rg_mount_type /opt/roce-gen/test)"
eq 'a mount point with a space (\040)' xfs "$(rg_mount_type '/srv/node data/x')"
RG_ROOT=$TMP/none
rg_read_mounts
eq 'no mount table: the reader fails' 1 $?

# --- persistence on a root that does not survive a reboot ------------------------------------

FH=$HERE/fakehost.sh
NICS=(--nic mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:0a:00:00 --nic mlx5_1:ens2f0np0:0000:3c:00.0:b8:3f:d2:0a:01:00)
# host NAME ARGS...: a simulated host made by fakehost.sh create; RG_ROOT is it.
host() {
  local name=$1 key
  shift
  # Each kind of host is made once and copied.
  key=$(printf '%s' "$*" | tr -c 'A-Za-z0-9' _)
  if [ ! -d "$TMP/made.$key" ]; then
    bash "$FH" create "$TMP/made.$key" --kind ofed --host gpu-001 "${NICS[@]}" "$@" || exit 2
  fi
  cp -a "$TMP/made.$key" "$TMP/$name"
  RG_ROOT=$TMP/$name
  export ROCE_GEN_ROOT=$RG_ROOT
}
RG_PHASE=precheck RG_UNIT=roce-gen-test.service
for fs in xfs ext4; do
  host "root-$fs" --rootfs "$fs"
  forget
  rg_check_volatile
  eq "$fs root: no persistence check" "0|" "${#RG_C_ID[@]}|$RG_VOLATILE"
done
host root-tmpfs --rootfs tmpfs
forget
rg_check_volatile
eq 'tmpfs root: a persistence warning' 'persistence warn /etc/systemd/system: tmpfs, /opt/roce-gen/test: tmpfs, /var/lib/roce-gen: tmpfs' \
  "${RG_C_ID[*]-} ${RG_C_STATUS[*]-} ${RG_C_ACT[*]-}"
m=$(msg persistence "")
eq 'tmpfs root: the message names the file system' yes "$(has "$m" "the root file system is tmpfs, which does not survive a reboot")"
eq 'tmpfs root: the message says what is lost' yes "$(has "$m" "the unit in /etc/systemd/system, the bundle in /opt/roce-gen/test, the saved state in /var/lib/roce-gen would be gone")"
eq 'tmpfs root: the message says to put the bundle into the image' yes \
  "$(has "$m" "Put the bundle into the node image: its files in /opt/roce-gen/test, roce-gen-test.service in /etc/systemd/system, and 'systemctl enable roce-gen-test.service' run in the image")"
for fs in rootfs overlay nfs4; do
  host "root-$fs" --rootfs "$fs"
  forget
  rg_check_volatile
  eq "$fs root: a persistence warning" "warn" "$(rg_status_of persistence ""; printf %s "$REPLY")"
done
host state-tmpfs --mount /var/lib/roce-gen:tmpfs
forget
rg_check_volatile
m=$(msg persistence "")
eq 'the state folder on its own tmpfs: only it' '/var/lib/roce-gen: tmpfs' "$RG_VOLATILE"
eq 'the state folder on its own tmpfs: rollback, not the image' 'yes|no' \
  "$(has "$m" "/var/lib/roce-gen is on tmpfs, which does not survive a reboot: at the next boot the saved state in /var/lib/roce-gen would be gone, so rollback would have nothing to restore. Keep /var/lib/roce-gen on storage that survives a reboot.")|$(has "$m" "node image" | cut -c1-2)"
RG_PERSIST=no
host root-tmpfs-nopersist --rootfs tmpfs
forget
rg_check_volatile
eq 'persistence = no: nothing to warn about' "0|" "${#RG_C_ID[@]}|$RG_VOLATILE"
RG_PERSIST=yes

# Apply's own persistence check becomes the warning (rg_persist_volatile).
RG_ROOT=$TMP/root-tmpfs
RG_PHASE=apply
forget
rg_check_volatile
eq 'apply: rg_check_volatile records nothing itself' 0 "${#RG_C_ID[@]}"
rg_check_action persistence "" changed info installed installed "installed the bundle in /opt/roce-gen/test and enabled roce-gen-test.service" "absent → installed"
rg_persist_volatile
eq 'apply on a tmpfs root: persistence is a warning, not a change' 'warn|survives a reboot|' "${RG_C_STATUS[0]}|${RG_C_EXP[0]}|${RG_C_KIND[0]}"
eq 'apply on a tmpfs root: the message keeps what apply did and says why it does not last' yes \
  "$(has "${RG_C_MSG[0]}" "installed the bundle in /opt/roce-gen/test and enabled roce-gen-test.service; but the root file system is tmpfs")"
for c in "skip|no|no" "changed|yes|no" "fail|no|no"; do
  IFS='|' read -r status RG_BOOT RG_DRY_RUN <<<"$c"
  forget
  rg_check persistence "" "$status" info installed "" "as it was"
  rg_persist_volatile
  eq "apply ($status, boot $RG_BOOT): left as it is" "$status|as it was" "${RG_C_STATUS[0]}|${RG_C_MSG[0]}"
done
RG_BOOT=no RG_DRY_RUN=yes
forget
rg_check_action persistence "" warn info installed "" "dry run: would install the bundle" "absent → installed"
rg_persist_volatile
eq 'apply --dry-run on a tmpfs root: the would-install is the warning' 'warn|survives a reboot' "${RG_C_STATUS[0]}|${RG_C_EXP[0]}"
RG_DRY_RUN=no

# --- the netdev the host calls otherwise -------------------------------------------------------

# resolve: RG_NIC_NETDEV as the plan has it, resolved on the host RG_ROOT.
resolve() {
  RG_NIC_NETDEV=(ens1f0np0 ens2f0np0)
  RG_NIC_PLANNED=() RG_NIC_FOUND_BY=() RG_NIC_NOT_FOUND=()
  rg_resolve_netdevs
}
host same
resolve
eq 'planned names present: unchanged' 'ens1f0np0 ens2f0np0|' "${RG_NIC_NETDEV[*]}|${RG_NIC_FOUND_BY[*]-}"
host renamed
bash "$FH" rename "$RG_ROOT" ens1f0np0 enp26s0f0np0
bash "$FH" rename "$RG_ROOT" ens2f0np0 enp60s0f0np0
bash "$FH" altname "$RG_ROOT" enp60s0f0np0 ens2f0np0
resolve
eq 'renamed: by PCI address and MAC; altname: by ip' \
  'enp26s0f0np0 enp60s0f0np0|its PCI address 0000:1a:00.0 and MAC b8:3f:d2:0a:00:00|its altname ens2f0np0' \
  "${RG_NIC_NETDEV[*]}|${RG_NIC_FOUND_BY[0]}|${RG_NIC_FOUND_BY[1]}"
eq 'renamed: the plan names kept' 'ens1f0np0 ens2f0np0' "${RG_NIC_PLANNED[*]}"
RG_NIC_NETDEV[0]=enp26s0f0np0
rg_resolve_netdevs
eq 'resolved once, kept' 'enp26s0f0np0 enp60s0f0np0' "${RG_NIC_NETDEV[*]}"
forget
rg_check_identity 0
eq 'identity of a renamed port: netdev warns, the rest passes' 'ib_dev=pass netdev=warn netdev_map=pass link_layer=pass pci=pass mac=pass' \
  "$(for ((k = 0; k < ${#RG_C_ID[@]}; k++)); do printf '%s=%s ' "${RG_C_ID[k]}" "${RG_C_STATUS[k]}"; done | sed 's/ $//')"
eq 'identity of a renamed port: both names, what found it, where the settings go' \
  "ens1f0np0 is not an interface here: this host calls it enp26s0f0np0 (found by its PCI address 0000:1a:00.0 and MAC b8:3f:d2:0a:00:00), so the settings go to enp26s0f0np0; put enp26s0f0np0 in the plan's netdev column" \
  "$(msg netdev mlx5_0)"
rg_identity_ok 0
eq 'identity of a renamed port is good enough to configure it' 0 $?
rg_check_identity 1
eq 'identity of an altname: warns with both names' \
  "warn|ens2f0np0 is an altname of enp60s0f0np0 here (ip link; sysfs knows only enp60s0f0np0), so the settings go to enp60s0f0np0; put enp60s0f0np0 in the plan's netdev column" \
  "$(rg_status_of netdev mlx5_1; printf %s "$REPLY")|$(msg netdev mlx5_1)"

host wrongmac
bash "$FH" rename "$RG_ROOT" ens1f0np0 enp26s0f0np0
echo b8:3f:d2:0a:00:99 >"$RG_ROOT/sys/class/net/enp26s0f0np0/address"
resolve
eq 'another MAC at the planned PCI address: not this port' \
  'ens1f0np0|the interface at its PCI address 0000:1a:00.0, enp26s0f0np0, has MAC b8:3f:d2:0a:00:99, not the planned b8:3f:d2:0a:00:00: not this port' \
  "${RG_NIC_NETDEV[0]}|${RG_NIC_NOT_FOUND[0]}"
forget
rg_check_identity 0
eq 'another MAC at the planned PCI address: netdev fails, naming why' "fail|yes" \
  "$(rg_status_of netdev mlx5_0; printf %s "$REPLY")|$(has "$(msg netdev mlx5_0)" "ens1f0np0 is not in /sys/class/net/ (present: enp26s0f0np0, ens2f0np0), and the interface at its PCI address")"
rg_identity_ok 0
eq 'another MAC at the planned PCI address: nothing is configured' 1 $?

host maconly
bash "$FH" rename "$RG_ROOT" ens2f0np0 enp60s0f0np0
RG_NIC_MAC[1]=b8:3f:d2:0a:01:00
resolve
eq 'MAC planned, no PCI address: by the MAC' 'enp60s0f0np0|its MAC b8:3f:d2:0a:01:00' "${RG_NIC_NETDEV[1]}|${RG_NIC_FOUND_BY[1]}"
echo b8:3f:d2:0a:01:00 >"$RG_ROOT/sys/class/net/ens1f0np0/address"
resolve
eq 'MAC planned, two interfaces have it: ambiguous, not resolved' \
  'ens2f0np0|enp60s0f0np0 ens1f0np0 all match MAC b8:3f:d2:0a:01:00: which one is ens2f0np0 is ambiguous' \
  "${RG_NIC_NETDEV[1]}|${RG_NIC_NOT_FOUND[1]}"
RG_NIC_MAC[1]=''

host altwrong
bash "$FH" rename "$RG_ROOT" ens1f0np0 enp26s0f0np0
bash "$FH" rename "$RG_ROOT" ens2f0np0 enp60s0f0np0
bash "$FH" altname "$RG_ROOT" enp60s0f0np0 ens1f0np0
resolve
eq 'an altname on an interface at another PCI address: not this port' \
  'ens1f0np0|enp60s0f0np0 (found by its altname ens1f0np0) is at PCI 0000:3c:00.0, not the planned 0000:1a:00.0: not this port' \
  "${RG_NIC_NETDEV[0]}|${RG_NIC_NOT_FOUND[0]}"
eq 'neither PCI address nor MAC planned, no altname: not found, saying why' \
  'ens2f0np0|the plan has no PCI address or MAC to find it by' "${RG_NIC_NETDEV[1]}|${RG_NIC_NOT_FOUND[1]}"

done_testing

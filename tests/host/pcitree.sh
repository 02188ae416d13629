#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# The simulated 8-GPU server's PCI tree (pcitree.py, fixtures/pci/hgx-8gpu.json) as the real
# pciutils read it: a fake host made with the fixture's NIC addresses gets the tree through
# `fakehost.sh pcitree`, then Debian's lspci and setpci, pointed at the host's sysfs
# (-A linux-sysfs -O sysfs.path=ROOT/sys/bus/pci), must see 8 GPUs and 8 NICs, each GPU under the
# PCIe switch of its NIC, the ACS controls of --acs on and off, the NICs' Max Read Request Size
# (--mrrs) and link; a setpci write of the ACS control changes those two bytes of the
# configuration file and no other. Once more under `fakehost.sh run`, where driverfs (FUSE)
# serves the files when the run is isolated (root). The NICs' links follow them into the tree,
# and rename, vfs, lag and addr keep working there.
# Prints "N passed, M failed" and exits 1 on a failure. Needs pciutils (lspci, setpci).

set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FH=$HERE/fakehost.sh
TOPO=$HERE/fixtures/pci/hgx-8gpu.json
TMP=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-pcitree.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=assert.sh
. "$HERE/assert.sh"

for tool in lspci setpci; do
  command -v "$tool" >/dev/null || {
    echo "pcitree.sh: $tool is missing (Debian package pciutils)" >&2
    exit 2
  }
done

# The fixture's NICs, mlx5_N at its N-th NIC address (fixtures/pci/README.md).
NIC_BDFS=(0000:19:00.0 0000:29:00.0 0000:3b:00.0 0000:5c:00.0 0000:9b:00.0 0000:aa:00.0 0000:bb:00.0 0000:da:00.0)
GPU_BDFS=(0000:18:00.0 0000:2a:00.0 0000:3a:00.0 0000:5d:00.0 0000:9a:00.0 0000:ab:00.0 0000:ba:00.0 0000:db:00.0)
# host ROOT [--nic SPEC ...]: a fake OFED host with the fixture's eight NICs (ensNnp0, N from 1).
host() {
  local root=$1 i
  local -a nics=()
  shift
  for i in "${!NIC_BDFS[@]}"; do
    nics+=(--nic "mlx5_$i:ens$((i + 1))np0:${NIC_BDFS[i]}:b8:3f:d2:01:00:0$i")
  done
  bash "$FH" create "$root" --kind ofed --host gpu-1 "${nics[@]}" "$@"
}
# pci ROOT TOOL ARG...: lspci or setpci on ROOT's sysfs, stderr dropped (lspci -vvv looks for
# kernel modules through libkmod and says it found none).
pci() {
  local root=$1 tool=$2
  shift 2
  "$tool" -A linux-sysfs -O "sysfs.path=$root/sys/bus/pci" "$@" 2>/dev/null
}
dangling() { (cd "$1" && find sys -xtype l | sort); }

H=$TMP/h
host "$H"
out=$(bash "$FH" pcitree "$H" "$TOPO" 2>&1)
eq "pcitree: status" 0 "$?"
eq "pcitree: nothing said" "" "$out"
eq "every link resolves" "" "$(dangling "$H")"
eq "create's folder for the NICs is gone" no "$([[ -e $H/sys/devices/pci0000:00 ]] && echo yes || echo no)"

# The GPU<->NIC pair 0 as sysfs nests it: root port, switch upstream port, downstream port.
pair=sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0
eq "GPU0's folder" "$pair/0000:17:00.0/0000:18:00.0" "$(cd -P "$H/sys/bus/pci/devices/0000:18:00.0" && echo "${PWD#"$H"/}")"
eq "mlx5_0's netdev follows the function" "$pair/0000:17:01.0/0000:19:00.0" \
  "$(cd -P "$H/sys/class/net/ens1np0/device" && echo "${PWD#"$H"/}")"
eq "mlx5_0's RDMA device follows it" "$pair/0000:17:01.0/0000:19:00.0" \
  "$(cd -P "$H/sys/class/infiniband/mlx5_0/device" && echo "${PWD#"$H"/}")"
eq "the function's netdev link is one level deeper" ../../../../../../../class/net/ens1np0 \
  "$(readlink "$H/$pair/0000:17:01.0/0000:19:00.0/net/ens1np0")"
eq "its driver link" ../../../../../../bus/pci/drivers/mlx5_core "$(readlink "$H/$pair/0000:17:01.0/0000:19:00.0/driver")"
eq "mlx5_core lists it" "../../../../${pair#sys/}/0000:17:01.0/0000:19:00.0" "$(readlink "$H/sys/bus/pci/drivers/mlx5_core/0000:19:00.0")"
eq "the GPU's driver" ../../../../../../bus/pci/drivers/nvidia "$(readlink "$H/$pair/0000:17:00.0/0000:18:00.0/driver")"
eq "the GPU's IOMMU group" "../../../../../../kernel/iommu_groups/4" "$(readlink "$H/$pair/0000:17:00.0/0000:18:00.0/iommu_group")"
eq "the group's type and member" "DMA-FQ ../../../../${pair#sys/}/0000:17:00.0/0000:18:00.0" \
  "$(cat "$H/sys/kernel/iommu_groups/4/type") $(readlink "$H/sys/kernel/iommu_groups/4/devices/0000:18:00.0")"
eq "one group per function" "48 48" "$(find "$H/sys/kernel/iommu_groups" -mindepth 1 -maxdepth 1 | wc -l) $(find "$H/sys/bus/pci/devices" -mindepth 1 | wc -l)"
d=$H/sys/bus/pci/devices
eq "the GPU's attributes" "0x10de 0x2330 0x030200 0x10de 0x16c1 0xa1 0 0-23,96-119" \
  "$(cat "$d/0000:18:00.0"/{vendor,device,class,subsystem_vendor,subsystem_device,revision,numa_node,local_cpulist} | tr '\n' ' ' | sed 's/ $//')"
eq "the link attributes (pci-sysfs.c)" "32.0 GT/s PCIe|16|32.0 GT/s PCIe|16" \
  "$(cat "$d/0000:19:00.0"/{current_link_speed,current_link_width,max_link_speed,max_link_width} | paste -sd'|')"
eq "local_cpus: the mask NCCL's dump shows for NUMA node 0" 00000000,00000000,00ffffff,00000000,00000000,00ffffff "$(cat "$d/0000:18:00.0/local_cpus")"
eq "NUMA nodes of the GPUs" "0 0 0 1 2 2 2 3" "$(for g in "${GPU_BDFS[@]}"; do cat "$d/$g/numa_node"; done | paste -sd' ')"
eq "a downstream port's bus numbers" "25 25" "$(cat "$d/0000:17:01.0"/{secondary,subordinate}_bus_number | paste -sd' ')"
eq "the NIC keeps create's files" "ens1np0 mlx5_0" "$(ls "$d/0000:19:00.0/net") $(ls "$d/0000:19:00.0/infiniband")"
eq "config: 4096 bytes" 4096 "$(wc -c <"$d/0000:19:00.0/config")"

# lspci's tree: the eight root complexes, each a root port, a switch and a GPU and NIC below it
# (IDs, not names: the names come with the installed pci.ids). The empty [0000:00] is lspci's
# own: it always starts from bus 00.
want_tree='-+-[0000:00]-
 +-[0000:15]---01.0-[16-19]----00.0-[17-19]--+-00.0-[18]----00.0  10de:2330
 |                                           \-01.0-[19]----00.0  15b3:1021
 +-[0000:26]---01.0-[27-2a]----00.0-[28-2a]--+-00.0-[29]----00.0  15b3:1021
 |                                           \-01.0-[2a]----00.0  10de:2330
 +-[0000:37]---01.0-[38-3b]----00.0-[39-3b]--+-00.0-[3a]----00.0  10de:2330
 |                                           \-01.0-[3b]----00.0  15b3:1021
 +-[0000:59]---01.0-[5a-5d]----00.0-[5b-5d]--+-00.0-[5c]----00.0  15b3:1021
 |                                           \-01.0-[5d]----00.0  10de:2330
 +-[0000:97]---01.0-[98-9b]----00.0-[99-9b]--+-00.0-[9a]----00.0  10de:2330
 |                                           \-01.0-[9b]----00.0  15b3:1021
 +-[0000:a7]---01.0-[a8-ab]----00.0-[a9-ab]--+-00.0-[aa]----00.0  15b3:1021
 |                                           \-01.0-[ab]----00.0  10de:2330
 +-[0000:b7]---01.0-[b8-bb]----00.0-[b9-bb]--+-00.0-[ba]----00.0  10de:2330
 |                                           \-01.0-[bb]----00.0  15b3:1021
 \-[0000:d7]---01.0-[d8-db]----00.0-[d9-db]--+-00.0-[da]----00.0  15b3:1021
                                             \-01.0-[db]----00.0  10de:2330'
eq "lspci -tvn: the tree" "$want_tree" "$(pci "$H" lspci -tvn)"
eq "lspci: 8 GPUs" 8 "$(pci "$H" lspci -n -d 10de:2330 | wc -l)"
eq "lspci: 8 NICs" 8 "$(pci "$H" lspci -n -d 15b3:1021 | wc -l)"
eq "lspci: 8 switches (upstream + 2 downstream ports each)" 24 "$(pci "$H" lspci -n -d 1000:c030 | wc -l)"
# Each GPU's bridges (lspci -PP, from the sysfs parents) down to its downstream port are its NIC's,
# but for that last port: the two share one switch (nvidia-smi's PIX).
for i in "${!GPU_BDFS[@]}"; do
  g=$(pci "$H" lspci -PP -s "${GPU_BDFS[i]}") n=$(pci "$H" lspci -PP -s "${NIC_BDFS[i]}")
  g=${g%% *} n=${n%% *}
  eq "GPU$i and mlx5_$i under one switch" "${g%/*/*}" "${n%/*/*}"
done
eq "lspci -PP: GPU0's path" "0000:15:01.0/16:00.0/17:00.0/18:00.0" "$(pci "$H" lspci -PP -D -s 0000:18:00.0 | cut -d' ' -f1)"

# ACS (ext. capability 0x000d) of a downstream port and a root port, --acs on: what
# pci_std_enable_acs sets from the capability (SV RR CR UF).
acs() { pci "$1" lspci -vvv -s "$2" | grep -E $'^\t\tACS(Cap|Ctl):' | tr -d '\t'; }
eq "ACS of a downstream port, --acs on" "ACSCap:SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans+
ACSCtl:SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-" "$(acs "$H" 0000:17:01.0)"
eq "ACS of a root port, --acs on" "ACSCap:SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
ACSCtl:SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-" "$(acs "$H" 0000:15:01.0)"
eq "no ACS on an upstream port" "" "$(acs "$H" 0000:16:00.0)"
express() { pci "$1" lspci -vvv -s "$2" | grep -E $'^\t\t(\tMaxPayload|LnkSta:|Capabilities: \\[40\\])|^\tCapabilities: \\[40\\]' | tr -s '\t' ' ' | sed 's/^ //'; }
eq "the NIC: endpoint, MRRS 512, 32GT/s x16" "Capabilities: [40] Express (v2) Endpoint, MSI 00
MaxPayload 256 bytes, MaxReadReq 512 bytes
LnkSta: Speed 32GT/s, Width x16" "$(express "$H" 0000:19:00.0)"
eq "port types of the path" "Root Port (Slot-) Upstream Port Downstream Port (Slot-) Endpoint" \
  "$(for b in 15:01.0 16:00.0 17:00.0 18:00.0; do pci "$H" lspci -vvv -s "$b" | sed -n 's/.*Express (v2) \(.*\), MSI 00/\1/p'; done | paste -sd' ')"
eq "the NIC's kernel driver and IOMMU group" "IOMMU group: 5|Kernel driver in use: mlx5_core" \
  "$(pci "$H" lspci -vvv -s 0000:19:00.0 | grep -E 'IOMMU group|Kernel driver' | tr -d '\t' | paste -sd'|')"

# setpci clears the redirect controls (value 0 under mask 0x001d); only the two bytes of ACS
# Control (0x106) change in the configuration file.
cfg=$d/0000:17:01.0/config
cp "$cfg" "$TMP/before"
pci "$H" setpci -s 0000:17:01.0 ECAP_ACS+6.w=0000:001d
eq "setpci: status" 0 "$?"
eq "setpci reads the control back" 0000 "$(pci "$H" setpci -s 0000:17:01.0 ECAP_ACS+6.w)"
eq "lspci: the controls off" "ACSCtl:SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-" \
  "$(acs "$H" 0000:17:01.0 | tail -1)"
eq "cmp: only byte 0x106 changed (0x1d to 0)" "263 35 0" "$(cmp -l "$TMP/before" "$cfg" | tr -s ' ' | sed 's/^ //')"

# Again: --acs off, --mrrs, --iommu-type on the same host (the tree is rewritten in place).
out=$(bash "$FH" pcitree "$H" "$TOPO" --acs off --mrrs 4096 --iommu-type identity 2>&1)
eq "pcitree again: status and output" "0 " "$? $out"
eq "ACS of a downstream port, --acs off" "ACSCtl:SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-" \
  "$(acs "$H" 0000:28:00.0 | tail -1)"
eq "ACS of a root port, --acs off" "ACSCtl:SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-" \
  "$(acs "$H" 0000:d7:01.0 | tail -1)"
eq "--mrrs 4096: the NICs" "8" "$(for n in "${NIC_BDFS[@]}"; do express "$H" "$n"; done | grep -c 'MaxReadReq 4096 bytes')"
eq "--mrrs 4096: not the GPUs" "MaxPayload 256 bytes, MaxReadReq 512 bytes" "$(express "$H" 0000:18:00.0 | sed -n 2p)"
eq "--iommu-type identity" identity "$(cat "$H/sys/kernel/iommu_groups/5/type")"
eq "every link still resolves" "" "$(dangling "$H")"

# The same tree under fakehost.sh run: through driverfs when isolated (as root).
cat >"$TMP/inner.sh" <<'EOF'
P=$ROCE_GEN_ROOT/sys/bus/pci
lspci -A linux-sysfs -O sysfs.path="$P" -tvn 2>/dev/null
echo @@
setpci -A linux-sysfs -O sysfs.path="$P" -s 0000:39:01.0 ECAP_ACS+6.w=001d:001d && echo setpci ok
lspci -A linux-sysfs -O sysfs.path="$P" -vvv -s 0000:39:01.0 2>/dev/null | grep ACSCtl: | tr -d '\t'
EOF
cp "$d/0000:39:01.0/config" "$TMP/before"
out=$(bash "$FH" run "$H" -- bash "$TMP/inner.sh" 2>"$TMP/run.err")
eq "run: status" 0 "$?"
eq "run: lspci -tvn" "$want_tree" "${out%%$'\n'@@*}"
eq "run: setpci sets the controls again" "setpci ok
ACSCtl:SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-" "${out#*@@$'\n'}"
eq "run: only byte 0x106 changed (0 to 0x1d)" "263 0 35" "$(cmp -l "$TMP/before" "$d/0000:39:01.0/config" | tr -s ' ' | sed 's/^ //')"
if grep -q '^fakehost run: isolated' "$TMP/run.err"; then
  eq "run: driverfs served /sys" 1 "$(grep -c ' - fuse.driverfs ' <(bash "$FH" run "$H" -- cat /proc/self/mountinfo 2>/dev/null))"
  # pci-sysfs.c pci_read_config: past 64 bytes only for an opener with CAP_SYS_ADMIN.
  cfg=$d/0000:39:01.0/config
  eq "run: root reads all of configuration space" 4096 "$(bash "$FH" run "$H" -- sh -c 'wc -c <"$1"' sh "$cfg" 2>/dev/null | tr -d ' ')"
  eq "run: a process without CAP_SYS_ADMIN reads its first 64 bytes" 64 \
    "$(bash "$FH" run "$H" -- setpriv --bounding-set=-all,+net_admin,+sys_module -- sh -c 'wc -c <"$1"' sh "$cfg" 2>/dev/null | tr -d ' ')"
  eq "run: with CAP_SYS_ADMIN in its bounding set, all of it" 4096 \
    "$(bash "$FH" run "$H" -- setpriv --bounding-set=-all,+net_admin,+sys_admin -- sh -c 'wc -c <"$1"' sh "$cfg" 2>/dev/null | tr -d ' ')"
else
  echo "pcitree.sh: fakehost run was not isolated, so driverfs was not part of it: $(head -1 "$TMP/run.err")"
fi

# The fake host's own verbs on the nested functions.
bash "$FH" rename "$H" ens1np0 gpu0nic
eq "rename: the function's net/ link" "../../../../../../../class/net/gpu0nic" "$(readlink "$H/$pair/0000:17:01.0/0000:19:00.0/net/gpu0nic")"
bash "$FH" vfs "$H" ens2np0 2
eq "vfs: the VFs beside their PF" "0000:29:00.2 0000:29:00.3" \
  "$(cd "$H/sys/devices/pci0000:26/0000:26:01.0/0000:27:00.0/0000:28:00.0" && echo 0000:29:00.[23])"
eq "vfs: a VF's netdev" sys/devices/pci0000:26/0000:26:01.0/0000:27:00.0/0000:28:00.0/0000:29:00.2 \
  "$(cd -P "$H/sys/class/net/ens2v0/device" && echo "${PWD#"$H"/}")"
eq "vfs: every link resolves" "" "$(dangling "$H")"
bash "$FH" vfs "$H" ens2np0 0
eq "vfs 0: the VFs gone" "" "$(cd "$H/sys/devices/pci0000:26/0000:26:01.0/0000:27:00.0/0000:28:00.0" && compgen -G '0000:29:00.[23]')"
bash "$FH" addr "$H" ens3np0 10.0.3.1/24
eq "addr: the GID table" 0000:0000:0000:0000:0000:ffff:0a00:0301 "$(cat "$H/sys/class/infiniband/mlx5_2/ports/1/gids/2")"
bash "$FH" lag "$H" bond0 mlx5_bond_0 ens4np0
eq "lag: the LAG device on the nested function" "mlx5_bond_0" "$(ls "$H/sys/bus/pci/devices/0000:5c:00.0/infiniband")"
eq "lag: every link resolves" "" "$(dangling "$H")"

# A NIC made at an address the topology lacks stays outside the tree, and is said; the output
# is the same each time.
H2=$TMP/h2
host "$H2" --nic mlx5_8:eno1np0:0000:01:00.0:b8:3f:d2:01:00:10
out=$(bash "$FH" pcitree "$H2" "$TOPO" 2>&1)
eq "pcitree: a NIC outside the topology" "0 pcitree: 0000:01:00.0 is not in $TOPO; it stays outside the tree" "$? $out"
eq "it keeps its place" sys/devices/pci0000:00/0000:01:00.0 "$(cd -P "$H2/sys/class/net/eno1np0/device" && echo "${PWD#"$H2"/}")"
bash "$FH" create "$TMP/h3" --kind ofed --host gpu-3 --nic mlx5_0:ens1np0:0000:18:00.0:b8:3f:d2:01:00:00
out=$(bash "$FH" pcitree "$TMP/h3" "$TOPO" 2>&1)
eq "a NIC at a GPU's address: refused" "2 pcitree: ROOT's 0000:18:00.0 is vendor 0x15b3, the topology's gpu 0x10de" "$? $out"
eq "... before anything changed" "pci0000:00" "$(ls "$TMP/h3/sys/devices")"
mkdir "$TMP/a" "$TMP/b" "$TMP/a/.fake" "$TMP/b/.fake"
bash "$FH" pcitree "$TMP/a" "$TOPO" && bash "$FH" pcitree "$TMP/b" "$TOPO"
eq "the same tree twice" "" "$(diff -r --no-dereference "$TMP/a" "$TMP/b")"
out=$(bash "$FH" pcitree "$TMP/a" "$TMP/none.json" 2>&1)
eq "no topology: status 2" "2 fakehost pcitree: no topology file $TMP/none.json" "$? $out"
printf '{"cpus": 8, "numa_nodes": {"0": "0-7"}, "kinds": {"e": {"port": "endpoint"}}, "root_complexes": [{"bus": "0000:00", "numa_node": 0, "functions": [{"bdf": "0000:01:00.0", "kind": "e"}]}]}' >"$TMP/bad.json"
out=$(bash "$FH" pcitree "$TMP/a" "$TMP/bad.json" 2>&1)
eq "a function off its bus: status 2" "2 pcitree: 0000:01:00.0 is on bus 0000:01, but its parent's secondary bus is 0000:00" "$? $out"

done_testing

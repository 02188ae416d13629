#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2034 # the library reads the plan values this test sets
# Function tests of the GPU path's pure parts (templates/host/lib-gpu.sh): the PCIe relation of
# two functions from their paths as nvidia-smi topo -m names it, the ACS words, and NCCL's
# GPUDirect decision per NCCL version from the peer-memory files of a root. The checks on a whole
# simulated GPU server are in tests/it/gpu.rs.
# Prints "N passed, M failed" and exits 1 on a failure.
# Usage: gpu.sh [BASH]   (the bash that runs the functions; default: this one)

set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$HERE/../../templates/host
if [ $# -gt 0 ] && [ -z "${GPU_INNER-}" ]; then
  GPU_INNER=1 exec "$1" "${BASH_SOURCE[0]}"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-gpu.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=../../templates/host/lib.sh
. "$LIB/lib.sh"
# shellcheck source=assert.sh
. "$HERE/assert.sh"

# rel A_ROOT A_PATH A_NUMA B_ROOT B_PATH B_NUMA: "RELATION | BRIDGES".
rel() {
  rg_pci_relation "$@"
  printf '%s | %s' "$REPLY" "$RG_PCI_BRIDGES"
}
# One switch: root port, upstream port, a downstream port each.
eq "GPU and NIC under one switch: PIX, the two downstream ports between them" \
  "PIX | 0000:02:00.0 0000:02:01.0" \
  "$(rel pci0000:00 "0000:00:01.0 0000:01:00.0 0000:02:00.0 0000:03:00.0" 0 \
    pci0000:00 "0000:00:01.0 0000:01:00.0 0000:02:01.0 0000:04:00.0" 0)"
# Two levels of switches on the GPU's side.
eq "a second switch below the first: PXB" \
  "PXB | 0000:02:00.0 0000:03:00.0 0000:04:00.0 0000:02:01.0" \
  "$(rel pci0000:00 "0000:00:01.0 0000:01:00.0 0000:02:00.0 0000:03:00.0 0000:04:00.0 0000:05:00.0" 0 \
    pci0000:00 "0000:00:01.0 0000:01:00.0 0000:02:01.0 0000:06:00.0" 0)"
eq "two root ports of one host bridge: PHB, both root ports between them" \
  "PHB | 0000:00:01.0 0000:00:03.0" \
  "$(rel pci0000:00 "0000:00:01.0 0000:01:00.0" 0 pci0000:00 "0000:00:03.0 0000:02:00.0" 0)"
eq "two host bridges of one NUMA node: NODE" \
  "NODE | 0000:00:01.0 0000:40:01.0" \
  "$(rel pci0000:00 "0000:00:01.0 0000:01:00.0" 0 pci0000:40 "0000:40:01.0 0000:41:00.0" 0)"
eq "across NUMA nodes: SYS" "SYS" \
  "$(rel pci0000:00 "0000:00:01.0 0000:01:00.0" 0 pci0000:80 "0000:80:01.0 0000:81:00.0" 1 | sed 's/ |.*//')"
eq "NUMA unknown on both (-1): SYS, never a guess of NODE" "SYS" \
  "$(rel pci0000:00 "0000:00:01.0 0000:01:00.0" -1 pci0000:40 "0000:40:01.0 0000:41:00.0" -1 | sed 's/ |.*//')"
eq "two functions of one device: PIX, no bridge between them" "PIX | " \
  "$(rel pci0000:00 "0000:00:01.0 0000:01:00.0 0000:02:00.0 0000:03:00.0" 0 \
    pci0000:00 "0000:00:01.0 0000:01:00.0 0000:02:00.0 0000:03:00.1" 0)"
rg_pci_rank PIX
eq "PIX is the nearest" 0 "$REPLY"
rg_pci_rank NODE
eq "NODE the fourth" 3 "$REPLY"

rg_acs_text $((0x1d))
eq "ACS as Linux enables it with an IOMMU (SV RR CR UF): the redirect bits" "ReqRedir+ CmpltRedir+" "$RG_V"
rg_acs_text $((0x7f))
eq "every bit: egress control too" "ReqRedir+ CmpltRedir+ EgressCtrl+" "$RG_V"
rg_acs_text $((0x11))
eq "source validation and upstream forwarding only: nothing" "" "$RG_V"

# The configuration space of the simulated HGX tree (pcitree.py, ACS as Linux enables it with an
# IOMMU): one wc and one od for all the functions of a pair.
RG_ROOT=$TMP/hgx
RG_TMP=$TMP
mkdir -p "$RG_ROOT"
/usr/bin/python3 "$HERE/pcitree.py" "$RG_ROOT" "$HERE/fixtures/pci/hgx-8gpu.json" --acs on --mrrs 4096 >/dev/null
rg_pci_config 0000:15:01.0 0000:16:00.0 0000:17:00.0 0000:17:01.0 0000:18:00.0 0000:19:00.0
eq "a root port: type 4, ACS control SV RR CR UF, its capability, Device Control" "4 29 31" \
  "$(read -r t c cap _ <<<"${RG_PCI_CFG[0000:15:01.0]}"; printf '%s %s %s' "$t" "$c" "$cap")"
eq "a switch's upstream port: type 5, no ACS capability" "5 - -" \
  "$(read -r t c cap _ <<<"${RG_PCI_CFG[0000:16:00.0]}"; printf '%s %s %s' "$t" "$c" "$cap")"
eq "a downstream port: type 6, ACS on" "6 29" \
  "$(read -r t c _ _ <<<"${RG_PCI_CFG[0000:17:01.0]}"; printf '%s %s' "$t" "$c")"
eq "the capabilities' offsets: ACS at 0x100, PCI Express at 0x40" "256 64" \
  "$(read -r _ _ _ _ ao eo <<<"${RG_PCI_CFG[0000:17:00.0]}"; printf '%s %s' "$ao" "$eo")"
rg_gpu_acs_off $((0x7f))
eq "ACS control with the redirect bits off: the others kept" $((0x53)) "$REPLY"
RG_PCIE_MRRS=4096
rg_gpu_mrrs_on $((0x2810))
eq "Device Control with a 4096-byte MRRS (5 in bits 14:12), the other bits kept" $((0x5810)) "$REPLY"
eq "the NIC's Max Read Request Size, from Device Control" 4096 \
  "$(read -r _ _ _ d <<<"${RG_PCI_CFG[0000:19:00.0]}"; printf '%s' $((128 << ((d >> 12) & 7))))"
rg_pci_path 0000:18:00.0
eq "the GPU's path from its root complex" "pci0000:15: 0000:15:01.0 0000:16:00.0 0000:17:00.0 0000:18:00.0" "$RG_PCI_ROOT: $RG_V"
rg_gpu_list
eq "the host's GPUs in address order, as nvidia-smi numbers them" \
  "0000:18:00.0 0000:2a:00.0 0000:3a:00.0 0000:5d:00.0 0000:9a:00.0 0000:ab:00.0 0000:ba:00.0 0000:db:00.0" "${RG_GPU_ADDRS[*]}"
rg_gpu_resolve 3
eq "GPU 3" 0000:5d:00.0 "$RG_V"
rg_gpu_resolve 5d:00.0
eq "an address without its domain" 0000:5d:00.0 "$RG_V"
rg_gpu_resolve 0000:19:00.0
eq "a NIC is no GPU" "0000:19:00.0 is no NVIDIA GPU (vendor 0x10de, display class)" "$RG_WHY"
rg_gpu_resolve 8
eq "an index past the GPUs" "the plan names GPU 8, but this host has 8 NVIDIA GPU(s)" "${RG_WHY%% (*}"
# A reader without CAP_SYS_ADMIN gets the first 64 bytes only (pci-sysfs.c pci_read_config):
# unknown, never "no ACS capability".
head -c 64 "$RG_ROOT/sys/bus/pci/devices/0000:2a:00.0/config" >"$TMP/short" &&
  cat "$TMP/short" >"$RG_ROOT/sys/bus/pci/devices/0000:2a:00.0/config"
rg_pci_config 0000:2a:00.0
eq "64 bytes of configuration space: every register unknown" "? ? ? ? ? ?" "${RG_PCI_CFG[0000:2a:00.0]}"

# NCCL's decision from the files of a root.
RG_ROOT=$TMP/r
RG_TMP=$TMP
RG_NIC_IBDEV=()
no_checks() { RG_C_ID=() RG_C_NIC=() RG_C_STATUS=() RG_C_SEV=() RG_C_EXP=() RG_C_ACT=() RG_C_MSG=() RG_C_KIND=() RG_C_FROM=() RG_C_PORT=(); }
# direct VERSION FILE...: the gpu_direct check's status and route with those files present.
direct() {
  local v=$1 f
  shift
  rm -rf "$RG_ROOT"
  mkdir -p "$RG_ROOT/sys/module/nvidia" "$RG_ROOT/proc/driver/nvidia"
  printf '550.54.15\n' >"$RG_ROOT/sys/module/nvidia/version"
  printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n' \
    >"$RG_ROOT/proc/driver/nvidia/version"
  for f in "$@"; do
    mkdir -p "$RG_ROOT/${f%/*}"
    case $f in
      proc/driver/nvidia/version) printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build\n' >"$RG_ROOT/$f" ;;
      proc/kallsyms) printf 'ffffffffc0a1b2c0 T ib_umem_dmabuf_get\t[ib_core]\n' >"$RG_ROOT/$f" ;;
      *) printf '%s\n' "${PEER:-550.54.15}" >"$RG_ROOT/$f" ;;
    esac
  done
  no_checks
  RG_NCCL_VERSION=$v RG_GPU_DIRECT=check
  rg_gpu_direct_check
  printf '%s %s' "${RG_C_STATUS[0]}" "$RG_GPU_ROUTE"
}
PM=sys/module/nvidia_peermem/version
NV=sys/kernel/mm/memory_peers/nv_mem/version
eq "NCCL 2.21 with the legacy nv_peer_mem path: peer memory" "pass peermem" "$(direct 2.21.5 "$NV")"
eq "NCCL 2.21 with only nvidia_peermem (no memory_peers path, NVIDIA/nccl#1676): off" \
  "warn none" "$(direct 2.21.5 "$PM")"
eq "NCCL 2.23.4 with only nvidia_peermem: peer memory" "pass peermem" "$(direct 2.23.4 "$PM")"
eq "no module, open kernel module and the kernel's DMA-BUF: DMA-BUF" "pass dmabuf" \
  "$(direct 2.21.5 proc/driver/nvidia/version proc/kallsyms)"
eq "no module, DMA-BUF support but the proprietary module: off" "warn none" "$(direct 2.21.5 proc/kallsyms)"
eq "DMA-BUF before NCCL 2.13: off" "warn none" "$(direct 2.12.12 proc/driver/nvidia/version proc/kallsyms)"
eq "a peer module of another driver than the GPU's: a finding" "warn peermem" "$(PEER=535.104.05 direct 2.23.4 "$PM")"
direct 2.21.5 "$PM" >/dev/null
no_checks
RG_NCCL_VERSION=2.21.5
rg_gpu_direct_check
eq "the message says what NCCL will do and why" yes \
  "$([[ ${RG_C_MSG[0]} == *"will run without GPUDirect RDMA"*"the only ones NCCL before 2.23.4 looks for"* ]] && echo yes || echo "${RG_C_MSG[0]}")"
RG_GPU_DIRECT=require
no_checks
rg_gpu_direct_check
eq "gpu_direct = require: the finding fails" fail "${RG_C_STATUS[0]}"

# NCCL's self-test output (lib-nccl.sh rg_nccl_read) on the fixtures from NCCL's and nccl-tests'
# sources: the version, the HCAs, GPUDirect per HCA, the table, the average.
NX=$HERE/fixtures/nccl
rg_nccl_read "$NX/all-reduce-8gpu.txt"
eq "the fixture's NCCL" 2.23.4 "$RG_NCCL_RAN"
eq "the HCAs NCCL uses" "mlx5_0 mlx5_1" "$RG_NCCL_USING"
eq "GPUDirect per HCA" "mlx5_0 Enabled,mlx5_1 Enabled" "$(printf '%s\n' "${RG_NCCL_GDR[@]}" | sort | paste -sd,)"
eq "a bus bandwidth per size, out of place" "5 134217728 10.38" \
  "${#RG_NCCL_BUSBW[@]} ${RG_NCCL_BUSBW[${#RG_NCCL_BUSBW[@]} - 1]}"
eq "the average" 9.75574 "$RG_NCCL_AVG"
eq "no warning" "" "$RG_NCCL_WARN"
rg_nccl_read "$NX/all-reduce-no-gdr.txt"
eq "no peer memory: NCCL's Disabled per HCA" "mlx5_0 Disabled,mlx5_1 Disabled" "$(printf '%s\n' "${RG_NCCL_GDR[@]}" | sort | paste -sd,)"
rg_nccl_read "$TMP/absent"
eq "no output: nothing read" "0" "${RG_NCCL_RAN:-0}"

# The all_reduce_perf stand-in prints the fixture's layout (masked: the numbers differ), on a
# simulated 8-GPU server with NCCL 2.23.4 and nvidia_peermem.
H=$TMP/host
bash "$HERE/fakehost.sh" create "$H" --kind ofed --host gpu-1 \
  --nic mlx5_0:ens1np0:0000:19:00.0:b8:3f:d2:01:00:00 --nic mlx5_1:ens2np0:0000:29:00.0:b8:3f:d2:01:00:01 >/dev/null
bash "$HERE/fakehost.sh" pcitree "$H" "$HERE/fixtures/pci/hgx-8gpu.json" >/dev/null 2>&1
bash "$HERE/fakehost.sh" nccl "$H" 2.23.4
for m in nvidia nvidia_peermem; do mkdir -p "$H/sys/module/$m" && echo 550.54.15 >"$H/sys/module/$m/version"; done
printf 'NCCL_IB_HCA==mlx5_0,mlx5_1\n' >"$H/etc/nccl.conf"
arp() { # ENV...: the stand-in's run of the fixture's command line, stdout
  ROCE_GEN_ROOT=$H env CUDA_DEVICE_ORDER=PCI_BUS_ID NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
    NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "$@" "$H/lib/fakehost/all_reduce_perf" -b 8M -e 128M -f 2 -g 8
}
arp >"$TMP/arp.out" 2>"$TMP/arp.err"
eq "the stand-in runs" "0 " "$? $(cat "$TMP/arp.err")"
nmask() { # FILE: the lines both print, numbers masked
  grep -E '^# (nccl-tests|Collective|nThread|Using|Out of|Avg)|^#  Rank|^#  *(size|\(B\))|NCCL INFO (NCCL version|NET/IB : (Using|GPU Direct)|NCCL_IB_HCA set|Channel 00/0 :)|^ +[0-9]+ +[0-9]+ +float' "$1" |
    sed 's/^[^ ]*:[0-9]*:[0-9]* \[[0-9]\]/P/; s/[0-9a-f]\{1,\}/9/g; s/9\(\.9\)\{1,\}/9/g; s/  */ /g' | sort -u
}
eq "the stand-in's lines are the fixture's" "$(nmask "$NX/all-reduce-8gpu.txt")" "$(nmask "$TMP/arp.out")"
rg_nccl_read "$TMP/arp.out"
eq "and read back: GPUDirect Enabled per HCA" "mlx5_0 Enabled,mlx5_1 Enabled" "$(printf '%s\n' "${RG_NCCL_GDR[@]}" | sort | paste -sd,)"
rm -rf "$H/sys/module/nvidia_peermem"
arp >"$TMP/arp.out" 2>/dev/null
eq "no peer memory: the no-GDR fixture's lines" "$(nmask "$NX/all-reduce-no-gdr.txt")" "$(nmask "$TMP/arp.out")"
eq "fewer GPUs than -g: nccl-tests' exit" 5 "$(arp CUDA_VISIBLE_DEVICES=0,1 >/dev/null 2>&1; echo $?)"
bash "$HERE/fakehost.sh" nccl "$H" none
eq "no NCCL library: the dynamic linker's exit" 127 "$(arp >/dev/null 2>&1; echo $?)"

done_testing

# shellcheck shell=bash
# lib-gpu.sh, part of lib.sh: the GPU path (plan format 1.3). Per planned GPU↔port pair (the NICs
# column `gpu`, RG_NIC_GPU) what NCCL will do with it, read from sysfs and PCI configuration space
# alone, with no GPU tool: the PCIe relation as `nvidia-smi topo -m` names it and whether the
# port is the GPU's nearest planned one (NCCL pairs each GPU with its nearest NIC), the ACS
# redirect controls of the bridges between them, the link of both ends, the port's Max Read
# Request Size; per host whether NCCL will use GPUDirect RDMA (its own peer-memory paths for its
# version, the DMA-BUF route) and the IOMMU's DMA mode on the planned devices. Checks gpu_pair,
# pcie_acs, pcie_link, pcie_mrrs (ports), gpu_direct, iommu (host); `gpu_direct = require` makes
# every finding a failure, `check` a warning. A plan that names no GPU runs none of it.
# The configuration space of every function involved is read in one pass (rg_pci_config: one
# `wc` and one `od` a run, never a tool per bridge).

# The host's NVIDIA GPUs in PCI address order (nvidia-smi's indexes), rg_gpu_list.
RG_GPU_ADDRS=()
# Per PCI function read by rg_pci_config: "PORT_TYPE ACS_CTL ACS_CAP DEVCTL ACS_OFFSET
# EXP_OFFSET" (decimal; "-" where the function has no such capability, "?" where unreadable).
declare -A RG_PCI_CFG=()
# Per planned port: the JSON of its pairs for facts.gpu_path; what apply would write: the bridges
# whose ACS redirects ("BDF:OFFSET:CONTROL ...", the control register's offset and value) and the
# port's Device Control ("BDF:OFFSET:VALUE") where its MRRS is below the plan's.
RG_GPU_FACT=()
RG_GPU_ACS_FIX=()
RG_GPU_MRRS_FIX=()
# NCCL's version as judged (the plan's, else the host's library) and where it came from.
RG_NCCL_SEEN=""
RG_NCCL_FROM=""
RG_GPU_ROUTE=""
RG_GPU_ROUTE_TEXT=""
RG_GPU_ROUTE_WHY=""
# The GPU driver's and the peer-memory module's versions (/sys/module/*/version), for the facts.
RG_GPU_DRIVER=""
RG_GPU_PEERMEM=""

# The relations, nearest first (NCCL's path types PIX < PXB < PHB < NODE < SYS).
RG_PCI_RELATION_NAMES=(PIX PXB PHB NODE SYS)

# rg_gpu_planned: true when the plan names a GPU for a port and gpu_direct is not `no`.
rg_gpu_planned() {
  local g
  [ "${RG_GPU_DIRECT:-no}" != no ] || return 1
  for g in ${RG_NIC_GPU[@]+"${RG_NIC_GPU[@]}"}; do [ -z "$g" ] || return 0; done
  return 1
}

# rg_gpu_finding ID NIC EXPECTED ACTUAL MESSAGE: a finding of the GPU path: a failure under
# gpu_direct = require, else a warning.
rg_gpu_finding() {
  if [ "$RG_GPU_DIRECT" = require ]; then
    rg_check "$1" "$2" fail error "$3" "$4" "$5"
  else
    rg_check "$1" "$2" warn warning "$3" "$4" "$5"
  fi
}

# rg_pci_path BDF: RG_V = the PCI functions from its root complex down to BDF, space-separated
# ("0000:00:01.1 0000:01:00.0 0000:02:01.0 0000:03:00.0"), and RG_PCI_ROOT the root
# ("pci0000:00"): the device's real folder under /sys/devices (sysfs nests each function in its
# bridge's). Through cd -P in this shell: no process per device (/sys/devices itself resolved
# once, into RG_PCI_DEVICES).
RG_PCI_DEVICES=""
rg_pci_path() {
  local here=$PWD p root
  RG_V="" RG_PCI_ROOT=""
  if [ -z "$RG_PCI_DEVICES" ]; then
    cd -P -- "$RG_ROOT/sys/devices" 2>/dev/null || return 1
    RG_PCI_DEVICES=$PWD
    cd -- "$here" || return 1
  fi
  root=$RG_PCI_DEVICES
  cd -P -- "$RG_ROOT/sys/bus/pci/devices/$1" 2>/dev/null || return 1
  p=$PWD
  cd -- "$here" || return 1
  [ "${p#"$root"/}" != "$p" ] || return 1
  p=${p#"$root"/}
  RG_PCI_ROOT=${p%%/*}
  p=${p#*/}
  RG_V=${p//\// }
}

# rg_gpu_list: RG_GPU_ADDRS = the host's NVIDIA GPUs (vendor 0x10de, class display VGA 0x0300
# or 3D 0x0302) in PCI address order, the order nvidia-smi numbers them in.
rg_gpu_list() {
  local d v c
  RG_GPU_ADDRS=()
  for d in "$RG_ROOT"/sys/bus/pci/devices/*; do
    if [ ! -r "$d/vendor" ] || [ ! -r "$d/class" ]; then continue; fi
    v="" c=""
    IFS= read -r v <"$d/vendor" || true
    [ "$v" = 0x10de ] || continue
    IFS= read -r c <"$d/class" || true
    case $c in 0x0300?? | 0x0302??) RG_GPU_ADDRS+=("${d##*/}") ;; esac
  done
}

# rg_gpu_resolve SPEC: RG_V = the PCI address of the GPU the plan names (an address, with or
# without its domain, or an index in nvidia-smi's order) and RG_GPU_INDEX its index in that order
# (CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID); status 1 with RG_WHY when the host has no such GPU.
RG_GPU_INDEX=""
rg_gpu_resolve() {
  local s=$1 a k
  RG_V="" RG_WHY="" RG_GPU_INDEX=""
  if [[ $s =~ ^[0-9]+$ ]]; then
    if [ "$s" -lt ${#RG_GPU_ADDRS[@]} ]; then
      RG_V=${RG_GPU_ADDRS[s]} RG_GPU_INDEX=$s
      return 0
    fi
    RG_WHY="the plan names GPU $s, but this host has ${#RG_GPU_ADDRS[@]} NVIDIA GPU(s)${RG_GPU_ADDRS[0]+ (${RG_GPU_ADDRS[*]})}"
    return 1
  fi
  a=$s
  [[ $a == ????:* ]] || a=0000:$a
  a=${a,,}
  for ((k = 0; k < ${#RG_GPU_ADDRS[@]}; k++)); do
    # shellcheck disable=SC2034 # lib-fabric.sh and lib-nccl.sh read RG_GPU_INDEX
    [ "${RG_GPU_ADDRS[k]}" != "$a" ] || {
      RG_V=$a RG_GPU_INDEX=$k
      return 0
    }
  done
  if [ -e "$RG_ROOT/sys/bus/pci/devices/$a" ]; then
    RG_WHY="$a is no NVIDIA GPU (vendor 0x10de, display class)"
  else
    RG_WHY="this host has no PCI function $a${RG_GPU_ADDRS[0]+; its NVIDIA GPUs are ${RG_GPU_ADDRS[*]}}"
  fi
  return 1
}

# rg_nic_bdf I: RG_V = the PCI address of planned port I's RDMA device (its device link).
rg_nic_bdf() {
  local here=$PWD
  RG_V=""
  cd -P -- "$RG_ROOT/sys/class/infiniband/${RG_NIC_IBDEV[$1]}/device" 2>/dev/null || return 1
  RG_V=${PWD##*/}
  cd -- "$here" || return 1
}

# rg_pci_numa BDF: RG_V = its NUMA node (-1: none known).
rg_pci_numa() {
  RG_V=-1
  [ ! -r "$RG_ROOT/sys/bus/pci/devices/$1/numa_node" ] || IFS= read -r RG_V <"$RG_ROOT/sys/bus/pci/devices/$1/numa_node" || true
  [[ $RG_V =~ ^-?[0-9]+$ ]] || RG_V=-1
}

# rg_pci_relation ROOT_A "PATH_A" NUMA_A ROOT_B "PATH_B" NUMA_B: REPLY = how two functions relate
# in nvidia-smi topo -m's words, and RG_PCI_BRIDGES the bridges between them (the functions below
# their nearest common one, on either side, endpoints excluded). Under one root complex the
# paths share bridges down to where they part: every PCIe switch is an upstream port with one
# downstream port per link, so one bridge on each side below the shared ones is one switch
# (PIX), more is several (PXB), and parting at the root complex is PHB. Different roots are NODE
# on one NUMA node, else SYS.
rg_pci_relation() {
  local -a a b
  local k=0 n j
  read -r -a a <<<"$2"
  read -r -a b <<<"$5"
  RG_PCI_BRIDGES=""
  # Under different roots nothing is shared: each side's bridges up to its root port.
  if [ "$1" = "$4" ]; then
    while [ "$k" -lt $((${#a[@]} - 1)) ] && [ "$k" -lt $((${#b[@]} - 1)) ] && [ "${a[k]}" = "${b[k]}" ]; do
      k=$((k + 1))
    done
  fi
  for ((j = k; j < ${#a[@]} - 1; j++)); do RG_PCI_BRIDGES+=" ${a[j]}"; done
  for ((j = k; j < ${#b[@]} - 1; j++)); do RG_PCI_BRIDGES+=" ${b[j]}"; done
  RG_PCI_BRIDGES=${RG_PCI_BRIDGES# }
  if [ "$1" != "$4" ]; then
    if [ "$3" = "$6" ] && [ "$3" != -1 ]; then REPLY=NODE; else REPLY=SYS; fi
    return 0
  fi
  if [ "$k" -eq 0 ]; then
    REPLY=PHB
    return 0
  fi
  n=$((${#a[@]} - 1 - k))
  [ $((${#b[@]} - 1 - k)) -le "$n" ] || n=$((${#b[@]} - 1 - k))
  if [ "$n" -le 1 ]; then REPLY=PIX; else REPLY=PXB; fi
}

# rg_pci_rank RELATION: REPLY = its place, nearest first (0 for PIX).
rg_pci_rank() {
  local r k=0
  for r in ${RG_PCI_RELATION_NAMES[@]+"${RG_PCI_RELATION_NAMES[@]}"}; do
    [ "$r" != "$1" ] || break
    k=$((k + 1))
  done
  REPLY=$k
}

# rg_pci_config BDF...: RG_PCI_CFG[BDF] for each function whose configuration space reads: its
# PCI Express port type, ACS control and capability registers, Device Control, and the offsets of
# the ACS and PCI Express capabilities ("-" where it has no such register; all "?" where only
# the first 64 bytes read, as for a reader without CAP_SYS_ADMIN). One `wc -c` for
# the files' sizes (256 for conventional functions, 4096 with extended space) and one `od` for
# all their bytes; the capability lists are walked as include/uapi/linux/pci_regs.h lays them
# out (Capabilities Pointer 0x34; PCI Express capability 0x10: port type in bits 7:4 of +2,
# Device Control at +8; extended capabilities from 0x100, ACS 0x000d: capability at +4, control
# at +6).
rg_pci_config() {
  local -a files=()
  local -A seen=()
  local b rest sizes
  for b in "$@"; do
    if [ -n "${RG_PCI_CFG[$b]+x}" ] || [ -n "${seen[$b]+x}" ]; then continue; fi
    seen[$b]=1
    [ ! -r "$RG_ROOT/sys/bus/pci/devices/$b/config" ] || files+=("$RG_ROOT/sys/bus/pci/devices/$b/config")
  done
  [ ${#files[@]} -gt 0 ] || return 0
  rg_cap -1 rg_x wc -c -- ${files[@]+"${files[@]}"} || return 0
  sizes=$RG_CAP
  # od's lines (16 bytes each, " xx xx ...") go straight to awk, kept as lines: a byte is read
  # from its line when a capability list needs it (4 KiB sizes are whole lines, so no line
  # holds two files).
  while read -r b rest; do
    [ -n "$b" ] && RG_PCI_CFG[$b]=$rest
  done < <({
    printf '%s\n@@\n' "$sizes"
    rg_x od -An -v -tx1 -w16 -- ${files[@]+"${files[@]}"} 2>/dev/null
  } | awk '
    BEGIN { for (i = 0; i < 256; i++) hx[sprintf("%02x", i)] = i }
    function b(f, o) { return hx[substr(L[f, int(o / 16)], 3 * (o % 16) + 2, 2)] }
    function w(f, o) { return b(f, o) + 256 * b(f, o + 1) }
    function d(f, o) { return w(f, o) + 65536 * w(f, o + 2) }
    !seen_sep && $0 == "@@" { seen_sep = 1; f = 1; ln = 0; next }
    !seen_sep { if ($2 != "total") { n++; size[n] = $1; name[n] = $2 } ; next }
    {
      while (f <= n && ln * 16 >= size[f]) { f++; ln = 0 }
      if (f <= n) L[f, ln++] = $0
    }
    END {
      for (f = 1; f <= n; f++) {
        bdf = name[f]; sub(/\/config$/, "", bdf); sub(/.*\//, "", bdf)
        # The kernel gives a reader without CAP_SYS_ADMIN the first 64 bytes only
        # (pci-sysfs.c pci_read_config): the capabilities are past them, so unknown, never absent.
        if (size[f] < 256) { printf "%s ? ? ? ? ? ?\n", bdf; continue }
        pt = ""; dc = ""; acap = ""; actl = ""; ao = ""; eo = ""
        # Status bit 4: a capability list.
        if (int(w(f, 6) / 16) % 2 == 1) {
          p = b(f, 52); p = p - p % 4; guard = 0
          while (p >= 64 && p < size[f] && guard++ < 48) {
            if (b(f, p) == 16) { pt = int(b(f, p + 2) / 16) % 16; dc = w(f, p + 8); eo = p }
            p = b(f, p + 1); p = p - p % 4
          }
        }
        if (size[f] >= 4096) {
          p = 256; guard = 0
          while (p >= 256 && p < 4096 && guard++ < 96) {
            h = d(f, p)
            if (h == 0 || h == 4294967295) break
            if (h % 65536 == 13) { acap = w(f, p + 4); actl = w(f, p + 6); ao = p }
            p = int(h / 1048576); p = p - p % 4
          }
        }
        printf "%s %s %s %s %s %s %s\n", bdf, (pt == "" ? "-" : pt), (actl == "" ? "-" : actl), (acap == "" ? "-" : acap), (dc == "" ? "-" : dc), (ao == "" ? "-" : ao), (eo == "" ? "-" : eo)
      }
    }')
}

# rg_acs_text CTL: RG_V = lspci's words for the ACS control bits that redirect or block
# peer-to-peer (ReqRedir+ CmpltRedir+ EgressCtrl+), the ones Linux's pci_disable_acs_redir
# clears; empty when none is on.
rg_acs_text() {
  RG_V=""
  [ $(($1 & 0x04)) -eq 0 ] || RG_V+=" ReqRedir+"
  [ $(($1 & 0x08)) -eq 0 ] || RG_V+=" CmpltRedir+"
  [ $(($1 & 0x20)) -eq 0 ] || RG_V+=" EgressCtrl+"
  RG_V=${RG_V# }
}

# rg_gpu_nccl_version: RG_NCCL_SEEN and RG_NCCL_FROM: the plan's nccl_version (NCCL often lives
# only in the jobs' containers), else the host's libnccl.so.2.X.Y where the linker cache knows
# one (one `ldconfig -p`), else none.
rg_gpu_nccl_version() {
  local line lib f
  RG_NCCL_SEEN="" RG_NCCL_FROM=""
  if [ -n "$RG_NCCL_VERSION" ]; then
    RG_NCCL_SEEN=$RG_NCCL_VERSION RG_NCCL_FROM="the plan's nccl_version"
    return 0
  fi
  rg_has ldconfig && rg_cap -1 rg_x ldconfig -p || return 0
  while IFS= read -r line; do
    case $line in *"libnccl.so.2 "*"=> "*) lib=${line##*=> } ;; *) continue ;; esac
    # The soname is a link to the library, which carries the full version in its name.
    for f in "$RG_ROOT${lib%/*}"/libnccl.so.2.*; do
      f=${f##*/libnccl.so.}
      [[ $f =~ ^2\.[0-9]+\.[0-9]+$ ]] || continue
      RG_NCCL_SEEN=$f RG_NCCL_FROM="this host's ${lib%/*}/libnccl.so.$f"
      return 0
    done
  done <<<"$RG_CAP"
}

# rg_gpu_route: whether NCCL will use GPUDirect RDMA, decided as NCCL decides it
# (src/transport/net_ib: ncclIbGdrSupport, ncclIbDmaBufSupport): RG_GPU_ROUTE (peermem, dmabuf or
# none), RG_GPU_DRIVER and RG_GPU_PEERMEM (the modules' versions), RG_GPU_ROUTE_TEXT (NCCL's
# version and the route in words) and, for `none`, RG_GPU_ROUTE_WHY (what is missing and how to
# fix it). Peer memory: NCCL up to 2.22 looks for /sys/kernel/mm/memory_peers/nv_mem/version or
# nv_mem_nc/version only, from 2.23.4 also /sys/module/nvidia_peermem/version (a module loaded
# that registers no memory_peers path is enough for a new NCCL, not for an old one). DMA-BUF
# (NCCL 2.13 on): the GPU driver's open kernel module from 515.43.04 (CUDA 11.7; the proprietary
# one exports no DMA-BUF) and the kernel's RDMA DMA-BUF support (ib_umem_dmabuf_get, Linux 5.12
# or a backport). The fabric test runs its flows from GPU memory by the same decision.
rg_gpu_route() {
  local drv="" peer="" legacy="" open=no dmabuf=no newer=unknown paths="" line f
  RG_GPU_ROUTE=none RG_GPU_ROUTE_WHY=""
  rg_gpu_nccl_version
  [ ! -r "$RG_ROOT/sys/module/nvidia/version" ] || IFS= read -r drv <"$RG_ROOT/sys/module/nvidia/version" || true
  [ ! -r "$RG_ROOT/sys/module/nvidia_peermem/version" ] || IFS= read -r peer <"$RG_ROOT/sys/module/nvidia_peermem/version" || true
  for f in nv_mem nv_mem_nc; do
    [ ! -e "$RG_ROOT/sys/kernel/mm/memory_peers/$f/version" ] || legacy+="${legacy:+ and }/sys/kernel/mm/memory_peers/$f/version"
  done
  if [ -n "$RG_NCCL_SEEN" ]; then
    if rg_version_ge "$RG_NCCL_SEEN" 2.23.4; then newer=yes; else newer=no; fi
  fi
  if [ -r "$RG_ROOT/proc/driver/nvidia/version" ]; then
    IFS= read -r line <"$RG_ROOT/proc/driver/nvidia/version" || true
    [[ $line != *"Open Kernel Module"* ]] || open=yes
  fi
  if [ "$open" = yes ] && [ -n "$drv" ] && rg_version_ge "$drv" 515.43.04 && rg_has grep &&
    rg_x grep -qw ib_umem_dmabuf_get "$RG_ROOT/proc/kallsyms" 2>/dev/null; then
    dmabuf=yes
  fi
  if [ -n "$legacy" ]; then
    RG_GPU_ROUTE=peermem paths=$legacy
  elif [ -n "$peer" ] && [ "$newer" = yes ]; then
    RG_GPU_ROUTE=peermem paths=/sys/module/nvidia_peermem/version
  elif [ "$dmabuf" = yes ] && { [ -z "$RG_NCCL_SEEN" ] || rg_version_ge "$RG_NCCL_SEEN" 2.13; }; then
    RG_GPU_ROUTE=dmabuf
  fi
  RG_GPU_DRIVER=$drv RG_GPU_PEERMEM=$peer
  RG_GPU_ROUTE_TEXT="NCCL ${RG_NCCL_SEEN:-(version unknown)}${RG_NCCL_FROM:+, $RG_NCCL_FROM}"
  case $RG_GPU_ROUTE in
    peermem) RG_GPU_ROUTE_TEXT+=", will use GPUDirect RDMA through the peer-memory module ($paths)" ;;
    dmabuf) RG_GPU_ROUTE_TEXT+=", will use GPUDirect RDMA through DMA-BUF (NVIDIA's open kernel module $drv, the kernel's RDMA DMA-BUF support)" ;;
    *)
      if [ -n "$peer" ] && [ "$newer" = no ]; then
        RG_GPU_ROUTE_WHY="nvidia_peermem $peer is loaded but registers no /sys/kernel/mm/memory_peers path, the only ones NCCL before 2.23.4 looks for: upgrade NCCL to 2.23.4 or later, or load the legacy nv_peer_mem module"
      elif [ -n "$peer" ]; then
        RG_GPU_ROUTE_WHY="nvidia_peermem $peer is loaded, but NCCL before 2.23.4 looks only for /sys/kernel/mm/memory_peers/nv_mem*/version, which it does not register, and NCCL 2.23.4 and later also for /sys/module/nvidia_peermem/version: set nccl_version in the plan (or install NCCL here) to know which"
      else
        RG_GPU_ROUTE_WHY="no peer-memory module (modprobe nvidia_peermem: /sys/module/nvidia_peermem/version, or the legacy nv_peer_mem: /sys/kernel/mm/memory_peers/nv_mem/version) and no DMA-BUF route ($( [ "$open" = yes ] || printf 'the GPU driver is not the open kernel module; ')needs NVIDIA's open kernel module 515.43.04 or later and the kernel's RDMA DMA-BUF support)"
      fi
      ;;
  esac
}

# rg_gpu_direct_check: check gpu_direct (host): NCCL's decision (rg_gpu_route), and the peer-memory
# module's version against the GPU driver's.
rg_gpu_direct_check() {
  rg_gpu_route
  if [ "$RG_GPU_ROUTE" = none ]; then
    rg_gpu_finding gpu_direct "" "GPUDirect RDMA" "off" "$RG_GPU_ROUTE_TEXT, will run without GPUDirect RDMA (GPU memory staged through host memory, a fraction of the line rate): $RG_GPU_ROUTE_WHY"
    return 0
  fi
  if [ -n "$RG_GPU_PEERMEM" ] && [ -n "$RG_GPU_DRIVER" ] && [ "$RG_GPU_PEERMEM" != "$RG_GPU_DRIVER" ]; then
    rg_gpu_finding gpu_direct "" "GPUDirect RDMA" "$RG_GPU_ROUTE" "$RG_GPU_ROUTE_TEXT; but nvidia_peermem $RG_GPU_PEERMEM is not of the GPU driver $RG_GPU_DRIVER (an upgrade left the old module loaded): reload it (modprobe -r nvidia_peermem; modprobe nvidia_peermem)"
    return 0
  fi
  rg_check gpu_direct "" pass error "GPUDirect RDMA" "$RG_GPU_ROUTE" "$RG_GPU_ROUTE_TEXT"
}

# rg_gpu_link BDF WHAT: RG_V = "WHAT runs at SPEED xWIDTH" and status 1 with RG_WHY when it runs
# narrower (or, for a NIC, slower) than it can; a GPU lowers its link speed while idle (power
# saving), so only its width is judged.
rg_gpu_link() {
  local gpu=no
  RG_WHY=""
  [[ $2 != GPU* ]] || gpu=yes
  rg_probe_pcie_at "/sys/bus/pci/devices/$1"
  RG_V="$2 runs at ${RG_P_PCI_SPEED%% PCIe} x$RG_P_PCI_WIDTH (at most ${RG_P_PCI_MAX_SPEED%% PCIe} x$RG_P_PCI_MAX_WIDTH)"
  if [ -z "$RG_P_PCI_WIDTH" ] || [ -z "$RG_P_PCI_MAX_WIDTH" ]; then
    RG_V="$2: its PCIe link is not readable in sysfs"
    return 0
  fi
  if [ "$RG_P_PCI_WIDTH" -lt "$RG_P_PCI_MAX_WIDTH" ]; then
    RG_WHY="$2 runs x$RG_P_PCI_WIDTH of its x$RG_P_PCI_MAX_WIDTH (a slot, riser or retimer: reseat it, or check the slot's lane setting in the BIOS)"
  elif [ "$gpu" = no ] && [ "$(rg_gts10 "$RG_P_PCI_SPEED")" != "$(rg_gts10 "$RG_P_PCI_MAX_SPEED")" ]; then
    RG_WHY="$2 runs at ${RG_P_PCI_SPEED%% PCIe} of its ${RG_P_PCI_MAX_SPEED%% PCIe} (a slot of an older generation, a riser, or the BIOS's PCIe speed setting)"
  fi
  [ -z "$RG_WHY" ]
}

# rg_gpu_link_json: REPLY = the link rg_gpu_link last read (RG_P_PCI_*) as a JSON object.
rg_gpu_link_json() {
  rg_json_fmt '{"speed":%s,"width":%s,"max_speed":%s,"max_width":%s}' \
    s "$RG_P_PCI_SPEED" n "$RG_P_PCI_WIDTH" s "$RG_P_PCI_MAX_SPEED" n "$RG_P_PCI_MAX_WIDTH"
}

# rg_gpu_iommu BDF...: check iommu (host): the DMA mode of the planned devices' IOMMU groups.
# Translated DMA (type DMA or DMA-FQ) sends each peer-to-peer request through the IOMMU's page
# tables; identity (iommu=pt) or no IOMMU leaves it direct.
rg_gpu_iommu() {
  local b g t here=$PWD groups="" bad=""
  for b in "$@"; do
    cd -P -- "$RG_ROOT/sys/bus/pci/devices/$b/iommu_group" 2>/dev/null || continue
    g=${PWD##*/} t=""
    cd -- "$here" || return 0
    [[ " $groups " != *" $g "* ]] || continue
    groups+=" $g"
    [ ! -r "$RG_ROOT/sys/kernel/iommu_groups/$g/type" ] || IFS= read -r t <"$RG_ROOT/sys/kernel/iommu_groups/$g/type" || true
    case $t in identity | "") ;; *) bad+="${bad:+, }group $g ($b): $t" ;; esac
  done
  if [ -z "$groups" ]; then
    rg_check iommu "" pass error "identity or off" "off" "no IOMMU translates the planned GPUs and ports (they have no IOMMU group)"
  elif [ -n "$bad" ]; then
    rg_gpu_finding iommu "" "identity or off" "translated" "the IOMMU translates the DMA of planned devices ($bad): every GPU↔NIC request goes through its page tables, which costs GPUDirect RDMA bandwidth; boot with iommu=pt (and intel_iommu=on or amd_iommu=on as the platform needs) for identity mapping"
  else
    rg_check iommu "" pass error "identity or off" "identity" "the IOMMU maps the planned GPUs and ports one to one (identity, iommu=pt)"
  fi
}

# rg_gpu_path: the GPU path's checks and facts (precheck and apply): gpu_direct, then per planned
# port gpu_pair, pcie_acs, pcie_link, pcie_mrrs, then iommu.
rg_gpu_path() {
  local i j g spec a nic allow rank best bestdev k b text acs unread bad cfg fact numa_g link mrrs want gl nl why ao eo
  local -a parts
  local -a specs=() all=() nics=() paths=() roots=() numas=() gf=()
  rg_gpu_planned || return 0
  RG_FACTS_MORE+=" rg_gpu_facts"
  rg_gpu_list
  rg_gpu_direct_check
  RG_GPU_FACT=() RG_GPU_ACS_FIX=() RG_GPU_MRRS_FIX=()
  rg_pci_rank "$RG_GPU_DISTANCE"
  allow=$REPLY
  # Every planned port's function and path: NCCL chooses among all of them.
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    nics[i]="" paths[i]="" roots[i]="" numas[i]=-1
    rg_nic_bdf "$i" || continue
    nics[i]=$RG_V
    rg_pci_numa "$RG_V"
    numas[i]=$RG_V
    rg_pci_path "${nics[i]}" || continue
    paths[i]=$RG_V roots[i]=$RG_PCI_ROOT
    read -r -a parts <<<"$RG_V"
    all+=(${parts[@]+"${parts[@]}"})
  done
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_NIC_GPU[i]-}" ] || continue
    IFS=, read -r -a specs <<<"${RG_NIC_GPU[i]}"
    for spec in ${specs[@]+"${specs[@]}"}; do
      if ! rg_gpu_resolve "$spec" || ! rg_pci_path "$RG_V"; then continue; fi
      read -r -a parts <<<"$RG_V"
      all+=(${parts[@]+"${parts[@]}"})
    done
  done
  rg_pci_config ${all[@]+"${all[@]}"}
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_NIC_GPU[i]-}" ] || continue
    nic=${RG_NIC_IBDEV[i]}
    IFS=, read -r -a specs <<<"${RG_NIC_GPU[i]}"
    text="" bad="" acs="" unread="" k=0 link="" gl="" nl="" gf=()
    for spec in ${specs[@]+"${specs[@]}"}; do
      if ! rg_gpu_resolve "$spec"; then
        bad+="${bad:+; }$RG_WHY"
        continue
      fi
      a=$RG_V
      [[ $spec =~ ^[0-9]+$ ]] && g="GPU $spec ($a)" || g="GPU $a"
      if [ -z "${paths[i]}" ]; then
        bad+="${bad:+; }$nic has no PCI function here (class/infiniband/$nic/device), so its relation to $g is unknown"
        continue
      fi
      rg_pci_path "$a"
      local gpath=$RG_V groot=$RG_PCI_ROOT
      rg_pci_numa "$a"
      numa_g=$RG_V
      rg_pci_relation "$groot" "$gpath" "$numa_g" "${roots[i]}" "${paths[i]}" "${numas[i]}"
      local rel=$REPLY bridges=$RG_PCI_BRIDGES
      rg_pci_rank "$rel"
      rank=$REPLY
      # NCCL's choice: the planned port nearest to this GPU (the first of equals stays its own).
      best=$rank bestdev=""
      for ((j = 0; j < ${#RG_NIC_IBDEV[@]}; j++)); do
        if [ "$j" -eq "$i" ] || [ -z "${paths[j]}" ]; then continue; fi
        rg_pci_relation "$groot" "$gpath" "$numa_g" "${roots[j]}" "${paths[j]}" "${numas[j]}"
        rg_pci_rank "$REPLY"
        [ "$REPLY" -lt "$best" ] || continue
        best=$REPLY
        bestdev="${RG_NIC_IBDEV[j]} (${RG_PCI_RELATION_NAMES[best]})"
      done
      text+="${text:+; }$g and $nic (${nics[i]}): $rel${bridges:+ through $bridges}, NUMA node $numa_g and ${numas[i]}"
      if [ "$rank" -gt "$allow" ]; then
        why=""
        [ "$rel" != SYS ] || why=" (across NUMA nodes, where NCCL does not use GPUDirect RDMA)"
        bad+="${bad:+; }$g and $nic are $rel, farther than gpu_nic_distance $RG_GPU_DISTANCE allows$why: plan a port nearer to $g"
      fi
      [ -z "$bestdev" ] || bad+="${bad:+; }NCCL pairs each GPU with its nearest NIC and will use $bestdev for $g, not $nic ($rel) as planned: plan $g on that port"
      # ACS on the bridges between them.
      local bl="" bj="" c
      for b in $bridges; do
        cfg=${RG_PCI_CFG[$b]:-"? ? ? ? ? ?"}
        read -r _ c _ _ ao _ <<<"$cfg"
        if [ "$c" = "?" ]; then
          unread+="${unread:+, }$b"
          bj+="${bj:+,}{\"pci\":\"$b\",\"acs_ctl\":null}"
          continue
        elif [ "$c" = - ]; then
          bj+="${bj:+,}{\"pci\":\"$b\",\"acs_ctl\":null}"
          continue
        fi
        bj+="${bj:+,}{\"pci\":\"$b\",\"acs_ctl\":$c}"
        rg_acs_text "$c"
        [ -z "$RG_V" ] || {
          bl+="${bl:+, }$b ($RG_V)"
          [[ " ${RG_GPU_ACS_FIX[i]-} " == *" $b:"* ]] || RG_GPU_ACS_FIX[i]+="${RG_GPU_ACS_FIX[i]:+ }$b:$((ao + 6)):$c"
        }
      done
      [ -z "$bl" ] || acs+="${acs:+; }between $g and $nic: $bl"
      # Both ends' links.
      rg_gpu_link "$a" "$g" || link+="${link:+; }$RG_WHY"
      rg_gpu_link_json
      gl=$REPLY
      rg_json_fmt '{"nic":%s,"nic_pci":%s,"gpu":%s,"gpu_pci":%s,"relation":%s,"numa":[%s,%s],"bridges":[%s],"gpu_link":%s' \
        s "$nic" s "${nics[i]}" s "$spec" s "$a" s "$rel" n "$numa_g" n "${numas[i]}" r "$bj" r "$gl"
      # Closed once the port's own link and MRRS are read, below.
      gf+=("$REPLY")
      k=$((k + 1))
    done
    # The port's own end and its Max Read Request Size, once.
    mrrs=""
    if [ -n "${nics[i]}" ]; then
      rg_gpu_link "${nics[i]}" "$nic (${nics[i]})" || link+="${link:+; }$RG_WHY"
      rg_gpu_link_json
      nl=$REPLY
      read -r _ _ _ c _ eo <<<"${RG_PCI_CFG[${nics[i]}]:-"? ? ? ? ? ?"}"
      [[ ! $c =~ ^[0-9]+$ ]] || mrrs=$((128 << ((c >> 12) & 7)))
    fi
    RG_GPU_FACT[i]=""
    for fact in ${gf[@]+"${gf[@]}"}; do
      RG_GPU_FACT[i]+="${RG_GPU_FACT[i]:+,}$fact,\"nic_link\":${nl:-null},\"mrrs\":${mrrs:-null}}"
    done
    if [ -n "$bad" ]; then
      rg_gpu_finding gpu_pair "$nic" "within $RG_GPU_DISTANCE, the nearest planned port" "" "$bad${text:+ ($text)}"
    else
      rg_check gpu_pair "$nic" pass error "within $RG_GPU_DISTANCE, the nearest planned port" "${text%%,*}" "$text; within gpu_nic_distance $RG_GPU_DISTANCE, and no planned port is nearer"
    fi
    [ "$k" -gt 0 ] || continue
    if [ -n "$acs" ]; then
      if [ "$RG_PCIE_ACS" = disable ]; then
        rg_check_change pcie_acs "$nic" warn warning "no ACS redirect" "on" "ACS sends peer-to-peer traffic up to the root complex $acs: GPUDirect RDMA then crosses the CPU at a fraction of the line rate; apply clears those bits (pcie_acs = disable), and the boot unit again at every boot${unread:+ (not readable: $unread)}" "on"
      else
        rg_gpu_finding pcie_acs "$nic" "no ACS redirect" "on" "ACS sends peer-to-peer traffic up to the root complex $acs: GPUDirect RDMA then crosses the CPU at a fraction of the line rate; set pcie_acs = disable in the plan (apply clears them, and the boot unit at every boot), clear them by hand (setpci -s BRIDGE ECAP_ACS+6.w=0000:002c), or boot without ACS where the IOMMU's isolation is not needed${unread:+ (not readable: $unread)}"
      fi
    elif [ -n "$unread" ]; then
      rg_check pcie_acs "$nic" skip warning "no ACS redirect" "" "skipped: the configuration space of $unread reads only its first 64 bytes here (past them the kernel answers only a reader with CAP_SYS_ADMIN), so its ACS control is unknown"
    else
      rg_check pcie_acs "$nic" pass error "no ACS redirect" "off" "no bridge between $nic and its GPU redirects peer-to-peer traffic (ACS ReqRedir, CmpltRedir, EgressCtrl off)"
    fi
    if [ -n "$link" ]; then
      rg_gpu_finding pcie_link "$nic" "full width and speed" "" "$link"
    else
      rg_check pcie_link "$nic" pass error "full width and speed" "" "$nic runs at its full PCIe width and speed, its GPU at its full width (a GPU lowers its speed while idle)"
    fi
    if [ -n "$RG_PCIE_MRRS" ] && [ -n "${nics[i]}" ]; then
      want=$RG_PCIE_MRRS
      if [ -z "$mrrs" ]; then
        rg_check pcie_mrrs "$nic" skip warning ">= $want" "" "skipped: the configuration space of ${nics[i]} reads only its first 64 bytes here (past them the kernel answers only a reader with CAP_SYS_ADMIN), so its Max Read Request Size is unknown"
      elif [ "$mrrs" -lt "$want" ]; then
        RG_GPU_MRRS_FIX[i]="${nics[i]}:$((eo + 8)):$c"
        rg_check_change pcie_mrrs "$nic" warn warning ">= $want" "$mrrs" "$nic (${nics[i]}) reads at most $mrrs bytes a request (Max Read Request Size), below the plan's pcie_mrrs $want: large GPUDirect transfers take more requests; apply raises it" "$mrrs"
      else
        rg_check pcie_mrrs "$nic" pass error ">= $want" "$mrrs" "$nic (${nics[i]}) reads up to $mrrs bytes a request (Max Read Request Size), at least the plan's $want"
      fi
    fi
  done
  rg_gpu_iommu ${nics[@]+"${nics[@]}"} ${RG_GPU_ADDRS[@]+"${RG_GPU_ADDRS[@]}"}
}

# rg_gpu_facts: the result's `gpu_path` facts member (through RG_FACTS_MORE): NCCL's version and
# where it came from, the GPUDirect route, the GPU driver's and peer-memory module's versions, and
# every planned pair.
rg_gpu_facts() {
  local i sep="" pairs=""
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_GPU_FACT[i]-}" ] || continue
    pairs+="$sep${RG_GPU_FACT[i]}"
    sep=","
  done
  rg_json_fmt '"gpu_path":{"nccl_version":%s,"nccl_version_from":%s,"route":%s,"driver":%s,"peermem":%s,"pairs":[%s]}' \
    s "$RG_NCCL_SEEN" s "$RG_NCCL_FROM" s "$RG_GPU_ROUTE" s "$RG_GPU_DRIVER" s "$RG_GPU_PEERMEM" r "$pairs"
  printf '%s' "$REPLY"
}

# rg_pci_write BDF OFFSET VALUE: writes the 16-bit VALUE at OFFSET of BDF's configuration space
# (little-endian, one aligned word: pci-sysfs.c pci_write_config turns it into one config word
# write), through the sysfs file with dd; --dry-run only takes the step.
rg_pci_write() {
  local f="$RG_ROOT/sys/bus/pci/devices/$1/config" bytes step
  printf -v step 'write: configuration space of %s at 0x%x: 0x%04x' "$1" "$2" "$3"
  rg_step "$step"
  [ "$RG_DRY_RUN" = no ] || return 0
  printf -v bytes '\\x%02x\\x%02x' $(($3 & 255)) $((($3 >> 8) & 255))
  # shellcheck disable=SC2059 # the two bytes' escapes
  printf "$bytes" | rg_x dd of="$f" bs=2 seek=$(($2 / 2)) count=1 conv=notrunc status=none
}

# rg_pci_word BDF OFFSET: RG_V = the 16-bit word at OFFSET of BDF's configuration space, read
# again (for the read-back of a write); status 1 when unreadable.
rg_pci_word() {
  local line
  RG_V=""
  rg_cap -1 rg_x od -An -v -tu2 -j "$2" -N 2 -- "$RG_ROOT/sys/bus/pci/devices/$1/config" || return 1
  read -r line <<<"$RG_CAP"
  rg_is_uint "$line" || return 1
  RG_V=$line
}

# rg_pci_item ITEM: RG_PCI_BDF, RG_PCI_OFF, RG_PCI_VAL of one saved "BDF:OFFSET:VALUE" (the
# address itself holds colons).
rg_pci_item() {
  RG_PCI_VAL=${1##*:} RG_PCI_BDF=${1%:*}
  RG_PCI_OFF=${RG_PCI_BDF##*:} RG_PCI_BDF=${RG_PCI_BDF%:*}
}

# rg_pci_set BDF OFFSET VALUE: writes VALUE (rg_pci_write) and, unless a dry run, reads it back;
# status 1 with RG_WHY when the write failed or reads otherwise.
rg_pci_set() {
  RG_WHY=""
  if ! rg_pci_write "$1" "$2" "$3"; then
    RG_WHY="the write failed"
  elif [ "$RG_DRY_RUN" = no ] && { ! rg_pci_word "$1" "$2" || [ "$RG_V" != "$3" ]; }; then
    printf -v RG_WHY 'reads 0x%04x after writing 0x%04x' "${RG_V:-0}" "$3"
  fi
  [ -z "$RG_WHY" ]
}

# rg_gpu_writes ID I WANT_FN: apply's writes of one PCIe setting of port I: each "BDF:OFFSET:VALUE"
# of RG_GPU_ACS_FIX[I] (pcie_acs) or RG_GPU_MRRS_FIX[I] (pcie_mrrs), the originals saved first
# (`ID DEV "BDF:OFFSET:VALUE ..."`), the new value WANT_FN VALUE computes written and read back.
# RG_V says what was done; status 1 when a write did not read back.
rg_gpu_writes() {
  local id=$1 i=$2 fn=$3 list item word did="" bad=""
  if [ "$id" = pcie_acs ]; then list=${RG_GPU_ACS_FIX[i]-}; else list=${RG_GPU_MRRS_FIX[i]-}; fi
  RG_V=""
  [ -n "$list" ] || return 0
  rg_save "$id" "${RG_NIC_IBDEV[i]}" "$list"
  for item in $list; do
    rg_pci_item "$item"
    "$fn" "$RG_PCI_VAL"
    if rg_pci_set "$RG_PCI_BDF" "$RG_PCI_OFF" "$REPLY"; then
      printf -v word '%s 0x%04x → 0x%04x' "$RG_PCI_BDF" "$RG_PCI_VAL" "$REPLY"
      did+="${did:+, }$word"
    else
      bad+="${bad:+, }$RG_PCI_BDF ($RG_WHY)"
    fi
  done
  RG_V=${bad:-$did}
  [ -z "$bad" ]
}

# The new value of an ACS control word (redirect bits off) and of a Device Control word (the
# plan's Max Read Request Size in bits 14:12: 128 << n bytes).
rg_gpu_acs_off() { REPLY=$(($1 & ~0x2c)); }
rg_gpu_mrrs_on() {
  local n=0
  while [ $((128 << n)) -lt "$RG_PCIE_MRRS" ]; do n=$((n + 1)); done
  REPLY=$((($1 & ~0x7000) | (n << 12)))
}

# rg_gpu_apply: apply's part (apply.sh, after the ports; the boot unit's run too, since the
# kernel enables ACS again at every boot with an IOMMU): with pcie_acs = disable, the ACS
# redirect bits of the bridges between each planned pair cleared; with pcie_mrrs, each planned
# port's Max Read Request Size raised to it. Each replaces precheck's check of the port.
rg_gpu_apply() {
  local i dev
  rg_gpu_planned || return 0
  # Precheck's own pcie_acs and pcie_mrrs (rg_gpu_path) are its prediction, with the why.
  [ "$RG_PREDICT" = no ] || return 0
  # shellcheck disable=SC2034 # rg_check (lib.sh) reads it
  RG_CHECK_REPLACE=yes
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    dev=${RG_NIC_IBDEV[i]}
    [ "$RG_PCIE_ACS" != disable ] || [ -z "${RG_GPU_ACS_FIX[i]-}" ] ||
      rg_gpu_apply_one pcie_acs "$i" rg_gpu_acs_off "no ACS redirect" on off clear cleared \
        "the ACS redirect bits (ReqRedir, CmpltRedir, EgressCtrl) between $dev and its GPU"
    [ -z "$RG_PCIE_MRRS" ] || [ -z "${RG_GPU_MRRS_FIX[i]-}" ] ||
      rg_gpu_apply_one pcie_mrrs "$i" rg_gpu_mrrs_on ">= $RG_PCIE_MRRS" "" "$RG_PCIE_MRRS" raise raised \
        "the Max Read Request Size of $dev to $RG_PCIE_MRRS bytes (Device Control)"
  done
  # shellcheck disable=SC2034
  RG_CHECK_REPLACE=no
}

# rg_gpu_apply_one ID I WANT_FN EXPECTED BEFORE AFTER VERB DONE WHAT: check ID of port I from
# rg_gpu_writes: a finding when a write did not hold, the dry run's prediction, or `changed`.
rg_gpu_apply_one() {
  local id=$1 dev=${RG_NIC_IBDEV[$2]}
  if ! rg_gpu_writes "$id" "$2" "$3"; then
    rg_gpu_finding "$id" "$dev" "$4" "$5" "could not $7 $9: $RG_V (see the log above)"
  elif [ "$RG_DRY_RUN" = yes ]; then
    rg_check_change "$id" "$dev" warn warning "$4" "$5" "dry run: would $7 $9: $RG_V" "$5"
  else
    rg_check_change "$id" "$dev" changed warning "$4" "$6" "$8 $9: $RG_V" "$5"
  fi
}

# rg_gpu_rollback: rollback's part (rg_rollback): each saved ACS control and Device Control word
# (`pcie_acs` and `pcie_mrrs` lines of the saved state) written back and read back.
rg_gpu_rollback() {
  local id dev value item word did bad
  [ -r "$RG_SAVED" ] || return 0
  while IFS=$'\t' read -r -u 3 id dev value; do
    case $id in pcie_acs | pcie_mrrs) ;; *) continue ;; esac
    did="" bad=""
    for item in $value; do
      rg_pci_item "$item"
      if rg_pci_word "$RG_PCI_BDF" "$RG_PCI_OFF" && [ "$RG_V" = "$RG_PCI_VAL" ]; then
        continue
      fi
      if rg_pci_set "$RG_PCI_BDF" "$RG_PCI_OFF" "$RG_PCI_VAL"; then
        printf -v word '%s 0x%04x' "$RG_PCI_BDF" "$RG_PCI_VAL"
        did+="${did:+, }$word"
      else
        bad+="${bad:+, }$RG_PCI_BDF ($RG_WHY)"
      fi
    done
    if [ -n "$bad" ]; then
      rg_check "$id" "$dev" fail error "as before apply" "" "could not write back the configuration space of $bad (see the log above)"
    elif [ -z "$did" ]; then
      rg_check "$id" "$dev" pass warning "as before apply" "as before apply" "the configuration space apply changed for $dev already reads as before"
    elif [ "$RG_DRY_RUN" = yes ]; then
      rg_check_change "$id" "$dev" warn warning "as before apply" "" "dry run: would write back $did" ""
    else
      rg_check_change "$id" "$dev" changed warning "as before apply" "as before apply" "wrote back $did" ""
    fi
  done 3<"$RG_SAVED"
}

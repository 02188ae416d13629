# shellcheck shell=bash
# lib-nccl.sh, part of lib.sh: the NCCL self-test of the fabric phase (plan format 1.3,
# `nccl_test`). Where the plan names GPUs and nccl-tests' all_reduce_perf is on the host, one
# single-node all-reduce over the planned GPUs with NCCL's peer-to-peer and shared-memory
# transports off, so that every rank's traffic leaves by its own planned port, crosses to the next
# rank's port through the switches and comes back in: NCCL itself then says, per HCA, whether it
# uses GPUDirect RDMA (its NET log lines, which the default log categories leave out) and what bus
# bandwidth the planned ports carry. NCCL reads the host's /etc/nccl.conf itself (NCCL_IB_HCA,
# NCCL_IB_TC, NCCL_IB_GID_INDEX as apply wrote them). Checks nccl_gdr (port) and nccl_busbw (host).

# How long the self-test may take, seconds: NCCL's init, the connections and 8 MiB to 1 GiB in
# steps of 2 take seconds on a healthy host; a fabric whose rails cannot reach each other ends in
# NCCL's own error once the QPs' retries are spent, and this bounds a hang of any other kind.
RG_NCCL_LIMIT=180
# What the run showed (rg_nccl_read): NCCL's version, the HCAs it took, GPUDirect per HCA
# ("DEV Enabled|Disabled"), the out-of-place bus bandwidth per size ("BYTES GB/s"), the
# average, and NCCL's warning where it failed.
RG_NCCL_RAN=""
RG_NCCL_USING=""
RG_NCCL_GDR=()
RG_NCCL_BUSBW=()
RG_NCCL_AVG=""
RG_NCCL_WARN=""

# rg_nccl_read FILE: RG_NCCL_* from all_reduce_perf's stdout with NCCL's INFO lines (formats:
# tests/host/fixtures/nccl/README.md): one awk over the file.
rg_nccl_read() {
  local kind a b
  RG_NCCL_RAN="" RG_NCCL_USING="" RG_NCCL_GDR=() RG_NCCL_BUSBW=() RG_NCCL_AVG="" RG_NCCL_WARN=""
  [ -f "$1" ] || return 0
  while read -r kind a b; do
    case $kind in
      version) RG_NCCL_RAN=$a ;;
      using) RG_NCCL_USING="$a${b:+ $b}" ;;
      gdr) [[ " ${RG_NCCL_GDR[*]-} " == *" $a "* ]] || RG_NCCL_GDR+=("$a $b") ;;
      bw) RG_NCCL_BUSBW+=("$a $b") ;;
      avg) RG_NCCL_AVG=$a ;;
      warn) RG_NCCL_WARN="$a${b:+ $b}" ;;
    esac
  done < <(awk '
    / NCCL INFO NCCL version / { v = $0; sub(/.*NCCL version /, "", v); sub(/\+.*/, "", v); print "version", v }
    / NCCL INFO NET\/IB : Using / {
      u = ""; for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\][^:]+:[0-9]+\//) { d = $i; sub(/^\[[0-9]+\]/, "", d); sub(/:.*/, "", d); u = u (u == "" ? "" : " ") d }
      print "using", u
    }
    / NCCL INFO NET\/IB : GPU Direct RDMA (Enabled|Disabled) for HCA / {
      d = $NF; gsub(/\047/, "", d); w = ($0 ~ /RDMA Enabled for HCA/) ? "Enabled" : "Disabled"
      if (!(d in seen) || w == "Disabled") seen[d] = w
    }
    / NCCL WARN / && warned == "" { warned = $0; sub(/.* NCCL WARN /, "", warned) }
    /^ *[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z]+ +-?[0-9]+ / { print "bw", $1, $8 }
    /^# Avg bus bandwidth/ { print "avg", $NF }
    END { for (d in seen) print "gdr", d, seen[d]; if (warned != "") print "warn", warned }
  ' "$1")
}

# rg_nccl_skip WHY: both checks skipped, for WHY (the self-test cannot run here).
rg_nccl_skip() {
  rg_check nccl_gdr "" skip warning "" "" "skipped: $1"
  rg_check nccl_busbw "" skip warning "" "" "skipped: $1"
}

# rg_nccl_run: the self-test and its checks (fabric.sh, after the fabric steps).
rg_nccl_run() {
  local i spec k list="" gpus=0 dev state size bw mark line mbps="" why out=$RG_TMP/nccl.out rc
  local -a idx=() devs=()
  [ "${RG_NCCL_TEST:-no}" = yes ] || return 0
  rg_gpu_planned || return 0
  rg_gpu_list
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_NIC_GPU[i]-}" ] || continue
    devs+=("${RG_NIC_IBDEV[i]}")
    spec=${RG_NIC_GPU[i]%%,*}
    rg_gpu_resolve "$spec" || continue
    [[ " ${idx[*]-} " == *" $RG_GPU_INDEX "* ]] || idx+=("$RG_GPU_INDEX")
    # The port's line rate, the slowest of them, for the pass mark.
    rg_read_v "/sys/class/net/${RG_NIC_NETDEV[i]}/speed" || RG_V=""
    if rg_is_uint "$RG_V" && { [ -z "$mbps" ] || [ "$RG_V" -lt "$mbps" ]; }; then mbps=$RG_V; fi
  done
  gpus=${#idx[@]}
  RG_FACTS_MORE+=" rg_nccl_facts"
  if [ "$gpus" -lt 2 ]; then
    rg_nccl_skip "the plan names $gpus GPU here that this host has; an all-reduce of one rank moves nothing over the network"
    return 0
  fi
  if ! rg_has all_reduce_perf; then
    rg_nccl_skip "nccl-tests' all_reduce_perf is not on this host's PATH: build it (git clone https://github.com/NVIDIA/nccl-tests; make MPI=0 CUDA_HOME=/usr/local/cuda) and put build/all_reduce_perf on the PATH, or run fabric.sh where the site's images have it, then run fabric.sh again"
    return 0
  fi
  # NCCL's route as the GPU path decides it (rg_fabric_memory_plan has, earlier in the run).
  [ -n "$RG_GPU_ROUTE" ] || rg_gpu_route
  list=$(IFS=,; printf '%s' "${idx[*]}")
  rg_log "fabric: NCCL self-test (all_reduce_perf over $gpus GPUs through the planned ports, at most ${RG_NCCL_LIMIT}s)"
  rc=0
  # CUDA numbers the GPUs its own way unless told PCI order; the planned ones only. Sizes from
  # 8 MiB to 1 GiB, doubling: the largest is the one judged.
  env CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES="$list" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
    NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 timeout -k 5 "$RG_NCCL_LIMIT" all_reduce_perf \
    -b 8M -e 1G -f 2 -g "$gpus" >"$out" 2>"$out.err" || rc=$?
  rg_nccl_read "$out"
  # nccl_gdr: NCCL's own word per planned HCA, decided at its initialisation.
  for dev in ${devs[@]+"${devs[@]}"}; do
    state=""
    for ((k = 0; k < ${#RG_NCCL_GDR[@]}; k++)); do
      [ "${RG_NCCL_GDR[k]%% *}" != "$dev" ] || state=${RG_NCCL_GDR[k]#* }
    done
    if [ -z "$RG_NCCL_RAN" ]; then
      why=$(head -c 300 "$out.err" 2>/dev/null | tr '\n' ' ')
      rg_check nccl_gdr "$dev" fail error "Enabled" "" "the NCCL self-test did not start (all_reduce_perf exit $rc): ${why:-no output}"
    elif [[ " $RG_NCCL_USING " != *" $dev "* ]]; then
      rg_gpu_finding nccl_gdr "$dev" "Enabled" "unused" "NCCL $RG_NCCL_RAN does not use $dev (NET/IB : Using ${RG_NCCL_USING:-nothing}): its NCCL_IB_HCA (/etc/nccl.conf, nccl_env) or the port's state keeps it out"
    elif [ "$state" = Enabled ]; then
      rg_check nccl_gdr "$dev" pass error "Enabled" "Enabled" "NCCL $RG_NCCL_RAN says GPU Direct RDMA Enabled for HCA '$dev'"
    else
      rg_gpu_finding nccl_gdr "$dev" "Enabled" "${state:-unknown}" "NCCL $RG_NCCL_RAN says GPU Direct RDMA ${state:-nothing} for HCA '$dev': it stages GPU memory through host memory${RG_GPU_ROUTE_WHY:+ ($RG_GPU_ROUTE_WHY)}"
    fi
  done
  # nccl_busbw: the largest size's bus bandwidth against the plan's mark.
  if [ ${#RG_NCCL_BUSBW[@]} -gt 0 ] && [ "$rc" -eq 0 ]; then
    line=${RG_NCCL_BUSBW[${#RG_NCCL_BUSBW[@]} - 1]}
    size=${line%% *} bw=${line#* }
    if [ -n "$RG_NCCL_MIN_BUSBW" ]; then
      mark=$RG_NCCL_MIN_BUSBW why="the plan's nccl_min_busbw"
    elif [ -n "$mbps" ]; then
      mark=$(awk -v m="$mbps" -v p="$RG_FABRIC_MIN_PCT" 'BEGIN { printf "%.2f", m / 8000 * p / 100 }')
      why="fabric_min_pct $RG_FABRIC_MIN_PCT % of one planned port's line rate ($((mbps / 1000)) Gb/s)"
    else
      mark=""
    fi
    if [ -z "$mark" ]; then
      rg_check nccl_busbw "" warn warning "" "$bw" "NCCL's bus bandwidth at $size bytes is $bw GB/s; no port's line rate is readable to judge it by: set nccl_min_busbw"
    elif awk -v b="$bw" -v m="$mark" 'BEGIN { exit !(b + 0 >= m + 0) }'; then
      rg_check nccl_busbw "" pass error ">= $mark GB/s" "$bw" "NCCL's all-reduce over $gpus GPUs through the planned ports: $bw GB/s bus bandwidth at $size bytes, at least $mark GB/s ($why)"
    else
      rg_check nccl_busbw "" fail error ">= $mark GB/s" "$bw" "NCCL's all-reduce over $gpus GPUs through the planned ports: $bw GB/s bus bandwidth at $size bytes, below $mark GB/s ($why)$([ "$RG_GPU_ROUTE" != none ] || printf '; without GPUDirect RDMA (nccl_gdr) GPU memory is staged through host memory')"
    fi
  elif [ -n "$RG_NCCL_RAN" ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] || [[ $RG_NCCL_WARN == *"Got completion from peer"* ]] || [[ $RG_NCCL_WARN == *timeout* ]]; }; then
    rg_check nccl_busbw "" skip warning "" "" "skipped: NCCL's traffic from one planned port to another did not get through (${RG_NCCL_WARN:-no result within ${RG_NCCL_LIMIT}s}): inside one host the self-test crosses rails, which a rail-isolated fabric does not route; training traffic stays on its rail there, and nccl_gdr still holds"
  else
    why=${RG_NCCL_WARN:-$(head -c 300 "$out.err" 2>/dev/null | tr '\n' ' ')}
    rg_check nccl_busbw "" fail error "" "" "the NCCL self-test failed (all_reduce_perf exit $rc): ${why:-no result table}"
  fi
}

# rg_nccl_facts: the result's `nccl` facts member (through RG_FACTS_MORE): NCCL's version, the
# HCAs it used, GPUDirect per HCA and the bus bandwidth per size.
rg_nccl_facts() {
  local k sep="" gdr="" bw=""
  for ((k = 0; k < ${#RG_NCCL_GDR[@]}; k++)); do
    rg_json_fmt '%s%s:%s' r "$sep" s "${RG_NCCL_GDR[k]%% *}" r "$([ "${RG_NCCL_GDR[k]#* }" = Enabled ] && echo true || echo false)"
    gdr+=$REPLY sep=,
  done
  sep=""
  for ((k = 0; k < ${#RG_NCCL_BUSBW[@]}; k++)); do
    rg_json_fmt '%s%s:%s' r "$sep" s "${RG_NCCL_BUSBW[k]%% *}" n "${RG_NCCL_BUSBW[k]#* }"
    bw+=$REPLY sep=,
  done
  rg_json_fmt '"nccl":{"version":%s,"hcas":%s,"gdr":{%s},"busbw":{%s},"avg_busbw":%s}' \
    s "$RG_NCCL_RAN" s "$RG_NCCL_USING" r "$gdr" r "$bw" n "$RG_NCCL_AVG"
  printf '%s' "$REPLY"
}

# shellcheck shell=bash
# lib-fabric.sh: the fabric test (fabric.sh, phase `fabric`), part of lib.sh. On every planned
# port at once it serves the ring's previous port and sends to the next one with perftest's
# ib_write_bw (over the port's RDMA device, the GID index of the planned address, the traffic
# class NCCL will ask for, RG_FABRIC_SECONDS), then with fabric_incast a second step where two
# or more senders share one receiver, connected through RDMA-CM with the device's default ToS (so
# that the test proves both classes applications get); it reads the counters around each step (ethtool -S and
# hw_counters) and checks fabric_peer, fabric_bw, fabric_priority, fabric_loss and
# fabric_congestion. It changes no setting. The pairs and TCP ports are plan data (plan.sh,
# RG_FAB_*), made by `roce-gen generate`.

# The shells of the step's flows while they run (rg_fabric_step, rg_fabric_stop).
RG_FAB_BG=()
# Whether this perftest can bind the handshake to the planned address, and how it takes GPU
# memory: bus (--use_cuda_bus_id), index (--use_cuda only) or none (built without CUDA), and
# whether it has --use_cuda_dmabuf (rg_fabric_probe).
RG_FAB_BIND=no
RG_FAB_CUDA=none
RG_FAB_DMABUF=no
# Per port whose plan names a GPU (rg_fabric_memory_plan): the memory its flows move (gpu or
# host), perftest's options for it, the GPU's address and CUDA index, and why host memory.
RG_FAB_MEM=()
RG_FAB_MEM_ARGS=()
RG_FAB_MEM_GPU=()
RG_FAB_MEM_WHY=()
# The step whose flows run (rg_fabric_step), for the flows' own shells.
RG_FAB_STEP=ring
# Whether firewalld runs, and per port what of the test's TCP ports it blocks (rg_fabric_firewall).
RG_FAB_FW_ON=no
RG_FAB_FW=()
# The traffic class a port's flows ask for and why (rg_fabric_class), and NCCL's from
# /etc/nccl.conf (rg_fabric_nccl_tc).
RG_FAB_TC=""
RG_FAB_TC_TEXT=""
RG_FAB_NCCL_TC=""
RG_FAB_NCCL_BAD=""
# When the ring step began (epoch seconds), and how long each step waited for its peers.
RG_FAB_T0=0
declare -A RG_FAB_WAIT=()
# How long the test waits for its peers (--window), and the pause between two connects.
RG_FABRIC_WINDOW=600
RG_FABRIC_RETRY=1
# The share of a port's bytes that may ride another priority than the RoCE one (ARP, LLDP, the
# perftest handshake go over TCP, not RDMA, but a management flow can share the port).
RG_FABRIC_OTHER_PCT=5
# The counters read around each step: hw_counters (mlx5_ib counters.c) and ethtool -S (mlx5
# en_stats.c: the per-priority bytes and pause frames, the physical port's discards).
RG_FABRIC_HW="np_ecn_marked_roce_packets np_cnp_sent rp_cnp_handled out_of_sequence packet_seq_err"
RG_FABRIC_LOSS="out_of_sequence packet_seq_err rx_discards_phy tx_discards_phy"
# The incast step proves congestion only if its senders ran at once: a receiver whose flows
# overlapped for less than this share of fabric_seconds (the hosts started too far apart) warns
# instead of failing for missing ECN marks or CNPs.
RG_FABRIC_OVERLAP_PCT=50

# rg_fabric_args ARGS...: takes --window SECONDS out of the command line; RG_ARGS the rest.
rg_fabric_args() {
  RG_ARGS=()
  while [ $# -gt 0 ]; do
    case $1 in
      --window)
        [ $# -ge 2 ] || rg_usage_error "--window needs a number of seconds"
        case $2 in
          '' | *[!0-9]* | 0) rg_usage_error "--window must be a positive number of seconds, not $2" ;;
        esac
        RG_FABRIC_WINDOW=$2
        shift 2
        ;;
      *)
        RG_ARGS+=("$1")
        shift
        ;;
    esac
  done
}

# rg_perftest_how: RG_V = how to install perftest (ib_write_bw's package) on this host: the
# command of its package manager, chosen by /etc/os-release's ID and ID_LIKE (os-release(5));
# all three where the distribution is not known. MLNX_OFED and DOCA ship their own perftest.
rg_perftest_how() {
  local ids ver cmd
  ids=" $(awk -F= '$1 == "ID" || $1 == "ID_LIKE" { gsub(/["'"'"']/, "", $2); printf "%s ", $2 }' \
    "$RG_ROOT/etc/os-release" 2>/dev/null) "
  ver=$(awk -F= '$1 == "VERSION_ID" { gsub(/["'"'"']/, "", $2); print $2 }' "$RG_ROOT/etc/os-release" 2>/dev/null)
  case $ids in
    *" debian "* | *" ubuntu "*) cmd="apt install perftest" ;;
    *" suse "* | *" sles "* | *" opensuse"*) cmd="zypper install perftest" ;;
    *" rhel "* | *" fedora "* | *" centos "*)
      # RHEL and CentOS 7 have yum only; dnf from 8 on.
      case $ver in
        [1-7] | [1-7].*) cmd="yum install perftest" ;;
        *) cmd="dnf install perftest" ;;
      esac
      ;;
    *) cmd="apt install perftest, dnf install perftest or zypper install perftest" ;;
  esac
  if [ -n "$RG_OFED" ]; then
    RG_V="$cmd, from the repository of $RG_OFED, which ships it"
  else
    RG_V="$cmd; MLNX_OFED and DOCA ship it too"
  fi
}

# rg_fabric_firewall: whether firewalld runs here (RG_FAB_FW_ON) and, per planned port, what of
# the fabric test's TCP ports it serves the zone of its interface does not open (RG_FAB_FW[I], ""
# when all are open). perftest exchanges its keys over TCP (18515 + 8 x i + slot) before any RDMA,
# and the RoCE traffic itself bypasses netfilter: applications work while the test's handshake
# is refused, which would blame the peer (field review 4, finding 7). firewalld's shipped default
# zone, public, admits only ssh and dhcpv6-client.
rg_fabric_firewall() {
  local i ifc tcps p dz zone="" target="" ports="" rich="" blocked lo hi
  RG_FAB_FW_ON=no RG_FAB_FW=()
  rg_has firewall-cmd || return 0
  rg_cap -1 rg_x firewall-cmd --state || return 0
  RG_FAB_FW_ON=yes
  if rg_cap -1 rg_x firewall-cmd --get-default-zone; then dz=${RG_CAP%%$'\n'*}; else dz=public; fi
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    ifc=${RG_NIC_NETDEV[i]}
    # Only the ring's: the incast connects through RDMA-CM, whose messages bypass netfilter.
    tcps=${RG_FAB_FROM_TCP[i]-}
    [ -n "$tcps" ] || continue
    # An interface in no zone takes the default zone's rules.
    if rg_cap -1 rg_x firewall-cmd --get-zone-of-interface="$ifc"; then p=${RG_CAP%%$'\n'*}; else p=$dz; fi
    if [ "$p" != "$zone" ]; then
      zone=$p target="?" ports="" rich=""
      if rg_cap -1 rg_x firewall-cmd --zone="$zone" --list-all && rg_v rg_parse_fw_zone "$RG_CAP"; then
        { IFS= read -r target; IFS= read -r ports; IFS= read -r rich; } <<<"$RG_V" || true
      fi
    fi
    [ "$target" != ACCEPT ] || continue
    blocked="" lo="" hi=""
    for p in $tcps; do
      rg_fw_opens "$ports" "$p" && continue
      blocked+="${blocked:+, }$p"
      [ -n "$lo" ] && [ "$lo" -le "$p" ] || lo=$p
      [ -n "$hi" ] && [ "$hi" -ge "$p" ] || hi=$p
    done
    [ -n "$blocked" ] || continue
    [ "$lo" = "$hi" ] || lo="$lo-$hi"
    RG_FAB_FW[i]="firewalld's zone $zone of $ifc does not open TCP $blocked, where the fabric test's peers connect for perftest's handshake${rich:+ (unless one of its rich rules admits them)}: open them (firewall-cmd --zone=$zone --add-port=$lo/tcp, and the same with --permanent to keep them)"
  done
}

# rg_check_firewall WHAT: check fabric_firewall of every planned port that serves a fabric flow,
# where firewalld runs: a warning naming the zone, the ports and the command that opens them, and
# WHAT a closed port does to the test.
rg_check_firewall() {
  local i
  rg_fabric_firewall
  [ "$RG_FAB_FW_ON" = yes ] || return 0
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_FAB_FROM_TCP[i]-}" ] || continue
    if [ -n "${RG_FAB_FW[i]-}" ]; then
      rg_check fabric_firewall "${RG_NIC_IBDEV[i]}" warn warning open "closed" \
        "${RG_FAB_FW[i]}; the fabric test's peers cannot reach ${RG_NIC_IBDEV[i]} ($1)"
    else
      rg_check fabric_firewall "${RG_NIC_IBDEV[i]}" pass info open open \
        "firewalld runs, and the zone of ${RG_NIC_NETDEV[i]} admits the fabric test's TCP ports"
    fi
  done
}

# rg_check_perftest: precheck's look for the traffic tool of fabric.sh (called by rg_precheck).
rg_check_perftest() {
  if rg_has ib_write_bw; then
    rg_check fabric_tool "" pass info ib_write_bw ib_write_bw "ib_write_bw (perftest) is installed for fabric.sh"
  else
    rg_perftest_how
    rg_check fabric_tool "" warn warning ib_write_bw "" \
      "ib_write_bw is not installed: fabric.sh (the fabric test after apply) needs it; install the package perftest ($RG_V)"
  fi
}

# rg_parse_perftest_bw: reads ib_write_bw's report (stdin) and prints the average rate in Gb/s
# (the `BW average[Gb/sec]` column of the line after perftest's RESULT_FMT_G header, as
# --report_gbits prints it); fails when there is no such line.
rg_parse_perftest_bw() {
  awk '
    $1 == "#bytes" && $2 == "#iterations" { want = ($0 ~ /BW average\[Gb\/sec\]/); next }
    want && NF >= 5 && $1 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+(\.[0-9]+)?$/ { print $4; found = 1; want = 0 }
    END { exit found ? 0 : 1 }
  '
}

# rg_fabric_counters I: prints "name value" for the counters of port I, sorted: the RDMA
# device's hw_counters and `ethtool -S` of each physical port, summed. A bond has no statistics
# (bonding's ethtool ops have none: "no stats available"), so a LAG's per-priority bytes, pause
# frames and discards are its slaves' together; its hw_counters are the LAG device's, where mlx5
# already sums both ports' congestion counters (mlx5_ib counters.c, mlx5_lag_query_cong_counters).
rg_fabric_counters() {
  local c v p
  local -A t=()
  rg_nic_ports "$1"
  for c in $RG_FABRIC_HW; do
    v=$(rg_read "/sys/class/infiniband/${RG_NIC_IBDEV[$1]}/ports/1/hw_counters/$c") || continue
    ! rg_is_uint "$v" || t[$c]=$v
  done
  for p in $REPLY; do
    while read -r c v; do
      c=${c%:}
      case $c in
        rx_prio[0-7]_bytes | tx_prio[0-7]_bytes | rx_prio[0-7]_pause | tx_prio[0-7]_pause | rx_discards_phy | tx_discards_phy) ;;
        *) continue ;;
      esac
      ! rg_is_uint "$v" || t[$c]=$((${t[$c]:-0} + 10#$v))
    done < <(rg_x ethtool -S "$p" 2>/dev/null || true)
  done
  for c in ${t[@]+"${!t[@]}"}; do printf '%s %s\n' "$c" "${t[$c]}"; done | sort
}

# rg_fabric_delta BEFORE AFTER: "name delta" for every counter read both before and after; "name
# reset" for one that went back (the driver was reloaded during the step). A counter the device
# does not expose (a capability it lacks) is in neither file and has no line: absent is not 0.
# Only a per-priority counter may appear during the step, counted from 0: mlx5 lists those by
# the port's state (the PFC ones while PFC is on, en_stats.c), not by a capability.
rg_fabric_delta() {
  awk 'NR == FNR { b[$1] = $2; next }
    !($1 in b) && $1 ~ /^[rt]x_prio[0-7]_/ { b[$1] = 0 }
    ($1 in b) { d = $2 - b[$1]; if (d < 0) print $1, "reset"; else printf "%s %.0f\n", $1, d }' "$1" "$2"
}

# rg_fabric_val FILE NAME: RG_V = NAME's delta in a delta file; fails when NAME is absent (RG_V
# empty) or was reset (RG_V "reset").
rg_fabric_val() {
  local n v
  RG_V=""
  while read -r n v; do
    if [ "$n" = "$2" ]; then
      RG_V=$v
      [ "$v" != reset ]
      return
    fi
  done <"$1"
  return 1
}

# rg_fabric_get FILE NAME: the value of NAME in a delta file, 0 when absent or reset: for the pause
# counters, which mlx5 lists only for a priority with PFC (en_stats.c), so absent means none.
rg_fabric_get() {
  if rg_fabric_val "$1" "$2"; then printf '%s\n' "$RG_V"; else printf '0\n'; fi
}

# rg_fabric_unread NAMES: RG_V = why the counters NAMES (absent from a delta) have no value: mlx5
# lists each only with a capability of the device (mlx5_ib counters.c, en_stats.c).
rg_fabric_unread() {
  local c why text=""
  for c in $1; do
    case $c in
      out_of_sequence) why="the device's out_of_seq_cnt capability" ;;
      packet_seq_err) why="its retransmission_q_counters capability" ;;
      np_ecn_marked_roce_packets | np_cnp_sent | rp_cnp_handled) why="its cc_query_allowed capability" ;;
      *) why="the firmware's port counters (PPCNT)" ;;
    esac
    text+="${text:+, }$c (mlx5 lists it only with $why)"
  done
  RG_V="not exposed here: $text"
}

# rg_fabric_loss DELTA: reads the loss counters (RG_FABRIC_LOSS) of a step: RG_FAB_BAD the ones that
# moved ("name +N"), RG_FAB_READ how many were read, RG_FAB_NOTE what could not be read (absent
# counters named, counters reset during the step).
rg_fabric_loss() {
  local c absent="" reset=""
  RG_FAB_BAD="" RG_FAB_READ=0 RG_FAB_NOTE=""
  for c in $RG_FABRIC_LOSS; do
    if rg_fabric_val "$1" "$c"; then
      RG_FAB_READ=$((RG_FAB_READ + 1))
      [ "$RG_V" -eq 0 ] || RG_FAB_BAD+="${RG_FAB_BAD:+, }$c +$RG_V"
    elif [ "$RG_V" = reset ]; then
      reset+="${reset:+, }$c"
    else
      absent+=" $c"
    fi
  done
  if [ -n "$absent" ]; then
    rg_fabric_unread "$absent"
    RG_FAB_NOTE=$RG_V
  fi
  [ -z "$reset" ] || RG_FAB_NOTE+="${RG_FAB_NOTE:+; }$reset went back during the step (the driver was reloaded?), so not read"
  return 0
}

# rg_fabric_serve I TCP LIMIT OUT: one ib_write_bw server on port I's device for one client, for at
# most LIMIT seconds; its report in OUT, its errors in OUT.err, and in OUT.t when its client's flow
# started and ended (rg_fabric_stamp). Not through rg_x: a server that no client reached is the
# peer's absence (fabric_peer names it), not a hung tool. perftest writes stdout through stdio,
# fully buffered into a pipe until its report: coreutils' stdbuf -oL makes each line arrive as it
# is printed. OUT.pid names its timeout while it runs (rg_fabric_stop).
rg_fabric_serve() {
  local i=$1 timed=no rc
  local -a lb=()
  if rg_has stdbuf; then
    lb=(stdbuf -oL)
    timed=yes
  fi
  (rg_fabric_perftest "$4.pid" "$3" "$i" "$2" ${lb[@]+"${lb[@]}"}) 2>"$4.err" |
    rg_fabric_stamp "$4" "$timed" && rc=0 || rc=$?
  rm -f "$4.pid"
  [ "$rc" -eq 0 ] || printf '%s\n' "$rc" >"$4.rc"
}

# rg_fabric_perftest PIDFILE LIMIT I TCP [WRAPPER ...] [-- SERVER]: in the subshell of one flow,
# names it in PIDFILE (rg_fabric_stop) and becomes ib_write_bw on port I's device and GID, TCP port TCP,
# bounded by LIMIT seconds (timeout keeps the pid); WRAPPER (stdbuf -oL) runs it, SERVER makes it
# the client. The ring's flows are verbs QPs with the class NCCL will ask for (rg_fabric_class);
# the incast's connect through RDMA-CM (-R, which every perftest has) with no ToS of their own, so
# the device's RDMA-CM default ToS and mode carry them as they carry every RDMA-CM application
# (MPI and UCX over rdma_cm, NVMe-oF, storage), and their port is RDMA-CM's, no TCP one. An
# RDMA-CM flow finds its device by address, not by -d: bound to the planned one where perftest
# can, else by the route to the peer (rails on one subnet may then leave by another port).
rg_fabric_perftest() {
  local pidfile=$1 limit=$2 i=$3 tcp=$4 server=""
  local -a wrap=() bind=() mem=()
  shift 4
  while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then
      server=${2-}
      break
    fi
    wrap+=("$1")
    shift
  done
  printf '%s\n' "$BASHPID" >"$pidfile"
  # Bound to the port's planned address: a server listens on the rail only, a client connects
  # from it (rg_fabric_probe).
  [ "$RG_FAB_BIND" != yes ] || bind=(--bind_source_ip "${RG_NIC_IP[i]%/*}")
  # The planned GPU's memory (rg_fabric_memory_plan); CUDA's own device order otherwise puts the
  # fastest first, and CUDA_VISIBLE_DEVICES renumbers.
  if [ "${RG_FAB_MEM[i]-}" = gpu ]; then
    read -r -a mem <<<"${RG_FAB_MEM_ARGS[i]}"
    unset CUDA_VISIBLE_DEVICES
    export CUDA_DEVICE_ORDER=PCI_BUS_ID
  fi
  if [ "$RG_FAB_STEP" = incast ]; then
    exec timeout -k 5 "$limit" ${wrap[@]+"${wrap[@]}"} ib_write_bw -d "${RG_NIC_IBDEV[i]}" -R \
      -F --report_gbits -D "$RG_FABRIC_SECONDS" ${bind[@]+"${bind[@]}"} ${mem[@]+"${mem[@]}"} \
      -p "$tcp" ${server:+"$server"}
  fi
  rg_fabric_class "$i"
  exec timeout -k 5 "$limit" ${wrap[@]+"${wrap[@]}"} ib_write_bw -d "${RG_NIC_IBDEV[i]}" -x "${RG_FAB_GID[i]}" \
    -F --report_gbits -D "$RG_FABRIC_SECONDS" ${RG_FAB_TC:+--tclass "$RG_FAB_TC"} ${bind[@]+"${bind[@]}"} \
    ${mem[@]+"${mem[@]}"} -p "$tcp" ${server:+"$server"}
}

# rg_fabric_probe: what this host's perftest can do, from its usage (one start of ib_write_bw a
# run). RG_FAB_BIND = yes when it has --bind_source_ip, which binds the handshake's TCP socket to
# one address (perftest 23.07 on, commit 8ff29c1; the perftest of Ubuntu 22.04 and RHEL 8 lacks it
# and refuses it as an invalid flag); without it a server listens on every address (security
# review 4, #13). RG_FAB_CUDA: perftest lists its CUDA options only when built with CUDA
# (perftest_parameters.c usage: cuda_memory_supported()); --use_cuda_bus_id since 4.4, else
# --use_cuda=INDEX. RG_FAB_DMABUF = yes when it lists --use_cuda_dmabuf (HAVE_CUDA_DMABUF).
rg_fabric_probe() {
  RG_FAB_BIND=no RG_FAB_CUDA=none RG_FAB_DMABUF=no
  rg_cap rg_x ib_write_bw --help || true
  [[ $RG_CAP != *--bind_source_ip* ]] || RG_FAB_BIND=yes
  if [[ $RG_CAP == *--use_cuda_bus_id* ]]; then
    RG_FAB_CUDA=bus
  elif [[ $RG_CAP == *--use_cuda=* ]]; then
    RG_FAB_CUDA=index
  fi
  [[ $RG_CAP != *--use_cuda_dmabuf* ]] || RG_FAB_DMABUF=yes
}

# rg_fabric_memory_plan: per port whose plan names a GPU (and gpu_direct is not `no`), the memory
# its flows move, as a training job's: the planned GPU's on both ends (each host's own flows
# take their port's), where perftest has CUDA and NCCL would use GPUDirect RDMA here (rg_gpu_route:
# without a peer-memory path or DMA-BUF, registering GPU memory fails, and NCCL stages it through
# host memory too); else host memory and why (fabric_memory warns). The GPU is named by its
# address where perftest takes one; by index it is CUDA's, in PCI order only with
# CUDA_DEVICE_ORDER=PCI_BUS_ID and no CUDA_VISIBLE_DEVICES (rg_fabric_perftest sets both).
rg_fabric_memory_plan() {
  local i spec
  RG_FAB_MEM=() RG_FAB_MEM_ARGS=() RG_FAB_MEM_GPU=() RG_FAB_MEM_WHY=()
  rg_gpu_planned || return 0
  rg_gpu_list
  rg_gpu_route
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_NIC_GPU[i]-}" ] || continue
    spec=${RG_NIC_GPU[i]%%,*}
    RG_FAB_MEM[i]=host RG_FAB_MEM_ARGS[i]="" RG_FAB_MEM_GPU[i]="" RG_FAB_MEM_WHY[i]=""
    if ! rg_gpu_resolve "$spec"; then
      RG_FAB_MEM_WHY[i]="its planned GPU is not here: $RG_WHY (gpu_pair)"
      continue
    fi
    RG_FAB_MEM_GPU[i]=$RG_V
    if [ "$RG_FAB_CUDA" = none ]; then
      RG_FAB_MEM_WHY[i]="this host's perftest is built without CUDA (its usage lists no --use_cuda): build it with CUDA (./configure CUDA_H_PATH=/usr/local/cuda/include/cuda.h) or install one that has it, as NVIDIA's DOCA-OFED perftest does"
    elif [ "$RG_GPU_ROUTE" = none ]; then
      RG_FAB_MEM_WHY[i]="GPU memory cannot be registered for RDMA here, and NCCL will not use GPUDirect RDMA either: $RG_GPU_ROUTE_WHY (gpu_direct)"
    elif [ "$RG_GPU_ROUTE" = dmabuf ] && [ "$RG_FAB_DMABUF" != yes ]; then
      RG_FAB_MEM_WHY[i]="GPUDirect RDMA goes through DMA-BUF here (no peer-memory module), and this host's perftest has no --use_cuda_dmabuf: install a perftest built with CUDA DMA-BUF support (4.5 or later)"
    else
      RG_FAB_MEM[i]=gpu
      if [ "$RG_FAB_CUDA" = bus ]; then
        RG_FAB_MEM_ARGS[i]="--use_cuda_bus_id=$RG_V"
      else
        RG_FAB_MEM_ARGS[i]="--use_cuda=$RG_GPU_INDEX"
      fi
      [ "$RG_GPU_ROUTE" != dmabuf ] || RG_FAB_MEM_ARGS[i]+=" --use_cuda_dmabuf"
    fi
  done
}

# rg_fabric_check_memory I: check fabric_memory (port): which memory port I's flows moved. Each
# flow that connected must show perftest's GPU buffer (cuda_memory.c: "allocated GPU buffer")
# when it was to move GPU memory; a flow that did not connect is fabric_peer's.
rg_fabric_check_memory() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} f flows=0 host=0 gpu
  [ -n "${RG_FAB_MEM[i]-}" ] || return 0
  gpu="GPU ${RG_NIC_GPU[i]%%,*}${RG_FAB_MEM_GPU[i]:+ (${RG_FAB_MEM_GPU[i]})}"
  [[ ${RG_NIC_GPU[i]%%,*} != *:* ]] || gpu="GPU ${RG_FAB_MEM_GPU[i]:-${RG_NIC_GPU[i]%%,*}}"
  if [ "${RG_FAB_MEM[i]}" = host ]; then
    rg_check fabric_memory "$dev" warn warning "$gpu" "host" "$dev's flows moved host memory, not the memory of $gpu as a training job's do: ${RG_FAB_MEM_WHY[i]}"
    return 0
  fi
  for f in "$RG_TMP"/fab.*."$i".cli "$RG_TMP"/fab.*."$i".srv*; do
    case $f in *.err | *.t | *.pid | *.rc | *'*'*) continue ;; esac
    rg_fabric_served "$f" || continue
    flows=$((flows + 1))
    grep -q '^allocated GPU buffer' "$f" || host=$((host + 1))
  done
  if [ "$flows" -eq 0 ]; then
    rg_check fabric_memory "$dev" skip warning "$gpu" "" "skipped: no flow of $dev connected (fabric_peer)"
  elif [ "$host" -gt 0 ]; then
    rg_check fabric_memory "$dev" warn warning "$gpu" "host" "$host of $dev's $flows flows showed no GPU buffer in perftest's output though asked for the memory of $gpu (${RG_FAB_MEM_ARGS[i]}): they moved host memory"
  else
    rg_check fabric_memory "$dev" pass error "$gpu" "$gpu" "$dev's $flows flows moved the memory of $gpu on this end (${RG_FAB_MEM_ARGS[i]}), as NCCL's GPUDirect RDMA does"
  fi
}

# rg_fabric_nccl_tc: RG_FAB_NCCL_TC = NCCL_IB_TC of the host's /etc/nccl.conf, the class NCCL asks
# for (empty: none; NCCL's default 0), and RG_FAB_NCCL_BAD what the line says when it is no class.
# NCCL reads the file itself (param.cc setEnvFile: `#` lines skipped, KEY=VALUE, the first of a
# key wins, the environment over the file) and puts the value on its QPs as the GRH traffic class.
rg_fabric_nccl_tc() {
  local line v=""
  RG_FAB_NCCL_TC="" RG_FAB_NCCL_BAD=""
  if [ -r "$RG_ROOT/etc/nccl.conf" ]; then
    while IFS= read -r line || [ -n "$line" ]; do
      case $line in
        NCCL_IB_TC=*)
          v=${line#NCCL_IB_TC=}
          v=${v%$'\r'}
          break
          ;;
      esac
    done <"$RG_ROOT/etc/nccl.conf"
  fi
  if [[ $v =~ ^[0-9]{1,3}$ ]] && ((10#$v <= 255)); then
    RG_FAB_NCCL_TC=$((10#$v))
  else
    RG_FAB_NCCL_BAD=${v:0:20}
  fi
}

# rg_fabric_class I: the traffic class port I's flows ask for (RG_FAB_TC, empty for none) and why
# (RG_FAB_TC_TEXT): the host's own default, so that the test proves it rather than a class it sets
# for itself (field review 4, finding 4). Where the device has OFED's traffic_class, that global
# class goes on every QP whatever it asks (main_ext.c tclass_get_tclass_locked), NCCL's included:
# the flows ask for nothing and it decides. Elsewhere (inbox) a QP has no default but what it asks
# for: the flows ask for NCCL's class, NCCL_IB_TC of /etc/nccl.conf, as NCCL will.
rg_fabric_class() {
  RG_FAB_TC=""
  if [ -e "$RG_ROOT/sys/class/infiniband/${RG_NIC_IBDEV[$1]}/tc/1/traffic_class" ]; then
    RG_FAB_TC_TEXT="the flows asked for no class: OFED's traffic_class of ${RG_NIC_IBDEV[$1]} decides, for them as for every verbs application, NCCL included"
  elif [ -n "$RG_FAB_NCCL_TC" ]; then
    RG_FAB_TC=$RG_FAB_NCCL_TC
    RG_FAB_TC_TEXT="the flows asked for traffic class $RG_FAB_TC, as NCCL will (NCCL_IB_TC of /etc/nccl.conf; this host has no default verbs class)"
  elif [ -n "$RG_FAB_NCCL_BAD" ]; then
    RG_FAB_TC_TEXT="the flows asked for no class, as NCCL cannot either: NCCL_IB_TC of /etc/nccl.conf is $RG_FAB_NCCL_BAD, no class 0-255"
  else
    RG_FAB_TC_TEXT="the flows asked for no class, as NCCL without NCCL_IB_TC (none in /etc/nccl.conf; this host has no default verbs class)"
  fi
}

# rg_fabric_stop: ends the flows of a fabric step still running (TERM to each one's timeout,
# which passes it to its perftest), for rg_cleanup: a fabric.sh stopped before its flows end
# leaves no server holding a TCP port that the next run binds (perftest's second bind fails).
rg_fabric_stop() {
  local f pid comm
  # First the step's own shells, so that no client is started anew.
  for pid in ${RG_FAB_BG[@]+"${RG_FAB_BG[@]}"}; do kill -TERM "$pid" 2>/dev/null || true; done
  [ -n "$RG_TMP" ] || return 0
  for f in "$RG_TMP"/fab.*.pid; do
    [ -f "$f" ] || continue
    { read -r pid <"$f"; } 2>/dev/null || continue
    rg_is_uint "$pid" || continue
    # Only a flow still running: its pid still a timeout's, never a number the system reused.
    { read -r comm <"/proc/$pid/comm"; } 2>/dev/null || continue
    [ "$comm" != timeout ] || kill -TERM "$pid" 2>/dev/null || true
  done
  return 0
}

# rg_fabric_stamp OUT TIMED: copies a server's report (stdin) to OUT and writes to OUT.t the epoch
# times its client's flow started ("start T": the remote address, which write_bw.c prints once the
# client has connected and the traffic begins) and ended ("end T": the row of the result table,
# printed once the client is done); "untimed" when the lines could not arrive as printed (TIMED
# not yes).
rg_fabric_stamp() {
  local line state=wait
  : >"$1"
  if [ "$2" != yes ]; then
    printf 'untimed\n' >"$1.t"
    cat >>"$1"
    return 0
  fi
  : >"$1.t"
  while IFS= read -r line || [ -n "$line" ]; do
    printf '%s\n' "$line" >>"$1"
    case $state:$line in
      wait:*'remote address:'*)
        printf 'start %s\n' "$(date +%s.%N)" >>"$1.t"
        state=run
        ;;
      run:*'#bytes'*) state=table ;;
      table:*[0-9]*)
        printf 'end %s\n' "$(date +%s.%N)" >>"$1.t"
        state=over
        ;;
    esac
  done
}

# rg_fabric_overlap FILE...: RG_V = the seconds (one decimal) during which at least two of the
# flows whose times the FILEs (rg_fabric_stamp's OUT.t) hold ran at once; empty when a file is
# "untimed". A flow without both times (it never ran) adds nothing.
rg_fabric_overlap() {
  RG_V=$(awk '
    FNR == 1 { k++ }
    $1 == "untimed" { untimed = 1 }
    $1 == "start" { s[k] = $2 }
    $1 == "end" { e[k] = $2 }
    END {
      if (untimed) exit
      # The events in time order; at equal times an end before a start.
      for (i = 1; i <= k; i++) if ((i in s) && (i in e) && e[i] > s[i]) {
        n++; t[n] = s[i]; d[n] = 1; n++; t[n] = e[i]; d[n] = -1
      }
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
        if (t[j] < t[i] || (t[j] == t[i] && d[j] < d[i])) { x = t[i]; t[i] = t[j]; t[j] = x; x = d[i]; d[i] = d[j]; d[j] = x }
      for (i = 1; i <= n; i++) { if (at >= 2) o += t[i] - t[i - 1]; at += d[i] }
      printf "%.1f\n", o
    }' "$@" 2>/dev/null) || RG_V=""
}

# rg_fabric_send I IP TCP DEADLINE OUT: connects to IP's server on TCP until it succeeds or the
# epoch second DEADLINE passes; the report in OUT, the errors in OUT.err, a failure's exit status
# in OUT.rc. Only a refused connection is tried again (the server may not listen yet): a client
# that failed after it connected took its server's one client, so its own words end the flow at
# once. Its time limit is its own, not tool_timeout: connected, it runs fabric_seconds, plus
# perftest's second after the connect and its setup. OUT.pid names its timeout while it runs.
rg_fabric_send() {
  local i=$1 now rc
  while :; do
    (rg_fabric_perftest "$5.pid" $((RG_FABRIC_SECONDS + 30)) "$i" "$3" -- "$2") >"$5" 2>"$5.err" && rc=0 || rc=$?
    rm -f "$5.pid"
    [ "$rc" -ne 0 ] || return 0
    printf '%s\n' "$rc" >"$5.rc"
    rg_fabric_refused "$5.err" || return 1
    now=$(date +%s)
    [ "$now" -lt "$4" ] || return 1
    sleep "$RG_FABRIC_RETRY"
  done
}

# rg_fabric_refused ERR: whether a client's errors (ERR) say that nothing listened: perftest's
# ethernet_client_connect prints "Couldn't connect to IP:PORT" (a library's warnings may come
# first); over RDMA-CM its rdma_client_connect prints the event that ended the connect: REJECTED
# (8: no listener on that RDMA-CM port, the peer's CM said so) or UNREACHABLE (7: no answer), or
# that the address never resolved ("Received 10 times ADDR_ERROR": the peer's address not up).
rg_fabric_refused() {
  local line
  while IFS= read -r line; do
    case $line in
      "Couldn't connect to "* | "Unexpected CM event bl blka 7" | "Unexpected CM event bl blka 8" | "Received "*" times ADDR_ERROR") return 0 ;;
    esac
  done <"$1"
  return 1
}

# rg_fabric_failure OUT: RG_V = how a flow that ran no traffic ended, when not for want of a peer
# (OUT is a client's report or a server's, .cli or .srvN, with OUT.err and OUT.rc beside it):
# "failed after it connected: ib_write_bw said ..." with perftest's own words, or for a client
# the time limit that stopped it; empty when it never connected (a server's own limit ends the
# wait for a client that never came).
rg_fabric_failure() {
  local line text="" rc=""
  RG_V=""
  { read -r rc <"$1.rc"; } 2>/dev/null || true
  case $rc in
    '' | 0) return 0 ;;
    124 | 137)
      [ "${1##*.}" = cli ] || return 0
      RG_V="did not end within $((RG_FABRIC_SECONDS + 30))s and was stopped (a connect that hangs, as behind a firewall that drops it, or a flow that never ends)"
      return 0
      ;;
  esac
  [ -s "$1.err" ] && ! rg_fabric_refused "$1.err" || return 0
  while IFS= read -r line; do
    line=${line#"${line%%[! ]*}"}
    [ -z "$line" ] || text+="${text:+; }$line"
  done <"$1.err"
  RG_V="failed after it connected: ib_write_bw said \"${text:0:300}\""
}

# rg_fabric_port_ok I: whether port I can take part (its device, netdev and GID are there);
# RG_FAB_WHY says why not.
rg_fabric_port_ok() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]}
  RG_FAB_WHY=""
  if [ ! -d "$RG_ROOT/sys/class/infiniband/$dev" ]; then
    RG_FAB_WHY="$dev is not on this host"
  elif [ ! -d "$RG_ROOT/sys/class/net/$ifc" ]; then
    RG_FAB_WHY="$ifc is not on this host"
  elif ! rg_find_gid "$i"; then
    RG_FAB_WHY="no RoCE v2 GID of $dev carries ${RG_NIC_IP[i]} (precheck's gid check)"
  else
    RG_FAB_GID[i]=$RG_V
    return 0
  fi
  return 1
}

# rg_fabric_step STEP: runs one traffic step (ring or incast) on every port at once and waits for
# it: servers and clients in the background, their reports in RG_TMP/fab.STEP.I.{srvN,cli},
# the counters before and after in RG_TMP/fab.STEP.I.{before,after}.
rg_fabric_step() {
  local step=$1 i k now deadline limit t
  local -a ips tcps
  RG_FAB_BG=() RG_FAB_STEP=$step
  now=$(date +%s)
  [ "$step" != ring ] || RG_FAB_T0=$now
  deadline=$((now + RG_FABRIC_WINDOW))
  # The incast waits as long from the ring step's start as both steps may take: a partner whose
  # ring step waited out its window for an absent peer of its own (a server: the window, the
  # duration and 5 s) comes that much later, and is then late, never "not reached" (field review
  # 4, finding 6). The whole run stays within the bound of two steps of a window each.
  [ "$step" = ring ] || deadline=$((RG_FAB_T0 + 2 * RG_FABRIC_WINDOW + RG_FABRIC_SECONDS + 5))
  RG_FAB_WAIT[${step}]=$((deadline - now))
  # A client may connect just before the window ends and then runs for the duration.
  limit=$((deadline - now + RG_FABRIC_SECONDS + 5))
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_FAB_GID[i]-}" ] || continue
    rg_fabric_counters "$i" >"$RG_TMP/fab.$step.$i.before"
  done
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_FAB_GID[i]-}" ] || continue
    if [ "$step" = ring ]; then
      if [ -n "${RG_FAB_FROM_TCP[i]-}" ]; then
        rg_fabric_serve "$i" "${RG_FAB_FROM_TCP[i]}" "$limit" "$RG_TMP/fab.$step.$i.srv0" &
        RG_FAB_BG+=($!)
      fi
      if [ -n "${RG_FAB_TO_TCP[i]-}" ]; then
        # shellcheck disable=SC2153 # RG_FAB_* are plan.sh's
        rg_fabric_send "$i" "${RG_FAB_TO_IP[i]}" "${RG_FAB_TO_TCP[i]}" "$deadline" "$RG_TMP/fab.$step.$i.cli" &
        RG_FAB_BG+=($!)
      fi
    else
      read -r -a tcps <<<"${RG_FAB_INC_TCP[i]-}"
      read -r -a ips <<<"${RG_FAB_INC_IPS[i]-}"
      case ${RG_FAB_INC_ROLE[i]-} in
        receiver)
          for ((k = 0; k < ${#tcps[@]}; k++)); do
            rg_fabric_serve "$i" "${tcps[k]}" "$limit" "$RG_TMP/fab.$step.$i.srv$k" &
            RG_FAB_BG+=($!)
          done
          ;;
        sender)
          rg_fabric_send "$i" "${ips[0]}" "${tcps[0]}" "$deadline" "$RG_TMP/fab.$step.$i.cli" &
          RG_FAB_BG+=($!)
          ;;
      esac
    fi
  done
  # Each flow's own status is in its report; the step waits for all of them.
  for t in ${RG_FAB_BG[@]+"${RG_FAB_BG[@]}"}; do wait "$t" || true; done
  RG_FAB_BG=()
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_FAB_GID[i]-}" ] || continue
    rg_fabric_counters "$i" >"$RG_TMP/fab.$step.$i.after"
    rg_fabric_delta "$RG_TMP/fab.$step.$i.before" "$RG_TMP/fab.$step.$i.after" >"$RG_TMP/fab.$step.$i.delta"
  done
  return 0
}

# rg_fabric_served FILE: whether a server's report shows a client connected (perftest prints the
# remote address once the handshake is done).
rg_fabric_served() { [ -f "$1" ] && grep -q '^ *remote address:' "$1"; }

# rg_fabric_client_ip FILE: RG_V = the IPv4 address of the client a server's report (FILE) served:
# the GID line after its `remote address:` line, which perftest prints byte by byte in decimal
# (`GID: 00:...:255:255:10:10:00:11`, an IPv4-mapped RoCE v2 GID); empty when it has none.
# perftest's server binds every address and takes the first client that connects (security
# review 4, #13): a client is the planned peer only if this is its address.
rg_fabric_client_ip() {
  local line seen=no
  RG_V=""
  [ -f "$1" ] || return 0
  while IFS= read -r line; do
    if [ "$seen" = yes ]; then
      if [[ $line =~ ^[[:space:]]*GID:[[:space:]]*(00:){10}255:255:([0-9]{1,3}):([0-9]{1,3}):([0-9]{1,3}):([0-9]{1,3})[[:space:]]*$ ]]; then
        RG_V=$((10#${BASH_REMATCH[2]})).$((10#${BASH_REMATCH[3]})).$((10#${BASH_REMATCH[4]})).$((10#${BASH_REMATCH[5]}))
      fi
      return 0
    fi
    [[ $line != *'remote address:'* ]] || seen=yes
  done <"$1"
}

# rg_fabric_prio_text DELTA DIR: RG_V = "prioN NN%" of the priorities that carried DIR (rx|tx)
# bytes, largest first; RG_FAB_TOTAL the bytes, RG_FAB_ON the RoCE priority's. Status 0 when the
# RoCE priority carried them (all but RG_FABRIC_OTHER_PCT).
rg_fabric_prio_text() {
  local line
  RG_V="" RG_FAB_TOTAL=0 RG_FAB_ON=0
  line=$(awk -v d="$2" -v want="$RG_ROCE_PRIO" '
    $1 ~ ("^" d "_prio[0-7]_bytes$") && $2 > 0 { p = substr($1, length(d) + 6, 1); b[p] = $2; t += $2 }
    END {
      printf "%.0f %.0f", t, (want in b ? b[want] : 0)
      n = 0; for (p in b) o[n++] = p
      for (x = 0; x < n; x++) for (y = x + 1; y < n; y++) if (b[o[y]] > b[o[x]]) { s = o[x]; o[x] = o[y]; o[y] = s }
      for (x = 0; x < n; x++) printf " prio%s:%d%%", o[x], int(b[o[x]] * 100 / t + 0.5)
    }' "$1")
  read -r RG_FAB_TOTAL RG_FAB_ON RG_V <<<"$line"
  RG_V=${RG_V//:/ }
  [ "$RG_FAB_TOTAL" -gt 0 ] && [ $((RG_FAB_ON * 100)) -ge $((RG_FAB_TOTAL * (100 - RG_FABRIC_OTHER_PCT))) ]
}

# rg_fabric_check_ring I: fabric_peer, fabric_bw, fabric_priority and fabric_loss of port I.
rg_fabric_check_ring() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} d="$RG_TMP/fab.ring.$1" rate speed need link
  local missing="" to="${RG_FAB_TO_HOST[$1]-} (${RG_FAB_TO_IP[$1]-}, TCP ${RG_FAB_TO_TCP[$1]-})"
  local from="${RG_FAB_FROM_HOST[$1]-} (${RG_FAB_FROM_IP[$1]-})" c v bad="" dir tx_ok=yes rx_ok=yes text="" want failed="" ran="tx rx" cm cm_ok=0
  RG_FAB_RATE[i]=""
  if [ -z "${RG_FAB_TO_HOST[i]-}" ]; then
    for want in fabric_peer fabric_bw fabric_priority fabric_loss; do
      # shellcheck disable=SC2153 # RG_FAB_* are plan.sh's
      rg_check "$want" "$dev" skip info "" "" "skipped: rail ${RG_FAB_RAIL[i]} has no other port to pair $dev with"
    done
    return 0
  fi
  if ! rate=$(rg_parse_perftest_bw <"$d.cli" 2>/dev/null); then
    rate=""
    rg_fabric_failure "$d.cli"
    if [ -n "$RG_V" ]; then
      failed="the flow to $to $RG_V"
    else
      missing="never reached $to within ${RG_FABRIC_WINDOW}s"
    fi
  fi
  if rg_fabric_served "$d.srv0"; then
    rg_fabric_client_ip "$d.srv0"
    if [ -n "$RG_V" ] && [ "$RG_V" != "${RG_FAB_FROM_IP[i]-}" ]; then
      # Another host took the server's one client slot: the planned peer was refused.
      failed+="${failed:+; }the flow into $dev came from $RG_V, not from $from: another host connected to TCP ${RG_FAB_FROM_TCP[i]-} first and took perftest's one client (a scan, another run, a host on another network), so $from was refused"
    fi
  else
    rg_fabric_failure "$d.srv0"
    if [ -n "$RG_V" ]; then
      failed+="${failed:+; }the flow from $from $RG_V"
    elif [ -n "${RG_FAB_FW[i]-}" ]; then
      # This host's own firewall refused it: the peer is not to blame.
      failed+="${failed:+; }$from never connected within ${RG_FABRIC_WINDOW}s: ${RG_FAB_FW[i]}"
    else
      missing+="${missing:+; }$from never connected within ${RG_FABRIC_WINDOW}s"
    fi
  fi
  if [ -n "$missing$failed" ]; then
    [ -z "$missing" ] || missing="$missing (is fabric.sh running there, is the peer's address up and routed over the rail, does a firewall there refuse the TCP port? its fabric_firewall check says)"
    [[ $failed != *"ib_write_bw said"* ]] || failed="$failed (perftest's words name the step: the path of the QP to the peer, its neighbour entry and GID for \"Unable to Connect the HCA's\", loss for \"run_iter_bw\", a version message for different perftest builds)"
    rg_check fabric_peer "$dev" fail error "sends to $to, serves $from" "" \
      "$dev: $failed${failed:+${missing:+; }}$missing"
  else
    rg_check fabric_peer "$dev" pass error "sends to $to, serves $from" "reached" \
      "$dev sent to ${RG_FAB_TO_HOST[i]} and served ${RG_FAB_FROM_HOST[i]}"
  fi
  # A flow is one QP, which leaves by one physical port (mlx5 gives a QP one port of a LAG, or
  # the port-selection hash does by its one 5-tuple): a bond's speed is its slaves' sum (bonding
  # bond_ethtool_get_link_ksettings), so a LAG's rate is judged against one slave's.
  rg_nic_ports "$i"
  for c in $REPLY; do
    speed=$(rg_read "/sys/class/net/$c/speed") || speed=""
    rg_is_uint "$speed" && [ "$speed" -gt 0 ] && break
  done
  rg_is_uint "$speed" || speed=0
  RG_FAB_SPEED[i]=$speed
  link="the $((speed / 1000)) Gb/s link"
  [ "$REPLY" = "$ifc" ] || link="one $((speed / 1000)) Gb/s port of $ifc (a flow is one QP, which leaves by one port)"
  if [ -z "$rate" ]; then
    rg_check fabric_bw "$dev" skip error "" "" "skipped: no traffic reached ${RG_FAB_TO_HOST[i]}"
  else
    RG_FAB_RATE[i]=$rate
    need=$(awk -v s="$speed" -v p="$RG_FABRIC_MIN_PCT" 'BEGIN { printf "%.2f", s / 1000 * p / 100 }')
    if awk -v r="$rate" -v n="$need" 'BEGIN { exit !(r + 0 >= n + 0 && n + 0 > 0) }'; then
      rg_check fabric_bw "$dev" pass error ">= $need Gb/s" "$rate Gb/s" \
        "$dev to ${RG_FAB_TO_HOST[i]}: $rate Gb/s, at least ${RG_FABRIC_MIN_PCT}% of $link ($need Gb/s)"
    else
      rg_check fabric_bw "$dev" fail error ">= $need Gb/s" "$rate Gb/s" \
        "$dev to ${RG_FAB_TO_HOST[i]}: $rate Gb/s measured, below the $need Gb/s expected (${RG_FABRIC_MIN_PCT}% of $link): a slow or lossy path between them (cable, optic, switch port, its buffers or ECMP)"
    fi
  fi
  rg_fabric_class "$i"
  # A direction whose flow never ran (fabric_peer names why) carried no bytes and is not judged.
  [ -n "$rate" ] || ran=${ran/tx/}
  rg_fabric_served "$d.srv0" || ran=${ran/rx/}
  for dir in tx rx; do
    if rg_fabric_prio_text "$d.delta" "$dir"; then
      text+="${text:+; }$dir: $RG_V"
    elif [ "$RG_FAB_TOTAL" -eq 0 ] && [[ $ran != *$dir* ]]; then
      text+="${text:+; }$dir: no flow ran"
    else
      [ "$dir" = tx ] && tx_ok=no || rx_ok=no
      text+="${text:+; }$dir: ${RG_V:-no bytes on any priority}"
    fi
  done
  # The incast's RDMA-CM flows: the device's RDMA-CM defaults, judged the same way.
  rg_fabric_prio_incast "$i" || cm_ok=1
  cm=$RG_V
  if [ -z "${ran// /}" ] && [ $tx_ok = yes ] && [ $rx_ok = yes ] && [ -z "$cm" ]; then
    rg_check fabric_priority "$dev" skip error "priority $RG_ROCE_PRIO" "" \
      "skipped: no flow of $dev ran (fabric_peer says why)"
  elif [ $tx_ok = yes ] && [ $rx_ok = yes ] && [ $cm_ok -eq 0 ]; then
    rg_check fabric_priority "$dev" pass error "priority $RG_ROCE_PRIO" "$text${cm:+; $cm}" \
      "$dev: the test's bytes rode priority $RG_ROCE_PRIO (ring: $text; $RG_FAB_TC_TEXT${cm:+; incast: $cm; $RG_FAB_CM_TEXT})"
  elif [ $tx_ok = yes ] && [ $rx_ok = yes ]; then
    rg_check fabric_priority "$dev" fail error "priority $RG_ROCE_PRIO" "$text; $cm" \
      "$dev: the incast's bytes did not ride priority $RG_ROCE_PRIO (incast: $cm; $RG_FAB_CM_TEXT), while the ring's did (ring: $text; $RG_FAB_TC_TEXT): $RG_FAB_CM_CAUSE"
  else
    rg_check fabric_priority "$dev" fail error "priority $RG_ROCE_PRIO" "$text${cm:+; $cm}" \
      "$dev: the test's bytes did not ride priority $RG_ROCE_PRIO (ring: $text; $RG_FAB_TC_TEXT${cm:+; incast: $cm; $RG_FAB_CM_TEXT}): $(rg_fabric_prio_cause "$d.delta" "$tx_ok" "${RG_FAB_FROM_HOST[i]-}")"
  fi
  rg_fabric_loss "$d.delta"
  if [ -n "$RG_FAB_BAD" ]; then
    rg_check fabric_loss "$dev" fail error "no loss" "$RG_FAB_BAD" \
      "$dev lost packets during the test ($RG_FAB_BAD): a priority that is not lossless end to end, or a faulty link${RG_FAB_NOTE:+; $RG_FAB_NOTE}"
  elif [ "$RG_FAB_READ" -eq 0 ]; then
    rg_check fabric_loss "$dev" skip warning "no loss" "" \
      "skipped: $dev has none of the loss counters: $RG_FAB_NOTE"
  elif [ -n "$RG_FAB_NOTE" ]; then
    rg_check fabric_loss "$dev" warn warning "no loss" "none read" \
      "$dev: no loss in the counters read, but the others are unknown: $RG_FAB_NOTE"
  else
    rg_check fabric_loss "$dev" pass error "no loss" "none" "$dev: no sequence errors or discards during the test"
  fi
}

# rg_fabric_prio_incast I: RG_V = what port I's incast flows over RDMA-CM carried ("tx: prio3
# 100%" for a sender, rx for a receiver; empty when they did not run),
# RG_FAB_CM_TEXT which class carried them, and status 1 with RG_FAB_CM_CAUSE when their bytes
# rode another priority than the RoCE one. The incast's own congestion does not move bytes between
# priorities, so the share is judged as the ring's.
rg_fabric_prio_incast() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} d="$RG_TMP/fab.incast.$1" dir k ran=no
  RG_V="" RG_FAB_CM_TEXT="" RG_FAB_CM_CAUSE=""
  [ "$RG_FABRIC_INCAST" = yes ] && [ -f "$d.delta" ] || return 0
  case ${RG_FAB_INC_ROLE[i]-} in
    sender)
      dir=tx
      ! rg_parse_perftest_bw <"$d.cli" >/dev/null 2>&1 || ran=yes
      ;;
    receiver)
      dir=rx
      for k in "$d".srv*; do
        case $k in *.srv[0-9] | *.srv[0-9][0-9]) rg_fabric_served "$k" && ran=yes ;; esac
      done
      ;;
    *) return 0 ;;
  esac
  [ "$ran" = yes ] || return 0
  RG_FAB_CM_TEXT="the incast's flows connected through RDMA-CM with no ToS of their own: the RDMA-CM default ToS and RoCE mode of each sender's device decide, as for every RDMA-CM application"
  [ ! -e "$RG_ROOT/sys/class/infiniband/$dev/tc/1/traffic_class" ] ||
    RG_FAB_CM_TEXT+=" (on OFED, traffic_class overrides the ToS where it is set)"
  if rg_fabric_prio_text "$d.delta" "$dir"; then
    RG_V="$dir: $RG_V"
    return 0
  fi
  RG_V="$dir: ${RG_V:-no bytes on any priority}"
  if [ "$dir" = tx ]; then
    RG_FAB_CM_CAUSE="the RDMA-CM default of $dev is not the plan's: ToS $RG_ROCE_TOS in RoCE v2 mode, which apply sets in /sys/kernel/config/rdma_cm/$dev/ports/1 (checks roce_tos, roce_mode) and a driver reload or a restart of the RDMA stack resets to ToS 0; run apply.sh again"
    # Unbound, the flow left by the port of the route to its partner, which may not be this one.
    [ "$RG_FAB_BIND" = yes ] || RG_FAB_CM_CAUSE+="; or, as this perftest cannot bind an address (no --bind_source_ip), the flow left by the port the route to its partner names, not $dev"
  else
    RG_FAB_CM_CAUSE="what its incast senders sent arrived on another priority: their RDMA-CM default ToS or mode (their own fabric_priority says) or the trust and DSCP map of this port (checks trust, dscp2prio)"
  fi
  return 1
}

# rg_fabric_prio_cause DELTA [TX_OK PEER]: what a person checks when the bytes rode another
# priority; with TX_OK yes only what PEER sent did.
rg_fabric_prio_cause() {
  local p
  p=$(awk '$1 ~ /^(rx|tx)_prio[0-7]_bytes$/ && $2 > m { m = $2; p = substr($1, 8, 1) } END { print p }' "$1")
  if [ -z "$p" ]; then
    printf 'the counters show no per-priority bytes (is ethtool -S reporting rx_prioN_bytes?)'
  elif [ "${2-}" = yes ]; then
    # What this host sent rode the RoCE priority: the bytes that did not came from its peer.
    printf 'what %s sent arrived on priority %s: the class it sends with (its own fabric_priority says) or the trust and DSCP map of this port (checks trust, dscp2prio)' "${3:-the peer}" "$p"
  else
    printf 'most bytes went on priority %s; a port in PCP trust puts untagged RoCE on priority 0 and a DSCP map sends DSCP %s elsewhere: run apply.sh on this host and its peer' "$p" "$RG_ROCE_DSCP"
    # No class asked: the packets carry the host's default class, DSCP 0 where none is set.
    [ -n "$RG_FAB_TC" ] || printf '; with no class asked the packets carry DSCP 0 unless the host sets a default class: apply sets OFED'"'"'s traffic_class and NCCL_IB_TC in /etc/nccl.conf (checks traffic_class, nccl_conf), which a driver reload or another tool may have undone'
  fi
}

# rg_fabric_check_incast I: fabric_congestion of port I after the incast step. Missing ECN marks
# or CNPs are a fault only where the senders are known to have run at once: the receiver times
# its flows (rg_fabric_overlap) and fails only when they overlapped for RG_FABRIC_OVERLAP_PCT of
# fabric_seconds; a sender sees its own flow alone, so it fails for no CNP handled only when the
# switch paused it on the RoCE priority (its receiver was congested), and warns otherwise. A
# sender is also the only end that can see PFC at work: CNPs handled without a pause received
# warn that PFC was not exercised (field review 4, finding 5).
rg_fabric_check_incast() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} d="$RG_TMP/fab.incast.$1.delta" role=${RG_FAB_INC_ROLE[$1]-}
  local marks cnp_sent cnp_handled bad="" weak="" c v p missing="" failed="" k need overlap pause status sev
  local -a hosts tcps times=()
  if [ "$RG_FABRIC_INCAST" != yes ]; then
    return 0
  fi
  if [ -z "$role" ] || [ ! -f "$d" ]; then
    rg_check fabric_congestion "$dev" skip info "" "" "skipped: rail ${RG_FAB_RAIL[i]} has fewer than 3 ports, so no incast step"
    return 0
  fi
  read -r -a hosts <<<"${RG_FAB_INC_HOSTS[i]-}"
  read -r -a tcps <<<"${RG_FAB_INC_TCP[i]-}"
  if [ "$role" = receiver ]; then
    for ((k = 0; k < ${#tcps[@]}; k++)); do
      times+=("$RG_TMP/fab.incast.$i.srv$k.t")
      rg_fabric_served "$RG_TMP/fab.incast.$i.srv$k" && continue
      rg_fabric_failure "$RG_TMP/fab.incast.$i.srv$k"
      if [ -n "$RG_V" ]; then
        failed+="${failed:+; }the flow from ${hosts[k]} $RG_V"
      else
        missing+="${missing:+, }${hosts[k]}"
      fi
    done
  elif ! rg_parse_perftest_bw <"$RG_TMP/fab.incast.$i.cli" >/dev/null 2>&1; then
    rg_fabric_failure "$RG_TMP/fab.incast.$i.cli"
    if [ -n "$RG_V" ]; then
      failed="the flow to ${hosts[0]} $RG_V"
    else
      missing=${hosts[0]}
    fi
  fi
  # A partner this host's own firewall refused: the firewall is named, not the partner.
  # A partner never reached is absent or late, which the ring step's fabric_peer of its own ring
  # neighbours names: here it only leaves congestion unproven (warn). A flow that failed after
  # it connected is a fault of this flow (fail).
  [ -z "$missing" ] || missing="$missing not reached in the incast's ${RG_FAB_WAIT[incast]-$RG_FABRIC_WINDOW} s (it waits until both steps' windows from this host's ring step have passed: absent, or still waiting in its ring step for a peer of its own; the fabric_peer check of its ring neighbours names an absent host), so the incast proved nothing about congestion here"
  if [ -n "$failed" ]; then
    rg_check fabric_congestion "$dev" fail error "ECN marks and CNPs" "" \
      "$dev: the incast step did not run: $failed${missing:+; $missing}"
    return 0
  elif [ -n "$missing" ]; then
    rg_check fabric_congestion "$dev" warn warning "ECN marks and CNPs" "" \
      "$dev: the incast step did not run with $missing"
    return 0
  fi
  rg_fabric_loss "$d"
  bad=$RG_FAB_BAD
  # The congestion counters the role is judged by: absent (no cc_query_allowed), the step shows
  # nothing about ECN here; loss still fails.
  c="np_ecn_marked_roce_packets np_cnp_sent"
  [ "$role" = receiver ] || c=rp_cnp_handled
  missing=""
  for v in $c; do rg_fabric_val "$d" "$v" || missing+=" $v"; done
  if [ -n "$missing" ] && [ -z "$bad" ]; then
    rg_fabric_unread "$missing"
    rg_check fabric_congestion "$dev" skip warning "ECN marks and CNPs" "" \
      "skipped: the incast step ($role) cannot show ECN at work on $dev: $RG_V"
    return 0
  fi
  marks=$(rg_fabric_get "$d" np_ecn_marked_roce_packets)
  cnp_sent=$(rg_fabric_get "$d" np_cnp_sent)
  cnp_handled=$(rg_fabric_get "$d" rp_cnp_handled)
  for p in 0 1 2 3 4 5 6 7; do
    v=$(($(rg_fabric_get "$d" "rx_prio${p}_pause") + $(rg_fabric_get "$d" "tx_prio${p}_pause")))
    [ "$v" -gt 0 ] || continue
    # RG_PFC is 0,0,0,1,…: the priority's own position.
    if [ "$(printf '%s' "$RG_PFC" | cut -d, -f$((p + 1)))" != 1 ]; then
      bad+="${bad:+, }pause on lossy priority $p +$v"
    fi
  done
  need=$(awk -v s="$RG_FABRIC_SECONDS" -v p="$RG_FABRIC_OVERLAP_PCT" 'BEGIN { printf "%.1f", s * p / 100 }')
  if [ "$role" = receiver ]; then
    rg_fabric_overlap ${times[@]+"${times[@]}"}
    overlap=$RG_V
    RG_FAB_INC_OVERLAP[i]=$overlap
    if [ "$marks" -eq 0 ] || [ "$cnp_sent" -eq 0 ]; then
      c="ECN-marked packets +$marks and CNPs sent +$cnp_sent while ${RG_FAB_INC_HOSTS[i]// /, } sent"
      if [ "$marks" -gt 0 ]; then
        # The marks show the switch saw congestion, however long the senders overlapped.
        bad+="${bad:+, }$c (is ECN on for priority $RG_ROCE_PRIO here, ecn/roce_np/enable/$RG_ROCE_PRIO?)"
      elif [ -z "$overlap" ]; then
        weak+="${weak:+, }$c, but when they sent is not known (stdbuf, of coreutils, is missing: perftest's lines come only at its end), so this does not prove a fault: install coreutils' stdbuf and run fabric.sh again"
      elif awk -v o="$overlap" -v n="$need" 'BEGIN { exit !(o + 0 < n + 0) }'; then
        weak+="${weak:+, }$c, but the senders did not overlap: ${overlap} s of ${RG_FABRIC_SECONDS} s (congestion needs at least $need s at once); start fabric.sh on every host at the same time (the Ansible play's phase=fabric) and run it again"
      else
        bad+="${bad:+, }$c at once for ${overlap} s of ${RG_FABRIC_SECONDS} s (is ECN on for priority $RG_ROCE_PRIO here, ecn/roce_np/enable/$RG_ROCE_PRIO, and on the switch?)"
      fi
    fi
  else
    pause=$(rg_fabric_get "$d" "rx_prio${RG_ROCE_PRIO}_pause")
    if [ "$cnp_handled" -gt 0 ] && [ "$pause" -eq 0 ] && [ -z "$bad" ]; then
      # ECN at work proves the congestion, but only a pause proves that the switch's queue for
      # the RoCE priority is lossless: marks and CNPs come as well from a lossy queue with ECN.
      weak+="${weak:+, }PFC was not exercised: the switch marked and slowed this port (CNPs handled) but never paused it on priority $RG_ROCE_PRIO, so nothing here shows that the switch keeps priority $RG_ROCE_PRIO lossless (a queue without PFC but with ECN looks the same until it drops): check PFC on priority $RG_ROCE_PRIO on ${RG_NIC_SWITCH[i]:-the switch}${RG_NIC_SWITCH_PORT[i]:+ port ${RG_NIC_SWITCH_PORT[i]}} and its DSCP $RG_ROCE_DSCP to queue map"
    elif [ "$cnp_handled" -eq 0 ] && [ "$pause" -gt 0 ]; then
      bad+="${bad:+, }no CNP handled while sharing ${hosts[0]}, though the switch paused this port (+$pause pause frames on priority $RG_ROCE_PRIO: the receiver was congested; its ECN, or this port's roce_rp/enable/$RG_ROCE_PRIO, is off)"
    elif [ "$cnp_handled" -eq 0 ]; then
      weak+="${weak:+, }no CNP handled while sharing ${hosts[0]} and no pause received: nothing shows that the other sender ran at the same time (a sender sees only its own flow); ${hosts[0]}'s fabric_congestion says whether the senders overlapped"
    fi
  fi
  RG_FAB_INC_SEEN[i]="marks $marks, cnp_sent $cnp_sent, cnp_handled $cnp_handled"
  if [ "$role" = receiver ]; then
    RG_FAB_INC_SEEN[i]+=", overlap ${overlap:-unknown} s"
  else
    RG_FAB_INC_SEEN[i]+=", pause received $pause"
  fi
  if [ -n "$bad" ]; then
    status=fail sev=error
    c="$bad${weak:+; $weak}"
  elif [ -n "$weak" ]; then
    status=warn sev=warning
    c=$weak
  else
    rg_check fabric_congestion "$dev" pass error "ECN marks and CNPs, pause only on lossless priorities, no loss" "${RG_FAB_INC_SEEN[i]}" \
      "$dev in the incast step ($role): ${RG_FAB_INC_SEEN[i]}, pause only on lossless priorities, no loss"
    return 0
  fi
  rg_check fabric_congestion "$dev" "$status" "$sev" "ECN marks and CNPs, pause only on lossless priorities, no loss" \
    "${RG_FAB_INC_SEEN[i]}" "$dev in the incast step ($role): $c"
}

# rg_fabric_json_delta FILE: a delta file as a JSON object (only counters that moved).
rg_fabric_json_delta() {
  if [ ! -f "$1" ]; then
    printf 'null'
    return 0
  fi
  awk 'BEGIN { printf "{" } $2 ~ /^[0-9]+$/ && $2 != 0 { printf "%s\"%s\":%.0f", s, $1, $2; s = "," } END { printf "}" }' "$1"
}

# rg_fabric_facts: the result's `fabric` facts member (through RG_FACTS_MORE): the window and
# each port's peers, rate and counter deltas.
rg_fabric_facts() {
  local i dev sep=""
  printf '"fabric":{"window":%s,"seconds":%s,"min_pct":%s,"incast":%s,"ports":{' "$RG_FABRIC_WINDOW" \
    "$RG_FABRIC_SECONDS" "$RG_FABRIC_MIN_PCT" "$([ "$RG_FABRIC_INCAST" = yes ] && echo true || echo false)"
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    dev=${RG_NIC_IBDEV[i]}
    rg_json_fmt '%s%s:{"netdev":%s,"rail":%s,"to":%s,"to_ip":%s,"to_tcp":%s,"from":%s,"from_ip":%s,"gid_index":%s,"speed_mbps":%s,"gbps":%s,"memory":%s,"gpu":%s,"ring":%s,"incast_role":%s,"incast_peers":%s,"incast_overlap":%s,"incast":%s}' \
      r "$sep" s "$dev" s "${RG_NIC_NETDEV[i]}" s "${RG_FAB_RAIL[i]-}" \
      s "${RG_FAB_TO_HOST[i]-}" s "${RG_FAB_TO_IP[i]-}" n "${RG_FAB_TO_TCP[i]-}" \
      s "${RG_FAB_FROM_HOST[i]-}" s "${RG_FAB_FROM_IP[i]-}" \
      n "${RG_FAB_GID[i]-}" n "${RG_FAB_SPEED[i]-}" n "${RG_FAB_RATE[i]-}" \
      s "${RG_FAB_MEM[i]-}" s "${RG_FAB_MEM_GPU[i]-}" \
      r "$(rg_fabric_json_delta "$RG_TMP/fab.ring.$i.delta")" s "${RG_FAB_INC_ROLE[i]-}" \
      s "${RG_FAB_INC_HOSTS[i]-}" n "${RG_FAB_INC_OVERLAP[i]-}" \
      r "$(rg_fabric_json_delta "$RG_TMP/fab.incast.$i.delta")"
    printf '%s' "$REPLY"
    sep=","
  done
  printf '}}'
}

# rg_fabric: the whole test: each port's part, the ring step, the incast step, the checks.
rg_fabric() {
  local i dev any=no
  RG_FAB_GID=() RG_FAB_RATE=() RG_FAB_SPEED=() RG_FAB_INC_SEEN=() RG_FAB_INC_OVERLAP=()
  # The result's facts get the fabric member (lib-probe.sh's list).
  RG_FACTS_MORE+=" rg_fabric_facts"
  if ! rg_has ib_write_bw; then
    rg_perftest_how
    rg_check fabric_tool "" fail error ib_write_bw "" \
      "ib_write_bw is not installed: install the package perftest ($RG_V), then run fabric.sh again"
    return 0
  fi
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    dev=${RG_NIC_IBDEV[i]}
    if rg_fabric_port_ok "$i"; then
      any=yes
    else
      rg_check fabric_peer "$dev" fail error "" "" "$dev cannot take part in the fabric test: $RG_FAB_WHY"
    fi
  done
  [ "$any" = yes ] || return 0
  rg_fabric_probe
  rg_fabric_memory_plan
  rg_check_firewall "its flows fail fabric_peer"
  rg_fabric_nccl_tc
  rg_log "fabric: ring step (${RG_FABRIC_SECONDS}s a flow, peers awaited up to ${RG_FABRIC_WINDOW}s)"
  rg_fabric_step ring
  if [ "$RG_FABRIC_INCAST" = yes ]; then
    rg_log "fabric: incast step (two or more senders to one receiver)"
    rg_fabric_step incast
  fi
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_FAB_GID[i]-}" ] || continue
    rg_fabric_check_ring "$i"
    rg_fabric_check_incast "$i"
    rg_fabric_check_memory "$i"
  done
  rg_nccl_run
}

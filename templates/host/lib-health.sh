# shellcheck shell=bash
# lib-health.sh, part of lib.sh: live health. health.sh (run by the cluster's health timer every
# health_interval seconds) writes node_exporter's textfile <health_textfile_dir>/roce-gen-
# <cluster>.prom: per planned port the RoCE counters as the driver counts them, the link and the
# optics, every drift_interval seconds whether each planned setting still reads as planned, and
# whether a firmware value waits for a reboot. A run reads sysfs and `ethtool` (one `ethtool -S`
# and one `ethtool -m` per port); the drift check reads the settings through lib-settings.sh's
# readers (at most one mlnx_qos per port). It never writes a NIC setting. Apply installs the
# timer (rg_health_install, from rg_persist), rollback removes it (rg_health_remove).
# The names of the series are documented in docs/monitoring.md and stable.

# The hw_counters exported (mlx5_ib counters.c: basic_q_cnts, out_of_seq_q_cnts,
# retrans_q_cnts, extended_err_cnts, roce_accl_cnts, cong_cnts), as
# roce_gen_health_rdma_events_total{counter="<file name>"}; a file the host lacks is left out.
RG_HEALTH_HW="out_of_buffer out_of_sequence duplicate_request rnr_nak_retry_err packet_seq_err implied_nak_seq_err local_ack_timeout_err resp_local_length_error resp_cqe_error req_cqe_error req_remote_invalid_request req_remote_access_errors resp_remote_access_errors resp_cqe_flush_error req_cqe_flush_error roce_adp_retrans roce_adp_retrans_to roce_slow_restart roce_slow_restart_cnps roce_slow_restart_trans rp_cnp_ignored rp_cnp_handled np_ecn_marked_roce_packets np_cnp_sent"

# The families, in the order the file lists them: name, type, help.
RG_HM_FAMILIES=(
  "roce_gen_health_run_timestamp_seconds gauge When this health run wrote the file (Unix time)."
  "roce_gen_health_run_ok gauge 1 when the run read every planned port, 0 when one was missing or unreadable."
  "roce_gen_health_reboot_required gauge 1 when the last apply set firmware values that wait for a reboot not yet done."
  "roce_gen_health_port_present gauge 1 when the planned RDMA device and netdev exist."
  "roce_gen_health_link_up gauge 1 when the netdev's operstate is up."
  "roce_gen_health_link_speed_bytes_per_second gauge The link speed (sysfs speed), absent while the link is down."
  "roce_gen_health_priority_bytes_total counter Bytes per priority (ethtool -S rx/tx_prioN_bytes)."
  "roce_gen_health_priority_packets_total counter Packets per priority (ethtool -S rx/tx_prioN_packets)."
  "roce_gen_health_priority_pause_frames_total counter PFC pause frames per priority (ethtool -S rx/tx_prioN_pause), only for priorities with PFC on."
  "roce_gen_health_priority_discards_total counter Received packets discarded per priority (ethtool -S rx_prioN_discards, _buf_discard, _cong_discard)."
  "roce_gen_health_priority_ecn_marked_packets_total counter Received packets ECN-marked per priority (ethtool -S rx_prioN_marked)."
  "roce_gen_health_global_pause_frames_total counter 802.3x pause frames (ethtool -S rx/tx_global_pause), only while global pause is on."
  "roce_gen_health_mac_pause_frames_total counter MAC control pause frames of the port (ethtool -S rx/tx_pause_ctrl_phy)."
  "roce_gen_health_port_discards_total counter Packets the port discarded (ethtool -S rx/tx_discards_phy)."
  "roce_gen_health_pause_storm_events_total counter Pause storm events of the stall watchdog (ethtool -S tx_pause_storm_warning/error_events)."
  "roce_gen_health_link_down_events_total counter Times the physical link went down (ethtool -S link_down_events_phy)."
  "roce_gen_health_rdma_events_total counter RDMA counters of the port (hw_counters)."
  "roce_gen_health_module_temperature_celsius gauge The optical module's temperature (ethtool -m)."
  "roce_gen_health_module_temperature_high_celsius gauge The module's high temperature warning threshold (else 70)."
  "roce_gen_health_module_rx_power_dbm gauge Receive power per lane (ethtool -m), -Inf for a dark lane."
  "roce_gen_health_module_rx_power_low_dbm gauge The module's low receive power warning threshold (else -10)."
  "roce_gen_health_module_rx_power_high_dbm gauge The module's high receive power warning threshold (else 5)."
  "roce_gen_health_drift gauge 1 when a planned setting no longer reads as planned, 0 when it does."
  "roce_gen_health_drift_unread gauge 1 for a planned setting the drift check could not read (its log says why)."
  "roce_gen_health_drift_check_timestamp_seconds gauge When the drift series were last read (Unix time)."
  "roce_gen_health_gpu_direct gauge 1 when NCCL will use GPUDirect RDMA on this host (a peer-memory path its version looks for, or DMA-BUF), 0 when not; only where the plan names GPUs."
)

# The series of this run by family, and the family of each saved drift line.
declare -A RG_HM=()
RG_HEALTH_SERVICE=""
RG_HEALTH_TIMER=""
RG_HEALTH_PROM=""
RG_HEALTH_STATE=""
RG_HEALTH_OK=1
RG_HEALTH_FORCE_DRIFT=no

# rg_health_names: the units, the textfile and the state folder of this cluster (from plan.sh).
rg_health_names() {
  RG_HEALTH_SERVICE="roce-gen-health-$RG_CLUSTER.service"
  RG_HEALTH_TIMER="roce-gen-health-$RG_CLUSTER.timer"
  RG_HEALTH_PROM="$RG_ROOT$RG_HEALTH_TEXTFILE_DIR/roce-gen-$RG_CLUSTER.prom"
  RG_HEALTH_STATE="$RG_STATE_DIR/health"
}

# rg_hl_esc VALUE: REPLY = VALUE as a Prometheus label value (\, " and newline escaped).
rg_hl_esc() {
  REPLY=${1//\\/\\\\}
  REPLY=${REPLY//\"/\\\"}
  REPLY=${REPLY//$'\n'/\\n}
}

# rg_hm FAMILY LABELS VALUE: one series of this run.
rg_hm() {
  RG_HM[$1]+="$1{$2} $3"$'\n'
}

# rg_health_text: REPLY = the textfile: each family that has a series, with its HELP and TYPE,
# in the order of RG_HM_FAMILIES (without the last newline, which rg_write_file adds).
rg_health_text() {
  local f name type help
  REPLY=""
  for f in ${RG_HM_FAMILIES[@]+"${RG_HM_FAMILIES[@]}"}; do
    name=${f%% *} f=${f#* }
    type=${f%% *} help=${f#* }
    [ -n "${RG_HM[$name]:-}" ] || continue
    REPLY+="# HELP $name $help"$'\n'"# TYPE $name $type"$'\n'"${RG_HM[$name]}"
  done
  REPLY=${REPLY%$'\n'}
}

# rg_health_ethtool LABELS: the counters of `ethtool -S` on stdin as series. mlx5 names them in
# en_stats.c; some kernels print a name with a trailing space (`tx_pause_storm_warning_events `):
# read splits at the colon and the blanks around it. A hundred lines a port: the name is matched
# first and nothing else is done for the lines not exported (plain builtins, no function call).
rg_health_ethtool() {
  local l=$1 name v rest dir fam lab
  while IFS=$' \t:' read -r name v rest; do
    dir=${name%%_*}
    case $name in
      [rt]x_prio[0-7]_bytes) fam=priority_bytes_total lab=",direction=\"$dir\",priority=\"${name:7:1}\"" ;;
      [rt]x_prio[0-7]_packets) fam=priority_packets_total lab=",direction=\"$dir\",priority=\"${name:7:1}\"" ;;
      [rt]x_prio[0-7]_pause) fam=priority_pause_frames_total lab=",direction=\"$dir\",priority=\"${name:7:1}\"" ;;
      rx_prio[0-7]_discards | rx_prio[0-7]_buf_discard | rx_prio[0-7]_cong_discard)
        fam=priority_discards_total lab=",priority=\"${name:7:1}\",kind=\"${name:9}\""
        ;;
      rx_prio[0-7]_marked) fam=priority_ecn_marked_packets_total lab=",priority=\"${name:7:1}\"" ;;
      [rt]x_global_pause) fam=global_pause_frames_total lab=",direction=\"$dir\"" ;;
      [rt]x_pause_ctrl_phy) fam=mac_pause_frames_total lab=",direction=\"$dir\"" ;;
      [rt]x_discards_phy) fam=port_discards_total lab=",direction=\"$dir\"" ;;
      tx_pause_storm_warning_events) fam=pause_storm_events_total lab=',level="warning"' ;;
      tx_pause_storm_error_events) fam=pause_storm_events_total lab=',level="error"' ;;
      link_down_events_phy) fam=link_down_events_total lab="" ;;
      *) continue ;;
    esac
    case $v in '' | *[!0-9]*) continue ;; esac
    [ -z "$rest" ] || continue
    RG_HM[roce_gen_health_$fam]+="roce_gen_health_$fam{$l$lab} $v"$'\n'
  done
}

# rg_health_labels I: RG_HEALTH_LABELS[I], the labels of planned port I's series: cluster, host,
# RDMA device, netdev (the host's name for it) and rail (the plan's rail column, else its
# subnet's ring: plan.sh's RG_FAB_RAIL).
RG_HEALTH_LABELS=()
# The labels of each module rg_health_port read ($RG_TMP/module.KEY): KEY the port's index, or
# INDEX-N for the Nth slave of a LAG port.
declare -A RG_HEALTH_MODULE_LABELS=()
rg_health_labels() {
  local l
  rg_hl_esc "${RG_NIC_IBDEV[$1]}"
  l="$RG_HEALTH_BASE,nic=\"$REPLY\""
  rg_hl_esc "${RG_NIC_NETDEV[$1]}"
  l+=",netdev=\"$REPLY\""
  rg_hl_esc "${RG_FAB_RAIL[$1]:-}"
  RG_HEALTH_LABELS[$1]="$l,rail=\"$REPLY\""
}

# rg_health_port I: the series of planned port I but its optics (rg_health_optics reads those of
# every port at once: $RG_TMP/module.I is its `ethtool -m`); RG_HEALTH_OK=0 when it is missing or
# its counters cannot be read. Reads into variables and files, not through $(...): each fork of
# this shell costs about a millisecond.
rg_health_port() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} l c v s k=0 RG_V
  rg_health_labels "$i"
  l=${RG_HEALTH_LABELS[$i]}
  if [ ! -d "$RG_ROOT/sys/class/net/$ifc" ] || [ ! -d "$RG_ROOT/sys/class/infiniband/$dev" ]; then
    rg_hm roce_gen_health_port_present "$l" 0
    RG_HEALTH_OK=0
    return 0
  fi
  rg_hm roce_gen_health_port_present "$l" 1
  rg_health_link "$ifc" "$l"
  # hw_counters: each a firmware query, so all of the port's in one child under the time limit
  # (one fork per port, not per file); a wedged port leaves them out and the run says so.
  # shellcheck disable=SC2086 # one word per counter name
  if rg_bounded read "/sys/class/infiniband/$dev/ports/1/hw_counters/" rg_io_counters \
    "$RG_ROOT/sys/class/infiniband/$dev/ports/1/hw_counters" $RG_HEALTH_HW; then
    while read -r c v; do
      case $v in '' | *[!0-9]*) continue ;; esac
      RG_HM[roce_gen_health_rdma_events_total]+="roce_gen_health_rdma_events_total{$l,counter=\"$c\"} $v"$'\n'
    done <<<"$RG_IO_OUT"
  else
    RG_HEALTH_OK=0
    rg_log "warning: the RDMA counters of $dev could not be read: ${RG_IO_OUT:0:200}"
  fi
  rg_has ethtool || {
    RG_HEALTH_OK=0
    rg_log "warning: ethtool is not installed: the counters and optics of $ifc are left out"
    return 0
  }
  if ! rg_is_lag "$i"; then
    rg_health_netdev "$ifc" "$l" "$i"
    return 0
  fi
  # A bond has no port counters or optic (bonding has no ethtool statistics or module ops):
  # a LAG port's are each slave's, its series labelled with the slave's netdev.
  for s in ${RG_NIC_SLAVES[i]}; do
    k=$((k + 1))
    RG_NIC_NETDEV[i]=$s
    rg_health_labels "$i"
    RG_NIC_NETDEV[i]=$ifc
    if [ ! -d "$RG_ROOT/sys/class/net/$s" ]; then
      RG_HEALTH_OK=0
      rg_log "warning: $s, a slave of $ifc, is not on this host: its counters and optics are left out"
      continue
    fi
    rg_health_link "$s" "${RG_HEALTH_LABELS[$i]}"
    rg_health_netdev "$s" "${RG_HEALTH_LABELS[$i]}" "$i-$k"
  done
  RG_HEALTH_LABELS[i]=$l
  return 0
}

# rg_health_link IF LABELS: IF's link state and speed as series.
rg_health_link() {
  local RG_V
  rg_read_v "/sys/class/net/$1/operstate" || RG_V=""
  if [ "$RG_V" = up ]; then rg_hm roce_gen_health_link_up "$2" 1; else rg_hm roce_gen_health_link_up "$2" 0; fi
  rg_read_v "/sys/class/net/$1/speed" || RG_V=""
  if rg_is_uint "$RG_V" && [ "$RG_V" -gt 0 ]; then
    rg_hm roce_gen_health_link_speed_bytes_per_second "$2" "$((RG_V * 125000))"
  fi
}

# rg_health_netdev IF LABELS KEY: IF's `ethtool -S` counters as series, and its module read into
# $RG_TMP/module.KEY for rg_health_optics (labelled LABELS).
rg_health_netdev() {
  if rg_x ethtool -S "$1" >"$RG_TMP/stats" 2>/dev/null; then
    rg_health_ethtool "$2" <"$RG_TMP/stats"
  else
    RG_HEALTH_OK=0
    rg_log "warning: ethtool -S $1 could not be read: its counters are left out"
  fi
  # No module access (a DAC, a module without EEPROM pages): no optics series.
  RG_HEALTH_MODULE_LABELS[$3]=$2
  rg_x ethtool -m "$1" >"$RG_TMP/module.$3" 2>/dev/null || rm -f "$RG_TMP/module.$3"
}

# rg_health_optics: the optics series of every port whose module was read (rg_health_port's
# $RG_TMP/module.I), through one rg_optics_awk (lib-probe.sh) for them all, each module's lines
# as rg_probe_optics reads them (rg_optics_set).
rg_health_optics() {
  local f files=() i="" k v text="" line
  for f in "$RG_TMP"/module.*; do [ -s "$f" ] && files+=("$f"); done
  [ ${#files[@]} -gt 0 ] || return 0
  while IFS= read -r line; do
    k=${line%%$'\t'*} v=${line#*$'\t'}
    if [ "$k" = module ]; then
      [ -z "$i" ] || rg_health_module "$i" "$text"
      i=${v##*.} text=""
    else
      text+="$line"$'\n'
    fi
  done < <(rg_optics_awk "" ${files[@]+"${files[@]}"})
  [ -z "$i" ] || rg_health_module "$i" "$text"
}

# rg_health_module KEY LINES: the optics series of module KEY (rg_health_netdev) from
# rg_optics_awk's LINES of it.
rg_health_module() {
  local l=${RG_HEALTH_MODULE_LABELS[$1]} v lane=0 limits
  rg_optics_clear
  rg_optics_set <<<"$2"
  # shellcheck disable=SC2153 # rg_optics_set (lib-probe.sh) sets the RG_P_OPT_* values
  rg_is_num "$RG_P_OPT_TEMP" && rg_hm roce_gen_health_module_temperature_celsius "$l" "$RG_P_OPT_TEMP"
  for v in $RG_P_OPT_RX; do
    lane=$((lane + 1))
    if [ "$v" = -inf ]; then
      rg_hm roce_gen_health_module_rx_power_dbm "$l,lane=\"$lane\"" -Inf
    elif rg_is_num "$v"; then
      rg_hm roce_gen_health_module_rx_power_dbm "$l,lane=\"$lane\"" "$v"
    fi
  done
  # The thresholds the optics check uses: temp_hi tx_lo tx_hi rx_lo rx_hi.
  read -r -a limits <<<"$RG_P_OPT_LIMITS"
  [ ${#limits[@]} -eq 5 ] || return 0
  rg_is_num "${limits[0]}" && rg_hm roce_gen_health_module_temperature_high_celsius "$l" "${limits[0]}"
  if [ -n "$RG_P_OPT_RX" ]; then
    rg_is_num "${limits[3]}" && rg_hm roce_gen_health_module_rx_power_low_dbm "$l" "${limits[3]}"
    rg_is_num "${limits[4]}" && rg_hm roce_gen_health_module_rx_power_high_dbm "$l" "${limits[4]}"
  fi
  return 0
}

# rg_health_drift I: one drift series per planned setting of port I that this host can read:
# 1 when it no longer reads as planned. A planned setting it cannot read has a drift_unread series
# instead (1), so that an unread setting is seen, not silent. The RDMA-CM defaults are read as
# apply reads them (rg_get_cm: cma_roce_tos, or configfs mkdir, read, rmdir): apply leaves no
# device folder there (it pins rdma_cm, which a driver restart must unload), and a driver reload,
# the event that zeroes them, would remove it anyway.
rg_health_drift() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} l id want s
  # A RoCE LAG: the per-port settings on each slave (its series name the slave), the rest on the bond.
  if [ -z "$RG_LAG_PORT" ] && rg_is_lag "$i"; then
    for s in ${RG_NIC_SLAVES[i]}; do
      RG_LAG_PORT=$s
      RG_NIC_NETDEV[i]=$s
      rg_health_labels "$i"
      rg_health_drift "$i"
      RG_NIC_NETDEV[i]=$ifc
      RG_LAG_PORT=""
    done
    rg_health_labels "$i"
  fi
  l=${RG_HEALTH_LABELS[$i]}
  [ -d "$RG_ROOT/sys/class/net/$ifc" ] && [ -d "$RG_ROOT/sys/class/infiniband/$dev" ] || return 0
  for id in $RG_SETTINGS; do
    rg_applies "$id" || continue
    rg_lag_wants "$id" "$i" || continue
    rg_planned "$id" "$i"
    want=$REPLY
    [ -n "$want" ] || continue
    rg_supported "$id" "$i" || continue
    if ! rg_get "$id" "$i"; then
      rg_hm roce_gen_health_drift_unread "$l,setting=\"$id\"" 1
      rg_log "drift: $id of $dev could not be read: $RG_V"
      continue
    fi
    if [ "$RG_V" = "$want" ]; then
      rg_hm roce_gen_health_drift "$l,setting=\"$id\"" 0
    else
      rg_hm roce_gen_health_drift "$l,setting=\"$id\"" 1
      rg_log "drift: $id of $dev is ${RG_V:-unset}, the plan says $want"
    fi
  done
}

# rg_health_gpu_drift: the drift of the PCIe settings apply makes on the GPU paths (pcie_acs =
# disable, pcie_mrrs): after a reset or a reboot without the boot unit the kernel turns ACS on
# again. Read as precheck reads them (rg_gpu_path: one pass over configuration space); a port
# whose configuration space reads short (no CAP_SYS_ADMIN) is unread, never "as planned".
rg_health_gpu_drift() {
  local i id
  rg_gpu_planned || return 0
  [ "$RG_PCIE_ACS" = disable ] || [ -n "$RG_PCIE_MRRS" ] || return 0
  rg_gpu_path
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_NIC_GPU[i]-}" ] || continue
    rg_health_labels "$i"
    for id in pcie_acs pcie_mrrs; do
      [ "$id" != pcie_acs ] || [ "$RG_PCIE_ACS" = disable ] || continue
      [ "$id" != pcie_mrrs ] || [ -n "$RG_PCIE_MRRS" ] || continue
      if rg_status_is "$id" "${RG_NIC_IBDEV[i]}" skip; then
        rg_hm roce_gen_health_drift_unread "${RG_HEALTH_LABELS[$i]},setting=\"$id\"" 1
        rg_log "drift: $id of ${RG_NIC_IBDEV[i]} could not be read: configuration space reads only its first 64 bytes without CAP_SYS_ADMIN"
      elif { [ "$id" = pcie_acs ] && [ -n "${RG_GPU_ACS_FIX[i]-}" ]; } || { [ "$id" = pcie_mrrs ] && [ -n "${RG_GPU_MRRS_FIX[i]-}" ]; }; then
        rg_hm roce_gen_health_drift "${RG_HEALTH_LABELS[$i]},setting=\"$id\"" 1
        rg_log "drift: $id of ${RG_NIC_IBDEV[i]} no longer reads as planned"
      else
        rg_hm roce_gen_health_drift "${RG_HEALTH_LABELS[$i]},setting=\"$id\"" 0
      fi
    done
  done
}

# rg_health_apply_running: true while an apply or rollback holds the run lock (its settings are
# in flux then, so the drift check waits for the next run).
rg_health_apply_running() {
  local lock="$RG_ROOT/run/roce-gen-run.lock" old="$RG_ROOT/run/roce-gen.lock" owner
  if [ -L "$old" ]; then
    # The lock of an older bundle: a link naming its owner.
    owner=$(readlink "$old" 2>/dev/null) || owner=""
    owner=${owner#pid:}
    if [[ $owner =~ ^[0-9]+$ ]] && kill -0 "$owner" 2>/dev/null; then return 0; fi
  fi
  # Held when a shared lock cannot be had at once (rg_lock holds it exclusively).
  [ -f "$lock" ] && rg_has flock && ! flock -n -s "$lock" true 2>/dev/null
}

# rg_health_reboot_required: REPLY = 1 when the last apply left firmware values for the next
# boot and the host has not booted since (the marker holds the boot id of the apply's boot).
rg_health_reboot_required() {
  local mark="" now=""
  [ ! -r "$RG_HEALTH_STATE/reboot-required" ] || IFS= read -r mark <"$RG_HEALTH_STATE/reboot-required" || true
  [ ! -r "$RG_ROOT/proc/sys/kernel/random/boot_id" ] || IFS= read -r now <"$RG_ROOT/proc/sys/kernel/random/boot_id" || true
  if [ -n "$mark" ] && [ "$mark" = "$now" ]; then REPLY=1; else REPLY=0; fi
}

# rg_health_main ARGS: health.sh. --drift checks the drift now, whatever the interval.
rg_health_main() {
  local a i now last="" line fam drift=no saved plan_sum="" tmpd
  for a in "$@"; do
    case $a in
      --drift) RG_HEALTH_FORCE_DRIFT=yes ;;
      -v | --verbose)
        # shellcheck disable=SC2034 # rg_step (lib.sh) reads it
        RG_VERBOSE=yes
        ;;
      -h | --help)
        printf 'usage: health.sh [--drift] [-v|--verbose]\n'
        return 0
        ;;
      *)
        rg_log "error: unknown argument $a"
        rg_log "usage: health.sh [--drift] [-v|--verbose]"
        exit 2
        ;;
    esac
  done
  rg_health_names
  umask 022
  # A temporary folder for rg_bounded's time limits on driver files.
  tmpd=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-health.XXXXXX") || rg_die "cannot create a temporary folder"
  # shellcheck disable=SC2034 # rg_bounded (lib.sh) reads it
  RG_TMP=$tmpd
  # shellcheck disable=SC2064 # the folder of this run
  trap "rm -rf '$tmpd'" EXIT
  printf -v now '%(%s)T' -1
  rg_hl_esc "$RG_CLUSTER"
  RG_HEALTH_BASE="cluster=\"$REPLY\""
  rg_hl_esc "$RG_HOST"
  RG_HEALTH_BASE+=",host=\"$REPLY\""
  [ -d "$RG_HEALTH_STATE" ] || mkdir -p "$RG_HEALTH_STATE" || rg_die "cannot create $RG_HEALTH_STATE"
  # A planned netdev the host calls otherwise (renamed, an altname, found by PCI address and
  # MAC) is read under the host's name, which the netdev label then carries; a bond's slaves are
  # found with it.
  rg_resolve_netdevs
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    if [ "${RG_NIC_NETDEV[i]}" != "${RG_NIC_PLANNED[i]}" ]; then
      rg_step "${RG_NIC_PLANNED[i]} is ${RG_NIC_NETDEV[i]} on this host (${RG_NIC_FOUND_BY[i]:-found})"
    elif [ -n "${RG_NIC_NOT_FOUND[i]:-}" ]; then
      rg_log "warning: ${RG_NIC_PLANNED[i]} is not on this host: ${RG_NIC_NOT_FOUND[i]}"
    fi
    rg_health_port "$i"
  done
  rg_health_optics
  # The drift check every drift_interval (or when asked); between checks its last series stay,
  # unless the plan has changed since.
  [ ! -r "$RG_HEALTH_STATE/drift.time" ] || IFS= read -r last <"$RG_HEALTH_STATE/drift.time" || true
  rg_is_uint "$last" || last=0
  if [ "$RG_HEALTH_FORCE_DRIFT" = yes ] || [ $((now - last)) -ge "$RG_DRIFT_INTERVAL" ]; then
    if rg_health_apply_running; then
      rg_log "apply or rollback is running: the drift check waits for the next run"
    else
      drift=yes
    fi
  fi
  if [ "$drift" = yes ]; then
    for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
      rg_health_drift "$i"
    done
    rg_health_gpu_drift
    rg_hm roce_gen_health_drift_check_timestamp_seconds "$RG_HEALTH_BASE" "$now"
    saved=$(printf '%s\n%s' "$RG_PLAN_SHA256" "${RG_HM[roce_gen_health_drift]:-}${RG_HM[roce_gen_health_drift_unread]:-}${RG_HM[roce_gen_health_drift_check_timestamp_seconds]}")
    rg_write_file "$RG_HEALTH_STATE/drift.prom" "$saved" || rg_log "warning: cannot save the drift check in $RG_HEALTH_STATE"
    rg_write_file "$RG_HEALTH_STATE/drift.time" "$now" || true
  elif [ -r "$RG_HEALTH_STATE/drift.prom" ]; then
    {
      IFS= read -r plan_sum || true
      if [ "$plan_sum" = "$RG_PLAN_SHA256" ]; then
        while IFS= read -r line; do
          fam=${line%%\{*}
          case $fam in
            roce_gen_health_drift | roce_gen_health_drift_unread | roce_gen_health_drift_check_timestamp_seconds) RG_HM[$fam]+="$line"$'\n' ;;
          esac
        done
      fi
    } <"$RG_HEALTH_STATE/drift.prom"
  fi
  rg_health_reboot_required
  rg_hm roce_gen_health_reboot_required "$RG_HEALTH_BASE" "$REPLY"
  # Whether NCCL will use GPUDirect RDMA: a peer-memory module gone after a driver upgrade shows
  # at the next run (file reads only).
  if rg_gpu_planned; then
    # The drift check's rg_gpu_path has decided it already.
    [ -n "$RG_GPU_ROUTE" ] || rg_gpu_direct_check
    if [ "$RG_GPU_ROUTE" = none ]; then
      rg_hm roce_gen_health_gpu_direct "$RG_HEALTH_BASE" 0
    else
      rg_hm roce_gen_health_gpu_direct "$RG_HEALTH_BASE" 1
    fi
  fi
  rg_hm roce_gen_health_run_ok "$RG_HEALTH_BASE" "$RG_HEALTH_OK"
  rg_hm roce_gen_health_run_timestamp_seconds "$RG_HEALTH_BASE" "$now"
  # Written beside and renamed (rg_write_file): the temporary name is a new hidden one,
  # .roce-gen-CLUSTER.prom.XXXXXX, never *.prom, so node_exporter (which reads every *.prom) never
  # sees half a file, and a link planted in a folder others can write is never written through.
  rg_health_text
  if ! rg_write_file "$RG_HEALTH_PROM" "$REPLY"; then
    rg_log "error: cannot write ${RG_HEALTH_PROM#"$RG_ROOT"}"
    exit 2
  fi
  rg_step "wrote $RG_HEALTH_PROM"
}

# --- the timer, installed by apply and removed by rollback --------------------------------------

# rg_health_unit_file UNIT: its path under the root.
rg_health_unit_file() { printf '%s/etc/systemd/system/%s' "$RG_ROOT" "$1"; }

# rg_health_mark_reboot: the marker the health run reads for reboot_required: this boot's id
# when apply left firmware values for the next boot, else none.
rg_health_mark_reboot() {
  local id=""
  [ "$RG_DRY_RUN" = no ] || return 0
  if [ "${RG_REBOOT_REQUIRED:-no}" = yes ] && [ -r "$RG_ROOT/proc/sys/kernel/random/boot_id" ] &&
    IFS= read -r id <"$RG_ROOT/proc/sys/kernel/random/boot_id"; then
    if ! { mkdir -p "$RG_HEALTH_STATE" && rg_write_file "$RG_HEALTH_STATE/reboot-required" "$id"; }; then
      rg_log "warning: cannot record in $RG_HEALTH_STATE that a reboot is pending"
    fi
  else
    rm -f "$RG_HEALTH_STATE/reboot-required"
  fi
}

# rg_health_installed: true when both units are this bundle's and the timer is enabled.
rg_health_installed() {
  cmp -s "$(rg_health_unit_file "$RG_HEALTH_SERVICE")" "$RG_DIR/roce-gen-health.service" &&
    cmp -s "$(rg_health_unit_file "$RG_HEALTH_TIMER")" "$RG_DIR/roce-gen-health.timer" &&
    systemctl is-enabled "$RG_HEALTH_TIMER" >/dev/null 2>&1
}

# rg_io_counters DIR NAME...: "NAME VALUE" for each counter file of DIR that reads (rg_bounded's
# child: plain reads, no process per file); a counter the port lacks is left out.
rg_io_counters() {
  local dir=$1 c v
  shift
  for c in "$@"; do
    [ -r "$dir/$c" ] || continue
    v=""
    { IFS= read -r v <"$dir/$c"; } 2>/dev/null || [ -n "$v" ] || continue
    printf '%s %s\n' "$c" "$v"
  done
}

# rg_health_writable: whether the health service can write RG_HEALTH_TEXTFILE_DIR; RG_V says why
# not. The service runs as root without CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH (its
# CapabilityBoundingSet), so the kernel checks the mode bits as for any user: the owner's when
# root owns the folder, the group's when root's group does, else the others' (ACLs aside). The
# folder needs write and search, every folder above it search; one apply creates is root's. A
# textfile folder as node_exporter's Ansible role makes it (its user's, 0775) fails this.
rg_health_writable() {
  local p=$RG_HEALTH_TEXTFILE_DIR uid gid mode user group want bits
  local -a up=()
  RG_V=""
  while [ -n "$p" ] && [ "$p" != / ]; do
    [ ! -e "$RG_ROOT$p" ] || up+=("$RG_ROOT$p")
    p=${p%/*}
  done
  [ ${#up[@]} -gt 0 ] || return 0
  while read -r uid gid mode user group p; do
    want=1
    [ "$p" != "$RG_ROOT$RG_HEALTH_TEXTFILE_DIR" ] || want=3
    if [ "$uid" = 0 ]; then
      bits=$(((8#$mode >> 6) & 7))
    elif [ "$gid" = 0 ]; then
      bits=$(((8#$mode >> 3) & 7))
    else
      bits=$((8#$mode & 7))
    fi
    [ $((bits & want)) -ne "$want" ] || continue
    [ "$want" = 3 ] && want="write" || want="enter"
    RG_V="the health service cannot $want ${p#"$RG_ROOT"}: it belongs to $user:$group (uid $uid, gid $gid, mode $mode), and the service runs as root without CAP_DAC_OVERRIDE (its sandbox), for which only root's own, root's group's or everyone's bits count; give the folder to root (chown root ${p#"$RG_ROOT"}: node_exporter only reads the file, which is world-readable) or set health_textfile_dir to a folder root owns"
    return 1
  done < <(stat -c '%u %g %a %U %G %n' -- ${up[@]+"${up[@]}"} 2>/dev/null)
  return 0
}

# rg_health_first_run: the service's first run, waited for: true when it wrote the textfile;
# RG_V says why not. The timer's start has queued that run already (OnBootSec= has passed); this
# start merges into it and returns when health.sh has exited (a oneshot's start job lasts as long
# as its ExecStart), so the check is what the service did under its own sandbox, not a guess.
rg_health_first_run() {
  local t0 mtime=0
  # A dry run: the step printed (rg_do), nothing known of its outcome.
  [ "$RG_DRY_RUN" = no ] || { rg_do systemctl start "$RG_HEALTH_SERVICE"; return 0; }
  printf -v t0 '%(%s)T' -1
  rg_progress "waiting for the first health run ($RG_HEALTH_SERVICE)"
  if rg_do systemctl start "$RG_HEALTH_SERVICE" && [ -f "$RG_HEALTH_PROM" ] &&
    mtime=$(stat -c %Y -- "$RG_HEALTH_PROM" 2>/dev/null) && [ "$mtime" -ge "$t0" ]; then
    return 0
  fi
  rg_health_writable && RG_V="its first run did not write ${RG_HEALTH_PROM#"$RG_ROOT"}${RG_DO_OUT:+ (${RG_DO_OUT:0:200})}: see journalctl -u $RG_HEALTH_SERVICE"
  return 1
}

# rg_health_install: check `health`. Apply installs the service and its timer (rg_persist, once
# the bundle is installed: the service runs the installed health.sh), creates the textfile
# folder and starts the timer, which runs the first health run at once (OnBootSec= has passed):
# apply waits for that run and checks that it wrote the textfile.
# With health = no it installs nothing and removes what an earlier plan installed.
rg_health_install() {
  local svc tmr
  rg_health_names
  svc=$(rg_health_unit_file "$RG_HEALTH_SERVICE") tmr=$(rg_health_unit_file "$RG_HEALTH_TIMER")
  rg_health_mark_reboot
  if [ "$RG_HEALTH" != yes ]; then
    if [ -e "$svc" ] || [ -e "$tmr" ]; then
      rg_health_remove
    else
      rg_check health "" skip info no "" "the plan says health = no: no health timer"
    fi
    return 0
  fi
  if rg_health_installed; then
    if ! rg_health_writable; then
      rg_check health "" warn warning installed "cannot write" "$RG_HEALTH_TIMER is installed, but $RG_V"
      return 0
    fi
    # No textfile yet (a folder fixed since, say): a run now, waited for, says whether it writes
    # (a dry run prints that start: rg_do).
    if [ ! -f "$RG_HEALTH_PROM" ] && ! rg_health_first_run; then
      rg_check health "" warn warning installed "not written" "$RG_HEALTH_TIMER is installed, but $RG_V"
      return 0
    fi
    rg_check health "" pass info installed installed "$RG_HEALTH_TIMER runs health.sh every ${RG_HEALTH_INTERVAL}s into $RG_HEALTH_TEXTFILE_DIR"
    return 0
  fi
  # A dry run takes the same steps (rg_do prints them), so it lists what apply runs.
  if ! { rg_do mkdir -p "$RG_ROOT$RG_HEALTH_TEXTFILE_DIR" "$RG_HEALTH_STATE" &&
    rg_do cp "$RG_DIR/roce-gen-health.service" "$svc" &&
    rg_do cp "$RG_DIR/roce-gen-health.timer" "$tmr" &&
    rg_do systemctl daemon-reload; }; then
    rg_check health "" fail error installed "" "could not install $RG_HEALTH_TIMER (see the log above)"
    return 0
  fi
  if ! rg_do systemctl enable "$RG_HEALTH_TIMER" || ! rg_do systemctl start "$RG_HEALTH_TIMER"; then
    rg_check health "" fail error installed "" "systemctl could not enable and start $RG_HEALTH_TIMER: ${RG_DO_OUT:0:200}"
    return 0
  fi
  if [ "$RG_DRY_RUN" = yes ]; then
    # The first run apply waits for, as a step.
    rg_do systemctl start "$RG_HEALTH_SERVICE"
    rg_health_writable || RG_V="; but $RG_V"
    rg_check_action health "" warn info installed "" "dry run: would install and start $RG_HEALTH_TIMER (health.sh every ${RG_HEALTH_INTERVAL}s into $RG_HEALTH_TEXTFILE_DIR)$RG_V" \
      "absent → installed ($RG_HEALTH_TIMER)"
    return 0
  fi
  # Installed either way: once the cause is fixed, the timer's next run writes the file.
  if ! rg_health_first_run; then
    rg_check health "" warn warning installed "not written" "installed and started $RG_HEALTH_TIMER, but $RG_V"
    return 0
  fi
  rg_check_action health "" changed info installed installed "installed and started $RG_HEALTH_TIMER: health.sh every ${RG_HEALTH_INTERVAL}s into $RG_HEALTH_TEXTFILE_DIR/roce-gen-$RG_CLUSTER.prom" \
    "absent → installed ($RG_HEALTH_TIMER)"
}

# rg_health_remove: check `health` of rollback (and of an apply whose plan says health = no):
# stops and removes the timer and its service, the textfile and the health state.
rg_health_remove() {
  local svc tmr
  rg_health_names
  svc=$(rg_health_unit_file "$RG_HEALTH_SERVICE") tmr=$(rg_health_unit_file "$RG_HEALTH_TIMER")
  if [ ! -e "$svc" ] && [ ! -e "$tmr" ] && [ ! -e "$RG_HEALTH_PROM" ]; then
    return 0
  fi
  if [ "$RG_DRY_RUN" = yes ]; then
    rg_check_action health "" warn info absent "" "dry run: would stop and remove $RG_HEALTH_TIMER and ${RG_HEALTH_PROM#"$RG_ROOT"}" \
      "installed → absent ($RG_HEALTH_TIMER)"
    return 0
  fi
  rg_do systemctl disable "$RG_HEALTH_TIMER" || true
  rg_do systemctl stop "$RG_HEALTH_TIMER" "$RG_HEALTH_SERVICE" || true
  rg_do rm -f "$svc" "$tmr" "$RG_HEALTH_PROM" || true
  rg_do rm -rf "$RG_HEALTH_STATE" || true
  rg_do systemctl daemon-reload || true
  if [ -e "$svc" ] || [ -e "$tmr" ] || [ -e "$RG_HEALTH_PROM" ]; then
    rg_check health "" fail error absent installed "could not remove $RG_HEALTH_TIMER, its service or ${RG_HEALTH_PROM#"$RG_ROOT"}"
  else
    rg_check_action health "" changed info absent absent "stopped and removed $RG_HEALTH_TIMER, its service and ${RG_HEALTH_PROM#"$RG_ROOT"}" \
      "installed → absent ($RG_HEALTH_TIMER)"
  fi
}

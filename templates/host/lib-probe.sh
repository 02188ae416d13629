# shellcheck shell=bash
# lib-probe.sh, part of lib.sh: facts for monitoring (optics, link, PCIe, counters, LLDP
# neighbour, DCBX owner), the checks on them (read-only), and the facts object of a result.
# rg_probe I gathers, for a NIC whose devices exist, the transceiver (ethtool -m), the link
# (sysfs speed, ethtool's lanes and fastest supported mode), the PCIe link (sysfs), the RoCE
# health counters (hw_counters, ethtool -S pause counters) and the LLDP neighbour (lldpd's
# lldpcli, else lldpad's lldptool). It leaves the values in RG_P_* for the checks and the NIC's
# facts JSON in RG_M_FACTS[I]; the result's facts reuse it, so every tool runs once per NIC.
RG_M_FACTS=()
# Who owns DCBX per NIC (os or fw), as the dcbx check saw it or apply and rollback left it.
RG_DCBX_SEEN=()

# Defaults when a module states no warning thresholds: the commercial temperature range, and a
# power window that every RoCE optic (SR4/DR4/FR4) sits well inside.
RG_OPTICS_TEMP_HI=70
RG_OPTICS_DBM_LO=-10
RG_OPTICS_DBM_HI=5

# The counters recorded as a baseline: RDMA retransmission and congestion (hw_counters), and
# pause frames (ethtool -S: global, and of the RoCE priority).
RG_HW_COUNTERS="out_of_sequence packet_seq_err local_ack_timeout_err roce_adp_retrans np_cnp_sent np_ecn_marked_roce_packets rp_cnp_handled"

# rg_gts10 "16.0 GT/s PCIe": the speed in tenths of GT/s (160), or nothing when unreadable.
rg_gts10() {
  local n=${1%% *} whole frac
  [[ $n =~ ^([0-9]+)(\.([0-9]))?[0-9]*$ ]] || return 0
  whole=${BASH_REMATCH[1]}
  frac=${BASH_REMATCH[3]:-0}
  printf '%s' "$((10#$whole * 10 + frac))"
}

# rg_optics_awk LANES: reads `ethtool -m` (SFF-8636 or CMIS layout) and prints tab-separated
# lines: vendor, pn, temp, one tx and one rx per used lane (dBm), the thresholds it used, and one
# `problem` line per value outside them. Lanes are numbered by the `(Channel N)` label, never by
# line order: a CMIS module prints 8 channels per bank whether or not they are used, so only the
# first LANES channels (the link's lane count) are read; without it, the channels up to the last
# lit one. The module's own warning thresholds win over the defaults when it states sane ones.
# With FILEs (one module's printout each) it reads them all in one awk: each module's lines
# follow a `module<TAB>FILE` line.
rg_optics_awk() {
  local lanes=${1:-0}
  [ $# -eq 0 ] || shift
  awk -v lanes="$lanes" -v temp_hi="$RG_OPTICS_TEMP_HI" -v lo="$RG_OPTICS_DBM_LO" -v hi="$RG_OPTICS_DBM_HI" '
    function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
    function dbm(v,  n, a) { n = split(v, a, "/"); v = trim(a[n]); sub(/[ \t]*dBm$/, "", v); return v }
    function num(v) { return v ~ /^-?[0-9]+(\.[0-9]+)?$/ }
    function chan(k) { sub(/.*\(Channel[ \t]*/, "", k); sub(/\).*/, "", k); return k + 0 }
    function check(kind, lane, v, low, high,  name) {
      name = kind " power lane " lane
      if (v == "-inf") { print "problem\t" name " has no light (-inf dBm)"; return }
      if (!num(v)) return
      if (v + 0 < low + 0) print "problem\t" name " " v " dBm is below " low " dBm"
      else if (v + 0 > high + 0) print "problem\t" name " " v " dBm is above " high " dBm"
    }
    function remember(c) { if (!(c in seen)) { seen[c] = 1; chans[++nch] = c } }
    FNR == 1 { if (NR > 1) report(); start(); cur = FILENAME }
    {
      i = index($0, ":"); if (i == 0) next
      k = trim(substr($0, 1, i - 1)); v = trim(substr($0, i + 1))
      if (k == "Vendor name") vendor = v
      else if (k == "Vendor PN") pn = v
      else if (k == "Module temperature") { split(v, a, " "); temp = a[1] }
      else if (k ~ /^Transmit avg optical power ?\(Channel [0-9]+\)$/) { c = chan(k); tx[c] = dbm(v); remember(c) }
      else if (k ~ /^Rcvr signal avg optical power ?\(Channel [0-9]+\)$/) { c = chan(k); rx[c] = dbm(v); remember(c) }
      else if (k ~ /^Receiver signal OMA ?\(Channel [0-9]+\)$/) { c = chan(k); oma[c] = dbm(v); remember(c) }
      else if (k == "Module temperature high warning threshold") { split(v, a, " "); t_hi = a[1] }
      else if (k == "Laser output power low warning threshold") tx_lo = dbm(v)
      else if (k == "Laser output power high warning threshold") tx_hi = dbm(v)
      else if (k == "Laser rx power low warning threshold") rx_lo = dbm(v)
      else if (k == "Laser rx power high warning threshold") rx_hi = dbm(v)
    }
    function start() {
      split("", seen); split("", chans); split("", tx); split("", rx); split("", oma)
      nch = 0; vendor = pn = temp = t_hi = tx_lo = tx_hi = rx_lo = rx_hi = ""; temp_hi = temp_hi0
    }
    BEGIN { temp_hi0 = temp_hi }
    END { report() }
    function report(  x, y, c, used, tlo, thi, rlo, rhi) {
      if (cur != "" && cur != "-") print "module\t" cur
      # Channels in numeric order (some tools count from 0), then the used ones.
      for (x = 2; x <= nch; x++) { c = chans[x]; for (y = x - 1; y >= 1 && chans[y] > c; y--) chans[y + 1] = chans[y]; chans[y + 1] = c }
      # A module without monitoring (passive copper) prints a temperature of 0.00 and stops
      # before any channel line (qsfp.c, sff8636_show_dom): no diagnostics, not 0 C.
      if (nch == 0 && temp + 0 == 0) temp = ""
      used = lanes + 0
      if (used <= 0) for (x = 1; x <= nch; x++) if ((chans[x] in tx && tx[chans[x]] != "-inf") || (chans[x] in rx && rx[chans[x]] != "-inf")) used = x
      if (used > nch) used = nch
      # Unset pages read as zeros: a threshold window is used only when it is one.
      if (num(t_hi) && t_hi + 0 > 0) temp_hi = t_hi
      tlo = lo; thi = hi; rlo = lo; rhi = hi
      if (num(tx_lo) && num(tx_hi) && tx_lo + 0 < tx_hi + 0) { tlo = tx_lo; thi = tx_hi }
      if (num(rx_lo) && num(rx_hi) && rx_lo + 0 < rx_hi + 0) { rlo = rx_lo; rhi = rx_hi }
      print "vendor\t" vendor; print "pn\t" pn; print "temp\t" temp
      for (x = 1; x <= used; x++) { c = chans[x]; if (c in tx) print "tx\t" tx[c] }
      for (x = 1; x <= used; x++) { c = chans[x]; if (c in rx) print "rx\t" rx[c]; else if (c in oma) print "rx\t" oma[c] }
      print "limits\t" temp_hi " " tlo " " thi " " rlo " " rhi
      if (num(temp) && temp + 0 > temp_hi + 0) print "problem\tmodule temperature " temp " C is above " temp_hi " C"
      for (x = 1; x <= used; x++) { c = chans[x]; if (c in tx) check("TX", x, tx[c], tlo, thi) }
      for (x = 1; x <= used; x++) { c = chans[x]; if (c in rx) check("RX", x, rx[c], rlo, rhi); else if (c in oma) check("RX", x, oma[c], rlo, rhi) }
    }' "$@"
}

# rg_optics_set: RG_P_OPT_* from rg_optics_awk's lines of one module on stdin.
rg_optics_set() {
  local k v
  RG_P_OPT_OK=yes
  while IFS=$'\t' read -r k v; do
    case $k in
      vendor) RG_P_OPT_VENDOR=$v ;;
      pn) RG_P_OPT_PN=$v ;;
      temp) RG_P_OPT_TEMP=$v ;;
      tx) RG_P_OPT_TX+="${RG_P_OPT_TX:+ }$v" ;;
      rx) RG_P_OPT_RX+="${RG_P_OPT_RX:+ }$v" ;;
      limits) RG_P_OPT_LIMITS=$v ;;
      problem) RG_P_OPT_PROBLEMS+="${RG_P_OPT_PROBLEMS:+; }$v" ;;
    esac
  done
}

# rg_optics_clear: no optics values (RG_P_OPT_*).
rg_optics_clear() {
  RG_P_OPT_OK=no RG_P_OPT_NOTE="" RG_P_OPT_VENDOR="" RG_P_OPT_PN="" RG_P_OPT_TEMP=""
  RG_P_OPT_TX="" RG_P_OPT_RX="" RG_P_OPT_LIMITS="" RG_P_OPT_PROBLEMS=""
}

# rg_probe_optics IF LANES: RG_P_OPT_* from `ethtool -m IF`; RG_P_OPT_NOTE says why there is none.
rg_probe_optics() {
  local out
  rg_optics_clear
  if ! rg_has ethtool; then
    RG_P_OPT_NOTE="ethtool is not installed"
    return 0
  fi
  if ! rg_cap rg_x ethtool -m "$1"; then
    out=${RG_CAP%%$'\n'*}
    RG_P_OPT_NOTE="ethtool -m $1: ${out:-failed}"
    return 0
  fi
  rg_optics_set < <(rg_optics_awk "$2" <<<"$RG_CAP")
}

# rg_probe_link IF: RG_P_SPEED (Mb/s, sysfs), RG_P_LANES and RG_P_MAX_SPEED (the fastest
# supported link mode) from `ethtool IF`.
rg_probe_link() {
  local out
  RG_P_SPEED=""
  ! rg_read_v "/sys/class/net/$1/speed" || ! rg_is_uint "$RG_V" || RG_P_SPEED=$RG_V
  RG_P_LANES="" RG_P_MAX_SPEED=""
  # `ethtool IF` takes a first word starting with `-` for an option and knows no `--` (its other
  # forms, `ethtool -i IF`, take IF as it is); validation refuses such names anyway.
  [[ $1 != -* ]] || return 0
  rg_has ethtool || return 0
  out=$(rg_x ethtool "$1" 2>/dev/null | awk '
    /^[ \t]*Supported link modes:/ { modes = 1; sub(/^[^:]*:/, "") }
    modes && /^[ \t]*[A-Za-z ]+:/ && !/^[ \t]*Supported link modes:/ { modes = 0 }
    modes { for (i = 1; i <= NF; i++) if (match($i, /^[0-9]+base/)) { s = substr($i, 1, RLENGTH - 4) + 0; if (s > max) max = s } }
    /^[ \t]*Lanes:/ { lanes = $2 }
    END { print max + 0 " " lanes }') || out=""
  RG_P_MAX_SPEED=${out%% *}
  RG_P_LANES=${out#* }
  [ "$RG_P_MAX_SPEED" != 0 ] || RG_P_MAX_SPEED=""
  rg_is_uint "$RG_P_MAX_SPEED" || RG_P_MAX_SPEED=""
  rg_is_uint "$RG_P_LANES" || RG_P_LANES=""
}

# rg_probe_pcie IF: RG_P_PCI_* from the PCI function's sysfs link attributes.
rg_probe_pcie() { rg_probe_pcie_at "/sys/class/net/$1/device"; }

# rg_probe_pcie_at DIR: RG_P_PCI_* of the PCI function whose sysfs folder (under the root) is DIR.
rg_probe_pcie_at() {
  local d=$1
  RG_P_PCI_SPEED="" RG_P_PCI_WIDTH="" RG_P_PCI_MAX_SPEED="" RG_P_PCI_MAX_WIDTH=""
  ! rg_read_v "$d/current_link_speed" || RG_P_PCI_SPEED=$RG_V
  ! rg_read_v "$d/current_link_width" || ! rg_is_uint "$RG_V" || RG_P_PCI_WIDTH=$RG_V
  ! rg_read_v "$d/max_link_speed" || RG_P_PCI_MAX_SPEED=$RG_V
  ! rg_read_v "$d/max_link_width" || ! rg_is_uint "$RG_V" || RG_P_PCI_MAX_WIDTH=$RG_V
}

# rg_probe_counters DEV IF: RG_P_COUNTERS, the counters object's members.
rg_probe_counters() {
  local c v sep="" prio=$RG_ROCE_PRIO
  RG_P_COUNTERS=""
  for c in $RG_HW_COUNTERS; do
    rg_read_v "/sys/class/infiniband/$1/ports/1/hw_counters/$c" || continue
    rg_is_uint "$RG_V" || continue
    rg_json_q "$c"
    RG_P_COUNTERS+="$sep$REPLY:$RG_V"
    sep=","
  done
  rg_has ethtool || return 0
  while read -r c v; do
    c=${c%:}
    case $c in
      rx_pause_ctrl_phy | tx_pause_ctrl_phy | "rx_prio${prio}_pause" | "tx_prio${prio}_pause") ;;
      *) continue ;;
    esac
    rg_is_uint "$v" || continue
    rg_json_q "$c"
    RG_P_COUNTERS+="$sep$REPLY:$v"
    sep=","
  done < <(rg_x ethtool -S "$2" 2>/dev/null || true)
}

# rg_probe_lldp IF: the LLDP neighbour lldpd (lldpcli keyvalue) or lldpad (lldptool's TLV dump)
# has heard on IF. RG_P_LLDP_SRC is empty, with RG_P_LLDP_NOTE saying why, when there is no
# source to ask.
rg_probe_lldp() {
  local ifc=$1 notes="" parsed
  RG_P_LLDP_SRC="" RG_P_LLDP_NOTE="" RG_P_LLDP_SWITCH="" RG_P_LLDP_PORT="" RG_P_LLDP_DESCR=""
  if rg_has lldpcli; then
    # lldpcli reads its options with getopt, which would take a name starting with `-` for
    # one wherever it stands: `--` ends them.
    if rg_cap rg_x lldpcli -f keyvalue -- show neighbors ports "$ifc"; then
      RG_P_LLDP_SRC=lldpd
      parsed=$(rg_parse_lldpcli "$ifc" <<<"$RG_CAP")
    else
      notes="lldpcli: ${RG_CAP%%$'\n'*}"
    fi
  fi
  if [ -z "$RG_P_LLDP_SRC" ] && rg_has lldptool; then
    if rg_cap rg_x lldptool -t -n -i "$ifc"; then
      RG_P_LLDP_SRC=lldpad
      parsed=$(rg_parse_lldptool <<<"$RG_CAP")
    else
      notes="${notes:+$notes; }lldptool: ${RG_CAP%%$'\n'*}"
    fi
  fi
  if [ -z "$RG_P_LLDP_SRC" ]; then
    RG_P_LLDP_NOTE=${notes:-neither lldpcli (lldpd) nor lldptool (lldpad) is installed}
    return 0
  fi
  {
    IFS= read -r RG_P_LLDP_SWITCH
    IFS= read -r RG_P_LLDP_PORT
    IFS= read -r RG_P_LLDP_DESCR
  } <<<"$parsed" || true
}

# rg_probe I [EACH]: everything above for NIC I, and its facts JSON in RG_M_FACTS[I]; EACH I IF
# is called after the probe of each port, with its RG_P_* values. A bond has no optic, PCIe link
# or port counters of its own: a LAG's are each slave's, under `slave_facts` (one object per
# slave, by its netdev); the NIC's own members are its first slave's.
rg_probe() {
  local i=$1 each=${2-} dev=${RG_NIC_IBDEV[$1]} s first per="" sep=""
  local -A one=()
  if ! rg_is_lag "$i" || [ -z "${RG_NIC_SLAVES[i]}" ]; then
    rg_probe_port "$dev" "${RG_NIC_NETDEV[i]}"
    RG_M_FACTS[i]=$REPLY
    [ -z "$each" ] || "$each" "$i" "${RG_NIC_NETDEV[i]}"
    return 0
  fi
  first=${RG_NIC_SLAVES[i]%% *}
  for s in ${RG_NIC_SLAVES[i]}; do
    [ -d "$RG_ROOT/sys/class/net/$s" ] || continue
    rg_probe_port "$dev" "$s"
    one[$s]=$REPLY
    # EACH I SLAVE: what the caller does with each slave's values (RG_P_*), while they are in hand.
    [ -z "$each" ] || "$each" "$i" "$s"
  done
  for s in ${RG_NIC_SLAVES[i]}; do
    [ -n "${one[$s]+set}" ] || continue
    rg_json_q "$s"
    per+="$sep$REPLY:{${one[$s]}}"
    sep=","
  done
  RG_M_FACTS[i]="${one[$first]:-$REPLY},\"slave_facts\":{$per}"
}

# rg_probe_port DEV IF: the probes above for netdev IF of RDMA device DEV (RG_P_*), and REPLY =
# their facts members.
rg_probe_port() {
  local dev=$1 ifc=$2 transceiver link pcie neighbor
  rg_probe_link "$ifc"
  rg_probe_optics "$ifc" "$RG_P_LANES"
  rg_probe_pcie "$ifc"
  rg_probe_counters "$dev" "$ifc"
  rg_probe_lldp "$ifc"
  if [ "$RG_P_OPT_OK" = yes ]; then
    rg_json_fmt '{"vendor":%s,"part_number":%s,"temperature_c":%s,"tx_power_dbm":%s,"rx_power_dbm":%s}' \
      s "$RG_P_OPT_VENDOR" s "$RG_P_OPT_PN" n "$RG_P_OPT_TEMP" l "$RG_P_OPT_TX" l "$RG_P_OPT_RX"
  else
    rg_json_fmt 'null,"transceiver_note":%s' s "$RG_P_OPT_NOTE"
  fi
  transceiver=$REPLY
  rg_json_fmt '{"speed_mbps":%s,"width":%s,"max_speed_mbps":%s}' n "$RG_P_SPEED" n "$RG_P_LANES" n "$RG_P_MAX_SPEED"
  link=$REPLY
  rg_json_fmt '{"speed":%s,"width":%s,"max_speed":%s,"max_width":%s}' s "$RG_P_PCI_SPEED" \
    n "$RG_P_PCI_WIDTH" s "$RG_P_PCI_MAX_SPEED" n "$RG_P_PCI_MAX_WIDTH"
  pcie=$REPLY
  if [ -n "$RG_P_LLDP_SRC" ]; then
    rg_json_fmt '{"source":%s,"switch":%s,"port":%s,"port_descr":%s}' s "$RG_P_LLDP_SRC" \
      s "$RG_P_LLDP_SWITCH" s "$RG_P_LLDP_PORT" s "$RG_P_LLDP_DESCR"
  else
    rg_json_fmt 'null,"neighbor_note":%s' s "$RG_P_LLDP_NOTE"
  fi
  neighbor=$REPLY
  REPLY="\"transceiver\":$transceiver,\"link\":$link,\"pcie\":$pcie,\"counters\":{$RG_P_COUNTERS},\"neighbor\":$neighbor"
}

# rg_same_port A B: switch port names match, ignoring case and an abbreviated prefix
# (Eth1/7 = Ethernet1/7 = ethernet1/7; swp7 != Eth7).
rg_same_port() {
  local a=${1,,} b=${2,,} pa pb
  [ -n "$a" ] && [ -n "$b" ] || return 1
  [ "$a" != "$b" ] || return 0
  pa=${a%%[0-9]*}
  pb=${b%%[0-9]*}
  [ "${a#"$pa"}" = "${b#"$pb"}" ] && [ -n "${a#"$pa"}" ] || return 1
  [[ $pa == "$pb"* || $pb == "$pa"* ]] && [ -n "$pa" ] && [ -n "$pb" ]
}

# rg_check_monitor I: optics, pcie, link_speed and cabling of a NIC (warnings at most). On a
# LAG, the optics, PCIe link and link speed of every slave (the summary names the slave) and the
# cabling of the first, whose switch the plan names.
rg_check_monitor() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} id
  if ! rg_identity_ok "$i"; then
    for id in optics pcie link_speed cabling; do
      rg_check "$id" "$dev" skip warning "" "" "skipped: the identity of $dev did not check out"
    done
    return 0
  fi
  rg_probe "$i" rg_check_monitor_port
}

# rg_check_monitor_port I IF: the checks of rg_check_monitor on port IF of NIC I (its RG_P_*
# values, rg_probe).
rg_check_monitor_port() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=$2 want_sw=${RG_NIC_SWITCH[$1]-} want_port=${RG_NIC_SWITCH_PORT[$1]-}
  local want seen short limits cur max from=${#RG_C_ID[@]} k

  limits="temperature <= ${RG_P_OPT_LIMITS%% *} C, power within limits"
  if [ "$RG_P_OPT_OK" != yes ]; then
    rg_check optics "$dev" skip warning "" "" "skipped: no transceiver data ($RG_P_OPT_NOTE)"
  elif [ -n "$RG_P_OPT_PROBLEMS" ]; then
    rg_check optics "$dev" warn warning "$limits" "$RG_P_OPT_PROBLEMS" \
      "$ifc module ${RG_P_OPT_VENDOR:-?} ${RG_P_OPT_PN:-?}: $RG_P_OPT_PROBLEMS"
  elif [ -z "$RG_P_OPT_TEMP$RG_P_OPT_TX$RG_P_OPT_RX" ]; then
    rg_check optics "$dev" pass warning "$limits" "no diagnostics" \
      "$ifc module ${RG_P_OPT_VENDOR:-?} ${RG_P_OPT_PN:-?} reports no diagnostics (passive copper?)"
  else
    rg_check optics "$dev" pass warning "$limits" "${RG_P_OPT_TEMP:-?} C, TX ${RG_P_OPT_TX:-?} dBm, RX ${RG_P_OPT_RX:-?} dBm" \
      "$ifc module ${RG_P_OPT_VENDOR:-?} ${RG_P_OPT_PN:-?}: ${RG_P_OPT_TEMP:-?} C, TX ${RG_P_OPT_TX:-?} dBm, RX ${RG_P_OPT_RX:-?} dBm"
  fi

  cur=$(rg_gts10 "$RG_P_PCI_SPEED")
  max=$(rg_gts10 "$RG_P_PCI_MAX_SPEED")
  want="${RG_P_PCI_MAX_SPEED%% PCIe} x$RG_P_PCI_MAX_WIDTH"
  seen="${RG_P_PCI_SPEED%% PCIe} x$RG_P_PCI_WIDTH"
  if [ -z "$cur" ] || [ -z "$max" ] || [ -z "$RG_P_PCI_WIDTH" ] || [ -z "$RG_P_PCI_MAX_WIDTH" ]; then
    rg_check pcie "$dev" skip warning "" "" "skipped: the PCIe link of $ifc is not readable in sysfs"
  elif [ "$cur" -lt "$max" ] || [ "$RG_P_PCI_WIDTH" -lt "$RG_P_PCI_MAX_WIDTH" ]; then
    rg_check pcie "$dev" warn warning "$want" "$seen" "PCIe link of $ifc runs at $seen, the device supports $want (slot, riser or BIOS setting?)"
  else
    rg_check pcie "$dev" pass warning "$want" "$seen" "PCIe link of $ifc runs at $seen, its maximum"
  fi

  if [ -z "$RG_P_SPEED" ]; then
    rg_check link_speed "$dev" skip warning "" "" "skipped: the link speed of $ifc is unknown (link down?)"
  elif [ -z "$RG_P_MAX_SPEED" ]; then
    rg_check link_speed "$dev" skip warning "" "$RG_P_SPEED" "skipped: $ifc runs at $RG_P_SPEED Mb/s; its fastest mode is unknown (ethtool $ifc lists none)"
  elif [ "$RG_P_SPEED" -lt "$RG_P_MAX_SPEED" ]; then
    rg_check link_speed "$dev" warn warning "$RG_P_MAX_SPEED" "$RG_P_SPEED" \
      "$ifc runs at $RG_P_SPEED Mb/s, below its fastest supported mode $RG_P_MAX_SPEED Mb/s (cable, module or switch port?)"
  else
    rg_check link_speed "$dev" pass warning "$RG_P_MAX_SPEED" "$RG_P_SPEED" "$ifc runs at $RG_P_SPEED Mb/s${RG_P_LANES:+ on $RG_P_LANES lanes}, its fastest mode"
  fi

  if rg_is_lag "$i"; then
    # The summary names the slave, and so does each message (most name it already).
    rg_esc "$ifc"
    for ((k = from; k < ${#RG_C_ID[@]}; k++)); do
      [[ ${RG_C_MSG[k]} == *"$ifc"* ]] || RG_C_MSG[k]="$ifc: ${RG_C_MSG[k]}"
      # shellcheck disable=SC2034 # the summary (lib.sh) reads it
      RG_C_PORT[k]=$REPLY
    done
    [ "$ifc" = "${RG_NIC_SLAVES[i]%% *}" ] || return 0
  fi
  want="$want_sw${want_port:+ $want_port}"
  seen="$RG_P_LLDP_SWITCH${RG_P_LLDP_PORT:+ $RG_P_LLDP_PORT}"
  short=${RG_P_LLDP_SWITCH%%.*}
  if [ -z "$want_sw" ]; then
    rg_check cabling "$dev" skip warning "" "$seen" "skipped: the plan gives no switch for $ifc"
  elif [ -z "$RG_P_LLDP_SRC" ]; then
    rg_check cabling "$dev" skip warning "$want" "" "skipped: no LLDP source on this host ($RG_P_LLDP_NOTE); cannot compare with $want"
  elif [ -z "$RG_P_LLDP_SWITCH$RG_P_LLDP_PORT" ]; then
    rg_check cabling "$dev" skip warning "$want" "" "skipped: $RG_P_LLDP_SRC has heard no LLDP neighbour on $ifc; cannot compare with $want"
  elif { [ "${RG_P_LLDP_SWITCH,,}" = "${want_sw,,}" ] || [ "${short,,}" = "${want_sw,,}" ]; } &&
    { [ -z "$want_port" ] || rg_same_port "$RG_P_LLDP_PORT" "$want_port" || rg_same_port "$RG_P_LLDP_DESCR" "$want_port"; }; then
    rg_check cabling "$dev" pass warning "$want" "$seen" "$ifc is cabled to $seen, as planned ($RG_P_LLDP_SRC)"
  else
    rg_check cabling "$dev" warn warning "$want" "$seen" "$ifc is cabled to ${seen:-an unnamed neighbour}, plan says $want"
  fi
}

# rg_check_dcbx I: with `dcbx = check`, reports who owns DCBX and whether lldpad runs.
rg_check_dcbx() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} lldpad=no
  if ! rg_identity_ok "$i"; then
    [ "$RG_DCBX" = os ] || rg_check dcbx "$dev" skip warning os "" "skipped: the identity of $dev did not check out"
    return 0
  elif [ "$RG_DCBX" = leave ]; then
    rg_check dcbx "$dev" skip info "" "" "skipped: the plan says dcbx = leave"
    return 0
  fi
  # With `dcbx = os` the setting's own check says why it cannot be read: one check per NIC.
  if ! rg_supported dcbx "$i"; then
    [ "$RG_DCBX" = os ] || rg_check dcbx "$dev" skip warning os "" "skipped: $RG_WHY"
    return 0
  fi
  if ! rg_get dcbx "$i"; then
    [ "$RG_DCBX" = os ] || rg_check dcbx "$dev" warn warning os "" "cannot tell who owns DCBX on $ifc: $RG_V"
    return 0
  fi
  RG_DCBX_SEEN[i]=$RG_V
  if rg_qos_is mlnx_qos; then
    lldpad=$(rg_parse_qos_lldpad <<<"$RG_QOS_OUT")
  else
    lldpad=$(rg_lldpad_runs)
  fi
  [ "$RG_DCBX" = check ] || return 0
  if [ "$lldpad" = yes ]; then
    rg_check dcbx "$dev" warn warning os "$RG_V, lldpad running" \
      "lldpad runs on this host and may overwrite the QoS settings of $ifc (stop and disable it, or plan dcbx = os)"
  elif [ "$RG_V" = fw ]; then
    rg_check dcbx "$dev" warn warning os fw \
      "DCBX on $ifc is firmware-controlled: a willing switch can override the host's PFC/ETS after apply (plan dcbx = os to take ownership)"
  else
    rg_check dcbx "$dev" pass warning os os "DCBX on $ifc is OS-controlled: the host's PFC/ETS settings stand"
  fi
}

# rg_lldpad_runs: yes when an lldpad process runs (read from /proc, as ps would).
rg_lldpad_runs() {
  local f comm
  for f in "$RG_ROOT"/proc/[0-9]*/comm; do
    [ -r "$f" ] || continue
    IFS= read -r comm <"$f" || true
    if [ "$comm" = lldpad ]; then
      printf yes
      return 0
    fi
  done
  printf no
}

# RG_FACTS_MORE: functions a run adds (`RG_FACTS_MORE+=" f"`) that each print one more member of
# the facts object, `"name":value` (fabric.sh's rg_fabric_facts).
RG_FACTS_MORE=""

# rg_facts: the facts object (kernel, OFED, per NIC firmware, PSID, chip and netdev, and for
# monitoring the transceiver, link, PCIe link, health counters and LLDP neighbour), then the
# members of RG_FACTS_MORE.
rg_facts() {
  local kernel ofed="" i dev sep="" extra f netdev
  local -A card=()
  kernel=$(uname -r 2>/dev/null) || kernel=""
  ofed=$RG_OFED
  rg_json_fmt '{"kernel":%s,"ofed":%s,"nics":{' s "$kernel" s "$ofed"
  printf '%s' "$REPLY"
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    dev=${RG_NIC_IBDEV[i]}
    [ -d "$RG_ROOT/sys/class/infiniband/$dev" ] || continue
    # The checks probed the NIC already; a run without them (rollback) probes it here.
    if [ -z "${RG_M_FACTS[i]+set}" ] && [ -d "$RG_ROOT/sys/class/net/${RG_NIC_NETDEV[i]}" ]; then
      rg_probe "$i"
    fi
    extra=${RG_M_FACTS[i]-}
    [ -z "${RG_FW_FACTS[i]-}" ] || extra+="${extra:+,}${RG_FW_FACTS[i]}"
    [ -z "${RG_VF_FACTS[i]-}" ] || extra+="${extra:+,}${RG_VF_FACTS[i]}"
    rg_gid_fact "$i"
    extra+="${extra:+,}$REPLY"
    rg_netmgr_fact "$i"
    extra+=",$REPLY"
    # A netdev the host calls otherwise (rg_resolve_netdevs): netdev is the host's name, this the plan's.
    if [ "${RG_NIC_PLANNED[i]:-${RG_NIC_NETDEV[i]}}" != "${RG_NIC_NETDEV[i]}" ]; then
      rg_json_q "${RG_NIC_PLANNED[i]}"
      extra+=",\"planned_netdev\":$REPLY"
    fi
    # A LAG: its netdev is the bond (the device link names the master PF), and its slaves.
    netdev=$(rg_netdev_of "$dev")
    if rg_is_lag "$i"; then
      netdev=${RG_NIC_BOND[i]}
      extra+=",\"slaves\":$(rg_lag_slaves_json "$i")"
    fi
    # board_id (the PSID) names the card as its firmware is built for; hca_type the chip.
    for f in fw_ver board_id hca_type; do
      rg_read_v "/sys/class/infiniband/$dev/$f" || RG_V=""
      card[$f]=$RG_V
    done
    rg_json_fmt '%s%s:{"fw_ver":%s,"board_id":%s,"hca_type":%s,"netdev":%s,"dcbx":%s%s}' r "$sep" s "$dev" \
      s "${card[fw_ver]}" s "${card[board_id]}" s "${card[hca_type]}" s "$netdev" s "${RG_DCBX_SEEN[i]-}" \
      r "${extra:+,$extra}"
    printf '%s' "$REPLY"
    sep=","
  done
  printf '}'
  for f in $RG_FACTS_MORE; do printf ',%s' "$("$f")"; done
  printf '}'
}

# shellcheck shell=bash
# lib-settings.sh, part of lib.sh: the planned settings of each RoCE port. For every setting,
# rg_get reads the current value in the plan's spelling and rg_set changes it, through the
# backend this host has (probed per setting, never assumed). Apply reads every setting first,
# saves them all before changing any (changing PFC also clears 802.3x pause on mlx5, so a side
# effect must be saved before it happens), writes only what differs in dependency order, and
# reads everything back. Rollback restores in the reverse dependency order.

# The settings of a port, in the order apply changes them: DCBX ownership before PFC (a willing
# firmware would override it), trust before the DSCP map (trust dscp programs the default map),
# PFC before pause (setting PFC clears pause), the cable length with PFC (one DCB request carries
# both). lib-rdma.sh adds the DCQCN parameters the plan sets.
RG_SETTINGS="dcbx trust dscp2prio pfc cable_length pause ecn_np ecn_rp cnp_dscp cnp_priority roce_mode roce_tos traffic_class mtu"
# The order rollback restores them: the DSCP map before trust (adding a DSCP entry turns trust
# back to dscp), the cable length while PFC is still as apply left it, pause after PFC, DCBX
# ownership last. The per-destination rules of the traffic_class file (saved where there are
# any, never written by apply) after its global class. Saved DCQCN parameters come first (rg_restore).
RG_RESTORE_ORDER="mtu traffic_class traffic_class_rules roce_tos roce_mode cnp_priority cnp_dscp ecn_rp ecn_np dscp_map trust cable_length pfc pause dcbx"

RG_WHY=""
RG_V=""
# Ports whose link flapped (or would) because their PFC changed, for the summary.
RG_FLAPS=""

# --- running what changes the host ----------------------------------------------------------------

# rg_show_args ARGS...: the words of a command as a shell would need them typed.
rg_show_args() {
  local a
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./:,=+@%-]+$ ]]; then
      printf ' %s' "$a"
    else
      printf ' %q' "$a"
    fi
  done
}

# rg_do CMD...: runs a command that changes the host (time-limited), or with --dry-run only
# takes the step; -v prints it either way (rg_step). Its output goes to RG_DO_OUT.
RG_DO_OUT=""
rg_do() {
  local rc=0
  RG_DO_OUT=""
  [ "$RG_VERBOSE" = no ] || rg_step "run:$(rg_show_args "$@")"
  [ "$RG_DRY_RUN" = no ] || return 0
  rg_cap rg_x "$@" || rc=$?
  RG_DO_OUT=$RG_CAP
  [ "$rc" -eq 0 ] || rg_log "$1 failed ($rc): ${RG_DO_OUT:0:400}"
  return "$rc"
}

# rg_write FILE VALUE: writes a value to a file under the root (sysfs, configfs), or with
# --dry-run only takes the step (rg_step). The kernel's refusal (EINVAL) is the write's failure;
# a write the driver does not answer in time (rg_bounded) is one too.
rg_write() {
  local q
  printf -v q '%q' "$2"
  rg_step "write: $q > $1"
  [ "$RG_DRY_RUN" = no ] || return 0
  if ! rg_bounded write "$1" rg_io_put "$RG_ROOT$1" "$2"; then
    # shellcheck disable=SC2153 # rg_bounded (lib.sh) sets it
    rg_log "writing $2 to $1 failed: ${RG_IO_OUT##*: }"
    return 1
  fi
}

# --- mlnx_qos: one read per port per run ---------------------------------------------------------
# mlnx_qos is a Python program (a third of a second per start) that prints the port's whole QoS
# state after every call, so its output is kept: the read at the start of a port, and the output
# of each change, which is the read-back. Call rg_qos in the script's own shell (not in $(...)),
# or the kept output is lost.
RG_QOS_IF=""
RG_QOS_OUT=""
RG_QOS_OK=no

# rg_qos I: makes RG_QOS_OUT the current `mlnx_qos -i IF` of NIC I; fails when it cannot be read.
rg_qos() {
  local ifc=${RG_NIC_NETDEV[$1]}
  if [ "$RG_QOS_IF" != "$ifc" ]; then
    RG_QOS_IF=$ifc
    RG_QOS_OK=yes
    rg_cap rg_x mlnx_qos -i "$ifc" || RG_QOS_OK=no
    RG_QOS_OUT=$RG_CAP
  fi
  [ "$RG_QOS_OK" = yes ]
}

# rg_qos_set I ARGS...: `mlnx_qos -i IF ARGS`; its output becomes the kept state.
rg_qos_set() {
  local i=$1
  shift
  if rg_do mlnx_qos -i "${RG_NIC_NETDEV[$i]}" "$@"; then
    if [ "$RG_DRY_RUN" = no ]; then
      RG_QOS_IF=${RG_NIC_NETDEV[$i]}
      RG_QOS_OUT=$RG_DO_OUT
      RG_QOS_OK=yes
    fi
    return 0
  fi
  RG_QOS_IF=""
  return 1
}

# rg_qos_error: RG_V = the first line of a failed mlnx_qos, for messages.
rg_qos_error() {
  local first=${RG_QOS_OUT%%$'\n'*}
  RG_V="mlnx_qos -i $RG_QOS_IF failed: ${first:-no output}"
}

# --- dcb (iproute2): a backend only with `app` and `dcbx` ----------------------------------------
# The first dcb (iproute2 5.11) has buffer, ets, maxrate and pfc only; `dcb app`, `dcb dcbx` and
# -N arrived in 5.12 (there `dcb app help` prints its usage and exits 0; 5.11 says `Object "app"
# is unknown` and exits 1, dcb/dcb.c dcb_cmd). Probed once per run, in the script's own shell.
RG_DCB_OK=""
RG_DCB_WHY=""
RG_DCB_OUT=""

# rg_dcb_probe: true when dcb can read and set trust, the DSCP map and DCBX; else RG_DCB_WHY.
rg_dcb_probe() {
  local obj out rc
  if [ -z "$RG_DCB_OK" ]; then
    RG_DCB_OK=yes
    if ! rg_has dcb; then
      RG_DCB_OK=no RG_DCB_WHY="dcb (iproute2) is not installed"
    fi
    for obj in app dcbx; do
      [ "$RG_DCB_OK" = yes ] || break
      rc=0
      rg_cap rg_x dcb "$obj" help || rc=$?
      [ "$rc" -ne 0 ] || continue
      out=${RG_CAP%%$'\n'*}
      RG_DCB_OK=no
      RG_DCB_WHY="this dcb (iproute2) has no \`$obj' subcommand (dcb $obj help: ${out:-no output}, exit $rc): dcb app and dcb dcbx arrived in iproute2 5.12; install iproute2 5.12 or newer, or MLNX_OFED/DOCA's mlnx_qos"
    done
  fi
  [ "$RG_DCB_OK" = yes ]
}

# rg_dcb_read ARGS...: RG_DCB_OUT = the stdout of `dcb ARGS`. A non-zero exit or an error message
# (dcb prints nothing on stderr for a read that worked) fails, with RG_V saying why: a failed read
# is never an empty table.
rg_dcb_read() {
  local rc=0 err
  RG_DCB_OUT=""
  if ! rg_dcb_probe; then
    RG_V=$RG_DCB_WHY
    return 1
  fi
  rg_cap -2 rg_x dcb "$@" || rc=$?
  RG_DCB_OUT=$RG_CAP err=$RG_CAP_ERR
  if [ "$rc" -ne 0 ] || [ -n "$err" ]; then
    err=${err%%$'\n'*}
    RG_V="dcb $* failed (exit $rc): ${err:-no message}"
    RG_DCB_OUT=""
    return 1
  fi
}

# rg_qos_backend: REPLY = mlnx_qos where installed (MLNX_OFED/DOCA), else dcb (iproute2).
rg_qos_backend() {
  if rg_has mlnx_qos; then REPLY=mlnx_qos; else REPLY=dcb; fi
}

# rg_qos_is BACKEND: whether rg_qos_backend is BACKEND.
rg_qos_is() {
  rg_qos_backend
  [ "$REPLY" = "$1" ]
}

# --- what applies, and what the plan wants ---------------------------------------------------------

# rg_applies ID: false for settings the plan itself turns off.
rg_applies() {
  case $1 in
    dscp2prio) [ "$RG_TRUST" = dscp ] ;;
    dcbx) [ "$RG_DCBX" = os ] ;;
    cable_length | dcqcn_*) rg_rdma_applies "$1" ;;
    *) return 0 ;;
  esac
}

# rg_supported ID I: true when this host can read and set ID for NIC I; otherwise RG_WHY says why.
rg_supported() {
  local ifc=${RG_NIC_NETDEV[$2]} dev=${RG_NIC_IBDEV[$2]}
  RG_WHY=""
  case $1 in
    dcbx | trust | dscp2prio | dscp_map | pfc)
      rg_has mlnx_qos || rg_dcb_probe || RG_WHY="no mlnx_qos, and $RG_DCB_WHY"
      ;;
    ecn_np | ecn_rp | cnp_dscp | cnp_priority)
      [ -d "$RG_ROOT/sys/class/net/$ifc/ecn" ] ||
        RG_WHY="no /sys/class/net/$ifc/ecn: the inbox driver has no runtime per-priority ECN/CNP control (firmware setting, needs a reboot)"
      ;;
    roce_mode | roce_tos)
      if ! rg_has "cma_${1}" && [ ! -d "$RG_ROOT/sys/kernel/config/rdma_cm" ]; then
        RG_WHY="neither cma_${1} nor /sys/kernel/config/rdma_cm (configfs, rdma_cm) is available"
      fi
      ;;
    traffic_class | traffic_class_rules)
      [ -e "$RG_ROOT/sys/class/infiniband/$dev/tc/1/traffic_class" ] ||
        RG_WHY="no /sys/class/infiniband/$dev/tc/1/traffic_class (OFED only): set the traffic class in the applications (NCCL_IB_TC)"
      ;;
    pause)
      rg_has ethtool || RG_WHY="ethtool is not installed"
      ;;
    mtu)
      rg_has ip || RG_WHY="ip (iproute2) is not installed"
      ;;
    cable_length | dcqcn_*) rg_rdma_supported "$1" "$2" || true ;;
  esac
  [ -z "$RG_WHY" ]
}

# rg_planned ID I: REPLY = the planned value of a setting, in the spelling rg_get reads. A
# variable, not output: it is asked for per setting and port, and a substitution forks.
rg_planned() {
  case $1 in
    dcbx) REPLY=os ;;
    trust) REPLY=$RG_TRUST ;;
    dscp2prio) REPLY="$RG_ROCE_DSCP:$RG_ROCE_PRIO,$RG_CNP_DSCP:$RG_CNP_PRIO" ;;
    pfc) REPLY=$RG_PFC ;;
    ecn_np | ecn_rp) rg_ecn_planned ;;
    cnp_dscp) REPLY=$RG_CNP_DSCP ;;
    cnp_priority) REPLY=$RG_CNP_PRIO ;;
    roce_mode) REPLY=$RG_ROCE_MODE ;;
    roce_tos | traffic_class) REPLY=$RG_ROCE_TOS ;;
    pause)
      REPLY="rx off tx off"
      [ "$RG_GLOBAL_PAUSE" != on ] || REPLY="rx on tx on"
      ;;
    mtu) REPLY=${RG_NIC_MTU[$2]} ;;
    cable_length | dcqcn_*) REPLY=$(rg_rdma_planned "$1") ;;
    *) REPLY="" ;;
  esac
}

# ECN: the planned priorities are enabled and the others left as they are (firmware enables all
# by default); `ecn_priorities = none` turns it off on all eight. REPLY spells it `3:1` or
# `0:0,...,7:0`.
rg_ecn_planned() {
  local p=0 v out=""
  if [[ $RG_ECN == *1* ]]; then
    for v in ${RG_ECN//,/ }; do
      [ "$v" != 1 ] || out="${out:+$out,}$p:1"
      p=$((p + 1))
    done
  else
    out="0:0,1:0,2:0,3:0,4:0,5:0,6:0,7:0"
  fi
  REPLY=$out
}

# rg_pairs_of MAP D...: the priorities a DSCP map (`D:P,...` or `none`) gives the DSCPs, as
# `D:P,...` with `?` for an unmapped one.
rg_pairs_of() {
  local map=",$1," d p out=""
  shift
  for d in "$@"; do
    p="?"
    if [[ $map == *",$d:"* ]]; then
      p=${map#*,"$d":}
      p=${p%%,*}
    fi
    out="${out:+$out,}$d:$p"
  done
  printf '%s' "$out"
}

# rg_default_map: the 64 entries `mlnx_qos --trust dscp` programs (priority = DSCP >> 3).
rg_default_map() {
  local d out=""
  for ((d = 0; d < 64; d++)); do out+="${out:+,}$d:$((d >> 3))"; done
  printf '%s' "$out"
}

# --- reading ---------------------------------------------------------------------------------------

# rg_get ID I: RG_V = the current value of setting ID of NIC I; fails with the reason in RG_V.
# Runs in the caller's shell so that mlnx_qos's output is kept.
rg_get() {
  local id=$1 i=$2 ifc=${RG_NIC_NETDEV[$2]} dev=${RG_NIC_IBDEV[$2]} out
  RG_V=""
  case $id in
    dcbx | trust | dscp_map | dscp2prio | pfc)
      if rg_qos_is mlnx_qos; then
        rg_qos "$i" || {
          rg_qos_error
          return 1
        }
        out=$RG_QOS_OUT
        case $id in
          dcbx) rg_v rg_parse_qos_dcbx <<<"$out" ;;
          trust) rg_v rg_parse_qos_trust <<<"$out" ;;
          dscp_map) rg_v rg_parse_qos_map <<<"$out" ;;
          dscp2prio)
            rg_v rg_parse_qos_map <<<"$out" || true
            rg_v rg_pairs_of "$RG_V" "$RG_ROCE_DSCP" "$RG_CNP_DSCP"
            ;;
          pfc) rg_v rg_parse_qos_pfc <<<"$out" ;;
        esac
      else
        # Each read checked: a failed `dcb app show` read as an empty table would be PCP trust,
        # and apply would save that as the original (rollback then flushes a DSCP-trust port).
        case $id in
          dcbx) rg_dcb_read dcbx show dev "$ifc" || return 1 ;;
          pfc) rg_dcb_read pfc show dev "$ifc" prio-pfc || return 1 ;;
          *) rg_dcb_read -N app show dev "$ifc" dscp-prio || return 1 ;;
        esac
        out=$RG_DCB_OUT
        case $id in
          dcbx) rg_v rg_parse_dcb_dcbx <<<"$out" ;;
          # The driver derives trust from the DSCP APP table, as mlnx_qos does; the empty table
          # of a read that worked is PCP trust.
          trust)
            rg_v rg_parse_dcb_map <<<"$out" || true
            if [ "$RG_V" = none ]; then RG_V=pcp; else RG_V=dscp; fi
            ;;
          dscp_map) rg_v rg_parse_dcb_map <<<"$out" ;;
          dscp2prio)
            rg_v rg_parse_dcb_map <<<"$out" || true
            rg_v rg_pairs_of "$RG_V" "$RG_ROCE_DSCP" "$RG_CNP_DSCP"
            ;;
          pfc) rg_v rg_parse_dcb_pfc <<<"$out" ;;
        esac
      fi
      [ -n "$RG_V" ] || {
        rg_qos_backend
        RG_V="$REPLY shows no $id for $ifc"
        return 1
      }
      ;;
    pause)
      rg_cap -1 rg_x ethtool -a "$ifc" 2>/dev/null || true
      rg_v rg_parse_pause <<<"$RG_CAP" || true
      [ -n "$RG_V" ] || {
        RG_V="ethtool -a $ifc shows no pause settings"
        return 1
      }
      ;;
    ecn_np | ecn_rp) rg_get_ecn "${id/ecn_/roce_}" "$i" ;;
    cnp_dscp) rg_get_sysfs "/sys/class/net/$ifc/ecn/roce_np/cnp_dscp" ;;
    cnp_priority) rg_get_sysfs "/sys/class/net/$ifc/ecn/roce_np/cnp_802p_prio" ;;
    roce_mode | roce_tos) rg_get_cm "$id" "$i" ;;
    traffic_class | traffic_class_rules)
      rg_bounded read "/sys/class/infiniband/$dev/tc/1/traffic_class" rg_io_all \
        "$RG_ROOT/sys/class/infiniband/$dev/tc/1/traffic_class" || {
        RG_V="cannot read traffic_class: ${RG_IO_OUT##*: }"
        return 1
      }
      out=$RG_IO_OUT
      # The global class is the first line; per-destination rules may follow (kept as they are).
      if [ "$id" = traffic_class ]; then
        rg_v rg_parse_tclass "$out"
      else
        rg_v rg_parse_tclass_rules "$out" && rg_v rg_sorted_rules "$RG_V"
      fi || {
        RG_V="traffic_class reads ${out:0:60}, not a traffic class"
        return 1
      }
      ;;
    mtu) rg_get_sysfs "/sys/class/net/$ifc/mtu" ;;
    cable_length | dcqcn_*) rg_rdma_get "$id" "$i" ;;
  esac
}

# rg_get_sysfs FILE: RG_V = a numeric attribute; fails when it is missing or not a number.
rg_get_sysfs() {
  rg_read_v "$1" || {
    RG_V="cannot read $1${RG_V:+ ($RG_V)}"
    return 1
  }
  [[ $RG_V =~ ^-?[0-9]+$ ]] || {
    RG_V="$1 reads ${RG_V:0:60}, not a number"
    return 1
  }
}

# rg_get_ecn DIR I: RG_V = the enable flags of ecn/DIR for the planned priorities (`3:1`).
rg_get_ecn() {
  local base="/sys/class/net/${RG_NIC_NETDEV[$2]}/ecn/$1/enable" planned pair p v out=""
  rg_ecn_planned
  planned=$REPLY
  for pair in ${planned//,/ }; do
    p=${pair%%:*}
    if rg_read_v "$base/$p"; then v=$RG_V; else v="?"; fi
    out="${out:+$out,}$p:$v"
  done
  RG_V=$out
}

# RDMA-CM defaults: the cma_roce_* tools (OFED) mkdir the device's configfs folder for the call
# and print the value, or their error, on stdout; without them the same is done here.
rg_get_cm() {
  local id=$1 dev=${RG_NIC_IBDEV[$2]} out rc=0 made=no dir file
  if rg_has "cma_$id"; then
    rg_cap rg_x "cma_$id" -d "$dev" -p 1 || rc=$?
    out=$RG_CAP
  else
    dir="/sys/kernel/config/rdma_cm/$dev"
    file="$dir/ports/1/default_$id"
    if [ ! -d "$RG_ROOT$dir" ]; then
      rg_x mkdir "$RG_ROOT$dir" 2>/dev/null || {
        RG_V="cannot create $dir (is $dev an RDMA device with rdma_cm loaded?)"
        return 1
      }
      made=yes
    fi
    rg_bounded read "$file" rg_io_all "$RG_ROOT$file" || rc=$?
    out=$RG_IO_OUT
    [ "$made" = no ] || rg_x rmdir "$RG_ROOT$dir" 2>/dev/null || true
  fi
  out=${out%%$'\n'*}
  if [ "$rc" -eq 0 ] && rg_v "rg_parse_$id" "$out"; then
    return 0
  fi
  RG_V="cma_$id -d $dev -p 1: ${out:-no output} (exit $rc)"
  return 1
}

# --- writing ---------------------------------------------------------------------------------------

# rg_set ID I VALUE: changes setting ID of NIC I to VALUE (or prints how, with --dry-run).
rg_set() {
  local id=$1 i=$2 v=$3 ifc=${RG_NIC_NETDEV[$2]} dev=${RG_NIC_IBDEV[$2]}
  case $id in
    dcbx | trust | dscp2prio | dscp_map | pfc) rg_set_qos "$id" "$i" "$v" ;;
    pause)
      v=${v#rx }
      rg_do ethtool -A "$ifc" rx "${v%% *}" tx "${v##* }"
      ;;
    ecn_np | ecn_rp) rg_set_ecn "${id/ecn_/roce_}" "$i" "$v" ;;
    cnp_dscp) rg_write "/sys/class/net/$ifc/ecn/roce_np/cnp_dscp" "$v" ;;
    cnp_priority) rg_write "/sys/class/net/$ifc/ecn/roce_np/cnp_802p_prio" "$v" ;;
    roce_mode | roce_tos) rg_set_cm "$id" "$i" "$v" ;;
    # The driver takes 0-255, or -1 to clear the global class; an empty write is refused.
    traffic_class) rg_write "/sys/class/infiniband/$dev/tc/1/traffic_class" "${v:--1}" ;;
    traffic_class_rules) rg_set_tclass_rules "$i" "$v" ;;
    mtu) rg_do ip link set dev "$ifc" mtu "$v" ;;
    cable_length | dcqcn_*) rg_rdma_set "$id" "$i" "$v" ;;
  esac
}

# rg_set_qos ID I VALUE: DCBX, trust, DSCP map and PFC through mlnx_qos or dcb.
rg_set_qos() {
  local id=$1 i=$2 v=$3 ifc=${RG_NIC_NETDEV[$2]} args=() pair d p w words=()
  if rg_qos_is mlnx_qos; then
    case $id in
      dcbx) args=(-d "$v") ;;
      trust) args=(--trust "$v") ;;
      pfc) args=(--pfc "$v") ;;
      dscp2prio | dscp_map)
        # VALUE is the wanted `D:P` pairs, plus `D:-` for entries to delete (dscp_map).
        for pair in ${v//,/ }; do
          d=${pair%%:*} p=${pair#*:}
          case $p in
            "?") ;;
            -*) args+=(--dscp2prio "del,$d,${p#-}") ;;
            *) args+=(--dscp2prio "set,$d,$p") ;;
          esac
        done
        ;;
    esac
    [ ${#args[@]} -gt 0 ] || return 0
    rg_qos_set "$i" ${args[@]+"${args[@]}"}
    return
  fi
  case $id in
    dcbx)
      if [ "$v" = os ]; then rg_do dcb dcbx set dev "$ifc" host ieee; else rg_do dcb dcbx set dev "$ifc" ieee; fi
      ;;
    trust)
      if [ "$v" = dscp ]; then
        # As mlnx_qos --trust dscp: the 64 default entries.
        # shellcheck disable=SC2046 # one word per entry
        rg_do dcb app add dev "$ifc" dscp-prio $(rg_default_map | tr ',' ' ')
      else
        rg_do dcb app flush dev "$ifc" dscp-prio
      fi
      ;;
    pfc)
      p=0
      for w in ${v//,/ }; do
        if [ "$w" = 1 ]; then words+=("$p:on"); else words+=("$p:off"); fi
        p=$((p + 1))
      done
      rg_do dcb pfc set dev "$ifc" prio-pfc ${words[@]+"${words[@]}"}
      ;;
    dscp2prio | dscp_map)
      for pair in ${v//,/ }; do
        d=${pair%%:*} p=${pair#*:}
        case $p in
          "?") ;;
          -*) rg_do dcb app del dev "$ifc" dscp-prio "$d:${p#-}" || return 1 ;;
          # `dcb app replace` exits 0 even when it could not remove the old entry: the
          # read-back decides.
          *) rg_do dcb app replace dev "$ifc" dscp-prio "$d:$p" || return 1 ;;
        esac
      done
      ;;
  esac
}

# rg_sorted_rules RULES: `;`-joined rules in byte order (the driver keeps them in an order of its
# own: prefix length, then its sort's), so that two reads of the same rules compare equal.
rg_sorted_rules() {
  local out
  [ "$1" != none ] || {
    printf none
    return 0
  }
  out=$(printf '%s\n' "${1//;/$'\n'}" | LC_ALL=C sort)
  printf '%s' "${out//$'\n'/;}"
}

# rg_set_tclass_rules I RULES: the per-destination rules of NIC I's traffic_class file become
# RULES (rollback): a rule RULES lacks is deleted (its fields with tclass=-1, traffic_class_store),
# a missing one written as the file showed it (the store takes the printed form).
rg_set_tclass_rules() {
  local f="/sys/class/infiniband/${RG_NIC_IBDEV[$1]}/tc/1/traffic_class" want=";$2;" now rule
  rg_get traffic_class_rules "$1" || return 1
  now=";$RG_V;"
  for rule in ${RG_V//;/ }; do
    [ "$rule" = none ] || [[ $want == *";$rule;"* ]] || rg_write "$f" "${rule%tclass=*}tclass=-1" || return 1
  done
  for rule in ${2//;/ }; do
    [ "$rule" = none ] || [[ $now == *";$rule;"* ]] || rg_write "$f" "$rule" || return 1
  done
}

rg_set_ecn() {
  local base="/sys/class/net/${RG_NIC_NETDEV[$2]}/ecn/$1/enable" pair p v now
  for pair in ${3//,/ }; do
    p=${pair%%:*}
    v=${pair#*:}
    now=$(rg_read "$base/$p") || now=""
    [ "$now" = "$v" ] || rg_write "$base/$p" "$v" || return 1
  done
}

rg_set_cm() {
  local id=$1 dev=${RG_NIC_IBDEV[$2]} v=$3 dir made=no rc=0
  if rg_has "cma_$id"; then
    if [ "$id" = roce_mode ]; then
      if [ "$v" = "RoCE v2" ]; then v=2; else v=1; fi
      rg_do cma_roce_mode -d "$dev" -p 1 -m "$v"
    else
      rg_do cma_roce_tos -d "$dev" -p 1 -t "$v"
    fi
    return
  fi
  dir="/sys/kernel/config/rdma_cm/$dev"
  if [ ! -d "$RG_ROOT$dir" ]; then
    rg_do mkdir "$RG_ROOT$dir" || return 1
    made=yes
  fi
  rg_write "$dir/ports/1/default_$id" "$v" || rc=1
  # The value lives in the kernel's device, not in the folder: rmdir keeps it.
  [ "$made" = no ] || rg_do rmdir "$RG_ROOT$dir" || true
  return "$rc"
}

# --- the link after a flap -------------------------------------------------------------------------

# How long apply waits for a link that a change toggled to come back (seconds).
RG_LINK_WAIT=${ROCE_GEN_LINK_WAIT:-30}

# rg_link_up I: true when NIC I's link is up: carrier 1, operstate up and port 1 ACTIVE (mlx5_ib
# derives the RoCE port's state from the netdev's carrier). RG_V says what was read.
rg_link_up() {
  local ifc=${RG_NIC_NETDEV[$1]} dev=${RG_NIC_IBDEV[$1]} carrier oper state
  # carrier refuses to be read (EINVAL) while the interface is administratively down.
  rg_read_v "/sys/class/net/$ifc/carrier" || RG_V=""
  carrier=$RG_V
  rg_read_v "/sys/class/net/$ifc/operstate" || RG_V=""
  oper=$RG_V
  rg_read_v "/sys/class/infiniband/$dev/ports/1/state" || RG_V=""
  state=$RG_V
  RG_V="carrier ${carrier:-unreadable}, operstate ${oper:-unknown}, port state ${state:-unknown}"
  [ "$carrier" = 1 ] && [ "$oper" = up ] && [ "$state" = "4: ACTIVE" ]
}

# rg_tick: a fifth of a second without starting a program each time: `read -t` on a FIFO this
# shell holds open for reading and writing, so nothing arrives and no end of file either.
RG_TICK_FD=""
rg_tick() {
  if [ -z "$RG_TICK_FD" ] && [ -n "$RG_TMP" ] && mkfifo "$RG_TMP/tick" 2>/dev/null; then
    exec {RG_TICK_FD}<>"$RG_TMP/tick"
  fi
  if [ -n "$RG_TICK_FD" ]; then
    read -r -t 0.2 -u "$RG_TICK_FD" _ || true
  else
    rg_x sleep 1 || true
  fi
}

# rg_link_wait I: after apply's changes toggled NIC I's link (a PFC change on mlx5:
# mlx5e_dcbnl_ieee_setpfc calls mlx5_toggle_port_link; no other setting apply writes does), waits
# up to RG_LINK_WAIT seconds for carrier and port 1 ACTIVE, then looks again at the link, the
# address and the GID (rg_check_nic_env and rg_check_gid, their checks replaced where they are),
# before rg_apply_all reads the settings back. A link that does not come back fails link_state.
# Rollback, whose PFC restore toggles the link too, waits likewise (WAS: pass when the link was up
# before; apply takes precheck's link_state). Nothing to do (no sleep) where no link flapped or
# the link was down before; a dry run only says it would wait.
rg_link_wait() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} was=${2-} start up=no seen
  [[ " $RG_FLAPS " == *" $ifc "* ]] || return 0
  rg_step "wait: up to ${RG_LINK_WAIT}s for the link of $ifc to come back (carrier, port 1 of $dev ACTIVE), then read back"
  [ "$RG_DRY_RUN" = no ] || return 0
  if [ -z "$was" ]; then
    rg_status_of link_state "$dev"
    was=$REPLY
  fi
  [ "$was" = pass ] || return 0
  # A LAG slave that was down before (its bond's port stays up on the other) comes back no sooner.
  ! rg_lag_port_was_down "$i" || return 0
  rg_progress "waiting up to ${RG_LINK_WAIT}s for the link of $ifc to come back (the PFC change toggled it)"
  start=$SECONDS
  while :; do
    if rg_link_up "$i"; then
      up=yes
      break
    fi
    [ $((SECONDS - start)) -lt "$RG_LINK_WAIT" ] || break
    rg_tick
  done
  seen=$RG_V
  # shellcheck disable=SC2034 # rg_check (lib.sh) reads it
  RG_CHECK_REPLACE=yes
  if [ "$RG_PHASE" = apply ]; then
    rg_lag_on_bond "$i" rg_check_nic_env "$i"
    rg_lag_on_bond "$i" rg_check_gid "$i"
  fi
  if [ "$up" = yes ]; then
    rg_check link_state "$dev" pass warning "4: ACTIVE" "4: ACTIVE" \
      "port 1 of $dev is ACTIVE again after the PFC change toggled the link of $ifc"
  else
    rg_check link_state "$dev" fail error "4: ACTIVE" "$seen" \
      "the link of $ifc did not come back within ${RG_LINK_WAIT}s after the PFC change toggled it ($seen): check the cable, the optic and the switch port (ethtool $ifc, dmesg); the settings were written and are read back; run apply again once the link is up (a slow link: raise ROCE_GEN_LINK_WAIT)"
  fi
  # shellcheck disable=SC2034 # rg_check (lib.sh) reads it
  RG_CHECK_REPLACE=no
}

# --- the settings of one port ----------------------------------------------------------------------

# The port in hand, set anew for each NIC: the values rg_nic_settings read (RG_PORT_BEFORE), the
# settings apply wrote (RG_PORT_WRITTEN) and, with --dry-run, the values its changes so far would
# have left (RG_PORT_SIM). Named here so that each function's header can say which it reads.
declare -A RG_PORT_BEFORE=() RG_PORT_WRITTEN=() RG_PORT_SIM=()

# rg_flap_note I: the words that say a PFC change flaps NIC I's link.
rg_flap_note() {
  printf '; changing PFC toggles the link of %s (one flap)' "${RG_NIC_NETDEV[$1]}"
}

rg_add_flap() {
  [[ " $RG_FLAPS " == *" ${RG_NIC_NETDEV[$1]} "* ]] || RG_FLAPS="${RG_FLAPS:+$RG_FLAPS }${RG_NIC_NETDEV[$1]}"
}

# rg_nic_settings MODE I: every planned setting of NIC I, compared (precheck) or applied; on a
# RoCE LAG, the per-port ones on each slave (lib-lag.sh).
rg_nic_settings() {
  if rg_is_lag "$2"; then
    rg_lag_settings "$1" "$2"
  else
    rg_port_settings "$1" "$2"
  fi
}

# rg_port_settings MODE I: rg_nic_settings on one port (on a LAG, the settings of this pass:
# rg_lag_wants). Sets RG_PORT_BEFORE.
rg_port_settings() {
  local mode=$1 i=$2 dev=${RG_NIC_IBDEV[$2]} id want ids=""
  RG_PORT_BEFORE=()
  ! rg_lag_wants dcbx "$i" || rg_check_dcbx "$i"
  for id in $RG_SETTINGS; do
    rg_applies "$id" || continue
    rg_lag_wants "$id" "$i" || continue
    rg_planned "$id" "$i"
    want=$REPLY
    if ! rg_identity_ok "$i"; then
      rg_check "$id" "$dev" skip error "$want" "" "skipped: the identity of $dev did not check out"
    elif ! rg_supported "$id" "$i"; then
      rg_check "$id" "$dev" skip warning "$want" "" "skipped: $RG_WHY"
    elif ! rg_get "$id" "$i"; then
      rg_check "$id" "$dev" fail error "$want" "" "cannot read $id: $RG_V"
    else
      RG_PORT_BEFORE[$id]=$RG_V
      ids+=" $id"
    fi
  done
  if [ -n "$ids" ] && [ "$mode" = apply ] && rg_nic_wedged "$i"; then
    # A NIC whose firmware stopped answering is left as it is: each change would wait for it too.
    for id in $ids; do
      rg_planned "$id" "$i"
      rg_check "$id" "$dev" skip error "$REPLY" "${RG_PORT_BEFORE[$id]}" \
        "not changed: a driver file of $dev did not answer within ${RG_TOOL_TIMEOUT}s (tool_timeout), so apply leaves this NIC as it is; check it, then run apply again"
    done
  elif [ -n "$ids" ]; then
    case $mode in
      compare) rg_compare_all "$i" "$ids" ;;
      apply)
        rg_progress "$dev (${RG_NIC_NETDEV[i]}): saving its values, then setting those that differ from the plan"
        rg_apply_all "$i" "$ids"
        ;;
    esac
  fi
  # Read-only, on the buffers as apply's changes left them.
  ! rg_lag_wants pfc "$i" || rg_check_pfc_buffer "$i"
  # Who keeps the MTU (lib-netmgr.sh): NetworkManager or networkd puts its own back.
  ! rg_lag_wants mtu "$i" || rg_netmgr_check "$mode" "$i"
}

# rg_compare_all I IDS: precheck: pass where the host matches the plan, warn where apply will
# change it. Reads RG_PORT_BEFORE.
rg_compare_all() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} id want now note
  for id in $2; do
    rg_planned "$id" "$i"
    want=$REPLY
    now=${RG_PORT_BEFORE[$id]}
    note=""
    [ "$id" != pfc ] || note=$(rg_flap_note "$i")
    if [ "$now" = "$want" ] && [ "$id" = cable_length ] && ! rg_cable_effect "$i" "$want"; then
      rg_check "$id" "$dev" warn warning "$want" "$now" "cable_length is $now m as planned, but it sizes no headroom: $RG_WHY; $(rg_cable_fix "$i")"
    elif [ "$now" = "$want" ]; then
      rg_check "$id" "$dev" pass error "$want" "$now" "$id is $now as planned"
    elif [ "$id" = cable_length ] && ! rg_cable_effect "$i" "$now"; then
      # As apply will find it (rg_predict): stored, no headroom resized, no change to count.
      rg_check "$id" "$dev" warn warning "$want" "$now" "cable_length is ${now:-unset} m; apply will store the plan's $want m, but it sizes no headroom: $RG_WHY; $(rg_cable_fix "$i")"
    else
      [ -z "$note" ] || rg_add_flap "$i"
      rg_check_change "$id" "$dev" warn error "$want" "$now" \
        "$id is ${now:-unset}, the plan says $want (apply will change it$note)" "$now"
    fi
  done
}

# rg_save_all I IDS: saves the value of every setting apply may touch on NIC I, before it
# touches any: those of IDS, the whole DSCP map and the pause that PFC clears. A value saved by
# an earlier apply is kept, so rollback returns to the host as it was before roce-gen. Reads
# RG_PORT_BEFORE and adds the values it reads.
rg_save_all() {
  # A LAG slave's values are saved under DEV/SLAVE (rg_lag_restore).
  local i=$1 dev=${RG_NIC_IBDEV[$1]}${RG_LAG_PORT:+/$RG_LAG_PORT} id lines=""
  for id in $2 dscp_map pause traffic_class_rules; do
    rg_lag_wants "$id" "$i" || continue
    [[ $'\n'$lines != *$'\n'"$id"$'\t'* ]] || continue
    # The traffic_class file's rules go with its global class (saved where there are any).
    [ "$id" != traffic_class_rules ] || [[ " $2 " == *" traffic_class "* ]] || continue
    if [ -z "${RG_PORT_BEFORE[$id]+set}" ]; then
      if ! rg_supported "$id" "$i" || ! rg_get "$id" "$i"; then
        continue
      fi
      RG_PORT_BEFORE[$id]=$RG_V
    fi
    [ "$id" != traffic_class_rules ] || [ "${RG_PORT_BEFORE[$id]}" != none ] || continue
    rg_saved "$id" "$dev" >/dev/null && continue
    case ${RG_PORT_BEFORE[$id]} in
      *$'\t'* | *$'\n'*) continue ;;
    esac
    lines+="$id"$'\t'"$dev"$'\t'"${RG_PORT_BEFORE[$id]}"$'\n'
  done
  [ -n "$lines" ] || return 0
  rg_save_lines "$lines" "the original values of $dev" "nothing was changed on $dev, so rollback stays possible"
}

# rg_save_lines LINES WHAT CONSEQUENCE: appends to the saved state; a run that cannot save what
# it is about to change stops (rg_abort) before changing it.
rg_save_lines() {
  local err
  if ! err=$({ mkdir -p "$RG_STATE_DIR" && printf '%s' "$1" >>"$RG_SAVED"; } 2>&1); then
    rg_abort saved_state "cannot save $2 in $RG_SAVED (${err##*: }): $3"
  fi
}

# rg_saved ID NIC: prints the saved original value of a setting, if apply saved one. Host-wide
# items are saved with the NIC `-` (an empty field would vanish between two tabs).
rg_saved() {
  local id nic value
  [ -r "$RG_SAVED" ] || return 1
  while IFS=$'\t' read -r id nic value; do
    if [ "$id" = "$1" ] && [ "$nic" = "${2:--}" ]; then
      printf '%s' "$value"
      return 0
    fi
  done <"$RG_SAVED"
  return 1
}

# rg_save ID NIC VALUE: remembers one value (host-wide items such as persistence).
rg_save() {
  [ "$RG_DRY_RUN" = no ] || return 0
  rg_saved "$1" "$2" >/dev/null && return 0
  rg_save_lines "$1"$'\t'"${2:--}"$'\t'"$3"$'\n' "the original $1" "not changed"
}

# rg_apply_all I IDS: apply for NIC I: save everything, write what differs in order, read back.
# --dry-run takes the same steps on a simulation of the port (RG_PORT_SIM, see rg_current), so
# that it prints the very commands apply runs and predicts exactly what apply changes. Reads
# RG_PORT_BEFORE; sets RG_PORT_WRITTEN and RG_PORT_SIM.
rg_apply_all() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ids=$2 id want now after note cable
  local -A failed=()
  RG_PORT_WRITTEN=() RG_PORT_SIM=()
  if [ "$RG_DRY_RUN" = yes ]; then
    for id in $ids; do RG_PORT_SIM[$id]=${RG_PORT_BEFORE[$id]}; done
  else
    rg_save_all "$i" "$ids"
  fi
  for id in $ids; do
    rg_planned "$id" "$i"
    want=$REPLY
    # The current value, not the one read at the start: an earlier change may have set it
    # (trust dscp programs the default map; PFC clears pause).
    rg_current "$id" "$i" || RG_V=""
    now=$RG_V
    [ "$now" != "$want" ] || continue
    if [ "$id" = dscp2prio ] && rg_qos_is mlnx_qos && [[ " $ids " == *" pfc "* ]] &&
      rg_current pfc "$i" && [ "$RG_V" != "$RG_PFC" ]; then
      # One mlnx_qos start for both (trust cannot be combined, PFC and the map can), and the
      # cable length when it changes too.
      cable=$(rg_cable_args "$i" "$ids")
      # shellcheck disable=SC2046,SC2086 # see rg_dscp_args; $cable is digits and an option
      rg_qos_set "$i" --pfc "$RG_PFC" $cable $(rg_dscp_args "$want") || failed[pfc]=1
      [ -z "${failed[pfc]+set}" ] || failed[dscp2prio]=1
      RG_PORT_WRITTEN[pfc]=1
      RG_PORT_WRITTEN[dscp2prio]=1
      rg_simulate dscp2prio "$want"
      rg_simulate pfc "$RG_PFC"
      if [ -n "$cable" ]; then
        RG_PORT_WRITTEN[cable_length]=1
        [ -z "${failed[pfc]+set}" ] || failed[cable_length]=1
        rg_simulate cable_length "$RG_CABLE_LEN"
      fi
      rg_add_flap "$i"
      continue
    fi
    if [ "$id" = pfc ] && cable=$(rg_cable_args "$i" "$ids") && [ -n "$cable" ]; then
      # PFC and the cable length in one mlnx_qos call: its request carries both.
      # shellcheck disable=SC2086 # $cable is digits and an option
      rg_qos_set "$i" --pfc "$want" $cable || failed[pfc]=1
      [ -z "${failed[pfc]+set}" ] || failed[cable_length]=1
      RG_PORT_WRITTEN[pfc]=1
      RG_PORT_WRITTEN[cable_length]=1
      rg_simulate pfc "$want"
      rg_simulate cable_length "$RG_CABLE_LEN"
      rg_add_flap "$i"
      continue
    fi
    RG_PORT_WRITTEN[$id]=1
    if ! rg_set "$id" "$i" "$want"; then
      failed[$id]=1
    fi
    rg_simulate "$id" "$want"
    [ "$id" != pfc ] || rg_add_flap "$i"
  done
  # A link the changes toggled is back before anything is read back.
  rg_link_wait "$i"
  if [ "$RG_DRY_RUN" = yes ]; then
    rg_predict "$i" "$ids"
    return 0
  fi
  for id in $ids; do
    rg_planned "$id" "$i"
    want=$REPLY
    now=${RG_PORT_BEFORE[$id]}
    rg_get "$id" "$i" || RG_V=""
    after=$RG_V
    # The facts say who owns DCBX after the run, not before it.
    # shellcheck disable=SC2034 # rg_facts (lib-probe.sh) reads it
    [ "$id" != dcbx ] || RG_DCBX_SEEN[i]=$after
    note=""
    [ "$id" != pfc ] || [ "$now" = "$want" ] || note=$(rg_flap_note "$i")
    if [ "$id" = cable_length ] && [ "$after" = "$want" ] && ! rg_cable_effect "$i" "$want"; then
      # Stored is not done: the value reads back, the headroom stays as the firmware sized it.
      if [ "$now" = "$want" ]; then
        rg_check "$id" "$dev" warn warning "$want" "$after" "cable_length is $want m as planned, but it sizes no headroom: $RG_WHY; $(rg_cable_fix "$i")"
      else
        rg_check "$id" "$dev" warn warning "$want" "$after" "cable_length stored as $want m (was ${now:-unset}), but the lossless headroom was not resized: $RG_WHY; $(rg_cable_fix "$i")"
      fi
    elif [ "$now" = "$want" ] && [ "$after" = "$want" ]; then
      if [ -n "${RG_PORT_WRITTEN[$id]+set}" ]; then
        rg_check "$id" "$dev" pass error "$want" "$after" "$id is $want as planned; set again after an earlier change altered it"
      else
        rg_check "$id" "$dev" pass error "$want" "$after" "$id is $want as planned; unchanged"
      fi
    elif [ "$after" = "$want" ]; then
      if [ "$id" = pause ] && [ -z "${RG_PORT_WRITTEN[pause]+set}" ]; then
        note=" (the driver cleared it when PFC was set)"
      fi
      rg_check_change "$id" "$dev" changed error "$want" "$after" "$id changed from ${now:-unset} to $want$note" "$now"
    elif [ -n "${failed[$id]+set}" ]; then
      rg_check "$id" "$dev" fail error "$want" "$after" "setting $id to $want failed (see the log above)$note"
    else
      rg_check "$id" "$dev" fail error "$want" "$after" "$id was set to $want but reads back as ${after:-nothing}$note"
    fi
  done
}

# rg_current ID I: RG_V = the value setting ID of NIC I has at this point of rg_apply_all: read from
# the host, or with --dry-run the one the changes so far would have left. Reads RG_PORT_SIM.
rg_current() {
  if [ "$RG_DRY_RUN" = no ]; then
    rg_get "$1" "$2"
    return
  fi
  [ -n "${RG_PORT_SIM[$1]+set}" ] || return 1
  RG_V=${RG_PORT_SIM[$1]}
}

# rg_simulate ID VALUE: --dry-run: the port's values once setting ID is changed to VALUE,
# with the driver's side effects: trust dscp on a port in PCP trust (no DSCP entries) programs
# the 64 default entries (priority = DSCP >> 3); a PFC change clears 802.3x pause. Sets
# RG_PORT_SIM.
rg_simulate() {
  [ "$RG_DRY_RUN" = yes ] || return 0
  RG_PORT_SIM[$1]=$2
  case $1 in
    trust)
      if [ "$2" = dscp ] && [ -n "${RG_PORT_SIM[dscp2prio]+set}" ]; then
        RG_PORT_SIM[dscp2prio]=$(rg_pairs_of "$(rg_default_map)" "$RG_ROCE_DSCP" "$RG_CNP_DSCP")
      fi
      ;;
    pfc) [ -z "${RG_PORT_SIM[pause]+set}" ] || RG_PORT_SIM[pause]="rx off tx off" ;;
  esac
}

# rg_dscp_args PAIRS: `--dscp2prio set,D,P` words for `D:P,...` (digits and commas only, so
# they split safely).
rg_dscp_args() {
  local pair
  for pair in ${1//,/ }; do
    printf -- '--dscp2prio set,%s,%s ' "${pair%%:*}" "${pair#*:}"
  done
}

# rg_predict I IDS: --dry-run: the checks apply would record, once rg_apply_all has printed
# what it would run: a setting differs from the plan now, so apply changes it (by a command of
# its own, or as a side effect of an earlier one), or it is as planned. Reads RG_PORT_BEFORE and
# RG_PORT_WRITTEN.
rg_predict() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} id want was note
  for id in $2; do
    rg_planned "$id" "$i"
    want=$REPLY
    was=${RG_PORT_BEFORE[$id]}
    if [ "$was" = "$want" ]; then
      if [ -n "${RG_PORT_WRITTEN[$id]+set}" ]; then
        rg_check "$id" "$dev" pass error "$want" "$was" "$id is $want as planned; an earlier change alters it, so apply sets it again"
      else
        rg_check "$id" "$dev" pass error "$want" "$was" "$id is $want as planned; unchanged"
      fi
      continue
    fi
    if [ "$id" = cable_length ] && ! rg_cable_effect "$i" "$was"; then
      # As apply will find it: stored, no headroom resized (no change to count).
      rg_check "$id" "$dev" warn warning "$want" "$was" "cable_length would be stored as $want m (now ${was:-unset}) and size no headroom: $RG_WHY; $(rg_cable_fix "$i")"
      continue
    fi
    note=""
    [ -n "${RG_PORT_WRITTEN[$id]+set}" ] || note=" (a side effect of an earlier change: nothing to run)"
    [ "$id" != pfc ] || note=$(rg_flap_note "$i")
    rg_check_change "$id" "$dev" warn error "$want" "$was" "dry run: $id would change from ${was:-unset} to $want$note" "$was"
  done
}

# rg_restore DEV ID=VALUE...: rollback of one port: every value apply saved for it (the saved
# state's lines of DEV, in their order; of an ID saved twice the later value counts), in
# RG_RESTORE_ORDER. The whole DSCP map, saved as `dscp_map`, is restored under the check id
# `dscp2prio`: one name per setting in every phase.
rg_restore() {
  local dev=$1 i key id want now after note order=$RG_RESTORE_ORDER map_before="" word was=no
  local -A saved=()
  if [[ $dev == */* ]]; then
    rg_lag_restore "$@"
    return
  fi
  shift
  for word in "$@"; do saved[${word%%=*}]=${word#*=}; done
  order="$(rg_dcqcn_saved_ids ${saved[@]+"${!saved[@]}"}) $order"
  i=$(rg_index_of "$dev") || {
    for key in ${saved[@]+"${!saved[@]}"}; do
      id=${key/#dscp_map/dscp2prio}
      rg_check "$id" "$dev" fail error "${saved[$key]}" "" "$dev is not in this bundle's plan; restore $id by hand to ${saved[$key]}"
    done
    return 0
  }
  # A port that had no DSCP entries (PCP trust) gets its empty map back from restoring trust pcp,
  # which removes every entry: check the map after trust.
  if [ "${saved[dscp_map]-}" = none ] && [ -n "${saved[trust]+set}" ]; then
    order=${order/dscp_map trust/trust dscp_map}
    ! rg_get dscp_map "$i" || map_before=$RG_V
  fi
  # Restoring PFC toggles the link: rollback waits for it as apply does (rg_link_wait).
  if [ -n "${saved[pfc]+set}" ] && [ "$RG_DRY_RUN" = no ] && rg_link_up "$i"; then was=pass; fi
  for key in $order; do
    [ -n "${saved[$key]+set}" ] || continue
    want=${saved[$key]}
    id=${key/#dscp_map/dscp2prio}
    if ! rg_get "$key" "$i"; then
      rg_check "$id" "$dev" fail error "$want" "" "cannot read $id to restore it: $RG_V"
      continue
    fi
    now=$RG_V
    # shellcheck disable=SC2034 # rg_facts (lib-probe.sh) reads it
    [ "$id" != dcbx ] || RG_DCBX_SEEN[i]=$now
    note=""
    [ "$id" != pfc ] || note=$(rg_flap_note "$i")
    if [ "$now" = "$want" ] && [ "$key" = dscp_map ] && [ -n "$map_before" ] && [ "$map_before" != "$want" ]; then
      rg_check_change "$id" "$dev" changed error "$want" "$now" "the DSCP map is restored to none: restoring trust pcp removed its entries" "$map_before"
      continue
    elif [ "$now" = "$want" ]; then
      rg_check "$id" "$dev" pass error "$want" "$now" "$id is already $want"
      continue
    fi
    if [ "$key" = dcbx ] && [ "$want" = fw ] && rg_qos_is dcb; then
      # mlx5e_dcbnl_setdcbx hands DCBX back to the firmware only for mode 0, which `dcb dcbx
      # set` cannot send (no flag: it prints its usage). Not a failure of the rollback.
      rg_check dcbx "$dev" skip warning "$want" "$now" \
        "not restored: DCBX of ${RG_NIC_NETDEV[i]} was firmware-controlled before apply, and dcb (iproute2) cannot hand it back to the firmware (the driver takes only the empty DCBX mode for that, which dcb dcbx set cannot send); it stays OS-controlled with the restored settings: to give it back, run mlnx_qos -i ${RG_NIC_NETDEV[i]} -d fw (MLNX_OFED/DOCA's mlnx-tools)"
      continue
    fi
    if [ "$key" = dscp_map ]; then
      [ "$want" != none ] || rg_set trust "$i" pcp || true
      rg_set dscp_map "$i" "$(rg_map_diff "$now" "$want")" || true
    else
      rg_set "$key" "$i" "$want" || true
    fi
    [ "$id" != pfc ] || rg_add_flap "$i"
    if [ "$RG_DRY_RUN" = yes ]; then
      rg_check_change "$id" "$dev" warn error "$want" "$now" "dry run: $id would be restored from $now to $want$note" "$now"
      continue
    fi
    rg_get "$key" "$i" || RG_V=""
    after=$RG_V
    # shellcheck disable=SC2034 # rg_facts (lib-probe.sh) reads it
    [ "$id" != dcbx ] || RG_DCBX_SEEN[i]=$after
    if [ "$after" = "$want" ]; then
      rg_check_change "$id" "$dev" changed error "$want" "$after" "$id restored from $now to $want$note" "$now"
      # Handing DCBX to the firmware makes it willing (lib-firmware.sh).
      if [ "$id" = dcbx ] && [ "$want" = fw ]; then rg_fw_willing "$i"; fi
    else
      rg_check "$id" "$dev" fail error "$want" "$after" "$id could not be restored to $want (reads ${after:-nothing})$note"
    fi
  done
  rg_link_wait "$i" "$was"
}

# rg_map_diff NOW WANT: the `D:P` sets and `D:-P` deletes that turn DSCP map NOW into WANT.
# When WANT is `none` (PCP trust) the map is left: restoring trust pcp then removes it whole.
rg_map_diff() {
  local now=",$1," want=",$2," pair d out=""
  [ "$2" != none ] || return 0
  for pair in ${2//,/ }; do
    [[ $now == *",$pair,"* ]] || out+="${out:+,}$pair"
  done
  for pair in ${1//,/ }; do
    [ "$pair" != none ] || continue
    d=${pair%%:*}
    [[ $want == *",$d:"* ]] || out+="${out:+,}$d:-${pair#*:}"
  done
  printf '%s' "$out"
}

# rg_index_of DEV: the plan index of an RDMA device.
rg_index_of() {
  local i
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    if [ "${RG_NIC_IBDEV[i]}" = "$1" ]; then
      printf '%s' "$i"
      return 0
    fi
  done
  return 1
}

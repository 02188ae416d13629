# shellcheck shell=bash
# lib-firmware.sh, part of lib.sh: the NICs' firmware (NV) configuration, as the plan's
# firmware_config says. `report`: precheck and apply read, per NIC, the parameters below (their
# current and next-boot values), record them in the facts and warn where one contradicts the
# plan; `apply`: apply also sets those that contradict it, for the next boot, after saving the
# next-boot values they had (rollback sets those again); `off`: no firmware access at all. Read
# and set with mlxconfig (NVIDIA MFT) or mstconfig (mstflint, the same code under another name).
# NV values take effect only at the next boot (or a firmware reset), so a run that sets one
# marks its result reboot_required; the boot unit never touches them.

# The parameters read per port, without their _P<port> suffix: congestion control per priority,
# the CNP's DSCP and priority, the firmware's DCBX client and whether it takes the switch's
# settings, and the port's protocol.
RG_FW_PARAMS="ROCE_CC_PRIO_MASK CNP_DSCP CNP_802P_PRIO LLDP_NB_DCBX DCBX_WILLING LINK_TYPE"
# The card-wide parameters of a BlueField's Arm cores (mstflint's mlxconfig_host.db, TLV
# nv_internal_cpu_conf): EMBEDDED_CPU(1) with the offload engine ENABLED(0) is DPU mode
# (GenericCommander::isDPUEnabled, mstfwreset's isBluefieldNicMode); DISABLED(1) is NIC mode.
RG_FW_DPU_PARAMS="INTERNAL_CPU_MODEL INTERNAL_CPU_OFFLOAD_ENGINE"
# yes when a value read differs between now and the next boot: the host needs a reboot for
# it to take effect (the result's reboot_required).
RG_REBOOT_REQUIRED=no
# The NICs with such a value, for the summary.
RG_FW_PENDING=""
# yes when precheck or a dry run found values apply would set.
RG_FW_WOULD_SET=no
# mlxconfig or mstconfig, once rg_firmware has looked.
RG_FW_TOOL=""
# Per NIC: its members of the result's facts (fw_NAME, fw_NAME_next, fw_device, fw_tool).
RG_FW_FACTS=()
# The values of the last query, by full name (CNP_DSCP_P1), as numbers: the current value
# (empty where the firmware cannot tell) and the next-boot value.
declare -A RG_FW_CUR=() RG_FW_NEXT=()
# Of the last query: the rows the tool marks `RO` (this host may read them, not set them; mstflint
# 4.25 and later print the mark), what it said of the parameters it could not read, and yes when
# the host may not reach the NV registers at all.
declare -A RG_FW_RO=()
RG_FW_NOTE=""
RG_FW_LOCKED=no
# The NIC in hand's parameters whose set the tool refused (this apply or an earlier one, saved),
# and what it said.
RG_FW_REFUSED=""
RG_FW_REFUSED_WHY=""
# The names the last query found: what a read-back asks for.
RG_FW_ASKED=""
# Per NIC: nic, dpu (a BlueField whose Arm cores own the port) or restricted (this host may not
# set the firmware: a zero-trust BlueField), the `fw_mode` fact.
RG_FW_MODE=()
# The NIC in hand (rg_fw_nic, read by rg_fw_record): its next-boot values as first read, and
# the values apply sets, or would, where they contradict the plan.
declare -A RG_FW_BEFORE=() RG_FW_PLANNED=()

# --- reading the tool's output (pure) ------------------------------------------------------------

# rg_nv_number WORD: REPLY = the number a value cell stands for: `48` → 48, `True(1)` → 1,
# `ETH(2)` → 2; empty for `N/A`, `Array[0..7]` and anything else.
rg_nv_number() {
  local re='^[^()]*\(([0-9]+)\)$'
  REPLY=""
  if [[ $1 =~ ^[0-9]+$ ]]; then
    REPLY=$((10#$1))
  elif [[ $1 =~ $re ]]; then
    REPLY=$((10#${BASH_REMATCH[1]}))
  fi
}

# rg_parse_nvconfig: `mlxconfig -d BDF [-e] q [NAME...]` (mstconfig prints the same) → one line
# per parameter: name, default, current and next-boot value, each a number or empty where the
# output has no such column (without -e only `Next Boot` is printed) or says N/A, and `ro` where
# the row is marked read-only, tab-separated. The table is read whatever the tool's exit status:
# it prints the rows it could read before the error of one it could not. The table is read by its `Configurations:` header, whatever the column widths (they
# changed between versions): a row is an optional `*` (the next-boot value differs from the
# default or the current one), an optional `RO` (read-only), the name and one value per
# column. Nothing before the header is taken, nor error lines (`-E- ...`), nor a row whose
# cells do not match the header.
rg_parse_nvconfig() {
  local line rest name n ro
  local -a cols=() words=()
  local -A cell=()
  while IFS= read -r line; do
    if [[ $line == Configurations:* ]]; then
      rest=${line#Configurations:}
      read -r -a cols <<<"${rest//Next Boot/Next}"
      continue
    fi
    [ ${#cols[@]} -gt 0 ] || continue
    rest=${line#\*}
    rest=${rest#"${rest%%[![:space:]]*}"}
    ro=""
    [[ $rest != RO[[:space:]]* ]] || rest=${rest#RO} ro=ro
    read -r -a words <<<"$rest"
    [ ${#words[@]} -eq $((${#cols[@]} + 1)) ] || continue
    name=${words[0]}
    [[ $name =~ ^[A-Z][A-Z0-9_]*$ ]] || continue
    cell=()
    for ((n = 0; n < ${#cols[@]}; n++)); do
      rg_nv_number "${words[n + 1]}"
      cell[${cols[n]}]=$REPLY
    done
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "${cell[Default]-}" "${cell[Current]-}" "${cell[Next]-}" "$ro"
  done
}

# rg_nv_error TEXT: what a failed mlxconfig says (`-E- ...`, printed on stdout, with the
# indented lines that go on with it, as after `Failed to query some of the TLVs:`), else its
# last line.
rg_nv_error() {
  local line last="" err="" words
  while IFS= read -r line; do
    if [ -n "$err" ]; then
      [[ $line == [[:space:]]*[![:space:]]* ]] || break
      read -r -a words <<<"$line"
      err+=" ${words[*]}"
      continue
    fi
    case $line in
      -E-*) err=${line#-E- } ;;
      *[![:space:]]*) last=$line ;;
    esac
  done <<<"$1"
  printf '%s' "${err:-${last:-no output}}"
}

# --- the device, the tool, a query -------------------------------------------------------------

# rg_fw_tool: mlxconfig where installed, else mstconfig; nothing when neither is.
rg_fw_tool() {
  if rg_has mlxconfig; then
    printf mlxconfig
  elif rg_has mstconfig; then
    printf mstconfig
  fi
}

# rg_fw_device I: the PCI address the tool is given for NIC I: the planned one, else the
# netdev's (the basename of /sys/class/net/IF/device). A bond has no device: a LAG NIC's card is
# addressed through PF0, function 0 of its first slave's card (mlxconfig reaches both ports'
# parameters through either function of a dual-port card).
rg_fw_device() {
  local pci=${RG_NIC_PCI[$1]-} s
  if rg_is_lag "$1"; then
    for s in ${RG_NIC_SLAVES[$1]}; do
      pci=$(rg_netdev_pci "$s")
      [ -z "$pci" ] || break
    done
    [ -n "$pci" ] || pci=$(rg_lag_pci "$1")
    [ -z "$pci" ] || pci=${pci%.*}.0
  elif [ -z "$pci" ]; then
    pci=$(readlink "$RG_ROOT/sys/class/net/${RG_NIC_NETDEV[$1]}/device" 2>/dev/null) || pci=""
    pci=${pci##*/}
  fi
  printf '%s' "$pci"
}

# rg_fw_port BDF: the suffix of the port a PCI function drives: each mlx5 physical function
# drives one port, function N port N+1 (a dual-port card shows both ports' parameters on
# either function).
rg_fw_port() {
  local fn=${1##*.}
  [[ $fn =~ ^[0-7]$ ]] || fn=0
  printf 'P%s' "$((fn + 1))"
}

# rg_fw_ports I: the port suffixes of NIC I's parameters: its PCI function's port, or on a LAG
# NIC each slave's (P1 for PF0's port, P2 for PF1's), in order.
rg_fw_ports() {
  local s pci have=" " n out=""
  if rg_is_lag "$1" && [ -n "${RG_NIC_SLAVES[$1]}" ]; then
    for s in ${RG_NIC_SLAVES[$1]}; do
      pci=$(rg_netdev_pci "$s")
      [ -z "$pci" ] || have+="$(rg_fw_port "$pci") "
    done
    for ((n = 1; n <= 8; n++)); do
      [[ $have != *" P$n "* ]] || out+="${out:+ }P$n"
    done
    printf '%s' "$out"
    return 0
  fi
  rg_fw_port "$(rg_fw_device "$1")"
}

# rg_fw_port_in_hand I: the port suffix of the slave whose settings are in hand on a LAG NIC
# (rg_lag_restore), else NIC I's port.
rg_fw_port_in_hand() {
  if [ -n "$RG_LAG_PORT" ]; then
    rg_fw_port "$(rg_netdev_pci "$RG_LAG_PORT")"
  else
    rg_fw_port "$(rg_fw_device "$1")"
  fi
}

# rg_fw_query BDF NAME...: RG_FW_CUR, RG_FW_NEXT and RG_FW_RO = the named parameters of the
# device at BDF that it has; fails with the reason in RG_V. A firmware without one of the names
# refuses the whole query (`The Device doesn't support X parameter`,
# GenericCommander::queryParamViews): that name is dropped and the others asked for again, so
# only what the device has is queried. Any other refusal (a TLV the firmware does not return):
# the query of every parameter, whose table is read whatever its exit status (queryAll collects
# the TLVs that fail, MlxCfg::queryDevCfg prints the rest and then exits 3); RG_FW_NOTE keeps
# what it said. RG_FW_LOCKED=yes when the host may not reach the NV registers.
rg_fw_query() {
  local bdf=$1 out rc name cur next ro err rows=0 n
  shift
  local -a ask=("$@")
  RG_FW_CUR=() RG_FW_NEXT=() RG_FW_RO=() RG_FW_NOTE="" RG_FW_LOCKED=no RG_FW_ASKED=""
  while :; do
    rc=0
    rg_cap rg_x "$RG_FW_TOOL" -d "$bdf" -e q ${ask[@]+"${ask[@]}"} || rc=$?
    out=$RG_CAP
    [ "$rc" -ne 0 ] || break
    err=$(rg_nv_error "$out")
    # (A tool that hung is not asked again.)
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      RG_V="$RG_FW_TOOL -d $bdf -e q: $err (exit $rc)"
      return 1
    fi
    case $err in
      "Cannot access NV register"*)
        RG_FW_LOCKED=yes
        RG_V="$RG_FW_TOOL -d $bdf -e q: $err (exit $rc)"
        return 1
        ;;
    esac
    name=${err#"The Device doesn't support "}
    name=${name%" parameter"}
    if [ "$name" != "$err" ] && [ ${#ask[@]} -gt 0 ] && [[ " ${ask[*]} " == *" $name "* ]]; then
      for ((n = 0; n < ${#ask[@]}; n++)); do
        [ "${ask[n]}" != "$name" ] || unset "ask[n]"
      done
      ask=(${ask[@]+"${ask[@]}"})
      # None of the names is the device's.
      [ ${#ask[@]} -gt 0 ] || return 0
      continue
    fi
    if [ ${#ask[@]} -eq 0 ]; then
      RG_FW_NOTE="$RG_FW_TOOL -d $bdf -e q: $err (exit $rc)"
      break
    fi
    ask=()
  done
  while IFS=$'\t' read -r name _ cur next ro; do
    [ -n "$name" ] || continue
    rows=$((rows + 1))
    if [[ " $* " != *" $name "* ]] || [ -z "$next" ]; then continue; fi
    RG_FW_ASKED+=" $name"
    RG_FW_CUR[$name]=$cur
    RG_FW_NEXT[$name]=$next
    [ -z "$ro" ] || RG_FW_RO[$name]=1
  done <<<"$(rg_parse_nvconfig <<<"$out")"
  if [ "$rows" -eq 0 ]; then
    RG_V="$RG_FW_TOOL -d $bdf -e q: $(rg_nv_error "$out")"
    if [ "$rc" -ne 0 ]; then RG_V+=" (exit $rc)"; else RG_V+=" (no configuration table)"; fi
    return 1
  fi
}

# rg_fw_bluefield BDF: true when the PCI function is a BlueField's (the PCI device IDs of
# mstflint's mtcr_ul_com.c: BlueField, -2, -3 and -4 network controllers).
rg_fw_bluefield() {
  local id=""
  [ ! -r "$RG_ROOT/sys/bus/pci/devices/$1/device" ] || read -r id <"$RG_ROOT/sys/bus/pci/devices/$1/device" || id=""
  case $id in 0xa2d2 | 0xa2d6 | 0xa2dc | 0xa2dd | 0xa2de | 0xa2df) return 0 ;; esac
  return 1
}

# rg_fw_mode_of NAMES: RG_V = what the last query says of the host's hold on the firmware:
# restricted where a planned parameter among NAMES reads as read-only to this host, dpu where the
# BlueField's Arm cores run with the offload engine on (the current values), else nic.
rg_fw_mode_of() {
  local name
  RG_V=nic
  for name in $1; do
    if [ -n "${RG_FW_RO[$name]-}" ]; then
      RG_V=restricted
      return 0
    fi
  done
  if [ "${RG_FW_CUR[INTERNAL_CPU_MODEL]-${RG_FW_NEXT[INTERNAL_CPU_MODEL]-}}" = 1 ] &&
    [ "${RG_FW_CUR[INTERNAL_CPU_OFFLOAD_ENGINE]-${RG_FW_NEXT[INTERNAL_CPU_OFFLOAD_ENGINE]-}}" = 0 ]; then
    RG_V=dpu
  fi
}

# rg_fw_mode_check DEV BDF MODE: the `fw_mode` check of a NIC whose host cannot do everything:
# a warning that says what it cannot set and where it is set instead.
rg_fw_mode_check() {
  local dev=$1 bdf=$2
  case $3 in
    dpu)
      rg_check fw_mode "$dev" warn warning nic dpu \
        "$dev ($bdf) is a BlueField in DPU mode (INTERNAL_CPU_MODEL = EMBEDDED_CPU(1), INTERNAL_CPU_OFFLOAD_ENGINE = ENABLED(0)): its Arm cores own the port's eswitch, so the port's QoS (trust, DSCP map, PFC, ETS, DCBX) is set on the DPU's own OS, not from this host; configure RoCE there, or switch the card to NIC mode (INTERNAL_CPU_OFFLOAD_ENGINE=DISABLED, then a power cycle)"
      ;;
    restricted)
      rg_check fw_mode "$dev" warn warning nic restricted \
        "this host may read but not set the firmware (NV) configuration of $dev ($bdf): a restricted (zero-trust) BlueField host; set the firmware values from the DPU's Arm OS (mlxconfig there), or lift the restriction there (mlxprivhost -d DEVICE p) and power cycle"
      ;;
  esac
}

# --- what the plan needs ---------------------------------------------------------------------------

# rg_fw_mask_needed: the bits ROCE_CC_PRIO_MASK must have: the RoCE priority and every ECN
# priority; 0 when the plan turns ECN off (then the mask is not the plan's business).
rg_fw_mask_needed() {
  local bits=0 p=0 v
  [[ $RG_ECN == *1* ]] || {
    printf 0
    return 0
  }
  bits=$((1 << RG_ROCE_PRIO))
  for v in ${RG_ECN//,/ }; do
    [ "$v" != 1 ] || bits=$((bits | (1 << p)))
    p=$((p + 1))
  done
  printf '%s' "$bits"
}

# rg_fw_want BASE VALUE LLDP: RG_V = the value the plan needs for parameter BASE (no port
# suffix) where it now has VALUE and LLDP_NB_DCBX is LLDP; empty when the plan has no say.
rg_fw_want() {
  local need
  RG_V=""
  case $1 in
    ROCE_CC_PRIO_MASK)
      need=$(rg_fw_mask_needed)
      [ "$need" -eq 0 ] || RG_V=$(($2 | need))
      ;;
    CNP_DSCP) RG_V=$RG_CNP_DSCP ;;
    CNP_802P_PRIO) RG_V=$RG_CNP_PRIO ;;
    # A willing firmware DCBX client takes the switch's PFC/ETS over the host's; it is only
    # active with LLDP_NB_DCBX on. With dcbx = leave the plan has no opinion.
    DCBX_WILLING) [ "$RG_DCBX" = leave ] || [ "$3" != 1 ] || RG_V=0 ;;
    LINK_TYPE) RG_V=2 ;;
  esac
}

# rg_fw_ok BASE VALUE LLDP: true when VALUE is what the plan needs (or the plan has no say).
rg_fw_ok() {
  rg_fw_want "$@"
  [ -z "$RG_V" ] || [ "$2" = "$RG_V" ]
}

# rg_fw_show BASE VALUE: a value as the tool words it (`True(1)`, `ETH(2)`, `48`).
rg_fw_show() {
  case $1 in
    LLDP_NB_DCBX | DCBX_WILLING)
      case $2 in 0) printf 'False(0)' ;; 1) printf 'True(1)' ;; *) printf '%s' "$2" ;; esac
      ;;
    LINK_TYPE)
      case $2 in 1) printf 'IB(1)' ;; 2) printf 'ETH(2)' ;; *) printf '%s' "$2" ;; esac
      ;;
    *) printf '%s' "$2" ;;
  esac
}

# rg_fw_word BASE VALUE: a value as apply gives it to the tool: the link type by its name (as
# NVIDIA's own tooling sets it), the rest as numbers.
rg_fw_word() {
  if [ "$1" = LINK_TYPE ]; then
    case $2 in 1) printf IB ;; 2) printf ETH ;; *) printf '%s' "$2" ;; esac
  else
    printf '%s' "$2"
  fi
}

# rg_fw_why BASE VALUE LLDP PORT: why VALUE contradicts the plan, for messages.
rg_fw_why() {
  local miss="" p
  case $1 in
    ROCE_CC_PRIO_MASK)
      for ((p = 0; p < 8; p++)); do
        if (($(rg_fw_mask_needed) & (1 << p))) && ! (($2 & (1 << p))); then miss+="${miss:+, }$p"; fi
      done
      printf 'congestion control is off on priority %s (the RoCE and ECN priorities need it)' "$miss"
      ;;
    # The driver starts from the NV value; OFED's sysfs can override it at run time, the inbox
    # driver cannot.
    CNP_DSCP) printf 'CNPs carry DSCP %s wherever nothing overrides it at run time, the plan says cnp_dscp %s' "$2" "$RG_CNP_DSCP" ;;
    CNP_802P_PRIO) printf 'CNPs carry priority %s wherever nothing overrides it at run time, the plan says cnp_priority %s' "$2" "$RG_CNP_PRIO" ;;
    DCBX_WILLING)
      printf 'with LLDP_NB_DCBX_%s on, the firmware takes the switch'\''s DCBX settings, which can override the host'\''s PFC and ETS (dcbx = %s)' "$4" "$RG_DCBX"
      ;;
    LINK_TYPE) printf 'the port runs InfiniBand, not Ethernet' ;;
  esac
}

# --- the firmware step of a run -------------------------------------------------------------------

# rg_firmware MODE: precheck (MODE compare) or apply (MODE apply) of every NIC's NV values.
rg_firmware() {
  local mode=$1 i sev=info
  [ "$RG_FW_CONFIG" != apply ] || sev=warning
  if [ "$RG_FW_CONFIG" = off ]; then
    rg_check firmware_config "" skip info off "" "skipped: the plan says firmware_config = off (no firmware access)"
    return 0
  elif [ "$RG_BOOT" = yes ]; then
    rg_check firmware_config "" skip info "$RG_FW_CONFIG" "" \
      "skipped: the boot unit never touches the firmware (NV) configuration; run apply.sh by hand to read or set it"
    return 0
  fi
  RG_FW_TOOL=$(rg_fw_tool)
  if [ -z "$RG_FW_TOOL" ]; then
    rg_check firmware_config "" skip "$sev" "mlxconfig or mstconfig" "" \
      "skipped: neither mlxconfig (NVIDIA MFT) nor mstconfig (mstflint: apt install mstflint, dnf install mstflint) is installed, so the firmware (NV) configuration is not read"
    return 0
  fi
  rg_progress "reading each NIC's firmware (NV) configuration with $RG_FW_TOOL"
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    rg_fw_nic "$mode" "$i"
  done
}

# rg_fw_nic MODE I: NIC I's NV values read, checked against the plan and (apply, when the plan
# says firmware_config = apply) set where they contradict it.
rg_fw_nic() {
  local mode=$1 i=$2 dev=${RG_NIC_IBDEV[$2]} bdf port ports base name names="" setting=no
  local next lldp sets=() lines="" failed=no err="" status=warn sev=warning note
  RG_FW_BEFORE=() RG_FW_PLANNED=()
  if [ "$RG_FW_CONFIG" = apply ] && [ "$mode" = apply ]; then
    setting=yes
    # Apply cannot do what the plan asks of a firmware it cannot read.
    [ "$RG_DRY_RUN" = yes ] || status=fail sev=error
  fi
  if ! rg_identity_ok "$i"; then
    rg_check firmware_config "$dev" skip warning "" "" "skipped: the identity of $dev did not check out"
    return 0
  fi
  bdf=$(rg_fw_device "$i")
  if [ -z "$bdf" ]; then
    rg_check firmware_config "$dev" "$status" "$sev" "" "" \
      "cannot tell the PCI address of ${RG_NIC_NETDEV[i]} (no /sys/class/net/${RG_NIC_NETDEV[i]}/device): its firmware values are not read"
    return 0
  fi
  ports=$(rg_fw_ports "$i")
  for port in $ports; do
    for base in $RG_FW_PARAMS; do names+=" ${base}_$port"; done
  done
  ! rg_fw_bluefield "$bdf" || names+=" $RG_FW_DPU_PARAMS"
  # shellcheck disable=SC2086 # one word per name
  if ! rg_fw_query "$bdf" $names; then
    if [ "$RG_FW_LOCKED" = yes ]; then
      # What the host may not do is a fact of the host, not a failure of the run.
      RG_FW_MODE[i]=restricted
      rg_json_fmt '"fw_tool":%s,"fw_device":%s,"fw_mode":"restricted"' s "$RG_FW_TOOL" s "$bdf"
      RG_FW_FACTS[i]=$REPLY
      rg_check firmware_config "$dev" warn warning "" "" \
        "this host may not read or set the firmware (NV) configuration of $dev ($RG_V): a restricted (zero-trust) BlueField host, whose firmware values are set from the DPU's Arm OS; nothing here is read or set"
      return 0
    fi
    rg_check firmware_config "$dev" "$status" "$sev" "" "" "cannot read the firmware (NV) configuration of $dev: $RG_V"
    return 0
  fi
  rg_fw_mode_of "$names"
  # A set refused at an earlier apply (rg_fw_refused) is not sent again: a table without the RO
  # column (mstflint before 4.25) cannot tell, so the refusal is what says it.
  RG_FW_REFUSED=$(rg_saved nv_refused "$dev" 2>/dev/null) || RG_FW_REFUSED=""
  RG_FW_REFUSED_WHY=$(rg_saved nv_refused_why "$dev" 2>/dev/null) || RG_FW_REFUSED_WHY=""
  [ -z "$RG_FW_REFUSED" ] || RG_V=restricted
  RG_FW_MODE[i]=$RG_V
  # A host that may not set the firmware only reports, whatever the plan says.
  [ "$RG_V" != restricted ] || setting=no
  for port in $ports; do
    lldp=${RG_FW_NEXT[LLDP_NB_DCBX_$port]-}
    for base in $RG_FW_PARAMS; do
      name=${base}_$port
      [ -n "${RG_FW_NEXT[$name]+set}" ] || continue
      next=${RG_FW_NEXT[$name]}
      RG_FW_BEFORE[$name]=$next
      rg_fw_ok "$base" "$next" "$lldp" && continue
      RG_FW_PLANNED[$name]=$RG_V
      sets+=("$name=$(rg_fw_word "$base" "$RG_V")")
      lines+="fw_$name"$'\t'"$dev"$'\t'"$next"$'\n'
    done
  done
  if [ "$setting" = yes ] && [ ${#sets[@]} -gt 0 ]; then
    if [ "$RG_DRY_RUN" = no ]; then
      # Only originals not saved by an earlier apply: rollback returns to the host as it was.
      rg_fw_unsaved "$dev" "$lines"
      [ -z "$REPLY" ] || rg_save_lines "$REPLY" "the firmware values of $dev" "no firmware value of $dev was changed"
    fi
    if ! rg_do "$RG_FW_TOOL" -y -d "$bdf" set ${sets[@]+"${sets[@]}"}; then
      failed=yes
      if rg_fw_refused "$dev" "$RG_DO_OUT" ${sets[@]+"${sets[@]}"}; then
        RG_FW_MODE[i]=restricted
        setting=no
      fi
    fi
    # The read-back asks only for what the first query found: what it said of the rest stands.
    note=$RG_FW_NOTE
    # shellcheck disable=SC2086 # one word per name
    if [ "$setting" = yes ] && [ "$RG_DRY_RUN" = no ] && ! rg_fw_query "$bdf" $RG_FW_ASKED; then
      err=$RG_V
      RG_FW_NEXT=() RG_FW_CUR=()
    fi
    RG_FW_NOTE=$note
  fi
  rg_fw_mode_check "$dev" "$bdf" "${RG_FW_MODE[i]}"
  rg_fw_record "$mode" "$i" "$bdf" "$ports" "$setting" "$failed" "$err"
}

# rg_fw_refused DEV OUTPUT NAME=VALUE...: true when a set's OUTPUT says the host may not set
# these parameters: mstflint 4.36 and later refuse a read-only TLV (`Operation is not supported
# (Read only TLV: X)`, GenericCommander::queryParamViews); 4.25 to 4.35 ask the TLV for read and
# write support before a set (queryTLV, TLVConf::isFWSupported) and so refuse one the query had
# just shown (`The Device doesn't support X parameter`). The refusal is saved (`nv_refused DEV
# NAMES`, `nv_refused_why DEV TEXT`): later applies do not send the set again and warn with it;
# rollback forgets it with the rest of the saved state.
rg_fw_refused() {
  local dev=$1 out=$2 w names="" why
  shift 2
  case $out in
    *"Operation is not supported (Read only TLV"* | *"The Device doesn't support "*" parameter"*) ;;
    *) return 1 ;;
  esac
  for w in "$@"; do names+="${names:+ }${w%%=*}"; done
  why=$(rg_nv_error "$out")
  RG_FW_REFUSED=$names
  RG_FW_REFUSED_WHY=$why
  [ "$RG_DRY_RUN" = no ] || return 0
  rg_saved nv_refused "$dev" >/dev/null ||
    rg_save_lines "nv_refused"$'\t'"$dev"$'\t'"$names"$'\n'"nv_refused_why"$'\t'"$dev"$'\t'"$why"$'\n' \
      "the firmware parameters $RG_FW_TOOL refused to set on $dev" "nothing was changed on $dev"
}

# rg_fw_unsaved DEV LINES: REPLY = the saved-state LINES (`fw_NAME DEV VALUE`) that are not
# saved yet.
rg_fw_unsaved() {
  local id d value
  REPLY=""
  while IFS=$'\t' read -r id d value; do
    [ -n "$id" ] || continue
    rg_saved "$id" "$1" >/dev/null || REPLY+="$id"$'\t'"$d"$'\t'"$value"$'\n'
  done <<<"$2"
}

# rg_fw_record MODE I BDF PORTS SETTING FAILED ERR: one check per parameter of NIC I and each of
# its PORTS (P1 P2 on a LAG NIC), from the values read (after a set: read back). Reads RG_FW_BEFORE and RG_FW_PLANNED (rg_fw_nic). Then
# the facts, and whether a value waits for a reboot.
rg_fw_record() {
  local mode=$1 i=$2 bdf=$3 ports=$4 setting=$5 failed=$6 err=$7 dev=${RG_NIC_IBDEV[$2]}
  local base name was next cur lldp want actual pending note port
  for port in $ports; do
    lldp=${RG_FW_NEXT[LLDP_NB_DCBX_$port]-${RG_FW_BEFORE[LLDP_NB_DCBX_$port]-}}
    for base in $RG_FW_PARAMS; do
      name=${base}_$port
      if [ -z "${RG_FW_BEFORE[$name]+set}" ]; then
        if [ -n "$RG_FW_NOTE" ]; then
          # Not read: a value the plan cares about is then unknown, not as planned.
          rg_fw_want "$base" 0 1
          if [ -n "$RG_V" ]; then
            rg_check "fw_$name" "$dev" warn warning "" "" "$name of $dev ($bdf) cannot be read, so it is neither checked nor set: it is not in the table $RG_FW_TOOL printed, which said: $RG_FW_NOTE"
          else
            rg_check "fw_$name" "$dev" skip info "" "" "skipped: $name is not in the table $RG_FW_TOOL printed for $dev ($bdf); it said: $RG_FW_NOTE"
          fi
        elif [ -z "$RG_FW_ASKED" ] && { rg_fw_want "$base" 0 1 || true; [ -n "$RG_V" ]; }; then
          # None of the port's parameters: a RoCE card's firmware has them, unless this host may
          # only read them and the tool hides such parameters (mstflint before 4.25: queryTLV
          # asks TLVConf::isFWSupported for read and write support).
          rg_check "fw_$name" "$dev" warn warning "" "" \
            "$RG_FW_TOOL shows none of the firmware parameters of $dev ($bdf), $name among them, so they are neither checked nor set: this host may only read them (the host of a restricted BlueField, whose read-only parameters mstflint before 4.25 does not show at all), or the firmware has none; mstflint 4.25 or later shows them marked RO, and on the DPU's Arm OS mlxprivhost -d DEVICE q tells the host's privilege"
        else
          rg_check "fw_$name" "$dev" skip info "" "" "skipped: the firmware of $dev ($bdf) has no $name"
        fi
        continue
      fi
      was=${RG_FW_BEFORE[$name]}
      next=${RG_FW_NEXT[$name]-}
      cur=${RG_FW_CUR[$name]-}
      pending=no
      [ -z "$cur" ] || [ -z "$next" ] || [ "$cur" = "$next" ] || pending=yes
      actual=$(rg_fw_show "$base" "${next:-$was}")
      [ "$pending" = no ] || actual="$(rg_fw_show "$base" "$cur") (next boot: $actual)"
      if [ -n "${RG_FW_PLANNED[$name]+set}" ]; then
        want=$(rg_fw_show "$base" "${RG_FW_PLANNED[$name]}")
        if [ "$setting" = no ]; then
          rg_fw_contradiction "$dev" "$bdf" "$base" "$name" "$was" "$lldp" "$port" "$want" "$actual"
        elif [ "$RG_DRY_RUN" = yes ]; then
          RG_FW_WOULD_SET=yes
          rg_check_change "fw_$name" "$dev" warn warning "$want" "$actual" \
            "dry run: $name would be set from $(rg_fw_show "$base" "$was") to $want for the next boot ($(rg_fw_why "$base" "$was" "$lldp" "$port")); it takes effect at the next reboot" \
            "$(rg_fw_show "$base" "$was")"
        elif [ -n "$err" ]; then
          rg_check "fw_$name" "$dev" fail error "$want" "" "$name was set to $want but cannot be read back: $err"
        elif [ "$next" = "${RG_FW_PLANNED[$name]}" ]; then
          rg_check_change "fw_$name" "$dev" changed warning "$want" "$actual" \
            "$name changed from $(rg_fw_show "$base" "$was") to $want for the next boot; $(rg_fw_when "$name" "$next")" \
            "$(rg_fw_show "$base" "$was")"
        elif [ "$failed" = yes ]; then
          rg_check "fw_$name" "$dev" fail error "$want" "$actual" "setting $name to $want failed (see the log above)"
        else
          rg_check "fw_$name" "$dev" fail error "$want" "$actual" "$name was set to $want but reads back as $(rg_fw_show "$base" "$next")"
        fi
        continue
      fi
      if [ -z "$next" ]; then
        # Not set by this run, but the read-back after setting others failed.
        rg_check "fw_$name" "$dev" warn warning "" "" "$name was $(rg_fw_show "$base" "$was") (not changed); it cannot be read back: $err"
        continue
      fi
      # As planned from the next boot, or not the plan's business: is it in force now?
      rg_fw_want "$base" "$next" "$lldp"
      want=${RG_V:-$next}
      want=$(rg_fw_show "$base" "$want")
      note=""
      [ "$pending" = no ] || note="; now $(rg_fw_show "$base" "$cur"), so it takes effect at the next reboot"
      if [ "$pending" = yes ] && [ "$mode" = compare ]; then
        rg_check "fw_$name" "$dev" warn warning "$want" "$actual" \
          "reboot pending: $name is $(rg_fw_show "$base" "$cur") now and $(rg_fw_show "$base" "$next") from the next boot"
      elif [ -n "$RG_V" ]; then
        rg_check "fw_$name" "$dev" pass warning "$want" "$actual" "$name is $(rg_fw_show "$base" "$next") as planned$note"
      else
        rg_check "fw_$name" "$dev" pass info "$want" "$actual" "$name is $(rg_fw_show "$base" "$next")$note"
      fi
    done
  done
  rg_fw_facts "$i" "$bdf" "$ports"
}

# rg_fw_facts I BDF PORTS: NIC I's facts from the values read last (fw_NAME now, fw_NAME_next
# from the next boot) of each of its PORTS, and whether one of them waits for a reboot.
rg_fw_facts() {
  local i=$1 base name cur next facts="" names="" port
  for port in $3; do
    for base in $RG_FW_PARAMS; do names+=" ${base}_$port"; done
  done
  for name in $names; do
    next=${RG_FW_NEXT[$name]-}
    cur=${RG_FW_CUR[$name]-}
    [ -n "$next" ] || continue
    if [ -n "$cur" ]; then
      rg_json_q "$cur"
      facts+=",\"fw_$name\":$REPLY"
    fi
    rg_json_q "$next"
    facts+=",\"fw_${name}_next\":$REPLY"
    if [ -n "$cur" ] && [ "$cur" != "$next" ]; then
      RG_REBOOT_REQUIRED=yes
      [[ " $RG_FW_PENDING " == *" ${RG_NIC_IBDEV[i]} "* ]] || RG_FW_PENDING+="${RG_FW_PENDING:+ }${RG_NIC_IBDEV[i]}"
    fi
  done
  if [ -n "${RG_FW_MODE[i]-}" ]; then
    rg_json_q "${RG_FW_MODE[i]}"
    facts+=",\"fw_mode\":$REPLY"
  fi
  rg_json_fmt '"fw_tool":%s,"fw_device":%s%s' s "$RG_FW_TOOL" s "$2" r "$facts"
  # shellcheck disable=SC2034 # rg_facts (lib-probe.sh) reads it
  RG_FW_FACTS[i]=$REPLY
}

# rg_fw_when NAME VALUE: when a next-boot VALUE of NAME takes effect, for messages.
rg_fw_when() {
  if [ -n "${RG_FW_CUR[$1]-}" ] && [ "${RG_FW_CUR[$1]}" = "$2" ]; then
    printf 'the firmware already runs with it'
  else
    printf 'it takes effect at the next reboot'
  fi
}

# rg_fw_contradiction DEV BDF BASE NAME VALUE LLDP PORT WANT ACTUAL: the check of a next-boot
# value that contradicts the plan, where this run does not set it: a warning for a person
# (firmware_config = report), or the change apply will make. Reads RG_FW_PLANNED.
rg_fw_contradiction() {
  local dev=$1 bdf=$2 base=$3 name=$4 v=$5 lldp=$6 port=$7 want=$8 actual=$9 why
  why=$(rg_fw_why "$base" "$v" "$lldp" "$port")
  if [ "${RG_FW_MODE[$(rg_index_of "$dev")]-}" = restricted ]; then
    local refused=""
    if [[ " $RG_FW_REFUSED " == *" $name "* ]]; then
      refused=" ($RG_FW_TOOL refused to set it${RG_FW_REFUSED_WHY:+: $RG_FW_REFUSED_WHY}; apply does not send it again until a rollback)"
    fi
    rg_check "fw_$name" "$dev" warn warning "$want" "$actual" \
      "$name is $(rg_fw_show "$base" "$v"): $why; this host may not set it (a restricted BlueField host, see fw_mode)$refused: set $name=$(rg_fw_word "$base" "${RG_FW_PLANNED[$name]}") from the DPU's Arm OS"
  elif [ "$RG_FW_CONFIG" = apply ]; then
    RG_FW_WOULD_SET=yes
    rg_check_change "fw_$name" "$dev" warn warning "$want" "$actual" \
      "$name is $(rg_fw_show "$base" "$v"): $why; apply will set it to $want for the next boot (firmware_config = apply)" \
      "$(rg_fw_show "$base" "$v")"
  else
    rg_check "fw_$name" "$dev" warn warning "$want" "$actual" \
      "$name is $(rg_fw_show "$base" "$v"): $why; the firmware is left as it is (firmware_config = report): set $name=$(rg_fw_word "$base" "${RG_FW_PLANNED[$name]}") with $RG_FW_TOOL -d $bdf and reboot, or plan firmware_config = apply"
  fi
}

# rg_fw_rollback: sets the next-boot values apply saved (`fw_NAME` lines of the saved state)
# again, per device, and reads them back.
rg_fw_rollback() {
  local id dev value devs=" " i
  [ -r "$RG_SAVED" ] || return 0
  while IFS=$'\t' read -r id dev value; do
    [[ $id == fw_* ]] || continue
    [[ $devs == *" $dev "* ]] || devs+="$dev "
  done <"$RG_SAVED"
  [ "$devs" != " " ] || return 0
  RG_FW_TOOL=$(rg_fw_tool)
  for dev in $devs; do
    # A device not in this bundle's plan was already reported by rg_restore (restore by hand).
    i=$(rg_index_of "$dev") || continue
    rg_fw_restore "$i"
  done
}

# rg_fw_restore I: rollback of NIC I's saved firmware values.
rg_fw_restore() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} id d value bdf port ports base name names="" sets=() failed=no
  local now after
  local -A saved=() was=()
  while IFS=$'\t' read -r id d value; do
    if [[ $id != fw_* ]] || [ "$d" != "$dev" ]; then continue; fi
    [ -n "${saved[${id#fw_}]+set}" ] || saved[${id#fw_}]=$value
  done <"$RG_SAVED"
  if [ -z "$RG_FW_TOOL" ]; then
    for name in ${saved[@]+"${!saved[@]}"}; do
      rg_check "fw_$name" "$dev" fail warning "${saved[$name]}" "" \
        "cannot restore $name to ${saved[$name]}: neither mlxconfig nor mstconfig is installed (mstflint: apt install mstflint, dnf install mstflint)"
    done
    return 0
  fi
  bdf=$(rg_fw_device "$i")
  ports=$(rg_fw_ports "$i")
  for port in $ports; do
    for base in $RG_FW_PARAMS; do names+=" ${base}_$port"; done
  done
  # shellcheck disable=SC2086 # one word per name
  if [ -z "$bdf" ] || ! rg_fw_query "$bdf" $names; then
    for name in ${saved[@]+"${!saved[@]}"}; do
      rg_check "fw_$name" "$dev" fail warning "${saved[$name]}" "" "cannot read $name to restore it: ${RG_V:-no PCI address for $dev}"
    done
    return 0
  fi
  for name in $names; do
    base=${name%_P*}
    [ -n "${saved[$name]+set}" ] || continue
    was[$name]=${RG_FW_NEXT[$name]-}
    [ "${was[$name]}" = "${saved[$name]}" ] || sets+=("$name=$(rg_fw_word "$base" "${saved[$name]}")")
  done
  if [ ${#sets[@]} -gt 0 ]; then
    rg_do "$RG_FW_TOOL" -y -d "$bdf" set ${sets[@]+"${sets[@]}"} || failed=yes
    # shellcheck disable=SC2086 # one word per name
    [ "$RG_DRY_RUN" = yes ] || rg_fw_query "$bdf" $names || RG_FW_NEXT=()
  fi
  for name in $names; do
    base=${name%_P*}
    [ -n "${was[$name]+set}" ] || continue
    value=$(rg_fw_show "$base" "${saved[$name]}")
    now=$(rg_fw_show "$base" "${was[$name]}")
    after=${RG_FW_NEXT[$name]-}
    if [ "${was[$name]}" = "${saved[$name]}" ]; then
      rg_check "fw_$name" "$dev" pass warning "$value" "$now" "$name is already $value from the next boot"
    elif [ "$RG_DRY_RUN" = yes ]; then
      rg_check_change "fw_$name" "$dev" warn warning "$value" "$now" \
        "dry run: $name would be restored from $now to $value for the next boot" "$now"
    elif [ "$after" = "${saved[$name]}" ]; then
      rg_check_change "fw_$name" "$dev" changed warning "$value" "$value" \
        "$name restored from $now to $value for the next boot; $(rg_fw_when "$name" "$after")" "$now"
    elif [ "$failed" = yes ]; then
      rg_check "fw_$name" "$dev" fail warning "$value" "$(rg_fw_show "$base" "$after")" "restoring $name to $value failed (see the log above)"
    else
      rg_check "fw_$name" "$dev" fail warning "$value" "$(rg_fw_show "$base" "$after")" \
        "$name was restored to $value but reads back as $(rg_fw_show "$base" "${after:-nothing}")"
    fi
  done
  rg_fw_facts "$i" "$bdf" "$ports"
}

# rg_fw_willing I: after rollback handed NIC I's DCBX back to the firmware. The driver then makes
# the firmware's DCBX client willing, whatever it was (mlx5e_dcbnl_set_dcbx_mode sets
# willing_admin = 1 for every mode but host), and no host interface reads or clears it. So the
# check `dcbx_willing` compares with what the firmware started from at boot (the current NV
# values of LLDP_NB_DCBX and DCBX_WILLING; apply's saved ones where it changed them): as before
# where it was willing or its DCBX client is off, else a warning that says how it comes back.
rg_fw_willing() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} bdf port lldp will why=""
  bdf=$(rg_fw_device "$i")
  # On a LAG NIC: the port of the slave rollback hands back (rg_lag_restore).
  port=$(rg_fw_port_in_hand "$i")
  [ -n "$RG_FW_TOOL" ] || RG_FW_TOOL=$(rg_fw_tool)
  if [ "$RG_FW_CONFIG" = off ]; then
    why="the firmware is not read (firmware_config = off)"
  elif [ -z "$RG_FW_TOOL" ]; then
    why="neither mlxconfig nor mstconfig is installed (mstflint: apt install mstflint, dnf install mstflint)"
  elif [ -z "$bdf" ] || ! rg_fw_query "$bdf" "LLDP_NB_DCBX_$port" "DCBX_WILLING_$port"; then
    why="its NV values cannot be read (${RG_V:-no PCI address for $dev})"
  fi
  if [ -n "$why" ]; then
    rg_check dcbx_willing "$dev" warn warning "as before apply" "" \
      "handing DCBX back to the firmware made its DCBX client willing (the driver always does), and whether it was before cannot be told: $why; if DCBX_WILLING_$port is False(0) (mlxconfig -d ${bdf:-BDF} -e q DCBX_WILLING_$port), the switch can override this port's PFC and ETS until the next reboot, which starts the firmware from that value again"
    return 0
  fi
  lldp=$(rg_saved "fw_LLDP_NB_DCBX_$port" "$dev" 2>/dev/null) || lldp=${RG_FW_CUR[LLDP_NB_DCBX_$port]-${RG_FW_NEXT[LLDP_NB_DCBX_$port]-}}
  will=$(rg_saved "fw_DCBX_WILLING_$port" "$dev" 2>/dev/null) || will=${RG_FW_CUR[DCBX_WILLING_$port]-${RG_FW_NEXT[DCBX_WILLING_$port]-}}
  if [ "$lldp" = 0 ]; then
    rg_check dcbx_willing "$dev" pass info "as before apply" "client off" \
      "the firmware's DCBX client is off (LLDP_NB_DCBX_$port = False(0)): that handing DCBX back made it willing changes nothing"
  elif [ "$will" != 0 ]; then
    rg_check dcbx_willing "$dev" pass info "as before apply" "willing" \
      "the firmware's DCBX client is willing, as it was before apply (DCBX_WILLING_$port = $(rg_fw_show DCBX_WILLING "${will:-1}"))"
  else
    rg_check dcbx_willing "$dev" warn warning "not willing" "willing" \
      "the firmware's DCBX client was not willing before apply (DCBX_WILLING_$port = False(0)), but handing DCBX back made it willing (the driver's mlx5e_dcbnl_set_dcbx_mode sets willing_admin = 1 and no host interface clears it): until the next reboot the switch's DCBX settings can override this port's PFC and ETS; reboot (or mlxfwreset) to start the firmware from DCBX_WILLING_$port = False(0) again"
  fi
}

# rg_fw_summary: the summary's note on firmware values and the reboot they need.
rg_fw_summary() {
  if [ "$RG_REBOOT_REQUIRED" = yes ]; then
    printf '%s reboot required: firmware values take effect at the next boot (%s)\n' "$RG_INFO" "${RG_FW_PENDING// /, }"
  elif [ "$RG_FW_WOULD_SET" = yes ]; then
    printf '%s apply sets firmware values: they take effect at the next boot, so a reboot is required after it\n' "$RG_INFO"
  fi
}

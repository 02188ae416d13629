# shellcheck shell=bash
# The firmware's NV configuration as mlxconfig (NVIDIA MFT) and mstconfig (mstflint) show and
# set it, shared by their stand-ins (the same code under two names). Sourced after common.sh.
# Output pinned by tests/host/fixtures/mlxconfig/*.txt (the print path of mstflint 4.21's
# mlxconfig/mlxcfg_ui.cpp: printOpening, printConfHeader, printSingleParam).
#
# State per card (the PCI address without its function: both ports of a card share one NV
# store) in .fake/nvconfig/DOMAIN:BUS:DEV, one `NAME DEFAULT CURRENT NEXT [fail]` line per
# parameter, numbers. Without the file the card has the firmware defaults of a ConnectX-7 for
# the port of each of its functions in sys/bus/pci/devices (function N drives port N+1). `set`
# changes the next-boot value only; `fakehost.sh reboot` makes it current. A test gives a card
# other parameters (an Ethernet-only card has no LINK_TYPE_Pn; a BlueField has the global
# INTERNAL_CPU_MODEL and INTERNAL_CPU_OFFLOAD_ENGINE) by writing the file.
# `fail` marks a parameter whose TLV the firmware does not return (TLVConf::mnvda throws
# "Failed to get TLV settings ERR (RC)"): a named query of it fails with that error; the query
# of every parameter (GenericCommander::queryAll) collects the TLV, prints the table without
# it and then `-E- Failed to query some of the TLVs:` and its name per query type, exit 3
# (MlxCfg::queryDevCfg returns MLX_CFG_ERROR after printing the table).
# .fake/nvconfig/CARD.host: `restricted` (the host of a zero-trust BlueField: MNVQC reports
# every TLV readable but not writable; mstflint 4.36's TLVConf::isFWSupported marks it read-only
# and GenericCommander::queryParamViews refuses a set "Operation is not supported (Read only
# TLV: TLV)", printed here over the 4.21 table, which has no RO column: the combination a reader
# of a table without RO meets), `restricted-4.21` (that host as mstflint 4.21 to 4.24 see it:
# queryTLV asks isFWSupported(mf, true), read and write support, so a TLV the host may only read
# is never queried: a named query of its parameter fails "The Device doesn't support NAME
# parameter", the query of every parameter leaves it out without an error, and a set fails the
# same way in setDevCfg's queryDevCfg, after the header, before any prompt), or `locked` (host
# access to the NV registers disabled:
# GenericCommander::supportsNVData throws "Cannot access NV register. Either FW does not support
# NV access register, or HW access is disabled. rc=(265)" for every command; the rc value is
# not verified on a card).
# Modelled: -d/--dev, -e/--enable_verbosity, -y/--yes, q|query [NAME...], s|set NAME=VALUE...
# Not modelled (exit 2): every other option and command. .fake/not-root: the device cannot be
# opened.

nv_bf3=''
declare -a nv_names=()
declare -A nv_def=() nv_cur=() nv_next=() nv_fail=()
NV_DESC='NVIDIA ConnectX-7 HHHL adapter card; 400GbE / NDR IB (default mode); Single-port OSFP; PCIe 5.0 x16; Crypto Disabled; Secure Boot Enabled'
NV_DESC_BF3='NVIDIA BlueField-3 B3220 P-Series FHHL DPU; 200GbE (default mode) / NDR200 IB; Dual-port QSFP112; PCIe Gen5.0 x16 with x16 PCIe extension option; 16 Arm cores; 32GB on-board DDR; integrated BMC; Crypto Enabled'

nv_err() { # MESSAGE: as mlxconfig reports an error (on stdout), exit MLX_CFG_ERROR
  printf -- '-E- %s\n' "$1"
  exit 3
}

# nv_load CARD: the card's parameters into nv_names/nv_def/nv_cur/nv_next.
nv_load() {
  local f=$FAKE/nvconfig/$1 name d c n flag fn port
  nv_names=() nv_def=() nv_cur=() nv_next=() nv_fail=()
  if [[ -f $f ]]; then
    while read -r name d c n flag; do
      [[ -n $name ]] || continue
      nv_names+=("$name")
      nv_def[$name]=$d nv_cur[$name]=$c nv_next[$name]=$n
      [[ $flag != fail ]] || nv_fail[$name]=1
    done <"$f"
    return 0
  fi
  for fn in 0 1 2 3 4 5 6 7; do
    [[ -e $ROOT/sys/bus/pci/devices/$1.$fn ]] || continue
    port=P$((fn + 1))
    for name in "ROCE_CC_PRIO_MASK 255" "CNP_DSCP 48" "CNP_802P_PRIO 6" "LLDP_NB_DCBX 0" "DCBX_WILLING 1" "LINK_TYPE 2"; do
      nv_names+=("${name% *}_$port")
      nv_def[${name% *}_$port]=${name#* } nv_cur[${name% *}_$port]=${name#* } nv_next[${name% *}_$port]=${name#* }
    done
  done
}

nv_save() { # CARD
  local name
  mkdir -p -- "$FAKE/nvconfig"
  for name in "${nv_names[@]}"; do
    printf '%s %s %s %s%s\n' "$name" "${nv_def[$name]}" "${nv_cur[$name]}" "${nv_next[$name]}" "${nv_fail[$name]:+ fail}"
  done >"$FAKE/nvconfig/$1"
}

# nv_tlv NAME: REPLY = the TLV that holds the parameter (mstflint's mlxconfig_host.db, table
# params, column tlv_name).
nv_tlv() {
  case ${1%_P[0-9]} in
    ROCE_CC_PRIO_MASK) REPLY=nv_roce_cc ;;
    CNP_DSCP | CNP_802P_PRIO) REPLY=nv_roce_cc_ecn ;;
    LLDP_NB_DCBX) REPLY=nv_lldp_nb_conf ;;
    DCBX_WILLING | DCBX_IEEE | DCBX_CEE) REPLY=nv_lldp_nb_dcbx ;;
    LINK_TYPE) REPLY=nv_vpi_link_type ;;
    INTERNAL_CPU_*) REPLY=nv_internal_cpu_conf ;;
    KEEP_*LINK_UP*) REPLY=nv_keep_link_up ;;
    *) REPLY=nv_${1,,} ;;
  esac
}

# nv_tlv_key NAME: REPLY = the TLV as queryAll names one that failed: TLV_P<port>_M<module>
# (port 0 for a global TLV).
nv_tlv_key() {
  local port=0
  [[ $1 =~ _P([0-9])$ ]] && port=${BASH_REMATCH[1]}
  nv_tlv "$1"
  REPLY=${REPLY}_P${port}_M0
}

# nv_kind NAME: REPLY = bool, enum or the largest value of an unsigned parameter.
nv_kind() {
  case ${1%_P[0-9]} in
    LLDP_NB_DCBX | DCBX_WILLING) REPLY=bool ;;
    LINK_TYPE | INTERNAL_CPU_MODEL | INTERNAL_CPU_OFFLOAD_ENGINE) REPLY=enum ;;
    CNP_DSCP) REPLY=63 ;;
    CNP_802P_PRIO) REPLY=7 ;;
    *) REPLY=255 ;;
  esac
}

# nv_enum NAME: REPLY = the enum's `TEXT=VALUE` pairs (mlxconfig_host.db, textual_values).
nv_enum() {
  case ${1%_P[0-9]} in
    LINK_TYPE) REPLY='IB=1 ETH=2' ;;
    INTERNAL_CPU_MODEL) REPLY='SEPARATED_HOST=0 EMBEDDED_CPU=1' ;;
    INTERNAL_CPU_OFFLOAD_ENGINE) REPLY='ENABLED=0 DISABLED=1' ;;
    *) REPLY='' ;;
  esac
}

# nv_str NAME VALUE: REPLY = the value's text as the parameter's type words it (the strVal).
nv_str() {
  local pair
  nv_kind "$1"
  case $REPLY in
    bool) if [[ $2 == 1 ]]; then REPLY=True; else REPLY=False; fi ;;
    enum)
      nv_enum "$1"
      for pair in $REPLY; do
        if [[ ${pair#*=} == "$2" ]]; then
          REPLY=${pair%=*}
          return 0
        fi
      done
      REPLY=$2
      ;;
    *) REPLY=$2 ;;
  esac
}

# nv_parse NAME TEXT: REPLY = the value TEXT sets, or status 1.
nv_parse() {
  local t=${2,,} pair low
  nv_kind "$1"
  case $REPLY in
    bool)
      case $t in 0 | false) REPLY=0 ;; 1 | true) REPLY=1 ;; *) return 1 ;; esac
      ;;
    enum)
      nv_enum "$1"
      for pair in $REPLY; do
        low=${pair%=*}
        if [[ $t == "${pair#*=}" || $t == "${low,,}" ]]; then
          REPLY=${pair#*=}
          return 0
        fi
      done
      return 1
      ;;
    *)
      if [[ $t =~ ^[0-9]+$ ]]; then
        t=$((10#$t))
      elif [[ $t =~ ^0x[0-9a-f]+$ ]]; then
        t=$((t))
      else
        return 1
      fi
      ((t <= REPLY)) || return 1
      REPLY=$t
      ;;
  esac
}

# nv_cell TEXT VALUE: one value column (printValue): the number alone, or `TEXT(VALUE)`;
# W = the width printed.
nv_cell() {
  local s=$2
  [[ $1 == "$2" ]] || s="$1($2)"
  printf '%-16s' "$s"
  W=${#s}
  ((W > 16)) || W=16
}

nv_opening() { # DEV
  printf '\nDevice #%d:\n' 1
  printf -- '----------\n\n'
  # A card with the internal CPU's parameters is a BlueField-3.
  if [[ -n ${nv_next[INTERNAL_CPU_MODEL]+set} || -n ${nv_bf3-} ]]; then
    printf '%-16s%-16s\n' 'Device type:' BlueField3 'Name:' 900-9D3B6-00CV-AA0 'Description:' "$NV_DESC_BF3" 'Device:' "$1"
  else
    printf '%-16s%-16s\n' 'Device type:' ConnectX7 'Name:' MCX75310AAS-NEAT 'Description:' "$NV_DESC" 'Device:' "$1"
  fi
}

# nv_header VERBOSE NEW
nv_header() {
  if (($1)); then
    printf '%-16s%36s%16s%18s' Configurations: Default Current 'Next Boot'
  else
    printf '%-16s%38s' Configurations: 'Next Boot'
  fi
  if (($2)); then printf '       %s' New; fi
  printf '\n'
}

# nv_row NAME VERBOSE [SET]: one parameter (printSingleParam); status 0 when marked `*`.
nv_row() {
  local name=$1 diff=0 v
  W=0
  # Marked where the next-boot value differs from the default or from the current one.
  if (($2)) && ! [[ ${nv_next[$name]} == "${nv_def[$name]}" && ${nv_next[$name]} == "${nv_cur[$name]}" ]]; then
    diff=1
    printf '*        %-36s' "$name"
  else
    printf '         %-36s' "$name"
  fi
  if (($2)); then
    for v in "${nv_def[$name]}" "${nv_cur[$name]}"; do
      ((W <= 16)) || printf ' '
      nv_str "$name" "$v"
      nv_cell "$REPLY" "$v"
    done
  fi
  ((W <= 16)) || printf ' '
  nv_str "$name" "${nv_next[$name]}"
  nv_cell "$REPLY" "${nv_next[$name]}"
  if (($# > 2)); then
    ((W <= 16)) || printf ' '
    nv_str "$name" "$3"
    nv_cell "$REPLY" "$3"
  fi
  printf '\n'
  ((diff))
}

nv_main() {
  local dev='' verbose=0 yes=0 cmd='' bdf card name answer differ=0 i host failed=''
  local -a args=() names=() vals=()
  while (($#)); do
    case $1 in
      -d | --dev)
        (($# >= 2)) || ni "$1 without a value"
        dev=$2
        shift 2
        continue
        ;;
      -e | --enable_verbosity) verbose=1 ;;
      -y | --yes) yes=1 ;;
      -*) ni "option $1" ;;
      *)
        if [[ -z $cmd ]]; then cmd=$1; else args+=("$1"); fi
        ;;
    esac
    shift
  done
  case $cmd in
    q | query | s | set) ;;
    *) ni "command ${cmd:-(none)}" ;;
  esac
  [[ -n $dev ]] || ni 'a query of every device (no -d)'
  # A PCI address, with or without its domain.
  bdf=${dev,,}
  [[ $bdf =~ ^[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] && bdf=0000:$bdf
  [[ $bdf =~ ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] || ni "device $dev (only PCI addresses are modelled)"
  if [[ -e $FAKE/not-root ]]; then nv_err "Failed to open device: $dev. Permission denied"; fi
  [[ -e $ROOT/sys/bus/pci/devices/$bdf ]] || nv_err "Failed to open device: $dev. No such file or directory"
  card=${bdf%.*}
  host=''
  [[ ! -f $FAKE/nvconfig/$card.host ]] || read -r host <"$FAKE/nvconfig/$card.host" || true
  if [[ $host == locked ]]; then
    nv_err 'Cannot access NV register. Either FW does not support NV access register, or HW access is disabled. rc=(265)'
  fi
  nv_load "$card"
  if [[ $host == restricted-4.21 ]]; then
    # Every TLV is read-only to this host: 4.21 knows none of their parameters (the opening
    # still names the card).
    [[ -z ${nv_next[INTERNAL_CPU_MODEL]+set} ]] || nv_bf3=1
    for name in "${nv_names[@]}"; do unset "nv_next[$name]"; done
    nv_names=()
  fi

  if [[ $cmd == q || $cmd == query ]]; then
    nv_opening "$dev"
    printf '\n'
    nv_header "$verbose" 0
    if ((${#args[@]} == 0)); then
      # queryAll: a TLV that fails is collected, the others printed.
      for name in "${nv_names[@]}"; do
        if [[ -n ${nv_fail[$name]-} ]]; then
          nv_tlv_key "$name"
          [[ " $failed " == *" $REPLY "* ]] || failed+="$REPLY "
        else
          names+=("$name")
        fi
      done
    else
      for name in "${args[@]}"; do
        [[ -n ${nv_next[$name]+set} ]] || nv_err "The Device doesn't support $name parameter"
        nv_tlv "$name"
        [[ -z ${nv_fail[$name]-} ]] || nv_err "Failed to get $REPLY settings Firmware internal error (274)"
        names+=("$name")
      done
    fi
    for name in "${names[@]}"; do
      nv_row "$name" "$verbose" && differ=1
    done
    if ((differ)); then printf "The '*' shows parameters with next value different from default/current value.\n"; fi
    # queryDevCfg: no parameter at all (params.size() == 0) is an error of its own.
    ((${#names[@]})) || nv_err "Device doesn't support any configuration changes."
    if [[ -n $failed ]]; then
      printf -- '-E- Failed to query some of the TLVs:\n'
      for i in $( ((verbose)) && printf 'default current ')next; do
        printf '    Failed to query the %s values of the following TLVs:\n    %s\n' "$i" "$failed"
      done
      printf '\n'
      exit 3
    fi
    exit 0
  fi

  ((${#args[@]})) || nv_err 'No parameters to set'
  local unsupported=''
  for i in "${!args[@]}"; do
    name=${args[i]%%=*}
    if [[ ${args[i]} != *=* || -z ${nv_next[$name]+set} ]]; then
      unsupported=${unsupported:-$name}
      continue
    fi
    nv_parse "$name" "${args[i]#*=}" || nv_err "Cannot set the value ${args[i]#*=} for the parameter $name"
    names+=("$name")
    vals+=("$REPLY")
  done
  nv_opening "$dev"
  printf '\n'
  nv_header "$verbose" 1
  # setDevCfg's queryDevCfg queries the parameters (queryParamViews) after the header.
  [[ -z $unsupported ]] || nv_err "The Device doesn't support $unsupported parameter"
  # A restricted host may read every TLV but write none (GenericCommander::queryParamViews).
  if [[ $host == restricted ]]; then
    nv_tlv "${names[0]}"
    nv_err "Operation is not supported (Read only TLV: $REPLY)"
  fi
  for i in "${!names[@]}"; do
    nv_row "${names[i]}" "$verbose" "${vals[i]}" || true
  done
  printf '\n Apply new Configuration? (y/n) [n] : '
  if ((yes)); then
    printf 'y\n'
  else
    answer=''
    IFS= read -r answer || true
    answer=${answer,,}
    if [[ $answer != y && $answer != yes ]]; then
      printf -- '-E- Aborted by user.\n'
      exit 2
    fi
  fi
  printf 'Applying... '
  for i in "${!names[@]}"; do nv_next[${names[i]}]=${vals[i]}; done
  nv_save "$card"
  printf 'Done!\n'
  printf -- '-I- Please reboot machine to load new configurations.\n'
}

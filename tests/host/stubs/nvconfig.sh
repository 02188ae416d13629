# shellcheck shell=bash
# The firmware's NV configuration as mlxconfig (NVIDIA MFT) and mstconfig (mstflint) show and
# set it, shared by their stand-ins (the same code under two names). Sourced after common.sh.
# Output pinned by tests/host/fixtures/mlxconfig/*.txt (the print path of mstflint 4.21's
# mlxconfig/mlxcfg_ui.cpp: printOpening, printConfHeader, printSingleParam).
#
# State per card (the PCI address without its function: both ports of a card share one NV
# store) in .fake/nvconfig/DOMAIN:BUS:DEV, one `NAME DEFAULT CURRENT NEXT` line per parameter,
# numbers. Without the file the card has the firmware defaults of a ConnectX-7 for the port of
# each of its functions in sys/bus/pci/devices (function N drives port N+1). `set` changes the
# next-boot value only; `fakehost.sh reboot` makes it current. A test gives a card other
# parameters (an Ethernet-only card has no LINK_TYPE_Pn) by writing the file.
# Modelled: -d/--dev, -e/--enable_verbosity, -y/--yes, q|query [NAME...], s|set NAME=VALUE...
# Not modelled (exit 2): every other option and command. .fake/not-root: the device cannot be
# opened.

declare -a nv_names=()
declare -A nv_def=() nv_cur=() nv_next=()
NV_DESC='NVIDIA ConnectX-7 HHHL adapter card; 400GbE / NDR IB (default mode); Single-port OSFP; PCIe 5.0 x16; Crypto Disabled; Secure Boot Enabled'

nv_err() { # MESSAGE: as mlxconfig reports an error (on stdout), exit MLX_CFG_ERROR
  printf -- '-E- %s\n' "$1"
  exit 3
}

# nv_load CARD: the card's parameters into nv_names/nv_def/nv_cur/nv_next.
nv_load() {
  local f=$FAKE/nvconfig/$1 name d c n fn port
  nv_names=() nv_def=() nv_cur=() nv_next=()
  if [[ -f $f ]]; then
    while read -r name d c n; do
      [[ -n $name ]] || continue
      nv_names+=("$name")
      nv_def[$name]=$d nv_cur[$name]=$c nv_next[$name]=$n
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
    printf '%s %s %s %s\n' "$name" "${nv_def[$name]}" "${nv_cur[$name]}" "${nv_next[$name]}"
  done >"$FAKE/nvconfig/$1"
}

# nv_kind NAME: REPLY = bool, enum or the largest value of an unsigned parameter.
nv_kind() {
  case ${1%_P[0-9]} in
    LLDP_NB_DCBX | DCBX_WILLING) REPLY=bool ;;
    LINK_TYPE) REPLY=enum ;;
    CNP_DSCP) REPLY=63 ;;
    CNP_802P_PRIO) REPLY=7 ;;
    *) REPLY=255 ;;
  esac
}

# nv_str NAME VALUE: REPLY = the value's text as the parameter's type words it (the strVal).
nv_str() {
  nv_kind "$1"
  case $REPLY in
    bool) if [[ $2 == 1 ]]; then REPLY=True; else REPLY=False; fi ;;
    enum)
      case $2 in 1) REPLY=IB ;; 2) REPLY=ETH ;; *) REPLY=$2 ;; esac
      ;;
    *) REPLY=$2 ;;
  esac
}

# nv_parse NAME TEXT: REPLY = the value TEXT sets, or status 1.
nv_parse() {
  local t=${2,,}
  nv_kind "$1"
  case $REPLY in
    bool)
      case $t in 0 | false) REPLY=0 ;; 1 | true) REPLY=1 ;; *) return 1 ;; esac
      ;;
    enum)
      case $t in 1 | ib) REPLY=1 ;; 2 | eth) REPLY=2 ;; *) return 1 ;; esac
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
  printf '%-16s%-16s\n' 'Device type:' ConnectX7 'Name:' MCX75310AAS-NEAT 'Description:' "$NV_DESC" 'Device:' "$1"
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
  local dev='' verbose=0 yes=0 cmd='' bdf card name answer differ=0 i
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
  nv_load "$card"

  if [[ $cmd == q || $cmd == query ]]; then
    nv_opening "$dev"
    printf '\n'
    nv_header "$verbose" 0
    if ((${#args[@]} == 0)); then
      names=("${nv_names[@]}")
    else
      for name in "${args[@]}"; do
        [[ -n ${nv_next[$name]+set} ]] || nv_err "The Device doesn't support $name parameter"
        names+=("$name")
      done
    fi
    for name in "${names[@]}"; do
      nv_row "$name" "$verbose" && differ=1
    done
    if ((differ)); then printf "The '*' shows parameters with next value different from default/current value.\n"; fi
    exit 0
  fi

  ((${#args[@]})) || nv_err 'No parameters to set'
  for i in "${!args[@]}"; do
    name=${args[i]%%=*}
    [[ ${args[i]} == *=* && -n ${nv_next[$name]+set} ]] || nv_err "The Device doesn't support $name parameter"
    nv_parse "$name" "${args[i]#*=}" || nv_err "Cannot set the value ${args[i]#*=} for the parameter $name"
    names+=("$name")
    vals+=("$REPLY")
  done
  nv_opening "$dev"
  printf '\n'
  nv_header "$verbose" 1
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

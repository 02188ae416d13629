# shellcheck shell=bash
# Shared part of the simulated host's tool stand-ins (tests/host/stubs/*; a fake root has
# them in lib/fakehost/ and the host's installed tools in bin/). Each stand-in sets
# STUB_TOOL and sources this file, which:
#   - refuses to run unless $ROCE_GEN_ROOT is a fake host root (has .fake/);
#   - appends one JSON line {"tool":NAME,"argv":[...]} to $STUB_LOG (default
#     $ROCE_GEN_ROOT/stub.log), so tests can assert which commands ran, in order;
#   - applies the scenario hooks, in this order (TOOL@WORD applies only to calls that have
#     WORD as one of their arguments, e.g. mlnx_qos@--pfc, and wins over TOOL):
#       .fake/fail/TOOL[@WORD]    print the file to stderr and exit 1
#       .fake/output/TOOL[@WORD]  print the file byte for byte instead of the normal
#                                 output, exit 0 and change nothing
# and provides helpers. Whatever a stand-in does not model exits 2 with
# "stub TOOL: not implemented: ..." on stderr (ni), so a script relying on an unmodelled
# feature fails loudly. Bash 4.2 compatible (RHEL 7); checked with shellcheck. Each starts with
# #!/bin/bash, not env: a run starts dozens, and env costs another program start each.
#
# The stand-ins keep their state in files of the fake root: where the real kernel exposes
# a value (sys/class/net/IF/mtu, qos/prio2buffer, configfs) at that path, otherwise under
# .fake/ (the driver's netlink-only DCB state in .fake/dcb/IF/, see fixtures/README.md).

set -u -o pipefail
export LC_ALL=C # byte-wise string handling and sorting, whatever the caller's locale

tool=${STUB_TOOL:-${0##*/}}
ROOT=${ROCE_GEN_ROOT:-}
# Never run against a real system: the root must be a fake host made by fakehost.sh.
if [[ -z $ROOT || ! -d $ROOT/.fake ]]; then
  printf 'stub %s: ROCE_GEN_ROOT=%s is not a fake host root (no .fake/ in it); refusing to run\n' \
    "$tool" "$ROOT" >&2
  exit 2
fi
[[ $ROOT == /* ]] || ROOT=$PWD/$ROOT
LOG=${STUB_LOG:-$ROOT/stub.log}
FAKE=$ROOT/.fake
NET=$ROOT/sys/class/net


ni() {
  printf 'stub %s: not implemented: %s\n' "$tool" "$*" >&2
  exit 2
}

# rd FILE: first line of FILE into REPLY without forking; status 1 if FILE is missing.
rd() {
  REPLY=
  [[ -f $1 ]] || return 1
  IFS= read -r REPLY <"$1" || true
}

wr() { printf '%s\n' "$2" >"$1"; }

# Names from argv become paths: never let one lead outside the fake root.
safe_name() { [[ -n $1 && $1 != . && $1 != .. && $1 != */* && $1 != *[[:space:]]* ]]; }
have_if() { safe_name "$1" && [[ -d $NET/$1 ]]; }

# iproute2 keyword matching: an argument matches a keyword it is a prefix of.
matches() { [[ -n $1 && $2 == "$1"* ]]; }

# json_str S: REPLY = S as a quoted JSON string. Works byte by byte (LC_ALL=C): valid UTF-8
# passes through, control characters are escaped, and each byte that is not part of valid
# UTF-8 becomes U+FFFD, because JSON cannot carry raw bytes and the log must always parse.
json_str() {
  local s=$1 out='' i=0 n=${#1} c b b2 len k lo hi ok
  if [[ $s != *[!\ -~]* && $s != *[\"\\]* ]]; then # fast path: printable ASCII only
    REPLY="\"$s\""
    return
  fi
  while ((i < n)); do
    c=${s:i:1}
    printf -v b '%d' "'$c"
    if ((b < 128)); then
      case $c in
        \") out+='\"' ;;
        \\) out+="\\\\" ;;
        $'\n') out+='\n' ;;
        $'\t') out+='\t' ;;
        $'\r') out+='\r' ;;
        *)
          if ((b < 32 || b == 127)); then printf -v c '\\u%04x' "$b"; fi
          out+=$c
          ;;
      esac
      i=$((i + 1))
      continue
    fi
    # Multi-byte sequence: length from the lead byte, allowed range of the second byte
    # per RFC 3629 (rejects overlong forms, surrogates and code points above U+10FFFF).
    len=0 lo=128 hi=191
    if ((b >= 0xc2 && b <= 0xdf)); then
      len=2
    elif ((b >= 0xe0 && b <= 0xef)); then
      len=3
      if ((b == 0xe0)); then lo=0xa0; fi
      if ((b == 0xed)); then hi=0x9f; fi
    elif ((b >= 0xf0 && b <= 0xf4)); then
      len=4
      if ((b == 0xf0)); then lo=0x90; fi
      if ((b == 0xf4)); then hi=0x8f; fi
    fi
    ok=0
    if ((len > 0 && i + len <= n)); then
      ok=1
      for ((k = 1; k < len; k++)); do
        printf -v b2 '%d' "'${s:i+k:1}"
        if ((k > 1)); then lo=128 hi=191; fi
        if ((b2 < lo || b2 > hi)); then
          ok=0
          break
        fi
      done
    fi
    if ((ok)); then
      out+=${s:i:len}
      i=$((i + len))
    else
      out+='\ufffd'
      i=$((i + 1))
    fi
  done
  REPLY="\"$out\""
}

# cuda_devices: CUDA_DEVS = the host's NVIDIA GPUs (vendor 0x10de, display class) as CUDA numbers
# them: in PCI order under CUDA_DEVICE_ORDER=PCI_BUS_ID, else fastest first (.fake/cuda_fastest_first
# lists the addresses in that order where the GPUs differ; identical GPUs keep PCI order);
# CUDA_VISIBLE_DEVICES keeps and renumbers those it lists, up to the first invalid one.
cuda_devices() {
  local d i order=() visible=()
  CUDA_DEVS=()
  for d in "$ROOT"/sys/bus/pci/devices/*; do
    rd "$d/vendor" || continue
    [[ $REPLY == 0x10de ]] || continue
    rd "$d/class" || continue
    [[ $REPLY == 0x0300?? || $REPLY == 0x0302?? ]] || continue
    order+=("${d##*/}")
  done
  if [[ ${CUDA_DEVICE_ORDER-} != PCI_BUS_ID && -f $FAKE/cuda_fastest_first ]]; then
    read -r -a order <"$FAKE/cuda_fastest_first"
  fi
  if [[ -n ${CUDA_VISIBLE_DEVICES+x} ]]; then
    IFS=, read -r -a visible <<<"$CUDA_VISIBLE_DEVICES"
    for i in ${visible[@]+"${visible[@]}"}; do
      [[ $i =~ ^[0-9]+$ && $i -lt ${#order[@]} ]] || break
      CUDA_DEVS+=("${order[i]}")
    done
    return 0
  fi
  CUDA_DEVS=(${order[@]+"${order[@]}"})
}

log_call() {
  local line a sep=''
  json_str "$tool"
  line="{\"tool\":$REPLY,\"argv\":["
  for a in "$@"; do
    json_str "$a"
    line+=$sep$REPLY
    sep=,
  done
  if ! printf '%s]}\n' "$line" >>"$LOG"; then
    printf 'stub %s: cannot append to STUB_LOG=%s\n' "$tool" "$LOG" >&2
    exit 2
  fi
}

# canned DIR ARGS...: REPLY = DIR/TOOL@WORD for the first argument WORD that has such a
# file, else DIR/TOOL if it exists; status 1 when neither exists.
canned() {
  local dir=$1 a
  shift
  for a in "$@"; do
    safe_name "$a" || continue
    if [[ -f $dir/$tool@$a ]]; then
      REPLY=$dir/$tool@$a
      return 0
    fi
  done
  REPLY=$dir/$tool
  [[ -f $REPLY ]]
}

log_call "$@"
if canned "$FAKE/fail" "$@"; then
  cat -- "$REPLY" >&2
  exit 1
fi
if canned "$FAKE/output" "$@"; then
  cat -- "$REPLY"
  exit 0
fi

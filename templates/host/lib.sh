# shellcheck shell=bash
# lib.sh: the shell library of a roce-gen bundle, the same in every bundle. precheck.sh, apply.sh
# and rollback.sh source it and call rg_init, which sets strict mode, the locale and PATH and
# sources plan.sh (this host's values, RG_*). Sourcing it, like sourcing any of its parts
# (lib-text.sh, lib-parse.sh, lib-checks.sh, lib-probe.sh, lib-settings.sh, lib-rdma.sh,
# lib-persist.sh, lib-firmware.sh, lib-netmgr.sh, lib-net.sh, lib-lag.sh, lib-gpu.sh, lib-nccl.sh, lib-health.sh), only defines functions and values, so a function test can.
# Here: the command line, logging, the run lock, time limits on tools, the checks of a run, the
# JSON result and the summary. Bash 4.2 (RHEL 7) or newer, coreutils, and the host's own tools;
# nothing else.

RG_DIR=${RG_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
# A part that cannot be sourced ends the sourcing (the scripts then exit).
# Text for the console: rg_esc, rg_console, the plain console rule.
# shellcheck source=lib-text.sh
. "$RG_DIR/lib-text.sh" || return
# Read before rg_init's LC_ALL=C hides the locale.
RG_ASCII=no
! rg_plain_console || RG_ASCII=yes

# Everything on the host is read under this root: empty on a real host, a fake tree in tests.
RG_ROOT="${ROCE_GEN_ROOT:-}"
RG_PHASE=""
RG_OUT=""
RG_RESULTS_DIR=""
RG_DRY_RUN=no
RG_FORCE=no
RG_NO_PERSIST=no
RG_BOOT=no
# -v: every command and write on the console too; --no-next-step: run-here.sh and the Ansible
# play say what comes next themselves.
RG_VERBOSE=no
RG_NEXT_STEP=yes
# -q: no progress lines (rg_progress).
RG_QUIET=no
RG_IDENTIFIED_BY=""
RG_USAGE=""
RG_STARTED=""
RG_OBSERVED_HOST=""
# The exit status when nothing failed; 2 when the run itself could not be completed.
RG_EXIT_OVERRIDE=""
RG_TMP=""
# Set once the run has ended on purpose (result written, or a refusal before any check).
RG_DONE=""
# Where the last failing command was, for a run that strict mode stopped.
RG_ERR_AT=""
# This cluster's state on the host (rg_init): the saved values and what apply keeps beside them.
RG_STATE_DIR=""
RG_SAVED=""

# Every external tool gets this many seconds (a hung tool must not hang the run or the boot).
RG_TOOL_TIMEOUT=${ROCE_GEN_TOOL_TIMEOUT:-60}

# The checks of this run, one index per check across these arrays.
RG_C_ID=()
RG_C_NIC=()
RG_C_STATUS=()
RG_C_SEV=()
RG_C_EXP=()
RG_C_ACT=()
RG_C_MSG=()
# What the summary groups: `setting` for a port's setting that apply changes (precheck: will,
# --dry-run: would, apply: did; rollback likewise restores), with the value it had in RG_C_FROM;
# `action` for a host-wide change (the boot unit, the reload hook), with its summary line in
# RG_C_FROM; empty for every other check. Not part of the result.
RG_C_KIND=()
RG_C_FROM=()
# The slave of a RoCE LAG a port's check is about (lib-lag.sh), for the summary; else empty.
RG_C_PORT=()

# rg_symbols: RG_OK RG_FAIL RG_WARN RG_INFO RG_TO RG_MORE, in the console's form.
rg_symbols() {
  local -a sym=(${RG_SYM_UTF8[@]+"${RG_SYM_UTF8[@]}"})
  [ "$RG_ASCII" = no ] || sym=(${RG_SYM_PLAIN[@]+"${RG_SYM_PLAIN[@]}"})
  RG_OK=${sym[0]} RG_FAIL=${sym[1]} RG_WARN=${sym[2]} RG_INFO=${sym[3]} RG_TO=${sym[4]} RG_MORE=${sym[5]}
}
rg_symbols

# rg_log MESSAGE: one line on stderr, everything in it escaped (a tool's text cannot start a line
# of its own).
rg_log() {
  rg_esc "$*"
  rg_console "$REPLY" >&2
}

# rg_step TEXT: one step that changes the host (`run: CMD`, `write: VALUE > FILE`, `remove:
# FILE`), printed only with --verbose: as apply takes it, on stderr; as a dry run would, on
# stdout, `would TEXT`. Callers build TEXT only when RG_VERBOSE is yes (it may cost a fork).
rg_step() {
  [ "$RG_VERBOSE" = yes ] || return 0
  if [ "$RG_DRY_RUN" = yes ]; then
    rg_esc "would $1"
    rg_console "$REPLY"
  else
    rg_log "$1"
  fi
}

# rg_progress TEXT: one line on stderr as apply or rollback goes (each port, each link it waits
# for, the install), so that a run of 15-25 s is not silent: `… TEXT`. Not with -q, in a dry run
# (it takes no time) or at boot (the journal has the result).
rg_progress() {
  [ "$RG_QUIET" = no ] && [ "$RG_DRY_RUN" = no ] && [ "$RG_BOOT" = no ] || return 0
  case $RG_PHASE in
    apply | rollback) rg_log "$RG_MORE $1" ;;
  esac
}

# rg_die MESSAGE: the script itself cannot run (exit 2), before any check was made.
rg_die() {
  rg_log "error: $*"
  if [ "$RG_MARKED" = yes ]; then
    # The run's marker (rg_mark_running) gives way to a result that says why it stopped.
    RG_MARKED=no
    rg_check script_error "" fail error "" "" "$*"
    rg_write_result
  fi
  RG_DONE=yes
  exit 2
}

# rg_mark_running: apply and rollback (not a dry run) first put a result in their result's place
# that says they did not finish: a failed check `interrupted`, no facts. Their result replaces it
# when they end, however they end but SIGKILL or a power cut; then it stays, and ingest says the
# run was interrupted instead of showing the result of the run before.
RG_MARKED=no
rg_mark_running() {
  local n
  [ "$RG_DRY_RUN" = no ] || return 0
  case $RG_PHASE in
    apply | rollback) ;;
    *) return 0 ;;
  esac
  rg_check interrupted "" fail error "a finished $RG_PHASE" "not finished" \
    "$RG_PHASE.sh started at $RG_STARTED and did not finish (killed, or the host went down): what it changed is unknown; run $RG_PHASE.sh again"
  n=$RG_C_LAST
  RG_MARKED=yes
  rg_write_file "$(rg_result_path)" "$(RG_FACTS_NONE=yes rg_result_json)" 2>/dev/null || RG_MARKED=no
  unset "RG_C_ID[n]" "RG_C_NIC[n]" "RG_C_STATUS[n]" "RG_C_SEV[n]" "RG_C_EXP[n]" "RG_C_ACT[n]" \
    "RG_C_MSG[n]" "RG_C_KIND[n]" "RG_C_FROM[n]" "RG_C_PORT[n]"
}

rg_now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

rg_has() { command -v "$1" >/dev/null 2>&1; }

# rg_read FILE: prints a one-line file under the root, or fails when it is absent or unreadable.
# A driver file (rg_driver_file) is read under the tools' time limit (rg_bounded).
rg_read() {
  local RG_V
  rg_read_v "$1" || return 1
  printf '%s' "$RG_V"
}

# rg_read_v FILE: the same into RG_V, in the caller's shell; on a failure RG_V says why (empty
# when the file is absent or unreadable).
rg_read_v() {
  local f="$RG_ROOT$1"
  RG_V=""
  [ -r "$f" ] || return 1
  if rg_driver_file "$1"; then
    rg_bounded read "$1" rg_io_line "$f" || {
      RG_V=$RG_IO_OUT
      return 1
    }
    RG_V=$RG_IO_OUT
    return 0
  fi
  IFS= read -r RG_V <"$f" || [ -n "$RG_V" ] || return 0
}

# rg_driver_file FILE: true for the files whose read or write the driver turns into a firmware
# command (mlx5 en_ecn.c, port_buffer.c; the port queries behind ports/N/state, the RDMA
# counters and the netdev's speed), and configfs and the verbs traffic class beside them: a
# wedged firmware blocks those in the kernel (the mlx5 command interface waits up to its 60 s
# timeout, uninterruptibly).
rg_driver_file() {
  case $1 in
    */ecn/* | */tc/*/traffic_class | */qos/* | /sys/kernel/config/*) return 0 ;;
    /sys/class/infiniband/*/ports/*/state | /sys/class/infiniband/*/hw_counters/* | /sys/class/net/*/speed) return 0 ;;
  esac
  return 1
}

# rg_io_line FILE: its first line (rg_read's child). rg_io_all FILE: the whole file.
# rg_io_put FILE VALUE: VALUE and a newline written with one write(2), as `echo V > FILE`.
rg_io_line() {
  local line=""
  IFS= read -r line <"$1" || [ -n "$line" ] || return 0
  printf '%s' "$line"
}
rg_io_all() {
  local text=""
  IFS= read -r -d '' text <"$1" || true
  printf '%s' "$text"
}
rg_io_put() { printf '%s\n' "$2" >"$1"; }

# rg_bounded read|write FILE FUNCTION ARGS...: runs FUNCTION (one of the rg_io_* above) in a
# child and waits for it at most RG_TOOL_TIMEOUT seconds; RG_IO_OUT is its output (stdout and
# stderr). `timeout` cannot do this: a process blocked in a driver's read() or write() is not
# killable until the kernel returns, and `timeout` waits for it; nor can `read -t`, which bash
# turns off on a regular file (builtins/read.def), as every sysfs attribute is. The child's
# answer comes through a pipe that `read -t` does time: a child that does not answer is killed
# (it dies once the kernel lets go) and left behind, the access is recorded for the
# `tool_timeout` check, and every later access to that device's files fails at once, so a
# wedged NIC costs one time limit, not one per file. A fork per access, no program started.
# Outside a run (no RG_TMP: the library's function tests) FUNCTION runs here, unbounded.
RG_IO_OUT=""
rg_bounded() {
  local op=$1 file=$2 fd pid="" rc=1 text="" st=0 key
  shift 2
  RG_IO_OUT=""
  if [ -z "$RG_TMP" ]; then
    RG_IO_OUT=$("$@" 2>&1) || return
    return 0
  fi
  # The device: class/net/IF, class/infiniband/DEV or rdma_cm/DEV.
  key=${file#/sys/}
  key=${key#class/}
  key=${key#kernel/config/}
  key=${key%%/*}+${key#*/}
  key=${key%%/*}
  if [ -e "$RG_TMP/wedged.$key" ]; then
    RG_IO_OUT="not tried: an earlier access to a file of ${key#*+} did not finish within ${RG_TOOL_TIMEOUT}s"
    return 1
  fi
  exec {fd}< <(
    printf '%s\n' "$BASHPID"
    rc=0
    "$@" </dev/null 2>&1 || rc=$?
    printf '\n%s' "$rc"
  )
  if read -r -t "$RG_TOOL_TIMEOUT" -u "$fd" pid; then
    IFS= read -r -d '' -t "$RG_TOOL_TIMEOUT" -u "$fd" text || st=$?
  else
    st=142
  fi
  exec {fd}<&-
  if [ "$st" -gt 128 ]; then
    [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
    : >"$RG_TMP/wedged.$key"
    printf 'file %s %s\n' "$op" "$file" >>"$RG_TMP/hung"
    RG_IO_OUT="no answer within ${RG_TOOL_TIMEOUT}s"
    rg_log "error: the ${op} of $file did not finish within ${RG_TOOL_TIMEOUT}s (a hung firmware command?); the run goes on without it"
    return 1
  fi
  case $text in
    *$'\n'*) rc=${text##*$'\n'} RG_IO_OUT=${text%$'\n'*} ;;
  esac
  # As $(...) would have it: without its trailing newlines.
  while [[ $RG_IO_OUT == *$'\n' ]]; do RG_IO_OUT=${RG_IO_OUT%$'\n'}; done
  [[ $rc =~ ^[0-9]+$ ]] || rc=1
  return "$rc"
}

# rg_nic_wedged I: true when a driver file of NIC I (its netdev's, its RDMA device's or its
# rdma_cm folder's) did not answer within the time limit in this run (rg_bounded's marks).
rg_nic_wedged() {
  [ -n "$RG_TMP" ] || return 1
  [ -e "$RG_TMP/wedged.net+${RG_NIC_NETDEV[$1]}" ] || [ -e "$RG_TMP/wedged.infiniband+${RG_NIC_IBDEV[$1]}" ] ||
    [ -e "$RG_TMP/wedged.rdma_cm+${RG_NIC_IBDEV[$1]}" ]
}

# rg_x TOOL ARGS...: runs an external tool with a time limit. A tool that does not finish is
# stopped, recorded (rg_finish turns it into a failed `tool_timeout` check naming it) and
# counts as failed.
rg_x() {
  local rc=0
  if rg_has timeout; then
    timeout -k 5 "$RG_TOOL_TIMEOUT" "$@" || rc=$?
  else
    "$@" || rc=$?
  fi
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    rg_log "error: $1 did not finish within ${RG_TOOL_TIMEOUT}s and was stopped"
    [ -z "$RG_TMP" ] || printf '%s\n' "$*" >>"$RG_TMP/hung"
  fi
  return "$rc"
}

# rg_cap [-1|-2] CMD ARGS...: runs CMD (a function of this library, or rg_x TOOL …) in this shell
# with its output in RG_CAP, without trailing newlines as $(...) would give it: stdout and stderr;
# -1 stdout (stderr goes where the caller's goes); -2 stdout, and stderr in RG_CAP_ERR. Its status
# is CMD's. Through files of this run's private folder instead of a command substitution, which
# would fork this (large) shell each time: hundreds of times a run.
RG_CAP=""
RG_CAP_ERR=""
RG_CAP_DEPTH=0
rg_cap() {
  local mode=merged rc=0 f e
  case $1 in
    -1) mode=stdout ;;
    -2) mode=separate ;;
  esac
  [ "$mode" = merged ] || shift
  if [ -n "$RG_TMP" ]; then
    # Files per shell and per depth: background jobs (the fabric test's flows) run at once, and
    # CMD may use rg_cap itself.
    RG_CAP_DEPTH=$((RG_CAP_DEPTH + 1))
    f="$RG_TMP/out.$BASHPID.$RG_CAP_DEPTH" e="$RG_TMP/err.$BASHPID.$RG_CAP_DEPTH"
  else
    # Outside a run (the library's function tests): files of their own.
    f=$(mktemp) && e=$(mktemp) || return 1
  fi
  case $mode in
    merged) "$@" >"$f" 2>&1 || rc=$? ;;
    stdout) "$@" >"$f" || rc=$? ;;
    separate) "$@" >"$f" 2>"$e" || rc=$? ;;
  esac
  RG_CAP_ERR="" RG_CAP=""
  [ "$mode" != separate ] || IFS= read -r -d '' RG_CAP_ERR <"$e" || true
  IFS= read -r -d '' RG_CAP <"$f" || true
  if [ -n "$RG_TMP" ]; then
    RG_CAP_DEPTH=$((RG_CAP_DEPTH - 1))
  else
    rm -f "$f" "$e"
  fi
  while [[ $RG_CAP == *$'\n' ]]; do RG_CAP=${RG_CAP%$'\n'}; done
  return "$rc"
}

# rg_v CMD ARGS...: RG_V = the stdout of CMD (rg_cap -1), with CMD's status.
rg_v() {
  local rc=0
  rg_cap -1 "$@" || rc=$?
  RG_V=$RG_CAP
  return "$rc"
}

# rg_check ID NIC STATUS SEVERITY EXPECTED ACTUAL MESSAGE: records one check. With
# RG_CHECK_REPLACE=yes a check of the same id and NIC already recorded is replaced where it is
# (apply looks at the link, the address and the GID again once a flapped link is back); as with
# RG_PREDICT=yes, precheck's dry run of apply's host-wide changes (rg_predict_host).
RG_CHECK_REPLACE=no
RG_PREDICT=no
rg_check() {
  local n=${#RG_C_ID[@]} k msg=$7
  if [ "$RG_CHECK_REPLACE" = yes ] || [ "$RG_PREDICT" = yes ]; then
    for ((k = 0; k < n; k++)); do
      if [ "${RG_C_ID[k]}" = "$1" ] && [ "${RG_C_NIC[k]}" = "$2" ]; then
        n=$k
        break
      fi
    done
  fi
  RG_C_ID[n]=$1
  RG_C_NIC[n]=$2
  RG_C_STATUS[n]=$3
  RG_C_SEV[n]=$4
  RG_C_EXP[n]=$5
  RG_C_ACT[n]=$6
  # Precheck's prediction (rg_predict_host) speaks of apply, not of a dry run.
  if [ "$RG_PREDICT" = yes ]; then
    case $msg in
      "dry run: would "*) msg="apply will ${msg#dry run: would }" ;;
      "dry run: "*) msg="apply: ${msg#dry run: }" ;;
    esac
  fi
  RG_C_MSG[n]=$msg
  RG_C_KIND[n]=""
  RG_C_FROM[n]=""
  RG_C_PORT[n]=""
  RG_C_LAST=$n
}
RG_C_LAST=0

# rg_check_change ID NIC STATUS SEVERITY EXPECTED ACTUAL MESSAGE FROM: records a setting that
# changes (or will, or would) from FROM to EXPECTED.
rg_check_change() {
  local n
  rg_check "$1" "$2" "$3" "$4" "$5" "$6" "$7"
  n=$RG_C_LAST
  RG_C_KIND[n]=setting
  RG_C_FROM[n]=$8
}

# rg_check_action ID NIC STATUS SEVERITY EXPECTED ACTUAL MESSAGE SUMMARY: records a host-wide
# change; the summary lists it as `ID: SUMMARY`.
rg_check_action() {
  local n
  rg_check "$1" "$2" "$3" "$4" "$5" "$6" "$7"
  n=$RG_C_LAST
  RG_C_KIND[n]=action
  RG_C_FROM[n]=$8
}

# rg_check_removed ID NIC SEVERITY PATH WHAT [NOTE]: the check of a file rollback removed (after
# its rg_do rm): the dry run's plan, the file still there, or its removal (NOTE appended); WHAT
# names the file in the messages.
rg_check_removed() {
  if [ "$RG_DRY_RUN" = yes ]; then
    rg_check_action "$1" "$2" warn "$3" absent "" "dry run: would remove $5" "installed → absent ($4)"
  elif [ -e "$RG_ROOT$4" ]; then
    rg_check "$1" "$2" fail error absent installed "could not remove $5"
  else
    rg_check_action "$1" "$2" changed "$3" absent absent "removed $5${6-}" "installed → absent ($4)"
  fi
}

# rg_status_of ID NIC: REPLY = the status recorded for a check (empty if none). A variable, not
# output: it is asked for many times per port, and each command substitution is a fork.
rg_status_of() {
  local i
  REPLY=""
  for ((i = 0; i < ${#RG_C_ID[@]}; i++)); do
    if [ "${RG_C_ID[i]}" = "$1" ] && [ "${RG_C_NIC[i]}" = "$2" ]; then
      REPLY=${RG_C_STATUS[i]}
      return 0
    fi
  done
}

# rg_status_is ID NIC STATUS: true when the check's recorded status is STATUS (empty: none yet).
rg_status_is() {
  rg_status_of "$1" "$2"
  [ "$REPLY" = "$3" ]
}

# rg_is_num S: S is a decimal number (-1, 2.5); rg_is_uint S: a whole number, no sign.
rg_is_num() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; }
rg_is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# rg_json_q STRING: REPLY = STRING as a JSON string literal, valid UTF-8 whatever bytes it holds.
# A variable, not output: a result has hundreds of them, and each command substitution is a fork.
rg_json_q() {
  local s=$1 out="" c code i
  if [[ $s == *[$'\200'-$'\377']* ]]; then
    rg_utf8 "$s"
    s=$REPLY
  fi
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\r'/\\r}
  s=${s//$'\t'/\\t}
  if [[ $s == *[$'\001'-$'\037'$'\177']* ]]; then
    for ((i = 0; i < ${#s}; i++)); do
      c=${s:i:1}
      case $c in
        [$'\001'-$'\037'$'\177'])
          printf -v code '\\u%04x' "'$c"
          out+=$code
          ;;
        *) out+=$c ;;
      esac
    done
    s=$out
  fi
  REPLY="\"$s\""
}

# rg_json_fmt FORMAT [TYPE VALUE]...: REPLY = printf FORMAT with each VALUE in JSON as its TYPE
# says: s a string, n a number (null when it is not one), l a list of numbers ("A B", each not a
# number null: "-inf" is a dark lane), r as it is. One call where a command substitution per
# value would fork.
rg_json_fmt() {
  local fmt=$1 v a=()
  shift
  while (($# >= 2)); do
    case $1 in
      s) rg_json_q "$2" ;;
      n) if rg_is_num "$2"; then REPLY=$2; else REPLY=null; fi ;;
      l)
        REPLY=""
        for v in $2; do
          rg_is_num "$v" || v=null
          REPLY+="${REPLY:+,}$v"
        done
        REPLY="[$REPLY]"
        ;;
      *) REPLY=$2 ;;
    esac
    a+=("$REPLY")
    shift 2
  done
  # shellcheck disable=SC2059 # the format is the caller's JSON template
  printf -v REPLY "$fmt" ${a[@]+"${a[@]}"}
}

# How many checks have each status, as rg_tally last counted them.
declare -A RG_TALLY=()

# rg_tally: RG_TALLY[STATUS] = how many checks have STATUS, for each of the five.
rg_tally() {
  local i
  RG_TALLY=([pass]=0 [warn]=0 [fail]=0 [skip]=0 [changed]=0)
  for ((i = 0; i < ${#RG_C_STATUS[@]}; i++)); do
    RG_TALLY[${RG_C_STATUS[i]}]=$((${RG_TALLY[${RG_C_STATUS[i]}]:-0} + 1))
  done
}

# rg_run_status: REPLY = fail if any check failed, warn if any warned, pass otherwise.
rg_run_status() {
  rg_tally
  if ((RG_TALLY[fail] > 0)); then
    REPLY=fail
  elif ((RG_TALLY[warn] > 0)); then
    REPLY=warn
  else
    REPLY=pass
  fi
}

# rg_failed: true when a check of this run has failed.
rg_failed() {
  rg_tally
  ((RG_TALLY[fail] > 0))
}

# rg_bundle_sha256: the bundle's identity, the sha256 of its SHA256SUMS.
rg_bundle_sha256() {
  local sum=""
  if [ -r "$RG_DIR/SHA256SUMS" ]; then
    sum=$(sha256sum "$RG_DIR/SHA256SUMS" 2>/dev/null) || sum=""
  fi
  printf '%s' "${sum%% *}"
}

# RG_OFED: what `ofed_info -s` says (MLNX_OFED_LINUX-24.10-1.1.4.0), empty on inbox hosts; read
# once, by rg_start, in the script's own shell.
RG_OFED=""
rg_read_ofed() {
  RG_OFED=""
  if rg_has ofed_info; then
    # The first line, taken here: `| head -n 1` would kill a longer output with SIGPIPE and,
    # under pipefail, make an OFED host read as inbox.
    RG_OFED=$(rg_x ofed_info -s 2>/dev/null) || RG_OFED=""
    RG_OFED=${RG_OFED%%$'\n'*}
    RG_OFED=${RG_OFED%:}
  fi
}

# rg_entries DIR SEP: the names in a directory under the root, joined by SEP.
rg_entries() {
  local names="" n
  for n in "$RG_ROOT$1"/*; do
    [ -e "$n" ] || continue
    names="${names:+$names$2}${n##*/}"
  done
  printf '%s' "$names"
}

# rg_netdev_of DEV: the netdev(s) sysfs links to an RDMA device, space-separated.
rg_netdev_of() { rg_entries "/sys/class/infiniband/$1/device/net" " "; }

# rg_list DIR: the entries of a directory under the root, comma-separated, or "none".
rg_list() {
  local names
  names=$(rg_entries "$1" ", ")
  printf '%s' "${names:-none}"
}

# rg_result_name: the file name of this run's result: `<host>.<phase>.json`, and for a dry run
# `<host>.<phase>.dry-run.json`, so that a dry run never replaces a real run's result.
rg_result_name() {
  local dry=""
  [ "$RG_DRY_RUN" = no ] || dry=.dry-run
  printf '%s.%s%s.json' "$RG_HOST" "$RG_PHASE" "$dry"
}

# rg_result_path: where this run's result goes.
rg_result_path() {
  if [ -n "$RG_OUT" ]; then
    printf '%s' "$RG_OUT"
  else
    printf '%s/%s' "${RG_RESULTS_DIR:-$RG_DIR/results}" "$(rg_result_name)"
  fi
}

# rg_result_json: the result document.
rg_result_json() {
  local i sep="" dry=false reboot=false nic
  [ "$RG_DRY_RUN" != yes ] || dry=true
  [ "$RG_REBOOT_REQUIRED" != yes ] || reboot=true
  printf '{\n  "schema": "roce-gen/result/v1",\n'
  rg_json_line tool_version "$RG_TOOL_VERSION"
  rg_json_line cluster "$RG_CLUSTER"
  rg_json_line host "$RG_HOST"
  rg_json_line observed_hostname "$RG_OBSERVED_HOST"
  rg_json_line phase "$RG_PHASE"
  printf '  "dry_run": %s,\n  "reboot_required": %s,\n' "$dry" "$reboot"
  rg_json_line plan_sha256 "$RG_PLAN_SHA256"
  rg_json_line bundle_sha256 "$(rg_bundle_sha256)"
  rg_json_line started_at "$RG_STARTED"
  rg_json_line finished_at "$(rg_now)"
  rg_run_status
  rg_json_line status "$REPLY"
  printf '  "counts": {"pass": %s, "warn": %s, "fail": %s, "skip": %s, "changed": %s},\n' \
    "${RG_TALLY[pass]}" "${RG_TALLY[warn]}" "${RG_TALLY[fail]}" "${RG_TALLY[skip]}" "${RG_TALLY[changed]}"
  # Every value quoted in this shell (rg_json_fmt), none substituted: a result has hundreds of
  # them, and every command substitution is a fork of this (large) shell.
  printf '  "checks": ['
  for ((i = 0; i < ${#RG_C_ID[@]}; i++)); do
    nic=""
    if [ -n "${RG_C_NIC[i]}" ]; then
      rg_json_q "${RG_C_NIC[i]}"
      nic=", \"nic\": $REPLY"
    fi
    # kind: what the check is about, so that a reader tells a setting apply changes (or would)
    # from a warning about a value it does not set: setting, action (host-wide), or check.
    rg_json_fmt '%s\n    {"id": %s%s, "kind": %s, "status": %s, "severity": %s, "expected": %s, "actual": %s, "message": %s}' \
      r "$sep" s "${RG_C_ID[i]}" r "$nic" s "${RG_C_KIND[i]:-check}" s "${RG_C_STATUS[i]}" s "${RG_C_SEV[i]}" \
      s "${RG_C_EXP[i]}" s "${RG_C_ACT[i]}" s "${RG_C_MSG[i]}"
    printf '%s' "$REPLY"
    sep=","
  done
  printf '\n  ],\n  "facts": '
  if [ "${RG_FACTS_NONE-}" = yes ]; then printf '{}'; else rg_facts; fi
  printf '\n}\n'
}

# rg_json_line NAME VALUE: one string member of the result's top level, `  "NAME": "VALUE",`.
rg_json_line() {
  rg_json_q "$2"
  printf '  "%s": %s,\n' "$1" "$REPLY"
}

# rg_write_result: writes the result JSON atomically and says where. When its folder cannot be
# written (a full or read-only disk), the result goes to the temporary folder instead, the run
# says so and ends with exit status 2.
rg_write_result() {
  local path doc err
  RG_DONE=yes RG_MARKED=no
  path=$(rg_result_path)
  doc=$(rg_result_json)
  if err=$(rg_write_file "$path" "$doc" 2>&1); then
    rg_log "result: $path"
    return 0
  fi
  rg_check result "" fail error "$path" "not written" "cannot write the result to $path: ${err:-unknown error}"
  RG_EXIT_OVERRIDE=2
  doc=$(rg_result_json)
  # A new name in the temporary folder (mktemp), never a predictable one another user could
  # have planted a link at.
  if ! path=$(mktemp "${TMPDIR:-/tmp}/roce-gen.$(rg_result_name).XXXXXX" 2>&1); then
    err=$path
  elif err=$({ printf '%s\n' "$doc" >"$path" && chmod 644 "$path"; } 2>&1); then
    rg_log "error: the result could not be written where asked; it is in $path"
    return 0
  fi
  rg_log "error: the result could not be written anywhere ($err); it follows on stdout"
  printf '%s\n' "$doc"
}

# rg_write_file PATH TEXT: writes TEXT to PATH (mode 0644) through a temporary file and a rename.
# The temporary file is made by mktemp in PATH's folder: a new name (O_EXCL), never one another
# user of a shared folder (results/ on a share, a textfile folder) could have planted a link at;
# the rename replaces PATH itself and never writes through it. A PATH that is a symbolic link is
# refused, with its target: nothing is written through a link.
rg_write_file() {
  local tmp dir=. base=${1##*/}
  case $1 in */*) dir=${1%/*} dir=${dir:-/} ;; esac
  [ -d "$dir" ] || mkdir -p "$dir" || return 1
  if [ -L "$1" ]; then
    printf '%s is a symbolic link (to %s): not written through it; remove the link\n' "$1" "$(readlink -- "$1")" >&2
    return 1
  fi
  tmp=$(mktemp "$dir/.$base.XXXXXX") || return 1
  if ! { printf '%s\n' "$2" >"$tmp" && chmod 644 "$tmp" && mv -fT "$tmp" "$1"; }; then
    rm -f "$tmp"
    return 1
  fi
}

# rg_summary_texts: RG_E_MSG, RG_E_FROM and RG_E_EXP, the checks' messages and values as the
# summary prints them: escaped (rg_esc), so that a host's or a tool's text can neither run on the
# terminal nor, with a newline of its own, start a line of the summary.
RG_E_MSG=()
RG_E_FROM=()
RG_E_EXP=()
rg_summary_texts() {
  local i
  for ((i = ${#RG_E_MSG[@]}; i < ${#RG_C_ID[@]}; i++)); do
    rg_esc "${RG_C_MSG[i]}"
    RG_E_MSG[i]=$REPLY
    rg_esc "${RG_C_FROM[i]}"
    RG_E_FROM[i]=$REPLY
    rg_esc "${RG_C_EXP[i]}"
    RG_E_EXP[i]=$REPLY
  done
}

# rg_summary: the human summary, in the style of EasyRoCE-NC: ✅ or ❌ (RG_OK, RG_FAIL), the
# phase (and `(dry run)`) and the counts; then each failure and each warning that needs a person
# on its own line; then, in the manner of `terraform plan`, the settings apply changes (will,
# would or did), one entry per setting, and a count. Printed through rg_console.
rg_summary() {
  local i status mode=$RG_PHASE
  rg_run_status
  status=$REPLY
  rg_summary_texts
  [ "$RG_DRY_RUN" = no ] || mode+=" (dry run)"
  if [ "$status" = fail ]; then
    printf '%s %s: %s: %s failed (%s pass, %s warn, %s changed, %s skip)\n' "$RG_FAIL" "$RG_HOST" "$mode" \
      "${RG_TALLY[fail]}" "${RG_TALLY[pass]}" "${RG_TALLY[warn]}" "${RG_TALLY[changed]}" "${RG_TALLY[skip]}"
  else
    printf '%s %s: %s: all checks passed (%s pass, %s warn, %s changed, %s skip)\n' "$RG_OK" "$RG_HOST" "$mode" \
      "${RG_TALLY[pass]}" "${RG_TALLY[warn]}" "${RG_TALLY[changed]}" "${RG_TALLY[skip]}"
  fi
  rg_summary_findings fail "$RG_FAIL"
  # The changes come next, grouped: a warning here is one that needs a person.
  rg_summary_findings warn "$RG_WARN"
  rg_summary_changes "$status"
  rg_fw_summary
}

# rg_summary_findings STATUS SYMBOL: the summary's line per finding of STATUS (for warn, those
# that are no change: the changes are listed apart), in the order they ran. A finding whose text
# is the same on several ports but for the port's own names (its RDMA device and netdev, read as
# "each port") is one line that lists the ports: an 8-port host's ARP advice once, not 8 times.
rg_summary_findings() {
  local i j key tpl nic msg
  local -a keys=()
  local -A names=() first=() ports=()
  for ((j = 0; j < ${#RG_NIC_IBDEV[@]}; j++)); do names[${RG_NIC_IBDEV[j]}]=${RG_NIC_NETDEV[j]-}; done
  for ((i = 0; i < ${#RG_C_ID[@]}; i++)); do
    [ "${RG_C_STATUS[i]}" = "$1" ] || continue
    [ "$1" != warn ] || [ -z "${RG_C_KIND[i]}" ] || continue
    tpl=${RG_E_MSG[i]} nic=${RG_C_NIC[i]}
    if [ -n "$nic" ] && [ -n "${names[$nic]+set}" ]; then
      [ -z "${names[$nic]}" ] || tpl=${tpl//"${names[$nic]}"/$'\x01'}
      tpl=${tpl//"$nic"/$'\x01'}
    fi
    key="${RG_C_ID[i]}"$'\x02'"$tpl"
    if [ -z "${first[$key]+set}" ]; then
      keys+=("$key")
      first[$key]=$i ports[$key]=$nic
    else
      ports[$key]+=",$nic"
    fi
  done
  for key in ${keys[@]+"${keys[@]}"}; do
    i=${first[$key]} nic=${ports[$key]}
    msg=${RG_E_MSG[i]}
    if [[ $nic == *,* ]]; then
      msg=${key#*$'\x02'}
      msg=${msg//$'\x01'/each port}
    fi
    printf '%s %s%s: %s\n' "$2" "${RG_C_ID[i]}" "${nic:+:$nic}" "$msg"
  done
}

# rg_next_step: the summary's last line, what to run next, when there is an obvious next step:
# after a precheck or a dry run that passed, the real run; after an apply or rollback, the
# results to ingest; after a failure, what to fix. Nothing at boot, after a run that could not
# complete (exit 2), or with --no-next-step.
rg_next_step() {
  local dir
  if [ "$RG_NEXT_STEP" = no ] || [ "$RG_BOOT" = yes ] || [ -n "$RG_EXIT_OVERRIDE" ]; then
    return 0
  fi
  if rg_failed; then
    if rg_status_is bundle_integrity "" fail; then
      printf 'next: copy the bundle again (its files do not match SHA256SUMS)\n'
    elif rg_status_is hostname "" fail; then
      printf 'next: run the bundle of this host (this one is for %s), or name the host %s\n' "$RG_HOST" "$RG_HOST"
    else
      printf 'next: fix what failed above, then run again: bash %s/%s.sh\n' "$RG_DIR" "$RG_PHASE"
    fi
    return 0
  fi
  # A precheck that finds nothing to change has nothing for apply to do: its result is next.
  local change=no i
  for ((i = 0; i < ${#RG_C_ID[@]}; i++)); do
    if [ "${RG_C_STATUS[i]}" = warn ] && [ -n "${RG_C_KIND[i]}" ]; then
      change=yes
      break
    fi
  done
  case $RG_PHASE:$RG_DRY_RUN:$change in
    precheck:*:yes | apply:yes:*) printf 'next: bash %s/apply.sh\n' "$RG_DIR" ;;
    rollback:yes:*) printf 'next: bash %s/rollback.sh\n' "$RG_DIR" ;;
    *)
      dir=$(rg_result_path)
      dir=$(dirname "$dir")
      printf 'next: bring %s back and run: roce-gen ingest %s --plan PLAN\n' "$dir" "${dir##*/}"
      ;;
  esac
}

# rg_summary_changes STATUS: the changes of the run: a heading, one entry per setting (in the
# order apply changes them), the host-wide changes, the links a PFC change flaps, and a count.
rg_summary_changes() {
  local status=$1 i id ids="" order="" nics=" " nports=0 nsettings=0 actions=() mode text="" n=0
  for ((i = 0; i < ${#RG_C_ID[@]}; i++)); do
    case ${RG_C_KIND[i]} in
      setting)
        [[ " $ids " == *" ${RG_C_ID[i]} "* ]] || ids+=" ${RG_C_ID[i]}"
        if [[ $nics != *" ${RG_C_NIC[i]}${RG_C_PORT[i]:+/${RG_C_PORT[i]}} "* ]]; then
          nics+="${RG_C_NIC[i]}${RG_C_PORT[i]:+/${RG_C_PORT[i]}} "
          nports=$((nports + 1))
        fi
        ;;
      action) actions+=("$i") ;;
    esac
  done
  for id in $RG_SETTINGS $ids; do
    if [[ " $ids " != *" $id "* ]] || [[ " $order " == *" $id "* ]]; then continue; fi
    order+=" $id"
    nsettings=$((nsettings + 1))
  done
  mode=$RG_PHASE
  [ "$RG_DRY_RUN" = no ] || mode+=" --dry-run"
  if [ -n "$order" ] || [ ${#actions[@]} -gt 0 ]; then
    case $mode in
      precheck) printf 'apply will change:\n' ;;
      "apply --dry-run") printf 'apply would change:\n' ;;
      apply) printf 'changed:\n' ;;
      "rollback --dry-run") printf 'rollback would restore:\n' ;;
      *) printf 'restored:\n' ;;
    esac
    for id in $order; do rg_summary_setting "$id"; done
    for i in ${actions[@]+"${actions[@]}"}; do
      printf '  %s: %s\n' "${RG_C_ID[i]}" "${RG_E_FROM[i]}"
    done
  fi
  if [ -n "$RG_FLAPS" ]; then
    for i in $RG_FLAPS; do n=$((n + 1)); done
    if [ "$RG_PHASE" = precheck ] || [ "$RG_DRY_RUN" = yes ]; then
      printf '%s %s that would flap once (the driver toggles the link to apply PFC; apply then waits up to %ss for each to come back): %s\n' "$RG_INFO" "$(rg_plural "$n" link)" "$RG_LINK_WAIT" "$RG_FLAPS"
    else
      printf '%s %s that flapped once (the driver toggles the link to apply PFC): %s\n' "$RG_INFO" "$(rg_plural "$n" link)" "$RG_FLAPS"
    fi
  fi
  [ "$nsettings" -eq 0 ] || text="$(rg_plural "$nsettings" setting)"
  case $mode in
    precheck | "apply --dry-run") [ -z "$text" ] || text+=" to change" ;;
    "rollback --dry-run") [ -z "$text" ] || text+=" to restore" ;;
  esac
  [ -z "$text" ] || text+=" on $(rg_plural "$nports" port)"
  [ ${#actions[@]} -eq 0 ] || text+="${text:+, }$(rg_plural ${#actions[@]} "host-wide change")"
  case $mode in
    precheck | "apply --dry-run")
      if [ -n "$text" ]; then
        printf 'Plan: %s.\n' "$text"
      elif [ "$status" = fail ]; then
        printf 'nothing to change in the settings that could be read\n'
      else
        printf 'nothing to change: the host matches the plan\n'
      fi
      ;;
    apply)
      if [ -n "$text" ]; then
        printf 'Changed %s.\n' "$text"
      elif [ "$status" = fail ]; then
        printf 'nothing changed\n'
      else
        printf 'nothing changed: the host already matched the plan\n'
      fi
      ;;
    "rollback --dry-run") [ -z "$text" ] || printf 'Plan: %s.\n' "$text" ;;
    *) [ -z "$text" ] || printf 'Restored %s.\n' "$text" ;;
  esac
}

# rg_plural N WORD: `1 port`, `2 ports`.
rg_plural() {
  if [ "$1" = 1 ]; then printf '1 %s' "$2"; else printf '%s %ss' "$1" "$2"; fi
}

# rg_change_text FROM TO: REPLY = `FROM → TO` as the summary shows it: `unset` for an empty
# value; of a long list (a whole DSCP map), only the entries that differ, or their number.
rg_change_text() {
  local from=${1:-unset} to=${2:-unset}
  if [ ${#from} -le 40 ] && [ ${#to} -le 40 ]; then
    REPLY="$from $RG_TO $to"
    return 0
  fi
  REPLY="$(rg_brief "$from" "$to") $RG_TO $(rg_brief "$to" "$from")"
}

# rg_brief LIST OTHER: LIST when short; else the entries that OTHER lacks, after `…,`, when they
# are few, or `N entries`.
rg_brief() {
  local item only="" n=0
  if [ ${#1} -le 40 ]; then
    printf '%s' "$1"
    return 0
  fi
  for item in ${1//,/ }; do
    n=$((n + 1))
    [[ ,$2, == *",$item,"* ]] || only+="${only:+,}$item"
  done
  if [ -n "$only" ] && [ ${#only} -le 30 ]; then
    printf '%s,%s' "$RG_MORE" "$only"
  else
    printf '%s entries' "$n"
  fi
}

# rg_summary_setting ID: one entry of the changes: the ports of setting ID grouped by the value
# they had and the one they get, e.g. `  mtu: 8 ports 1500 → 4200`. Ports are named unless the
# entry covers every planned port; of several groups, the largest then comes last as
# `the other N`.
rg_summary_setting() {
  local id=$1 i g n=0 key to="" short=yes big=-1 names order=""
  local g_key=() g_from=() g_to=() g_count=() g_names=()
  for ((i = 0; i < ${#RG_C_ID[@]}; i++)); do
    if [ "${RG_C_KIND[i]}" != setting ] || [ "${RG_C_ID[i]}" != "$id" ]; then continue; fi
    n=$((n + 1))
    # One target for all, and short values: the target goes once, in the entry's first line.
    if [ "$n" -eq 1 ]; then
      to=${RG_E_EXP[i]}
    elif [ "$to" != "${RG_E_EXP[i]}" ]; then
      short=no
    fi
    [ ${#RG_E_FROM[i]} -le 40 ] && [ ${#RG_E_EXP[i]} -le 40 ] || short=no
    key="${RG_E_FROM[i]}"$'\t'"${RG_E_EXP[i]}"
    for ((g = 0; g < ${#g_key[@]}; g++)); do
      [ "${g_key[g]}" != "$key" ] || break
    done
    if [ "$g" -eq ${#g_key[@]} ]; then
      g_key[g]=$key g_from[g]=${RG_E_FROM[i]} g_to[g]=${RG_E_EXP[i]} g_count[g]=0 g_names[g]=""
    fi
    g_count[g]=$((g_count[g] + 1))
    g_names[g]+="${g_names[g]:+, }${RG_C_NIC[i]}${RG_C_PORT[i]:+/${RG_C_PORT[i]}}"
  done
  if [ ${#g_key[@]} -eq 1 ]; then
    rg_change_text "${g_from[0]}" "${g_to[0]}"
    printf '  %s: %s %s' "$id" "$(rg_plural "$n" port)" "$REPLY"
    [ "$n" -eq ${#RG_NIC_IBDEV[@]} ] || printf ' (%s)' "${g_names[0]}"
    printf '\n'
    return 0
  fi
  if [ "$n" -eq ${#RG_NIC_IBDEV[@]} ]; then
    for ((g = 0; g < ${#g_key[@]}; g++)); do
      if [ "${g_count[g]}" -ge 2 ] && { [ "$big" -lt 0 ] || [ "${g_count[g]}" -gt "${g_count[big]}" ]; }; then
        big=$g
      fi
    done
  fi
  for ((g = 0; g < ${#g_key[@]}; g++)); do
    [ "$g" -eq "$big" ] || order+=" $g"
  done
  [ "$big" -lt 0 ] || order+=" $big"
  if [ "$short" = yes ]; then
    printf '  %s: %s %s %s\n' "$id" "$(rg_plural "$n" port)" "$RG_TO" "${to:-unset}"
  else
    printf '  %s: %s\n' "$id" "$(rg_plural "$n" port)"
  fi
  for g in $order; do
    names=${g_names[g]}
    [ "$g" -ne "$big" ] || names="the other ${g_count[g]}"
    if [ "$short" = yes ]; then
      printf '    from %s (%s)\n' "${g_from[g]:-unset}" "$names"
    else
      rg_change_text "${g_from[g]}" "${g_to[g]}"
      printf '    %s (%s)\n' "$REPLY" "$names"
    fi
  done
}

# rg_note_hung: one failed check per tool that had to be stopped.
rg_note_hung() {
  local line seen=" "
  [ -n "$RG_TMP" ] && [ -r "$RG_TMP/hung" ] || return 0
  while IFS= read -r line; do
    case $line in
      # A driver file (rg_bounded): `file read|write PATH`, one check per file.
      "file "*)
        line=${line#file }
        rg_check tool_timeout "" fail error "answers within ${RG_TOOL_TIMEOUT}s" "no answer" \
          "the driver did not answer the ${line%% *} of ${line#* } within ${RG_TOOL_TIMEOUT}s (a hung firmware command): what it should have read or set is unknown, and the device's other files were not tried; check the NIC (dmesg: mlx5 command timeouts, health), then run again"
        continue
        ;;
    esac
    [[ $seen != *" ${line%% *} "* ]] || continue
    seen+="${line%% *} "
    rg_check tool_timeout "" fail error "answers within ${RG_TOOL_TIMEOUT}s" "no answer" \
      "${line%% *} did not answer within ${RG_TOOL_TIMEOUT}s and was stopped ($line): what it should have read or set is unknown"
  done <"$RG_TMP/hung"
}

# rg_finish: writes the result, prints the summary, exits 0 (pass/warn), 1 (fail) or 2.
rg_finish() {
  rg_note_hung
  rg_write_result
  rg_console "$(rg_summary)"
  rg_next_step
  [ -z "$RG_EXIT_OVERRIDE" ] || exit "$RG_EXIT_OVERRIDE"
  ! rg_failed || exit 1
  exit 0
}

# rg_abort ID MESSAGE: the run cannot go on (e.g. the state folder is full): records why,
# writes the result and exits 2.
rg_abort() {
  rg_check "$1" "" fail error "" "" "$2"
  rg_log "error: $2"
  RG_EXIT_OVERRIDE=2
  rg_finish
}

# rg_cleanup: on exit, the lock and the temporary folder go. A run that strict mode stopped
# (a bug, or a tool failing where nothing expected it) still leaves a result that says where,
# and exits 2.
rg_cleanup() {
  local rc=$?
  if [ -z "$RG_DONE" ] && [ "$rc" -ne 0 ]; then
    trap - ERR
    set +e
    case $rc in
      129 | 130 | 143)
        local sig=TERM
        [ "$rc" != 129 ] || sig=HUP
        [ "$rc" != 130 ] || sig=INT
        rg_check script_error "" fail error "" "" \
          "the run was stopped by SIG$sig before it ended; the checks before it are recorded: run it again"
        ;;
      *)
        rg_check script_error "" fail error "" "" \
          "the script stopped unexpectedly (exit $rc) at ${RG_ERR_AT:-an unknown place}; the checks before it are recorded"
        ;;
    esac
    rg_write_result
    rg_console "$(rg_summary)"
    rc=2
  fi
  # The run lock: released (the kernel would at the exit; a tool still running from this run
  # would keep it).
  [ -z "$RG_LOCK_FD" ] || flock -u "$RG_LOCK_FD" 2>/dev/null || true
  # A fabric step's flows still running end with the run (lib-fabric.sh).
  rg_fabric_stop
  [ -z "$RG_TMP" ] || rm -rf "$RG_TMP"
  exit "$rc"
}

# rg_lock: one roce-gen run at a time on a host: an exclusive flock(2) on /run/roce-gen-run.lock.
# The kernel releases it when the run ends, however it ends (and what the run started has
# ended), so no two runs can take one stale lock over together. The file names the holder's
# pid, for the message; it is never removed (a run that opened it before the removal would lock
# a file no one else sees). /run/roce-gen.lock is the lock of older bundles, a symbolic link
# naming its owner (pid:N): respected while its owner runs, removed after.
RG_LOCK_FD=""
rg_lock() {
  local lock="$RG_ROOT/run/roce-gen-run.lock" old="$RG_ROOT/run/roce-gen.lock" owner=""
  mkdir -p "$RG_ROOT/run" 2>/dev/null || true
  if [ -L "$old" ]; then
    owner=$(readlink "$old" 2>/dev/null) || owner=""
    owner=${owner#pid:}
    if [[ $owner =~ ^[0-9]+$ ]] && kill -0 "$owner" 2>/dev/null; then
      rg_die "another roce-gen run (pid $owner) is in progress on this host; wait for it to end and run this again (lock: $old)"
    fi
    rm -f "$old"
  fi
  if ! rg_has flock || ! { exec {RG_LOCK_FD}>>"$lock"; } 2>/dev/null; then
    # Not root, or no /run: precheck may still run; apply's root check fails anyway.
    RG_LOCK_FD=""
    rg_log "warning: cannot lock $lock; running without the one-run-at-a-time lock"
    return 0
  fi
  if ! flock -n "$RG_LOCK_FD"; then
    IFS= read -r owner <"$lock" || true
    [[ $owner =~ ^[0-9]+$ ]] || owner=""
    if [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null; then
      rg_die "a process an earlier roce-gen run (pid $owner, ended) started still holds the run lock $lock: find it with fuser -v $lock, end it, and run this again"
    fi
    rg_die "another roce-gen run (pid ${owner:-unknown}) is in progress on this host; wait for it to end and run this again (lock: $lock)"
  fi
  printf '%s\n' "$BASHPID" >"$lock" 2>/dev/null || true
}

# rg_apply_gate: apply refuses on a bundle or host-name mismatch, and on a failed precheck
# unless --force (or at boot, where the NICs that are there get configured).
rg_apply_gate() {
  local id
  for id in bundle_integrity hostname; do
    if rg_status_is "$id" "" fail; then
      rg_log "refusing to apply: $id failed"
      rg_finish
    fi
  done
  if rg_failed && [ "$RG_FORCE" = no ] && [ "$RG_BOOT" = no ]; then
    rg_log "refusing to apply: the precheck failed (use --force to configure the NICs that passed)"
    rg_finish
  fi
}

# rg_start PHASE: common start of every script.
rg_start() {
  RG_PHASE=$1
  case $RG_TOOL_TIMEOUT in
    '' | *[!0-9]* | 0) rg_die "ROCE_GEN_TOOL_TIMEOUT must be a positive number of seconds, not $RG_TOOL_TIMEOUT" ;;
  esac
  case $RG_LINK_WAIT in
    '' | *[!0-9]*) rg_die "ROCE_GEN_LINK_WAIT must be a number of seconds, not $RG_LINK_WAIT" ;;
  esac
  RG_STARTED=$(rg_now)
  RG_TMP=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen.XXXXXX") || rg_die "cannot create a temporary folder"
  trap rg_cleanup EXIT
  # Stopped by a signal, the run fails with its result: bash would run the EXIT trap with the
  # status of the command before, often 0.
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
  set -o errtrace
  trap 'RG_ERR_AT="${BASH_SOURCE[0]##*/} line $LINENO: $BASH_COMMAND"' ERR
  rg_lock
  rg_read_ofed
  RG_OBSERVED_HOST=$(rg_x hostname 2>/dev/null) || RG_OBSERVED_HOST=""
  # A host name is one line; anything after is noise from a broken tool.
  RG_OBSERVED_HOST=${RG_OBSERVED_HOST%%$'\n'*}
  # Before anything uses a planned netdev: the name the host uses for one it renamed (rollback
  # restores there too).
  rg_resolve_netdevs
  rg_mark_running
}

# rg_usage_error MESSAGE: a wrong command line (exit 2).
rg_usage_error() {
  rg_log "error: $1"
  rg_log "$RG_USAGE"
  exit 2
}

# rg_parse "OPTIONS" ARGS...: parses the command line. OPTIONS lists the flags this script takes
# besides --out, --results-dir, --identified-by, --ascii, -v/--verbose, --no-next-step and
# --help.
rg_parse() {
  local allowed=" $1 "
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --out | --results-dir | --identified-by)
        [ $# -ge 2 ] || rg_usage_error "$1 needs a value"
        case $1 in
          --out) RG_OUT=$2 ;;
          --results-dir) RG_RESULTS_DIR=$2 ;;
          # run-here.sh found this host's bundle by a MAC or the management address because
          # its name is not set yet; the host name check then warns instead of refusing.
          --identified-by) RG_IDENTIFIED_BY=$2 ;;
        esac
        shift 2
        ;;
      -h | --help)
        printf '%s\n' "$RG_USAGE"
        exit 0
        ;;
      --ascii)
        RG_ASCII=yes
        shift
        ;;
      -v | --verbose)
        RG_VERBOSE=yes
        shift
        ;;
      --no-next-step)
        RG_NEXT_STEP=no
        shift
        ;;
      -q | --quiet)
        [[ $allowed == *" --quiet "* ]] || rg_usage_error "unknown option $1"
        RG_QUIET=yes
        shift
        ;;
      --*)
        [[ $allowed == *" $1 "* ]] || rg_usage_error "unknown option $1"
        case $1 in
          --dry-run) RG_DRY_RUN=yes ;;
          --force) RG_FORCE=yes ;;
          --no-persist) RG_NO_PERSIST=yes ;;
          --boot) RG_BOOT=yes ;;
        esac
        shift
        ;;
      *) rg_usage_error "unexpected argument $1" ;;
    esac
  done
  rg_symbols
}

# rg_init: what every script does first, after sourcing lib.sh: strict mode, the locale and
# PATH the tools are run with, this host's values (plan.sh) and what follows from them.
rg_init() {
  set -euo pipefail
  # Tool output is parsed: keep it in English and byte-oriented.
  export LC_ALL=C
  PATH="${PATH:-/usr/bin:/bin}:/usr/sbin:/sbin"
  export PATH
  # This host's values (RG_*), the only part of the bundle's shell that differs between hosts.
  # shellcheck source=plan.sh
  . "$RG_DIR/plan.sh"
  RG_STATE_DIR="$RG_ROOT/var/lib/roce-gen/$RG_CLUSTER"
  RG_SAVED="$RG_STATE_DIR/saved-state.tsv"
  rg_rdma_init
  rg_persist_init
}

# shellcheck source=lib-parse.sh
. "$RG_DIR/lib-parse.sh" || return
# shellcheck source=lib-checks.sh
. "$RG_DIR/lib-checks.sh" || return
# shellcheck source=lib-probe.sh
. "$RG_DIR/lib-probe.sh" || return
# shellcheck source=lib-settings.sh
. "$RG_DIR/lib-settings.sh" || return
# shellcheck source=lib-rdma.sh
. "$RG_DIR/lib-rdma.sh" || return
# shellcheck source=lib-persist.sh
. "$RG_DIR/lib-persist.sh" || return
# shellcheck source=lib-firmware.sh
. "$RG_DIR/lib-firmware.sh" || return
# shellcheck source=lib-netmgr.sh
. "$RG_DIR/lib-netmgr.sh" || return
# shellcheck source=lib-net.sh
. "$RG_DIR/lib-net.sh" || return
# shellcheck source=lib-lag.sh
. "$RG_DIR/lib-lag.sh" || return
# shellcheck source=lib-gpu.sh
. "$RG_DIR/lib-gpu.sh" || return
# shellcheck source=lib-nccl.sh
. "$RG_DIR/lib-nccl.sh" || return
# shellcheck source=lib-health.sh
. "$RG_DIR/lib-health.sh" || return
# shellcheck source=lib-fabric.sh
. "$RG_DIR/lib-fabric.sh" || return

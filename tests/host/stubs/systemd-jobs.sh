# shellcheck shell=bash
# systemd-jobs.sh: the part of systemd's manager (PID 1) that systemctl's stand-in and pid1 share:
# units, their jobs and their runs, for oneshot units such as roce-gen's (Type=oneshot,
# RemainAfterExit=yes), with the semantics of systemd's src/core/job.c:
# - a unit is inactive, activating (its ExecStart runs), active (it ran and exited 0 and stays
#   active: RemainAfterExit=yes; without it, inactive again) or failed (it exited non-zero);
# - a request becomes a job (job_type_collapse): try-restart of a unit that is not active is a
#   no-op (from systemd 252 on an activating unit counts as active: PR 24404, the version in
#   .fake/systemd/version, 252 by default), else a restart;
# - a unit has one installed job; a new one merges into a waiting job (start + start = start,
#   restart + anything = restart: job_merging_table); start of an active unit is redundant
#   (job_type_is_redundant); into a running start job only a start merges (late merge, superset),
#   a restart patches it to run again (job_install: "Merged into running job, re-running");
# - a job runs when systemd gets to it: at once for a blocking systemctl call, at the end of the
#   event for a --no-block one (pid1 run-jobs; fakehost.sh reload and reboot call it). A restart
#   stops the unit (a oneshot without ExecStop: nothing to run) and starts it;
# - a start checks ConditionPathExists= (a false one leaves the unit inactive, the job done), then
#   runs ExecStart: every absolute path on that line is one of the fake root, except that a
#   program the root lacks is the machine's (/bin/true). It runs with a clean environment
#   (ROCE_GEN_ROOT, PATH of the fake host and STUB_LOG only), under FAKEHOST_BASH when that is
#   set (so a test runs the unit under each bash), with only the capabilities of its
#   CapabilityBoundingSet= (setpriv: the kernel then checks as for the real service). Its output goes to var/log/fakehost/UNIT.log,
#   one line per run to var/log/fakehost/systemd.log (outside the snapshots: traces, not state).
# State: .fake/systemd/{active,activating,failed}/UNIT, .fake/systemd/jobs/UNIT (the waiting
# job's type). Needs ROOT and FAKE (common.sh sets them).

sd_dir() { printf '%s/systemd' "$FAKE"; }

# sd_unit_file UNIT: REPLY = the unit's file under the root; status 1 when there is none.
sd_unit_file() {
  local d
  for d in etc/systemd/system usr/lib/systemd/system lib/systemd/system; do
    if [[ -f $ROOT/$d/$1 ]]; then
      REPLY=$ROOT/$d/$1
      return 0
    fi
  done
  return 1
}

# sd_state UNIT: REPLY = active, activating, failed or inactive.
sd_state() {
  local s
  for s in activating active failed; do
    if [[ -e $(sd_dir)/$s/$1 ]]; then
      REPLY=$s
      return 0
    fi
  done
  REPLY=inactive
}

sd_set_state() {
  local s d
  d=$(sd_dir)
  mkdir -p -- "$d/active" "$d/activating" "$d/failed"
  for s in active activating failed; do rm -f -- "$d/$s/$1"; done
  [[ $2 == inactive ]] || : >"$d/$2/$1"
}

sd_log() {
  mkdir -p -- "$ROOT/var/log/fakehost"
  printf '%s\n' "$*" >>"$ROOT/var/log/fakehost/systemd.log"
}

# sd_enqueue VERB UNIT: VERB (start, restart, try-restart) of UNIT as a job. Status 5 when the
# unit has no file (the real one: "Unit UNIT not found.").
sd_enqueue() {
  local verb=$1 u=$2 type version=252 jobs
  jobs=$(sd_dir)/jobs
  sd_unit_file "$u" || return 5
  [[ ! -f $(sd_dir)/version ]] || read -r version <"$(sd_dir)/version"
  sd_state "$u"
  type=$verb
  if [[ $verb == try-restart ]]; then
    if [[ $REPLY == active ]] || { [[ $REPLY == activating ]] && ((version >= 252)); }; then
      type=restart
    else
      sd_log "$u: try-restart of a unit that is $REPLY: no job"
      return 0
    fi
  fi
  mkdir -p -- "$jobs"
  if [[ -f $jobs/$u ]]; then
    local old
    read -r old <"$jobs/$u"
    [[ $old == restart ]] && type=restart
    printf '%s\n' "$type" >"$jobs/$u"
    sd_log "$u: $verb merged into the waiting $old job: $type"
    return 0
  fi
  if [[ $REPLY == activating ]]; then
    if [[ $type == start ]]; then
      sd_log "$u: start merged into the running start job"
      return 0
    fi
    # systemd stops the running start and runs it again; the stand-in cannot stop it from here,
    # so it says so and runs the restart after it.
    sd_log "$u: restart merged into the running start job, re-running: the running apply is stopped"
    printf 'restart\n' >"$jobs/$u"
    return 0
  fi
  if [[ $type == start && $REPLY == active ]]; then
    sd_log "$u: start of an active unit: redundant, no job"
    return 0
  fi
  printf '%s\n' "$type" >"$jobs/$u"
  sd_log "$u: $verb: job $type installed"
}

# sd_cancel UNIT: drops the unit's waiting job.
sd_cancel() { rm -f -- "$(sd_dir)/jobs/$1"; }

# sd_exec UNIT: runs the unit's ExecStart= as described above; its status.
sd_exec() {
  local u=$1 line cond="" exec="" w prog rc=0
  local -a argv=()
  SD_REMAIN=no
  sd_unit_file "$u" || return 1
  # A timer's start arms it and runs nothing itself (src/core/timer.c); a monotonic timer whose
  # OnBootSec= has passed elapses at once, which queues a start job of its Unit= (the same name's
  # .service by default), run when systemd gets to the jobs.
  if [[ $u == *.timer ]]; then
    local svc=${u%.timer}.service
    while IFS= read -r line || [[ -n $line ]]; do
      case $line in Unit=?*) svc=${line#Unit=} ;; esac
    done <"$REPLY"
    sd_log "$u: timer started; it elapses: start of $svc queued"
    sd_enqueue start "$svc" || true
    return 0
  fi
  local caps="" c
  while IFS= read -r line || [[ -n $line ]]; do
    case $line in
      ConditionPathExists=*) cond=${line#*=} ;;
      ExecStart=*) exec=${line#*=} ;;
      RemainAfterExit=*) [[ ${line#*=} =~ ^(yes|true|on|1)$ ]] && SD_REMAIN=yes ;;
      CapabilityBoundingSet=~*) ni "an inverted CapabilityBoundingSet= ($line)" ;;
      # Lines add up (src/core/load-fragment.c config_parse_capability_set: OR-ed).
      CapabilityBoundingSet=*) caps+=" ${line#*=}" ;;
    esac
  done <"$REPLY"
  if [[ -n $cond ]]; then
    local neg=''
    [[ $cond == '!'* ]] && neg=1 cond=${cond#!}
    if { [[ -e $ROOT$cond ]] && [[ -n $neg ]]; } || { [[ ! -e $ROOT$cond ]] && [[ -z $neg ]]; }; then
      sd_log "$u: condition ConditionPathExists=${neg:+!}$cond failed: not run"
      return 200
    fi
  fi
  [[ -n $exec ]] || return 1
  read -r -a argv <<<"$exec"
  for w in "${!argv[@]}"; do
    [[ ${argv[w]} == /* ]] && argv[w]=$ROOT${argv[w]}
  done
  prog=${argv[0]}
  [[ -e $prog ]] || prog=${prog#"$ROOT"}
  argv[0]=$prog
  if [[ -n ${FAKEHOST_BASH:-} ]] && head -n 1 -- "$prog" 2>/dev/null | grep -q bash; then
    argv=("$FAKEHOST_BASH" "${argv[@]}")
  fi
  local -a env=(ROCE_GEN_ROOT="$ROOT" PATH="$ROOT/bin:/usr/bin:/bin" STUB_LOG="${STUB_LOG:-$ROOT/stub.log}")
  [[ -z ${FAKEHOST_BASH:-} ]] || env+=(FAKEHOST_BASH="$FAKEHOST_BASH")
  # CapabilityBoundingSet=: systemd drops every other capability from the bounding set before it
  # execs the service as root (src/core/execute.c capability_bounding_set_drop), so the process
  # has only those: without CAP_DAC_OVERRIDE root meets the mode bits of any folder it writes.
  # The real kernel applies it here too (util-linux setpriv).
  if [[ -n $caps ]]; then
    local bset=-all
    for c in $caps; do
      c=${c,,}
      bset+=",+${c#cap_}"
    done
    argv=(setpriv "--bounding-set=$bset" -- "${argv[@]}")
  fi
  mkdir -p -- "$ROOT/var/log/fakehost"
  env -i "${env[@]}" "${argv[@]}" >>"$ROOT/var/log/fakehost/$u.log" 2>&1 </dev/null || rc=$?
  return "$rc"
}

# sd_run_job UNIT: runs the unit's waiting job, if any; status 1 when the job failed.
sd_run_job() {
  local u=$1 type rc=0 jobs
  jobs=$(sd_dir)/jobs
  [[ -f $jobs/$u ]] || return 0
  read -r type <"$jobs/$u"
  rm -f -- "$jobs/$u"
  if [[ $type == restart ]]; then
    sd_set_state "$u" inactive # stop: a oneshot without ExecStop= has nothing to run
  fi
  sd_set_state "$u" activating
  sd_exec "$u" || rc=$?
  case $rc in
    0)
      # A oneshot without RemainAfterExit= goes back to inactive once its ExecStart has exited
      # (src/core/service.c service_enter_running: not remain_after_exit → service_enter_stop);
      # the start job still succeeded.
      if [[ $SD_REMAIN == yes || $u == *.timer ]]; then
        sd_set_state "$u" active
        sd_log "$u: $type job: ExecStart ran, exit 0: active"
      else
        sd_set_state "$u" inactive
        sd_log "$u: $type job: ExecStart ran, exit 0: inactive (no RemainAfterExit)"
      fi
      ;;
    200)
      sd_set_state "$u" inactive
      rc=0
      ;;
    *)
      sd_set_state "$u" failed
      sd_log "$u: $type job: ExecStart ran, exit $rc: failed"
      ;;
  esac
  # A job queued while it ran (a restart that patched the running one) runs now.
  [[ ! -f $jobs/$u ]] || sd_run_job "$u" || true
  ((rc == 0))
}

# sd_run_jobs: runs every waiting job, in name order.
sd_run_jobs() {
  local f
  for f in "$(sd_dir)"/jobs/*; do
    [[ -f $f ]] && sd_run_job "${f##*/}"
  done
  return 0
}

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Function tests of what keeps a run safe on a host others share (templates/host/lib.sh,
# lib-persist.sh): the run lock (a flock the kernel releases; 200 rounds of two runs racing for a
# killed run's lock, of both kinds, never both hold it), the writer of files in shared folders
# (never through a link, no file left behind) and the reader of the saved state rollback trusts
# (every malformed line named). No root; prints "N passed, M failed" and exits 1 on a failure.
# Usage: lock.sh [BASH]   (the bash that runs the functions; default: this one)

set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$HERE/../../templates/host
if [ $# -gt 0 ] && [ -z "${LOCK_INNER-}" ]; then
  LOCK_INNER=1 exec "$1" "${BASH_SOURCE[0]}"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-lock.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=../../templates/host/lib.sh
. "$LIB/lib.sh"
# shellcheck source=assert.sh
. "$HERE/assert.sh"
RG_ROOT=$TMP/root
mkdir -p "$RG_ROOT/run"
LOCK=$RG_ROOT/run/roce-gen-run.lock OLD=$RG_ROOT/run/roce-gen.lock
mkfifo "$TMP/never"

# dead_pid: the pid of a process that has ended.
dead_pid() {
  sh -c 'exit 0' &
  local pid=$!
  wait "$pid"
  printf '%s' "$pid"
}

# contender DIR NAME OTHER: one run taking the lock. The one that gets it marks DIR/inside (mkdir:
# atomic, so a second holder cannot) and holds the lock until OTHER has tried too.
contender() {
  local dir=$1 me=$2 other=$3 n=0
  (
    rg_lock 2>/dev/null
    mkdir "$dir/inside" 2>/dev/null || : >"$dir/overlap"
    : >"$dir/won.$me"
    # Until the other has tried (or also won: then the overlap is recorded); at most a minute.
    # read -t on a FIFO no one writes waits without starting a process (which would inherit
    # the lock).
    exec {w}<>"$TMP/never"
    while [ ! -e "$dir/tried.$other" ] && [ ! -e "$dir/won.$other" ] && [ "$n" -lt 6000 ]; do
      read -rt 0.01 -u "$w" _ || true
      n=$((n + 1))
    done
    rmdir "$dir/inside" 2>/dev/null || true
  )
  : >"$dir/tried.$me"
}

# Two runs at once after a killed run's lock: a lock file naming a dead pid, or the link an older
# bundle made. Never both hold it; one always does.
overlaps=0 winners_off=0
for ((round = 1; round <= 200; round++)); do
  dir=$TMP/round$round
  mkdir "$dir"
  # The lock file of a killed run (never removed), or an older bundle's link naming one.
  if ((round % 2)); then
    printf '%s\n' "$(dead_pid)" >"$LOCK"
  else
    ln -s "pid:$(dead_pid)" "$OLD"
  fi
  contender "$dir" a b &
  contender "$dir" b a &
  wait
  [ ! -e "$dir/overlap" ] || overlaps=$((overlaps + 1))
  won=("$dir"/won.*)
  [ ${#won[@]} -eq 1 ] || winners_off=$((winners_off + 1))
  rm -rf "$dir"
done
eq 'rounds where two runs held the lock at once' 0 "$overlaps"
eq 'rounds without exactly one run holding the lock' 0 "$winners_off"

# A live holder: refused, naming its pid; released when it ends (however it ends).
(
  rg_lock
  : >"$TMP/held"
  exec {w}<>"$TMP/never"
  while [ ! -e "$TMP/release" ]; do read -rt 0.01 -u "$w" _ || true; done
) &
holder=$!
exec {w}<>"$TMP/never"
while [ ! -e "$TMP/held" ]; do read -rt 0.01 -u "$w" _ || true; done
out=$( (rg_lock) 2>&1)
eq 'a second run is refused' 2 "$?"
case $out in
  *"another roce-gen run (pid $holder) is in progress on this host"*) eq 'the refusal names the run' yes yes ;;
  *) eq 'the refusal names the run' "another roce-gen run (pid $holder) is in progress" "$out" ;;
esac
kill -9 "$holder"
wait "$holder" 2>/dev/null
out=$( (rg_lock && printf 'got it') 2>&1)
eq 'the lock of a killed run is free at once' 'got it' "$out"
eq 'the lock file stays (never removed under a waiting run)' yes "$([ -f "$LOCK" ] && echo yes)"

# An older bundle's link naming a live run: refused; naming a dead one: taken over.
sleep 60 &
live=$!
ln -s "pid:$live" "$OLD"
out=$( (rg_lock) 2>&1)
eq "an older bundle's lock of a live run is respected" 2 "$?"
kill "$live"
wait "$live" 2>/dev/null
out=$( (rg_lock && printf 'got it') 2>&1)
eq "an older bundle's lock of an ended run is taken over" 'got it' "$out"
eq 'and removed' no "$([ -L "$OLD" ] && echo yes || echo no)"

# rg_write_file: through a new file and a rename; never through a link.
shared=$TMP/shared
mkdir -p "$shared"
printf 'secret\n' >"$TMP/victim"
chmod 600 "$TMP/victim"
ln -s "$TMP/victim" "$shared/node-a.precheck.json"
out=$(rg_write_file "$shared/node-a.precheck.json" '{"host": "node-a"}' 2>&1)
eq 'a link at the name is refused' 1 "$?"
eq 'the refusal says why' "$shared/node-a.precheck.json is a symbolic link (to $TMP/victim): not written through it; remove the link" "$out"
eq 'the link target is untouched' secret "$(cat "$TMP/victim")"
rm -f "$shared/node-a.precheck.json"
rg_write_file "$shared/node-a.precheck.json" '{"host": "node-a"}'
eq 'written' '{"host": "node-a"}' "$(cat "$shared/node-a.precheck.json")"
eq 'readable by everyone (node_exporter, the share)' 644 "$(stat -c %a "$shared/node-a.precheck.json")"
eq 'no temporary file left' 'node-a.precheck.json' "$(cd "$shared" && ls -A)"
# A dangling link another user planted where the old scripts put their temporary file is never
# opened: the temporary name is new each time.
ln -s "$TMP/victim" "$shared/roce-gen-lab.prom.tmp.$$"
rg_write_file "$shared/roce-gen-lab.prom" 'roce_gen_health_run_ok 1'
eq 'a link at the old temporary name is not followed' secret "$(cat "$TMP/victim")"

# rg_state_valid: rollback trusts nothing it cannot read.
RG_SAVED=$TMP/saved-state.tsv
state() { # WANT TEXT: rg_state_valid on TEXT (printf %b), its status and RG_V
  printf '%b' "$2" >"$RG_SAVED"
  if rg_state_valid; then eq "state: $2" "$1" valid; else eq "state: $2" "$1" "$RG_V"; fi
}
state valid 'persistence\t-\tabsent\ntrust\tmlx5_0\tpcp\npfc\tmlx5_0\t0,0,0,0,0,0,0,0\ndscp2prio\tmlx5_0\t26:?,48:?\ndscp_map\tmlx5_0\tnone\n'
state valid 'dcqcn_min_time_between_cnps\tmlx5_0\t4\nfw_LLDP_NB_DCBX_P1\tmlx5_0\t1\nvf_roce_tos\tmlx5_0@0000:1a:00.2\t0\n'
state valid 'traffic_class\tmlx5_0\t\nmtu\tmlx5_1\t1500\n'
state 'line 1 is not ID, NIC and value separated by tabs' '# HELP roce_gen_health_run_ok 1\n'
state 'line 2 names frobnicate, which apply never saves' 'trust\tmlx5_0\tpcp\nfrobnicate\tmlx5_0\t1\n'
state 'line 1 names no NIC' 'trust\t\tpcp\n'
state 'line 2 has no newline: the file was cut short' 'trust\tmlx5_0\tpcp\npfc\tmlx5_0\t0,0,0'
state 'line 2 is not ID, NIC and value separated by tabs' 'trust\tmlx5_0\tpcp\n\n'
printf '' >"$RG_SAVED"
if rg_state_valid; then eq 'an empty state is not valid' no yes; else eq 'an empty state is not valid' no no; fi

done_testing

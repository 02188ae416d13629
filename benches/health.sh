#!/usr/bin/env bash
# Health benchmark: the CPU time and the tool starts of one health.sh run on a simulated host
# with 8 planned RoCE ports (tests/host/fakehost.sh, an OFED host, applied first so the settings
# are as planned), without and with the drift check. CPU is user + system of health.sh and its
# children (GNU time), the median of RUNS runs; the tool starts are the stand-ins' log lines of
# one run, per tool. Needs root (fakehost.sh run: namespaces, FUSE) and GNU time.
#
#   bash benches/health.sh            RUNS=15 by default
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
runs=${RUNS:-15}
work=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-health-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
fh="$repo/tests/host/fakehost.sh"

# shellcheck source=host8.sh
. "$here/host8.sh"
bench_host8 "$repo" "$work"
bash "$fh" run "$work/root" -- bash "$work/node-a/apply.sh" >/dev/null 2>&1 || {
  echo "apply failed on the simulated host" >&2
  exit 1
}

# measure ARGS...: the median CPU seconds of RUNS health runs, one run's tool starts, and the
# median CPU of the stand-ins alone (the same commands replayed): the stand-ins are bash scripts,
# far dearer than the C ethtool of a real host, so health.sh's own cost is the difference.
measure() {
  local n cpu=() starts tools=()
  for ((n = 0; n < runs; n++)); do
    cpu+=("$(bash "$fh" run "$work/root" -- /usr/bin/time -f '%U %S' -o /dev/stdout \
      bash "$work/node-a/health.sh" "$@" 2>/dev/null | awk 'END { printf "%.3f", $1 + $2 }')")
  done
  rm -f "$work/root/stub.log"
  bash "$fh" run "$work/root" -- bash "$work/node-a/health.sh" "$@" >/dev/null 2>&1
  starts=$(python3 -c '
import collections, json, sys
c = collections.Counter(json.loads(l)["tool"] for l in open(sys.argv[1]))
print(", ".join(f"{t} {n}" for t, n in sorted(c.items())))' "$work/root/stub.log")
  python3 -c '
import json, shlex, sys
for l in open(sys.argv[1]):
    v = json.loads(l)
    print(" ".join(shlex.quote(a) for a in [v["tool"]] + v["argv"]) + " >/dev/null 2>&1")' "$work/root/stub.log" >"$work/replay.sh"
  for ((n = 0; n < runs; n++)); do
    tools+=("$(bash "$fh" run "$work/root" -- /usr/bin/time -f '%U %S' -o /dev/stdout \
      bash "$work/replay.sh" 2>/dev/null | awk 'END { printf "%.3f", $1 + $2 }')")
  done
  printf '%s\t%s\t%s\n' "$(printf '%s\n' "${cpu[@]}" | median)" "$starts" "$(printf '%s\n' "${tools[@]}" | median)"
}

printf '| health run, 8 ports | CPU with the stand-ins (median of %s) | the stand-ins alone | health.sh itself | tool starts |\n| --- | --- | --- | --- | --- |\n' "$runs"
IFS=$'\t' read -r cpu starts tools < <(measure)
printf '| without the drift check | %s s | %s s | %s s | %s |\n' "$cpu" "$tools" "$(awk -v a="$cpu" -v b="$tools" 'BEGIN { printf "%.3f", a - b }')" "$starts"
IFS=$'\t' read -r cpu starts tools < <(measure --drift)
printf '| with the drift check | %s s | %s s | %s s | %s |\n' "$cpu" "$tools" "$(awk -v a="$cpu" -v b="$tools" 'BEGIN { printf "%.3f", a - b }')" "$starts"

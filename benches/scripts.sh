#!/usr/bin/env bash
# Script benchmark: what precheck, apply (a first and a second time) and rollback cost on a
# simulated host with 8 planned RoCE ports (tests/host/fakehost.sh, an OFED host): CPU (user +
# system of the script and the tools it starts, GNU time, the median of RUNS runs, each on its
# own copy of the host in the state the step starts from), the processes the script's own shell
# forks (subshells and tool starts; strace, one run) and the tools it starts (the stand-ins'
# log). The stand-ins are bash scripts, dearer than the C tools of a real host: the CPU is an
# upper bound, the fork and tool counts are the script's own. Needs root (fakehost.sh run:
# namespaces, FUSE), GNU time and strace.
#
#   bash benches/scripts.sh            RUNS=5 by default
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
runs=${RUNS:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-scripts-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
command -v strace >/dev/null || { echo "strace is needed: apt-get install strace" >&2; exit 2; }
fh="$repo/tests/host/fakehost.sh"

# shellcheck source=host8.sh
. "$here/host8.sh"
bench_host8 "$repo" "$work"
cp -a "$work/root" "$work/fresh"
bash "$fh" run "$work/root" -- bash "$work/node-a/apply.sh" >/dev/null 2>&1 || {
  echo "apply failed on the simulated host" >&2
  exit 1
}
cp -a "$work/root" "$work/applied"

# measure FROM SCRIPT: a table row for SCRIPT run on copies of the host FROM (fresh or applied).
measure() {
  local from=$1 script=$2 n cpu=() forks tools
  for ((n = 0; n < runs; n++)); do
    rm -rf "$work/host" && cp -a "$work/$from" "$work/host"
    cpu+=("$(bash "$fh" run "$work/host" -- /usr/bin/time -f '%U %S' -o /dev/stdout \
      bash "$work/node-a/$script" 2>/dev/null | awk 'END { printf "%.3f", $1 + $2 }')")
  done
  rm -rf "$work/host" && cp -a "$work/$from" "$work/host"
  rm -f "$work/host/stub.log"
  bash "$fh" run "$work/host" -- strace -f -qq -e trace=clone,clone3,fork,vfork -o "$work/forks" \
    bash "$work/node-a/$script" >/dev/null 2>&1 || true
  # The script's own shell is the first process strace names.
  forks=$(awk 'NR == 1 { main = $1 } $1 == main && !/ = -1 / { n++ } END { print n + 0 }' "$work/forks")
  tools=$(wc -l <"$work/host/stub.log")
  printf '| %s, %s host | %s s | %s | %s |\n' "$script" "$from" \
    "$(printf '%s\n' "${cpu[@]}" | median)" "$forks" "$tools"
}

printf '| run, 8 ports | CPU with the stand-ins (median of %s) | forks of its shell | tool starts |\n| --- | --- | --- | --- |\n' "$runs"
measure fresh precheck.sh
measure fresh apply.sh
measure applied apply.sh
measure applied rollback.sh

#!/usr/bin/env bash
# Scale benchmark: synthetic plans of 100, 1,000 and 10,000 hosts x 8 RoCE ports written as real
# workbooks; wall time and peak memory of `validate`, `generate` and `ingest`, and, in the same
# run, a straightforward Python generator (openpyxl + Jinja2 + tarfile) as the baseline. Ingest
# reads 10,000 synthetic results of 8 NICs beside a Python loop that only json.loads the same
# files (the floor of any reader), and a 35 MB .tar.gz of 500 results padded to 15 MiB each
# (memory must stay bounded). Beside each `generate`, the floors under any generator that reads the plan with calamine and gives index.json its hashes
# (benches/floor.rs): calamine alone reading the plan, and the sha256 of every .tar and .tar.gz
# that index.json carries. Prints a Markdown table. Needs python3 with openpyxl and jinja2
# (installed with pip when missing) and GNU time.
#
#   bash benches/scale.sh [HOSTS...]      default: 100 1000 10000
#   bash benches/scale.sh --ingest-only   only the ingest steps (also INGEST_ONLY=1)
#   BENCH_DIR=/dev/shm/x bash benches/scale.sh   to measure on tmpfs instead of the disk
#   MANY=100000 bash benches/scale.sh --ingest-only   also ingest that many small results
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
work=${BENCH_DIR:-/tmp/roce-gen-bench}
ingest_only=${INGEST_ONLY:-}
sizes=()
for arg in "$@"; do
  if [ "$arg" = --ingest-only ]; then ingest_only=1; else sizes+=("$arg"); fi
done
((${#sizes[@]})) || sizes=(100 1000 10000)
[ -z "$ingest_only" ] || sizes=()

[ -n "$ingest_only" ] || python3 -c 'import openpyxl, jinja2' 2>/dev/null ||
  python3 -m pip install --quiet openpyxl jinja2
[ -x /usr/bin/time ] || { echo "GNU time is needed: apt-get install time" >&2; exit 2; }
(cd "$repo" && cargo build --release --quiet)
[ -n "$ingest_only" ] || (cd "$repo" && cargo bench --quiet --bench floor --no-run 2>/dev/null)
bin="$repo/target/release/roce-gen"
rm -rf "$work" && mkdir -p "$work"
# Outputs are kept until the end: ext4 allocates inodes slowly right after many were deleted
# (it skips recently deleted ones), which would measure the previous step's clean-up.
trap 'rm -rf "$work"' EXIT

# measure NAME CMD...: runs CMD once, prints "| NAME | seconds | peak MiB |". Exit status 1 is a
# result (ingest of failing hosts), not a failure of the command.
measure() {
  local name=$1 status=0 secs kb
  shift
  /usr/bin/time -f '%e %M' -o "$work/time.txt" "$@" >/dev/null 2>&1 || status=$?
  # Exit status 1 is ingest's verdict on failing hosts; from anything else it is a failure.
  if [ "$status" -gt 1 ] || { [ "$status" -eq 1 ] && [[ $name != ingest* ]]; }; then
    echo "| $name | failed (exit $status) | |"
    return
  fi
  read -r secs kb < <(tail -n 1 "$work/time.txt")
  last=$secs
  printf '| %s | %s | %d |\n' "$name" "$secs" "$((kb / 1024))"
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), output on $(df -T "$work" | awk 'NR == 2 {print $2}')"
echo
echo "| step | wall s | peak MiB |"
echo "| --- | --- | --- |"
for n in "${sizes[@]+"${sizes[@]}"}"; do
  python3 "$here/make_plan.py" "$n" "$work/plan-$n.xlsx"
  measure "validate, $n hosts" "$bin" validate "$work/plan-$n.xlsx"
  measure "generate, $n hosts" "$bin" generate "$work/plan-$n.xlsx" -o "$work/out-$n"
  (cd "$repo" && cargo bench --quiet --bench floor -- "$work/plan-$n.xlsx" "$work/out-$n" 2>/dev/null)
  measure "python baseline, $n hosts" python3 "$here/baseline.py" "$work/plan-$n.xlsx" "$repo/templates" "$work/py-$n"
  # What the file system alone costs: as many files of the same size, written by Python.
  size=$(( $(du -sb "$work/out-$n" | cut -f1) / n ))
  measure "file system floor: $n files of $size B" python3 -c "
import os, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d)
b = os.urandom(size)
for i in range(n):
    with open(f'{d}/f{i}', 'wb') as f:
        f.write(b)
" "$work/floor-$n" "$n" "$size"
done
# Reading the same files with Python's json module and nothing else: the floor of any reader.
json_loop='
import json, os, sys
for dirpath, _, names in os.walk(sys.argv[1]):
    for name in sorted(names):
        if name.endswith(".json"):
            with open(os.path.join(dirpath, name), "rb") as f:
                json.load(f)
'
python3 "$here/make_results.py" 10000 "$work/results"
measure "python json.load loop, 10000 results" python3 -c "$json_loop" "$work/results"
floor=$last
measure "ingest, 10000 results (text)" "$bin" ingest "$work/results"
ratio=$(awk -v a="$floor" -v b="$last" 'BEGIN { if (b > 0) printf "%.2f", a / b }')
measure "ingest, 10000 results (json)" "$bin" ingest "$work/results" --format json
python3 "$here/make_padded.py" 500 "$work/padded.tar.gz"
measure "ingest, 500 results padded to 15 MiB in a $(du -m "$work/padded.tar.gz" | cut -f1) MB .tar.gz" \
  "$bin" ingest "$work/padded.tar.gz"
echo
echo "ingest (text) is ${ratio}x the speed of the json.load loop"
if [ -n "${MANY:-}" ]; then
  python3 "$here/make_results.py" "$MANY" "$work/many"
  measure "python json.load loop, $MANY results" python3 -c "$json_loop" "$work/many"
  measure "ingest, $MANY results (text)" "$bin" ingest "$work/many"
fi

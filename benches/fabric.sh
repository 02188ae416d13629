#!/usr/bin/env bash
# Fabric benchmark: the wall time of the fabric step on simulated clusters
# (tests/host/fabric-cluster.sh --clone: one host applied and copied, then fabric.sh started on
# all of them at once through the wire model), for each size HOSTS of PORTS ports per host, and
# how long a host waits for a peer that never starts (the last host absent, --window
# ABSENT_WINDOW). One line per run: the size, the fabric step's seconds, the seconds the setup
# took (hosts made and applied), the load average before and after, and each host's status.
# Needs root (fakehost.sh run: namespaces, FUSE).
#
#   bash benches/fabric.sh [HOSTS ...]     default: 2 16; PORTS=8, FABRIC_SECONDS=2, WINDOW=120,
#                                          ABSENT_WINDOW=20, ROCE_GEN=BINARY
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
ports=${PORTS:-8} secs=${FABRIC_SECONDS:-2} window=${WINDOW:-120} absent=${ABSENT_WINDOW:-20}
[ $# -gt 0 ] || set -- 2 16
work=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-fabric-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# ROCE_GEN: a roce-gen binary to use instead of building one.
bin=${ROCE_GEN:-}
if [ -z "$bin" ]; then
  cargo build -q --manifest-path "$repo/Cargo.toml" || exit 2
  bin=${CARGO_TARGET_DIR:-$repo/target}/debug/roce-gen
fi

# run NAME HOSTS ARGS...: one cluster; prints its line.
run() {
  local name=$1 n=$2 t0 t1 load0 verdict
  shift 2
  load0=$(cut -d' ' -f1 /proc/loadavg)
  t0=$(date +%s)
  ROCE_GEN=$bin bash "$repo/tests/host/fabric-cluster.sh" "$work/$name" "$n" bash --ports "$ports" --clone \
    --seconds "$secs" "$@" || { echo "$name: the cluster did not run" >&2; return 1; }
  t1=$(date +%s)
  verdict=$(python3 - "$work/$name/res" "$n" <<'EOF'
import json, os, sys
res, n = sys.argv[1], int(sys.argv[2])
got = {}
for h in range(n):
    p = os.path.join(res, "h%d.fabric.json" % h)
    got[h] = json.load(open(p))["status"] if os.path.exists(p) else "absent"
print(" ".join("h%d=%s" % kv for kv in sorted(got.items())))
EOF
)
  printf '%-22s fabric step %4ss  setup %4ss  load %s -> %s  %s\n' "$name" "$(cat "$work/$name/elapsed")" \
    $((t1 - t0 - $(cat "$work/$name/elapsed"))) "$load0" "$(cut -d' ' -f1 /proc/loadavg)" "$verdict"
}

for n in "$@"; do
  run "${n}x${ports}" "$n" --window "$window"
done
# The absent peer: the smallest cluster with its last host not started.
n=$1
run "${n}x${ports}-absent" "$n" --window "$absent" --absent "h$((n - 1))"

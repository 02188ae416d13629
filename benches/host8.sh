# shellcheck shell=bash
# The shared parts of the host-side benchmarks (health.sh, scripts.sh), which source it: both
# measure with GNU time. bench_host8 REPO WORK makes in WORK a plan of one host with 8 RoCE ports
# (golden/lab-2node's profile), its bundle (WORK/node-a) and the simulated OFED host (WORK/root)
# with the planned addresses, not yet applied.
[ -x /usr/bin/time ] || { echo "GNU time is needed: apt-get install time" >&2; exit 2; }

# median: the median of the numbers on stdin.
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

bench_host8() {
  local repo=$1 work=$2 fh=$1/tests/host/fakehost.sh i bus nics=() create=()
  for i in 0 1 2 3 4 5 6 7; do
    bus=$(printf '%02x' $((0x1a + 16 * i)))
    nics+=("{\"ib_dev\": \"mlx5_$i\", \"netdev\": \"ens${i}f0np0\", \"ip\": \"10.10.$i.10/24\", \"rail\": $i, \"pci\": \"0000:$bus:00.0\", \"mac\": \"b8:3f:d2:0a:0$i:00\"}")
    create+=(--nic "mlx5_$i:ens${i}f0np0:0000:$bus:00.0:b8:3f:d2:0a:0$i:00")
  done
  python3 - "$repo/golden/lab-2node/plan.json" "$work/plan.json" "$(IFS=,; printf '[%s]' "${nics[*]}")" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
host = plan["hosts"][0]
host["nics"] = json.loads(sys.argv[3])
plan["hosts"] = [host]
json.dump(plan, open(sys.argv[2], "w"))
PY
  (cd "$work" && cargo run -q --manifest-path "$repo/Cargo.toml" -- generate plan.json -o dist >/dev/null)
  tar -xzf "$work/dist/node-a.tar.gz" -C "$work"
  bash "$fh" create "$work/root" --kind ofed --host node-a "${create[@]}"
  for i in 0 1 2 3 4 5 6 7; do bash "$fh" addr "$work/root" "ens${i}f0np0" "10.10.$i.10/24"; done
}

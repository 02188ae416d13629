#!/usr/bin/env bash
# GPU path benchmark: what the GPU path's checks (templates/host/lib-gpu.sh, rg_gpu_path) add to a
# precheck of an 8-GPU, 8-port host: the simulated HGX server (tests/host/fixtures/pci/
# hgx-8gpu.json, written by tests/host/pcitree.py: sysfs and 4 KiB of configuration space per
# function), every port paired with the GPU below its switch. The CPU is user + system of a shell
# that sources the bundle's lib.sh and runs rg_gpu_path (GNU time, the median of RUNS runs), less
# the same shell with gpu_direct = no (which returns at once): the GPU path's own cost, with no
# stand-in in it (wc, od, grep and ldconfig are the host's own). The process starts are counted
# with strace (execve, children included) in one run of each. No root needed.
#
#   bash benches/gpu.sh            RUNS=15 by default
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
runs=${RUNS:-15}
work=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-gpu-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
command -v strace >/dev/null || { echo "strace is needed: apt-get install strace" >&2; exit 2; }
# shellcheck source=host8.sh
. "$here/host8.sh"

# The tree, and each NIC's RDMA device linked to its function (class/infiniband/mlx5_N/device).
mkdir -p "$work/root"
python3 "$repo/tests/host/pcitree.py" "$work/root" "$repo/tests/host/fixtures/pci/hgx-8gpu.json" --acs on >/dev/null
nics=(19 29 3b 5c 9b aa bb da)
for i in 0 1 2 3 4 5 6 7; do
  mkdir -p "$work/root/sys/class/infiniband/mlx5_$i"
  dir=$(cd -P "$work/root/sys/bus/pci/devices/0000:${nics[i]}:00.0" && pwd)
  ln -s "../../..${dir#"$work/root/sys"}" "$work/root/sys/class/infiniband/mlx5_$i/device"
done
for m in nvidia nvidia_peermem; do
  mkdir -p "$work/root/sys/module/$m" && echo 550.54.15 >"$work/root/sys/module/$m/version"
done

# The harness: the bundle's library from templates/ (lib.sh sources only its parts), the plan's
# values of the GPU path, then rg_gpu_path. DIRECT is check or no.
cat >"$work/run.sh" <<'EOF'
set -u
. "$LIB/lib.sh"
RG_ROOT=$ROOT
RG_TMP=$(mktemp -d)
RG_NIC_IBDEV=(mlx5_0 mlx5_1 mlx5_2 mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_7)
RG_NIC_NETDEV=(e0 e1 e2 e3 e4 e5 e6 e7)
RG_NIC_GPU=(0 1 2 3 4 5 6 7)
RG_GPU_DIRECT=$DIRECT RG_GPU_DISTANCE=PXB RG_PCIE_ACS=check RG_PCIE_MRRS=4096 RG_NCCL_VERSION=2.23.4
rg_gpu_path
rm -rf "$RG_TMP"
printf '%s\n' "${#RG_C_ID[@]}"
EOF

# cpu DIRECT: the median CPU seconds of RUNS runs.
cpu() {
  local n
  for ((n = 0; n < runs; n++)); do
    LIB=$repo/templates/host ROOT=$work/root DIRECT=$1 /usr/bin/time -f '%U %S' -o /dev/stdout \
      bash "$work/run.sh" | awk 'END { printf "%.3f\n", $1 + $2 }'
  done | median
}
# starts DIRECT: the processes one run starts besides its own bash, by program.
starts() {
  LIB=$repo/templates/host ROOT=$work/root DIRECT=$1 strace -f -qq -e trace=execve -o "$work/trace" \
    bash "$work/run.sh" >/dev/null
  awk -F'"' '/execve\(/ && !/ENOENT/ { n = split($2, p, "/"); c[p[n]]++ } END { for (t in c) printf "%s %d\n", t, c[t] }' \
    "$work/trace" | sort | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 } END { print "" }'
}
checks=$(LIB=$repo/templates/host ROOT=$work/root DIRECT=check bash "$work/run.sh")
with=$(cpu check)
without=$(cpu no)
printf 'GPU path, 8 GPUs x 8 ports (%s checks): CPU %s s with, %s s without, %s s its own (median of %d)\n' \
  "$checks" "$with" "$without" "$(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.3f", a - b }')" "$runs"
printf 'process starts with the GPU path: %s\n' "$(starts check)"
printf 'process starts without it:        %s\n' "$(starts no)"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Function-level tests of the time limit on driver files (rg_bounded, rg_read, rg_write in
# templates/host/lib.sh and lib-settings.sh) and of the wait for a link after a flap
# (rg_link_up, rg_link_wait): a file whose open blocks (a FIFO nobody writes: the stand-in here
# for a driver call that does not return) costs the time limit once and becomes the
# `tool_timeout` check, later files of the same device are not tried; the wait does not sleep
# where nothing flapped or in a dry run, passes on a link that is up and fails on one that stays
# down, within ROCE_GEN_LINK_WAIT. No host, no root, no tool but coreutils (the simulated host's
# tests in tests/it/linkwait.rs show the same on driverfs). Prints "N passed, M failed" and
# exits 1 on a failure.
# Usage: linkwait.sh [BASH]   (the bash that runs the functions; default: this one)

set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$HERE/../../templates/host
if [ $# -gt 0 ] && [ -z "${LINKWAIT_INNER-}" ]; then
  LINKWAIT_INNER=1 exec "$1" "${BASH_SOURCE[0]}"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-linkwait.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=../../templates/host/lib.sh
. "$LIB/lib.sh"
# shellcheck source=assert.sh
. "$HERE/assert.sh"

# A run's state as rg_start leaves it, on a fake root.
# shellcheck disable=SC2034 # the library reads these
{
  RG_ROOT=$TMP/root RG_TMP=$TMP/run RG_TOOL_TIMEOUT=1 RG_PHASE=rollback
  RG_NIC_IBDEV=(mlx5_0) RG_NIC_NETDEV=(eth0)
}
mkdir -p "$RG_TMP" "$RG_ROOT/sys/class/net/eth0/ecn/roce_np" "$RG_ROOT/sys/class/infiniband/mlx5_0/ports/1"
net=$RG_ROOT/sys/class/net/eth0
echo 48 >"$net/ecn/roce_np/cnp_dscp"
echo 1500 >"$net/mtu"

# Reads and writes through the bounded child.
eq "a driver file is read through the child" 48 "$(rg_read /sys/class/net/eth0/ecn/roce_np/cnp_dscp)"
eq "a plain file is read here" 1500 "$(rg_read /sys/class/net/eth0/mtu)"
eq "an absent file fails" "1" "$(rg_read /sys/class/net/eth0/ecn/roce_np/nothing >/dev/null; echo $?)"
rg_write /sys/class/net/eth0/ecn/roce_np/cnp_dscp 46 2>/dev/null
eq "a write goes through" 46 "$(cat "$net/ecn/roce_np/cnp_dscp")"
eq "a refused write fails" 1 "$(rg_write /sys/class/net/eth1/ecn/roce_np/cnp_dscp 46 2>/dev/null; echo $?)"
eq "driver files" "yes yes yes yes yes yes yes no no no" "$(for f in /sys/class/net/e/ecn/roce_np/cnp_dscp \
  /sys/class/infiniband/d/tc/1/traffic_class /sys/class/net/e/qos/buffer_size \
  /sys/kernel/config/rdma_cm/d/ports/1/default_roce_tos /sys/class/infiniband/d/ports/1/state \
  /sys/class/infiniband/d/ports/1/hw_counters/np_cnp_sent /sys/class/net/e/speed \
  /sys/class/net/e/mtu /sys/class/net/e/carrier /sys/class/infiniband/d/ports/1/gids/0; do
  if rg_driver_file "$f"; then printf 'yes '; else printf 'no '; fi
done | sed 's/ $//')"
eq "no hung access yet" "" "$(cat "$RG_TMP/hung" 2>/dev/null)"

# A file that does not answer: the time limit, once; then the device's files fail at once.
mkfifo "$net/ecn/roce_np/cnp_802p_prio"
start=$SECONDS
out=$(rg_read /sys/class/net/eth0/ecn/roce_np/cnp_802p_prio 2>"$TMP/err") && rc=0 || rc=$?
took=$((SECONDS - start))
eq "a read that does not answer fails" "1:" "$rc:$out"
eq "within the time limit" yes "$([ "$took" -le 3 ] && echo yes || echo "no (${took}s)")"
eq "and says so" "error: the read of /sys/class/net/eth0/ecn/roce_np/cnp_802p_prio did not finish within 1s (a hung firmware command?); the run goes on without it" "$(cat "$TMP/err")"
start=$SECONDS
rg_bounded read /sys/class/net/eth0/ecn/roce_np/cnp_dscp rg_io_line "$net/ecn/roce_np/cnp_dscp" && rc=0 || rc=$?
eq "then the device's other files are not tried" "1 not tried: an earlier access to a file of eth0 did not finish within 1s" "$rc $RG_IO_OUT"
eq "at once" yes "$([ $((SECONDS - start)) -le 1 ] && echo yes || echo no)"
eq "the NIC counts as wedged" yes "$(rg_nic_wedged 0 && echo yes || echo no)"
eq "another device's files still are" 7 "$(mkdir -p "$RG_ROOT/sys/class/net/eth1/ecn" && echo 7 >"$RG_ROOT/sys/class/net/eth1/ecn/x" && rg_read /sys/class/net/eth1/ecn/x)"
rg_note_hung
eq "one tool_timeout check per file" "tool_timeout fail: the driver did not answer the read of /sys/class/net/eth0/ecn/roce_np/cnp_802p_prio within 1s (a hung firmware command): what it should have read or set is unknown, and the device's other files were not tried; check the NIC (dmesg: mlx5 command timeouts, health), then run again" \
  "${RG_C_ID[*]} ${RG_C_STATUS[*]}: ${RG_C_MSG[*]}"
RG_C_ID=() RG_C_NIC=() RG_C_STATUS=() RG_C_SEV=() RG_C_EXP=() RG_C_ACT=() RG_C_MSG=() RG_C_KIND=() RG_C_FROM=()
rm -f "$RG_TMP"/hung "$RG_TMP"/wedged.*
eq "and not after the run" no "$(rg_nic_wedged 0 && echo yes || echo no)"

# A write that does not answer (a FIFO nobody reads blocks its open): the same limit.
mkdir -p "$RG_ROOT/sys/class/net/eth2/ecn/roce_np"
mkfifo "$RG_ROOT/sys/class/net/eth2/ecn/roce_np/cnp_dscp"
start=$SECONDS
rg_write /sys/class/net/eth2/ecn/roce_np/cnp_dscp 46 2>"$TMP/err" && rc=0 || rc=$?
took=$((SECONDS - start))
eq "a write that does not answer fails within the limit" "1 yes" "$rc $([ "$took" -le 3 ] && echo yes || echo "no (${took}s)")"
eq "and is recorded" "file write /sys/class/net/eth2/ecn/roce_np/cnp_dscp" "$(cat "$RG_TMP/hung")"
eq "and logged" "error: the write of /sys/class/net/eth2/ecn/roce_np/cnp_dscp did not finish within 1s (a hung firmware command?); the run goes on without it
writing 46 to /sys/class/net/eth2/ecn/roce_np/cnp_dscp failed: no answer within 1s" "$(cat "$TMP/err")"
rm -f "$RG_TMP"/hung "$RG_TMP"/wedged.*

# The link after a flap.
echo 1 >"$net/carrier"
echo up >"$net/operstate"
echo '4: ACTIVE' >"$RG_ROOT/sys/class/infiniband/mlx5_0/ports/1/state"
eq "a link that is up" "0 carrier 1, operstate up, port state 4: ACTIVE" "$(rg_link_up 0; echo "$? $RG_V")"
RG_FLAPS=""
start=$SECONDS
rg_link_wait 0 pass
eq "nothing flapped: no wait, no check" "0 0" "$((SECONDS - start)) ${#RG_C_ID[@]}"
RG_FLAPS=eth0 RG_DRY_RUN=yes RG_VERBOSE=yes
eq "a dry run says it would wait" "would wait: up to 30s for the link of eth0 to come back (carrier, port 1 of mlx5_0 ACTIVE), then read back" \
  "$(rg_link_wait 0 pass)"
eq "and records nothing" 0 "${#RG_C_ID[@]}"
RG_DRY_RUN=no RG_VERBOSE=no
rg_link_wait 0 pass
eq "a link that is back passes" "link_state mlx5_0 pass: port 1 of mlx5_0 is ACTIVE again after the PFC change toggled the link of eth0" \
  "${RG_C_ID[*]} ${RG_C_NIC[*]} ${RG_C_STATUS[*]}: ${RG_C_MSG[*]}"
echo 0 >"$net/carrier"
echo down >"$net/operstate"
echo '1: DOWN' >"$RG_ROOT/sys/class/infiniband/mlx5_0/ports/1/state"
RG_LINK_WAIT=2
start=$SECONDS
rg_link_wait 0 pass
took=$((SECONDS - start))
eq "a link that stays down fails, in the same check" "1 link_state fail 4: ACTIVE carrier 0, operstate down, port state 1: DOWN" \
  "${#RG_C_ID[@]} ${RG_C_ID[0]} ${RG_C_STATUS[0]} ${RG_C_EXP[0]} ${RG_C_ACT[0]}"
eq "with the cause and the fix" "the link of eth0 did not come back within 2s after the PFC change toggled it (carrier 0, operstate down, port state 1: DOWN): check the cable, the optic and the switch port (ethtool eth0, dmesg); the settings were written and are read back; run apply again once the link is up (a slow link: raise ROCE_GEN_LINK_WAIT)" \
  "${RG_C_MSG[0]}"
eq "after ROCE_GEN_LINK_WAIT" yes "$([ "$took" -ge 1 ] && [ "$took" -le 4 ] && echo yes || echo "no (${took}s)")"
RG_C_ID=() RG_C_NIC=() RG_C_STATUS=() RG_C_SEV=() RG_C_EXP=() RG_C_ACT=() RG_C_MSG=() RG_C_KIND=() RG_C_FROM=()
start=$SECONDS
rg_link_wait 0 warn
eq "a link that was down before: no wait, no check" "0 0" "$((SECONDS - start)) ${#RG_C_ID[@]}"

done_testing

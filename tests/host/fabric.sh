#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2034 # the library reads the plan values this test sets
# Function tests of the fabric test's pure parts (templates/host/lib-fabric.sh): the reader of
# ib_write_bw's report on the fixtures (fixtures/perftest/: real captures and the layout of this
# invocation), the counter deltas past 2^31, the per-priority shares, the incast step's timing
# (a server's flow stamped as its lines arrive, the overlap of flows), how to install perftest per
# distribution; and that the ib_write_bw stand-in prints the fixture's layout (its client and
# server run on two plain simulated hosts through the wire model, no root needed).
# Prints "N passed, M failed" and exits 1 on a failure.
# Usage: fabric.sh [BASH]   (the bash that runs the functions; default: this one)

set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$HERE/../../templates/host
FX=$HERE/fixtures/perftest
if [ $# -gt 0 ] && [ -z "${FABRIC_INNER-}" ]; then
  FABRIC_INNER=1 exec "$1" "${BASH_SOURCE[0]}"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-fabric.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=../../templates/host/lib.sh
. "$LIB/lib.sh"
# shellcheck source=assert.sh
. "$HERE/assert.sh"
RG_ROCE_PRIO=3

eq "the client's average rate" 388.00 "$(rg_parse_perftest_bw <"$FX/write-bw-client.txt")"
# A server prints the client's report too (write_bw.c: xchg_bw_reports, print_full_bw_report).
eq "the server shows the client's rate" 388.00 "$(rg_parse_perftest_bw <"$FX/write-bw-server.txt")"
rg_parse_perftest_bw <"$FX/write-bw-no-server.txt" >/dev/null
eq "no server: no rate (stderr)" 1 "$?"
rg_parse_perftest_bw <"$FX/write-bw-no-server-stdout.txt" >/dev/null
eq "no server: no rate (stdout)" 1 "$?"
# Only a refused connection is tried again; a failure after connecting keeps perftest's words.
rg_fabric_refused "$FX/write-bw-no-server.txt"
eq "nothing listened: refused" 0 "$?"
rg_fabric_refused "$FX/write-bw-rtr-fails.txt"
eq "a QP that could not reach RTR: not refused" 1 "$?"
rg_fabric_refused "$FX/write-bw-rdmacm-no-server.txt"
eq "no RDMA-CM listener (REJECTED): refused" 0 "$?"
printf 'Received 10 times ADDR_ERROR\n Unable to perform rdma_client function\n' >"$TMP/addr.err"
rg_fabric_refused "$TMP/addr.err"
eq "an RDMA-CM peer address that never resolved: refused (not up yet)" 0 "$?"
printf 'Failed to connect RDMA CM client, tried 10 times.\n' >"$TMP/cmqp.err"
rg_fabric_refused "$TMP/cmqp.err"
eq "the test's QPs not connected after the keys were: not refused" 1 "$?"
printf 'libibverbs: Warning: couldn'"'"'t load driver '"'"'libfoo-rdmav34.so'"'"'\n' >"$TMP/warned.err"
cat "$FX/write-bw-no-server.txt" >>"$TMP/warned.err"
rg_fabric_refused "$TMP/warned.err"
eq "refused after a library's warning" 0 "$?"
RG_FABRIC_SECONDS=10
: >"$TMP/f.cli"
cp "$FX/write-bw-rtr-fails.txt" "$TMP/f.cli.err"
echo 1 >"$TMP/f.cli.rc"
rg_fabric_failure "$TMP/f.cli"
eq "a client that failed after connecting: perftest's words" \
  "failed after it connected: ib_write_bw said \"Failed to modify QP 18518 to RTR; Unable to Connect the HCA's through the link\"" "$RG_V"
: >"$TMP/f.srv0"
cp "$FX/write-bw-client-gone-server.txt" "$TMP/f.srv0.err"
echo 1 >"$TMP/f.srv0.rc"
rg_fabric_failure "$TMP/f.srv0"
eq "its server's" "failed after it connected: ib_write_bw said \"Failed to exchange data between server and clients\"" "$RG_V"
cp "$FX/write-bw-no-server.txt" "$TMP/f.cli.err"
rg_fabric_failure "$TMP/f.cli"
eq "never connected: no failure of a flow" "" "$RG_V"
echo Terminated >"$TMP/f.cli.err"
echo 124 >"$TMP/f.cli.rc"
rg_fabric_failure "$TMP/f.cli"
eq "a client stopped by its own limit" \
  "did not end within 40s and was stopped (a connect that hangs, as behind a firewall that drops it, or a flow that never ends)" "$RG_V"
cp "$TMP/f.cli.err" "$TMP/f.srv0.err"
echo 124 >"$TMP/f.srv0.rc"
rg_fabric_failure "$TMP/f.srv0"
eq "a server that its limit stopped: no client came" "" "$RG_V"
rm -f "$TMP/f.cli.rc"
rg_fabric_failure "$TMP/f.cli"
eq "no failure status, no failure" "" "$RG_V"
# Real captures (a 16-QP rdma_cm run with GPU memory: other lines around the same table).
eq "a captured client's rate" 181.46 "$(rg_parse_perftest_bw <"$FX/capture-write-bw-rdmacm-cuda-client.txt")"
eq "a captured server's rate" 181.46 "$(rg_parse_perftest_bw <"$FX/capture-write-bw-rdmacm-cuda-server.txt")"
printf ' WARNING: BW peak won'"'"'t be measured in this run.\n\n************************************\n* Waiting for client to connect... *\n************************************\n' >"$TMP/waiting"
rg_fabric_served "$TMP/waiting"
eq "a server no client reached is not served" 1 "$?"
rg_fabric_served "$FX/write-bw-server.txt"
eq "a server that took its client is served" 0 "$?"
rg_fabric_served "$FX/capture-write-bw-rdmacm-cuda-server.txt"
eq "so is the captured one" 0 "$?"
# Whom it served: the GID after the remote address, perftest's decimal bytes.
rg_fabric_client_ip "$FX/write-bw-server.txt"
eq "the served client's address" 10.10.0.10 "$RG_V"
rg_fabric_client_ip "$FX/capture-write-bw-rdmacm-cuda-server.txt"
eq "the captured server's client (bytes 06 and 145)" 10.6.145.33 "$RG_V"
rg_fabric_client_ip "$TMP/waiting"
eq "no client, no address" "" "$RG_V"

printf 'rx_prio3_bytes 1000\ntx_prio0_bytes 5\n' >"$TMP/before"
printf 'np_cnp_sent 7\nrx_prio3_bytes 97000001000\ntx_prio0_bytes 5\nrx_prio3_pause 4\n' >"$TMP/after"
rg_fabric_delta "$TMP/before" "$TMP/after" >"$TMP/delta"
eq "a delta past 2^31" 97000000000 "$(rg_fabric_get "$TMP/delta" rx_prio3_bytes)"
rg_fabric_val "$TMP/delta" np_cnp_sent
eq "a counter absent before has no delta (absent is not 0)" "1 " "$? $RG_V"
rg_fabric_val "$TMP/delta" rx_prio3_bytes
eq "a counter read both times has one" "0 97000000000" "$? $RG_V"
rg_fabric_val "$TMP/delta" rx_prio3_pause
eq "a per-priority counter that appeared (PFC turned on) counts from 0" "0 4" "$? $RG_V"
eq "the pause reading: absent is none" 0 "$(rg_fabric_get "$TMP/delta" out_of_sequence)"
printf 'out_of_sequence 500\n' >"$TMP/before"
printf 'out_of_sequence 3\n' >"$TMP/after"
rg_fabric_delta "$TMP/before" "$TMP/after" >"$TMP/delta"
rg_fabric_val "$TMP/delta" out_of_sequence
eq "a counter that went back was reset, not read" "1 reset" "$? $RG_V"
# The loss counters: moved, absent (a capability the device lacks), reset.
printf 'out_of_sequence 0\npacket_seq_err 2\nrx_discards_phy 0\ntx_discards_phy 0\n' >"$TMP/d3"
rg_fabric_loss "$TMP/d3"
eq "loss: the counter that moved" "packet_seq_err +2|4|" "$RG_FAB_BAD|$RG_FAB_READ|$RG_FAB_NOTE"
printf 'rx_discards_phy 0\ntx_discards_phy 0\n' >"$TMP/d3"
rg_fabric_loss "$TMP/d3"
eq "loss: the counters this device lacks are named with the capability" \
  "|2|not exposed here: out_of_sequence (mlx5 lists it only with the device's out_of_seq_cnt capability), packet_seq_err (mlx5 lists it only with its retransmission_q_counters capability)" \
  "$RG_FAB_BAD|$RG_FAB_READ|$RG_FAB_NOTE"
printf 'out_of_sequence reset\n' >"$TMP/d3"
rg_fabric_loss "$TMP/d3"
eq "loss: none read, one reset" \
  "|0|not exposed here: packet_seq_err (mlx5 lists it only with its retransmission_q_counters capability), rx_discards_phy (mlx5 lists it only with the firmware's port counters (PPCNT)), tx_discards_phy (mlx5 lists it only with the firmware's port counters (PPCNT)); out_of_sequence went back during the step (the driver was reloaded?), so not read" \
  "$RG_FAB_BAD|$RG_FAB_READ|$RG_FAB_NOTE"
printf 'tx_prio0_bytes 900\ntx_prio3_bytes 100\n' >"$TMP/d2"
rg_fabric_prio_text "$TMP/d2" tx
eq "the shares, largest first" "prio0 90% prio3 10%" "$RG_V"
eq "the bytes and the RoCE priority's" "1000 100" "$RG_FAB_TOTAL $RG_FAB_ON"

# The incast step's timing: rg_fabric_stamp times a server's flow from its lines as they arrive,
# rg_fabric_overlap how long at least two flows ran at once.
{
  printf ' local address: LID 0000\n remote address: LID 0000\n---\n'
  sleep 1
  printf ' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]\n'
  printf ' 65536      740051           0.00               388.00\n---\n'
} | rg_fabric_stamp "$TMP/st" yes
eq "the stamped report is the report" 6 "$(grep -c . "$TMP/st")"
eq "a start and an end" "start end" "$(awk '{ printf "%s%s", s, $1; s = " " }' "$TMP/st.t")"
eq "the end a second after the start" yes \
  "$(awk '{ t[$1] = $2 } END { print (t["end"] - t["start"] >= 0.9 ? "yes" : "no") }' "$TMP/st.t")"
printf 'x\n' | rg_fabric_stamp "$TMP/un" no
eq "without stdbuf the times are not known" untimed "$(cat "$TMP/un.t")"
eq "and the report is copied" x "$(cat "$TMP/un")"
flow() { printf 'start %s\nend %s\n' "$2" "$3" >"$TMP/$1.t"; }
flow a 100.0 102.0
flow b 101.0 103.0
flow c 103.5 105.5
rg_fabric_overlap "$TMP/a.t" "$TMP/b.t"
eq "two flows overlapping for a second" 1.0 "$RG_V"
rg_fabric_overlap "$TMP/a.t" "$TMP/c.t"
eq "two flows one after the other" 0.0 "$RG_V"
flow d 101.5 104.0
rg_fabric_overlap "$TMP/a.t" "$TMP/b.t" "$TMP/c.t" "$TMP/d.t"
eq "four flows: where at least two ran" 2.5 "$RG_V"
printf 'start 100.5\n' >"$TMP/e.t"
: >"$TMP/f.t"
rg_fabric_overlap "$TMP/a.t" "$TMP/e.t" "$TMP/f.t"
eq "a flow that never ended adds nothing" 0.0 "$RG_V"
rg_fabric_overlap "$TMP/a.t" "$TMP/un.t"
eq "an untimed flow: the overlap is not known" "" "$RG_V"

# How precheck and fabric.sh say to install perftest: the host's package manager, by os-release.
RG_ROOT=$TMP/osr
mkdir -p "$RG_ROOT/etc"
how() { # OS-RELEASE-LINES [OFED]: RG_V for that host
  printf '%s\n' "$1" >"$RG_ROOT/etc/os-release"
  RG_OFED=${2-}
  rg_perftest_how
  printf '%s' "$RG_V"
}
# perftest_via NAME TOOL OS_RELEASE: the install command for a host with that os-release.
perftest_via() { eq "$1" "$2 install perftest; MLNX_OFED and DOCA ship it too" "$(how "$3")"; }
perftest_via "Ubuntu: apt" apt 'ID=ubuntu
ID_LIKE=debian
VERSION_ID="22.04"'
perftest_via "RHEL 9: dnf" dnf 'ID="rhel"
ID_LIKE="fedora"
VERSION_ID="9.4"'
perftest_via "RHEL 7: yum" yum 'ID="rhel"
ID_LIKE="fedora"
VERSION_ID="7.9"'
perftest_via "Rocky 8 (like rhel centos fedora): dnf" dnf 'ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="8.10"'
perftest_via "SLES: zypper" zypper 'ID="sles"
ID_LIKE="suse"
VERSION_ID="15.5"'
perftest_via "openSUSE Leap: zypper" zypper 'ID="opensuse-leap"
ID_LIKE="suse opensuse"'
eq "an unknown distribution: all three" \
  "apt install perftest, dnf install perftest or zypper install perftest; MLNX_OFED and DOCA ship it too" \
  "$(how 'ID=nixos')"
rm -f "$RG_ROOT/etc/os-release"
eq "no os-release: all three" \
  "apt install perftest, dnf install perftest or zypper install perftest; MLNX_OFED and DOCA ship it too" \
  "$(RG_OFED="" && rg_perftest_how && printf '%s' "$RG_V")"
eq "an OFED host: its repository" \
  "dnf install perftest, from the repository of MLNX_OFED_LINUX-24.10-1.1.4.0, which ships it" \
  "$(how 'ID="rhel"
VERSION_ID="9.4"' MLNX_OFED_LINUX-24.10-1.1.4.0)"
RG_OFED=""
unset RG_ROOT

# The stand-in against the fixture: the same lines once digits are masked (the numbers differ).
if command -v flock >/dev/null 2>&1; then
  for h in a b; do
    bash "$HERE/fakehost.sh" create "$TMP/$h" --kind ofed --host "$h" \
      --nic "mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:0a:00:0${h/a/1}" >/dev/null
  done
  bash "$HERE/fakehost.sh" addr "$TMP/a" ens1f0np0 10.10.0.10/24
  bash "$HERE/fakehost.sh" addr "$TMP/b" ens1f0np0 10.10.0.11/24
  gid=$(grep -l . "$TMP/a/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/"* 2>/dev/null |
    while read -r f; do [ "$(cat "$f")" = "RoCE v2" ] && echo "${f##*/}"; done | sort -n | tail -1)
  export FAKEHOST_WIRE=$TMP/wire
  # listening PORT: waits for the server's listen on the wire (an event; five minutes only for a
  # server that never starts), so that the client connects at once however loaded the machine is.
  listening() {
    local n=0
    until [[ -f $FAKEHOST_WIRE/${2:-listen}/10.10.0.10:$1 ]] || ((++n > 3000)); do sleep 0.1; done
  }
  ROCE_GEN_ROOT=$TMP/a "$TMP/a/lib/fakehost/ib_write_bw" -d mlx5_0 -x "$gid" -F --report_gbits -D 1 \
    --tclass 106 -p 18515 >"$TMP/srv" 2>&1 &
  srv=$!
  listening 18515
  ROCE_GEN_ROOT=$TMP/b "$TMP/b/lib/fakehost/ib_write_bw" -d mlx5_0 -x "$gid" -F --report_gbits -D 1 \
    --tclass 106 -p 18515 10.10.0.10 >"$TMP/cli" 2>"$TMP/cli.err"
  wait "$srv"
  # perftest's stdout into a pipe comes all at once at its end (stdio's buffer); under stdbuf -oL
  # line by line, so that the server's flow can be timed.
  # timed NAME STDBUF...: whether the stamps of a served flow of 1 s are at least that second
  # apart ("yes", else "no: S s"). A load can only stretch a flow, never shorten it, and lines
  # that come all at once are stamped together however slow the machine is.
  timed() {
    local name=$1
    shift
    ROCE_GEN_ROOT=$TMP/a "$@" "$TMP/a/lib/fakehost/ib_write_bw" -d mlx5_0 -x "$gid" -F --report_gbits \
      -D 1 --tclass 106 -p 18516 2>&1 | rg_fabric_stamp "$TMP/$name" yes &
    srv=$!
    listening 18516
    ROCE_GEN_ROOT=$TMP/b "$TMP/b/lib/fakehost/ib_write_bw" -d mlx5_0 -x "$gid" -F --report_gbits -D 1 \
      --tclass 106 -p 18516 10.10.0.10 >/dev/null 2>&1
    wait "$srv"
    awk '{ t[$1] = $2 } END { d = t["end"] - t["start"]; if (d >= 1) print "yes"; else printf "no: %.2f s\n", d }' "$TMP/$name.t"
  }
  eq "the stand-in under stdbuf -oL: its lines as the flow starts and ends" yes "$(timed lb stdbuf -oL)"
  eq "the stand-in into a pipe: every line at its end, stamped together" no "$(timed full env | sed 's/:.*//')"
  mask() { sed 's/[0-9a-f]\{1,\}/9/g; s/9\(\.9\)\{1,\}/9/g' "$1"; }
  eq "the stand-in's client prints the fixture's layout" "$(mask "$FX/write-bw-client.txt")" "$(mask "$TMP/cli")"
  eq "the stand-in's server prints the fixture's layout" "$(mask "$FX/write-bw-server.txt")" "$(mask "$TMP/srv")"
  eq "the stand-in's rate reads back" 388.00 "$(rg_parse_perftest_bw <"$TMP/cli")"
  # A client whose QP cannot reach RTR: it connected, so its server fails too, at once.
  : >"$TMP/b/.fake/net/ens1f0np0/qp_rtr_fails"
  ROCE_GEN_ROOT=$TMP/a "$TMP/a/lib/fakehost/ib_write_bw" -d mlx5_0 -x "$gid" -F --report_gbits -D 1 \
    --tclass 106 -p 18517 >"$TMP/srv" 2>"$TMP/srv.err" &
  srv=$!
  listening 18517
  ROCE_GEN_ROOT=$TMP/b "$TMP/b/lib/fakehost/ib_write_bw" -d mlx5_0 -x "$gid" -F --report_gbits -D 1 \
    --tclass 106 -p 18517 10.10.0.10 >"$TMP/cli" 2>"$TMP/cli.err"
  eq "a QP that cannot reach RTR: the client fails" 1 "$?"
  wait "$srv"
  eq "and its server fails once the client is gone" 1 "$?"
  eq "the client's words on stderr" "$(cat "$FX/write-bw-rtr-fails.txt")" "$(cat "$TMP/cli.err")"
  eq "the server's" "$(cat "$FX/write-bw-client-gone-server.txt")" "$(cat "$TMP/srv.err")"
  eq "no rate on either end" "1 1" "$(rg_parse_perftest_bw <"$TMP/cli" >/dev/null; printf '%s ' "$?"; rg_parse_perftest_bw <"$TMP/srv" >/dev/null; printf '%s' "$?")"
  rm -f "$TMP/b/.fake/net/ens1f0np0/qp_rtr_fails"
  # Over RDMA-CM (-R, bound to the planned addresses): the capture's layout, the client's address
  # after "remote address:", the RDMA-CM port space apart from TCP's (18515 is free there).
  ROCE_GEN_ROOT=$TMP/a "$TMP/a/lib/fakehost/ib_write_bw" -d mlx5_0 -R -F --report_gbits -D 1 \
    --bind_source_ip 10.10.0.10 -p 18515 >"$TMP/srv" 2>&1 &
  srv=$!
  listening 18515 cm-listen
  ROCE_GEN_ROOT=$TMP/b "$TMP/b/lib/fakehost/ib_write_bw" -d mlx5_0 -R -F --report_gbits -D 1 \
    --bind_source_ip 10.10.0.11 -p 18515 10.10.0.10 >"$TMP/cli" 2>"$TMP/cli.err"
  eq "an RDMA-CM client runs" 0 "$?"
  wait "$srv"
  eq "and its server" 0 "$?"
  rg_fabric_served "$TMP/srv"
  eq "the RDMA-CM server served a client" 0 "$?"
  rg_fabric_client_ip "$TMP/srv"
  eq "its client's address" 10.10.0.11 "$RG_V"
  eq "the RDMA-CM client's rate reads back" 388.00 "$(rg_parse_perftest_bw <"$TMP/cli")"
  # The lines both print as the capture does (perftest_parameters.c ctx_print_test_info, over
  # RDMA-CM; masked: the numbers differ), in the capture's order.
  for f in srv cli; do
    what=server
    [ "$f" = srv ] || what=client
    want=$(grep -E '^ (rdma_cm QPs|Data ex\. method|Waiting for client rdma_cm|Please run the same|local address|remote address)' \
      "$FX/capture-write-bw-rdmacm-cuda-$what.txt" | sed 's/ \tTOS .*//' | awk '!seen[$1 $2]++' | mask /dev/stdin)
    got=$(grep -E '^ (rdma_cm QPs|Data ex\. method|Waiting for client rdma_cm|Please run the same|local address|remote address)' \
      "$TMP/$f" | awk '!seen[$1 $2]++' | mask /dev/stdin)
    eq "the stand-in's RDMA-CM $what prints the capture's lines" "$want" "$got"
  done
  ROCE_GEN_ROOT=$TMP/b "$TMP/b/lib/fakehost/ib_write_bw" -d mlx5_0 -R -F --report_gbits -D 1 \
    --bind_source_ip 10.10.0.11 -p 18516 10.10.0.10 >"$TMP/out" 2>"$TMP/err"
  eq "no RDMA-CM listener: the client fails at once" 1 "$?"
  eq "no RDMA-CM listener: the peer's CM rejects it, in perftest's words" "$(cat "$FX/write-bw-rdmacm-no-server.txt")" "$(cat "$TMP/err")"
  rg_fabric_refused "$TMP/err"
  eq "a rejected RDMA-CM connect is refused: tried again" 0 "$?"
  # GPU memory: two simulated 8-GPU servers (c serves, d connects), port mlx5_0 below GPU 0.
  for h in c d; do
    bash "$HERE/fakehost.sh" create "$TMP/$h" --kind ofed --host "$h" \
      --nic "mlx5_0:ens1f0np0:0000:19:00.0:b8:3f:d2:0a:00:0${h/c/3}" >/dev/null
    bash "$HERE/fakehost.sh" pcitree "$TMP/$h" "$HERE/fixtures/pci/hgx-8gpu.json" >/dev/null 2>&1
    for m in nvidia nvidia_peermem; do
      mkdir -p "$TMP/$h/sys/module/$m" && echo 550.54.15 >"$TMP/$h/sys/module/$m/version"
    done
  done
  bash "$HERE/fakehost.sh" addr "$TMP/c" ens1f0np0 10.10.0.10/24
  bash "$HERE/fakehost.sh" addr "$TMP/d" ens1f0np0 10.10.0.11/24
  # cuda_flow PORT SERVER_ARGS CLIENT_ARGS [ENV ...]: one flow from d to c; the client's stdout
  # in $TMP/cli, stderr in cli.err, the server's in srv and srv.err; "CLIENT_RC SERVER_RC".
  cuda_flow() {
    local port=$1 sa=$2 ca=$3 rc
    shift 3
    # shellcheck disable=SC2086 # the options, split as given
    ROCE_GEN_ROOT=$TMP/c "$TMP/c/lib/fakehost/ib_write_bw" -d mlx5_0 -x "$gid" -F --report_gbits -D 1 \
      $sa -p "$port" >"$TMP/srv" 2>"$TMP/srv.err" &
    srv=$!
    listening "$port"
    # shellcheck disable=SC2086
    env ROCE_GEN_ROOT="$TMP/d" "$@" "$TMP/d/lib/fakehost/ib_write_bw" -d mlx5_0 -x "$gid" -F --report_gbits \
      -D 1 $ca -p "$port" 10.10.0.10 >"$TMP/cli" 2>"$TMP/cli.err" && rc=0 || rc=$?
    wait "$srv" && printf '%s 0' "$rc" || printf '%s %s' "$rc" "$?"
  }
  # A perftest built without CUDA still knows the options, and refuses them at once.
  ROCE_GEN_ROOT=$TMP/d "$TMP/d/lib/fakehost/ib_write_bw" -d mlx5_0 -x "$gid" -F --report_gbits -D 1 \
    --use_cuda=0 -p 18520 10.10.0.10 >"$TMP/out" 2>"$TMP/err"
  eq "no CUDA in the build: --use_cuda is refused" 1 "$?"
  eq "in perftest's words" "$(cat "$FX/write-bw-no-cuda-use-cuda.txt")" "$(cat "$TMP/out" "$TMP/err")"
  eq "and its usage names no CUDA option" "" \
    "$(ROCE_GEN_ROOT=$TMP/d "$TMP/d/lib/fakehost/ib_write_bw" --help 2>&1 | grep use_cuda)"
  : >"$TMP/c/.fake/perftest-cuda"
  : >"$TMP/d/.fake/perftest-cuda"
  eq "a CUDA build lists --use_cuda and --use_cuda_bus_id, no DMA-BUF" "--use_cuda= --use_cuda_bus_id=" \
    "$(ROCE_GEN_ROOT=$TMP/d "$TMP/d/lib/fakehost/ib_write_bw" --help 2>&1 | grep -o -- '--use_cuda[a-z_]*=' | tr '\n' ' ' | sed 's/ $//')"
  eq "GPU memory on both ends: both run" "0 0" "$(cuda_flow 18521 --use_cuda=0 --use_cuda=0)"
  n=$(wc -l <"$FX/write-bw-cuda-client.txt")
  eq "the stand-in's CUDA client prints the fixture's lines" "$(mask "$FX/write-bw-cuda-client.txt")" \
    "$(head -n "$n" "$TMP/cli" | mask /dev/stdin)"
  grep -q '^allocated GPU buffer' "$TMP/srv"
  eq "the server allocated its GPU buffer too" 0 "$?"
  eq "and the rate reads back" 388.00 "$(rg_parse_perftest_bw <"$TMP/cli")"
  eq "by bus id: that GPU" "0 0" "$(cuda_flow 18522 --use_cuda=0 --use_cuda_bus_id=0000:2a:00.0)"
  eq "the bus id's lines, then device 1" "$(printf 'Got PCIe address of: 0000:2a:00.0\ninitializing CUDA\nFinding PCIe BUS 0000:2a:00.0\nPicking GPU number 1\nPicking device No. 1')" \
    "$(grep -E '^(Got PCIe|initializing CUDA|Finding|Picking)' "$TMP/cli" | awk '!(/^initializing/ && seen++)')"
  eq "CUDA_VISIBLE_DEVICES renumbers: device 0 is the second GPU" "0 0" \
    "$(cuda_flow 18523 --use_cuda=0 --use_cuda=0 CUDA_VISIBLE_DEVICES=1)"
  eq "its list" "CUDA device 0: PCIe address is 2A:00" "$(grep '^CUDA device [0-9]' "$TMP/cli")"
  eq "a bus id CUDA does not have" "1 1" "$(cuda_flow 18524 --use_cuda=0 --use_cuda_bus_id=0000:19:00.0)"
  eq "cuDeviceGetByPCIBusId's error" "cuDeviceGetByPCIBusId failed with error: 101; Failed to get PCI Bus ID (0000:19:00.0)" \
    "$(head -n 1 "$TMP/cli.err")"
  eq "--use_cuda_dmabuf without DMA-BUF in the build" " Unsupported memory type" \
    "$(ROCE_GEN_ROOT=$TMP/d "$TMP/d/lib/fakehost/ib_write_bw" -d mlx5_0 --use_cuda=0 --use_cuda_dmabuf 10.10.0.10 2>/dev/null)"
  eq "--use_cuda_dmabuf before --use_cuda" "CUDA DMA-BUF cannot be used without CUDA" \
    "$(ROCE_GEN_ROOT=$TMP/d "$TMP/d/lib/fakehost/ib_write_bw" -d mlx5_0 --use_cuda_dmabuf --use_cuda=0 10.10.0.10 2>&1 >/dev/null | head -n 1)"
  # No peer-memory client on d: GPU memory cannot be registered; the server then finds the
  # socket closed.
  rm -rf "$TMP/d/sys/module/nvidia_peermem"
  eq "no peer memory: both ends fail" "1 1" "$(cuda_flow 18525 --use_cuda=0 --use_cuda=0)"
  eq "the client's words" "$(printf "Couldn't allocate MR\nFailed to create MR\n Couldn't create IB resources")" "$(cat "$TMP/cli.err")"
  eq "the server's" "$(cat "$FX/write-bw-client-gone-server.txt")" "$(cat "$TMP/srv.err")"
  eq "host memory still runs there" "0 0" "$(cuda_flow 18526 --use_cuda=0 "")"

  # The script's choice per port (rg_fabric_memory_plan) on d's tree: by bus id, by CUDA index in
  # PCI order, or host memory with the cause.
  mkdir -p "$TMP/d/sys/module/nvidia_peermem" && echo 550.54.15 >"$TMP/d/sys/module/nvidia_peermem/version"
  RG_ROOT=$TMP/d RG_NIC_IBDEV=(mlx5_0 mlx5_1) RG_NIC_GPU=(0 0000:2a:00.0) RG_GPU_DIRECT=check RG_NCCL_VERSION=2.23.4
  RG_FAB_CUDA=bus
  rg_fabric_memory_plan
  eq "by bus id" "gpu gpu|--use_cuda_bus_id=0000:18:00.0|--use_cuda_bus_id=0000:2a:00.0" \
    "${RG_FAB_MEM[*]}|${RG_FAB_MEM_ARGS[0]}|${RG_FAB_MEM_ARGS[1]}"
  RG_FAB_CUDA=index
  rg_fabric_memory_plan
  eq "by CUDA index, in PCI order" "--use_cuda=0|--use_cuda=1" "${RG_FAB_MEM_ARGS[0]}|${RG_FAB_MEM_ARGS[1]}"
  RG_FAB_CUDA=none
  rg_fabric_memory_plan
  eq "no CUDA: host memory" "host host" "${RG_FAB_MEM[*]}"
  RG_FAB_CUDA=bus RG_NIC_GPU=(7 "")
  rm -rf "$TMP/d/sys/module/nvidia_peermem"
  rg_fabric_memory_plan
  eq "no peer memory: host memory, and why" "host|1" \
    "${RG_FAB_MEM[0]}|$([[ ${RG_FAB_MEM_WHY[0]} == *"no peer-memory module"* ]] && echo 1)"
  eq "a port without a GPU: nothing planned" "" "${RG_FAB_MEM[1]-}"
  # DMA-BUF as NCCL's route (no peer memory; NVIDIA's open kernel module, the kernel's support):
  # --use_cuda_dmabuf after the device, where perftest has it; else host memory and why.
  RG_NIC_GPU=(0 "")
  mkdir -p "$TMP/d/proc/driver/nvidia"
  echo 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build' >"$TMP/d/proc/driver/nvidia/version"
  echo 'ffffffffc0a1b2c0 T ib_umem_dmabuf_get	[ib_core]' >"$TMP/d/proc/kallsyms"
  RG_FAB_DMABUF=yes
  rg_fabric_memory_plan
  eq "DMA-BUF: the device's memory through it" "gpu|--use_cuda_bus_id=0000:18:00.0 --use_cuda_dmabuf" \
    "${RG_FAB_MEM[0]}|${RG_FAB_MEM_ARGS[0]}"
  RG_FAB_DMABUF=no
  rg_fabric_memory_plan
  eq "DMA-BUF, a perftest without --use_cuda_dmabuf: host memory, and why" "host|1" \
    "${RG_FAB_MEM[0]}|$([[ ${RG_FAB_MEM_WHY[0]} == *"has no --use_cuda_dmabuf"* ]] && echo 1)"
  RG_GPU_DIRECT=no
  rg_fabric_memory_plan
  eq "gpu_direct = no: no GPU memory at all" 0 "${#RG_FAB_MEM[@]}"
  # The stand-in's DMA-BUF: a build with it registers through ibv_reg_dmabuf_mr on the open
  # kernel module; a kernel without the RDMA DMA-BUF support refuses the MR.
  echo dmabuf >"$TMP/d/.fake/perftest-cuda"
  eq "DMA-BUF: the flow runs" "0 0" "$(cuda_flow 18527 "" "--use_cuda=0 --use_cuda_dmabuf")"
  eq "through ibv_reg_dmabuf_mr" 1 "$(grep -c '^Calling ibv_reg_dmabuf_mr' "$TMP/cli")"
  : >"$TMP/d/proc/kallsyms"
  eq "a kernel without RDMA DMA-BUF: the MR is refused" "1 1" "$(cuda_flow 18528 "" "--use_cuda=0 --use_cuda_dmabuf")"
  eq "in perftest's words" "Couldn't allocate MR with error=95|OFED stack does not support DMA-BUF" \
    "$(head -n 2 "$TMP/cli.err" | paste -sd'|')"
  unset RG_ROOT
  unset FAKEHOST_WIRE
  ROCE_GEN_ROOT=$TMP/b "$TMP/b/lib/fakehost/ib_write_bw" -d mlx5_0 -x "$gid" -F --report_gbits -D 1 \
    --tclass 106 -p 18515 10.10.0.11 >"$TMP/out" 2>"$TMP/err"
  eq "no server: perftest's error on stderr" "$(cat "$FX/write-bw-no-server.txt")" "$(cat "$TMP/err")"
  eq "no server: its stdout" "$(cat "$FX/write-bw-no-server-stdout.txt")" "$(cat "$TMP/out")"
fi

done_testing

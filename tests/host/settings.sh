#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Function-level tests of the pure parts of the bundle's settings (templates/host/lib-settings.sh)
# and of the summary's change texts (lib.sh): the planned values, the DSCP pairs and the default
# map, the DSCP-map diff rollback restores with, and apply --dry-run's simulation of a port and
# the checks it predicts (rg_apply_all on a simulated port: nothing runs), the PCI functions of a
# PF's VFs for the udev rule (lib-rdma.sh rg_vf_bdfs). And that the library
# and each of its parts can be sourced without side effects, as this test sources lib.sh. No
# host, no root, no tool but coreutils. Prints "N passed, M failed" and exits 1 on a failure.
# Usage: settings.sh [BASH]   (the bash that runs the functions; default: this one)

set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$HERE/../../templates/host
if [ $# -gt 0 ] && [ -z "${SETTINGS_INNER-}" ]; then
  SETTINGS_INNER=1 exec "$1" "${BASH_SOURCE[0]}"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-settings.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

# Sourcing the library, or any part of it alone, changes nothing but its own names: no shell
# option, trap, environment variable or PATH (rg_init does those, for the scripts).
sourced=""
for f in "$LIB"/lib*.sh; do
  # shellcheck disable=SC2016 # the inner shell expands them
  out=$(env -i PATH=/usr/bin:/bin "$BASH" -c 'set -u; state() { set -o; shopt; trap; env | sort; }
    before=$(state); . "$1" || exit 1; [ "$before" = "$(state)" ] || echo changed' sh "$f" 2>&1) ||
    out+=" (exit $?)"
  [ -z "$out" ] || sourced+="${f##*/}: $out; "
done

# shellcheck source=../../templates/host/lib.sh
. "$LIB/lib.sh"
# This test's plan data, as plan.sh would set it (rg_init sources that; this test does not).
# shellcheck disable=SC2034 # the library reads these
{
  RG_CLUSTER=test RG_HOST=gpu-001 RG_TRUST=dscp RG_ROCE_DSCP=26 RG_ROCE_PRIO=3 RG_ROCE_TOS=106
  RG_CNP_DSCP=48 RG_CNP_PRIO=6 RG_PFC=0,0,0,1,0,0,0,0 RG_ECN=0,0,0,1,0,0,0,0 RG_ROCE_MODE='RoCE v2'
  RG_GLOBAL_PAUSE=off RG_DCBX=check RG_CABLE_LEN='' RG_DCQCN_FILE=() RG_DCQCN_VALUE=()
  RG_NIC_IBDEV=(mlx5_0 mlx5_1) RG_NIC_NETDEV=(eth0 eth1) RG_NIC_MTU=(4200 9000)
}
# Only the host's PATH: no vendor tool is found, so the QoS backend is dcb unless a case says.
NOTOOLS=$TMP/none
mkdir "$NOTOOLS"

# shellcheck source=assert.sh
. "$HERE/assert.sh"
# checks: the checks recorded since the last reset, one line each: `ID NIC STATUS: MESSAGE`.
checks() {
  local i
  for ((i = 0; i < ${#RG_C_ID[@]}; i++)); do
    printf '%s %s %s: %s\n' "${RG_C_ID[i]}" "${RG_C_NIC[i]}" "${RG_C_STATUS[i]}" "${RG_C_MSG[i]}"
  done
}
reset() {
  RG_C_ID=() RG_C_NIC=() RG_C_STATUS=() RG_C_SEV=() RG_C_EXP=() RG_C_ACT=() RG_C_MSG=()
  RG_C_KIND=() RG_C_FROM=() RG_E_MSG=() RG_E_FROM=() RG_E_EXP=() RG_FLAPS=""
}

eq "every part sources without side effects" "" "$sourced"

default_map=""
for ((d = 0; d < 64; d++)); do default_map+="${default_map:+,}$d:$((d >> 3))"; done

# --- the plan's values in the spelling rg_get reads ------------------------------------------------
eq "planned dscp2prio: RoCE and CNP pairs" 26:3,48:6 "$(rg_planned dscp2prio 0; printf %s "$REPLY")"
eq "planned pfc" 0,0,0,1,0,0,0,0 "$(rg_planned pfc 0; printf %s "$REPLY")"
eq "planned mtu is the port's own" 9000 "$(rg_planned mtu 1; printf %s "$REPLY")"
eq "planned pause off" "rx off tx off" "$(rg_planned pause 0; printf %s "$REPLY")"
eq "planned pause on" "rx on tx on" "$(RG_GLOBAL_PAUSE=on rg_planned pause 0; printf %s "$REPLY")"
eq "planned ecn: only the lossless priority" 3:1 "$(rg_planned ecn_np 0; printf %s "$REPLY")"
eq "planned ecn: two priorities" 3:1,5:1 "$(RG_ECN=0,0,0,1,0,1,0,0 rg_planned ecn_rp 0; printf %s "$REPLY")"
eq "planned ecn none: all eight off" 0:0,1:0,2:0,3:0,4:0,5:0,6:0,7:0 "$(RG_ECN=0,0,0,0,0,0,0,0 rg_planned ecn_np 0; printf %s "$REPLY")"
eq "planned traffic class is the ToS" 106 "$(rg_planned traffic_class 0; printf %s "$REPLY")"

# --- DSCP pairs and the default map ----------------------------------------------------------------
eq "default map: 64 entries" 64 "$(rg_default_map | tr ',' '\n' | grep -c .)"
eq "default map" "$default_map" "$(rg_default_map)"
eq "pairs of the default map" 26:3,48:6 "$(rg_pairs_of "$default_map" 26 48)"
eq "pairs of no map" "26:?,48:?" "$(rg_pairs_of none 26 48)"
eq "pairs: 126 is not 26, 6 not 26" "26:?" "$(rg_pairs_of 126:1,6:0 26)"
eq "pairs: the first and the last entry" 0:0,63:7 "$(rg_pairs_of "$default_map" 0 63)"

# --- the DSCP-map diff (rollback of dscp_map) ------------------------------------------------------
eq "diff: equal maps, nothing" "" "$(rg_map_diff "$default_map" "$default_map")"
eq "diff: to none leaves the map (trust pcp removes it)" "" "$(rg_map_diff "$default_map" none)"
eq "diff: one entry moved" 26:5 "$(rg_map_diff "$default_map" "${default_map/26:3/26:5}")"
eq "diff: a changed entry set, an added one deleted" 26:3,10:-1 "$(rg_map_diff 10:1,26:5,48:6 26:3,48:6)"
eq "diff: from none, every entry set" 26:3,48:6 "$(rg_map_diff none 26:3,48:6)"
eq "diff: 6 is not 26" 26:3,6:-0 "$(rg_map_diff 6:0 26:3)"
eq "diff: the default map to two entries deletes 62" 62 \
  "$(rg_map_diff "$default_map" 26:3,48:6 | tr ',' '\n' | grep -c -- ':-')"

# --- rollback: the saved values a port is given ----------------------------------------------------
eq "dcqcn ids among the saved" "dcqcn_min_time_between_cnps dcqcn_rpg_time_reset" \
  "$(rg_dcqcn_saved_ids mtu dcqcn_min_time_between_cnps trust dcqcn_rpg_time_reset)"
eq "no dcqcn ids" "" "$(rg_dcqcn_saved_ids mtu pause)"
# A port the plan no longer has: each value it was given is to be restored by hand, the map
# under its setting's name; a value keeps its spaces and an `=` of its own.
reset
rg_restore mlx5_9 mtu=1500 "pause=rx on tx on" dscp_map=none "traffic_class=a=b"
eq "a port not in the plan: restore by hand" "dscp2prio mlx5_9 fail: mlx5_9 is not in this bundle's plan; restore dscp2prio by hand to none
mtu mlx5_9 fail: mlx5_9 is not in this bundle's plan; restore mtu by hand to 1500
pause mlx5_9 fail: mlx5_9 is not in this bundle's plan; restore pause by hand to rx on tx on
traffic_class mlx5_9 fail: mlx5_9 is not in this bundle's plan; restore traffic_class by hand to a=b" "$(checks | sort)"
reset
rg_restore mlx5_9 mtu=1500 mtu=9000
eq "a value saved twice: the later counts" "mtu mlx5_9 fail: mlx5_9 is not in this bundle's plan; restore mtu by hand to 9000" "$(checks)"

# --- apply --dry-run: the simulation of a port and the checks it predicts -------------------------
# dryrun IDS NAME=VALUE...: rg_apply_all for NIC 0 in a dry run on a port whose values were read
# as given (RG_PORT_BEFORE, as rg_nic_settings leaves it); prints its stdout (the steps,
# with -v) and then the checks.
dryrun() {
  local ids=$1 word
  shift
  RG_PORT_BEFORE=()
  # shellcheck disable=SC2034 # rg_apply_all reads it
  for word in "$@"; do RG_PORT_BEFORE[${word%%=*}]=${word#*=}; done
  reset
  RG_DRY_RUN=yes
  rg_apply_all 0 "$ids"
  checks
  RG_DRY_RUN=no
}
PATH_SAVED=$PATH
PATH=$NOTOOLS:$PATH_SAVED

# A configured port: every setting is predicted unchanged, nothing is run.
out=$(RG_VERBOSE=yes dryrun "trust dscp2prio pfc pause mtu" trust=dscp dscp2prio=26:3,48:6 \
  pfc=0,0,0,1,0,0,0,0 "pause=rx off tx off" mtu=4200)
eq "configured: all unchanged, nothing run" "trust mlx5_0 pass: trust is dscp as planned; unchanged
dscp2prio mlx5_0 pass: dscp2prio is 26:3,48:6 as planned; unchanged
pfc mlx5_0 pass: pfc is 0,0,0,1,0,0,0,0 as planned; unchanged
pause mlx5_0 pass: pause is rx off tx off as planned; unchanged
mtu mlx5_0 pass: mtu is 4200 as planned; unchanged" "$out"

# A port in PCP trust (no DSCP entries), PFC off, pause on, the default MTU, under dcb: trust
# dscp programs the default map, which has the planned pairs (a side effect, nothing to run), and
# setting PFC clears pause (a side effect too). The steps are the very commands apply runs.
out=$(RG_VERBOSE=yes dryrun "trust dscp2prio pfc pause mtu" trust=pcp "dscp2prio=26:?,48:?" \
  pfc=0,0,0,0,0,0,0,0 "pause=rx on tx on" mtu=1500)
eq "pcp port under dcb: steps and prediction" "would run: dcb app add dev eth0 dscp-prio ${default_map//,/ }
would run: dcb pfc set dev eth0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
would run: ip link set dev eth0 mtu 4200
would wait: up to 30s for the link of eth0 to come back (carrier, port 1 of mlx5_0 ACTIVE), then read back
trust mlx5_0 warn: dry run: trust would change from pcp to dscp
dscp2prio mlx5_0 warn: dry run: dscp2prio would change from 26:?,48:? to 26:3,48:6 (a side effect of an earlier change: nothing to run)
pfc mlx5_0 warn: dry run: pfc would change from 0,0,0,0,0,0,0,0 to 0,0,0,1,0,0,0,0; changing PFC toggles the link of eth0 (one flap)
pause mlx5_0 warn: dry run: pause would change from rx on tx on to rx off tx off (a side effect of an earlier change: nothing to run)
mtu mlx5_0 warn: dry run: mtu would change from 1500 to 4200" "$out"
eq "pcp port: a summary entry per changed setting" "trust:pcp>dscp dscp2prio:26:?,48:?>26:3,48:6 pfc:0,0,0,0,0,0,0,0>0,0,0,1,0,0,0,0 pause:rx on tx on>rx off tx off mtu:1500>4200 " \
  "$(dryrun "trust dscp2prio pfc pause mtu" trust=pcp "dscp2prio=26:?,48:?" pfc=0,0,0,0,0,0,0,0 \
    "pause=rx on tx on" mtu=1500 >/dev/null
    for ((i = 0; i < ${#RG_C_ID[@]}; i++)); do
      [ "${RG_C_KIND[i]}" != setting ] || printf '%s:%s>%s ' "${RG_C_ID[i]}" "${RG_C_FROM[i]}" "${RG_C_EXP[i]}"
    done)"
eq "pcp port: the flap is counted" eth0 "$(dryrun "pfc" pfc=0,0,0,0,0,0,0,0 >/dev/null; printf '%s' "$RG_FLAPS")"
eq "no PFC change: no flap" "" "$(dryrun "mtu" mtu=1500 >/dev/null; printf '%s' "$RG_FLAPS")"
# Without -v a dry run prints nothing of its own.
eq "quiet dry run" "mtu mlx5_0 warn: dry run: mtu would change from 1500 to 4200" "$(dryrun mtu mtu=1500)"

# Pause planned on and already on: the PFC change clears it, so apply sets it again.
out=$(RG_GLOBAL_PAUSE=on RG_VERBOSE=yes dryrun "pfc pause" pfc=0,0,0,0,0,0,0,0 "pause=rx on tx on")
eq "pause set again after PFC" "would run: dcb pfc set dev eth0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
would run: ethtool -A eth0 rx on tx on
would wait: up to 30s for the link of eth0 to come back (carrier, port 1 of mlx5_0 ACTIVE), then read back
pfc mlx5_0 warn: dry run: pfc would change from 0,0,0,0,0,0,0,0 to 0,0,0,1,0,0,0,0; changing PFC toggles the link of eth0 (one flap)
pause mlx5_0 pass: pause is rx on tx on as planned; an earlier change alters it, so apply sets it again" "$out"

# A port already in DSCP trust keeps its map: trust is not written, the map entry is.
out=$(RG_VERBOSE=yes dryrun "trust dscp2prio" trust=dscp dscp2prio=26:5,48:6)
eq "dscp port, one entry off" "would run: dcb app replace dev eth0 dscp-prio 26:3
would run: dcb app replace dev eth0 dscp-prio 48:6
trust mlx5_0 pass: trust is dscp as planned; unchanged
dscp2prio mlx5_0 warn: dry run: dscp2prio would change from 26:5,48:6 to 26:3,48:6" "$out"

# With mlnx_qos (present but never run in a dry run): the DSCP map and PFC in one call.
mkdir "$TMP/qos"
printf '#!/bin/sh\necho "mlnx_qos ran in a dry run" >&2\nexit 99\n' >"$TMP/qos/mlnx_qos"
chmod +x "$TMP/qos/mlnx_qos"
PATH=$TMP/qos:$PATH_SAVED
out=$(RG_VERBOSE=yes dryrun "trust dscp2prio pfc" trust=dscp dscp2prio=26:5,48:6 pfc=0,0,0,0,0,0,0,0 2>&1)
eq "mlnx_qos: map and PFC in one call" "would run: mlnx_qos -i eth0 --pfc 0,0,0,1,0,0,0,0 --dscp2prio set,26,3 --dscp2prio set,48,6
would wait: up to 30s for the link of eth0 to come back (carrier, port 1 of mlx5_0 ACTIVE), then read back
trust mlx5_0 pass: trust is dscp as planned; unchanged
dscp2prio mlx5_0 warn: dry run: dscp2prio would change from 26:5,48:6 to 26:3,48:6
pfc mlx5_0 warn: dry run: pfc would change from 0,0,0,0,0,0,0,0 to 0,0,0,1,0,0,0,0; changing PFC toggles the link of eth0 (one flap)" "$out"
PATH=$NOTOOLS:$PATH_SAVED

# rg_simulate: the driver's side effects, only in a dry run.
RG_PORT_SIM=([dscp2prio]="26:?,48:?" [pause]="rx on tx on")
RG_DRY_RUN=yes
rg_simulate trust dscp
eq "simulate trust dscp: the default map's pairs" 26:3,48:6 "${RG_PORT_SIM[dscp2prio]}"
rg_simulate pfc 0,0,0,1,0,0,0,0
eq "simulate pfc: pause cleared" "rx off tx off" "${RG_PORT_SIM[pause]}"
RG_PORT_SIM=([pause]="rx on tx on")
rg_simulate trust dscp
eq "simulate trust without a map read: none made up" unset "${RG_PORT_SIM[dscp2prio]-unset}"
RG_DRY_RUN=no
RG_PORT_SIM=([pause]="rx on tx on")
rg_simulate pfc 0,0,0,1,0,0,0,0
eq "simulate outside a dry run: nothing" "rx on tx on" "${RG_PORT_SIM[pause]}"
PATH=$PATH_SAVED

# --- the dcb backend: probed for app and dcbx, every read checked ---------------------------------
FIX=$HERE/fixtures
# fakedcb DIR: a dcb in DIR that answers `OBJ help` from fixtures/dcb/$DCB_HELP-OBJ-help.txt
# (on stderr, exit $DCB_HELP_RC) and every other call with $DCB_OUT on stdout, $DCB_ERR on
# stderr and exit $DCB_RC.
fakedcb() {
  mkdir -p "$1"
  cat >"$1/dcb" <<'DCB'
#!/usr/bin/env bash
if [ "${2-}" = help ]; then cat "$FIX/dcb/${DCB_HELP}$1-help.txt" >&2; exit "$DCB_HELP_RC"; fi
printf '%s' "$DCB_OUT"; printf '%s' "$DCB_ERR" >&2; exit "$DCB_RC"
DCB
  chmod +x "$1/dcb"
}
fakedcb "$TMP/dcb"
export FIX DCB_HELP="" DCB_HELP_RC=0 DCB_OUT="" DCB_ERR="" DCB_RC=0
PATH=$TMP/dcb:$PATH_SAVED
dcbget() { # ID: `STATUS VALUE` of rg_get ID 0, with a fresh probe
  RG_DCB_OK=""
  if rg_get "$1" 0; then printf 'ok %s' "$RG_V"; else printf 'fail %s' "$RG_V"; fi
}
eq "dcb 5.12+: the probe passes" "yes" "$(rg_dcb_probe && printf '%s' "$RG_DCB_OK")"
eq "dcb 5.12+: an empty app table of a read that worked is PCP trust" "ok pcp" "$(dcbget trust)"
eq "... and an empty map" "ok none" "$(dcbget dscp_map)"
DCB_OUT=$(cat "$FIX/dcb/app-show.txt")
eq "dcb app show with entries: DSCP trust" "ok dscp" "$(dcbget trust)"
DCB_OUT="" DCB_ERR="Attribute read: Operation not supported"$'\n' DCB_RC=1
eq "a failed dcb app show is no PCP trust" \
  "fail dcb -N app show dev eth0 dscp-prio failed (exit 1): Attribute read: Operation not supported" "$(dcbget trust)"
eq "... nor an empty map" fail "$(dcbget dscp_map | cut -d' ' -f1)"
eq "a failed dcb pfc show is no PFC" fail "$(dcbget pfc | cut -d' ' -f1)"
eq "a failed dcb dcbx show is no DCBX mode" fail "$(dcbget dcbx | cut -d' ' -f1)"
DCB_RC=0
eq "an error message with exit 0 fails the read too" fail "$(dcbget trust | cut -d' ' -f1)"
DCB_ERR="" DCB_HELP=5.11- DCB_HELP_RC=1
eq "iproute2 5.11: the probe fails with dcb's own words" \
  "no: this dcb (iproute2) has no \`app' subcommand (dcb app help: Object \"app\" is unknown, exit 1): dcb app and dcb dcbx arrived in iproute2 5.12; install iproute2 5.12 or newer, or MLNX_OFED/DOCA's mlnx_qos" \
  "$(RG_DCB_OK="" && rg_dcb_probe; printf '%s: %s' "$RG_DCB_OK" "$RG_DCB_WHY")"
eq "iproute2 5.11: no setting of the QoS backend is supported" \
  "no mlnx_qos, and this dcb (iproute2) has no" "$(RG_DCB_OK="" && rg_supported trust 0; printf '%s' "${RG_WHY:0:43}")"
eq "iproute2 5.11: a read is a failure, never PCP trust" fail "$(dcbget trust | cut -d' ' -f1)"
DCB_HELP="" DCB_HELP_RC=0
RG_DCB_OK=""

# Rollback on the dcb backend: DCBX cannot go back to the firmware; a skip that says how, and the
# other settings restored. A dcb whose DCBX reads `host ieee` and whose app table has 26:3.
cat >"$TMP/dcb/dcb" <<'DCB'
#!/usr/bin/env bash
[ "${2-}" != help ] || exit 0
echo "$*" >>"$TMP/dcb.log"
case "$*" in
  "dcbx show dev eth0") echo 'host ieee ' ;;
  "-N app show dev eth0 dscp-prio") echo 'dscp-prio 26:3 ' ;;
  *) exit 1 ;;
esac
DCB
export TMP
reset
rg_restore mlx5_0 dcbx=fw dscp_map=26:3 >/dev/null 2>&1
eq "dcb rollback: DCBX skipped with the command that would do it, the map as it was" \
  "dscp2prio mlx5_0 pass: dscp2prio is already 26:3
dcbx mlx5_0 skip: not restored: DCBX of eth0 was firmware-controlled before apply, and dcb (iproute2) cannot hand it back to the firmware (the driver takes only the empty DCBX mode for that, which dcb dcbx set cannot send); it stays OS-controlled with the restored settings: to give it back, run mlnx_qos -i eth0 -d fw (MLNX_OFED/DOCA's mlnx-tools)" "$(checks)"
eq "dcb rollback: no dcbx set was run" "" "$(grep -v show "$TMP/dcb.log")"
PATH=$PATH_SAVED
RG_DCB_OK=""

# --- the cable length takes effect only on buffers the driver owns --------------------------------
R=$TMP/root
mkdir -p "$R/sys/class/net/eth0/qos"
echo 400000 >"$R/sys/class/net/eth0/speed"
echo 1500 >"$R/sys/class/net/eth0/mtu"
cp "$FIX/qos/prio2buffer-pfc3.txt" "$R/sys/class/net/eth0/qos/prio2buffer"
cp "$FIX/qos/buffer_size-pfc3.txt" "$R/sys/class/net/eth0/qos/buffer_size"
cable() { # CABLE: `yes` or `no: WHY` of rg_cable_effect 0 CABLE on root R
  if RG_ROOT=$R rg_cable_effect 0 "$1"; then printf yes; else printf 'no: %s' "$RG_WHY"; fi
}
eq "firmware-sized buffers: the cable length sizes nothing" \
  "no: the firmware owns the receive buffers of eth0 (the default): buffer 1 (size 130944, xoff 111104: 19840 bytes of headroom) is not what the driver computes from a cable length of 30 m at 400000 Mb/s (146000 bytes + 272 × MTU / 100), and the driver resizes the headroom from the cable length only while it owns the buffers" \
  "$(cable 30)"
cp "$FIX/qos/buffer_size-manual-30.txt" "$R/sys/class/net/eth0/qos/buffer_size"
eq "driver-sized buffers (30 m, MTU 1500): in effect" yes "$(cable 30)"
eq "... but not for another length" no "$(cable 7 | cut -d: -f1)"
eq "no lossless priority: nothing to size" \
  "no: the plan makes no priority lossless, so no receive buffer has headroom for the cable length to size" \
  "$(RG_PFC=0,0,0,0,0,0,0,0 cable 30)"
rm "$R/sys/class/net/eth0/qos/buffer_size"
eq "no buffer files (inbox): cannot be read, not in effect" \
  "no: no /sys/class/net/eth0/qos/prio2buffer and buffer_size (MLNX_OFED/DOCA sysfs): whether the driver sized the headroom of eth0 from it cannot be read, and with the firmware owning the receive buffers (the default) it does not" \
  "$(cable 30)"

# --- the PCI functions of a PF's VFs, for the udev rule (lib-rdma.sh rg_vf_bdfs) -----------------
# drivers/pci/iov.c pci_iov_virtfn_bus/devfn: routing ID + offset + K * stride, carried into the
# device and bus numbers.
V=$TMP/vfroot
vfpf() { # BDF TOTAL OFFSET STRIDE
  mkdir -p "$V/sys/bus/pci/devices/$1"
  echo "$2" >"$V/sys/bus/pci/devices/$1/sriov_totalvfs"
  echo "$3" >"$V/sys/bus/pci/devices/$1/sriov_offset"
  echo "$4" >"$V/sys/bus/pci/devices/$1/sriov_stride"
}
vfpf 0000:1a:00.0 3 2 1
vfpf 0000:3c:00.1 2 7 2
vfpf 0001:ff:00.0 2 255 1
mkdir -p "$V/sys/bus/pci/devices/0000:5e:00.0"
# shellcheck disable=SC2034 # rg_vf_bdfs reads it
RG_BDFS=(0000:1a:00.0 0000:5e:00.0)
RG_ROOT=$V rg_vf_bdfs
eq "VFs of a ConnectX PF (offset 2, stride 1); a PF without SR-IOV has none" \
  "0000:1a:00.2|0000:1a:00.3|0000:1a:00.4 3" "${RG_VF_KERNELS[*]} $RG_VF_N"
RG_BDFS=(0000:3c:00.1 0001:ff:00.0)
RG_ROOT=$V rg_vf_bdfs
eq "stride 2 across devices; one line per PF; none past the last bus" \
  "0000:3c:01.0|0000:3c:01.2 0001:ff:1f.7 3" "${RG_VF_KERNELS[*]} $RG_VF_N"
echo 0 >"$V/sys/bus/pci/devices/0000:1a:00.0/sriov_offset"
# shellcheck disable=SC2034 # rg_vf_bdfs reads it
RG_BDFS=(0000:1a:00.0)
RG_ROOT=$V rg_vf_bdfs
eq "offset 0: no VF can be placed" " 0" "${RG_VF_KERNELS[*]-} $RG_VF_N"

# --- the summary's change texts (lib.sh) -----------------------------------------------------------
RG_ASCII=no
rg_symbols
rg_change_text 1500 4200
eq "change text short" "1500 → 4200" "$REPLY"
rg_change_text "" 106
eq "change text unset" "unset → 106" "$REPLY"
rg_change_text "$default_map" "${default_map/26:3/26:5}"
eq "change text of a whole map: the entries that differ" "…,26:3 → …,26:5" "$REPLY"
rg_change_text none "$default_map"
eq "change text from no map" "none → 64 entries" "$REPLY"

RG_ASCII=yes
rg_symbols
rg_change_text "$default_map" "${default_map/26:3/26:5}"
eq "change text on a plain console" "...,26:3 -> ...,26:5" "$REPLY"

done_testing

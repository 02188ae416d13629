#!/usr/bin/env bash
# Self-test of the simulated-host harness (fakehost.sh and stubs/stub): builds an OFED and
# an inbox fake host in a temporary folder, drives every stand-in and fakehost.sh
# command, and compares exit statuses, exact output (tabs and trailing spaces included),
# the state files and the stub log. Prints "N passed, M failed"; exits 1 on any failure.
# Needs bash, coreutils and jq (to parse the log); shellcheck when installed.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FH=$HERE/fakehost.sh
T=$(mktemp -d)
trap 'rm -rf -- "$T"' EXIT
pass=0 fail=0

# ---------------------------------------------------------------------------------------
# assertion helpers

eq() { # NAME WANT GOT
  if [[ $2 == "$3" ]]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    printf 'FAIL %s\n' "$1"
    diff -u --label want --label got <(printf '%s\n' "$2") <(printf '%s\n' "$3") | sed 's/^/    /'
  fi
}
yes_() { # NAME COMMAND...: the command must succeed
  if "${@:2}"; then eq "$1" ok ok; else eq "$1" 'command succeeds' "command failed: ${*:2}"; fi
}
lines() { printf '%s\n' "$@"; }
val() { # FILE: its content, trailing newlines dropped (as sysfs readers see it)
  local v=''
  IFS= read -r -d '' v <"$1" || true
  while [[ $v == *$'\n' ]]; do v=${v%$'\n'}; done
  printf '%s' "$v"
}

# call ROOT CMD...: run CMD against a fake root as the generated scripts would; sets
# RC, OUT and ERR (exact, trailing newlines kept).
call() {
  local root=$1
  shift
  ROCE_GEN_ROOT=$root PATH=$root/bin:/usr/bin:/bin STUB_LOG=$root/stub.log "$@" >"$T/out" 2>"$T/err"
  RC=$?
  OUT='' ERR=''
  IFS= read -r -d '' OUT <"$T/out" || true
  IFS= read -r -d '' ERR <"$T/err" || true
}
expect() { # NAME RC STDOUT [STDERR]
  eq "$1: exit status" "$2" "$RC"
  eq "$1: stdout" "$3" "$OUT"
  if (($# > 3)); then eq "$1: stderr" "$4" "$ERR"; fi
}

# ---------------------------------------------------------------------------------------
# lint: shellcheck, bash -n, and no construct newer than bash 4.2 (RHEL 7)

FILES=("$HERE/stubs/stub" "$FH" "$HERE/selftest.sh")
for f in "${FILES[@]}"; do
  yes_ "bash -n ${f##*/}" bash -n "$f"
done
if command -v shellcheck >/dev/null; then
  eq 'shellcheck -s bash: no findings' '' "$(shellcheck -s bash "${FILES[@]}" 2>&1)"
else
  echo 'SKIP shellcheck (not installed)'
fi
# Patterns are written so that they do not match themselves.
newer='(declare|local|typeset)[[:space:]]+-n|(mapfile|readarray)[[:space:]]+-d|wait[[:space:]]+-n'
newer+='|\$\{[^}]*@[QEPAaULuK]\}|\$\{[A-Za-z_][A-Za-z0-9_]*\[-[0-9]|EPOCH(SECONDS|REALTIME)|S[R]ANDOM'
newer+='|BASH_ARGV[0]|inherit_errexi[t]|localvar_inheri[t]|^[[:space:]]*local[[:space:]]+-[[:space:]]*$'
eq 'no bash>4.2 constructs' '' "$(grep -nE "$newer" "${FILES[@]}")"

# ---------------------------------------------------------------------------------------
# fakehost.sh create

NIC0=mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:01:00:00
NIC1=mlx5_1:ens1f1np1:0000:1a:00.1:b8:3f:d2:01:00:01
NIC3=mlx5_3:ens3np0:0000:3b:00.0:b8:3f:d2:01:00:03
O=$T/ofed I=$T/inbox
"$FH" create "$O" --kind ofed --host gpu-001.example.net --nic "$NIC0" --nic "$NIC1" --nic "$NIC3" --missing mlx5_3
eq 'create ofed: exit status' 0 $?
"$FH" create "$I" --kind inbox --host gpu-002 --nic mlx5_0:ens1f0np0:0000:1a:00.0:B8:3F:D2:02:00:00
eq 'create inbox: exit status' 0 $?

eq 'ofed bin/' 'cma_roce_mode cma_roce_tos dcb ethtool hostname ibdev2netdev ip mlnx_qos modprobe ofed_info stub systemctl' \
  "$(cd "$O/bin" && echo *)"
eq 'inbox bin/' 'dcb ethtool hostname ip modprobe stub systemctl' "$(cd "$I/bin" && echo *)"
eq 'no absolute symlink in the tree' '' "$(find "$O" "$I" -type l -lname '/*')"

IBD=$O/sys/class/infiniband/mlx5_0 NETD=$O/sys/class/net/ens1f0np0
for kv in "$IBD/fw_ver=28.39.1002" "$IBD/board_id=MT_0000000838" "$IBD/node_type=1: CA" \
  "$IBD/ports/1/state=4: ACTIVE" "$IBD/ports/1/phys_state=5: LinkUp" "$IBD/ports/1/link_layer=Ethernet" \
  "$IBD/ports/1/gid_attrs/ndevs/0=ens1f0np0" "$IBD/ports/1/gid_attrs/types/1=RoCE v2" \
  "$IBD/ports/1/gids/0=fe80:0000:0000:0000:ba3f:d2ff:fe01:0000" "$IBD/tc/1/traffic_class=" \
  "$NETD/mtu=1500" "$NETD/operstate=up" "$NETD/address=b8:3f:d2:01:00:00" "$NETD/ifindex=2" \
  "$NETD/qos/trust=pcp" "$NETD/qos/pfc=0,0,0,0,0,0,0,0" "$NETD/ecn/roce_np/enable/3=1" \
  "$NETD/ecn/roce_rp/enable/0=1" "$NETD/ecn/roce_np/cnp_dscp=48" "$NETD/ecn/roce_np/cnp_802p_prio=6" \
  "$O/sys/class/net/ens1f1np1/ifindex=3" "$O/sys/class/infiniband/mlx5_0/device/vendor=0x15b3" \
  "$O/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode=IB/RoCE v1" \
  "$O/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos=0" \
  "$O/sys/module/rdma_cm/initstate=live" "$O/sys/module/mlx5_core/version=24.10-1.1.4" \
  "$O/.fake/ofed_version=MLNX_OFED_LINUX-24.10-1.1.4.0:" "$O/.fake/hostname=gpu-001.example.net" \
  "$O/.fake/net/ens1f0np0/pause=on on off" "$O/.fake/net/ens1f0np0/addrs=" \
  "$I/sys/class/net/ens1f0np0/address=b8:3f:d2:02:00:00" "$I/.fake/dcb/ens1f0np0/pfc=0,0,0,0,0,0,0,0" \
  "$I/.fake/dcb/ens1f0np0/dscp-prio=" "$I/proc/sys/kernel/osrelease=5.15.0-105-generic" \
  "$IBD/ports/1/hw_counters/np_cnp_sent=1200" "$IBD/ports/1/hw_counters/out_of_sequence=0" \
  "$O/sys/class/infiniband/mlx5_1/ports/1/hw_counters/rp_cnp_handled=901" "$O/.fake/net/ens1f0np0/lanes=4"; do
  eq "create: ${kv%%=*}" "${kv#*=}" "$(val "${kv%%=*}")"
done
eq 'create: dscp2prio has 64 default lines' '64 26 3' \
  "$(wc -l <"$NETD/qos/dscp2prio") $(grep '^26 ' "$NETD/qos/dscp2prio")"
eq 'create: configfs in proc/mounts' 1 "$(grep -c ' /sys/kernel/config configfs ' "$O/proc/mounts")"
eq 'create: os-release' 'ID="rhel"' "$(grep '^ID=' "$O/etc/os-release")"
eq 'create: ibdev -> netdev via device/net' ens1f0np0 "$(ls "$IBD/device/net")"
eq 'create: netdev -> ibdev via device/infiniband' mlx5_0 "$(ls "$NETD/device/infiniband")"
eq 'create: netdev -> PCI address' 0000:1a:00.0 "$(basename "$(readlink -f "$NETD/device")")"
eq 'create: PCI driver link' mlx5_core "$(basename "$(readlink -f "$NETD/device/driver")")"
eq 'create: --missing leaves the NIC out' 'absent absent absent' \
  "$(for p in sys/class/infiniband/mlx5_3 sys/class/net/ens3np0 sys/kernel/config/rdma_cm/mlx5_3; do
    [[ -e $O/$p ]] && printf 'present ' || printf 'absent '
  done | sed 's/ $//')"
eq 'create inbox: no OFED sysfs' 'absent absent absent absent' \
  "$(for p in sys/class/net/ens1f0np0/qos sys/class/net/ens1f0np0/ecn sys/class/infiniband/mlx5_0/tc .fake/ofed_version; do
    [[ -e $I/$p ]] && printf 'present ' || printf 'absent '
  done | sed 's/ $//')"

"$FH" create "$T/nonic" --kind inbox --host h
eq 'create a host without NIC' '0 ' "$? $(ls "$T/nonic/sys/class/infiniband")"
for bad in "--kind rhel --host h --nic $NIC0" "--kind ofed --nic $NIC0" \
  "--kind ofed --host h --nic mlx5_0:ens1:0000:1a:00.0" "--kind ofed --host h --nic mlx5_0:e1:0000:1a:00.0:zz:3f:d2:01:00:00" \
  "--kind ofed --host h --nic $NIC0 --nic $NIC0" "--kind ofed --host h --bogus 1"; do
  # shellcheck disable=SC2086 # word splitting of the option string is intended
  "$FH" create "$T/bad.$RANDOM" $bad 2>/dev/null
  eq "create refuses: $bad" 2 $?
done
"$FH" create "$O" --kind ofed --host x --nic "$NIC0" 2>/dev/null
eq 'create refuses a non-empty ROOT' 2 $?

# ---------------------------------------------------------------------------------------
# mlnx_qos

TC_LINES=$(lines 'tc: 0 ratelimit: unlimited, tsa: vendor' $'\t priority:  1' \
  'tc: 1 ratelimit: unlimited, tsa: vendor' $'\t priority:  0' \
  'tc: 2 ratelimit: unlimited, tsa: vendor' $'\t priority:  2' \
  'tc: 3 ratelimit: unlimited, tsa: vendor' $'\t priority:  3' \
  'tc: 4 ratelimit: unlimited, tsa: vendor' $'\t priority:  4' \
  'tc: 5 ratelimit: unlimited, tsa: vendor' $'\t priority:  5' \
  'tc: 6 ratelimit: unlimited, tsa: vendor' $'\t priority:  6' \
  'tc: 7 ratelimit: unlimited, tsa: vendor' $'\t priority:  7')
PFC_HEAD=$(lines 'Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=262016' \
  'Cable len: 7' 'PFC configuration:' $'\tpriority    0   1   2   3   4   5   6   7')
PFC_OFF=$(lines $'\tenabled     0   0   0   0   0   0   0   0   ' $'\tbuffer      0   0   0   0   0   0   0   0   ')
PFC_3=$(lines $'\tenabled     0   0   0   1   0   0   0   0   ' $'\tbuffer      0   0   0   1   0   0   0   0   ')
D2P_DEFAULT=$(lines 'dscp2prio mapping:' $'\tprio:0 dscp:07,06,05,04,03,02,01,00,' \
  $'\tprio:1 dscp:15,14,13,12,11,10,09,08,' $'\tprio:2 dscp:23,22,21,20,19,18,17,16,' \
  $'\tprio:3 dscp:31,30,29,28,27,26,25,24,' $'\tprio:4 dscp:39,38,37,36,35,34,33,32,' \
  $'\tprio:5 dscp:47,46,45,44,43,42,41,40,' $'\tprio:6 dscp:55,54,53,52,51,50,49,48,' \
  $'\tprio:7 dscp:63,62,61,60,59,58,57,56,')
NOT_SUPPORTED=$(lines 'Priority trust state is not supported on your system' \
  'Buffers commands are not supported on your system' 'Rate limit is not supported on your system!' \
  'ETS features are not supported on your system')

call "$O" mlnx_qos -i ens1f0np0
expect 'mlnx_qos show (pcp)' 0 "$(lines 'DCBX mode: OS controlled' 'Priority trust state: pcp')
$PFC_HEAD
$PFC_OFF
$TC_LINES
" ''
call "$O" mlnx_qos -i ens1f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0
expect 'mlnx_qos --trust dscp --pfc' 0 "$(lines 'DCBX mode: OS controlled' 'Priority trust state: dscp')
$D2P_DEFAULT
$PFC_HEAD
$PFC_3
$TC_LINES
" ''
eq 'mlnx_qos wrote qos/trust' dscp "$(val "$NETD/qos/trust")"
eq 'mlnx_qos wrote qos/pfc' 0,0,0,1,0,0,0,0 "$(val "$NETD/qos/pfc")"
call "$O" mlnx_qos -i ens1f0np0 --dscp2prio set,48,3
eq 'mlnx_qos --dscp2prio set: exit status' 0 "$RC"
eq 'mlnx_qos --dscp2prio set: 9 DSCPs wrap after 8' \
  "$(lines $'\tprio:3 dscp:48,31,30,29,28,27,26,25,' $'\tprio:3 dscp:24,' $'\tprio:4 dscp:39,38,37,36,35,34,33,32,' \
    $'\tprio:5 dscp:47,46,45,44,43,42,41,40,' $'\tprio:6 dscp:55,54,53,52,51,50,49,')" "$(sed -n 7,11p <<<"$OUT")"
eq 'mlnx_qos --dscp2prio set: qos/dscp2prio' '48 3' "$(grep '^48 ' "$NETD/qos/dscp2prio")"
call "$O" mlnx_qos -i ens1f0np0 --dscp2prio del,48,3
eq 'mlnx_qos --dscp2prio del is a no-op with the sysfs backend' '0 48 3' "$RC $(grep '^48 ' "$NETD/qos/dscp2prio")"
call "$O" mlnx_qos -i ens1f0np0 --trust dscp --dscp2prio set,1,1
expect 'mlnx_qos --trust with --dscp2prio' 1 $'trust and dscp2prio commands cannot be used at the same time.\n'
call "$O" mlnx_qos -i ens1f0np0 --pfc 0,0,1
expect 'mlnx_qos --pfc short list' 1 $'pfc list must have 8 items\n'
call "$O" mlnx_qos -i ens1f0np0 --pfc 0,0,0,2,0,0,0,0
expect 'mlnx_qos --pfc bad value' 1 $'Bad value for PFC: 2 is not in the range 0..1\nUsage: mlnx_qos -i <interface> [options]\n\n'
call "$O" mlnx_qos -i ens1f0np0 --trust foo
expect 'mlnx_qos --trust foo' 1 $'Invalid trust state command. Refer to the help.\n'
call "$O" mlnx_qos --trust dscp
expect 'mlnx_qos without -i' 1 $'Interface name is required\nUsage: mlnx_qos -i <interface> [options]\n\n'
call "$O" mlnx_qos -i nosuch0
expect 'mlnx_qos unknown interface' 1 "$NOT_SUPPORTED"$'\n'
call "$O" mlnx_qos -i ens1f0np0 -p 0,1,2,3,4,5,6,7
expect 'mlnx_qos unmodelled option' 2 '' $'stub mlnx_qos: not implemented: -p\n'
call "$O" mlnx_qos --version
expect 'mlnx_qos --version' 0 $'mlnx_qos 1.2\n'

touch "$O/.fake/no-dcb"
call "$O" mlnx_qos -i ens1f0np0
expect 'mlnx_qos no-dcb show' 1 "$NOT_SUPPORTED"$'\n' ''
call "$O" mlnx_qos -i ens1f1np1 --trust dscp
expect 'mlnx_qos no-dcb --trust' 1 $'Priority trust state is not supported on your system\n'
eq 'mlnx_qos no-dcb left trust alone' pcp "$(val "$O/sys/class/net/ens1f1np1/qos/trust")"
call "$O" mlnx_qos -i ens1f1np1 --pfc 0,0,0,1,0,0,0,0
expect 'mlnx_qos no-dcb --pfc' 1 '' $'OSError: Netlink error: Operation not supported (95)\nTypeError: can only concatenate str (not "OSError") to str\n'
rm "$O/.fake/no-dcb"

echo fw >"$O/.fake/net/ens1f1np1/dcbx"
touch "$O/.fake/systemd/active/lldpad.service"
call "$O" mlnx_qos -i ens1f1np1
eq 'mlnx_qos lldpad warning and firmware DCBX' \
  "$(lines '****** WARNING: lldpad service is running and may overwrite your settings ******' '' 'DCBX mode: Firmware controlled')" \
  "$(head -3 <<<"$OUT")"
rm "$O/.fake/net/ens1f1np1/dcbx" "$O/.fake/systemd/active/lldpad.service"

# ---------------------------------------------------------------------------------------
# ibdev2netdev, ofed_info, cma_roce_mode, cma_roce_tos

call "$O" ibdev2netdev
expect 'ibdev2netdev' 0 $'mlx5_0 port 1 ==> ens1f0np0 (Up)\nmlx5_1 port 1 ==> ens1f1np1 (Up)\n' ''
echo down >"$O/sys/class/net/ens1f1np1/operstate"
call "$O" ibdev2netdev
expect 'ibdev2netdev link down' 0 $'mlx5_0 port 1 ==> ens1f0np0 (Up)\nmlx5_1 port 1 ==> ens1f1np1 (Down)\n'
echo up >"$O/sys/class/net/ens1f1np1/operstate"

call "$O" ofed_info -s
expect 'ofed_info -s' 0 $'MLNX_OFED_LINUX-24.10-1.1.4.0:\n' ''
call "$O" ofed_info -n
expect 'ofed_info -n' 0 $'24.10-1.1.4.0\n'
eq 'inbox host has no ofed_info' absent "$(PATH=$I/bin command -v ofed_info || echo absent)"

call "$O" cma_roce_mode -d mlx5_0 -p 1
expect 'cma_roce_mode show' 0 $'IB/RoCE v1\n' ''
call "$O" cma_roce_mode -d mlx5_0 -p 1 -m 2
expect 'cma_roce_mode -m 2' 0 $'RoCE v2\n'
eq 'cma_roce_mode wrote configfs' 'RoCE v2' "$(val "$O/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode")"
call "$O" cma_roce_mode -d mlx5_0 -p 1 -m 1
expect 'cma_roce_mode -m 1' 0 $'IB/RoCE v1\n'
call "$O" cma_roce_tos -d mlx5_0 -p 1 -t 106
expect 'cma_roce_tos -t 106' 0 $'106\n' ''
eq 'cma_roce_tos wrote configfs' 106 "$(val "$O/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos")"
call "$O" cma_roce_tos -d mlx5_0 -p 1 -t 300
expect 'cma_roce_tos out of range (real script still exits 0)' 0 $'106\n' $'cma_roce_tos: line 1: echo: write error: Invalid argument\n'
call "$O" cma_roce_tos -d mlx5_3 -p 1
expect 'cma_roce_tos unknown device' 1 $'Device mlx5_3 port 1 does not exist\n'
call "$O" cma_roce_mode -d ../../x -p 1 -m 2
expect 'cma_roce_mode refuses a path as device' 1 $'Device ../../x port 1 does not exist\n'

# ---------------------------------------------------------------------------------------
# ethtool

ETHI=$(lines 'driver: mlx5_core' 'version: 24.10-1.1.4' 'firmware-version: 28.39.1002 (MT_0000000838)' \
  'expansion-rom-version: ' 'bus-info: 0000:1a:00.1' 'supports-statistics: yes' 'supports-test: yes' \
  'supports-eeprom-access: no' 'supports-register-dump: no' 'supports-priv-flags: yes')
call "$O" ethtool -i ens1f1np1
expect 'ethtool -i (OFED)' 0 "$ETHI"$'\n' ''
call "$I" ethtool -i ens1f0np0
eq 'ethtool -i (inbox) reports the kernel release' 'version: 5.15.0-105-generic' "$(sed -n 2p <<<"$OUT")"
call "$O" ethtool -a ens1f0np0
expect 'ethtool -a' 0 $'Pause parameters for ens1f0np0:\nAutonegotiate:\toff\nRX:\t\ton\nTX:\t\ton\n' ''
call "$O" ethtool -A ens1f0np0 autoneg off rx off tx off
expect 'ethtool -A' 0 '' ''
eq 'ethtool -A state' 'off off off' "$(val "$O/.fake/net/ens1f0np0/pause")"
call "$O" ethtool -a ens1f0np0
expect 'ethtool -a after -A' 0 $'Pause parameters for ens1f0np0:\nAutonegotiate:\toff\nRX:\t\toff\nTX:\t\toff\n'
call "$O" ethtool -i nosuch0
expect 'ethtool -i unknown' 71 '' $'Cannot get driver information: No such device\n'
call "$O" ethtool -a nosuch0
expect 'ethtool -a unknown' 1 '' $'netlink error: no device matches name (offset 24)\nnetlink error: No such device\n'
call "$O" ethtool -A nosuch0 rx off
eq 'ethtool -A unknown: exit status' 76 "$RC"
call "$O" ethtool -S ens1f1np1
expect 'ethtool -S' 0 "$(lines 'NIC statistics:' '     rx_packets: 123456' '     tx_packets: 654321' \
  '     rx_pause_ctrl_phy: 0' '     tx_pause_ctrl_phy: 0' '     rx_prio3_pause: 10' '     tx_prio3_pause: 20')"$'\n' ''
call "$O" ethtool -g ens1f0np0
expect 'ethtool -g is not modelled' 2 '' $'stub ethtool: not implemented: -g ens1f0np0\n'
call "$O" ethtool ens1f0np0
eq 'ethtool IF: status' 0 "$RC"
eq 'ethtool IF: link modes, speed, lanes' "$(lines $'\tSupported link modes:   25000baseCR4/Full' \
  $'\t                        400000baseCR4/Full' $'\tSpeed: 400000Mb/s' $'\tLanes: 4' $'\tLink detected: yes')" \
  "$(grep -E 'Supported link modes|400000base|Speed|Lanes|Link detected' <<<"$OUT")"
call "$O" ethtool -m ens1f0np0
eq 'ethtool -m: status' 0 "$RC"
eq 'ethtool -m (CMIS): module lines' "$(lines $'\tVendor name                               : NVIDIA' \
  $'\tVendor PN                                 : MMA4Z00-NS400' \
  $'\tModule temperature                        : 40.50 degrees C / 104.90 degrees F' \
  $'\tTransmit avg optical power (Channel 1)    : 0.8913 mW / -0.50 dBm' \
  $'\tRcvr signal avg optical power (Channel 4) : 0.7568 mW / -1.21 dBm' \
  $'\tLaser rx power low warning threshold      : 0.1023 mW / -9.90 dBm')" \
  "$(grep -E 'Vendor (name|PN)|temperature  |power \(Channel 1\)|power \(Channel 4\)|rx power low warning' <<<"$OUT" | grep -v 'Transmit.*Channel 4\|Rcvr.*Channel 1')"
printf 'layout=sff8636\nvendor=Mellanox\npn=MCP1650-V001E30\nrx=-inf\n' >"$O/.fake/net/ens1f1np1/module"
call "$O" ethtool -m ens1f1np1
eq 'ethtool -m (SFF-8636): no space before (Channel, -inf for no light' \
  $'\tRcvr signal avg optical power(Channel 1)  : 0.0000 mW / -inf dBm' "$(grep Rcvr <<<"$OUT")"
rm "$O/.fake/net/ens1f1np1/module"
call "$O" ethtool -m ens1f1np1
expect 'ethtool -m without module access' 1 '' $'Cannot get module EEPROM information: Operation not supported\n'

# lldpcli and lldptool
call "$O" lldpcli -f keyvalue show neighbors
eq 'no lldpcli without --lldp' 127 "$RC"
"$FH" create "$T/lldpd" --kind ofed --host gpu-009 --nic "$NIC0" --nic "$NIC1" --lldp lldpd
eq 'create --lldp lldpd' 'lldpcli lldpd.service' "$(cd "$T/lldpd" && echo bin/lldp* | sed 's|bin/||') $(ls "$T/lldpd/.fake/systemd/active")"
call "$T/lldpd" lldpcli -f keyvalue show neighbors ports ens1f1np1
expect 'lldpcli keyvalue' 0 "$(lines 'lldp.ens1f1np1.via=LLDP' 'lldp.ens1f1np1.rid=1' 'lldp.ens1f1np1.age=0 day, 01:02:03' \
  'lldp.ens1f1np1.chassis.mac=0c:42:a1:00:00:01' 'lldp.ens1f1np1.chassis.name=leaf-2' \
  'lldp.ens1f1np1.chassis.descr=SONiC Software Version: SONiC.202311' 'lldp.ens1f1np1.port.ifname=Eth1/1' \
  'lldp.ens1f1np1.port.descr=gpu-009:ens1f1np1' 'lldp.ens1f1np1.port.ttl=120')"$'\n' ''
call "$T/lldpd" lldpcli -f json show neighbors
if command -v jq >/dev/null; then
  eq 'lldpcli json: a list of single-key interface objects' 'ens1f0np0 leaf-1 Eth1/1|ens1f1np1 leaf-2 Eth1/1' \
    "$(jq -r '[.lldp.interface[] | to_entries[0] | "\(.key) \(.value.chassis | keys[0]) \(.value.port.id.value)"] | join("|")' <<<"$OUT")"
fi
rm "$T/lldpd/.fake/systemd/active/lldpd.service"
call "$T/lldpd" lldpcli -f keyvalue show neighbors
eq 'lldpcli without the daemon' 1 "$RC"
"$FH" create "$T/lldpad" --kind inbox --host gpu-010 --nic "$NIC0" --lldp lldpad
printf 'switch=leaf-7.example.net\nport=Ethernet28\nport_type=local\ndescr=0/28\n' >"$T/lldpad/.fake/lldp/ens1f0np0"
call "$T/lldpad" lldptool -t -n -i ens1f0np0
expect 'lldptool TLVs' 0 "$(lines 'Chassis ID TLV' $'\tMAC: 0c:42:a1:00:00:01' 'Port ID TLV' $'\tLocal: Ethernet28' \
  'Time to Live TLV' $'\t120' 'Port Description TLV' $'\t0/28' 'System Name TLV' $'\tleaf-7.example.net' \
  'System Description TLV' $'\tSONiC Software Version: SONiC.202311' 'End of LLDPDU TLV')"$'\n' ''
"$FH" create "$T/bad.lldp" --kind inbox --host h --lldp cdp 2>/dev/null
eq 'create refuses an unknown --lldp' 2 $?

# ---------------------------------------------------------------------------------------
# ip

printf '10.0.0.5/24\nfd00::5/64\n' >"$O/.fake/net/ens1f0np0/addrs"
LINK0='2: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP mode DEFAULT group default qlen 1000'
call "$O" ip -o link show dev ens1f0np0
expect 'ip -o link show' 0 "$LINK0\\    link/ether b8:3f:d2:01:00:00 brd ff:ff:ff:ff:ff:ff"$'\n' ''
call "$O" ip link show
eq 'ip link show (all, ifindex order)' "$(lines "$LINK0" '    link/ether b8:3f:d2:01:00:00 brd ff:ff:ff:ff:ff:ff' \
  '3: ens1f1np1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP mode DEFAULT group default qlen 1000' \
  '    link/ether b8:3f:d2:01:00:01 brd ff:ff:ff:ff:ff:ff')"$'\n' "$OUT"
call "$O" ip -j link show dev ens1f0np0
expect 'ip -j link show' 0 '[{"ifindex":2,"ifname":"ens1f0np0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"qdisc":"mq","operstate":"UP","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"b8:3f:d2:01:00:00","broadcast":"ff:ff:ff:ff:ff:ff"}]'$'\n'
call "$O" ip -o addr show dev ens1f0np0
expect 'ip -o addr show' 0 "$(lines '2: ens1f0np0    inet 10.0.0.5/24 scope global ens1f0np0\       valid_lft forever preferred_lft forever' \
  '2: ens1f0np0    inet6 fd00::5/64 scope global \       valid_lft forever preferred_lft forever')"$'\n' ''
call "$O" ip addr show dev ens1f0np0
expect 'ip addr show' 0 "$(lines '2: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP group default qlen 1000' \
  '    link/ether b8:3f:d2:01:00:00 brd ff:ff:ff:ff:ff:ff' '    inet 10.0.0.5/24 scope global ens1f0np0' \
  '       valid_lft forever preferred_lft forever' '    inet6 fd00::5/64 scope global ' \
  '       valid_lft forever preferred_lft forever')"$'\n'
call "$O" ip -j addr show dev ens1f0np0
expect 'ip -j addr show' 0 '[{"ifindex":2,"ifname":"ens1f0np0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"qdisc":"mq","operstate":"UP","group":"default","txqlen":1000,"link_type":"ether","address":"b8:3f:d2:01:00:00","broadcast":"ff:ff:ff:ff:ff:ff","addr_info":[{"family":"inet","local":"10.0.0.5","prefixlen":24,"scope":"global","label":"ens1f0np0","valid_life_time":4294967295,"preferred_life_time":4294967295},{"family":"inet6","local":"fd00::5","prefixlen":64,"scope":"global","valid_life_time":4294967295,"preferred_life_time":4294967295}]}]'$'\n'
eq 'ip -j addr show parses' '10.0.0.5/24 fd00::5/64' "$(jq -r '[.[0].addr_info[] | "\(.local)/\(.prefixlen)"] | join(" ")' <<<"$OUT")"
call "$O" ip -j addr show dev ens1f1np1
eq 'ip -j addr show without address' '[]' "$(jq -c '.[0].addr_info' <<<"$OUT")"
echo down >"$O/sys/class/net/ens1f1np1/operstate"
call "$O" ip -o link show dev ens1f1np1
eq 'ip link show of a link without carrier' \
  '3: ens1f1np1: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc mq state DOWN mode DEFAULT group default qlen 1000' \
  "${OUT%%\\*}"
echo up >"$O/sys/class/net/ens1f1np1/operstate"
call "$O" ip link set dev ens1f0np0 mtu 4200
expect 'ip link set mtu' 0 '' ''
eq 'ip link set mtu: sysfs' 4200 "$(val "$NETD/mtu")"
call "$O" ip link set dev ens1f0np0 mtu 9979
expect 'ip link set mtu too big' 2 '' $'Error: mtu greater than device maximum.\n'
call "$O" ip link set dev ens1f0np0 mtu 4k
expect 'ip link set mtu not a number' 255 '' $'Error: argument "4k" is wrong: Invalid "mtu" value\n\n'
call "$O" ip link set dev nosuch0 mtu 4200
expect 'ip link set unknown device' 1 '' $'Cannot find device "nosuch0"\n'
call "$O" ip -o addr show dev nosuch0
expect 'ip addr show unknown device' 1 '' $'Device "nosuch0" does not exist.\n'
call "$O" ip route show
expect 'ip route is not modelled' 2 '' $'stub ip: not implemented: route\n'

# ---------------------------------------------------------------------------------------
# dcb (inbox backend, then the OFED coupling)

call "$I" dcb pfc show dev ens1f0np0
expect 'dcb pfc show' 0 $'pfc-cap 8 macsec-bypass off delay 0 \nprio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off \n' ''
call "$I" dcb pfc set dev ens1f0np0 prio-pfc all:off 3:on
expect 'dcb pfc set' 0 '' ''
eq 'dcb pfc set: state' 0,0,0,1,0,0,0,0 "$(val "$I/.fake/dcb/ens1f0np0/pfc")"
call "$I" dcb pfc show dev ens1f0np0 prio-pfc
expect 'dcb pfc show prio-pfc' 0 $'prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n'
call "$I" dcb -j pfc show dev ens1f0np0
expect 'dcb -j pfc show' 0 $'{"pfc_cap":8,"macsec_bypass":false,"delay":0,"prio_pfc":[false,false,false,true,false,false,false,false]}\n'
call "$I" dcb pfc set dev ens1f0np0 prio-pfc 9:on
expect 'dcb pfc set bad priority' 1 '' $'In PRIO:PFC mapping, PRIO is expected to be 0..7\nInvalid pfc mapping 9:on\n'
call "$I" dcb app show dev ens1f0np0 dscp-prio
expect 'dcb app show (empty)' 0 '' ''
call "$I" dcb app add dev ens1f0np0 dscp-prio 26:3 48:6
expect 'dcb app add' 0 '' ''
call "$I" dcb app show dev ens1f0np0 dscp-prio
expect 'dcb app show (names)' 0 $'dscp-prio AF31:3 CS6:6 \n'
call "$I" dcb -N app show dev ens1f0np0 dscp-prio
expect 'dcb -N app show' 0 $'dscp-prio 26:3 48:6 \n'
call "$I" dcb -j app show dev ens1f0np0 dscp-prio
expect 'dcb -j app show' 0 $'{"dscp_prio":[[26,3],[48,6]]}\n'
call "$I" dcb app replace dev ens1f0np0 dscp-prio AF31:5 0:0
expect 'dcb app replace' 0 '' ''
call "$I" dcb app show dev ens1f0np0
expect 'dcb app show after replace' 0 $'dscp-prio default:0 AF31:5 CS6:6 \n'
call "$I" dcb app del dev ens1f0np0 dscp-prio 26:3
expect 'dcb app del of an absent entry' 1 '' $'Attribute write: No such file or directory\n'
call "$I" dcb app del dev ens1f0np0 dscp-prio 26:5 48:6
expect 'dcb app del' 0 '' ''
call "$I" dcb -jN app show dev ens1f0np0
expect 'dcb -jN app show' 0 $'{"dscp_prio":[[0,0]]}\n'
call "$I" dcb app flush dev ens1f0np0
call "$I" dcb -j app show dev ens1f0np0
expect 'dcb app flush' 0 $'{}\n'
call "$I" dcb app show dev nosuch0
expect 'dcb unknown device' 1 '' $'Attribute read: No such device\n'
call "$I" dcb ets show dev ens1f0np0
expect 'dcb ets is not modelled' 2 '' $'stub dcb: not implemented: ets show dev ens1f0np0\n'
call "$I" dcb help
eq 'dcb help: exit status and usage on stderr' '0 Usage: dcb [ OPTIONS ] OBJECT { COMMAND | help }' "$RC $(head -1 <<<"$ERR")"
touch "$I/.fake/no-dcb"
call "$I" dcb pfc show dev ens1f0np0
expect 'dcb no-dcb show' 1 '' $'Attribute read: Operation not supported\n'
call "$I" dcb app add dev ens1f0np0 dscp-prio 26:3
expect 'dcb no-dcb add' 1 '' $'Attribute write: Operation not supported\n'
rm "$I/.fake/no-dcb"

N1=$O/sys/class/net/ens1f1np1
call "$O" dcb pfc set dev ens1f1np1 prio-pfc 3:on
eq 'dcb on OFED shares qos/pfc with mlnx_qos' "0 0,0,0,1,0,0,0,0 $(lines "$PFC_3" | head -1)" \
  "$RC $(val "$N1/qos/pfc") $(ROCE_GEN_ROOT=$O STUB_LOG=$O/stub.log "$O/bin/mlnx_qos" -i ens1f1np1 | grep enabled)"
call "$O" dcb app add dev ens1f1np1 dscp-prio 26:5
eq 'dcb app add on OFED: trust dscp, dscp2prio 26 5' '0 dscp 26 5' "$RC $(val "$N1/qos/trust") $(grep '^26 ' "$N1/qos/dscp2prio")"
call "$O" dcb app del dev ens1f1np1 dscp-prio 26:5
eq 'dcb app del of the last entry on OFED: trust pcp, dscp2prio 26 0' '0 pcp 26 0' "$RC $(val "$N1/qos/trust") $(grep '^26 ' "$N1/qos/dscp2prio")"

# ---------------------------------------------------------------------------------------
# systemctl, hostname, modprobe

call "$O" systemctl is-enabled roce-gen
expect 'systemctl is-enabled without unit file' 1 '' $'Failed to get unit file state for roce-gen.service: No such file or directory\n'
call "$O" systemctl enable roce-gen.service
expect 'systemctl enable without unit file' 1 '' $'Failed to enable unit: Unit file roce-gen.service does not exist.\n'
printf '[Service]\nType=oneshot\nExecStart=/opt/roce-gen/demo/apply.sh --boot\n[Install]\nWantedBy=multi-user.target\n' \
  >"$O/etc/systemd/system/roce-gen.service"
call "$O" systemctl is-enabled roce-gen.service
expect 'systemctl is-enabled (disabled)' 1 $'disabled\n'
call "$O" systemctl enable roce-gen.service
expect 'systemctl enable' 0 '' $'Created symlink /etc/systemd/system/multi-user.target.wants/roce-gen.service -> /etc/systemd/system/roce-gen.service.\n'
call "$O" systemctl enable roce-gen.service
expect 'systemctl enable again is silent' 0 '' ''
call "$O" systemctl is-enabled roce-gen.service
expect 'systemctl is-enabled' 0 $'enabled\n'
call "$O" systemctl -q is-enabled roce-gen.service
expect 'systemctl -q is-enabled' 0 ''
call "$O" systemctl is-active roce-gen.service
expect 'systemctl is-active (inactive)' 3 $'inactive\n'
call "$O" systemctl start roce-gen.service
call "$O" systemctl is-active roce-gen.service
expect 'systemctl start marks active' 0 $'active\n'
call "$O" systemctl daemon-reload
call "$O" systemctl daemon-reload
eq 'systemctl daemon-reload counter' 2 "$(val "$O/.fake/systemd/daemon-reload")"
call "$O" systemctl disable roce-gen.service
expect 'systemctl disable' 0 '' $'Removed "/etc/systemd/system/multi-user.target.wants/roce-gen.service".\n'
eq 'systemctl disable: state' absent "$([[ -e $O/.fake/systemd/enabled/roce-gen.service ]] && echo present || echo absent)"
printf '[Service]\nExecStart=/bin/true\n' >"$O/etc/systemd/system/noinstall.service"
call "$O" systemctl enable noinstall
eq 'systemctl enable of a unit without [Install]: warns, stays static' '0 static' \
  "$RC $(ROCE_GEN_ROOT=$O STUB_LOG=$O/stub.log "$O/bin/systemctl" is-enabled noinstall)"
call "$O" systemctl reboot
expect 'systemctl reboot is not modelled' 2 '' $'stub systemctl: not implemented: reboot\n'

call "$O" hostname
expect 'hostname' 0 $'gpu-001.example.net\n' ''
call "$O" hostname -s
expect 'hostname -s' 0 $'gpu-001\n'
call "$O" hostname evil
expect 'hostname NAME is refused' 2 '' $'stub hostname: not implemented: evil\n'
call "$I" modprobe rdma_cm
expect 'modprobe' 0 '' ''

# ---------------------------------------------------------------------------------------
# the stub log, the failure and output hooks, safety

: >"$I/stub.log"
call "$I" modprobe -q rdma_cm
call "$I" dcb app add dev ens1f0np0 dscp-prio 26:3
eq 'stub log lines' "$(lines '{"tool":"modprobe","argv":["-q","rdma_cm"]}' \
  '{"tool":"dcb","argv":["app","add","dev","ens1f0np0","dscp-prio","26:3"]}')" "$(val "$I/stub.log")"
HOSTILE=$(printf 'q"b\\s\x01\tn\nutf8:\xc3\xa9 bad:\xff\xc3(')
call "$I" hostname "$HOSTILE"
eq 'stub log escapes hostile argv' '{"tool":"hostname","argv":["q\"b\\s\u0001\tn\nutf8:é bad:\ufffd\ufffd("]}' "$(tail -1 "$I/stub.log")"
if command -v jq >/dev/null; then
  eq 'stub log decodes to argv (invalid bytes as U+FFFD)' "$(printf 'q"b\\s\x01\tn\nutf8:\xc3\xa9 bad:\xef\xbf\xbd\xef\xbf\xbd(')" \
    "$(tail -1 "$I/stub.log" | jq -j '.argv[0]')"
  eq 'every stub log line is valid JSON' 0 "$(cat "$O/stub.log" "$I/stub.log" | jq -c . >/dev/null 2>&1; echo $?)"
else
  echo 'SKIP JSON parsing of the stub log (jq not installed)'
fi

printf 'mlx5_core: firmware timeout\n' >"$I/.fake/fail/ethtool"
call "$I" ethtool -i ens1f0np0
expect 'fail hook' 1 '' $'mlx5_core: firmware timeout\n'
rm "$I/.fake/fail/ethtool"
printf 'EPERM\n' >"$O/.fake/fail/mlnx_qos@--pfc"
call "$O" mlnx_qos -i ens1f0np0 --pfc 0,0,0,0,0,0,0,0
expect 'fail hook TOOL@WORD' 1 '' $'EPERM\n'
eq 'fail hook TOOL@WORD changed nothing' 0,0,0,1,0,0,0,0 "$(val "$NETD/qos/pfc")"
call "$O" mlnx_qos -i ens1f0np0
eq 'fail hook TOOL@WORD spares other calls' 0 "$RC"
rm "$O/.fake/fail/mlnx_qos@--pfc"
printf 'Priority trust state: "dscp\\\x01\xff\n' >"$O/.fake/output/mlnx_qos"
call "$O" mlnx_qos -i ens1f0np0 --trust pcp
expect 'output hook is byte-exact' 0 "$(printf 'Priority trust state: "dscp\\\x01\xff')"$'\n' ''
eq 'output hook changed nothing' dscp "$(val "$NETD/qos/trust")"
printf 'x\n' >"$O/.fake/fail/mlnx_qos"
call "$O" mlnx_qos -i ens1f0np0
eq 'fail hook wins over output hook' 1 "$RC"
rm "$O/.fake/output/mlnx_qos" "$O/.fake/fail/mlnx_qos"

ROCE_GEN_ROOT='' "$O/bin/hostname" >/dev/null 2>&1
eq 'stub refuses an empty ROCE_GEN_ROOT' 2 $?
ROCE_GEN_ROOT=/ "$O/bin/hostname" >/dev/null 2>&1
eq 'stub refuses a root without .fake/' 2 $?
ln -s stub "$O/bin/frobnicate"
call "$O" frobnicate
eq 'unknown tool name' 2 "$RC"
rm "$O/bin/frobnicate"
mv "$O/.fake/ofed_version" "$T/ofed_version"
call "$O" ofed_info -s
expect 'ofed_info without .fake/ofed_version acts as missing' 127 '' $'ofed_info: command not found\n'
mv "$T/ofed_version" "$O/.fake/ofed_version"

# A copied tree is an independent host.
cp -a "$O" "$T/copy"
call "$T/copy" mlnx_qos -i ens1f1np1 --trust dscp
eq 'copied tree works and is independent' 'dscp pcp' \
  "$(val "$T/copy/sys/class/net/ens1f1np1/qos/trust") $(val "$N1/qos/trust")"
rm -r "$T/copy/sys/kernel/config/rdma_cm"
call "$T/copy" cma_roce_tos -d mlx5_0 -p 1
expect 'cma_roce_tos without rdma_cm configfs' 1 $'Module rdma_cm is not loaded or does not support configfs\n'

# ---------------------------------------------------------------------------------------
# fakehost.sh snapshot

"$FH" snapshot "$I" >"$T/before"
eq 'snapshot exit status' 0 $?
eq 'snapshot is sorted' '' "$(LC_ALL=C sort -c "$T/before" 2>&1)"
eq 'snapshot line' 'sys/class/net/ens1f0np0/mtu=1500' "$(grep '^sys/class/net/ens1f0np0/mtu=' "$T/before")"
eq 'snapshot covers .fake/ and sys/ only' '.fake sys' "$(cut -d/ -f1 "$T/before" | uniq | tr '\n' ' ' | sed 's/ $//')"
call "$I" ip link set dev ens1f0np0 mtu 4200
"$FH" snapshot "$I" >"$T/after"
eq 'snapshot diff shows exactly the change' $'-sys/class/net/ens1f0np0/mtu=1500\n+sys/class/net/ens1f0np0/mtu=4200' \
  "$(diff "$T/before" "$T/after" | grep '^[<>]' | sed 's/^< /-/; s/^> /+/')"
printf 'a\\b\tc\nd\n\n' >"$I/.fake/escape"
eq 'snapshot escapes \ newline tab' '.fake/escape=a\\b\tc\nd' "$(grep '^\.fake/escape=' <("$FH" snapshot "$I"))"
eq 'snapshot of chosen folders' 'etc/hostname=gpu-002' "$("$FH" snapshot "$I" etc | grep hostname)"
"$FH" snapshot "$T" >/dev/null 2>&1
eq 'snapshot refuses a non-fake root' 2 $?

# ---------------------------------------------------------------------------------------
# fakehost.sh run

# shellcheck disable=SC2016 # expanded by the inner bash, inside the fake host
"$FH" run "$O" -- bash -c 'printf "%s %s %s\n" "$(hostname)" "$ROCE_GEN_ROOT" "$STUB_LOG"; echo "$PATH"; exit 7' \
  >"$T/out" 2>"$T/err"
eq 'run: exit status is the command'\''s' 7 $?
eq 'run: environment' "$(lines "gpu-001.example.net $O $O/stub.log" "$O/bin:/usr/bin:/bin")" "$(val "$T/out")"
if ((EUID == 0)); then
  eq 'run as root says it is isolated' 'fakehost run: isolated (root: unshare --mount --uts --net --fork)' "$(val "$T/err")"
  eq 'run as root: only lo in the network namespace' 1 \
    "$("$FH" run "$O" -- bash -c 'tail -n +3 /proc/net/dev | wc -l' 2>/dev/null)"
  FAKEHOST_ISOLATION=none "$FH" run "$O" -- true 2>"$T/err"
  eq 'run with FAKEHOST_ISOLATION=none' 'fakehost run: not isolated (FAKEHOST_ISOLATION=none)' "$(val "$T/err")"
  if command -v setpriv >/dev/null; then
    chmod -R a+rwX "$T" # let an unprivileged user read the tree and append to the log
    setpriv --reuid=65534 --regid=65534 --clear-groups "$FH" run "$O" -- hostname >"$T/out" 2>"$T/err"
    eq 'run as non-root: plain' "0 gpu-001.example.net fakehost run: not isolated (not root)" \
      "$? $(val "$T/out") $(val "$T/err")"
  fi
else
  eq 'run as non-root says it is not isolated' 'fakehost run: not isolated (not root)' "$(val "$T/err")"
fi
"$FH" run "$T" -- true 2>/dev/null
eq 'run refuses a non-fake root' 2 $?
"$FH" run "$O" 2>/dev/null
eq 'run without a command' 2 $?
"$FH" 2>/dev/null
eq 'fakehost.sh without a command' 2 $?

# ---------------------------------------------------------------------------------------

printf '%d passed, %d failed\n' "$pass" "$fail"
((fail == 0))

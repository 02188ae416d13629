#!/usr/bin/env bash
# Self-test of the simulated-host harness (fakehost.sh and the stand-ins in stubs/). For
# every file in fixtures/ a fake host is put into the fixture's state through the tools
# themselves and the stand-in's output must equal the fixture byte for byte; then the
# driver's side effects (DCB APP table and trust, PFC vs pause and link flaps, RDMA-CM
# configfs, device mapping) and the rest of the tools, the stub log, the scenario hooks,
# fakehost.sh snapshot and run. Prints "N passed, M failed"; exits 1 on any failure.
# Cases that need the driver filesystem (FUSE, for configfs and sysfs attribute semantics)
# print a SKIP line when it cannot run here; a SKIP is never counted as a pass.
# Needs bash, coreutils and jq (to parse the log).

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FH=$HERE/fakehost.sh
FX=$HERE/fixtures
T=$(mktemp -d)
trap 'rm -rf -- "$T"' EXIT
pass=0 fail=0 skip=0

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
skip() {
  skip=$((skip + 1))
  printf 'SKIP %s\n' "$*"
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
exact() { # FILE: its exact content (for comparing with OUT)
  REPLY=''
  IFS= read -r -d '' REPLY <"$1" || true
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
same() { # NAME FIXTURE FILE: FILE holds FIXTURE byte for byte
  local want
  exact "$FX/$2"
  want=$REPLY
  exact "$3"
  eq "$1 = $2" "$want" "$REPLY"
}
fixture() { # NAME RC FIXTURE [STDERR]: the last call printed FIXTURE byte for byte
  exact "$FX/$3"
  if (($# > 3)); then expect "$1 = $3" "$2" "$REPLY" "$4"; else expect "$1 = $3" "$2" "$REPLY"; fi
}

# The driver filesystem needs root (a mount namespace), FUSE and python3-fusepy.
DRIVERFS=0
if ((EUID == 0)) && [[ -f $HERE/driverfs/driverfs.py && -c /dev/fuse ]] &&
  "${FAKEHOST_PYTHON:-/usr/bin/python3}" -c 'import fusepy' 2>/dev/null; then
  DRIVERFS=1
fi
# krun ROOT CMD...: like call, but through `fakehost.sh run` (the kernel's sysfs/configfs
# semantics from driverfs); the run's own note on stderr is dropped.
krun() {
  local root=$1
  shift
  "$FH" run "$root" -- "$@" >"$T/out" 2>"$T/err"
  RC=$?
  OUT='' ERR=''
  IFS= read -r -d '' OUT <"$T/out" || true
  grep -v '^fakehost run: ' "$T/err" >"$T/err2"
  IFS= read -r -d '' ERR <"$T/err2" || true
}

# ---------------------------------------------------------------------------------------
# lint: bash -n, and no construct newer than bash 4.2 (RHEL 7). shellcheck of these files (every
# optional finding, sources followed) is the test suite's, once for every shell file of tests/
# (scripts::the_test_harness_and_the_tooling_scripts_pass_shellcheck_too), not repeated here under
# each bash: it takes a dozen seconds and its findings do not depend on the bash that runs this.

FILES=("$FH" "$HERE/selftest.sh")
for f in "$HERE"/stubs/*; do FILES+=("$f"); done
for f in "${FILES[@]}"; do
  yes_ "bash -n ${f##*/}" bash -n "$f"
done
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
cp -a "$O" "$T/pristine" # an untouched OFED host, copied for the fixture cases

eq 'ofed bin/' 'cma_roce_mode cma_roce_tos dcb ethtool hostname ib_write_bw ibdev2netdev ip ldconfig mlnx_qos modprobe ofed_info rdma stub systemctl udevadm' \
  "$(cd "$O/bin" && echo *)"
eq 'inbox bin/ (no mlnx_qos: inbox hosts have dcb only)' 'dcb ethtool hostname ip ldconfig modprobe rdma stub systemctl udevadm' "$(cd "$I/bin" && echo *)"
eq 'the stand-ins are copied into lib/fakehost' "$(cd "$HERE/stubs" && echo *)" "$(cd "$O/lib/fakehost" && echo *)"
eq 'no absolute symlink in the tree' '' "$(find "$O" "$I" -type l -lname '/*')"

IBD=$O/sys/class/infiniband/mlx5_0 NETD=$O/sys/class/net/ens1f0np0 DCBD=$O/.fake/dcb/ens1f0np0
for kv in "$IBD/fw_ver=28.39.1002" "$IBD/board_id=MT_0000000838" "$IBD/node_type=1: CA" \
  "$IBD/ports/1/state=4: ACTIVE" "$IBD/ports/1/phys_state=5: LinkUp" "$IBD/ports/1/link_layer=Ethernet" \
  "$IBD/ports/1/gid_attrs/ndevs/0=ens1f0np0" "$IBD/ports/1/gid_attrs/types/1=RoCE v2" \
  "$IBD/ports/1/gids/0=fe80:0000:0000:0000:ba3f:d2ff:fe01:0000" "$IBD/tc/1/traffic_class=" \
  "$NETD/mtu=1500" "$NETD/operstate=up" "$NETD/carrier=1" "$NETD/dev_id=0x0" "$NETD/address=b8:3f:d2:01:00:00" \
  "$NETD/ifindex=2" "$NETD/qos/tc_num=0" "$NETD/qos/maxrate=0 0 0 0 0 0 0 0 " \
  "$NETD/ecn/roce_np/enable/3=1" "$NETD/ecn/roce_rp/enable/0=1" "$NETD/ecn/roce_np/cnp_dscp=48" \
  "$NETD/ecn/roce_np/cnp_802p_prio=6" "$O/sys/class/net/ens1f1np1/ifindex=3" \
  "$O/sys/class/infiniband/mlx5_0/device/vendor=0x15b3" "$O/sys/module/rdma_cm/initstate=live" \
  "$O/sys/module/mlx5_core/version=24.10-1.1.4" "$O/.fake/ofed_version=MLNX_OFED_LINUX-24.10-1.1.4.0:" \
  "$O/.fake/hostname=gpu-001.example.net" "$O/.fake/net/ens1f0np0/pause=on on off" "$O/.fake/net/ens1f0np0/addrs=" \
  "$DCBD/app=" "$DCBD/pfc=0,0,0,0,0,0,0,0" "$DCBD/cable_len=7" "$DCBD/dcbx=host cee ieee" \
  "$I/sys/class/net/ens1f0np0/address=b8:3f:d2:02:00:00" "$I/sys/class/net/ens1f0np0/dev_id=0x0" \
  "$I/.fake/dcb/ens1f0np0/pfc=0,0,0,0,0,0,0,0" "$I/.fake/dcb/ens1f0np0/app=" "$I/proc/sys/kernel/osrelease=5.15.0-105-generic" \
  "$IBD/ports/1/hw_counters/np_cnp_sent=1200" "$IBD/ports/1/hw_counters/out_of_sequence=0" \
  "$O/sys/class/infiniband/mlx5_1/ports/1/hw_counters/rp_cnp_handled=901" "$O/.fake/net/ens1f0np0/lanes=4"; do
  eq "create: ${kv%%=*}" "${kv#*=}" "$(val "${kv%%=*}")"
done
# OFED >= 4.2 has no qos/trust, qos/pfc or qos/dscp2prio: the qos group is en_sysfs.c's.
eq 'create: OFED qos/ holds tc_num, maxrate, prio2buffer, buffer_size only' 'buffer_size maxrate prio2buffer tc_num' \
  "$(cd "$NETD/qos" && echo *)"
eq 'create: qos/prio2buffer (en_sysfs.c format)' "$(printf 'Priority\tBuffer\n'; for p in 0 1 2 3 4 5 6 7; do printf '%d\t\t0\n' "$p"; done)" \
  "$(cat "$NETD/qos/prio2buffer")"
eq 'create: qos/buffer_size (en_sysfs.c format)' "$(printf 'Port buffer size = 262016\nSpare buffer size = 0\nBuffer\tSize\txoff_threshold\txon_threshold\n0\t262016\t0\t\t0\n'
  for b in 1 2 3 4 5 6 7; do printf '%d\t0\t0\t\t0\n' "$b"; done)" "$(cat "$NETD/qos/buffer_size")"
eq 'create: DCQCN parameters at the firmware defaults (OFED)' '5 50 11 1023 4' \
  "$(val "$NETD/ecn/roce_rp/rpg_ai_rate") $(val "$NETD/ecn/roce_rp/rpg_hai_rate") $(val "$NETD/ecn/roce_rp/rpg_gd") $(val "$NETD/ecn/roce_rp/initial_alpha_value") $(val "$NETD/ecn/roce_np/min_time_between_cnps")"
eq 'create: every NIC has the CMIS module dump' '' "$(cmp "$FX/ethtool-m/cmis-400g-4lane.txt" "$O/.fake/net/ens1f1np1/module.txt" 2>&1)"
eq 'create: configfs in proc/mounts' 1 "$(grep -c ' /sys/kernel/config configfs ' "$O/proc/mounts")"
eq 'create: rdma_cm configfs folder, no device folder (mkdir makes those)' '' "$(ls -A "$O/sys/kernel/config/rdma_cm")"
eq 'create: os-release' 'ID="rhel"' "$(grep '^ID=' "$O/etc/os-release")"
eq 'create: ibdev -> netdev via device/net' ens1f0np0 "$(ls "$IBD/device/net")"
eq 'create: netdev -> ibdev via device/infiniband' mlx5_0 "$(ls "$NETD/device/infiniband")"
eq 'create: netdev -> PCI address' 0000:1a:00.0 "$(basename "$(readlink -f "$NETD/device")")"
eq 'create: PCI driver link' mlx5_core "$(basename "$(readlink -f "$NETD/device/driver")")"
eq 'create: --missing leaves the NIC out' 'absent absent absent' \
  "$(for p in sys/class/infiniband/mlx5_3 sys/class/net/ens3np0 .fake/dcb/ens3np0; do
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

# fresh NAME: a new copy of the untouched OFED host (two NICs) in $T/NAME; REPLY = its root.
fresh() {
  REPLY=$T/$1
  cp -a "$T/pristine" "$REPLY"
}

# ---------------------------------------------------------------------------------------
# Every fixture, reproduced by putting a host into its state through the tools

# mlnx_qos: the report after the change, and again on its own
fresh q1
H=$REPLY
call "$H" mlnx_qos -i ens1f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0
fixture 'mlnx_qos --trust dscp --pfc (prints the report)' 0 mlnx_qos/dscp-trust.txt ''
call "$H" mlnx_qos -i ens1f0np0
fixture 'mlnx_qos after --trust dscp --pfc' 0 mlnx_qos/dscp-trust.txt
call "$H" mlnx_qos -i ens1f1np1
fixture 'mlnx_qos on a new port' 0 mlnx_qos/pcp-trust.txt ''
call "$H" mlnx_qos -i ens1f0np0 --dscp2prio set,26,5 --dscp2prio set,48,6
fixture 'mlnx_qos --dscp2prio set,26,5 --dscp2prio set,48,6' 0 mlnx_qos/custom-map.txt ''
call "$H" mlnx_qos -i ens1f1np1 -d fw
fixture 'mlnx_qos -d fw' 0 mlnx_qos/firmware-dcbx.txt ''
eq 'mlnx_qos -d fw: DCBX flags' 'cee ieee' "$(val "$H/.fake/dcb/ens1f1np1/dcbx")"
call "$H" mlnx_qos -i ens1f1np1 -d os
eq 'mlnx_qos -d os takes DCBX back' 'DCBX mode: OS controlled' "${OUT%%$'\n'*}"
"$FH" create "$T/lldpad" --kind ofed --host gpu-010 --nic "$NIC0" --lldp lldpad
call "$T/lldpad" mlnx_qos -i ens1f0np0
fixture 'mlnx_qos with lldpad running' 0 mlnx_qos/lldpad-running.txt ''

# dcb: the same driver
call "$H" dcb app show dev ens1f0np0 dscp-prio
fixture 'dcb app show after the custom map (sorted, rt_dsfield names)' 0 dcb/app-show.txt ''
fresh d1
H=$REPLY
call "$H" mlnx_qos -i ens1f0np0 --trust dscp
call "$H" dcb app replace dev ens1f0np0 dscp-prio 26:5 48:6
expect 'dcb app replace: exit 0 although removing the replaced entry failed' 0 '' \
  $'Error when attempting to set attribute: Unknown error 254\nAttribute write: Success\nCould not remove replaced APP entries\n'
call "$H" dcb app show dev ens1f0np0 dscp-prio
fixture 'dcb app show after dcb app replace' 0 dcb/app-show.txt ''
call "$H" dcb pfc set dev ens1f0np0 prio-pfc all:off 3:on
expect 'dcb pfc set' 0 '' ''
call "$H" dcb pfc show dev ens1f0np0 prio-pfc
fixture 'dcb pfc show prio-pfc' 0 dcb/pfc-show.txt ''
call "$H" dcb dcbx set dev ens1f0np0 host ieee
expect 'dcb dcbx set host ieee' 0 '' ''
call "$H" dcb dcbx show dev ens1f0np0
fixture 'dcb dcbx show' 0 dcb/dcbx-show.txt ''
# the backend probe: `app help` and `dcbx help` (usage on stderr, exit 0); iproute2 5.11's dcb
# has neither object and no -N
call "$H" dcb app help
exact "$FX/dcb/app-help.txt"
expect 'dcb app help' 0 '' "$REPLY"
call "$H" dcb dcbx help
exact "$FX/dcb/dcbx-help.txt"
expect 'dcb dcbx help' 0 '' "$REPLY"
touch "$H/.fake/iproute2-5.11"
call "$H" dcb app help
exact "$FX/dcb/5.11-app-help.txt"
expect 'iproute2 5.11: dcb app help' 1 '' "$REPLY"
call "$H" dcb dcbx show dev ens1f0np0
exact "$FX/dcb/5.11-dcbx-help.txt"
expect 'iproute2 5.11: dcb dcbx (unknown object, whatever follows)' 1 '' "$REPLY"
call "$H" dcb -N app show dev ens1f0np0 dscp-prio
exact "$FX/dcb/5.11-numeric.txt"
expect 'iproute2 5.11: dcb -N' 1 '' "$REPLY"
call "$H" dcb pfc show dev ens1f0np0 prio-pfc
fixture 'iproute2 5.11: dcb pfc show prio-pfc' 0 dcb/pfc-show.txt ''
rm "$H/.fake/iproute2-5.11"

# mlnx_qos, dcb and sysfs: the cable length, the receive buffers, the GID table
fresh q2
H=$REPLY
call "$H" mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0 --cable_len 30
fixture 'mlnx_qos --pfc --cable_len 30' 0 mlnx_qos/cable-30.txt ''
same 'qos/prio2buffer after PFC on 3' qos/prio2buffer-pfc3.txt "$H/sys/class/net/ens1f0np0/qos/prio2buffer"
same 'qos/buffer_size after PFC on 3' qos/buffer_size-pfc3.txt "$H/sys/class/net/ens1f0np0/qos/buffer_size"
# Buffers the driver owns (manual_buffer): the cable length resizes the lossless headroom
fresh q3
M=$REPLY
Q=$M/sys/class/net/ens1f0np0/qos
touch "$M/.fake/dcb/ens1f0np0/manual_buffer"
printf 'Priority\tBuffer\n0\t\t0\n1\t\t0\n2\t\t0\n3\t\t1\n4\t\t0\n5\t\t0\n6\t\t0\n7\t\t0\n' >"$Q/prio2buffer"
sed 's/^1\t196608\t46528\t\t36550$/1\t196608\t0\t\t0/' "$FX/qos/buffer_size-manual-30.txt" >"$Q/buffer_size"
call "$M" dcb pfc set dev ens1f0np0 prio-pfc 3:on delay 30
expect 'manual buffers: dcb pfc set prio-pfc 3:on delay 30' 0 '' ''
same 'manual buffers: xoff = size - calculate_xoff(30 m, 400000 Mb/s, MTU 1500)' qos/buffer_size-manual-30.txt "$Q/buffer_size"
sed 's/196608/130944/' "$FX/qos/buffer_size-manual-30.txt" >"$Q/buffer_size"
call "$M" dcb pfc set dev ens1f0np0 delay 40
expect 'manual buffers: a buffer too small for the headroom is refused (ENOMEM)' 1 '' \
  $'Error when attempting to set attribute: Unknown error 244\nAttribute write: Success\n'
eq '... and the cable length stays as it was' 30 "$(val "$M/.fake/dcb/ens1f0np0/cable_len")"
call "$H" dcb pfc set dev ens1f1np1 delay 30
expect 'dcb pfc set delay 30' 0 '' ''
call "$H" dcb pfc show dev ens1f1np1 delay
fixture 'dcb pfc show delay' 0 dcb/pfc-delay.txt ''
eq 'dcb pfc set delay keeps the PFC mask (read, change, write back)' '0,0,0,0,0,0,0,0 absent' \
  "$(val "$H/.fake/dcb/ens1f1np1/pfc") $([[ -e $H/.fake/dcb/ens1f1np1/flaps ]] && echo present || echo absent)"
# The earlier mlnx_qos 1.2 builds its PFC request from its arguments alone.
touch "$H/.fake/mlnx_qos-older"
call "$H" mlnx_qos -i ens1f0np0 --cable_len 30
fixture 'older mlnx_qos --cable_len alone turns PFC off' 0 mlnx_qos/older-cable-only.txt ''
eq '... flapping the link and clearing pause as any PFC change' '2 off off off' \
  "$(wc -l <"$H/.fake/dcb/ens1f0np0/flaps") $(val "$H/.fake/net/ens1f0np0/pause")"
call "$H" mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0 --cable_len 40
eq 'older mlnx_qos --pfc --cable_len: both in one request' '0,0,0,1,0,0,0,0 40' \
  "$(val "$H/.fake/dcb/ens1f0np0/pfc") $(val "$H/.fake/dcb/ens1f0np0/cable_len")"
call "$H" mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,1
eq 'older mlnx_qos --pfc alone sends delay 0, which the driver ignores' '0,0,0,1,0,0,0,1 40' \
  "$(val "$H/.fake/dcb/ens1f0np0/pfc") $(val "$H/.fake/dcb/ens1f0np0/cable_len")"
call "$H" mlnx_qos -i ens1f0np0 -F x,x,x,1,x,x,x,0
expect 'older mlnx_qos has no -F' 2 '' $'Usage: mlnx_qos -i <interface> [options]\n\nmlnx_qos: error: no such option: -F\n'
rm "$H/.fake/mlnx_qos-older"

# GIDs: fakehost.sh addr configures an address, the kernel adds its GIDs
"$FH" addr "$H" ens1f0np0 10.10.0.10/24
eq 'fakehost.sh addr' '0 10.10.0.10/24' "$? $(val "$H/.fake/net/ens1f0np0/addrs")"
G=$H/sys/class/infiniband/mlx5_0/ports/1
for kv in gids/0=link-local gids/1=link-local gids/2=ipv4-10.10.0.10 gids/3=ipv4-10.10.0.10 \
  gid_attrs/types/2=type-v1 gid_attrs/types/3=type-v2 gids/4=unused gids/15=unused; do
  same "GID table: ${kv%%=*}" "gids/${kv#*=}.txt" "$G/${kv%%=*}"
done
eq 'GID table: the netdev of the address entries' 'ens1f0np0 ens1f0np0' "$(val "$G/gid_attrs/ndevs/2") $(val "$G/gid_attrs/ndevs/3")"
eq 'GID table: an unused entry has no type or netdev (the kernel: EINVAL)' '|' "$(val "$G/gid_attrs/types/4")|$(val "$G/gid_attrs/ndevs/4")"
eq 'GID table: 16 entries' 16 "$(find "$G/gids" -type f | wc -l)"
"$FH" addr "$H" ens1f0np0 10.10.0.10/24 fd00::5/64 10.20.0.10/16
eq 'fakehost.sh addr: each address two entries (v1, v2), in order' \
  '0000:0000:0000:0000:0000:ffff:0a0a:000a fd00:0000:0000:0000:0000:0000:0000:0005 0000:0000:0000:0000:0000:ffff:0a14:000a RoCE v2' \
  "$(val "$G/gids/3") $(val "$G/gids/5") $(val "$G/gids/7") $(val "$G/gid_attrs/types/7")"
"$FH" addr "$H" ens1f0np0
eq 'fakehost.sh addr without addresses: the link-local GIDs only' '|unused' \
  "$(val "$H/.fake/net/ens1f0np0/addrs")|$([[ $(val "$G/gids/2") == 0000:0000:0000:0000:0000:0000:0000:0000 ]] && echo unused)"
"$FH" addr "$H" nosuch0 10.0.0.1/24 2>/dev/null
eq 'fakehost.sh addr refuses an unknown interface' 2 $?
"$FH" addr "$H" ens1f0np0 10.0.0.1 2>/dev/null
eq 'fakehost.sh addr refuses an address without a prefix length' 2 $?

# ethtool
fresh e1
H=$REPLY
call "$H" ethtool -a ens1f0np0
fixture 'ethtool -a (mlx5 default: pause on)' 0 ethtool/pause-on.txt ''
call "$H" ethtool -A ens1f0np0 autoneg off rx off tx off
expect 'ethtool -A off' 0 '' ''
call "$H" ethtool -a ens1f0np0
fixture 'ethtool -a after -A off' 0 ethtool/pause-off.txt
call "$H" ethtool -A ens1f0np0 rx on tx on
call "$H" ethtool -a ens1f0np0
fixture 'ethtool -A rx on tx on' 0 ethtool/pause-on.txt
call "$H" ethtool -i ens1f0np0
fixture 'ethtool -i (OFED)' 0 ethtool/driver.txt ''
call "$H" ethtool ens1f0np0
fixture 'ethtool IF' 0 ethtool/link-400g.txt ''
call "$H" ethtool -S ens1f0np0
fixture 'ethtool -S (no PFC, pause on: the global pause counters)' 0 ethtool/stats.txt ''
# The port's counters as mlx5 lists them (en_stats.c per_prio group): the PFC counters of the
# PFC priorities only, the global ones only while 802.3x pause is on.
cp "$FX/ethtool/counters-cx7.txt" "$H/.fake/net/ens1f0np0/stats"
call "$H" mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0
call "$H" ethtool -S ens1f0np0
fixture 'ethtool -S with PFC on 3 (pause cleared by the PFC change)' 0 ethtool/stats-pfc3.txt ''
call "$H" mlnx_qos -i ens1f0np0 --pfc 0,0,0,0,0,0,0,0
call "$H" ethtool -A ens1f0np0 rx on tx on
call "$H" ethtool -S ens1f0np0
fixture 'ethtool -S without PFC, pause on' 0 ethtool/stats-global.txt ''
call "$H" ethtool -m ens1f0np0
fixture 'ethtool -m (CMIS, 8 channels, lanes 5-8 dark)' 0 ethtool-m/cmis-400g-4lane.txt ''
cp "$FX/ethtool-m/sff8636-100g.txt" "$H/.fake/net/ens1f1np1/module.txt"
call "$H" ethtool -m ens1f1np1
fixture 'ethtool -m (a swapped-in SFF-8636 module)' 0 ethtool-m/sff8636-100g.txt ''

# rdma system show: the RDMA subsystem's netns mode (iproute2 rdma/sys.c)
call "$H" rdma system show
fixture 'rdma system show, the default mode' 0 rdma/system-shared.txt ''
mkdir -p "$H/.fake/rdma" && echo exclusive >"$H/.fake/rdma/netns"
call "$H" rdma sys show netns
fixture 'rdma system show netns, exclusive (rdma-cni)' 0 rdma/system-exclusive.txt ''
echo shared >"$H/.fake/rdma/netns" && touch "$H/.fake/iproute2-5.11"
call "$H" rdma system
fixture 'rdma system of iproute2 5.11 (before copy-on-fork)' 0 rdma/system-5.11.txt ''
rm -r "$H/.fake/iproute2-5.11" "$H/.fake/rdma"

# firewall-cmd (firewalld's runtime zones, firewall/command.py print_zone_policy_info)
ln -s stub "$H/bin/firewall-cmd"
call "$H" firewall-cmd --state
expect 'firewall-cmd --state, firewalld stopped' 252 '' $'not running\n'
mkdir -p "$H/.fake/firewalld/zones" && : >"$H/.fake/firewalld/running"
call "$H" firewall-cmd --state
expect 'firewall-cmd --state' 0 $'running\n' ''
call "$H" firewall-cmd --zone=public --list-all
fixture 'firewall-cmd --list-all of the shipped public zone' 0 firewalld/list-all-public.txt ''
call "$H" firewall-cmd --get-zone-of-interface=ens1f0np0
expect 'firewall-cmd --get-zone-of-interface, in no zone' 2 '' $'no zone\n'
printf 'interfaces ens1f0np0\n' >"$H/.fake/firewalld/zones/trusted"
call "$H" firewall-cmd --get-zone-of-interface=ens1f0np0
expect 'firewall-cmd --get-zone-of-interface' 0 $'trusted\n' ''
call "$H" firewall-cmd --zone=trusted --list-all
fixture 'firewall-cmd --list-all of the trusted zone with the port' 0 firewalld/list-all-trusted.txt ''
printf 'services dhcpv6-client ssh\nports 18515-18530/tcp\n' >"$H/.fake/firewalld/zones/public"
call "$H" firewall-cmd --list-all
fixture 'firewall-cmd --list-all, the default zone with the test ports' 0 firewalld/list-all-open.txt ''
rm -r "$H/.fake/firewalld" "$H/bin/firewall-cmd"

# ibdev2netdev
echo 0 >"$H/sys/class/net/ens1f1np1/carrier"
call "$H" ibdev2netdev
fixture 'ibdev2netdev, one link down (carrier 0)' 0 ibdev2netdev/two-ports.txt ''

# RoCE LAG (fakehost.sh lag): the bond's sysfs as bond_sysfs.c prints it, the LAG device on PF0
# with the bond's GIDs, ethtool -i of the bond, ibdev2netdev naming the bond.
fresh lag1
H=$REPLY
"$FH" addr "$H" ens1f0np0 10.10.0.10/24
"$FH" lag "$H" bond0 mlx5_bond_0 ens1f0np0,ens1f1np1
same 'lag: bonding/slaves' bonding/slaves.txt "$H/sys/class/net/bond0/bonding/slaves"
same 'lag: bonding/mode' bonding/mode.txt "$H/sys/class/net/bond0/bonding/mode"
eq 'lag: the slaves RDMA devices are gone, the LAG device is on PF0' 'mlx5_bond_0 mlx5_bond_0' \
  "$(cd "$H/sys/class/infiniband" && echo *) $(cd "$H/sys/devices/pci0000:00/0000:1a:00.0/infiniband" && echo *)"
eq 'lag: the bond carries the address, the LAG port its GID' 'bond0 0000:0000:0000:0000:0000:ffff:0a0a:000a' \
  "$(val "$H/sys/class/infiniband/mlx5_bond_0/ports/1/gid_attrs/ndevs/3") $(val "$H/sys/class/infiniband/mlx5_bond_0/ports/1/gids/3")"
eq 'lag: the slaves take the bond MAC' 'b8:3f:d2:01:00:00 b8:3f:d2:01:00:01' \
  "$(val "$H/sys/class/net/ens1f1np1/address") $(val "$H/sys/class/net/ens1f1np1/bonding_slave/perm_hwaddr")"
call "$H" ethtool -i bond0
fixture 'ethtool -i of a bond' 0 ethtool/driver-bond.txt ''
call "$H" ibdev2netdev
fixture 'ibdev2netdev on a RoCE LAG' 0 ibdev2netdev/lag.txt ''
# A bond has no dcbnl_ops (bond_main.c): dcbnl.c dcb_doit answers EOPNOTSUPP for every DCB
# object; mlnx_qos reports each part it could not read (mlnx-tools python/mlnx_qos) and stops at
# ETS; dcb prints perror's line. Nor has bonding get/set_pauseparam (net/ethtool/pause.c
# EOPNOTSUPP): ethtool prints the netlink error, exit 1 for -a and 76 for -A.
call "$H" mlnx_qos -i bond0
expect 'lag: mlnx_qos on the bond' 1 $'Priority trust state is not supported on your system\nBuffers commands are not supported on your system\nRate limit is not supported on your system!\nETS features are not supported on your system\n'
call "$H" mlnx_qos -i bond0 --trust dscp
expect 'lag: mlnx_qos --trust on the bond' 1 $'Priority trust state is not supported on your system\n'
call "$H" dcb app show dev bond0 dscp-prio
expect 'lag: dcb app show on the bond' 1 '' $'Attribute read: Operation not supported\n'
call "$H" dcb dcbx set dev bond0 host
expect 'lag: dcb dcbx set on the bond' 1 '' $'Attribute write: Operation not supported\n'
call "$H" ethtool -a bond0
expect 'lag: ethtool -a on the bond' 1 '' $'netlink error: Operation not supported\n'
call "$H" ethtool -A bond0 rx off tx off
expect 'lag: ethtool -A on the bond' 76 '' $'netlink error: Operation not supported\n'
call "$H" dcb app show dev ens1f1np1 dscp-prio
expect 'lag: a slave keeps its DCB' 0 ''
call "$H" ip link set dev bond0 mtu 4200
eq 'ip link set bond0 mtu: the slaves first (bond_change_mtu)' '4200 4200 4200' \
  "$(val "$H/sys/class/net/bond0/mtu") $(val "$H/sys/class/net/ens1f0np0/mtu") $(val "$H/sys/class/net/ens1f1np1/mtu")"
fresh lag2
H=$REPLY
"$FH" lag "$H" bond0 mlx5_bond_0 ens1f0np0
eq 'lag over one port of two: mlx5 makes no LAG device' 'mlx5_0 mlx5_1' "$(cd "$H/sys/class/infiniband" && echo *)"

# lldpcli (captured from lldpd 1.0.16 between two network namespaces)
"$FH" create "$T/lldpd" --kind ofed --host gpu-001 --nic "$NIC0" --nic "$NIC1" --lldp lldpd
H=$T/lldpd
eq 'create --lldp lldpd' 'lldpcli lldpd.service' "$(cd "$H" && echo bin/lldp* | sed 's|bin/||') $(ls "$H/.fake/systemd/active")"
printf 'switch=leaf-1\nport=Ethernet0\nport_type=ifname\ndescr=Eth1/1\nage=0 day, 00:00:03\n' >"$H/.fake/lldp/ens1f0np0"
call "$H" lldpcli -f keyvalue show neighbors ports ens1f0np0
fixture 'lldpcli -f keyvalue show neighbors ports IF' 0 lldpcli/keyvalue.txt ''
call "$H" lldpcli -f keyvalue -- show neighbors ports ens1f0np0
fixture 'lldpcli -f keyvalue -- show neighbors ports IF (getopt ends the options at --)' 0 lldpcli/keyvalue.txt ''
mv "$H/.fake/lldp/ens1f1np1" "$T/lldp.ens1f1np1"
call "$H" lldpcli -f json show neighbors
fixture 'lldpcli -f json, one neighbour (an object)' 0 lldpcli/json-one.txt ''
printf 'switch=leaf-1\nport=Ethernet0\nport_type=ifname\ndescr=Eth1/1\nage=0 day, 00:00:05\n' >"$H/.fake/lldp/ens1f0np0"
printf 'switch=leaf-1\nport=Ethernet8\nport_type=ifname\ndescr=Eth1/2\nage=0 day, 00:00:05\n' >"$H/.fake/lldp/ens1f1np1"
call "$H" lldpcli -f json show neighbors
fixture 'lldpcli -f json, two neighbours (a list)' 0 lldpcli/json-two.txt ''
if command -v jq >/dev/null; then
  eq 'lldpcli json parses' 'ens1f0np0 leaf-1 Ethernet0|ens1f1np1 leaf-1 Ethernet8' \
    "$(jq -r '[.lldp.interface[] | to_entries[0] | "\(.key) \(.value.chassis | keys[0]) \(.value.port.id.value)"] | join("|")' <<<"$OUT")"
fi

# cma_roce_mode / cma_roce_tos: errors on stdout, status 1
fresh c1
H=$REPLY
touch "$H/.fake/not-root"
call "$H" cma_roce_mode -d mlx5_0 -p 1 -m 2
fixture 'cma_roce_mode as non-root' 1 cma_roce/not-root.txt ''
call "$H" cma_roce_tos -d mlx5_0 -p 1 -t 106
fixture 'cma_roce_tos as non-root' 1 cma_roce/not-root.txt ''
rm "$H/.fake/not-root"
call "$H" cma_roce_mode -d mlx5_0 -p 2
fixture 'cma_roce_mode on a port the device does not have' 1 cma_roce/no-port.txt ''
rm -rf "$H/sys/kernel/config/rdma_cm/mlx5_0" # the real script leaves the folder behind too
sed -i '/configfs/d' "$H/proc/mounts"
call "$H" cma_roce_tos -d mlx5_0
expect 'cma_roce_tos without configfs mounted' 1 $'Failed to mount configfs\n' ''
if ((DRIVERFS)); then
  fresh c2
  H=$REPLY
  krun "$H" cma_roce_mode -d mlx5_0 -p 1 -m 2
  fixture 'cma_roce_mode -m 2 (configfs via driverfs)' 0 cma_roce/mode-v2.txt ''
  krun "$H" cma_roce_mode -d mlx5_0 -p 1
  fixture 'cma_roce_mode: the value survives the rmdir' 0 cma_roce/mode-v2.txt ''
  krun "$H" cma_roce_mode -d mlx5_0 -p 1 -m 1
  fixture 'cma_roce_mode -m 1' 0 cma_roce/mode-v1.txt ''
  krun "$H" cma_roce_tos -d mlx5_0 -p 1 -t 106
  fixture 'cma_roce_tos -t 106' 0 cma_roce/tos-106.txt ''
  eq 'cma_roce_*: rmdir at the end' '' "$(ls -A "$H/sys/kernel/config/rdma_cm")"
  krun "$H" cma_roce_tos -d mlx5_9
  fixture 'cma_roce_tos for a device the kernel does not have' 1 cma_roce/no-device.txt \
    $'mkdir: cannot create directory \'mlx5_9\': No such device\n'
  TC=/sys/class/infiniband/mlx5_0/tc/1/traffic_class
  krun "$H" bash -c "cat \"\$ROCE_GEN_ROOT$TC\""
  fixture 'traffic_class unset (driverfs)' 0 traffic_class/unset.txt ''
  krun "$H" bash -c "echo 106 >\"\$ROCE_GEN_ROOT$TC\" && cat \"\$ROCE_GEN_ROOT$TC\""
  fixture 'traffic_class after writing 106 (driverfs)' 0 traffic_class/set.txt ''
  krun "$H" bash -c "echo tclass=96,dst_ip=10.10.0.0/16 >\"\$ROCE_GEN_ROOT$TC\" && echo src_ip=10.10.0.10,tclass=104 >\"\$ROCE_GEN_ROOT$TC\" && cat \"\$ROCE_GEN_ROOT$TC\""
  fixture 'traffic_class with two per-destination rules (driverfs)' 0 traffic_class/rules.txt ''
  krun "$H" bash -c "echo dst_ip=10.10.0.0/16,tclass=96 >\"\$ROCE_GEN_ROOT$TC\" && cat \"\$ROCE_GEN_ROOT$TC\""
  fixture 'traffic_class: a rule written as shown changes nothing (driverfs)' 0 traffic_class/rules.txt ''
  krun "$H" bash -c "echo -1 >\"\$ROCE_GEN_ROOT$TC\" && cat \"\$ROCE_GEN_ROOT$TC\""
  fixture 'traffic_class -1 clears the global class, the rules stay (driverfs)' 0 traffic_class/rules-only.txt ''
  krun "$H" bash -c "echo src_ip=10.10.0.10,tclass=-1 >\"\$ROCE_GEN_ROOT$TC\" && echo dst_ip=10.10.0.0/16,tclass=-1 >\"\$ROCE_GEN_ROOT$TC\" && cat \"\$ROCE_GEN_ROOT$TC\""
  fixture 'traffic_class: a rule with tclass=-1 is deleted (driverfs)' 0 traffic_class/unset.txt ''
else
  skip 'cma_roce/{mode-v2,mode-v1,tos-106,no-device}.txt and traffic_class/*.txt: the driver filesystem (root, /dev/fuse, python3-fusepy) is not available'
fi

# ---------------------------------------------------------------------------------------
# The driver's side effects (driver-semantics.md)

fresh s1
H=$REPLY
D=$H/.fake/dcb/ens1f0np0
qos_line() { # LINE-NUMBER: that line of `mlnx_qos -i ens1f0np0`
  ROCE_GEN_ROOT=$H STUB_LOG=$H/stub.log "$H/bin/mlnx_qos" -i ens1f0np0 | sed -n "$1p"
}
# APP table = trust
call "$H" dcb app add dev ens1f0np0 dscp-prio 26:3
expect 'dcb app add on a PCP-trust port' 0 '' ''
eq 'an APP entry on a PCP port switches it to DSCP trust' 'Priority trust state: dscp' "$(qos_line 2)"
eq '... with only that entry in the map' "$(lines 'dscp2prio mapping:' $'\tprio:3 dscp:26,' 'default priority:')" "$(qos_line 3,5)"
call "$H" dcb app add dev ens1f0np0 dscp-prio 10:1 48:6
eq 'the table is in head-insertion order' $'dscp 48 6\ndscp 10 1\ndscp 26 3' "$(val "$D/app")"
call "$H" dcb app del dev ens1f0np0 dscp-prio 26:5
expect 'dcb app del whose priority does not match: ENOENT' 1 '' \
  $'Error when attempting to set attribute: Unknown error 254\nAttribute write: Success\n'
call "$H" dcb app del dev ens1f0np0 dscp-prio 26:3
expect 'dcb app del' 0 '' ''
call "$H" dcb -N app show dev ens1f0np0
expect 'delete: that DSCP is no longer mapped (back to priority 0)' 0 $'dscp-prio 10:1 48:6 \n'
call "$H" mlnx_qos -i ens1f0np0 --dscp2prio del,10,1 --dscp2prio del,48,6
eq 'deleting the last entry switches back to PCP trust' 'Priority trust state: pcp' "$(sed -n 2p <<<"$OUT")"
eq '... the APP table is empty' '' "$(val "$D/app")"
call "$H" mlnx_qos -i ens1f0np0 --dscp2prio del,26,3
expect 'mlnx_qos --dscp2prio del on a port without entries' 1 $'dscp2prio command failed\n'
call "$H" mlnx_qos -i ens1f0np0 --dscp2prio set,30,2 --dscp2prio set,31,2 --dscp2prio set,30,4
eq '--dscp2prio repeats in one call; re-setting a DSCP moves it to the head' $'dscp 30 4\ndscp 31 2' "$(val "$D/app")"
call "$H" mlnx_qos -i ens1f0np0 --dscp2prio flush
eq '--dscp2prio flush empties the table (trust pcp)' 'Priority trust state: pcp' "$(sed -n 2p <<<"$OUT")"
call "$H" mlnx_qos -i ens1f0np0 --trust dscp --dscp2prio set,1,1
expect 'mlnx_qos refuses --trust with --dscp2prio' 1 $'trust and dscp2prio commands cannot be used at the same time.\n' ''
eq '... and changed nothing' '' "$(val "$D/app")"
call "$H" mlnx_qos -i ens1f0np0 --trust dscp
call "$H" mlnx_qos -i ens1f0np0 --trust pcp
eq '--trust pcp deletes every DSCP entry' 'Priority trust state: pcp|' "$(sed -n 2p <<<"$OUT")|$(val "$D/app")"
call "$H" dcb app flush dev ens1f0np0
expect 'dcb app flush of an empty table' 0 '' ''

# PFC: global pause off, one link flap per mask change, buffers
eq 'no flap yet' absent "$([[ -e $D/flaps ]] && echo present || echo absent)"
call "$H" mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0
eq 'a PFC change clears 802.3x pause (ethtool -a)' 'off off off' "$(val "$H/.fake/net/ens1f0np0/pause")"
eq '... and flaps the link once' 'pfc 0,0,0,0,0,0,0,0 -> 0,0,0,1,0,0,0,0' "$(val "$D/flaps")"
eq '... and maps priority 3 to buffer 1 (qos/prio2buffer)' "$(printf 'Priority\tBuffer\n'; for p in 0 1 2 3 4 5 6 7; do printf '%d\t\t%d\n' "$p" "$((p == 3))"; done)" \
  "$(cat "$H/sys/class/net/ens1f0np0/qos/prio2buffer")"
call "$H" ethtool -A ens1f0np0 rx on tx on
call "$H" dcb pfc set dev ens1f0np0 prio-pfc 3:on
eq 'setting the same PFC mask: no flap, pause untouched' '1 on on off' "$(wc -l <"$D/flaps") $(val "$H/.fake/net/ens1f0np0/pause")"
call "$H" dcb pfc set dev ens1f0np0 prio-pfc 3:off
eq 'dcb pfc set: the same driver (flap, pause off)' '2 off off off' "$(wc -l <"$D/flaps") $(val "$H/.fake/net/ens1f0np0/pause")"
call "$H" dcb pfc show dev ens1f0np0
expect 'dcb pfc show: the delay is the cable length' 0 $'pfc-cap 8 macsec-bypass off delay 7 \nprio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off \n' ''
call "$H" mlnx_qos -i ens1f0np0 --cable_len 30
eq 'mlnx_qos --cable_len 30' 'Cable len: 30' "$(grep '^Cable len' <<<"$OUT")"
call "$H" dcb pfc set dev ens1f0np0 delay 1000
eq 'a delay of 1000 m or more is ignored (MLX5E_MAX_CABLE_LENGTH)' 30 "$(val "$D/cable_len")"
eq '--cable_len alone changes no PFC: no flap' 2 "$(wc -l <"$D/flaps")"
call "$H" mlnx_qos -i ens1f0np0 -F x,x,x,1,x,x,x,1
eq 'mlnx_qos -F: only the given priorities, silently' '0||0,0,0,1,0,0,0,1' "$RC|$OUT|$(val "$D/pfc")"
call "$H" mlnx_qos -i ens1f0np0 -P 7
expect 'mlnx_qos -P 7' 0 $'1\n'
call "$H" dcb -j pfc show dev ens1f0np0
expect 'dcb -j pfc show' 0 $'{"pfc_cap":8,"macsec_bypass":false,"delay":30,"prio_pfc":[false,false,false,true,false,false,false,true]}\n'
call "$H" dcb -s pfc show dev ens1f1np1
eq 'dcb -s pfc show: pause counters of every priority (the driver registers, PFC on or not)' $'requests 0:4 1:0 2:0 3:20 4:0 5:0 6:0 7:0 \nindications 0:3 1:0 2:0 3:10 4:0 5:0 6:0 7:0 ' \
  "$(sed -n 3,4p <<<"$OUT")"
call "$H" ethtool -A ens1f0np0 autoneg on rx on tx on
expect 'ethtool -A autoneg on: mlx5 refuses pause autonegotiation' 76 '' $'netlink error: Invalid argument\n'
call "$H" dcb dcbx set dev ens1f0np0 ieee
expect 'dcb dcbx set without host is refused by mlx5' 1 '' \
  $'Error when attempting to set attribute: Operation not permitted\nAttribute write: Success\n'
call "$H" dcb -j dcbx show dev ens1f0np0
expect 'dcb -j dcbx show' 0 $'{"host":true,"cee":true,"ieee":true}\n'

# mlnx_qos messages
call "$H" mlnx_qos -i ens1f0np0 --pfc 0,0,1
expect 'mlnx_qos --pfc short list' 1 $'pfc list must have 8 items\n'
call "$H" mlnx_qos -i ens1f0np0 --pfc 0,0,0,2,0,0,0,0
expect 'mlnx_qos --pfc bad value' 1 $'Bad value for PFC: 2 is not in the range 0..1\nUsage: mlnx_qos -i <interface> [options]\n\n'
call "$H" mlnx_qos -i ens1f0np0 --trust foo
expect 'mlnx_qos --trust foo' 1 $'Invalid trust state command. Refer to the help.\n'
call "$H" mlnx_qos -i ens1f0np0 --dscp2prio set,64,1
expect 'mlnx_qos --dscp2prio out of range' 1 $'Invalid dscp2prio command. Refer to the help.\n'
call "$H" mlnx_qos -i ens1f0np0 -d on
expect 'mlnx_qos -d on' 1 $'Invalid dcbx mode command. Refer to the help.\n'
call "$H" mlnx_qos -i ens1f0np0 --defltprio set,3
expect 'mlnx_qos --defltprio: mlx5 takes DSCP APP entries only' 1 $'defltprio command failed\n'
call "$H" mlnx_qos --trust dscp
expect 'mlnx_qos without -i' 1 $'Interface name is required\nUsage: mlnx_qos -i <interface> [options]\n\n'
NOT_SUPPORTED=$(lines 'Priority trust state is not supported on your system' \
  'Buffers commands are not supported on your system' 'Rate limit is not supported on your system!' \
  'ETS features are not supported on your system')
call "$H" mlnx_qos -i nosuch0
expect 'mlnx_qos unknown interface' 1 "$NOT_SUPPORTED"$'\n'
call "$H" mlnx_qos -i ens1f0np0 -p 0,1,2,3,4,5,6,7
expect 'mlnx_qos unmodelled option' 2 '' $'stub mlnx_qos: not implemented: -p\n'
call "$H" mlnx_qos --version
expect 'mlnx_qos --version' 0 $'mlnx_qos 1.2\n'
touch "$H/.fake/no-dcb"
call "$H" mlnx_qos -i ens1f1np1 --trust dscp
expect 'no DCB: mlnx_qos --trust' 1 $'Priority trust state is not supported on your system\n'
call "$H" mlnx_qos -i ens1f1np1 --pfc 0,0,0,1,0,0,0,0
expect 'no DCB: mlnx_qos --pfc' 1 '' $'OSError: Netlink error: Operation not supported (95)\nTypeError: can only concatenate str (not "OSError") to str\n'
call "$H" dcb pfc set dev ens1f1np1 prio-pfc 3:on
expect 'no DCB: dcb pfc set' 1 '' $'Attribute read: Operation not supported\n'
call "$H" dcb app add dev ens1f1np1 dscp-prio 26:3
expect 'no DCB: dcb app add' 1 '' $'Attribute write: Operation not supported\n'
rm "$H/.fake/no-dcb"
call "$H" dcb app show dev nosuch0
expect 'dcb unknown device' 1 '' $'Attribute read: No such device\n'
call "$H" dcb ets show dev ens1f0np0
expect 'dcb ets is not modelled' 2 '' $'stub dcb: not implemented: ets show dev ens1f0np0\n'
call "$I" dcb app add dev ens1f0np0 dscp-prio AF31:3 CS6:6
call "$I" dcb -j app show dev ens1f0np0
expect 'inbox: dcb app add by name, -j show' 0 $'{"dscp_prio":[[26,3],[48,6]]}\n'
call "$I" dcb app show dev ens1f0np0
expect 'inbox: dcb app show (names)' 0 $'dscp-prio AF31:3 CS6:6 \n'

# ibdev2netdev: new-style mapping needs dev_id; PCI vendor filter
fresh m1
H=$REPLY
rm "$H"/sys/class/net/*/dev_id
call "$H" ibdev2netdev
expect 'ibdev2netdev without dev_id: old style, nothing for ens* names' 0 '' ''
fresh m2
H=$REPLY
for f in "$H"/sys/devices/pci0000:00/*/vendor; do echo 0x8086 >"$f"; done
call "$H" ibdev2netdev
expect 'ibdev2netdev: only Mellanox (0x15b3) netdevs' 0 '' ''
rm -r "$H/sys/class/infiniband"
call "$H" ibdev2netdev
expect 'ibdev2netdev with the driver stopped' 255 '' ''

# ofed_info, traffic_class on plain files
call "$O" ofed_info -s
expect 'ofed_info -s' 0 $'MLNX_OFED_LINUX-24.10-1.1.4.0:\n' ''
call "$O" ofed_info -n
expect 'ofed_info -n' 0 $'24.10-1.1.4.0\n'
eq 'inbox host has no ofed_info' absent "$(PATH=$I/bin command -v ofed_info || echo absent)"
exact "$O/sys/class/infiniband/mlx5_0/tc/1/traffic_class"
eq 'traffic_class of a new host (unset) = traffic_class/unset.txt' "$(cat "$FX/traffic_class/unset.txt")" "$REPLY"

# ethtool errors
call "$I" ethtool -i ens1f0np0
eq 'ethtool -i (inbox) reports the kernel release' 'version: 5.15.0-105-generic' "$(sed -n 2p <<<"$OUT")"
call "$O" ethtool -i nosuch0
expect 'ethtool -i unknown' 71 '' $'Cannot get driver information: No such device\n'
call "$O" ethtool -a nosuch0
expect 'ethtool -a unknown' 1 '' $'netlink error: no device matches name (offset 24)\nnetlink error: No such device\n'
call "$O" ethtool -g ens1f0np0
expect 'ethtool -g is not modelled' 2 '' $'stub ethtool: not implemented: -g ens1f0np0\n'
rm "$O/.fake/net/ens1f1np1/module.txt"
call "$O" ethtool -m ens1f1np1
expect 'ethtool -m without module access' 1 '' $'Cannot get module EEPROM information: Operation not supported\n'
echo 0 >"$O/sys/class/net/ens1f1np1/carrier"
call "$O" ethtool ens1f1np1
eq 'ethtool IF without carrier' $'\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n\tLink detected: no' "$(grep -E 'Speed|Duplex|Link detected' <<<"$OUT")"
echo 1 >"$O/sys/class/net/ens1f1np1/carrier"

# lldpcli / lldptool
call "$O" lldpcli -f keyvalue show neighbors
eq 'no lldpcli without --lldp' 127 "$RC"
rm "$T/lldpd/.fake/systemd/active/lldpd.service"
call "$T/lldpd" lldpcli -f keyvalue show neighbors
eq 'lldpcli without the daemon (a timestamp, then the message)' "1 [WARN/control] unable to connect to socket /run/lldpd.socket: No such file or directory"$'\n' "$RC ${ERR#* }"
ln -s stub "$O/bin/lldpcli"
touch "$O/.fake/systemd/active/lldpd.service"
call "$O" lldpcli -f keyvalue show neighbors
expect 'ln -s stub bin/lldpcli installs lldpcli (no neighbour heard)' 0 '' ''
"$FH" create "$T/lldpad2" --kind inbox --host gpu-010 --nic "$NIC0" --lldp lldpad
printf 'switch=leaf-7.example.net\nport=Ethernet28\nport_type=local\ndescr=0/28\n' >"$T/lldpad2/.fake/lldp/ens1f0np0"
call "$T/lldpad2" lldptool -t -n -i ens1f0np0
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
expect 'ip route: only route get is modelled' 2 '' $'stub ip: not implemented: route show\n'

# A renamed netdev with its old name as an altname (fixtures/ip/link-altname*.txt): sysfs,
# the PCI function's net/ entry and the GID table follow the rename; ip shows the altname and
# resolves it; the stand-ins' state moves with the interface.
fresh renamed
R=$REPLY
"$FH" addr "$R" ens1f1np1 10.0.1.5/24
"$FH" rename "$R" ens1f1np1 enp26s0f1np1
eq 'rename: exit status' 0 $?
"$FH" altname "$R" enp26s0f1np1 ens1f1np1
eq 'altname: exit status' 0 $?
eq 'rename: sysfs and the PCI function follow' 'enp26s0f1np1 ens1f0np0|enp26s0f1np1|enp26s0f1np1|3' \
  "$(cd "$R/sys/class/net" && echo *)|$(ls "$R/sys/bus/pci/devices/0000:1a:00.1/net")|$(val "$R/sys/class/infiniband/mlx5_1/ports/1/gid_attrs/ndevs/3")|$(val "$R/sys/class/net/enp26s0f1np1/ifindex")"
eq 'rename: the stand-ins state moves' 'present absent' \
  "$([[ -f $R/.fake/dcb/enp26s0f1np1/pfc ]] && echo present) $([[ -e $R/.fake/dcb/ens1f1np1 ]] && echo present || echo absent)"
call "$R" ip -o link show dev ens1f1np1
expect 'ip -o link show dev ALTNAME' 0 "$(cat "$FX/ip/link-altname-oneline.txt")"$'\n' ''
call "$R" ip link show dev ens1f1np1
exact "$FX/ip/link-altname.txt"
eq 'ip link show dev ALTNAME' "$REPLY" "$OUT"
call "$R" ip -j link show dev enp26s0f1np1
eq 'ip -j link show: altnames' '["ens1f1np1"]' "$(jq -c '.[0].altnames' <<<"$OUT")"
call "$R" ip link set dev ens1f1np1 mtu 4200
eq 'ip link set dev ALTNAME mtu' '0 4200' "$RC $(val "$R/sys/class/net/enp26s0f1np1/mtu")"
for bad in "ens1f0np0 enp26s0f1np1" "ens1f0np0 ens1f1np1" "ens1f0np0 a/b" "nosuch0 x" "ens1f0np0 sixteen-chars-xx"; do
  # shellcheck disable=SC2086 # the two names
  "$FH" rename "$R" $bad 2>/dev/null
  eq "rename refuses: $bad" 2 $?
done
"$FH" altname "$R" ens1f0np0 enp26s0f1np1 2>/dev/null
eq 'altname refuses a taken name' 2 $?

# The mount tables of create --rootfs (fixtures/mounts/, fs/proc_namespace.c).
for fs in xfs tmpfs; do
  "$FH" create "$T/root-$fs" --kind ofed --host h --nic "$NIC0" --rootfs "$fs"
  eq "create --rootfs $fs: mountinfo" '' "$(cmp "$FX/mounts/mountinfo-$fs.txt" "$T/root-$fs/proc/self/mountinfo" 2>&1)"
  eq "create --rootfs $fs: mounts" '' "$(cmp "$FX/mounts/mounts-$fs.txt" "$T/root-$fs/proc/mounts" 2>&1)"
done
"$FH" create "$T/root-state" --kind inbox --host h --nic "$NIC0" --mount /var/lib/roce-gen:tmpfs
eq 'create --mount: ext4 root (inbox), then the tmpfs' '/dev/sda2 / ext4|tmpfs /var/lib/roce-gen tmpfs' \
  "$(head -n 1 "$T/root-state/proc/mounts" | cut -d' ' -f1-3)|$(tail -n 1 "$T/root-state/proc/mounts" | cut -d' ' -f1-3)"
for bad in "--rootfs btrfs" "--mount relative:tmpfs" "--mount /x:zfs"; do
  # shellcheck disable=SC2086 # word splitting of the option string is intended
  "$FH" create "$T/bad.$RANDOM" --kind ofed --host h --nic "$NIC0" $bad 2>/dev/null
  eq "create refuses: $bad" 2 $?
done

# ---------------------------------------------------------------------------------------
# systemctl, hostname, modprobe

call "$O" systemctl is-enabled roce-gen
expect 'systemctl is-enabled without unit file' 1 '' $'Failed to get unit file state for roce-gen.service: No such file or directory\n'
call "$O" systemctl enable roce-gen.service
expect 'systemctl enable without unit file' 1 '' $'Failed to enable unit: Unit file roce-gen.service does not exist.\n'
printf '[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/opt/roce-gen/demo/apply.sh --boot\n[Install]\nWantedBy=multi-user.target\n' \
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
# Jobs as systemd's job.c has them (stubs/systemd-jobs.sh): a blocking start runs ExecStart
# under the root (its absolute paths are the root's) and leaves the oneshot active.
mkdir -p "$O/opt/roce-gen/demo"
# shellcheck disable=SC2016 # the unit's script expands them
printf '#!/bin/bash\necho "ran $*" >>"$ROCE_GEN_ROOT/unit-ran"\n' >"$O/opt/roce-gen/demo/apply.sh"
chmod 755 "$O/opt/roce-gen/demo/apply.sh"
call "$O" systemctl try-restart roce-gen.service
eq 'systemctl try-restart of an inactive unit runs nothing' 'no' "$([[ -e $O/unit-ran ]] && echo yes || echo no)"
call "$O" systemctl start roce-gen.service
eq 'systemctl start runs ExecStart' 'ran --boot' "$(val "$O/unit-ran")"
call "$O" systemctl is-active roce-gen.service
expect 'systemctl start: then active' 0 $'active\n'
call "$O" systemctl start roce-gen.service
eq 'systemctl start of an active unit runs nothing' 1 "$(grep -c ran "$O/unit-ran")"
call "$O" systemctl --no-block try-restart roce-gen.service
call "$O" systemctl --no-block start roce-gen.service
eq 'systemctl --no-block queues a restart, and start merges into it' 'restart' "$(val "$O/.fake/systemd/jobs/roce-gen.service")"
eq 'systemctl --no-block runs nothing yet' 1 "$(grep -c ran "$O/unit-ran")"
call "$O" "$O/lib/fakehost/pid1" run-jobs
eq 'pid1 run-jobs runs the restart once' 2 "$(grep -c ran "$O/unit-ran")"
# A oneshot without RemainAfterExit= (the health service) is inactive again once its run ended,
# so the next start runs it again (service.c service_enter_running).
printf '[Service]\nType=oneshot\nExecStart=/opt/roce-gen/demo/once.sh\n' >"$O/etc/systemd/system/once.service"
# shellcheck disable=SC2016 # the unit's script expands it
printf '#!/bin/bash\necho ran >>"$ROCE_GEN_ROOT/once-ran"\n' >"$O/opt/roce-gen/demo/once.sh"
chmod 755 "$O/opt/roce-gen/demo/once.sh"
call "$O" systemctl start once.service
call "$O" systemctl is-active once.service
expect 'a oneshot without RemainAfterExit: inactive after its run' 3 $'inactive\n'
call "$O" systemctl start once.service
eq 'and the next start runs it again' 2 "$(grep -c ran "$O/once-ran")"
call "$O" "$O/lib/fakehost/pid1" boot
call "$O" systemctl is-active roce-gen.service
expect 'pid1 boot: the unit is inactive' 3 $'inactive\n'
call "$O" systemctl --no-block try-restart roce-gen.service
call "$O" systemctl --no-block start roce-gen.service
call "$O" "$O/lib/fakehost/pid1" run-jobs
eq 'a boot: try-restart and start merge into the boot start job, one run' 3 "$(grep -c ran "$O/unit-ran")"
printf '#!/bin/bash\nexit 1\n' >"$O/opt/roce-gen/demo/apply.sh"
call "$O" systemctl restart roce-gen.service
eq 'systemctl restart of a unit whose run fails' 1 "$RC"
call "$O" systemctl is-failed roce-gen.service
expect 'systemctl is-failed' 0 $'failed\n'
call "$O" systemctl stop roce-gen.service
call "$O" systemctl is-active roce-gen.service
expect 'systemctl stop: inactive' 3 $'inactive\n'
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

# ldconfig: glibc's own over the root's cache, which `fakehost.sh nccl` builds.
call "$O" ldconfig -p
expect 'ldconfig -p without a cache: as such a host answers' 1 '' $'/sbin/ldconfig: Can\'t open cache file /etc/ld.so.cache\n: No such file or directory\n'
"$FH" nccl "$O" 2.21.5
eq 'nccl 2.21.5: the library and the soname link ldconfig made' 'libnccl.so.2 -> libnccl.so.2.21.5' \
  "$(cd "$O/usr/lib/x86_64-linux-gnu" && for f in libnccl.so*; do [[ -L $f ]] && echo "$f -> $(readlink "$f")"; done)"
call "$O" ldconfig -p
eq 'ldconfig -p: the root cache names the soname' $'\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2' \
  "$(grep libnccl <<<"$OUT")"
"$FH" nccl "$O" none
call "$O" ldconfig -p
expect 'ldconfig -p after nccl none: an empty cache' 0 "$OUT" ''
eq 'no libnccl left' '' "$(grep libnccl <<<"$OUT")"
call "$O" ldconfig /usr/lib
expect 'ldconfig rebuilding a cache is not modelled' 2 '' $'stub ldconfig: not implemented: /usr/lib\n'

call "$O" hostname
expect 'hostname' 0 $'gpu-001.example.net\n' ''
call "$O" hostname -s
expect 'hostname -s' 0 $'gpu-001\n'
call "$O" hostname -f
expect 'hostname -f without an etc/hosts entry: the name itself (nss-myhostname)' 0 $'gpu-001.example.net\n'
echo gpu-001 >"$O/.fake/hostname"
printf '127.0.0.1 localhost\n10.0.0.1 gpu-001.dc1.example gpu-001 # the node\n' >"$O/etc/hosts"
call "$O" hostname
expect 'hostname: a short kernel name as it is' 0 $'gpu-001\n'
call "$O" hostname -f
expect 'hostname -f: the canonical name of its etc/hosts line' 0 $'gpu-001.dc1.example\n'
call "$O" hostname --short
expect 'hostname --short of a short name' 0 $'gpu-001\n'
echo gpu-001.example.net >"$O/.fake/hostname"
rm -f "$O/etc/hosts"
call "$O" hostname evil
expect 'hostname NAME is refused' 2 '' $'stub hostname: not implemented: evil\n'
call "$I" modprobe rdma_cm
expect 'modprobe' 0 '' ''

# udevadm (systemd's udevadm-control.c): only control --reload, counted
call "$O" udevadm control --reload
call "$O" udevadm control -R
expect 'udevadm control -R' 0 '' ''
eq 'udevadm reload counter' 2 "$(val "$O/.fake/udev/reload")"
call "$O" udevadm control
expect 'udevadm control without a command' 1 '' $'No control command option is specified.\n'
call "$O" udevadm control --reload now
expect 'udevadm control with an extra argument' 1 '' $'Extraneous argument: now\n'
printf 'Failed to send reload request: Connection refused\n' >"$O/.fake/fail/udevadm"
call "$O" udevadm control --reload
expect 'udevadm control --reload, udevd unreachable' 1 '' $'Failed to send reload request: Connection refused\n'
eq 'udevadm: a failed reload is not counted' 2 "$(val "$O/.fake/udev/reload")"
rm "$O/.fake/fail/udevadm"
call "$O" udevadm trigger
expect 'udevadm trigger is not modelled' 2 '' $'stub udevadm: not implemented: trigger\n'


# ---------------------------------------------------------------------------------------
# Firmware (NV) configuration: mlxconfig / mstconfig, per card, set for the next boot

fresh nv1
H=$REPLY
ln -s stub "$H/bin/mlxconfig"
ln -s stub "$H/bin/mstconfig"
NV_NAMES=(ROCE_CC_PRIO_MASK_P1 CNP_DSCP_P1 CNP_802P_PRIO_P1 LLDP_NB_DCBX_P1 DCBX_WILLING_P1 LINK_TYPE_P1)
call "$H" mlxconfig -d 0000:1a:00.0 -e q "${NV_NAMES[@]}"
fixture 'mlxconfig -e q on a new card' 0 mlxconfig/query-e-default.txt ''
call "$H" mstconfig -d 0000:1a:00.0 -e q "${NV_NAMES[@]}"
fixture 'mstconfig prints the same' 0 mlxconfig/query-e-default.txt ''
call "$H" mlxconfig -d 0000:1a:00.0 q "${NV_NAMES[@]}"
fixture 'mlxconfig q without -e: the next boot only' 0 mlxconfig/query-next-only.txt ''
call "$H" mlxconfig -d 1a:00.1 -e q
eq 'a query of every parameter: both ports of the dual-port card' 12 "$(grep -c '_P[12] ' <<<"$OUT")"
call "$H" mlxconfig -y -d 0000:1a:00.0 set CNP_DSCP_P1=40 LLDP_NB_DCBX_P1=True
eq 'set: exit status' 0 "$RC"
eq 'set changes the next boot only' $'CNP_DSCP_P1 48 48 40\nLLDP_NB_DCBX_P1 0 0 1' \
  "$(grep -E '^(CNP_DSCP|LLDP_NB_DCBX)_P1 ' "$H/.fake/nvconfig/0000:1a:00")"
"$FH" reload "$H" >/dev/null 2>&1
eq 'a driver reload leaves the firmware as it is' 'CNP_DSCP_P1 48 48 40' "$(grep '^CNP_DSCP_P1 ' "$H/.fake/nvconfig/0000:1a:00")"
"$FH" reboot "$H" >/dev/null 2>&1
eq 'reboot: exit status' 0 $?
call "$H" mlxconfig -d 0000:1a:00.0 -e q "${NV_NAMES[@]}"
fixture 'after set and a reboot' 0 mlxconfig/query-e-contradicting.txt ''
cp -a "$H" "$T/nv2"
call "$H" mlxconfig -y -d 0000:1a:00.0 set CNP_DSCP_P1=48 DCBX_WILLING_P1=0
fixture 'mlxconfig -y set (prints the table with New, answers the prompt)' 0 mlxconfig/set.txt ''
call "$T/nv2" mstconfig -y -d 0000:1a:00.0 set CNP_DSCP_P1=48 DCBX_WILLING_P1=false
fixture 'mstconfig -y set, a bool by name' 0 mlxconfig/set.txt ''
call "$H" mlxconfig -d 0000:1a:00.0 -e q "${NV_NAMES[@]}"
fixture 'a pending reboot' 0 mlxconfig/query-e-pending.txt ''
cp "$H/.fake/nvconfig/0000:1a:00" "$T/nvstate"
call "$H" mlxconfig -d 0000:1a:00.0 set CNP_DSCP_P1=46 </dev/null
eq 'set without -y and no answer: the prompt is refused' '2  Apply new Configuration? (y/n) [n] : -E- Aborted by user.' \
  "$RC $(printf '%s' "$OUT" | tail -n 1)"
eq '... changes nothing' '' "$(diff "$T/nvstate" "$H/.fake/nvconfig/0000:1a:00")"
call "$H" mlxconfig -y -d 0000:1a:00.0 set CNP_DSCP_P1=64
expect 'set out of range' 3 $'-E- Cannot set the value 64 for the parameter CNP_DSCP_P1\n' ''
call "$H" mlxconfig -y -d 0000:1a:00.0 set LINK_TYPE_P1=ETH
eq 'set the link type by name' '0 LINK_TYPE_P1 2 2 2' "$RC $(grep '^LINK_TYPE_P1 ' "$H/.fake/nvconfig/0000:1a:00")"
grep -v '^LINK_TYPE' "$T/nvstate" >"$H/.fake/nvconfig/0000:1a:00"
sed -i 's/^CNP_DSCP_P1 48 40 48$/CNP_DSCP_P1 48 48 48/; s/^LLDP_NB_DCBX_P1 0 1 1$/LLDP_NB_DCBX_P1 0 0 0/; s/^DCBX_WILLING_P1 1 1 0$/DCBX_WILLING_P1 1 1 1/' \
  "$H/.fake/nvconfig/0000:1a:00"
call "$H" mlxconfig -d 0000:1a:00.0 -e q "${NV_NAMES[@]}"
fixture 'a parameter the firmware does not have refuses the named query' 3 mlxconfig/query-e-unsupported.txt ''
call "$H" mlxconfig -d 0000:1a:00.0 -e q
eq '... which a query of every parameter leaves out' 5 "$(grep -c '_P1 ' <<<"$OUT")"
cp "$H/.fake/nvconfig/0000:1a:00" "$T/nvstate5"
grep -v '_P2 ' "$T/nvstate5" >"$H/.fake/nvconfig/0000:1a:00"
printf 'KEEP_ETH_LINK_UP_P1 1 1 1 fail\n' >>"$H/.fake/nvconfig/0000:1a:00"
call "$H" mlxconfig -d 0000:1a:00.0 -e q
fixture 'a TLV that fails: the rest of the table, then the TLVs it could not read' 3 mlxconfig/query-e-failed-tlv.txt ''
call "$H" mlxconfig -d 0000:1a:00.0 -e q CNP_DSCP_P1 KEEP_ETH_LINK_UP_P1
expect '... and a named query of it fails' 3 "$(sed -n '1,10p' "$FX/mlxconfig/query-e-failed-tlv.txt")
-E- Failed to get nv_keep_link_up settings Firmware internal error (274)
" ''
printf '%s\n' 'ROCE_CC_PRIO_MASK_P1 255 255 255' 'CNP_DSCP_P1 48 48 48' 'CNP_802P_PRIO_P1 6 6 6' 'LLDP_NB_DCBX_P1 0 1 1' \
  'DCBX_WILLING_P1 1 0 0' 'INTERNAL_CPU_MODEL 1 1 1' 'INTERNAL_CPU_OFFLOAD_ENGINE 0 0 0' >"$H/.fake/nvconfig/0000:1a:00"
call "$H" mlxconfig -d 0000:1a:00.0 -e q ROCE_CC_PRIO_MASK_P1 CNP_DSCP_P1 CNP_802P_PRIO_P1 LLDP_NB_DCBX_P1 DCBX_WILLING_P1 INTERNAL_CPU_MODEL INTERNAL_CPU_OFFLOAD_ENGINE
fixture 'a BlueField-3 in DPU mode' 0 mlxconfig/query-e-dpu.txt ''
echo restricted >"$H/.fake/nvconfig/0000:1a:00.host"
call "$H" mlxconfig -y -d 0000:1a:00.0 set CNP_DSCP_P1=26
fixture 'a restricted host may not set' 3 mlxconfig/set-restricted.txt ''
eq '... which changes nothing' 'CNP_DSCP_P1 48 48 48' "$(grep '^CNP_DSCP_P1 ' "$H/.fake/nvconfig/0000:1a:00")"
echo restricted-4.21 >"$H/.fake/nvconfig/0000:1a:00.host"
call "$H" mlxconfig -y -d 0000:1a:00.0 set CNP_DSCP_P1=26
fixture 'a restricted host, mstflint 4.21: the set refused as unsupported' 3 mlxconfig/set-restricted-4.21.txt ''
call "$H" mlxconfig -d 0000:1a:00.0 -e q CNP_DSCP_P1
fixture '... and so is a named query of a parameter it may only read' 3 mlxconfig/query-e-restricted-4.21.txt ''
call "$H" mlxconfig -d 0000:1a:00.0 -e q
expect '... and the query of every parameter finds none' 3 "$(sed -n '1,10p' "$FX/mlxconfig/query-e-restricted-4.21.txt")
-E- Device doesn't support any configuration changes.
" ''
echo locked >"$H/.fake/nvconfig/0000:1a:00.host"
call "$H" mlxconfig -d 0000:1a:00.0 -e q
fixture 'a host without access to the NV registers' 3 mlxconfig/query-locked.txt ''
rm -f "$H/.fake/nvconfig/0000:1a:00.host"
cp "$T/nvstate5" "$H/.fake/nvconfig/0000:1a:00"
: >"$H/.fake/not-root"
call "$H" mstconfig -d 0000:1a:00.0 -e q
expect 'not root' 3 $'-E- Failed to open device: 0000:1a:00.0. Permission denied\n' ''
rm -f "$H/.fake/not-root"
call "$H" mlxconfig -d 0000:5e:00.0 q
expect 'a device the host does not have' 3 $'-E- Failed to open device: 0000:5e:00.0. No such file or directory\n' ''

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
  eq 'every stub log line is valid JSON' 0 "$(cat "$O/stub.log" "$I/stub.log" "$T"/*/stub.log | jq -c . >/dev/null 2>&1; echo $?)"
else
  skip 'JSON parsing of the stub log (jq not installed)'
fi
call "$O" lldpcli -f keyvalue show neighbors
eq 'a tool installed with ln -s stub logs under its own name' '{"tool":"lldpcli","argv":["-f","keyvalue","show","neighbors"]}' "$(tail -1 "$O/stub.log")"

printf 'mlx5_core: firmware timeout\n' >"$I/.fake/fail/ethtool"
call "$I" ethtool -i ens1f0np0
expect 'fail hook' 1 '' $'mlx5_core: firmware timeout\n'
rm "$I/.fake/fail/ethtool"
printf 'EPERM\n' >"$O/.fake/fail/mlnx_qos@--pfc"
call "$O" mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0
expect 'fail hook TOOL@WORD' 1 '' $'EPERM\n'
eq 'fail hook TOOL@WORD changed nothing' 0,0,0,0,0,0,0,0 "$(val "$O/.fake/dcb/ens1f0np0/pfc")"
call "$O" mlnx_qos -i ens1f0np0
eq 'fail hook TOOL@WORD spares other calls' 0 "$RC"
rm "$O/.fake/fail/mlnx_qos@--pfc"
printf 'Priority trust state: "dscp\\\x01\xff\n' >"$O/.fake/output/mlnx_qos"
call "$O" mlnx_qos -i ens1f0np0 --trust dscp
expect 'output hook is byte-exact' 0 "$(printf 'Priority trust state: "dscp\\\x01\xff')"$'\n' ''
eq 'output hook changed nothing' '' "$(val "$O/.fake/dcb/ens1f0np0/app")"
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
eq 'copied tree works and is independent' '64 0' \
  "$(grep -c . "$T/copy/.fake/dcb/ens1f1np1/app") $(grep -c . "$O/.fake/dcb/ens1f1np1/app")"
rm -r "$T/copy/sys/kernel/config/rdma_cm"
call "$T/copy" cma_roce_tos -d mlx5_0 -p 1
expect 'cma_roce_tos without rdma_cm configfs' 1 $'Module rdma_cm is not loaded or does not support configfs\n'

# ---------------------------------------------------------------------------------------
# fakehost.sh snapshot

"$FH" snapshot "$I" >"$T/before"
eq 'snapshot exit status' 0 $?
eq 'snapshot is sorted by path' '' "$(cut -d= -f1 "$T/before" | LC_ALL=C sort -c 2>&1)"
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

# As root, run isolates the command and mounts driverfs over ROOT/sys; without FUSE that
# run fails, so the environment is then checked unisolated.
iso=${FAKEHOST_ISOLATION-}
((EUID == 0 && !DRIVERFS)) && iso=none
# shellcheck disable=SC2016 # expanded by the inner bash, inside the fake host
FAKEHOST_ISOLATION=$iso "$FH" run "$O" -- bash -c 'printf "%s %s %s\n" "$(hostname)" "$ROCE_GEN_ROOT" "$STUB_LOG"; echo "$PATH"; exit 7' \
  >"$T/out" 2>"$T/err"
eq 'run: exit status is the command'\''s' 7 $?
eq 'run: environment' "$(lines "gpu-001.example.net $O $O/stub.log" "$O/bin:/usr/bin:/bin")" "$(val "$T/out")"
if ((EUID == 0 && DRIVERFS)); then
  eq 'run as root says it is isolated' 'fakehost run: isolated (root: unshare --mount --uts --net --fork)' "$(val "$T/err")"
  eq 'run as root: only lo in the network namespace' 1 \
    "$("$FH" run "$O" -- bash -c 'tail -n +3 /proc/net/dev | wc -l' 2>/dev/null)"
elif ((EUID == 0)); then
  skip 'isolated fakehost.sh run (needs the driver filesystem)'
fi
if ((EUID == 0)); then
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

# The last line is the verdict (tests/it/hosts.rs reads it); skips are said before it.
((skip == 0)) || printf '%d skipped (not counted as passed)\n' "$skip"
printf '%d passed, %d failed\n' "$pass" "$fail"
((fail == 0))

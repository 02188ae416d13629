#!/usr/bin/env bash
# Self-test of driverfs (the FUSE filesystem `fakehost.sh run` mounts over ROOT/sys) and of
# `fakehost.sh reload`. Builds OFED fake hosts in a temporary folder and, through
# `fakehost.sh run`, checks the kernel attribute semantics driverfs gives: the verbs
# traffic class (empty writes refused, -1 clears, "Global tclass=N"), ECN/CNP, DCQCN
# parameters, MTU limits, the GID table (unused entries: zero GID, EINVAL type; read-only),
# the rdma_cm configfs folder (mkdir/rmdir, values kept by the kernel), plain passthrough,
# CMD's status and output, two runs in parallel, no daemon or mount left afterwards, a loud
# failure without FUSE, and the driver reload. Everything runs once under this machine's
# bash and once under bash 5.1 from the bullseye root when it exists. Needs root (mount
# namespaces, FUSE). Prints "N passed, M failed"; exits 1 on any failure.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FH=$HERE/../fakehost.sh
T=$(mktemp -d)
trap 'rm -rf -- "$T"' EXIT
pass=0 fail=0
NIC=mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:01:00:00

eq() { # NAME WANT GOT
  if [[ $2 == "$3" ]]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    printf 'FAIL %s\n' "$1"
    diff -u --label want --label got <(printf '%s\n' "$2") <(printf '%s\n' "$3") | sed 's/^/    /'
  fi
}
val() { # FILE: its content, trailing newlines dropped
  local v=''
  IFS= read -r -d '' v <"$1" || true
  while [[ $v == *$'\n' ]]; do v=${v%$'\n'}; done
  printf '%s' "$v"
}
# expect_lines PREFIX WANT_FILE GOT_FILE: each "LABEL: value" line of WANT must be GOT's
# line for that LABEL.
expect_lines() {
  local line got g
  while IFS= read -r line; do
    got='(no line)'
    while IFS= read -r g; do
      if [[ $g == "${line%%: *}: "* ]]; then
        got=$g
        break
      fi
    done <"$3"
    eq "$1 ${line%%: *}" "$line" "$got"
  done <"$2"
}
exists() { if [[ -e $1 ]]; then echo yes; else echo no; fi; }

if ((EUID != 0)); then
  echo 'driverfs selftest: needs root (mount namespaces and FUSE)' >&2
  exit 1
fi

# ---------------------------------------------------------------------------------------
# lint

eq 'driverfs.py compiles' '' "$(python3 -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$HERE/driverfs.py" 2>&1)"
eq 'bash -n selftest.sh' '' "$(bash -n "$HERE/selftest.sh" 2>&1)"
if command -v shellcheck >/dev/null; then
  eq 'shellcheck: no findings' '' "$(shellcheck -s bash "$HERE/selftest.sh" "$FH" 2>&1)"
else
  echo 'SKIP shellcheck (not installed)'
fi

# ---------------------------------------------------------------------------------------
# What the scripts see inside a run. Helpers print "LABEL: RESULT", RESULT being "ok" or
# the error text of the failed write/mkdir/rmdir/rm, or what a read returned (\n escaped).

cat >"$T/inside.sh" <<'EOF'
S=$ROCE_GEN_ROOT/sys
TC=$S/class/infiniband/mlx5_0/tc/1/traffic_class
N=$S/class/net/ens1f0np0
NP=$N/ecn/roce_np RP=$N/ecn/roce_rp
CM=$S/kernel/config/rdma_cm
shopt -s nullglob
res() { # LABEL STATUS ERRTEXT
  if (($2 == 0)); then echo "$1: ok"; else echo "$1: ${3##*: }"; fi
}
w() { # LABEL FILE DATA: write DATA (printf %s, one write) to FILE
  local e
  e=$({ printf '%s' "$3" >"$2"; } 2>&1)
  res "$1" $? "$e"
}
wa() { # LABEL FILE DATA: append DATA to FILE
  local e
  e=$({ printf '%s' "$3" >>"$2"; } 2>&1)
  res "$1" $? "$e"
}
r() { # LABEL FILE: what one read returns
  local v
  if v=$(cat -- "$2" 2>&1 && printf x); then
    v=${v%x}
    echo "$1: ${v//$'\n'/\\n}"
  else
    echo "$1: ${v##*: }"
  fi
}
x() { # LABEL CMD...: run CMD, report ok or its error text
  local e
  e=$("${@:2}" 2>&1)
  res "$1" $? "$e"
}
count() { echo "$1: $(($# - 1))"; }

case ${1-} in
  main)
    r tc.initial "$TC"
    echo "tc.size: $(stat -c %s "$TC")"
    w tc.set "$TC" $'106\n'
    r tc.read "$TC"
    w tc.newline "$TC" $'\n'
    w tc.empty-line "$TC" ''$'\n'
    w tc.blank "$TC" ' '
    w tc.256 "$TC" 256
    w tc.text "$TC" abc
    r tc.kept "$TC"
    w tc.hex "$TC" 0x20
    r tc.hex-read "$TC"
    w tc.clear "$TC" $'-1\n'
    r tc.cleared "$TC"
    w tc.prefix "$TC" tclass=96
    r tc.prefix-read "$TC"

    r ecn.default "$NP/enable/3"
    w ecn.re-enable "$NP/enable/3" 1
    w ecn.off "$NP/enable/3" 0
    r ecn.off-read "$NP/enable/3"
    w ecn.two "$NP/enable/3" 2
    r ecn.two-read "$NP/enable/3"
    w ecn.on "$NP/enable/3" $'1\n'
    r ecn.on-read "$NP/enable/3"
    w ecn.text "$RP/enable/5" x
    r ecn.rp-kept "$RP/enable/5"
    r cnp.default "$NP/cnp_dscp"
    w cnp.set "$NP/cnp_dscp" 26
    r cnp.read "$NP/cnp_dscp"
    w cnp.wide "$NP/cnp_dscp" 64
    r cnp.wide-read "$NP/cnp_dscp"
    w prio.wide "$NP/cnp_802p_prio" 9
    r prio.wide-read "$NP/cnp_802p_prio"
    w rp.set "$RP/rpg_ai_rate" 50
    r rp.read "$RP/rpg_ai_rate"
    w rp.negative "$RP/rpg_ai_rate" -1
    r rp.negative-read "$RP/rpg_ai_rate"
    w rp.text "$RP/rpg_ai_rate" x
    w rp.np "$NP/min_time_between_cnps" $'8\n'
    r rp.np-read "$NP/min_time_between_cnps"
    w rp.wide "$RP/rpg_byte_reset" 4294967295
    r rp.wide-read "$RP/rpg_byte_reset"
    w rp.flag "$RP/clamp_tgt_rate" 3
    r rp.flag-read "$RP/clamp_tgt_rate"

    G=$S/class/infiniband/mlx5_0/ports/1
    r gid.default "$G/gids/1"
    r gid.type-default "$G/gid_attrs/types/1"
    r gid.ndev-default "$G/gid_attrs/ndevs/0"
    r gid.unused "$G/gids/5"
    r gid.type-unused "$G/gid_attrs/types/5"
    r gid.ndev-unused "$G/gid_attrs/ndevs/5"
    w gid.write "$G/gids/0" x
    w gid.type-write "$G/gid_attrs/types/1" x

    r mtu.default "$N/mtu"
    w mtu.set "$N/mtu" $'4200\n'
    r mtu.read "$N/mtu"
    w mtu.low "$N/mtu" 67
    w mtu.high "$N/mtu" 9979
    w mtu.text "$N/mtu" abc
    w mtu.newline "$N/mtu" $'\n'
    w mtu.max "$N/mtu" 9978
    r mtu.max-read "$N/mtu"

    w qos.any "$N/qos/tc_num" 'anything at all'
    r qos.read "$N/qos/tc_num"
    r plain.read "$N/address"
    echo "plain.size: $(stat -c %s "$N/address")"
    echo "plain.readlink: $(readlink "$N/device")"
    r plain.via-link "$N/device/vendor"
    w plain.create "$S/st.f" a
    wa plain.append "$S/st.f" b
    x plain.rename mv "$S/st.f" "$S/st.g"
    x plain.symlink ln -s st.g "$S/st.l"
    r plain.via-symlink "$S/st.l"
    x plain.chmod chmod 600 "$S/st.g"
    x plain.utime touch -d @1000000000 "$S/st.g"
    echo "plain.stat: $(stat -c '%a %Y %s' "$S/st.g")"
    x plain.truncate truncate -s 1 "$S/st.g"
    r plain.truncated "$S/st.g"
    x plain.mkdir mkdir "$S/st.d"
    x plain.rmdir rmdir "$S/st.d"
    x plain.unlink rm "$S/st.g" "$S/st.l"
    count plain.gone "$S"/st.*

    # rdma_cm: a fake host may come with the folder made (older fakehost.sh); start fresh
    if [[ -d $CM/mlx5_0 ]]; then rmdir "$CM/mlx5_0"; fi
    rm -rf "$ROCE_GEN_ROOT/.fake/cma"
    count cm.empty "$CM"/*
    x cm.no-device mkdir "$CM/mlx5_9"
    x cm.mkdir mkdir "$CM/mlx5_0"
    echo "cm.ports: $(cd "$CM/mlx5_0/ports" && echo *)"
    echo "cm.files: $(cd "$CM/mlx5_0/ports/1" && echo *)"
    r cm.mode-default "$CM/mlx5_0/ports/1/default_roce_mode"
    r cm.tos-default "$CM/mlx5_0/ports/1/default_roce_tos"
    w cm.mode-v3 "$CM/mlx5_0/ports/1/default_roce_mode" 'RoCE v3'
    w cm.mode-case "$CM/mlx5_0/ports/1/default_roce_mode" 'roce v2'
    w cm.mode-v1 "$CM/mlx5_0/ports/1/default_roce_mode" $'IB/RoCE v1\n'
    r cm.mode-read "$CM/mlx5_0/ports/1/default_roce_mode"
    w cm.tos "$CM/mlx5_0/ports/1/default_roce_tos" $'106\n'
    r cm.tos-read "$CM/mlx5_0/ports/1/default_roce_tos"
    w cm.tos-256 "$CM/mlx5_0/ports/1/default_roce_tos" 256
    w cm.tos-text "$CM/mlx5_0/ports/1/default_roce_tos" x
    w cm.create "$CM/mlx5_0/other" x
    x cm.subdir mkdir "$CM/mlx5_0/other"
    x cm.rmdir-ports rmdir "$CM/mlx5_0/ports"
    x cm.unlink rm "$CM/mlx5_0/ports/1/default_roce_tos"
    x cm.rename mv "$CM/mlx5_0" "$CM/mlx5_1"
    x cm.rmdir rmdir "$CM/mlx5_0"
    count cm.gone "$CM"/*
    ;;
  again)
    x cm.mkdir-again mkdir "$CM/mlx5_0"
    r cm.mode-kept "$CM/mlx5_0/ports/1/default_roce_mode"
    r cm.tos-kept "$CM/mlx5_0/ports/1/default_roce_tos"
    x cm.rmdir-again rmdir "$CM/mlx5_0"
    ;;
  reloaded)
    x cm.mkdir-reloaded mkdir "$CM/mlx5_0"
    r cm.mode-reloaded "$CM/mlx5_0/ports/1/default_roce_mode"
    r cm.tos-reloaded "$CM/mlx5_0/ports/1/default_roce_tos"
    x cm.rmdir-reloaded rmdir "$CM/mlx5_0"
    r reload.tc "$TC"
    r reload.mtu "$N/mtu"
    r reload.ecn "$NP/enable/3"
    r reload.cnp "$NP/cnp_dscp"
    r reload.rp "$RP/rpg_ai_rate"
    ;;
  dirty)
    w dirty.mtu "$N/mtu" 4200
    w dirty.tc "$TC" 106
    w dirty.ecn "$NP/enable/3" 0
    w dirty.cnp "$NP/cnp_dscp" 26
    w dirty.rp "$RP/rpg_ai_rate" 9
    ;;
  parallel)
    w par.set "$TC" "$2"
    sleep 0.5
    r par.read "$TC"
    ;;
esac
EOF

cat >"$T/want-main" <<'EOF'
tc.initial: 
tc.size: 4096
tc.set: ok
tc.read: Global tclass=106\n
tc.newline: Invalid argument
tc.empty-line: Invalid argument
tc.blank: Invalid argument
tc.256: Invalid argument
tc.text: Invalid argument
tc.kept: Global tclass=106\n
tc.hex: ok
tc.hex-read: Global tclass=32\n
tc.clear: ok
tc.cleared: 
tc.prefix: ok
tc.prefix-read: Global tclass=96\n
ecn.default: 1\n
ecn.re-enable: Operation not permitted
ecn.off: ok
ecn.off-read: 0\n
ecn.two: ok
ecn.two-read: 0\n
ecn.on: ok
ecn.on-read: 1\n
ecn.text: Invalid argument
ecn.rp-kept: 1\n
cnp.default: 48\n
cnp.set: ok
cnp.read: 26\n
cnp.wide: ok
cnp.wide-read: 0\n
prio.wide: ok
prio.wide-read: 1\n
rp.set: ok
rp.read: 50\n
rp.negative: ok
rp.negative-read: -1\n
rp.text: Invalid argument
rp.np: ok
rp.np-read: 8\n
rp.wide: ok
rp.wide-read: -1\n
rp.flag: ok
rp.flag-read: 1\n
gid.default: fe80:0000:0000:0000:ba3f:d2ff:fe01:0000\n
gid.type-default: RoCE v2\n
gid.ndev-default: ens1f0np0\n
gid.unused: 0000:0000:0000:0000:0000:0000:0000:0000\n
gid.type-unused: Invalid argument
gid.ndev-unused: Invalid argument
gid.write: Permission denied
gid.type-write: Permission denied
mtu.default: 1500\n
mtu.set: ok
mtu.read: 4200\n
mtu.low: Invalid argument
mtu.high: Invalid argument
mtu.text: Invalid argument
mtu.newline: Invalid argument
mtu.max: ok
mtu.max-read: 9978\n
qos.any: ok
qos.read: anything at all
plain.read: b8:3f:d2:01:00:00\n
plain.size: 18
plain.readlink: ../../../devices/pci0000:00/0000:1a:00.0
plain.via-link: 0x15b3\n
plain.create: ok
plain.append: ok
plain.rename: ok
plain.symlink: ok
plain.via-symlink: ab
plain.chmod: ok
plain.utime: ok
plain.stat: 600 1000000000 2
plain.truncate: ok
plain.truncated: a
plain.mkdir: ok
plain.rmdir: ok
plain.unlink: ok
plain.gone: 0
cm.empty: 0
cm.no-device: No such device
cm.mkdir: ok
cm.ports: 1
cm.files: default_roce_mode default_roce_tos
cm.mode-default: RoCE v2\n
cm.tos-default: 0\n
cm.mode-v3: Invalid argument
cm.mode-case: Invalid argument
cm.mode-v1: ok
cm.mode-read: IB/RoCE v1\n
cm.tos: ok
cm.tos-read: 106\n
cm.tos-256: Numerical result out of range
cm.tos-text: Invalid argument
cm.create: Permission denied
cm.subdir: Operation not permitted
cm.rmdir-ports: Operation not permitted
cm.unlink: Operation not permitted
cm.rename: Operation not permitted
cm.rmdir: ok
cm.gone: 0
EOF

SHELLS=(bash)
BULLSEYE_BASH=${ROCE_GEN_BULLSEYE:-/var/cache/roce-gen/bullseye}/bin/bash
if [[ -x $BULLSEYE_BASH ]]; then SHELLS+=("$BULLSEYE_BASH"); else echo "SKIP bash 5.1 ($BULLSEYE_BASH is not there)"; fi

for SH in "${SHELLS[@]}"; do
  # shellcheck disable=SC2016 # expanded by the bash under test
  B=$("$SH" -c 'echo "bash ${BASH_VERSION%%(*}"')
  A=$T/a.${#SH} Z=$T/z.${#SH}
  "$SH" "$FH" create "$A" --kind ofed --host a --nic "$NIC" &&
    "$SH" "$FH" create "$Z" --kind ofed --host z --nic "$NIC"
  eq "$B: fakehost create" 0 $?
  mkdir -p "$A/sys/class/net/ens1f0np0/qos"
  echo 8 >"$A/sys/class/net/ens1f0np0/qos/tc_num"

  # -- the attribute semantics, as a script in the run sees them
  "$SH" "$FH" run "$A" -- "$SH" "$T/inside.sh" main >"$T/got" 2>"$T/err"
  eq "$B: run exit status" 0 $?
  expect_lines "$B:" "$T/want-main" "$T/got"
  # outside the run the plain backing files hold the kernel's values
  eq "$B: backing traffic_class" 96 "$(val "$A/sys/class/infiniband/mlx5_0/tc/1/traffic_class")"
  eq "$B: backing mtu" 9978 "$(val "$A/sys/class/net/ens1f0np0/mtu")"
  eq "$B: backing cnp_dscp" 0 "$(val "$A/sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp")"
  eq "$B: rdma_cm folder gone from the backing" '' "$(ls -A "$A/sys/kernel/config/rdma_cm")"
  eq "$B: rmdir kept the kernel's values" 'IB/RoCE v1 106' \
    "$(val "$A/.fake/cma/mlx5_0/1/mode") $(val "$A/.fake/cma/mlx5_0/1/tos")"

  "$SH" "$FH" run "$A" -- "$SH" "$T/inside.sh" again >"$T/got" 2>/dev/null
  printf '%s\n' 'cm.mkdir-again: ok' 'cm.mode-kept: IB/RoCE v1\n' 'cm.tos-kept: 106\n' 'cm.rmdir-again: ok' >"$T/want"
  expect_lines "$B:" "$T/want" "$T/got"

  # -- CMD's status, stdout and stderr pass through
  # shellcheck disable=SC2016 # expanded inside the run
  "$SH" "$FH" run "$A" -- "$SH" -c 'echo out; echo err >&2; exit 7' >"$T/out" 2>"$T/err"
  eq "$B: status of CMD" 7 $?
  eq "$B: stdout of CMD" out "$(val "$T/out")"
  eq "$B: stderr of CMD" $'fakehost run: isolated (root: unshare --mount --uts --net --fork)\nerr' "$(val "$T/err")"

  # -- two runs in parallel on two roots
  "$SH" "$FH" run "$A" -- "$SH" "$T/inside.sh" parallel 10 >"$T/par-a" 2>/dev/null &
  pa=$!
  "$SH" "$FH" run "$Z" -- "$SH" "$T/inside.sh" parallel 20 >"$T/par-z" 2>/dev/null &
  pz=$!
  wait "$pa"
  ra=$?
  wait "$pz"
  eq "$B: parallel runs" '0 0' "$ra $?"
  eq "$B: parallel run a" $'par.set: ok\npar.read: Global tclass=10\\n' "$(val "$T/par-a")"
  eq "$B: parallel run z" $'par.set: ok\npar.read: Global tclass=20\\n' "$(val "$T/par-z")"
  eq "$B: no daemon left" '' "$(pgrep -f -- "--ready-fd 3 $T/" || true)"
  eq "$B: no mount left" '' "$(grep -F -- " $T/" /proc/self/mountinfo || true)"

  # -- without FUSE the run fails loudly and CMD does not run
  FAKEHOST_PYTHON=/bin/false "$SH" "$FH" run "$A" -- touch "$T/ran" 2>"$T/err"
  eq "$B: run without driverfs fails" 2 $?
  eq "$B: ... and says why" 1 "$(grep -c 'driverfs did not mount on' "$T/err")"
  eq "$B: ... without running CMD" no "$(exists "$T/ran")"
  # FAKEHOST_ISOLATION=none keeps the plain files (no driverfs), and says so
  # shellcheck disable=SC2016 # expanded inside the run
  FAKEHOST_ISOLATION=none "$SH" "$FH" run "$Z" -- "$SH" -c \
    'printf "\n" >"$ROCE_GEN_ROOT/sys/class/infiniband/mlx5_0/tc/1/traffic_class"' 2>"$T/err"
  eq "$B: unisolated run writes the plain file" 0 $?
  eq "$B: ... and says it is not isolated" 'fakehost run: not isolated (FAKEHOST_ISOLATION=none)' "$(val "$T/err")"

  # -- fakehost.sh reload: driver defaults, then the post-start hook through a run
  "$SH" "$FH" run "$A" -- "$SH" "$T/inside.sh" dirty >"$T/got" 2>/dev/null
  printf '%s\n' 'dirty.mtu: ok' 'dirty.tc: ok' 'dirty.ecn: ok' 'dirty.cnp: ok' 'dirty.rp: ok' >"$T/want"
  expect_lines "$B:" "$T/want" "$T/got"
  echo 'off off off' >"$A/.fake/net/ens1f0np0/pause"
  D=$A/.fake/dcb/ens1f0np0
  echo 'dscp 26 3' >"$D/app"
  echo 0,0,0,1,0,0,0,0 >"$D/pfc"
  echo 30 >"$D/cable_len"
  echo 'cee ieee' >"$D/dcbx"
  mkdir -p "$A/.fake/cma/mlx5_0/1" "$A/etc/infiniband" "$A/etc/udev/rules.d"
  echo 'IB/RoCE v1' >"$A/.fake/cma/mlx5_0/1/mode"
  cat >"$A/etc/infiniband/post-start-hook.sh" <<'EOF'
#!/bin/bash
tc=$ROCE_GEN_ROOT/sys/class/infiniband/mlx5_0/tc/1/traffic_class
printf '\n' 2>/dev/null >"$tc" || echo 'hook: the empty write was refused'
printf '64\n' >"$tc"
echo "hook ran in ${PWD##*/} with ${ROCE_GEN_ROOT##*/}"
exit 3
EOF
  chmod 755 "$A/etc/infiniband/post-start-hook.sh"
  cat >"$A/etc/udev/rules.d/90-roce-gen.rules" <<'EOF'
# roce-gen: apply again when the driver comes back
ACTION=="add", SUBSYSTEM=="infiniband", KERNEL=="mlx5_*", RUN+="/usr/bin/systemctl --no-block restart roce-gen.service"
ACTION=="add", SUBSYSTEM=="net", ENV{SYSTEMD_WANTS}+="roce-gen.service"
EOF
  echo 'ACTION=="add", RUN+="/bin/other"' >"$A/etc/udev/rules.d/10-other.rules"
  "$SH" "$FH" reload "$A" >"$T/out" 2>"$T/err"
  eq "$B: reload returns the hook's status" 3 $?
  # The device goes and comes back; udevd.py runs the rules' RUN+= programs the fake host has
  # (systemctl of a unit without a file: exit 5), and no net event comes.
  eq "$B: reload output" "$(printf '%s\n' \
    'udev: remove /devices/pci0000:00/0000:1a:00.0/infiniband/mlx5_0' \
    'udev: add /devices/pci0000:00/0000:1a:00.0/infiniband/mlx5_0' \
    'udev:   etc/udev/rules.d/10-other.rules:1: RUN+="/bin/other"' \
    'udev:   etc/udev/rules.d/90-roce-gen.rules:2: RUN+="/usr/bin/systemctl --no-block restart roce-gen.service"' \
    'udev:   not run: /bin/other (the fake host has no /bin/other)' \
    'udev:   ran /usr/bin/systemctl --no-block restart roce-gen.service (etc/udev/rules.d/90-roce-gen.rules:2): exit 5' \
    'hook: the empty write was refused' \
    "hook ran in ${A##*/} with ${A##*/}")" "$(val "$T/out")"
  eq "$B: reload says what it did" 4 "$(grep -c -e 'driver defaults restored' -e 'running /etc/infiniband/post-start-hook.sh' \
    -e 'exited with status 3' -e 'isolated (root' "$T/err")"
  eq "$B: reload: pause on" 'on on off' "$(val "$A/.fake/net/ens1f0np0/pause")"
  eq "$B: reload: DCB APP table, PFC and cable length at the defaults, DCBX mode kept" 'app= cable_len=7 dcbx=cee ieee pfc=0,0,0,0,0,0,0,0' \
    "$(cd "$D" && for f in *; do printf '%s=%s ' "$f" "$(val "$f")"; done | sed 's/ $//')"
  eq "$B: reload: rdma_cm values cleared" no "$(exists "$A/.fake/cma")"
  "$SH" "$FH" run "$A" -- "$SH" "$T/inside.sh" reloaded >"$T/got" 2>/dev/null
  printf '%s\n' 'cm.mkdir-reloaded: ok' 'cm.mode-reloaded: RoCE v2\n' 'cm.tos-reloaded: 0\n' 'cm.rmdir-reloaded: ok' \
    'reload.tc: Global tclass=64\n' 'reload.mtu: 1500\n' 'reload.ecn: 1\n' 'reload.cnp: 48\n' 'reload.rp: 5\n' >"$T/want"
  expect_lines "$B:" "$T/want" "$T/got"
  eq "$B: mkdir/rmdir without a change leaves no kernel state" no "$(exists "$A/.fake/cma")"
  chmod 644 "$A/etc/infiniband/post-start-hook.sh"
  "$SH" "$FH" reload "$A" >/dev/null 2>"$T/err"
  eq "$B: reload with a hook that is not executable" 0 $?
  eq "$B: ... says it is skipped" 1 "$(grep -c 'is not executable, so openibd would not run it' "$T/err")"
  "$SH" "$FH" reload "$T" 2>/dev/null
  eq "$B: reload refuses a non-fake root" 2 $?
  eq "$B: no daemon left at the end" '' "$(pgrep -f -- "--ready-fd 3 $T/" || true)"
done

# ---------------------------------------------------------------------------------------
# What driverfs adds to a run: the mean of 20 runs of `true`, isolated (namespace + driverfs)
# and with FAKEHOST_ISOLATION=none (neither); a bare unshare shows the namespace's share.

ms() { # CMD...: mean wall time of 20 runs, in ms
  local i s e
  s=$(date +%s%N)
  for ((i = 0; i < 20; i++)); do "$@" >/dev/null 2>&1; done
  e=$(date +%s%N)
  echo $(((e - s) / 20000000))
}
full=$(ms bash "$FH" run "$A" -- true)
plain=$(FAKEHOST_ISOLATION=none ms bash "$FH" run "$A" -- true)
bare=$(ms unshare --mount --uts --net --fork true)
echo "timing: fakehost run ${full} ms per run, ${plain} ms unisolated; a bare unshare takes ${bare} ms (twice per isolated run)"

printf '%d passed, %d failed\n' "$pass" "$fail"
((fail == 0))

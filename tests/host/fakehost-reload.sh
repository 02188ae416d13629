# shellcheck shell=bash
# fakehost-reload.sh, sourced by fakehost.sh: the ways a fake host's RDMA devices come back
# (a driver reload and its kin, a reboot) and the rdma-core naming of `create --naming rdma`.
#
# What the kernel does when mlx5 comes back (module reload, openibd restart, devlink reload,
# mlxfwreset, health recovery, PCI rescan: the same to udev): every RDMA device is unregistered
# (a `remove` uevent each), then registered again under the driver's own name, mlx5_N with the
# lowest free N in probe (PCI) order (mlx5-ofa_kernel and upstream drivers/infiniband/hw/mlx5/
# main.c, ib_register_device(..., "mlx5_%d")), with an `add` uevent carrying that name; a rule
# that renames it (rdma-core's 60-rdma-persistent-naming.rules, when the host has it) runs while
# that event is processed and the rename sends a `move` uevent (drivers/infiniband/core/device.c,
# ib_device_rename → device_rename). tests/host/udevd/udevd.py processes each event against the
# host's rules and runs their RUN+= programs (the host's own stand-ins: systemctl --no-block
# queues a job). openibd alone runs its post-start hook. Then systemd gets to the queued jobs
# (stubs/pid1 run-jobs): a restarted unit runs its ExecStart, so the unit, not the trigger,
# re-applies.

FAKEHOST_RELOAD_HOWS='openibd modprobe devlink mlxfwreset recovery rescan'

# fakehost_rdma_naming ROOT: the host has rdma-core's naming rule (fixtures/udev/) and
# rdma_rename in udev's folder, and its devices carry the names the rule gave them at boot.
fakehost_rdma_naming() (
  set -eu
  shopt -s nullglob
  local root=$1 d
  mkdir -p -- "$root/usr/lib/udev/rules.d"
  cp -- "$FAKEHOST_FIXTURES/udev/60-rdma-persistent-naming.rules" "$root/usr/lib/udev/rules.d/"
  ln -s ../../../lib/fakehost/rdma_rename "$root/usr/lib/udev/rdma_rename"
  for d in "$root"/sys/class/infiniband/*; do
    ROCE_GEN_ROOT=$root STUB_LOG=/dev/null "$root/usr/lib/udev/rdma_rename" "${d##*/}" NAME_FALLBACK >/dev/null
  done
  rm -f -- "$root/.fake/udev/queue"
)

# fakehost_udev ROOT ACTION CLASS/NAME: one event through udevd.py (its lines on stdout).
fakehost_udev() {
  "${FAKEHOST_PYTHON:-/usr/bin/python3}" "$FAKEHOST_DIR/udevd/udevd.py" "$@"
}

# fakehost_reregister ROOT: the RDMA devices go and come back, with their uevents (see above).
fakehost_reregister() (
  set -u
  shopt -s nullglob
  local root=$1 d pci k=0 name rc=0
  local -a devs=() bdfs=()
  local IFS=$'\n'
  # Probe order: by PCI address.
  for d in "$root"/sys/class/infiniband/*; do
    [[ -L $d/device ]] || continue
    pci=$(cd -- "$d/device" && pwd -P) || continue
    bdfs+=("${pci##*/} ${d##*/}")
  done
  ((${#bdfs[@]})) || exit 0
  for d in $(printf '%s\n' "${bdfs[@]}" | sort); do devs+=("${d#* }"); done
  unset IFS
  mkdir -p -- "$root/.fake/udev/gone"
  for name in "${devs[@]}"; do
    fakehost_udev "$root" remove "infiniband/$name" || rc=$?
  done
  for name in "${devs[@]}"; do
    pci=$(cd -- "$root/sys/class/infiniband/$name/device" && pwd -P)
    rm -f -- "$pci/infiniband/$name"
    mv -- "$root/sys/class/infiniband/$name" "$root/.fake/udev/gone/$k"
    printf '%s\n' "$pci" >"$root/.fake/udev/gone/$k.pci"
    k=$((k + 1))
  done
  local real
  real=$(cd -P -- "$root" && pwd)
  for ((k = 0; k < ${#devs[@]}; k++)); do
    name=mlx5_$k
    pci=$(<"$root/.fake/udev/gone/$k.pci")
    mv -- "$root/.fake/udev/gone/$k" "$root/sys/class/infiniband/$name"
    rm -f -- "$root/.fake/udev/gone/$k.pci"
    # Relative, at the function's depth (deeper below bridges on a pcitree host).
    fakehost_up "${pci#"$real"/}/infiniband"
    ln -s -- "${REPLY}class/infiniband/$name" "$pci/infiniband/$name"
    fakehost_udev "$root" add "infiniband/$name" || rc=$?
  done
  rmdir -- "$root/.fake/udev/gone" 2>/dev/null || true
  exit "$rc"
)

# fakehost_run_jobs ROOT: systemd runs the jobs queued (isolated, as the scripts run), if any.
fakehost_run_jobs() {
  local root=$1 f
  for f in "$root"/.fake/systemd/jobs/*; do
    if [[ -f $f ]]; then
      fakehost_run "$root" -- "$root/lib/fakehost/pid1" run-jobs
      return
    fi
  done
  return 0
}

# fakehost_reload ROOT [--how HOW]: what a driver reload does to the host. HOW is openibd (the
# default: `openibd restart`), modprobe (mlx5_ib and mlx5_core removed and loaded again), devlink
# (`devlink dev reload`), mlxfwreset (a firmware reset), recovery (mlx5 health recovery) or
# rescan (PCI remove and rescan). Every runtime setting returns to the driver's default: verbs
# traffic class unset, ECN on for every priority, CNP DSCP 48 and priority 6, the RDMA-CM
# defaults of every device (RoCE v2, ToS 0: .fake/cma cleared, the files of an existing
# rdma_cm/DEV folder rewritten), MTU 1500, the driver's DCB netlink state as the stand-ins keep
# it (stubs/mlx5-dcb.sh: .fake/dcb/IF/app empty, pfc all 0, cable_len 7, as create writes
# them: PCP trust, no PFC, 7 m), global pause on (.fake/net/IF/pause) and the DCQCN
# parameters at their firmware defaults. Kept: the DCBX mode (.fake/dcb/IF/dcbx, a firmware
# register the driver only queries at load) and the link-flap log.
# Then the devices come back with their uevents (fakehost_reregister: "udev: ..." lines on
# stdout). With openibd, ROOT/etc/infiniband/post-start-hook.sh runs when it is executable,
# through fakehost_run (isolated, ROCE_GEN_ROOT=ROOT, working folder ROOT), as openibd does after
# starting the stack. Last, systemd runs the jobs the rules and the hook queued. Returns the
# hook's status (0 without one), or 1 when udevd.py failed.
fakehost_reload() (
  set -u
  shopt -s nullglob
  local root=${1-} how=openibd d f rc=0 hook=etc/infiniband/post-start-hook.sh
  if [[ -z $root || ! -d $root/.fake ]]; then
    printf 'fakehost reload: %s is not a fake host root\n' "$root" >&2
    exit 2
  fi
  shift
  if [[ ${1-} == --how ]]; then
    how=${2-}
    [[ " $FAKEHOST_RELOAD_HOWS boot " == *" $how "* ]] || {
      printf 'fakehost reload: --how must be one of %s\n' "$FAKEHOST_RELOAD_HOWS" >&2
      exit 2
    }
  fi
  root=$(cd -- "$root" && pwd)
  cd -- "$root" || exit 2
  for f in sys/class/infiniband/*/tc/*/traffic_class; do : >"$f"; done
  for f in sys/class/net/*/ecn/roce_[nr]p/enable/[0-7]; do echo 1 >"$f"; done
  for f in sys/class/net/*/ecn/roce_np/cnp_dscp; do echo 48 >"$f"; done
  for f in sys/class/net/*/ecn/roce_np/cnp_802p_prio; do echo 6 >"$f"; done
  for d in sys/class/net/*/ecn; do
    for f in $FAKEHOST_DCQCN_DEFAULTS; do [[ ! -f $d/${f%%=*} ]] || echo "${f#*=}" >"$d/${f%%=*}"; done
  done
  for f in sys/class/net/*/mtu; do echo 1500 >"$f"; done
  rm -rf -- .fake/cma
  for f in sys/kernel/config/rdma_cm/*/ports/*/default_roce_mode; do echo 'RoCE v2' >"$f"; done
  for f in sys/kernel/config/rdma_cm/*/ports/*/default_roce_tos; do echo 0 >"$f"; done
  for d in .fake/dcb/*/; do
    : >"$d"app
    echo 0,0,0,0,0,0,0,0 >"$d"pfc
    echo 7 >"$d"cable_len
  done
  for f in .fake/net/*/pause; do echo 'on on off' >"$f"; done
  case $how in
    openibd) echo 'fakehost reload: driver defaults restored (openibd restart)' >&2 ;;
    boot) echo 'fakehost reload: the driver starts with its defaults (boot)' >&2 ;;
    *) echo "fakehost reload: driver defaults restored ($how; openibd does not run)" >&2 ;;
  esac

  fakehost_reregister "$root" || rc=1

  if [[ $how == openibd || $how == boot ]]; then
    if [[ -f $hook && -x $hook ]]; then
      echo "fakehost reload: running /$hook, as openibd does after starting the stack" >&2
      fakehost_run "$root" -- "$root/$hook"
      rc=$?
      echo "fakehost reload: /$hook exited with status $rc" >&2
    elif [[ -e $hook ]]; then
      echo "fakehost reload: /$hook is not executable, so openibd would not run it" >&2
    fi
  fi
  fakehost_run_jobs "$root"
  exit "$rc"
)

# fakehost_reboot ROOT: the firmware loads each card's next-boot NV configuration; systemd
# starts with every unit inactive and a start job for each enabled unit multi-user.target wants
# (stubs/pid1 boot); the driver registers the devices with its defaults and udev processes their
# `add` events (as coldplug does), openibd runs its hook where OFED is; then systemd runs the
# jobs: the boot unit runs once. Returns what fakehost_reload returns.
fakehost_reboot() (
  set -u
  shopt -s nullglob
  local root=${1-} f name def next
  if [[ -z $root || ! -d $root/.fake ]]; then
    printf 'fakehost reboot: %s is not a fake host root\n' "$root" >&2
    exit 2
  fi
  for f in "$root"/.fake/nvconfig/*; do
    while read -r name def _ next; do
      [[ -n $name ]] && printf '%s %s %s %s\n' "$name" "$def" "$next" "$next"
    done <"$f" >"$f.new"
    mv -f -- "$f.new" "$f"
  done
  echo 'fakehost reboot: the firmware took its next-boot configuration' >&2
  ROCE_GEN_ROOT=$root "$root/lib/fakehost/pid1" boot
  fakehost_reload "$root" --how boot
)

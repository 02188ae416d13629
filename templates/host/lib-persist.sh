# shellcheck shell=bash
# lib-persist.sh, part of lib.sh: persistence. Apply installs the bundle and the cluster's boot
# unit (it runs apply --boot, which waits, bounded, for the planned devices) and what re-applies
# the settings when the RDMA devices come back without a reboot (a driver reload, devlink
# reload, firmware reset, health recovery or PCI rescan wipes them): on every host a udev rule
# on the planned ports' PCI functions, and on OFED hosts also openibd's post-start hook, chained
# to any hook already there. Both only ask systemd to run the unit again. Rollback removes
# exactly what apply added; rg_rollback is the whole of rollback.sh.

# The bundle's copy of the unit; it is installed as roce-gen-<cluster>.service (rg_persist_init)
# so that two clusters' bundles on one host keep their own. A cluster name is letters, digits,
# '.', '_' and '-', all valid in a unit name as they are: no systemd escaping is needed.
RG_UNIT_MEMBER=roce-gen.service
# The one name every cluster's unit had before; apply replaces it when it is this cluster's.
RG_LEGACY_UNIT=roce-gen.service
# OFED's openibd runs this after it (re)starts the stack. One hook serves every cluster
# installed (a line each); a hook found there that is not roce-gen's is kept beside it and
# chained.
RG_HOOK=/etc/infiniband/post-start-hook.sh
RG_HOOK_CHAINED=/etc/infiniband/post-start-hook.sh.roce-gen-chained
RG_HOOK_MARK="# roce-gen reload hook"
# The unit's name and file under the root and the cluster's udev rule (rg_persist_init).
RG_UNIT=""
RG_UNIT_FILE=""
RG_UDEV_RULE=""

# rg_persist_init: what follows from plan.sh and the root (rg_init).
rg_persist_init() {
  RG_UNIT="roce-gen-$RG_CLUSTER.service"
  RG_UNIT_FILE="$RG_ROOT/etc/systemd/system/$RG_UNIT"
  RG_UDEV_RULE="/etc/udev/rules.d/90-roce-gen-$RG_CLUSTER.rules"
}

# rg_bundle_files: the bundle's files as SHA256SUMS lists them, then SHA256SUMS itself.
rg_bundle_files() {
  local sum name
  while read -r sum name; do
    [ -n "$sum" ] && printf '%s\n' "${name#\*}"
  done <"$RG_DIR/SHA256SUMS"
  printf 'SHA256SUMS\n'
}

# rg_legacy_unit_of CLUSTER [INSTALL_DIR]: true when /etc/systemd/system/roce-gen.service, the
# unit every cluster's bundle installed under one name before, is that cluster's: its
# ExecStart= or ConditionPathExists= names the cluster's install folder.
rg_legacy_unit_of() {
  local dir=${2:-/opt/roce-gen/$1} line
  [ -f "$RG_ROOT/etc/systemd/system/$RG_LEGACY_UNIT" ] || return 1
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in
      "ExecStart=$dir/apply.sh "* | "ConditionPathExists=$dir/apply.sh") return 0 ;;
    esac
  done <"$RG_ROOT/etc/systemd/system/$RG_LEGACY_UNIT"
  return 1
}

# rg_installed: true when this very bundle is installed and its unit enabled, and no unit of
# this cluster is left under the old shared name.
rg_installed() {
  cmp -s "$RG_ROOT$RG_INSTALL_DIR/SHA256SUMS" "$RG_DIR/SHA256SUMS" &&
    cmp -s "$RG_UNIT_FILE" "$RG_DIR/$RG_UNIT_MEMBER" &&
    systemctl is-enabled "$RG_UNIT" >/dev/null 2>&1 &&
    ! rg_legacy_unit_of "$RG_CLUSTER" "$RG_INSTALL_DIR"
}

# rg_copy_bundle DIR: copies the bundle's files into DIR, with one cp.
rg_copy_bundle() {
  local f files=()
  while IFS= read -r f; do
    files+=("$RG_DIR/$f")
  done < <(rg_bundle_files)
  rg_do cp -p ${files[@]+"${files[@]}"} "$1/"
}

# rg_drop_legacy_unit: disables and removes roce-gen.service when this cluster's bundle
# installed it (never another cluster's).
rg_drop_legacy_unit() {
  rg_legacy_unit_of "$RG_CLUSTER" "$RG_INSTALL_DIR" || return 0
  rg_do systemctl disable "$RG_LEGACY_UNIT" || true
  rg_do rm -f "$RG_ROOT/etc/systemd/system/$RG_LEGACY_UNIT"
}

rg_persist() {
  local dest="$RG_ROOT$RG_INSTALL_DIR" change="absent → installed"
  if [ "$RG_BOOT" = yes ]; then
    rg_check persistence "" pass info installed installed "running from the installed bundle at boot"
    return 0
  elif [ "$RG_PERSIST" != yes ]; then
    rg_check persistence "" skip info no "" "the plan says persistence = no: the settings last until the next reboot"
    return 0
  elif [ "$RG_NO_PERSIST" = yes ]; then
    rg_check persistence "" skip info no "" "--no-persist: the settings last until the next reboot"
    return 0
  elif rg_failed; then
    rg_check persistence "" skip warning installed "" "not installed: apply did not succeed"
    return 0
  elif rg_installed; then
    rg_check persistence "" pass info installed installed "$RG_UNIT is installed and enabled; $RG_INSTALL_DIR is this bundle"
    rg_persist_reload
    rg_health_install
    return 0
  fi
  rg_save persistence "" absent
  if rg_legacy_unit_of "$RG_CLUSTER" "$RG_INSTALL_DIR"; then
    change="$RG_LEGACY_UNIT → $RG_UNIT"
  elif [ -e "$dest" ] || [ -e "$RG_UNIT_FILE" ]; then
    change="another bundle → this bundle"
  fi
  change+=" ($RG_UNIT, $RG_INSTALL_DIR)"
  rg_progress "installing the bundle in $RG_INSTALL_DIR and enabling $RG_UNIT"
  # The bundle is copied beside the install folder and renamed over it, so a boot never finds
  # half a bundle there. The nccl.env apply wrote there goes along (rg_nccl_env updates it).
  if ! { rg_do mkdir -p "$dest.new.$$" && rg_copy_bundle "$dest.new.$$" &&
    { [ ! -f "$dest/nccl.env" ] || rg_do cp -p "$dest/nccl.env" "$dest.new.$$/nccl.env"; } &&
    rg_do rm -rf "$dest.old.$$" &&
    { [ ! -e "$dest" ] || rg_do mv "$dest" "$dest.old.$$"; } &&
    rg_do mv "$dest.new.$$" "$dest" && rg_do rm -rf "$dest.old.$$"; }; then
    rm -rf "$dest.new.$$"
    rg_check persistence "" fail error installed "" "could not install the bundle in $RG_INSTALL_DIR (see the log above)"
    return 0
  fi
  rg_drop_legacy_unit
  rg_do mkdir -p "${RG_UNIT_FILE%/*}" || true
  rg_do cp "$RG_DIR/$RG_UNIT_MEMBER" "$RG_UNIT_FILE" || true
  rg_do systemctl daemon-reload || true
  if ! rg_do systemctl enable "$RG_UNIT"; then
    rg_check persistence "" fail error installed "" "systemctl enable $RG_UNIT failed"
  elif [ "$RG_DRY_RUN" = yes ]; then
    rg_check_action persistence "" warn info installed "" "dry run: would install the bundle in $RG_INSTALL_DIR and enable $RG_UNIT" "$change"
  else
    rg_check_action persistence "" changed info installed installed "installed the bundle in $RG_INSTALL_DIR and enabled $RG_UNIT" "$change"
  fi
  rg_persist_reload
  rg_health_install
}

# How the rule and the hook ask systemd to re-apply: `try-restart`, then `start` (systemd's
# src/core/job.c). The unit is a oneshot that stays active after its run (RemainAfterExit), so:
# - at boot, udev's coldplug and openibd come while the unit is inactive and its boot start job
#   waits for network-online.target: try-restart collapses to a no-op on a unit that is not
#   active (job_type_collapse), and start merges into the waiting start job (job_install: a
#   waiting job takes the new one in). The boot run is the one run at boot. A plain restart
#   would also merge while the job waits, but not into a start job that is already running
#   (the boot wait for late devices): START is no superset of RESTART, so job_install re-runs it
#   as a restart, which stops apply mid-run;
# - after the boot run (active), try-restart is a restart: apply runs again. start alone would
#   do nothing (job_type_is_redundant: start of an active unit);
# - while a re-apply runs (the first port's event started it), start merges into the running
#   start job and try-restart is a no-op before systemd 252; from 252 on (PR 24404) it restarts
#   an activating unit too, which stops a run still waiting for the other ports: it has
#   configured nothing yet, and the run after it waits for them again;
# - on a unit that is inactive after boot (apply was run by hand, or the boot run failed), start
#   runs it.
# Both are --no-block: udev's RUN and openibd's hook return at once and nothing configures
# inside them. rg_reapply_cmds UNIT [SYSTEMCTL]: the two commands, one a line; udev wants the
# absolute path (a bare name is looked up in its own folder), the hook finds systemctl in PATH.
rg_reapply_cmds() {
  local s=${2:-/bin/systemctl}
  printf '%s --no-block try-restart %s\n%s --no-block start %s\n' "$s" "$1" "$s" "$1"
}

# rg_port_bdfs: RG_BDFS = the PCI function of each planned port (the planned address, else the
# one the host shows for the RDMA device), RG_NBDF how many; RG_NO_BDF = the ports with neither,
# comma-separated.
rg_port_bdfs() {
  local i dev link b
  RG_BDFS=() RG_NBDF=0 RG_NO_BDF=""
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    dev=${RG_NIC_IBDEV[i]} b=${RG_NIC_PCI[i]:-}
    if [ -z "$b" ] && link=$(readlink "$RG_ROOT/sys/class/infiniband/$dev/device" 2>/dev/null); then
      b=${link##*/}
    fi
    if [[ $b =~ ^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$ ]]; then
      b=$(printf '%s' "$b" | tr 'A-F' 'a-f')
      [[ " ${RG_BDFS[*]-} " == *" $b "* ]] || { RG_BDFS+=("$b") && RG_NBDF=$((RG_NBDF + 1)); }
    else
      RG_NO_BDF="${RG_NO_BDF:+$RG_NO_BDF, }$dev"
    fi
  done
}

# rg_udev_text: the rule. rdma-core's 60-rdma-persistent-naming.rules renames mlx5_N (the name
# the kernel registers, and the one the `add` event carries) to rocep… while that event is
# processed, and the rename comes as a `move` event of its own; so the rule matches neither name
# but the PCI function above the RDMA device: KERNELS matches the device or any of its parents
# (systemd's udev-rules.c), and `|` separates alternatives. Only `add`: each port's return is
# one event, the rename's `move` would be a second. A second line matches the VFs' functions
# (RG_VF_KERNELS, rg_vf_bdfs in lib-rdma.sh), one per PF.
rg_udev_text() {
  local bdfs cmd run=""
  bdfs=$(IFS='|'; printf '%s' "${RG_BDFS[*]}")
  while IFS= read -r cmd; do run+=", RUN+=\"$cmd\""; done < <(rg_reapply_cmds "$RG_UNIT")
  printf '# roce-gen udev rule of cluster %s\n' "$RG_CLUSTER"
  printf '# Re-applies the RoCE configuration when a planned RDMA device appears again (a driver\n'
  printf '# reload, devlink reload, firmware reset, health recovery or PCI rescan): it asks systemd to\n'
  printf '# run %s again, which waits for every planned device. Installed by apply.sh,\n' "$RG_UNIT"
  printf '# removed by rollback.sh.\n'
  printf 'ACTION=="add", SUBSYSTEM=="infiniband", KERNELS=="%s"%s\n' "$bdfs" "$run"
  [ "$RG_VF_N" -gt 0 ] || return 0
  # The RDMA device of a VF created later (echo N > sriov_numvfs): the unit sets its ToS and
  # traffic class. Its own add event, not its netdev's: the unit reads the RDMA device.
  printf "# The planned ports' SR-IOV VFs, created yet or not (sriov_offset, sriov_stride, sriov_totalvfs).\n"
  for bdfs in ${RG_VF_KERNELS[@]+"${RG_VF_KERNELS[@]}"}; do
    printf 'ACTION=="add", SUBSYSTEM=="infiniband", KERNELS=="%s"%s\n' "$bdfs" "$run"
  done
}

# rg_hook_clusters: the clusters the hook at RG_HOOK serves, one a line: its lines' clusters, or
# the one cluster of a hook an older bundle wrote (it ran apply itself). Status 1 when the file
# is not roce-gen's.
rg_hook_clusters() {
  local line ours=1
  [ -f "$RG_ROOT$RG_HOOK" ] || return 1
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in
      "$RG_HOOK_MARK") ours=0 ;;
      "$RG_HOOK_MARK of cluster "*)
        ours=0
        printf '%s\n' "${line#"$RG_HOOK_MARK of cluster "}"
        ;;
      *" # roce-gen cluster "*) printf '%s\n' "${line##* # roce-gen cluster }" ;;
    esac
  done <"$RG_ROOT$RG_HOOK"
  return "$ours"
}

# rg_hook_text CLUSTER...: OFED's post-start hook for these clusters: it runs the chained hook,
# then asks systemd to re-run each cluster's unit (the old shared one while that cluster still
# has it), and returns.
# shellcheck disable=SC2016 # the hook expands these itself, when it runs
rg_hook_text() {
  local c unit cmds
  printf '#!/bin/bash\n%s\n' "$RG_HOOK_MARK"
  printf '# openibd runs this after it (re)starts the RDMA stack, which wipes every runtime setting.\n'
  printf '# It only asks systemd to re-run the boot unit of each cluster below (see their udev rules\n'
  printf '# in /etc/udev/rules.d/90-roce-gen-*.rules for the verbs) and returns at once: nothing\n'
  printf '# configures inside openibd.service. Installed by apply.sh; the rollback of the last cluster\n'
  printf '# removes it and puts back the hook it chained, if any.\n'
  printf 'chained=%q\n' "$RG_HOOK_CHAINED"
  printf 'if [ -x "${ROCE_GEN_ROOT:-}$chained" ]; then\n'
  printf '  "${ROCE_GEN_ROOT:-}$chained" "$@" || echo "roce-gen: the chained post-start hook failed" >&2\n'
  printf 'fi\n'
  for c in "$@"; do
    unit="roce-gen-$c.service"
    if [ "$c" != "$RG_CLUSTER" ] && [ ! -f "$RG_ROOT/etc/systemd/system/$unit" ] && rg_legacy_unit_of "$c"; then
      unit=$RG_LEGACY_UNIT
    fi
    cmds=$(rg_reapply_cmds "$unit" systemctl | sed 's/$/;/' | tr '\n' ' ')
    printf '%s # roce-gen cluster %s\n' "${cmds%; }" "$c"
  done
}

# rg_persist_file REL TEXT MODE: writes a file under the root (rg_write_file), or with --dry-run
# only takes the step.
rg_persist_file() {
  rg_step "write: $1"
  [ "$RG_DRY_RUN" = no ] || return 0
  rg_write_file "$RG_ROOT$1" "$2" && chmod "$3" "$RG_ROOT$1"
}

# rg_persist_reload: installs what re-applies the settings when the devices come back (check
# `persistence_reload`): the udev rule on every host, and on OFED hosts the post-start hook.
# `pass`/`changed` only when it holds: the unit enabled, the rule in place and read by udevd,
# the hook (where OFED is) naming this cluster. --dry-run takes the same steps and prints them.
rg_persist_reload() {
  local rule hook="" clusters c changes="" problems="" what triggers saved=installed
  rg_port_bdfs
  rg_vf_bdfs
  # What rollback needs is saved before the rule is written or a hook moved, so that a run killed
  # in between leaves nothing rollback does not know of: `chained` when the hook there is not
  # roce-gen's and goes aside.
  if rg_is_ofed && [ -f "$RG_ROOT$RG_HOOK" ] && ! rg_hook_clusters >/dev/null; then saved=chained; fi
  if [ "$RG_NBDF" -gt 0 ]; then
    rule=$(rg_udev_text)
    what="the udev rule $RG_UDEV_RULE (PCI $(IFS=,; printf '%s' "${RG_BDFS[*]}" | sed 's/,/, /g')${RG_VF_KERNELS[0]+ and the $RG_VF_N functions of their VFs})"
    if [ "$(cat "$RG_ROOT$RG_UDEV_RULE" 2>/dev/null)" != "$rule" ]; then
      rg_save persistence_reload "" "$saved"
      if rg_persist_file "$RG_UDEV_RULE" "$rule" 644; then
        changes+=", udev rule"
        if ! rg_has udevadm; then
          problems+="; udevadm is missing, so udevd has not read the rule: a reload re-applies only after the next boot"
        elif ! rg_do udevadm control --reload; then
          problems+="; udevd did not read the rule again (udevadm control --reload failed: ${RG_DO_OUT:0:200}): run udevadm control --reload, or a reload re-applies only after the next boot"
        fi
      else
        rg_check persistence_reload "" fail error installed "" "could not write $RG_UDEV_RULE"
        return 0
      fi
    fi
  else
    what="no udev rule"
    problems+="; no planned port has a PCI address the rule could match (none planned, none found)"
  fi
  [ -z "$RG_NO_BDF" ] || problems+="; the rule does not cover $RG_NO_BDF (no PCI address planned or found)"
  if rg_is_ofed; then
    clusters=$(rg_hook_clusters) || clusters=""
    if [ -f "$RG_ROOT$RG_HOOK" ] && ! rg_hook_clusters >/dev/null; then
      if [ -e "$RG_ROOT$RG_HOOK_CHAINED" ]; then
        rg_check persistence_reload "" fail error installed "" \
          "$RG_HOOK is not roce-gen's and $RG_HOOK_CHAINED exists: not overwriting either; merge them by hand"
        return 0
      fi
      rg_save persistence_reload "" "$saved"
      if ! rg_do mv "$RG_ROOT$RG_HOOK" "$RG_ROOT$RG_HOOK_CHAINED"; then
        rg_check persistence_reload "" fail error installed "" "could not move the existing $RG_HOOK aside (see the log above)"
        return 0
      fi
      changes+=", OFED post-start hook chained to the one there"
    fi
    # shellcheck disable=SC2046,SC2086 # one cluster name a line, names without spaces
    hook=$(rg_hook_text $(printf '%s\n' $clusters "$RG_CLUSTER" | sort -u))
    what+=" and OFED's post-start hook $RG_HOOK"
    if [ "$(cat "$RG_ROOT$RG_HOOK" 2>/dev/null)" != "$hook" ]; then
      rg_save persistence_reload "" "$saved"
      if ! rg_persist_file "$RG_HOOK" "$hook" 755; then
        rg_check persistence_reload "" fail error installed "" "could not write $RG_HOOK"
        return 0
      fi
      [ "$saved" = chained ] || changes+=", OFED post-start hook"
    fi
  fi
  if [ "$RG_DRY_RUN" = no ] && ! rg_x systemctl is-enabled "$RG_UNIT" >/dev/null 2>&1; then
    problems+="; $RG_UNIT is not enabled, so there is nothing to re-apply with"
  fi
  triggers=$what
  if [ -n "$hook" ] && [ "$RG_NBDF" -gt 0 ]; then what+=" restart $RG_UNIT"; else what+=" restarts $RG_UNIT"; fi
  changes=${changes#, }
  if [ "$RG_DRY_RUN" = yes ] && [ -n "$changes" ]; then
    rg_check_action persistence_reload "" warn info installed "" "dry run: would install $triggers, which would restart $RG_UNIT" "absent → installed ($changes)"
  elif [ -n "$problems" ]; then
    rg_check persistence_reload "" warn warning installed "incomplete" "${what^}${problems}"
  elif [ -n "$changes" ]; then
    rg_check_action persistence_reload "" changed info installed installed \
      "${what^}: a driver reload, devlink reload, firmware reset, health recovery or PCI rescan re-applies the settings" \
      "absent → installed ($changes)"
  else
    rg_check persistence_reload "" pass info installed installed \
      "${what^}: a driver reload, devlink reload, firmware reset, health recovery or PCI rescan re-applies the settings"
  fi
}

# rg_unpersist_reload: removes this cluster's udev rule and its line of the hook; the rollback of
# the last cluster the hook serves removes it and puts back the hook it had chained. Also what
# older bundles of this cluster installed (the same rule file; a hook that ran apply itself).
rg_unpersist_reload() {
  local clusters rest
  if [ "$RG_DRY_RUN" = yes ]; then
    rg_check_action persistence_reload "" warn info absent "" "dry run: would remove $RG_UDEV_RULE and this cluster's part of $RG_HOOK" \
      "installed → absent (driver-reload trigger)"
    return 0
  fi
  if [ -e "$RG_ROOT$RG_UDEV_RULE" ]; then
    rm -f "$RG_ROOT$RG_UDEV_RULE"
    ! rg_has udevadm || rg_do udevadm control --reload || true
  fi
  if clusters=$(rg_hook_clusters); then
    rest=$(printf '%s\n' "$clusters" | { grep -vxF -e "$RG_CLUSTER" || true; } | sort -u)
    if [ -n "$rest" ]; then
      # shellcheck disable=SC2086 # one cluster name a line, names without spaces
      rg_persist_file "$RG_HOOK" "$(rg_hook_text $rest)" 755 || true
    else
      rm -f "$RG_ROOT$RG_HOOK"
    fi
  fi
  # The site's hook apply had moved aside comes back where roce-gen's is gone, also after an
  # apply killed between the move and writing its own.
  if [ ! -e "$RG_ROOT$RG_HOOK" ] && [ -e "$RG_ROOT$RG_HOOK_CHAINED" ]; then
    mv "$RG_ROOT$RG_HOOK_CHAINED" "$RG_ROOT$RG_HOOK"
  fi
  if [ -e "$RG_ROOT$RG_UDEV_RULE" ] || { clusters=$(rg_hook_clusters) && [[ $'\n'$clusters$'\n' == *$'\n'"$RG_CLUSTER"$'\n'* ]]; }; then
    rg_check persistence_reload "" fail error absent installed "could not remove $RG_UDEV_RULE or this cluster's line of $RG_HOOK"
  elif [ "$1" = chained ] && [ -e "$RG_ROOT$RG_HOOK" ] && ! rg_hook_clusters >/dev/null; then
    rg_check_action persistence_reload "" changed info absent absent "removed roce-gen's $RG_UDEV_RULE and $RG_HOOK and put back the hook it had chained" \
      "installed → absent (udev rule, OFED post-start hook; the chained one put back)"
  else
    rg_check_action persistence_reload "" changed info absent absent "removed roce-gen's driver-reload trigger of cluster $RG_CLUSTER" \
      "installed → absent (driver-reload trigger)"
  fi
}

# rg_unpersist: removes the unit (and this cluster's unit under the old shared name) and the
# installed bundle (rollback of `persistence`). The unit is stopped too: it stays active after
# its run (RemainAfterExit), which would say the host is configured after the rollback.
rg_unpersist() {
  rg_do systemctl disable "$RG_UNIT" || true
  ! rg_x systemctl -q is-active "$RG_UNIT" 2>/dev/null || rg_do systemctl stop "$RG_UNIT" || true
  rg_do rm -f "$RG_UNIT_FILE"
  rg_drop_legacy_unit
  rg_do systemctl daemon-reload || true
  rg_do rm -rf "$RG_ROOT$RG_INSTALL_DIR"
}

# rg_is_ofed: MLNX_OFED/DOCA hosts have ofed_info and openibd's /etc/infiniband.
rg_is_ofed() { [ -n "$RG_OFED" ] || [ -d "$RG_ROOT/etc/infiniband" ]; }

# rg_wait_for_devices: at boot, waits (bounded) for every planned RDMA device and netdev.
rg_wait_for_devices() {
  local limit=${ROCE_GEN_BOOT_WAIT:-120} waited=0 i missing
  case $limit in
    '' | *[!0-9]*) rg_die "ROCE_GEN_BOOT_WAIT must be a number of seconds, not $limit" ;;
  esac
  while :; do
    missing=""
    for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
      [ -d "$RG_ROOT/sys/class/infiniband/${RG_NIC_IBDEV[i]}" ] || missing="${missing:+$missing, }${RG_NIC_IBDEV[i]}"
      [ -d "$RG_ROOT/sys/class/net/${RG_NIC_NETDEV[i]}" ] || missing="${missing:+$missing, }${RG_NIC_NETDEV[i]}"
    done
    if [ -z "$missing" ]; then
      rg_check boot_wait "" pass warning "all planned devices" present "all planned devices present after ${waited}s"
      return 0
    fi
    if [ "$waited" -ge "$limit" ]; then
      rg_check boot_wait "" fail error "all planned devices" "missing: $missing" "gave up after ${limit}s waiting for: $missing"
      return 0
    fi
    sleep 1
    waited=$((waited + 1))
  done
}

# rg_state_valid: true when rollback understands every line of the saved state: ID, NIC (`-` for
# host-wide items) and the value, tab-separated, each line ended by a newline, ID one that apply
# saves. RG_V says which line is not, and why.
rg_state_valid() {
  local line n=0 id rest
  RG_V=""
  while IFS= read -r line || { [ -n "$line" ] && RG_V="line $((n + 1)) has no newline: the file was cut short"; }; do
    [ -z "$RG_V" ] || return 1
    n=$((n + 1))
    if [[ $line != *$'\t'*$'\t'* ]]; then
      RG_V="line $n is not ID, NIC and value separated by tabs"
      return 1
    fi
    id=${line%%$'\t'*} rest=${line#*$'\t'}
    if [ -z "${rest%%$'\t'*}" ]; then
      RG_V="line $n names no NIC"
      return 1
    fi
    case $id in
      persistence | persistence_reload | nccl_env | arp_sysctls | arp_sysctls_persist | netmgr_mtu | \
        vf_roce_tos | vf_traffic_class | pcie_acs | pcie_mrrs | nv_refused | nv_refused_why | fw_?* | dcqcn_?*) ;;
      *)
        if [[ " $RG_SETTINGS $RG_RESTORE_ORDER " != *" $id "* ]]; then
          RG_V="line $n names ${id:-nothing}, which apply never saves"
          return 1
        fi
        ;;
    esac
  done <"$RG_SAVED"
  [ -z "$RG_V" ] && [ "$n" -gt 0 ]
}

# rg_apply_traces: true when an apply of this cluster has been here; RG_V = what it left (its
# unit, its install folder, its udev rule), comma-separated.
rg_apply_traces() {
  RG_V=""
  [ ! -e "$RG_UNIT_FILE" ] || RG_V+=", ${RG_UNIT_FILE#"$RG_ROOT"}"
  [ ! -e "$RG_ROOT$RG_INSTALL_DIR" ] || RG_V+=", $RG_INSTALL_DIR"
  [ ! -e "$RG_ROOT$RG_UDEV_RULE" ] || RG_V+=", $RG_UDEV_RULE"
  RG_V=${RG_V#, }
  [ -n "$RG_V" ]
}

# rg_rollback: rollback.sh: restores every value apply saved, from the saved state, in the
# reverse of the order the driver needs: the ports' settings (rg_restore, each given its own
# saved lines), their firmware values, then removes the driver-reload trigger, the nccl.env, the
# boot unit and the installed bundle, and forgets the saved state once nothing failed. Refuses
# (rg_finish) on another host's bundle; with no saved state there is nothing to restore.
rg_rollback() {
  local id dev d value devs=() reload="" nccl="" persisted=no words=() how=missing
  rg_check_hostname
  if rg_status_is hostname "" fail; then
    rg_finish
  fi
  if [ ! -s "$RG_SAVED" ]; then
    # No saved state, or an empty one: nothing to restore, unless apply's traces say otherwise.
    [ ! -e "$RG_SAVED" ] || how=empty
    if rg_apply_traces; then
      rg_check saved_state "" fail error "the values apply saved" "${RG_SAVED##*/} $how" \
        "the saved state $RG_SAVED is $how, but apply has been here ($RG_V): the values from before apply are unknown, so nothing was restored and nothing removed; restore $RG_SAVED from a backup, or set the NICs back and remove what apply installed by hand"
    else
      rg_check rollback "" pass info "saved state" none "nothing to restore: apply.sh has not changed this host (no $RG_SAVED)"
    fi
    rg_finish
  fi
  if ! rg_state_valid; then
    rg_check saved_state "" fail error "the values apply saved" "not understood" \
      "the saved state $RG_SAVED cannot be understood ($RG_V): nothing was restored, and the file is kept as it is; restore it from a backup, or set that line right"
    rg_finish
  fi
  # The saved values, host-wide ones first, then per port in the plan's order.
  while IFS=$'\t' read -r id dev value; do
    case $id in
      persistence) persisted=yes ;;
      persistence_reload) reload=$value ;;
      nccl_env) nccl=$value ;;
      vf_*) ;; # rg_vf_rollback (lib-rdma.sh)
      pcie_*) ;; # rg_gpu_rollback (lib-gpu.sh)
      *) [[ " ${devs[*]-} " == *" $dev "* ]] || devs+=("$dev") ;;
    esac
  done <"$RG_SAVED"
  for dev in ${devs[@]+"${devs[@]}"}; do
    words=()
    while IFS=$'\t' read -r id d value; do
      [ "$d" != "$dev" ] || [ -z "$id" ] || words+=("$id=$value")
    done <"$RG_SAVED"
    rg_progress "$dev: restoring the values saved before the first apply"
    rg_restore "$dev" ${words[@]+"${words[@]}"}
  done
  rg_vf_rollback
  rg_netmgr_rollback
  rg_net_rollback
  rg_gpu_rollback
  rg_fw_rollback
  [ -z "$reload" ] || rg_unpersist_reload "$reload"
  [ -z "$nccl" ] || rg_nccl_env_restore "$nccl" "$persisted"
  [ "$persisted" = no ] || rg_rollback_persistence
  if [ "$RG_DRY_RUN" = no ] && ! rg_failed; then
    rm -f "$RG_SAVED"
  fi
}

# rg_rollback_persistence: removes the unit and the installed bundle (check `persistence`).
rg_rollback_persistence() {
  rg_progress "removing $RG_UNIT, the health timer and $RG_INSTALL_DIR"
  rg_health_remove
  rg_unpersist
  if [ "$RG_DRY_RUN" = yes ]; then
    rg_check_action persistence "" warn info absent "" "dry run: would disable $RG_UNIT and remove $RG_INSTALL_DIR" \
      "installed → absent ($RG_UNIT, $RG_INSTALL_DIR)"
  elif [ -e "$RG_UNIT_FILE" ] || [ -e "$RG_ROOT$RG_INSTALL_DIR" ]; then
    rg_check persistence "" fail error absent installed "could not remove $RG_UNIT_FILE or $RG_INSTALL_DIR"
  else
    rg_check_action persistence "" changed info absent absent "disabled $RG_UNIT and removed $RG_INSTALL_DIR" \
      "installed → absent ($RG_UNIT, $RG_INSTALL_DIR)"
  fi
}

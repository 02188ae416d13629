# shellcheck shell=bash
# lib-persist.sh, part of lib.sh: persistence. Apply installs the bundle and the boot unit (the
# unit runs apply --boot, which waits, bounded, for the planned devices) and what re-applies the
# settings when the RDMA stack restarts without a reboot (a driver reload wipes them): OFED's
# post-start hook, chained to any hook already there, or on inbox hosts a udev rule on the
# planned devices. Rollback removes exactly what apply added; rg_rollback is the whole of
# rollback.sh.

RG_UNIT=roce-gen.service
# OFED's openibd runs this after it (re)starts the stack; a hook found there is kept beside it
# and chained.
RG_HOOK=/etc/infiniband/post-start-hook.sh
RG_HOOK_CHAINED=/etc/infiniband/post-start-hook.sh.roce-gen-chained
# The unit's file under the root, the cluster's udev rule and the line that marks roce-gen's own
# hook (rg_persist_init).
RG_UNIT_FILE=""
RG_UDEV_RULE=""
RG_MARK=""

# rg_persist_init: what follows from plan.sh and the root (rg_init).
rg_persist_init() {
  RG_UNIT_FILE="$RG_ROOT/etc/systemd/system/$RG_UNIT"
  RG_UDEV_RULE="/etc/udev/rules.d/90-roce-gen-$RG_CLUSTER.rules"
  RG_MARK="# roce-gen reload hook of cluster $RG_CLUSTER"
}

# rg_bundle_files: the bundle's files as SHA256SUMS lists them, then SHA256SUMS itself.
rg_bundle_files() {
  local sum name
  while read -r sum name; do
    [ -n "$sum" ] && printf '%s\n' "${name#\*}"
  done <"$RG_DIR/SHA256SUMS"
  printf 'SHA256SUMS\n'
}

# rg_installed: true when this very bundle is installed and its unit enabled.
rg_installed() {
  cmp -s "$RG_ROOT$RG_INSTALL_DIR/SHA256SUMS" "$RG_DIR/SHA256SUMS" &&
    cmp -s "$RG_UNIT_FILE" "$RG_DIR/$RG_UNIT" &&
    systemctl is-enabled "$RG_UNIT" >/dev/null 2>&1
}

# rg_copy_bundle DIR: copies the bundle's files into DIR.
rg_copy_bundle() {
  local f
  while IFS= read -r f; do
    rg_do cp -p "$RG_DIR/$f" "$1/$f" || return 1
  done < <(rg_bundle_files)
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
  elif [ "$(rg_run_status)" = fail ]; then
    rg_check persistence "" skip warning installed "" "not installed: apply did not succeed"
    return 0
  elif rg_installed; then
    rg_check persistence "" pass info installed installed "$RG_UNIT is installed and enabled; $RG_INSTALL_DIR is this bundle"
    rg_persist_reload
    return 0
  fi
  rg_save persistence "" absent
  [ ! -e "$dest" ] && [ ! -e "$RG_UNIT_FILE" ] || change="another bundle → this bundle"
  change+=" ($RG_UNIT, $RG_INSTALL_DIR)"
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
  rg_do mkdir -p "${RG_UNIT_FILE%/*}" || true
  rg_do cp "$RG_DIR/$RG_UNIT" "$RG_UNIT_FILE" || true
  rg_do systemctl daemon-reload || true
  if ! rg_do systemctl enable "$RG_UNIT"; then
    rg_check persistence "" fail error installed "" "systemctl enable $RG_UNIT failed"
  elif [ "$RG_DRY_RUN" = yes ]; then
    rg_check_action persistence "" warn info installed "" "dry run: would install the bundle in $RG_INSTALL_DIR and enable $RG_UNIT" "$change"
  else
    rg_check_action persistence "" changed info installed installed "installed the bundle in $RG_INSTALL_DIR and enabled $RG_UNIT" "$change"
  fi
  rg_persist_reload
}

# rg_hook_text: OFED's post-start hook that re-applies the configuration.
# shellcheck disable=SC2016 # the hook expands these itself, when it runs
rg_hook_text() {
  printf '#!/bin/bash\n%s\n' "$RG_MARK"
  printf '# Re-applies the RoCE configuration after openibd (re)starts the RDMA stack: a driver reload\n'
  printf '# wipes every runtime setting. Installed by apply.sh; rollback.sh removes it and puts back the\n'
  printf '# hook it chained, if any.\n'
  printf 'chained=%q\n' "$RG_HOOK_CHAINED"
  printf 'if [ -x "${ROCE_GEN_ROOT:-}$chained" ]; then\n'
  printf '  "${ROCE_GEN_ROOT:-}$chained" "$@" || echo "roce-gen: the chained post-start hook failed" >&2\n'
  printf 'fi\n'
  printf '"${ROCE_GEN_ROOT:-}"%q --boot --results-dir "${ROCE_GEN_ROOT:-}"%q\n' \
    "$RG_INSTALL_DIR/apply.sh" "/var/lib/roce-gen/$RG_CLUSTER/results"
}

# rg_udev_text: the inbox hosts' rule: a planned RDMA device appearing restarts the unit.
rg_udev_text() {
  local devs
  devs=$(IFS='|'; printf '%s' "${RG_NIC_IBDEV[*]}")
  printf '%s\n' "$RG_MARK"
  printf '# Re-applies the RoCE configuration when a planned RDMA device appears again (driver reload);\n'
  printf '# the unit waits for all of them. Installed by apply.sh, removed by rollback.sh.\n'
  printf 'ACTION=="add", SUBSYSTEM=="infiniband", KERNEL=="%s", RUN+="/bin/systemctl --no-block restart %s"\n' "$devs" "$RG_UNIT"
}

# rg_is_ofed: MLNX_OFED/DOCA hosts have ofed_info and openibd's /etc/infiniband.
rg_is_ofed() { [ -n "$RG_OFED" ] || [ -d "$RG_ROOT/etc/infiniband" ]; }

# rg_persist_reload: installs the driver-reload trigger (check `persistence_reload`). --dry-run
# takes the same steps and prints them.
rg_persist_reload() {
  local file text what change
  if rg_is_ofed; then
    file=$RG_HOOK text=$(rg_hook_text) what="OFED post-start hook $RG_HOOK" change="OFED post-start hook"
  else
    file=$RG_UDEV_RULE text=$(rg_udev_text) what="udev rule $RG_UDEV_RULE" change="udev rule"
  fi
  change="absent → installed ($change)"
  if [ "$(cat "$RG_ROOT$file" 2>/dev/null)" = "$text" ]; then
    rg_check persistence_reload "" pass info installed installed "the $what re-applies the settings after a driver reload"
    return 0
  fi
  if [ "$file" = "$RG_HOOK" ] && [ -e "$RG_ROOT$file" ] && ! grep -q "^$RG_MARK\$" "$RG_ROOT$file"; then
    if [ -e "$RG_ROOT$RG_HOOK_CHAINED" ]; then
      rg_check persistence_reload "" fail error installed "" \
        "$RG_HOOK is not roce-gen's and $RG_HOOK_CHAINED exists: not overwriting either; merge them by hand"
      return 0
    fi
    rg_save persistence_reload "" chained
    change="absent → installed (OFED post-start hook, chained to the one there)"
    if ! rg_do mv "$RG_ROOT$RG_HOOK" "$RG_ROOT$RG_HOOK_CHAINED"; then
      rg_check persistence_reload "" fail error installed "" "could not move the existing $RG_HOOK aside (see the log above)"
      return 0
    fi
  else
    rg_save persistence_reload "" installed
  fi
  rg_step "write: $file"
  if [ "$RG_DRY_RUN" = yes ] || { mkdir -p "$(dirname "$RG_ROOT$file")" && printf '%s\n' "$text" >"$RG_ROOT$file.tmp.$$" &&
    chmod 755 "$RG_ROOT$file.tmp.$$" && mv -f "$RG_ROOT$file.tmp.$$" "$RG_ROOT$file"; }; then
    [ "$file" = "$RG_HOOK" ] || ! rg_has udevadm || rg_do udevadm control --reload || true
    if [ "$RG_DRY_RUN" = yes ]; then
      rg_check_action persistence_reload "" warn info installed "" "dry run: would install the $what" "$change"
    else
      rg_check_action persistence_reload "" changed info installed installed "installed the $what: a driver reload re-applies the settings" "$change"
    fi
  else
    rm -f "$RG_ROOT$file.tmp.$$"
    rg_check persistence_reload "" fail error installed "" "could not write the $what"
  fi
}

# rg_unpersist_reload HOW: removes the hook or rule apply installed and, when apply had chained
# an existing hook (HOW = chained), puts it back.
rg_unpersist_reload() {
  if [ "$RG_DRY_RUN" = yes ]; then
    rg_check_action persistence_reload "" warn info absent "" "dry run: would remove roce-gen's $RG_HOOK or $RG_UDEV_RULE" \
      "installed → absent (driver-reload trigger)"
    return 0
  fi
  if [ -e "$RG_ROOT$RG_HOOK" ] && grep -q "^$RG_MARK\$" "$RG_ROOT$RG_HOOK"; then
    rm -f "$RG_ROOT$RG_HOOK"
  fi
  if [ "$1" = chained ] && [ -e "$RG_ROOT$RG_HOOK_CHAINED" ] && [ ! -e "$RG_ROOT$RG_HOOK" ]; then
    mv "$RG_ROOT$RG_HOOK_CHAINED" "$RG_ROOT$RG_HOOK"
  fi
  if [ -e "$RG_ROOT$RG_UDEV_RULE" ]; then
    rm -f "$RG_ROOT$RG_UDEV_RULE"
    ! rg_has udevadm || rg_do udevadm control --reload || true
  fi
  if [ -e "$RG_ROOT$RG_HOOK" ] && grep -q "^$RG_MARK\$" "$RG_ROOT$RG_HOOK"; then
    rg_check persistence_reload "" fail error absent installed "could not remove $RG_HOOK"
  elif [ "$1" = chained ]; then
    rg_check_action persistence_reload "" changed info absent absent "removed roce-gen's $RG_HOOK and put back the hook it had chained" \
      "installed → absent (OFED post-start hook; the chained one put back)"
  else
    rg_check_action persistence_reload "" changed info absent absent "removed roce-gen's driver-reload trigger" \
      "installed → absent (driver-reload trigger)"
  fi
}

# rg_unpersist: removes the unit and the installed bundle (rollback of `persistence`).
rg_unpersist() {
  rg_do systemctl disable "$RG_UNIT" || true
  rg_do rm -f "$RG_UNIT_FILE"
  rg_do systemctl daemon-reload || true
  rg_do rm -rf "$RG_ROOT$RG_INSTALL_DIR"
}

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

# rg_rollback: rollback.sh: restores every value apply saved, from the saved state, in the
# reverse of the order the driver needs: the ports' settings (rg_restore, each given its own
# saved lines), their firmware values, then removes the driver-reload trigger, the nccl.env, the
# boot unit and the installed bundle, and forgets the saved state once nothing failed. Refuses
# (rg_finish) on another host's bundle; with no saved state there is nothing to restore.
rg_rollback() {
  local id dev d value devs=() reload="" nccl="" persisted=no words=()
  rg_check_hostname
  if [ "$(rg_status_of hostname "")" = fail ]; then
    rg_finish
  fi
  if [ ! -r "$RG_SAVED" ]; then
    rg_check rollback "" pass info "saved state" none "nothing to restore: apply.sh has not changed this host (no $RG_SAVED)"
    rg_finish
  fi
  # The saved values, host-wide ones first, then per port in the plan's order.
  while IFS=$'\t' read -r id dev value; do
    case $id in
      persistence) persisted=yes ;;
      persistence_reload) reload=$value ;;
      nccl_env) nccl=$value ;;
      *) [[ " ${devs[*]-} " == *" $dev "* ]] || devs+=("$dev") ;;
    esac
  done <"$RG_SAVED"
  for dev in ${devs[@]+"${devs[@]}"}; do
    words=()
    while IFS=$'\t' read -r id d value; do
      [ "$d" != "$dev" ] || [ -z "$id" ] || words+=("$id=$value")
    done <"$RG_SAVED"
    rg_restore "$dev" ${words[@]+"${words[@]}"}
  done
  rg_netmgr_rollback
  rg_fw_rollback
  [ -z "$reload" ] || rg_unpersist_reload "$reload"
  [ -z "$nccl" ] || rg_nccl_env_restore "$nccl" "$persisted"
  [ "$persisted" = no ] || rg_rollback_persistence
  if [ "$RG_DRY_RUN" = no ] && [ "$(rg_run_status)" != fail ]; then
    rm -f "$RG_SAVED"
  fi
}

# rg_rollback_persistence: removes the unit and the installed bundle (check `persistence`).
rg_rollback_persistence() {
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

#!/usr/bin/env bash
# rollback.sh: restores every value that apply.sh saved on this host (the values from before
# roce-gen first changed them; firmware values for the next boot), in the reverse of the order
# the driver needs, removes the nccl.env, the boot unit and the driver-reload hook apply
# installed, then forgets the saved state.
# Writes results/<host>.rollback.json beside this script, results/<host>.rollback.dry-run.json
# with --dry-run (or --out FILE, --results-dir DIR).
# Exit status: 0 restored, 1 something could not be restored, 2 the script could not run.
# Part of a roce-gen bundle: the same in every bundle; this host's values are in plan.sh.
RG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$RG_DIR/lib.sh"

RG_USAGE="usage: rollback.sh [--dry-run] [-v|--verbose] [--ascii] [--out FILE | --results-dir DIR]"
rg_parse "--dry-run" "$@"
rg_start rollback
rg_check_hostname
if [ "$(rg_status_of hostname "")" = fail ]; then
  rg_finish
fi
if [ ! -r "$RG_SAVED" ]; then
  rg_check rollback "" pass info "saved state" none "nothing to restore: apply.sh has not changed this host (no $RG_SAVED)"
  rg_finish
fi

# The saved values, host-wide ones first, then per port in the plan's order.
devs=()
reload=""
nccl=""
persisted=no
while IFS=$'\t' read -r id dev value; do
  case $id in
    persistence) persisted=yes ;;
    persistence_reload) reload=$value ;;
    nccl_env) nccl=$value ;;
    *) [[ " ${devs[*]-} " == *" $dev "* ]] || devs+=("$dev") ;;
  esac
done <"$RG_SAVED"
for dev in ${devs[@]+"${devs[@]}"}; do
  declare -A saved=()
  while IFS=$'\t' read -r id d value; do
    [ "$d" != "$dev" ] || [ -z "$id" ] || saved[$id]=$value
  done <"$RG_SAVED"
  rg_restore "$dev"
  unset saved
done
rg_fw_rollback
[ -z "$reload" ] || rg_unpersist_reload "$reload"
[ -z "$nccl" ] || rg_nccl_env_restore "$nccl" "$persisted"
if [ "$persisted" = yes ]; then
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
fi
if [ "$RG_DRY_RUN" = no ] && [ "$(rg_run_status)" != fail ]; then
  rm -f "$RG_SAVED"
fi
rg_finish

#!/usr/bin/env bash
# apply.sh: configures this host's RoCE NICs as planned. It verifies the bundle, checks the host
# name, runs the precheck (stops on a failure unless --force), saves every value it may touch,
# changes only what differs from the plan, reads every value back, and installs the boot unit
# and the driver-reload hook. With firmware_config = apply it also sets the NICs' firmware (NV)
# values that contradict the plan, for the next boot (never at boot). --boot (the unit, the
# hook) waits for the planned devices and configures those that are there. --dry-run takes the
# same steps on a simulation of each port and changes nothing. It prints a summary; -v also
# every command and write as it runs it (or, with --dry-run, would).
# Writes results/<host>.apply.json beside this script, results/<host>.apply.dry-run.json with
# --dry-run (or --out FILE, --results-dir DIR).
# Exit status: 0 configured, 1 something failed or was refused, 2 the script could not run.
# Part of a roce-gen bundle: the same in every bundle; this host's values are in plan.sh.
RG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$RG_DIR/lib.sh" || exit
rg_init

RG_USAGE="usage: apply.sh [--dry-run] [--force] [--no-persist] [--boot] [-q|--quiet] [-v|--verbose] [--ascii] [--out FILE | --results-dir DIR]"
rg_parse "--dry-run --force --no-persist --boot --quiet" "$@"
rg_start apply
[ "$RG_BOOT" = no ] || rg_wait_for_devices

rg_progress "checking the bundle, the host and each NIC against the plan"
rg_precheck fail apply
rg_apply_gate

for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
  rg_nic_settings apply "$i"
  ! rg_identity_ok "$i" || rg_vf_apply "$i"
done
rg_host_changes
# After the runtime configuration is persisted: the NV values are for the next boot, which the
# unit never touches, so a firmware that cannot be read or set keeps nothing else from apply.
rg_firmware apply
rg_finish

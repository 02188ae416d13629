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
. "$RG_DIR/lib.sh" || exit
rg_init

RG_USAGE="usage: rollback.sh [--dry-run] [-q|--quiet] [-v|--verbose] [--ascii] [--out FILE | --results-dir DIR]"
rg_parse "--dry-run --quiet" "$@"
rg_start rollback
rg_rollback
rg_finish

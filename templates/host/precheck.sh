#!/usr/bin/env bash
# precheck.sh: read-only checks of this host against its RoCE plan. Changes nothing.
# Writes results/<host>.precheck.json beside this script (or --out FILE, --results-dir DIR).
# Exit status: 0 all passed (warnings allowed), 1 a check failed, 2 the script could not run.
# Part of a roce-gen bundle: the same in every bundle; this host's values are in plan.sh.
RG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$RG_DIR/lib.sh" || exit
rg_init

RG_USAGE="usage: precheck.sh [-v|--verbose] [--ascii] [--out FILE | --results-dir DIR]"
rg_parse "" "$@"
rg_start precheck
rg_precheck warn compare
rg_firmware compare
for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
  ! rg_identity_ok "$i" || rg_vf_report "$i"
done
rg_predict_host
rg_finish

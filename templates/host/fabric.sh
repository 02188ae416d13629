#!/usr/bin/env bash
# fabric.sh: the fabric test, run after apply on every host at once. On every planned port it
# serves the previous port of its rail's ring and sends to the next with ib_write_bw (perftest),
# then (fabric_incast) lets two or more senders share one receiver, and checks from the counters
# that the bytes rode the RoCE priority without loss and that congestion turned into ECN marks
# and CNPs. Changes no setting. Peers are awaited up to --window SECONDS (600).
# Writes results/<host>.fabric.json beside this script (or --out FILE, --results-dir DIR).
# Exit status: 0 all passed (warnings allowed), 1 a check failed, 2 the script could not run.
# Part of a roce-gen bundle: the same in every bundle; this host's values are in plan.sh.
RG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$RG_DIR/lib.sh" || exit
rg_init

RG_USAGE="usage: fabric.sh [--window SECONDS] [-v|--verbose] [--ascii] [--out FILE | --results-dir DIR]"
rg_fabric_args "$@"
rg_parse "" ${RG_ARGS[@]+"${RG_ARGS[@]}"}
rg_start fabric
rg_check_bundle
rg_check_hostname
rg_fabric
rg_finish

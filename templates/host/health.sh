#!/usr/bin/env bash
# health.sh: the live health of this host's planned RoCE ports, for node_exporter's textfile
# collector. Writes <health_textfile_dir>/roce-gen-<cluster>.prom (through a temporary file and
# a rename): per port the RoCE counters, the link and the optics, every drift_interval seconds
# whether each planned setting still reads as planned, and whether a reboot is pending. Reads
# only; never changes a NIC setting. The timer roce-gen-health-<cluster>.timer that apply.sh
# installs runs it every health_interval seconds; --drift checks the drift now.
# Exit status: 0 written (what could not be read is said in the file), 2 not written.
# Part of a roce-gen bundle: the same in every bundle; this host's values are in plan.sh.
# (The folder without dirname: a health run starts as few programs as it can.)
case ${BASH_SOURCE[0]} in */*) RG_DIR=${BASH_SOURCE[0]%/*} ;; *) RG_DIR=. ;; esac
RG_DIR=$(cd "$RG_DIR" && pwd)
# shellcheck source=lib.sh
. "$RG_DIR/lib.sh" || exit
rg_init

rg_health_main "$@"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Function-level tests of the health run's readers and textfile (templates/host/lib-health.sh)
# on the ethtool fixture the health tests give the stand-in (fixtures/ethtool/stats-pfc3.txt,
# names from mlx5's en_stats.c). Prints "N passed, M failed" and exits 1 on a failure.
# Usage: health.sh [BASH]   (the bash that runs the functions; default: this one)

set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$HERE/../../templates/host
FIX=$HERE/fixtures
if [ $# -gt 0 ] && [ -z "${HEALTH_INNER-}" ]; then
  HEALTH_INNER=1 exec "$1" "${BASH_SOURCE[0]}"
fi
# shellcheck source=../../templates/host/lib.sh
. "$LIB/lib.sh"
# shellcheck source=assert.sh
. "$HERE/assert.sh"

L='cluster="lab",host="node-a",nic="mlx5_0"'

# The fixture: 40 per-priority traffic counters, 24 per-priority congestion ones, priority 3's
# pause counters, the port's discards, pause and link-down counters and the stall watchdog's.
RG_HM=()
rg_health_ethtool "$L" <"$FIX/ethtool/stats-pfc3.txt"
count() { printf '%s' "${RG_HM[$1]:-}" | grep -c .; }
eq "bytes: 8 priorities x rx/tx" 16 "$(count roce_gen_health_priority_bytes_total)"
eq "packets" 16 "$(count roce_gen_health_priority_packets_total)"
eq "pause: priority 3 only (PFC on 3), rx and tx" 2 "$(count roce_gen_health_priority_pause_frames_total)"
eq "discards: 8 x discards, buf_discard, cong_discard" 24 "$(count roce_gen_health_priority_discards_total)"
eq "ECN marks per priority" 8 "$(count roce_gen_health_priority_ecn_marked_packets_total)"
eq "no global pause counter while 802.3x pause is off" "" "${RG_HM[roce_gen_health_global_pause_frames_total]:-}"
eq "the storm counters" 2 "$(count roce_gen_health_pause_storm_events_total)"
v=$(grep -E '^ +rx_prio3_pause:' "$FIX/ethtool/stats-pfc3.txt" | awk '{ print $2 }')
eq "rx_prio3_pause's own value" "roce_gen_health_priority_pause_frames_total{$L,direction=\"rx\",priority=\"3\"} $v" \
  "$(printf '%s' "${RG_HM[roce_gen_health_priority_pause_frames_total]}" | grep 'direction="rx"')"
v=$(grep -E '^ +rx_prio5_cong_discard:' "$FIX/ethtool/stats-pfc3.txt" | awk '{ print $2 }')
eq "rx_prio5_cong_discard's kind and value" "roce_gen_health_priority_discards_total{$L,priority=\"5\",kind=\"cong_discard\"} $v" \
  "$(printf '%s' "${RG_HM[roce_gen_health_priority_discards_total]}" | grep 'priority="5",kind="cong_discard"')"
v=$(grep -E '^ +link_down_events_phy:' "$FIX/ethtool/stats-pfc3.txt" | awk '{ print $2 }')
eq "link_down_events_phy" "roce_gen_health_link_down_events_total{$L} $v" "${RG_HM[roce_gen_health_link_down_events_total]%$'\n'}"

# Kernels whose en_stats.c named the warning counter with a trailing space print it so; the name
# is what precedes the colon. A value that is not a number is left out.
RG_HM=()
rg_health_ethtool "$L" <<'OUT'
NIC statistics:
     tx_pause_storm_warning_events : 7
     tx_pause_storm_error_events: n/a
     rx_global_pause: 12
OUT
eq "a name with a trailing space" "roce_gen_health_pause_storm_events_total{$L,level=\"warning\"} 7" "${RG_HM[roce_gen_health_pause_storm_events_total]%$'\n'}"
eq "global pause while on" "roce_gen_health_global_pause_frames_total{$L,direction=\"rx\"} 12" "${RG_HM[roce_gen_health_global_pause_frames_total]%$'\n'}"

# The textfile: each family with samples once, HELP and TYPE before them, in the fixed order.
rg_health_text
text=$REPLY
eq "only families with samples" 2 "$(printf '%s\n' "$text" | grep -c '^# TYPE')"
eq "TYPE before the samples" "# TYPE roce_gen_health_global_pause_frames_total counter" "$(printf '%s\n' "$text" | sed -n 2p)"

rg_hl_esc 'a"b\c'
eq "label values escaped" 'a\"b\\c' "$REPLY"

done_testing

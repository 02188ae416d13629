#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2034 # the library reads the plan values this test sets
# Function tests of multi-rail address hygiene (templates/host/lib-net.sh): the kernel's rule for
# arp_ignore, arp_announce and rp_filter (the larger of conf/all and the device's:
# include/linux/inetdevice.h IN_DEV_MAXCONF), which effective values can break RDMA-CM, the
# reader of `ip route get` on the fixtures, the ip stand-in printing those fixtures byte for byte
# from its route table, and the sysctl.d file apply writes. No root, nothing run but the ip
# stand-in. Prints "N passed, M failed" and exits 1 on a failure.
# Usage: net.sh [BASH]   (the bash that runs the functions; default: this one)

set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$HERE/../../templates/host
FX=$HERE/fixtures
if [ $# -gt 0 ] && [ -z "${NET_INNER-}" ]; then
  NET_INNER=1 exec "$1" "${BASH_SOURCE[0]}"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/roce-gen-net.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=../../templates/host/lib.sh
. "$LIB/lib.sh"
# shellcheck source=assert.sh
. "$HERE/assert.sh"
RG_CLUSTER=lab RG_ARP_SYSCTLS=check

# --- the kernel's combination: the larger of all and the device -----------------------------

for c in "0 0 0" "0 1 1" "1 0 1" "2 1 2" "1 2 2" "8 1 8" "0 8 8" "10 9 10" "07 2 7" "x 2 2" "2 x 2" "x x "; do
  read -r a d want <<<"$c"
  rg_arp_effective "$a" "$d"
  eq "effective of all=$a dev=$d" "${want-}" "$REPLY"
done
rg_arp_effective '' ''
eq 'effective of two empty values' '' "$REPLY"

# --- which effective values break RDMA-CM -----------------------------------------------------

for c in arp_ignore:0:bad arp_ignore:1:ok arp_ignore:2:ok arp_ignore:3:ok arp_ignore:8:bad arp_ignore:5:bad \
  arp_announce:0:bad arp_announce:1:ok arp_announce:2:ok arp_announce:3:bad \
  rp_filter:0:ok rp_filter:1:bad rp_filter:2:ok rp_filter::bad; do
  IFS=: read -r k v want <<<"$c"
  got=ok
  rg_arp_problem "$k" "$v"
  [ -z "$REPLY" ] || got=bad
  eq "$k $v" "$want" "$got"
done
rg_arp_problem arp_ignore 0
eq 'arp_ignore 0 is ARP flux' 'arp_ignore 0 lets every port answer ARP for the addresses of the others (ARP flux)' "$REPLY"
rg_arp_problem rp_filter 1
eq 'rp_filter 1 is strict' 'rp_filter 1 (strict) drops what arrives on a port the route back does not leave through' "$REPLY"
rg_arp_problem arp_announce 0
eq 'arp_announce 0 names the other port' "arp_announce 0 lets a port send ARP requests with another port's address" "$REPLY"

# --- the ports of the plan ----------------------------------------------------------------------

RG_NIC_IBDEV=(mlx5_0 mlx5_1)
eq 'two planned ports' 2 "$(rg_arp_ports)"
RG_NIC_IBDEV=(mlx5_0 '')
eq 'one planned port of two entries' 1 "$(rg_arp_ports)"

# --- the values read from a host: all and the device combined -------------------------------

RG_ROOT=$TMP/root
RG_NIC_IBDEV=(mlx5_0 mlx5_1) RG_NIC_NETDEV=(ens1f0np0 ens2f0np0)
conf() { mkdir -p "$RG_ROOT/proc/sys/net/ipv4/conf/$1" && printf '%s\n' "$3" >"$RG_ROOT/proc/sys/net/ipv4/conf/$1/$2"; }
for k in arp_ignore arp_announce; do conf all "$k" 0 && conf ens1f0np0 "$k" 0; done
conf all rp_filter 1
conf ens1f0np0 rp_filter 2
rg_arp_read 0
eq 'read: the device' '0 0 2' "$RG_ARP_DEV"
eq 'read: all' '0 0 1' "$RG_ARP_ALL"
eq 'read: effective (all rp_filter 1 does not lower 2)' '0 0 2' "$RG_ARP_EFF"
conf all arp_ignore 2
conf all arp_announce 2
conf all rp_filter 1
conf ens1f0np0 rp_filter 0
rg_arp_read 0
eq 'read: all wins where it is larger' '2 2 1' "$RG_ARP_EFF"
eq 'read: only the strict rp_filter is a problem' 'rp_filter 1 (strict) drops what arrives on a port the route back does not leave through' "$RG_ARP_WHY"
rg_arp_read 1
eq 'read: a netdev without its conf folder' '? ? ?' "$RG_ARP_DEV"

# --- ip route get: the reader on the fixtures -----------------------------------------------------

eq 'route get: the interface' ens2f0np0 "$(rg_route_dev "$(cat "$FX/ip/route-get-rail.txt")")"
eq 'route get through a gateway: the interface' ens1f0np0 "$(rg_route_dev "$(cat "$FX/ip/route-get-other-if.txt")")"
eq 'route get of a local address: lo' lo "$(rg_route_dev 'local 10.10.0.10 from 10.10.1.10 dev lo table local uid 0 ')"
eq 'route get with no dev' '' "$(rg_route_dev 'RTNETLINK answers: Network is unreachable')"

# --- the ip stand-in prints the fixtures from its route table --------------------------------------

FH=$HERE/fakehost.sh
H=$TMP/host
bash "$FH" create "$H" --kind inbox --host node-a --nic mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:0a:00:00 \
  --nic mlx5_1:ens2f0np0:0000:2a:00.0:b8:3f:d2:0a:00:01 >/dev/null 2>&1
bash "$FH" addr "$H" ens1f0np0 10.10.0.10/24 >/dev/null 2>&1
bash "$FH" addr "$H" ens2f0np0 10.10.1.10/24 >/dev/null 2>&1
ipr() { ROCE_GEN_ROOT=$H STUB_LOG=$TMP/stub.log "$H/bin/ip" route get "$@" 2>&1; }
eq 'stand-in: the prefix route of the port' "$(cat "$FX/ip/route-get-rail.txt")" "$(ipr 10.10.1.11 from 10.10.1.10)"
printf '10.10.1.11/32 via 10.10.0.1 dev ens1f0np0\n' >"$H/.fake/routes"
eq 'stand-in: a host route through the other port wins' "$(cat "$FX/ip/route-get-other-if.txt")" "$(ipr 10.10.1.11 from 10.10.1.10)"
printf '10.10.1.0/24 dev ens1f0np0\n' >"$H/.fake/routes"
eq 'stand-in: an equal prefix added later loses to the first' "$(cat "$FX/ip/route-get-rail.txt")" "$(ipr 10.10.1.11 from 10.10.1.10)"
eq 'stand-in: a source that is not local' 'RTNETLINK answers: Invalid argument' "$(ipr 10.10.1.11 from 10.9.9.9)"
eq 'stand-in: no route' 'RTNETLINK answers: Network is unreachable' "$(ipr 8.8.8.8 from 10.10.1.10)"
eq 'stand-in: the fake host has the kernel default arp_ignore' 0 "$(cat "$H/proc/sys/net/ipv4/conf/ens1f0np0/arp_ignore")"
eq "stand-in: Ubuntu's rp_filter on all" 2 "$(cat "$H/proc/sys/net/ipv4/conf/all/rp_filter")"

# --- the sysctl.d file ----------------------------------------------------------------------

eq 'the file of the cluster' /etc/sysctl.d/90-roce-gen-lab.conf "$(rg_arp_file)"
eq 'the file: dotted keys, a VLAN name in the slash form' "# roce-gen, cluster lab: ARP and reverse-path filter settings of the RoCE ports (plan
# arp_sysctls = set). rollback.sh restores the values it replaced and removes this file.
net.ipv4.conf.ens1f0np0.arp_ignore = 1
net.ipv4.conf.ens1f0np0.arp_announce = 2
net.ipv4.conf.ens1f0np0.rp_filter = 2
net/ipv4/conf/bond0.100/arp_ignore = 1
net/ipv4/conf/bond0.100/arp_announce = 2
net/ipv4/conf/bond0.100/rp_filter = 2" "$(rg_arp_file_text ens1f0np0 bond0.100)"

done_testing

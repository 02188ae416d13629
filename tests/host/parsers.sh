#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Function-level tests of the bundle's readers (templates/host/lib-parse.sh and the optics reader
# of lib-probe.sh) on the captured tool outputs in fixtures/, the same files the stand-ins are
# checked against. Runs in milliseconds; prints "N passed, M failed" and exits 1 on a failure.
# Usage: parsers.sh [BASH]   (the bash that runs the readers; default: this one)

set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$HERE/../../templates/host
FIX=$HERE/fixtures
if [ $# -gt 0 ] && [ -z "${PARSERS_INNER-}" ]; then
  PARSERS_INNER=1 exec "$1" "${BASH_SOURCE[0]}"
fi
# shellcheck source=../../templates/host/lib-parse.sh
. "$LIB/lib-parse.sh"
# The optics reader and its default limits (lib-probe.sh only defines functions and values).
# shellcheck source=../../templates/host/lib-probe.sh
. "$LIB/lib-probe.sh"
# The NV configuration reader (lib-firmware.sh defines functions and empty state only).
# shellcheck source=../../templates/host/lib-firmware.sh
. "$LIB/lib-firmware.sh"

# shellcheck source=assert.sh
. "$HERE/assert.sh"
fx() { cat "$FIX/$1"; }

default_map=""
for ((d = 0; d < 64; d++)); do default_map+="${default_map:+,}$d:$((d >> 3))"; done
custom_map=${default_map/26:3/26:5}

# mlnx_qos -i IF
eq "qos trust dscp" dscp "$(fx mlnx_qos/dscp-trust.txt | rg_parse_qos_trust)"
eq "qos trust pcp" pcp "$(fx mlnx_qos/pcp-trust.txt | rg_parse_qos_trust)"
eq "qos dcbx os" os "$(fx mlnx_qos/dscp-trust.txt | rg_parse_qos_dcbx)"
eq "qos dcbx firmware" fw "$(fx mlnx_qos/firmware-dcbx.txt | rg_parse_qos_dcbx)"
eq "qos lldpad warning" yes "$(fx mlnx_qos/lldpad-running.txt | rg_parse_qos_lldpad)"
eq "qos no lldpad warning" "" "$(fx mlnx_qos/dscp-trust.txt | rg_parse_qos_lldpad)"
eq "qos lldpad does not hide the dcbx line" os "$(fx mlnx_qos/lldpad-running.txt | rg_parse_qos_dcbx)"
eq "qos default map (descending, per priority)" "$default_map" "$(fx mlnx_qos/dscp-trust.txt | rg_parse_qos_map)"
eq "qos custom map 26->5" "$custom_map" "$(fx mlnx_qos/custom-map.txt | rg_parse_qos_map)"
eq "qos no map under pcp trust" none "$(fx mlnx_qos/pcp-trust.txt | rg_parse_qos_map)"
eq "qos wrapped map rows" "0:0,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,26:3" \
  "$(printf '\tprio:0 dscp:09,08,07,06,05,04,03,02,\n\tprio:0 dscp:01,00,\n\tprio:3 dscp:26,\ndefault priority:\n' | rg_parse_qos_map)"
eq "qos pfc on 3" 0,0,0,1,0,0,0,0 "$(fx mlnx_qos/dscp-trust.txt | rg_parse_qos_pfc)"
eq "qos pfc off" 0,0,0,0,0,0,0,0 "$(fx mlnx_qos/pcp-trust.txt | rg_parse_qos_pfc)"
eq "qos cable length" 30 "$(fx mlnx_qos/cable-30.txt | rg_parse_qos_cable)"
eq "qos cable length, default" 7 "$(fx mlnx_qos/dscp-trust.txt | rg_parse_qos_cable)"
eq "qos pfc kept with --pfc --cable_len" 0,0,0,1,0,0,0,0 "$(fx mlnx_qos/cable-30.txt | rg_parse_qos_pfc)"
eq "older mlnx_qos: --cable_len alone turned PFC off" 0,0,0,0,0,0,0,0 "$(fx mlnx_qos/older-cable-only.txt | rg_parse_qos_pfc)"
eq "older mlnx_qos: cable length" 30 "$(fx mlnx_qos/older-cable-only.txt | rg_parse_qos_cable)"
eq "qos: no cable length in an error" "" "$(printf 'Cable len: \nETS features are not supported on your system\n' | rg_parse_qos_cable)"
eq "qos: an error is no value" "" "$(printf 'Priority trust state is not supported on your system\n' | rg_parse_qos_trust)$(printf 'Netlink error\n' | rg_parse_qos_pfc)"

# dcb (iproute2)
eq "dcb pfc" 0,0,0,1,0,0,0,0 "$(fx dcb/pfc-show.txt | rg_parse_dcb_pfc)"
eq "dcb pfc: an error is no value" "" "$(printf 'Attribute read: Operation not supported\n' | rg_parse_dcb_pfc)"
eq "dcb dcbx host" os "$(fx dcb/dcbx-show.txt | rg_parse_dcb_dcbx)"
eq "dcb dcbx firmware" fw "$(printf 'lld-managed ieee\n' | rg_parse_dcb_dcbx)"
eq "dcb pfc delay" 30 "$(fx dcb/pfc-delay.txt | rg_parse_dcb_delay)"
eq "dcb pfc delay from the whole show" 7 "$(printf 'pfc-cap 8 macsec-bypass off delay 7 \nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n' | rg_parse_dcb_delay)"
eq "dcb pfc delay: an error is no value" "" "$(printf 'Attribute read: Operation not supported\n' | rg_parse_dcb_delay)"
eq "dcb app map with DSCP names (26 = AF31 -> 5)" "$custom_map" "$(fx dcb/app-show.txt | rg_parse_dcb_map)"
eq "dcb app map numeric" "26:3,48:6" "$(printf 'dscp-prio 26:3 48:6 \n' | rg_parse_dcb_map)"
eq "dcb app: empty table" none "$(printf '' | rg_parse_dcb_map)"

# OFED qos sysfs (en_sysfs.c)
eq "prio2buffer" 0,0,0,1,0,0,0,0 "$(fx qos/prio2buffer-pfc3.txt | rg_parse_prio2buffer)"
eq "buffer_size" 130944,130944,0,0,0,0,0,0 "$(fx qos/buffer_size-pfc3.txt | rg_parse_buffer_size)"
eq "buffer xoff thresholds" 0,111104,0,0,0,0,0,0 "$(fx qos/buffer_size-pfc3.txt | rg_parse_buffer_xoff)"
eq "buffer xoff thresholds the driver computed" 0,46528,0,0,0,0,0,0 "$(fx qos/buffer_size-manual-30.txt | rg_parse_buffer_xoff)"
eq "prio2buffer: a short file is no value" "" "$(head -n 5 "$FIX/qos/prio2buffer-pfc3.txt" | rg_parse_prio2buffer)"
eq "buffer_size: the buffer table, not the header" "" "$(head -n 4 "$FIX/qos/buffer_size-pfc3.txt" | rg_parse_buffer_size)"
eq "prio2buffer is not a buffer_size" "" "$(fx qos/prio2buffer-pfc3.txt | rg_parse_buffer_size)"

# GIDs (class/infiniband/DEV/ports/1/gids/N, %pI6)
eq "IPv4-mapped GID" "$(fx gids/ipv4-10.10.0.10.txt)" "$(rg_gid_of_ip 10.10.0.10/24)"
eq "IPv4-mapped GID, high octets" 0000:0000:0000:0000:0000:ffff:c0a8:ff01 "$(rg_gid_of_ip 192.168.255.1)"
eq "the types a GID entry prints" "IB/RoCE v1|RoCE v2" "$(fx gids/type-v1.txt)|$(fx gids/type-v2.txt)"

# ethtool -a
eq "pause on" "rx on tx on" "$(fx ethtool/pause-on.txt | rg_parse_pause)"
eq "pause off" "rx off tx off" "$(fx ethtool/pause-off.txt | rg_parse_pause)"
eq "pause: an error is no value" "" "$(printf 'netlink error: Operation not supported\n' | rg_parse_pause)"

# traffic_class
eq "traffic class set" 106 "$(rg_parse_tclass "$(fx traffic_class/set.txt)")"
eq "traffic class unset" "" "$(rg_parse_tclass "$(fx traffic_class/unset.txt)")"
eq "traffic class with rules: its first line" 106 "$(rg_parse_tclass "$(fx traffic_class/rules.txt)")"
eq "traffic class of rules alone: unset" "" "$(rg_parse_tclass "$(fx traffic_class/rules-only.txt)")"
eq "traffic class rules kept as they are" "dst_ip=10.10.0.0/16,tclass=96;src_ip=10.10.0.10,tclass=104" \
  "$(rg_parse_tclass_rules "$(fx traffic_class/rules.txt)")"
eq "traffic class rules alone" "dst_ip=10.10.0.0/16,tclass=96;src_ip=10.10.0.10,tclass=104" \
  "$(rg_parse_tclass_rules "$(fx traffic_class/rules-only.txt)")"
eq "traffic class without rules" none "$(rg_parse_tclass_rules "$(fx traffic_class/set.txt)")"
eq "traffic class rules: junk fails" 1 "$(rg_parse_tclass_rules "$(printf 'Global tclass=106\nPermission denied\n')" >/dev/null; echo $?)"
eq "traffic class junk fails" 1 "$(rg_parse_tclass 'cat: Permission denied' >/dev/null; echo $?)"

# cma_roce_mode / cma_roce_tos: values, and their errors (printed on stdout) are not values
eq "roce mode v2" "RoCE v2" "$(rg_parse_roce_mode "$(fx cma_roce/mode-v2.txt)")"
eq "roce mode v1" "IB/RoCE v1" "$(rg_parse_roce_mode "$(fx cma_roce/mode-v1.txt)")"
eq "roce tos" 106 "$(rg_parse_roce_tos "$(fx cma_roce/tos-106.txt)")"
for f in not-root no-port no-device; do
  eq "roce mode: $f is an error" 1 "$(rg_parse_roce_mode "$(fx "cma_roce/$f.txt")" >/dev/null; echo $?)"
  eq "roce tos: $f is an error" 1 "$(rg_parse_roce_tos "$(fx "cma_roce/$f.txt")" >/dev/null; echo $?)"
done

# firewall-cmd --list-all
eq "firewalld public zone" 'default||' "$(rg_parse_fw_zone "$(fx firewalld/list-all-public.txt)" | tr '\n' '|')"
eq "firewalld zone with the ports" 'default|18515-18530/tcp|' "$(rg_parse_fw_zone "$(fx firewalld/list-all-open.txt)" | tr '\n' '|')"
eq "firewalld trusted zone" 'ACCEPT||' "$(rg_parse_fw_zone "$(fx firewalld/list-all-trusted.txt)" | tr '\n' '|')"
eq "firewalld rich rules" 'default||rich' "$(rg_parse_fw_zone $'public\n  target: default\n  ports: \n  rich rules: \n\trule family="ipv4" port port="18515" protocol="tcp" accept' | tr '\n' '|')"
eq "firewalld: not a zone listing" "1" "$(rg_parse_fw_zone 'FirewallD is not running' >/dev/null; echo $?)"
eq "fw opens a port of a range" 0 "$(rg_fw_opens '22/tcp 18515-18530/tcp' 18523; echo $?)"
eq "fw opens the range's last port" 0 "$(rg_fw_opens '18515-18530/tcp' 18530; echo $?)"
eq "fw: a udp range opens no tcp port" 1 "$(rg_fw_opens '18515-18530/udp 22/tcp' 18515; echo $?)"
eq "fw: nothing open" 1 "$(rg_fw_opens '' 18515; echo $?)"

# rdma system show
eq "rdma netns shared" shared "$(rg_parse_rdma_netns "$(fx rdma/system-shared.txt)")"
eq "rdma netns exclusive" exclusive "$(rg_parse_rdma_netns "$(fx rdma/system-exclusive.txt)")"
eq "rdma netns of iproute2 5.11" shared "$(rg_parse_rdma_netns "$(fx rdma/system-5.11.txt)")"
eq "rdma netns: anything else fails" "1|" "$(out=$(rg_parse_rdma_netns 'Usage: rdma system show') || echo "$?|$out")"

# ibdev2netdev
eq "ibdev2netdev up" "ens1f0np0 Up" "$(fx ibdev2netdev/two-ports.txt | rg_parse_ibdev2netdev mlx5_0)"
eq "ibdev2netdev down" "ens1f1np1 Down" "$(fx ibdev2netdev/two-ports.txt | rg_parse_ibdev2netdev mlx5_1)"
eq "ibdev2netdev absent" "" "$(fx ibdev2netdev/two-ports.txt | rg_parse_ibdev2netdev mlx5_10)"

# lldpcli -f keyvalue
eq "lldp neighbour" "leaf-1|Ethernet0|" "$(fx lldpcli/keyvalue.txt | rg_parse_lldpcli ens1f0np0 | tr '\n' '|' | cut -d'|' -f1,2)|"

# ethtool -m: lanes by the (Channel N) label; a CMIS module's unused lanes 5-8 are no alarm
optics() { rg_optics_awk "$2" <"$FIX/ethtool-m/$1" | awk -F '\t' -v k="$3" '$1 == k { printf "%s%s", sep, $2; sep = " " }'; }
eq "cmis 4 lanes: TX" "-0.50 -0.62 -0.41 -0.55" "$(optics cmis-400g-4lane.txt 4 tx)"
eq "cmis 4 lanes: RX" "-1.10 -1.32 -0.98 -1.21" "$(optics cmis-400g-4lane.txt 4 rx)"
eq "cmis 4 lanes: no problem" "" "$(optics cmis-400g-4lane.txt 4 problem)"
eq "cmis, lanes unknown: the lit ones" "-0.50 -0.62 -0.41 -0.55" "$(optics cmis-400g-4lane.txt "" tx)"
eq "cmis 8 lanes: dark lanes are a problem" 8 "$(optics cmis-400g-4lane.txt 8 problem | grep -o 'no light' | wc -l | tr -d ' ')"
eq "cmis vendor" "NVIDIA MMA4Z00-NS400" "$(optics cmis-400g-4lane.txt 4 vendor) $(optics cmis-400g-4lane.txt 4 pn)"
eq "sff-8636 four lanes" 4 "$(optics sff8636-100g.txt 4 rx | wc -w | tr -d ' ')"
eq "sff-8636 no problem" "" "$(optics sff8636-100g.txt 4 problem)"

# Several modules in one awk (the health run's): each, its thresholds too, as if read alone,
# after its module line.
many=$(rg_optics_awk "" "$FIX/ethtool-m/cmis-400g-4lane.txt" "$FIX/ethtool-m/sff8636-100g.txt" "$FIX/ethtool-m/cmis-400g-4lane.txt")
one=$(for f in cmis-400g-4lane.txt sff8636-100g.txt cmis-400g-4lane.txt; do
  printf 'module\t%s\n' "$FIX/ethtool-m/$f"
  rg_optics_awk "" <"$FIX/ethtool-m/$f"
done)
eq "optics of three modules in one awk: each as alone" "$one" "$many"

eq "a module without monitoring reports no temperature, not 0 C" "temp|" \
  "$(printf '\tModule temperature : 0.00 degrees C / 32.00 degrees F\n\tModule voltage : 0.0000 V\n' | rg_optics_awk 4 | grep '^temp' | tr '\t' '|')"

# mlxconfig / mstconfig -d BDF [-e] q: NAME default current next, values as numbers
nv() { rg_parse_nvconfig <"$FIX/mlxconfig/$1" | awk -F '\t' -v n="$2" '$1 == n { print $2 "|" $3 "|" $4 }'; }
eq "nv: -e, a new card" "48|48|48" "$(nv query-e-default.txt CNP_DSCP_P1)"
eq "nv: True(1) is 1, False(0) is 0" "0|1|1 1|1|1" "$(nv query-e-contradicting.txt LLDP_NB_DCBX_P1) $(nv query-e-contradicting.txt DCBX_WILLING_P1)"
eq "nv: ETH(2) is 2" "2|2|2" "$(nv query-e-default.txt LINK_TYPE_P1)"
eq "nv: a pending reboot (current differs from next boot)" "48|40|48 1|1|0" \
  "$(nv query-e-pending.txt CNP_DSCP_P1) $(nv query-e-pending.txt DCBX_WILLING_P1)"
eq "nv: without -e only the next boot is known" "||48" "$(nv query-next-only.txt CNP_DSCP_P1)"
eq "nv: every row of a query" 6 "$(rg_parse_nvconfig <"$FIX/mlxconfig/query-e-default.txt" | wc -l | tr -d ' ')"
eq "nv: the later layout (wider columns, an RO column)" "48|40|40 255|255|255" \
  "$(nv query-e-later-layout.txt CNP_DSCP_P1) $(nv query-e-later-layout.txt ROCE_CC_PRIO_MASK_P1)"
eq "nv: a read-only row" "||3" "$(printf 'Configurations:                                                  Next Boot\n RO     NUM_OF_PLANES_P1                            3               \n' | rg_parse_nvconfig | awk -F '\t' '{ print $2 "|" $3 "|" $4 }')"
eq "nv: set prints Next Boot and New" "||40" "$(nv set.txt CNP_DSCP_P1)"
eq "nv: a refused query has no rows" "" "$(rg_parse_nvconfig <"$FIX/mlxconfig/query-e-unsupported.txt")"
eq "nv: its error line" "The Device doesn't support LINK_TYPE_P1 parameter" "$(rg_nv_error "$(cat "$FIX/mlxconfig/query-e-unsupported.txt")")"
eq "nv: a refused query of every parameter still prints the rows it read" "255|255|255 2" \
  "$(nv query-e-failed-tlv.txt ROCE_CC_PRIO_MASK_P1) $(rg_parse_nvconfig <"$FIX/mlxconfig/query-e-failed-tlv.txt" | grep -c 'DCBX')"
eq "nv: ... and names the TLVs it could not" "Failed to query some of the TLVs: Failed to query the default values of the following TLVs: nv_keep_link_up_P1_M0 Failed to query the current values of the following TLVs: nv_keep_link_up_P1_M0 Failed to query the next values of the following TLVs: nv_keep_link_up_P1_M0" \
  "$(rg_nv_error "$(cat "$FIX/mlxconfig/query-e-failed-tlv.txt")")"
eq "nv: a BlueField's card-wide parameters" "1|1|1 0|0|0" \
  "$(nv query-e-dpu.txt INTERNAL_CPU_MODEL) $(nv query-e-dpu.txt INTERNAL_CPU_OFFLOAD_ENGINE)"
eq "nv: a read-only row is marked" "ro" "$(printf 'Configurations:                                                  Next Boot\n RO     NUM_OF_PLANES_P1                            3               \n' | rg_parse_nvconfig | cut -f5)"
eq "nv: other rows are not" "" "$(rg_parse_nvconfig <"$FIX/mlxconfig/query-e-later-layout.txt" | cut -f5 | tr -d '\n')"
eq "nv: a restricted host's set is refused" "Operation is not supported (Read only TLV: nv_roce_cc_ecn)" "$(rg_nv_error "$(cat "$FIX/mlxconfig/set-restricted.txt")")"
eq "nv: mstflint 4.21 refuses a restricted host's set as unsupported" "The Device doesn't support CNP_DSCP_P1 parameter" \
  "$(rg_nv_error "$(cat "$FIX/mlxconfig/set-restricted-4.21.txt")")"
eq "nv: ... and shows no row of a parameter it may only read" "" "$(rg_parse_nvconfig <"$FIX/mlxconfig/query-e-restricted-4.21.txt")"
eq "nv: a host without NV access" "Cannot access NV register. Either FW does not support NV access register, or HW access is disabled. rc=(265)" "$(rg_nv_error "$(cat "$FIX/mlxconfig/query-locked.txt")")"
eq "nv: N/A and arrays are no value" "|" \
  "$(printf 'Configurations:          Current         Next Boot\n         FOO_P1   N/A    Array[0..7]\n' | rg_parse_nvconfig | cut -f3,4 | tr '\t' '|')"
eq "nv: nothing before the header is a row" "" "$(printf 'Device type:    ConnectX7\nDevice:         0000:1a:00.0\n' | rg_parse_nvconfig)"

# nmcli terse output (NetworkManager src/nmcli/utils.c): `:` between fields, `\` before a `:`
# or `\` inside one
rg_nm_split 'a\:b:c\\d::e'
eq "nmcli fields, escaped" "a:b|c\\d||e" "$(IFS='|' && printf '%s' "${RG_NM_F[*]}")"
rg_nm_split ''
eq "nmcli fields: an empty line is one empty field" "1:" "${#RG_NM_F[@]}:${RG_NM_F[0]}"
eq "nmcli device: an NM profile active, its name with a colon" \
  "connected|5fc2a9b0-7e3d-4c1a-9f00-000000000002|roce: ens1f0np0" \
  "$(fx nmcli/device-status.txt | rg_parse_nm_device ens1f0np0 | tr '\t' '|')"
eq "nmcli device: no profile" "disconnected||" "$(fx nmcli/device-status.txt | rg_parse_nm_device ens2f0np0 | tr '\t' '|')"
eq "nmcli device: an activation NetworkManager only watches" "connected (externally)|5fc2a9b0-7e3d-4c1a-9f00-000000000003|ens2f0np0" \
  "$(fx nmcli/device-status-external.txt | rg_parse_nm_device ens2f0np0 | tr '\t' '|')"
eq "nmcli device: not listed" "" "$(fx nmcli/device-status.txt | rg_parse_nm_device ens3f0np0)"
eq "nmcli device: the error of a stopped daemon is no device" "" "$(fx nmcli/not-running.txt | rg_parse_nm_device ens1f0np0)"
eq "nmcli profile file" /etc/NetworkManager/system-connections/ens1f0np0.nmconnection \
  "$(fx nmcli/connection-filename.txt | rg_parse_nm_filename 5fc2a9b0-7e3d-4c1a-9f00-000000000002)"
# A parser a tool's output is piped into reads to the end: the scripts run under pipefail, and a
# tool still writing after the parser stopped dies of SIGPIPE and fails the pipeline. The writer
# here pauses after the matching line, as a loaded host's nmcli does between profiles.
late() { fx "$1" && sleep 0.3 && printf 'late:line\n'; }
piped() {
  local out rc=0
  out=$(set -o pipefail && late "$1" | "${@:2}") || rc=$?
  printf '%s|%s' "$rc" "$out"
}
eq "nmcli profile file: read to the end under pipefail" \
  "0|/etc/NetworkManager/system-connections/ens1f0np0.nmconnection" \
  "$(piped nmcli/connection-filename.txt rg_parse_nm_filename 5fc2a9b0-7e3d-4c1a-9f00-000000000002)"
eq "ibdev2netdev: read to the end under pipefail" "0|ens1f0np0 Up" \
  "$(piped ibdev2netdev/two-ports.txt rg_parse_ibdev2netdev mlx5_0)"
eq "nmcli device: read to the end under pipefail" \
  "0|connected|5fc2a9b0-7e3d-4c1a-9f00-000000000002|roce: ens1f0np0" \
  "$(piped nmcli/device-status.txt rg_parse_nm_device ens1f0np0 | tr '\t' '|')"
eq "nmcli mtu auto" auto "$(fx nmcli/mtu-auto.txt | rg_parse_nm_mtu)"
eq "nmcli mtu 4200" 4200 "$(fx nmcli/mtu-4200.txt | rg_parse_nm_mtu)"
eq "nmcli mtu: an error is no value" "" "$(printf 'Error: 5fc2 - no such connection profile.\n' | rg_parse_nm_mtu)"

# systemd-networkd: the link state file (networkd-state-file.c link_save), the .network MTU
eq "networkd state: configured, its .network file" "configured|/etc/systemd/network/10-ens2f0np0.network" \
  "$(fx networkd/link-configured.txt | rg_parse_networkd_state | tr '\t' '|')"
eq "networkd state: unmanaged, no file" "unmanaged|" "$(fx networkd/link-unmanaged.txt | rg_parse_networkd_state | tr '\t' '|')"
eq "networkd mtu of the .network file" 1500 "$(fx networkd/10-ens2f0np0.network | rg_parse_networkd_mtu)"
eq "networkd mtu: the drop-in read after it wins" 4200 \
  "$({ fx networkd/10-ens2f0np0.network; printf '[]\n'; fx networkd/90-roce-gen-lab.conf; } | rg_parse_networkd_mtu)"
eq "networkd mtu: none set" unset "$(printf '[Match]\nName=x\n[Network]\nMTUBytes=9000\n' | rg_parse_networkd_mtu)"
eq "networkd mtu: an empty assignment resets it" unset "$(printf '[Link]\nMTUBytes=9000\nMTUBytes=\n' | rg_parse_networkd_mtu)"
eq "networkd mtu: 9K is 9216, spaces around =" 9216 "$(printf '[Link]\n  MTUBytes = 9K\n' | rg_parse_networkd_mtu)"
eq "networkd mtu: junk is no value" "" "$(printf '[Link]\nMTUBytes=lots\n' | rg_parse_networkd_mtu)"
eq "ifcfg MTU" "9000|unset" "$(printf 'DEVICE=ens1f0np0\nMTU="9000"\n' | rg_parse_ifcfg_mtu)|$(printf 'DEVICE=ens1f0np0\n' | rg_parse_ifcfg_mtu)"

done_testing

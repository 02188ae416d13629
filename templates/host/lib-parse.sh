# shellcheck shell=bash
# lib-parse.sh, part of lib.sh: the readers of every tool output the scripts parse. Each takes
# the output on stdin (or as its argument) and prints a normalized value; none runs a tool or
# reads a global, so tests run them on captured outputs. A reader that finds nothing it knows
# prints nothing: error text is never taken for a value.

# rg_parse_qos_trust: `Priority trust state: dscp` of `mlnx_qos -i IF` → dscp or pcp.
rg_parse_qos_trust() {
  local line
  while IFS= read -r line; do
    case $line in
      'Priority trust state: dscp') printf dscp ;;
      'Priority trust state: pcp') printf pcp ;;
    esac
  done
}

# rg_parse_qos_dcbx: its first line `DCBX mode: OS controlled|Firmware controlled` → os or fw.
rg_parse_qos_dcbx() {
  local line
  while IFS= read -r line; do
    case $line in
      'DCBX mode: OS controlled') printf os ;;
      'DCBX mode: Firmware controlled') printf fw ;;
    esac
  done
}

# rg_parse_qos_lldpad: `yes` when mlnx_qos warned that lldpad runs.
rg_parse_qos_lldpad() {
  local line
  while IFS= read -r line; do
    case $line in
      *'WARNING: lldpad service is running'*) printf yes ;;
    esac
  done
}

# rg_parse_qos_map: the DSCP APP entries of `mlnx_qos -i IF` (`\tprio:3 dscp:31,30,...,` lines,
# long ones wrapped onto further `prio:N dscp:` lines, in the kernel table's order) → `D:P,...`
# sorted by DSCP, or `none` when the port has no DSCP entry (PCP trust).
rg_parse_qos_map() {
  local line prio list d
  local -a map=() pairs=()
  while IFS= read -r line; do
    [[ $line =~ ^[[:space:]]*prio:([0-7])[[:space:]]+dscp:([0-9,]*)[[:space:]]*$ ]] || continue
    prio=${BASH_REMATCH[1]}
    list=${BASH_REMATCH[2]}
    for d in ${list//,/ }; do
      d=$((10#$d))
      ((d < 64)) && map[d]=$prio
    done
  done
  for d in ${map[@]+"${!map[@]}"}; do pairs+=("$d:${map[d]}"); done
  rg_map_text ${pairs[@]+"${pairs[@]}"}
}

# rg_map_text D:P...: the DSCP map's pairs joined as `D:P,...`, or `none`. The readers fill a
# sparse array indexed by DSCP and pass its pairs in index order, sorted by DSCP.
rg_map_text() {
  local IFS=,
  printf '%s' "${*:-none}"
}

# rg_parse_qos_pfc: the `enabled` row of mlnx_qos's PFC table → `0,0,0,1,0,0,0,0`.
rg_parse_qos_pfc() {
  local line
  while IFS= read -r line; do
    if [[ $line =~ ^[[:space:]]*enabled(([[:space:]]+[01]){8})[[:space:]]*$ ]]; then
      line=${BASH_REMATCH[1]}
      # shellcheck disable=SC2086 # one word per priority
      set -- $line
      printf '%s,%s,%s,%s,%s,%s,%s,%s' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8"
      return 0
    fi
  done
}

# rg_parse_qos_cable: `Cable len: 7` of `mlnx_qos -i IF` (the PFC delay the driver keeps, in
# metres) → 7.
rg_parse_qos_cable() {
  local line
  while IFS= read -r line; do
    [[ $line =~ ^Cable\ len:\ ([0-9]+)$ ]] && printf '%s' "${BASH_REMATCH[1]}"
  done
  return 0
}

# rg_parse_dcb_map: `dcb [-N] app show dev IF dscp-prio` (`dscp-prio 0:0 1:0 ... 26:3 ...`, or
# with DSCP names from rt_dsfield without -N: `default:0 CS1:1 AF11:1 ...`) → as
# rg_parse_qos_map.
rg_parse_dcb_map() {
  local line w d name
  local -a map=() pairs=()
  while IFS= read -r line; do
    for w in $line; do
      [[ $w =~ ^([A-Za-z0-9]+):([0-7])$ ]] || continue
      name=${BASH_REMATCH[1]}
      d=$(rg_dscp_number "$name") || continue
      map[d]=${BASH_REMATCH[2]}
    done
  done
  for d in ${map[@]+"${!map[@]}"}; do pairs+=("$d:${map[d]}"); done
  rg_map_text ${pairs[@]+"${pairs[@]}"}
}

# rg_dscp_number NAME: a DSCP given as a number or by its iproute2 rt_dsfield name.
rg_dscp_number() {
  local n=$1
  case ${n^^} in
    DEFAULT | CS0) n=0 ;;
    LE) n=1 ;;
    CS[1-7]) n=$((${n:2:1} * 8)) ;;
    AF[1-4][1-3]) n=$((${n:2:1} * 8 + ${n:3:1} * 2)) ;;
    VA) n=44 ;;
    EF) n=46 ;;
    *)
      [[ $n =~ ^[0-9]+$ ]] || return 1
      n=$((10#$n))
      ;;
  esac
  ((n < 64)) || return 1
  printf '%s' "$n"
}

# rg_parse_dcb_pfc: `dcb pfc show dev IF prio-pfc` (`prio-pfc 0:off 1:off 2:off 3:on ...`) →
# `0,0,0,1,0,0,0,0`; nothing when the line is missing.
rg_parse_dcb_pfc() {
  local line w seen=no
  local -a en=(0 0 0 0 0 0 0 0)
  while IFS= read -r line; do
    [[ $line == *prio-pfc* ]] || continue
    seen=yes
    for w in $line; do
      case $w in
        [0-7]:on) en[${w%%:*}]=1 ;;
        [0-7]:off) en[${w%%:*}]=0 ;;
      esac
    done
  done
  [ "$seen" = yes ] || return 0
  printf '%s,%s,%s,%s,%s,%s,%s,%s' "${en[0]}" "${en[1]}" "${en[2]}" "${en[3]}" "${en[4]}" "${en[5]}" "${en[6]}" "${en[7]}"
}

# rg_parse_dcb_delay: `dcb pfc show dev IF delay` (`delay 7 `), or the first line of a whole
# `dcb pfc show` (`pfc-cap 8 macsec-bypass off delay 7 `) → 7.
rg_parse_dcb_delay() {
  local line
  while IFS= read -r line; do
    [[ $line =~ (^|[[:space:]])delay[[:space:]]+([0-9]+)([[:space:]]|$) ]] && printf '%s' "${BASH_REMATCH[2]}"
  done
  return 0
}

# rg_parse_prio2buffer: OFED's qos/prio2buffer (`Priority\tBuffer`, then `P\t\tB` for priorities
# 0-7, en_sysfs.c) → the buffer of each priority, `0,0,0,1,0,0,0,0`; nothing unless all eight.
rg_parse_prio2buffer() {
  local line n=0
  local -a buf=()
  while IFS= read -r line; do
    [[ $line =~ ^([0-7])[[:space:]]+([0-9]+)[[:space:]]*$ ]] || continue
    [ -n "${buf[BASH_REMATCH[1]]+set}" ] || n=$((n + 1))
    buf[BASH_REMATCH[1]]=${BASH_REMATCH[2]}
  done
  [ "$n" -eq 8 ] || return 0
  printf '%s,%s,%s,%s,%s,%s,%s,%s' "${buf[0]}" "${buf[1]}" "${buf[2]}" "${buf[3]}" "${buf[4]}" "${buf[5]}" "${buf[6]}" "${buf[7]}"
}

# rg_parse_buffer_size: OFED's qos/buffer_size (`Port buffer size = N`, `Spare buffer size = N`,
# a header, then `B\tSIZE\tXOFF\t\tXON` for buffers 0-7, en_sysfs.c) → the size of each buffer
# in bytes, `130944,130944,0,0,0,0,0,0`; nothing unless all eight.
rg_parse_buffer_size() {
  local line n=0
  local -a size=()
  while IFS= read -r line; do
    [[ $line =~ ^([0-7])[[:space:]]+([0-9]+)[[:space:]]+[0-9]+[[:space:]]+[0-9]+[[:space:]]*$ ]] || continue
    [ -n "${size[BASH_REMATCH[1]]+set}" ] || n=$((n + 1))
    size[BASH_REMATCH[1]]=${BASH_REMATCH[2]}
  done
  [ "$n" -eq 8 ] || return 0
  printf '%s,%s,%s,%s,%s,%s,%s,%s' "${size[0]}" "${size[1]}" "${size[2]}" "${size[3]}" "${size[4]}" "${size[5]}" "${size[6]}" "${size[7]}"
}

# rg_parse_buffer_xoff: the same file → the xoff threshold of each buffer in bytes (the third
# column), `0,111104,0,0,0,0,0,0`; nothing unless all eight.
rg_parse_buffer_xoff() {
  local line n=0
  local -a xoff=()
  while IFS= read -r line; do
    [[ $line =~ ^([0-7])[[:space:]]+[0-9]+[[:space:]]+([0-9]+)[[:space:]]+[0-9]+[[:space:]]*$ ]] || continue
    [ -n "${xoff[BASH_REMATCH[1]]+set}" ] || n=$((n + 1))
    xoff[BASH_REMATCH[1]]=${BASH_REMATCH[2]}
  done
  [ "$n" -eq 8 ] || return 0
  printf '%s,%s,%s,%s,%s,%s,%s,%s' "${xoff[0]}" "${xoff[1]}" "${xoff[2]}" "${xoff[3]}" "${xoff[4]}" "${xoff[5]}" "${xoff[6]}" "${xoff[7]}"
}

# rg_parse_dcb_dcbx: `dcb dcbx show dev IF` (the DCBX capability flags: `host ieee`) → os when
# the host owns DCBX, fw when only other flags are set (firmware/LLD-managed).
rg_parse_dcb_dcbx() {
  local line w mode=""
  while IFS= read -r line; do
    for w in $line; do
      case $w in
        host) mode=os ;;
        lld-managed | cee | ieee | static) [ -n "$mode" ] || mode=fw ;;
      esac
    done
  done
  printf '%s' "$mode"
}

# rg_parse_pause: `ethtool -a IF` → `rx on tx off`; nothing without both lines.
rg_parse_pause() {
  local line rx="" tx=""
  while IFS= read -r line; do
    case $line in
      RX:*) rx=${line##*[[:space:]]} ;;
      TX:*) tx=${line##*[[:space:]]} ;;
    esac
  done
  [[ $rx =~ ^(on|off)$ && $tx =~ ^(on|off)$ ]] || return 0
  printf 'rx %s tx %s' "$rx" "$tx"
}

# rg_parse_tclass TEXT: the verbs traffic_class file (mlnx-ofa_kernel main_ext.c
# traffic_class_show): `Global tclass=106` while the global class is set, then one line per
# per-destination rule (`dst_ip=10.0.0.0/8,tclass=96`); a bare number on old OFED. Read by its
# first line: → 106; empty when the global class is unset (no line, or the rules alone). Fails
# on anything else.
rg_parse_tclass() {
  local v=${1%%$'\n'*}
  if [ -z "$v" ] || rg_tclass_rule "$v"; then
    return 0
  elif [[ $v =~ ^(Global[[:space:]]+)?tclass=([0-9]+)$ ]]; then
    printf '%s' "${BASH_REMATCH[2]}"
  elif [[ $v =~ ^[0-9]+$ ]]; then
    printf '%s' "$v"
  else
    return 1
  fi
}

# rg_tclass_rule LINE: true for a rule line as traffic_class_show prints it: its fields
# (src_ip=, dst_ip=, src_ip6=, dst_ip6=, each ending in a comma), then tclass=N.
rg_tclass_rule() {
  [[ $1 =~ ^((src_ip|dst_ip|src_ip6|dst_ip6)=[0-9a-fA-F.:/]+,)+tclass=[0-9]+$ ]]
}

# rg_parse_tclass_rules TEXT: the rule lines of the traffic_class file, as they are, joined by
# `;` (a rule has none) → `dst_ip=10.0.0.0/8,tclass=96;src_ip=10.0.0.1,tclass=98`; `none` when
# the file has none. Fails on a line that is neither the global class nor a rule.
rg_parse_tclass_rules() {
  local line first=yes out=""
  while IFS= read -r line; do
    if rg_tclass_rule "$line"; then
      out+="${out:+;}$line"
    elif [ -n "$line" ] && { [ "$first" = no ] || ! rg_parse_tclass "$line" >/dev/null; }; then
      return 1
    fi
    first=no
  done <<<"$1"
  printf '%s' "${out:-none}"
}

# rg_parse_roce_mode TEXT: what cma_roce_mode or configfs prints → `RoCE v2` / `IB/RoCE v1`;
# fails on anything else (the tools print their errors on stdout).
rg_parse_roce_mode() {
  case ${1%$'\n'} in
    'RoCE v2') printf 'RoCE v2' ;;
    'IB/RoCE v1') printf 'IB/RoCE v1' ;;
    *) return 1 ;;
  esac
}

# rg_parse_roce_tos TEXT: a ToS 0-255; fails on anything else.
rg_parse_roce_tos() {
  local v=${1%$'\n'}
  [[ $v =~ ^[0-9]{1,3}$ ]] && ((10#$v <= 255)) || return 1
  printf '%s' "$((10#$v))"
}

# rg_parse_rdma_netns TEXT: `rdma system show` (iproute2 rdma/sys.c: `netns MODE` and, since
# iproute2 5.14, ` copy-on-fork on|off` and more on the same line) → shared or exclusive.
rg_parse_rdma_netns() {
  local w m
  read -r w m _ <<<"$1"
  [ "$w" = netns ] && { [ "$m" = shared ] || [ "$m" = exclusive ]; } || return 1
  printf '%s' "$m"
}

# rg_parse_fw_zone TEXT: `firewall-cmd --zone=Z --list-all` (firewalld command.py
# print_zone_policy_info: `  key: values` lines, the rich rules each on a tab-indented line of
# their own) → three lines: the target, the ports (P/proto or A-B/proto, space-separated) and
# `rich` when the zone has rich rules, else nothing.
rg_parse_fw_zone() {
  local line target="" ports="" rich="" in_rich=no
  while IFS= read -r line; do
    case $line in
      '  target: '*) target=${line#  target: } ;;
      '  ports: '*) ports=${line#  ports: } ;;
      '  rich rules:'*) in_rich=yes ;;
      $'\t'*) [ "$in_rich" = no ] || rich=rich ;;
      '  '*) in_rich=no ;;
    esac
  done <<<"$1"
  [ -n "$target" ] || return 1
  printf '%s\n%s\n%s' "$target" "${ports% }" "$rich"
}

# rg_fw_opens PORTS PORT: whether firewalld's PORTS (rg_parse_fw_zone's) hold PORT/tcp.
rg_fw_opens() {
  local p lo hi
  for p in $1; do
    [[ $p =~ ^([0-9]+)(-([0-9]+))?/tcp$ ]] || continue
    lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[3]:-${BASH_REMATCH[1]}}
    [ "$2" -lt "$lo" ] || [ "$2" -gt "$hi" ] || return 0
  done
  return 1
}

# rg_gid_of_ip A.B.C.D[/N]: the GID the kernel gives an IPv4 address (IPv4-mapped), as
# /sys/class/infiniband/DEV/ports/N/gids/M prints it (`%pI6`): 10.10.1.2 →
# 0000:0000:0000:0000:0000:ffff:0a0a:0102.
rg_gid_of_ip() {
  local a b c d
  IFS=. read -r a b c d <<<"${1%%/*}"
  printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$((10#$a))" "$((10#$b))" "$((10#$c))" "$((10#$d))"
}

# rg_parse_ibdev2netdev DEV: `mlx5_0 port 1 ==> ens1f0np0 (Up)` lines → `ens1f0np0 Up` for DEV.
rg_parse_ibdev2netdev() {
  local line found=""
  # Reads to the end: stopping early would kill the tool with SIGPIPE and fail the pipeline.
  while IFS= read -r line; do
    if [ -z "$found" ] &&
      [[ $line =~ ^([^[:space:]]+)[[:space:]]port[[:space:]]1[[:space:]]==\>[[:space:]]([^[:space:]]+)[[:space:]]\(([A-Za-z]+)\)$ ]] &&
      [ "${BASH_REMATCH[1]}" = "$1" ]; then
      found="${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
    fi
  done
  printf '%s' "$found"
}

# rg_parse_lldpcli IF: `lldpcli -f keyvalue show neighbors ports IF` (`lldp.IF.key=value`) →
# three lines: switch, port, port description of the first neighbour.
rg_parse_lldpcli() {
  local line k v sw="" port="" descr=""
  while IFS= read -r line; do
    [[ $line == "lldp.$1."*=* ]] || continue
    k=${line#"lldp.$1."}
    v=${k#*=}
    k=${k%%=*}
    case $k in
      chassis.name) [ -n "$sw" ] || sw=$v ;;
      port.ifname | port.local | port.mac) [ -n "$port" ] || port=$v ;;
      port.descr) [ -n "$descr" ] || descr=$v ;;
    esac
  done
  printf '%s\n%s\n%s\n' "$sw" "$port" "$descr"
}

# rg_parse_lldptool: `lldptool -t -n -i IF` (TLV titles, values indented by a tab) → as
# rg_parse_lldpcli.
rg_parse_lldptool() {
  local line v tlv="" sw="" port="" descr=""
  while IFS= read -r line; do
    case $line in
      $'\t'*)
        v=${line#$'\t'}
        case $tlv in
          "System Name TLV") [ -n "$sw" ] || sw=$v ;;
          "Port ID TLV") [ -n "$port" ] || port=${v#*: } ;;
          "Port Description TLV") [ -n "$descr" ] || descr=$v ;;
        esac
        ;;
      *" TLV") tlv=$line ;;
    esac
  done
  printf '%s\n%s\n%s\n' "$sw" "$port" "$descr"
}

# --- the network managers (lib-netmgr.sh) ---------------------------------------------------------

# rg_nm_split LINE: RG_NM_F = the fields of one line of nmcli's terse tabular output (`-t`,
# `-g`). nmcli joins them with `:` and puts a `\` before each `:` and `\` inside a value
# (NetworkManager src/nmcli/utils.c, print_required_fields and print_data). Split in the shell
# itself: a process substitution per line cost a fork for every profile on the host.
RG_NM_F=()
rg_nm_split() {
  local s=$1 out="" c i n=${#1}
  RG_NM_F=()
  for ((i = 0; i < n; i++)); do
    c=${s:i:1}
    if [ "$c" = "\\" ] && [ $((i + 1)) -lt "$n" ]; then
      i=$((i + 1))
      out+=${s:i:1}
    elif [ "$c" = : ]; then
      RG_NM_F+=("$out")
      out=""
    else
      out+=$c
    fi
  done
  RG_NM_F+=("$out")
}

# rg_parse_nm_device IF: `nmcli -t -f DEVICE,STATE,CONNECTION,CON-UUID device status` → IF's
# `STATE<tab>UUID<tab>NAME` (the active profile's uuid and name, empty when none), or nothing
# when nmcli does not list IF.
rg_parse_nm_device() {
  local line found=""
  # Reads to the end, like every parser a tool's output is piped into: stopping early kills the
  # tool with SIGPIPE, and under pipefail the whole pipeline then fails.
  while IFS= read -r line; do
    [ -z "$found" ] || continue
    rg_nm_split "$line"
    if [ ${#RG_NM_F[@]} -eq 4 ] && [ "${RG_NM_F[0]}" = "$1" ]; then
      found=${RG_NM_F[1]}$'\t'${RG_NM_F[3]}$'\t'${RG_NM_F[2]//$'\t'/ }
    fi
  done
  [ -z "$found" ] || printf '%s\n' "$found"
}

# rg_parse_nm_filename UUID: `nmcli -t -f UUID,FILENAME connection show` → the file the profile
# UUID is stored in (nmcli 1.12 and newer list it), or nothing.
rg_parse_nm_filename() {
  local line found=""
  # Reads to the end (see rg_parse_nm_device): the profile listed first was once reported without
  # its file because nmcli, still writing the next profile, died of SIGPIPE.
  while IFS= read -r line; do
    [ -z "$found" ] || continue
    rg_nm_split "$line"
    if [ ${#RG_NM_F[@]} -eq 2 ] && [ "${RG_NM_F[0]}" = "$1" ]; then
      found=${RG_NM_F[1]}
    fi
  done
  printf '%s' "$found"
}

# rg_parse_nm_mtu: `nmcli -g 802-3-ethernet.mtu connection show UUID` → `auto` (0: the profile
# sets none) or the number (nm-meta-setting-desc.c, _get_fcn_gobject_mtu); nothing otherwise.
rg_parse_nm_mtu() {
  local line
  IFS= read -r line || [ -n "$line" ] || return 0
  if [ "$line" = auto ] || [ "$line" = 0 ]; then
    printf auto
  elif [[ $line =~ ^[1-9][0-9]*$ ]]; then
    printf '%s' "$line"
  fi
}

# rg_parse_networkd_state: a link's state file, /run/systemd/netif/links/IFINDEX, as
# systemd-networkd writes it (src/network/networkd-state-file.c, link_save: `KEY=value` lines;
# NETWORK_FILE= only while a .network file applies) → `ADMIN_STATE<tab>NETWORK_FILE`.
rg_parse_networkd_state() {
  local line admin="" file=""
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in
      ADMIN_STATE=*) admin=${line#*=} ;;
      NETWORK_FILE=*) file=${line#*=} ;;
    esac
  done
  printf '%s\t%s\n' "$admin" "$file"
}

# rg_parse_networkd_mtu: a .network file followed by its drop-ins, in the order systemd reads
# them → the MTU its [Link] section leaves (MTUBytes=, the last assignment wins; an empty one
# resets it; K, M and G are powers of 1024 as in systemd's parse_mtu), `unset`, or nothing
# when the value is not one this reader knows.
rg_parse_networkd_mtu() {
  local line section="" key value mtu=unset
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line#"${line%%[![:space:]]*}"}
    case $line in
      '#'* | ';'* | '') continue ;;
      '['*']'*)
        section=${line%%]*}
        section=${section#[}
        continue
        ;;
    esac
    if [ "$section" != Link ] || [[ $line != *=* ]]; then continue; fi
    key=${line%%=*}
    key=${key%"${key##*[![:space:]]}"}
    [ "$key" = MTUBytes ] || continue
    value=${line#*=}
    value=${value#"${value%%[![:space:]]*}"}
    value=${value%"${value##*[![:space:]]}"}
    case $value in
      '') mtu='unset' ;;
      *[!0-9KMG]* | [KMG]*) mtu="" ;;
      *K) mtu=$((${value%K} * 1024)) ;;
      *M) mtu=$((${value%M} * 1024 * 1024)) ;;
      *G) mtu=$((${value%G} * 1024 * 1024 * 1024)) ;;
      *[KMG]*) mtu="" ;;
      *) mtu=$((10#$value)) ;;
    esac
  done
  printf '%s' "$mtu"
}

# rg_parse_ifcfg_mtu: an ifcfg file (`KEY=value` shell assignments, initscripts' ifup-eth and
# NetworkManager's ifcfg-rh read MTU=) → its MTU, `unset`, or nothing when it is not a number.
rg_parse_ifcfg_mtu() {
  local line value mtu=unset
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in
      MTU=*)
        value=${line#MTU=}
        value=${value#[\"\']}
        value=${value%[\"\']}
        if [ -z "$value" ]; then
          mtu='unset'
        elif [[ $value =~ ^[0-9]+$ ]]; then
          mtu=$((10#$value))
        else
          mtu=""
        fi
        ;;
    esac
  done
  printf '%s' "$mtu"
}

# shellcheck shell=bash
# lib-net.sh, part of lib.sh: multi-rail address hygiene. On a host with several RoCE ports,
# each usually in its own subnet or all in one, the kernel's defaults let one port answer ARP
# for another's address (arp_ignore=0: "ARP flux"), announce another port's address as the
# source of its ARP requests (arp_announce=0), and a strict reverse-path filter (rp_filter=1)
# drops a reply that comes back on another port than the one the route points to. RDMA-CM
# resolves the peer's MAC through the kernel's neighbour table, so either breaks connection
# setup. Check `arp_sysctls` (per NIC): the effective values, warned where they allow that
# (plan `arp_sysctls` = check or set); with `set` apply sets arp_ignore=1, arp_announce=2,
# rp_filter=2 on the planned netdevs and persists them in /etc/sysctl.d/90-roce-gen-CLUSTER.conf
# (systemd-sysctl applies it at boot, and its udev rule 99-systemd.rules for a netdev that
# appears later); rollback restores the saved values and removes the file. Check `rail_route`
# (per NIC): `ip route get PEER from ADDR` for the port's fabric ring neighbours (RG_FAB_TO_IP,
# RG_FAB_FROM_IP) must leave through the planned port.

# The values `arp_sysctls = set` writes, in the order of RG_ARP_KEYS.
RG_ARP_KEYS="arp_ignore arp_announce rp_filter"
RG_ARP_WANT="1 2 2"

# rg_arp_effective ALL DEV: REPLY = the value the kernel uses for one of RG_ARP_KEYS: the larger of
# conf/all and conf/DEV (include/linux/inetdevice.h: IN_DEV_ARP_IGNORE, IN_DEV_ARP_ANNOUNCE and
# IN_DEV_RPFILTER are IN_DEV_MAXCONF). An unreadable value (empty) leaves the other one.
rg_arp_effective() {
  local a=$1 d=$2
  [[ $a =~ ^[0-9]+$ ]] || a=""
  [[ $d =~ ^[0-9]+$ ]] || d=""
  if [ -z "$a" ]; then
    REPLY=$d
  elif [ -z "$d" ] || [ "$((10#$a))" -ge "$((10#$d))" ]; then
    REPLY=$((10#$a))
  else
    REPLY=$((10#$d))
  fi
}

# rg_arp_problem KEY VALUE: REPLY = what an effective VALUE of KEY does to RDMA-CM on a host with
# several ports, empty when it is safe (arp_ignore 1..3, arp_announce 1..2, rp_filter 0 or 2;
# net/ipv4/arp.c arp_ignore(), inet_select_addr's use of arp_announce, fib_validate_source).
rg_arp_problem() {
  REPLY=""
  case $1:$2 in
    arp_ignore:0) REPLY='arp_ignore 0 lets every port answer ARP for the addresses of the others (ARP flux)' ;;
    arp_ignore:[1-3]) ;;
    arp_ignore:8) REPLY='arp_ignore 8 answers no ARP request at all' ;;
    arp_announce:0) REPLY="arp_announce 0 lets a port send ARP requests with another port's address" ;;
    arp_announce:[12]) ;;
    rp_filter:1) REPLY='rp_filter 1 (strict) drops what arrives on a port the route back does not leave through' ;;
    rp_filter:[02]) ;;
    *:"") REPLY="$1 cannot be read" ;;
    *) REPLY="$1 $2 is not a value the kernel defines" ;;
  esac
}

# rg_arp_ports: prints how many ports the plan has for this host (entries with an RDMA device).
rg_arp_ports() {
  local d n=0
  for d in ${RG_NIC_IBDEV[@]+"${RG_NIC_IBDEV[@]}"}; do [ -z "$d" ] || n=$((n + 1)); done
  printf '%s' "$n"
}

# The folder of the IPv4 sysctls of each netdev (`all` for the host-wide values).
RG_ARP_CONF=/proc/sys/net/ipv4/conf

# rg_arp_values IF: REPLY = IF's own values "V V V" in the order of RG_ARP_KEYS (`?` unreadable).
rg_arp_values() {
  local k out=""
  for k in $RG_ARP_KEYS; do
    rg_read_v "$RG_ARP_CONF/$1/$k" || RG_V=""
    out+="${RG_V:-?} "
  done
  REPLY=${out% }
}

# rg_arp_write IF "V V V": writes IF's values in the order of RG_ARP_KEYS; non-zero if one failed
# (the others are still written).
rg_arp_write() {
  local k w=0 rc=0
  local -a vals=()
  read -r -a vals <<<"$2"
  for k in $RG_ARP_KEYS; do
    rg_write "$RG_ARP_CONF/$1/$k" "${vals[w]-}" || rc=1
    w=$((w + 1))
  done
  return "$rc"
}

# rg_arp_read I: RG_ARP_DEV, RG_ARP_ALL and RG_ARP_EFF, the values of NIC I's netdev, of `all`
# and the effective ones, each "V V V" in the order of RG_ARP_KEYS (an unreadable one is `?`);
# RG_ARP_WHY the problems of the effective values, joined with "; ".
rg_arp_read() {
  local ifc=${RG_NIC_NETDEV[$1]} k d a e
  RG_ARP_DEV="" RG_ARP_ALL="" RG_ARP_EFF="" RG_ARP_WHY=""
  for k in $RG_ARP_KEYS; do
    rg_read_v "$RG_ARP_CONF/$ifc/$k" || RG_V=""
    d=$RG_V
    rg_read_v "$RG_ARP_CONF/all/$k" || RG_V=""
    a=$RG_V
    rg_arp_effective "$a" "$d"
    e=$REPLY
    RG_ARP_DEV+="${d:-?} " RG_ARP_ALL+="${a:-?} " RG_ARP_EFF+="${e:-?} "
    rg_arp_problem "$k" "$e"
    [ -z "$REPLY" ] || RG_ARP_WHY+="${RG_ARP_WHY:+; }$REPLY"
  done
  RG_ARP_DEV=${RG_ARP_DEV% } RG_ARP_ALL=${RG_ARP_ALL% } RG_ARP_EFF=${RG_ARP_EFF% }
}

# rg_arp_check I: the `arp_sysctls` check of NIC I from the host's values.
rg_arp_check() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]}
  rg_arp_read "$i"
  if [ -z "$RG_ARP_WHY" ]; then
    rg_check arp_sysctls "$dev" pass warning "safe" "$RG_ARP_EFF" \
      "$ifc: arp_ignore arp_announce rp_filter are $RG_ARP_EFF (the larger of $ifc's $RG_ARP_DEV and all's $RG_ARP_ALL)"
    return 0
  fi
  if [ "$RG_ARP_SYSCTLS" = set ]; then
    # A change apply will make: the summary lists it with the others.
    rg_check_change arp_sysctls "$dev" warn warning "$RG_ARP_WANT" "$RG_ARP_EFF" \
      "$ifc on a host with several RoCE ports: $RG_ARP_WHY, which can break RDMA-CM address resolution (effective values $RG_ARP_EFF, the larger of $ifc's $RG_ARP_DEV and all's $RG_ARP_ALL): apply sets $RG_ARP_WANT on $ifc (plan arp_sysctls = set)" "$RG_ARP_DEV"
    return 0
  fi
  rg_check arp_sysctls "$dev" warn warning "$RG_ARP_WANT" "$RG_ARP_EFF" \
    "$ifc on a host with several RoCE ports: $RG_ARP_WHY, which can break RDMA-CM address resolution (effective values $RG_ARP_EFF, the larger of $ifc's $RG_ARP_DEV and all's $RG_ARP_ALL): set arp_ignore=1, arp_announce=2, rp_filter=2 on $ifc (plan arp_sysctls = set does it)"
}

# rg_route_dev TEXT: the interface in the output of `ip route get` (iproute2 ip/iproute.c
# print_route: `DST [from SRC] [via GW] dev IF ...`), nothing when there is none.
rg_route_dev() {
  local -a w=()
  local k
  read -r -a w <<<"${1%%$'\n'*}"
  for ((k = 0; k + 1 < ${#w[@]}; k++)); do
    if [ "${w[k]}" = dev ]; then
      printf '%s' "${w[k + 1]}"
      return 0
    fi
  done
}

# rg_route_check I: the `rail_route` check of NIC I: how the kernel routes from the planned
# address to each fabric ring neighbour of the port.
rg_route_check() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} src=${RG_NIC_IP[$1]%%/*} peer out via bad="" seen="" peers=""
  for peer in "${RG_FAB_TO_IP[i]-}" "${RG_FAB_FROM_IP[i]-}"; do
    peer=${peer%%/*}
    [ -n "$peer" ] || continue
    [[ " $seen " != *" $peer "* ]] || continue
    seen+=" $peer"
    if ! rg_cap rg_x ip route get "$peer" from "$src"; then
      out=$RG_CAP
      bad+="${bad:+; }the kernel has no route from $src to $peer (${out%%$'\n'*})"
      continue
    fi
    via=$(rg_route_dev "$RG_CAP")
    if [ "$via" = "$ifc" ]; then
      peers+="${peers:+, }$peer"
    else
      bad+="${bad:+; }the route from $src to $peer leaves through ${via:-no interface}, not $ifc"
    fi
  done
  [ -n "$seen" ] || return 0
  if [ -z "$bad" ]; then
    rg_check rail_route "$dev" pass warning "$ifc" "$ifc" "the routes from $src to its rail peers ($peers) leave through $ifc"
  else
    rg_check rail_route "$dev" warn warning "$ifc" "" \
      "$bad: RDMA-CM then resolves and sends through another port (a route or policy rule per rail, e.g. ip rule add from $src table N, keeps it on $ifc)"
  fi
}

# rg_net_check: precheck's part (rg_precheck): on a host with several planned RoCE ports, each
# port whose identity checked out and has its planned address gets `arp_sysctls` (unless the
# plan says leave) and `rail_route`.
rg_net_check() {
  local i
  [ "$(rg_arp_ports)" -gt 1 ] || return 0
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_NIC_IBDEV[i]}" ] || continue
    rg_identity_ok "$i" || continue
    [ "$RG_ARP_SYSCTLS" = leave ] || rg_arp_check "$i"
    ! rg_status_is ip "${RG_NIC_IBDEV[i]}" pass || rg_route_check "$i"
  done
}

# rg_arp_file: the sysctl.d file `arp_sysctls = set` persists in.
rg_arp_file() { printf '/etc/sysctl.d/90-roce-gen-%s.conf' "$RG_CLUSTER"; }

# rg_arp_file_text IF...: that file's text for the netdevs IF (sysctl.d(5): a name with a dot
# takes the slash form, where dots stay part of the name).
rg_arp_file_text() {
  local ifc k w
  local -a want=()
  read -r -a want <<<"$RG_ARP_WANT"
  printf '# roce-gen, cluster %s: ARP and reverse-path filter settings of the RoCE ports (plan\n' "$RG_CLUSTER"
  printf '# arp_sysctls = set). rollback.sh restores the values it replaced and removes this file.\n'
  for ifc in "$@"; do
    w=0
    for k in $RG_ARP_KEYS; do
      if [[ $ifc == *.* ]]; then
        printf 'net/ipv4/conf/%s/%s = %s\n' "$ifc" "$k" "${want[w]}"
      else
        printf 'net.ipv4.conf.%s.%s = %s\n' "$ifc" "$k" "${want[w]}"
      fi
      w=$((w + 1))
    done
  done
}

# rg_net_apply: apply's part (apply.sh, after the ports): with `arp_sysctls = set` on a host with
# several ports, the values of RG_ARP_WANT on each planned netdev whose identity checked out
# (the ones there saved first, `arp_sysctls` DEV "IF V V V"), then the sysctl.d file. The boot
# run changes nothing here: systemd-sysctl has applied the file, and /etc is read-only to it.
rg_net_apply() {
  local i dev ifc now after file text ifcs=() devs=() ok changed
  [ "$RG_ARP_SYSCTLS" = set ] && [ "$(rg_arp_ports)" -gt 1 ] || return 0
  [ "$RG_BOOT" = no ] || return 0
  # Each port's check replaces precheck's (rg_check, lib.sh).
  # shellcheck disable=SC2034
  RG_CHECK_REPLACE=yes
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    dev=${RG_NIC_IBDEV[i]} ifc=${RG_NIC_NETDEV[i]}
    # The ports precheck looked at (identity checked out).
    [ -n "$dev" ] || continue
    ! rg_status_is arp_sysctls "$dev" "" || continue
    rg_arp_read "$i"
    now=$RG_ARP_DEV
    ifcs+=("$ifc") devs+=("$dev")
    if [ "$now" = "$RG_ARP_WANT" ] && [ -z "$RG_ARP_WHY" ]; then
      rg_check arp_sysctls "$dev" pass warning "$RG_ARP_WANT" "$RG_ARP_EFF" "$ifc: arp_ignore arp_announce rp_filter are already $now"
      continue
    fi
    [[ $now != *'?'* ]] || {
      rg_check arp_sysctls "$dev" fail error "$RG_ARP_WANT" "$now" "cannot read the IPv4 sysctls of $ifc under /proc/sys/net/ipv4/conf/$ifc: not changed"
      continue
    }
    rg_save arp_sysctls "$dev" "$ifc $now"
    ok=yes
    rg_arp_write "$ifc" "$RG_ARP_WANT" || ok=no
    if [ "$RG_DRY_RUN" = yes ]; then
      rg_check_change arp_sysctls "$dev" warn warning "$RG_ARP_WANT" "$now" "dry run: would set arp_ignore arp_announce rp_filter of $ifc to $RG_ARP_WANT (now $now)" "$now"
      continue
    fi
    rg_arp_read "$i"
    after=$RG_ARP_DEV
    if [ "$ok" = yes ] && [ "$after" = "$RG_ARP_WANT" ] && [ -z "$RG_ARP_WHY" ]; then
      rg_check_change arp_sysctls "$dev" changed warning "$RG_ARP_WANT" "$RG_ARP_EFF" "set arp_ignore arp_announce rp_filter of $ifc to $after (they were $now)" "$now"
    else
      rg_check arp_sysctls "$dev" fail error "$RG_ARP_WANT" "$RG_ARP_EFF" \
        "setting arp_ignore arp_announce rp_filter of $ifc to $RG_ARP_WANT left $after (effective $RG_ARP_EFF${RG_ARP_WHY:+: $RG_ARP_WHY}; see the log above)"
    fi
  done
  # shellcheck disable=SC2034
  RG_CHECK_REPLACE=no
  ((${#ifcs[@]})) || return 0
  file=$(rg_arp_file)
  text=$(rg_arp_file_text ${ifcs[@]+"${ifcs[@]}"})
  changed=""
  if [ -r "$RG_ROOT$file" ] && [ "$(rg_io_all "$RG_ROOT$file")" = "$text" ]; then
    rg_check arp_sysctls_persist "" pass warning present present "$file carries the settings of ${ifcs[*]}"
    return 0
  fi
  if [ -e "$RG_ROOT$file" ]; then changed=replaced; else changed=wrote; fi
  # The file is this cluster's: rollback removes it (the marker goes with the first port).
  rg_save arp_sysctls_persist "${devs[0]}" "$changed"
  rg_step "write: $file"
  if [ "$RG_DRY_RUN" = yes ]; then
    rg_check_action arp_sysctls_persist "" warn warning present "" "dry run: would write $file (the settings of ${ifcs[*]}, applied at boot by systemd-sysctl)" "absent → installed ($file)"
  elif rg_write_file "$RG_ROOT$file" "$text"; then
    rg_check_action arp_sysctls_persist "" changed warning present present "$changed $file: systemd-sysctl applies the settings of ${ifcs[*]} at boot" "absent → installed ($file)"
  else
    rg_check arp_sysctls_persist "" fail error present absent "could not write $file: the settings of ${ifcs[*]} are lost at the next boot"
  fi
}

# rg_net_rollback: rollback's part (rg_rollback): each netdev's saved values back (`arp_sysctls`
# lines of the saved state), then the sysctl.d file removed (`arp_sysctls_persist`: apply wrote it).
rg_net_rollback() {
  local id dev value ifc old now after file any=no ok
  [ -r "$RG_SAVED" ] || return 0
  while IFS=$'\t' read -r -u 3 id dev value; do
    [ "$id" != arp_sysctls_persist ] || any=yes
    [ "$id" = arp_sysctls ] || continue
    read -r ifc old <<<"$value"
    rg_arp_values "$ifc"
    now=$REPLY
    if [ "$now" = "$old" ]; then
      rg_check arp_sysctls "$dev" pass warning "$old" "$now" "arp_ignore arp_announce rp_filter of $ifc are already $old"
      continue
    fi
    ok=yes
    rg_arp_write "$ifc" "$old" || ok=no
    if [ "$RG_DRY_RUN" = yes ]; then
      rg_check_change arp_sysctls "$dev" warn warning "$old" "$now" "dry run: would set arp_ignore arp_announce rp_filter of $ifc back to $old" "$now"
      continue
    fi
    rg_arp_values "$ifc"
    after=$REPLY
    if [ "$ok" = yes ] && [ "$after" = "$old" ]; then
      rg_check_change arp_sysctls "$dev" changed warning "$old" "$after" "arp_ignore arp_announce rp_filter of $ifc are $old again" "$now"
    else
      rg_check arp_sysctls "$dev" fail error "$old" "$after" "could not set arp_ignore arp_announce rp_filter of $ifc back to $old (they are $after)"
    fi
  done 3<"$RG_SAVED"
  [ "$any" = yes ] || return 0
  file=$(rg_arp_file)
  if [ ! -e "$RG_ROOT$file" ]; then
    rg_check arp_sysctls_persist "" pass warning absent absent "$file is not there"
    return 0
  fi
  rg_do rm -f "$RG_ROOT$file" || true
  rg_check_removed arp_sysctls_persist "" warning "$file" "$file"
}

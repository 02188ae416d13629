# shellcheck shell=bash
# lib-netmgr.sh, part of lib.sh: the host's network managers. Who manages each planned netdev
# (NetworkManager, systemd-networkd, netplan, ifcfg files, or none) and which MTU it puts back
# when it activates the link again (a carrier loss, a reboot, `nmcli connection up`, `networkctl
# reconfigure`). The MTU apply sets with `ip link` lasts only until then, so apply also puts it
# where the manager keeps it: the NetworkManager profile (`802-3-ethernet.mtu`, then `nmcli
# device reapply`) or a drop-in of the networkd `.network` file. Where it cannot (a profile that
# netplan generates, an ifcfg file without NetworkManager) the `mtu` check is a warning that
# names the file to edit, never `changed`. The check is `mtu_owner`, per NIC, on hosts where a
# manager owns the netdev. Rollback (rg_netmgr_rollback) restores what apply changed there.
# Reads the tools' output through the readers of lib-parse.sh.

# Per NIC (plan index), once probed (rg_netmgr_probe): the manager (networkmanager, networkd,
# netplan, ifcfg, none), what it keeps the MTU in (a profile's uuid, a .network or ifcfg file,
# a netplan file), how messages name that, and the MTU it sets (a number, `auto`/`unset` for
# none, empty when it cannot be read).
RG_NETMGR_KIND=()
RG_NETMGR_REF=()
RG_NETMGR_SHOW=()
RG_NETMGR_MTU=()
# systemd's search path for .network files and their drop-ins (systemd.network(5)).
RG_NETWORKD_DIRS="/etc/systemd/network /run/systemd/network /usr/local/lib/systemd/network /usr/lib/systemd/network /lib/systemd/network"

# rg_netplan_file IF: the first /etc/netplan file that names IF, else the folder's pattern.
rg_netplan_file() {
  local f
  for f in "$RG_ROOT"/etc/netplan/*.yaml; do
    [ -f "$f" ] || continue
    if grep -q -w -F -- "$1" "$f" 2>/dev/null; then
      printf '%s' "${f#"$RG_ROOT"}"
      return 0
    fi
  done
  printf '/etc/netplan/*.yaml'
}

# rg_ifcfg_file IF: the ifcfg file of IF (ifcfg-IF, or one whose DEVICE= names it), or nothing.
rg_ifcfg_file() {
  local dir=/etc/sysconfig/network-scripts f
  if [ -f "$RG_ROOT$dir/ifcfg-$1" ]; then
    printf '%s' "$dir/ifcfg-$1"
    return 0
  fi
  for f in "$RG_ROOT$dir"/ifcfg-*; do
    [ -f "$f" ] || continue
    if grep -q -x -E "DEVICE=[\"']?$1[\"']?" "$f" 2>/dev/null; then
      printf '%s' "${f#"$RG_ROOT"}"
      return 0
    fi
  done
}

# rg_networkd_dropins FILE: the drop-ins of .network file FILE (host paths), in the order
# systemd reads them: every NAME.network.d/*.conf of the search path, a name in an earlier
# folder hiding the same name in a later one, sorted by file name; a later one wins.
rg_networkd_dropins() {
  local name=${1##*/} d f base
  local -A seen=()
  for d in $RG_NETWORKD_DIRS; do
    for f in "$RG_ROOT$d/$name.d"/*.conf; do
      [ -f "$f" ] || continue
      base=${f##*/}
      [ -n "${seen[$base]+set}" ] || seen[$base]=${f#"$RG_ROOT"}
    done
  done
  for base in ${seen[@]+"${!seen[@]}"}; do printf '%s\n' "$base"; done | LC_ALL=C sort |
    while IFS= read -r base; do printf '%s\n' "${seen[$base]}"; done
}

# rg_networkd_mtu FILE: the MTU systemd-networkd gives a link that FILE (a .network file, host
# path) configures, its drop-ins included (rg_parse_networkd_mtu).
rg_networkd_mtu() {
  local f
  {
    cat "$RG_ROOT$1" 2>/dev/null
    while IFS= read -r f; do
      # Each file starts outside any section.
      printf '\n[]\n'
      cat "$RG_ROOT$f" 2>/dev/null
    done < <(rg_networkd_dropins "$1")
  } | rg_parse_networkd_mtu
}

# rg_nm_profile_mtu UUID: the MTU NetworkManager profile UUID sets (rg_parse_nm_mtu).
rg_nm_profile_mtu() {
  rg_x nmcli -g 802-3-ethernet.mtu connection show "$1" 2>/dev/null | rg_parse_nm_mtu || true
}

# rg_netmgr_probe I: who manages NIC I's netdev and the MTU it sets (RG_NETMGR_*). NetworkManager
# when it runs and has activated a profile on the device itself (`connected (externally)`: it
# only watches, and leaves the MTU alone); systemd-networkd when its state file of the link
# names a .network file; then an ifcfg file, then a netplan file that names the netdev. A
# profile or .network file that netplan generated is netplan's: netplan writes it again.
rg_netmgr_probe() {
  local i=$1 ifc=${RG_NIC_NETDEV[$1]} out="" line state="" uuid="" name="" file="" idx admin="" netfile=""
  RG_NETMGR_KIND[i]=none RG_NETMGR_REF[i]="" RG_NETMGR_SHOW[i]="" RG_NETMGR_MTU[i]=""
  if rg_has nmcli && out=$(rg_x nmcli -t -f DEVICE,STATE,CONNECTION,CON-UUID device status 2>/dev/null); then
    line=$(rg_parse_nm_device "$ifc" <<<"$out")
    IFS=$'\t' read -r state uuid name <<<"$line" || true
    case $state in
      connected | 'connecting ('*)
        if [ -n "$uuid" ] && [[ $state != *externally* ]]; then
          file=$(rg_x nmcli -t -f UUID,FILENAME connection show 2>/dev/null | rg_parse_nm_filename "$uuid") || file=""
          RG_NETMGR_MTU[i]=$(rg_nm_profile_mtu "$uuid")
          if [[ ${file##*/} == netplan-* ]]; then
            RG_NETMGR_KIND[i]=netplan RG_NETMGR_REF[i]=$(rg_netplan_file "$ifc")
            RG_NETMGR_SHOW[i]="netplan's ${RG_NETMGR_REF[i]} (NetworkManager profile '$name', generated in $file)"
          else
            RG_NETMGR_KIND[i]=networkmanager RG_NETMGR_REF[i]=$uuid
            RG_NETMGR_SHOW[i]="NetworkManager profile '$name' ($uuid${file:+, $file})"
          fi
          return 0
        fi
        ;;
    esac
  fi
  idx=$(rg_read "/sys/class/net/$ifc/ifindex") || idx=""
  if [[ $idx =~ ^[0-9]+$ ]] && [ -r "$RG_ROOT/run/systemd/netif/links/$idx" ]; then
    IFS=$'\t' read -r admin netfile < <(rg_parse_networkd_state <"$RG_ROOT/run/systemd/netif/links/$idx") || true
    case $admin in
      unmanaged | linger | '') ;;
      *)
        if [ -n "$netfile" ]; then
          RG_NETMGR_MTU[i]=$(rg_networkd_mtu "$netfile")
          if [[ $netfile == /run/systemd/network/* ]] && [[ ${netfile##*/} == *netplan* ]]; then
            RG_NETMGR_KIND[i]=netplan RG_NETMGR_REF[i]=$(rg_netplan_file "$ifc")
            RG_NETMGR_SHOW[i]="netplan's ${RG_NETMGR_REF[i]} (systemd-networkd's $netfile, generated from it)"
          else
            RG_NETMGR_KIND[i]=networkd RG_NETMGR_REF[i]=$netfile
            RG_NETMGR_SHOW[i]="systemd-networkd's $netfile"
          fi
          return 0
        fi
        ;;
    esac
  fi
  file=$(rg_ifcfg_file "$ifc")
  if [ -n "$file" ]; then
    RG_NETMGR_KIND[i]=ifcfg RG_NETMGR_REF[i]=$file RG_NETMGR_SHOW[i]="the ifcfg file $file"
    RG_NETMGR_MTU[i]=$(rg_parse_ifcfg_mtu <"$RG_ROOT$file")
    return 0
  fi
  file=$(rg_netplan_file "$ifc")
  if [ "$file" != '/etc/netplan/*.yaml' ]; then
    # Not rendered (no networkd or NetworkManager state names it): what it sets is not known here.
    RG_NETMGR_KIND[i]=netplan RG_NETMGR_REF[i]=$file RG_NETMGR_SHOW[i]="netplan's $file"
  fi
}

# rg_netmgr_fix I: how to put the planned MTU where the manager of NIC I keeps it, by hand.
rg_netmgr_fix() {
  local want=${RG_NIC_MTU[$1]} ifc=${RG_NIC_NETDEV[$1]}
  case ${RG_NETMGR_KIND[$1]} in
    netplan) printf 'set mtu: %s for %s in %s, then run netplan apply' "$want" "$ifc" "${RG_NETMGR_REF[$1]}" ;;
    ifcfg) printf 'set MTU=%s in %s' "$want" "${RG_NETMGR_REF[$1]}" ;;
    networkmanager) printf 'nmcli connection modify %s 802-3-ethernet.mtu %s; nmcli device reapply %s' "${RG_NETMGR_REF[$1]}" "$want" "$ifc" ;;
    networkd) printf 'add [Link] MTUBytes=%s to %s (or a drop-in), then networkctl reload' "$want" "${RG_NETMGR_REF[$1]}" ;;
  esac
}

# rg_netmgr_demote I TEXT: the `mtu` check of NIC I, when it says changed or pass, becomes a
# warning that TEXT completes: the value holds now, but the manager puts another one back.
# shellcheck disable=SC2034,SC2153 # lib.sh's arrays of the run's checks
rg_netmgr_demote() {
  local n dev=${RG_NIC_IBDEV[$1]}
  for ((n = ${#RG_C_ID[@]} - 1; n >= 0; n--)); do
    if [ "${RG_C_ID[n]}" != mtu ] || [ "${RG_C_NIC[n]}" != "$dev" ]; then continue; fi
    case ${RG_C_STATUS[n]} in
      changed | pass)
        RG_C_STATUS[n]=warn
        RG_C_KIND[n]=""
        RG_C_MSG[n]+="; but $2"
        ;;
    esac
    return 0
  done
}

# rg_netmgr_check MODE I: the `mtu_owner` check of NIC I (nothing where no manager owns its
# netdev, or where the `mtu` check did not run). MODE compare (precheck) says what apply will do;
# apply puts the MTU into the profile or drop-in (rg_netmgr_apply), except at boot, when the
# unit sees /etc read-only and the profile carries the MTU since the interactive apply.
rg_netmgr_check() {
  local mode=$1 i=$2 dev=${RG_NIC_IBDEV[$2]} ifc=${RG_NIC_NETDEV[$2]} want=${RG_NIC_MTU[$2]} have show st fix sets
  rg_status_of mtu "$dev"
  st=$REPLY
  case $st in '' | skip) return 0 ;; esac
  [ -n "${RG_NETMGR_KIND[i]+set}" ] || rg_netmgr_probe "$i"
  [ "${RG_NETMGR_KIND[i]}" != none ] || return 0
  have=${RG_NETMGR_MTU[i]} show=${RG_NETMGR_SHOW[i]} fix=$(rg_netmgr_fix "$i")
  if [ "$have" = "$want" ]; then
    rg_check mtu_owner "$dev" pass error "$want" "$have" "$show sets MTU $want when it activates $ifc, as planned"
    return 0
  fi
  case ${RG_NETMGR_KIND[i]}:$have in
    netplan:unset | ifcfg:unset)
      rg_check mtu_owner "$dev" pass error "$want" "$have" \
        "$show sets no MTU for $ifc, so activating it keeps the MTU apply sets (and the boot unit sets it at every boot); to keep it there too: $fix"
      return 0
      ;;
    netplan:* | ifcfg:*)
      if [ -z "$have" ]; then
        have="unknown"
        show="$show configures $ifc, but which MTU it sets is not known here"
      else
        show="$show sets MTU $have when it activates $ifc, the plan says $want"
      fi
      rg_check mtu_owner "$dev" warn error "$want" "$have" "$show; apply cannot change it there: $fix"
      [ "$mode" = compare ] || rg_netmgr_demote "$i" "${RG_NETMGR_SHOW[i]} puts MTU $have back when $ifc is activated again: $fix"
      return 0
      ;;
  esac
  if [ -z "$have" ]; then
    rg_check mtu_owner "$dev" warn error "$want" "unknown" "cannot read the MTU $show sets for $ifc: $fix"
    [ "$mode" = compare ] || rg_netmgr_demote "$i" "the MTU $show sets is not known: $fix"
    return 0
  fi
  # What it does with the MTU, in words: a number, or none (NetworkManager's `auto`).
  case $have in
    auto | unset) sets="sets no MTU when it activates $ifc (it keeps the one the link has)" ;;
    *) sets="sets MTU $have when it activates $ifc" ;;
  esac
  case $mode in
    compare)
      rg_check_change mtu_owner "$dev" warn error "$want" "$have" \
        "$show $sets, the plan says $want (apply will set $want there, so that a reactivation keeps it)" "$have"
      ;;
    *)
      if [ "$RG_BOOT" = yes ]; then
        rg_check mtu_owner "$dev" warn error "$want" "$have" \
          "$show $sets; the boot run does not change it (/etc is read-only to the boot unit): run apply.sh, or $fix"
        case $have in
          auto | unset) ;;
          *) rg_netmgr_demote "$i" "$show puts MTU $have back when $ifc is activated again: run apply.sh" ;;
        esac
      else
        rg_netmgr_apply "$i"
      fi
      ;;
  esac
}

# rg_netmgr_apply I: apply's part of rg_netmgr_check: the planned MTU into the NetworkManager
# profile (then `nmcli device reapply`, which puts it on the netdev: nm-device-ethernet.c
# reapplies the MTU) or into a drop-in of the .network file (then `networkctl reload` and
# `reconfigure`, systemd 244 and newer). What it replaces is saved first (`netmgr_mtu`).
rg_netmgr_apply() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} want=${RG_NIC_MTU[$1]} have=${RG_NETMGR_MTU[$1]}
  local show=${RG_NETMGR_SHOW[$1]} ref=${RG_NETMGR_REF[$1]} what dropin after now ok=yes was="MTU $have"
  case $have in auto | unset) was="no MTU" ;; esac
  if [ "${RG_NETMGR_KIND[i]}" = networkmanager ]; then
    what="802-3-ethernet.mtu $want in $show, then nmcli device reapply $ifc"
    rg_save netmgr_mtu "$dev" "networkmanager $ref $have"
    if ! rg_do nmcli connection modify "$ref" 802-3-ethernet.mtu "$want" || ! rg_do nmcli device reapply "$ifc"; then
      ok=no
    fi
  else
    dropin="/etc/systemd/network/${ref##*/}.d/90-roce-gen-$RG_CLUSTER.conf"
    what="MTUBytes=$want in the drop-in $dropin of $show, then networkctl reload and reconfigure $ifc"
    rg_save netmgr_mtu "$dev" "networkd $dropin"
    rg_step "write: $dropin"
    if [ "$RG_DRY_RUN" = no ] && ! rg_write_file "$RG_ROOT$dropin" \
      "$(printf '# roce-gen, cluster %s: the planned MTU of %s. rollback.sh removes this file.\n[Link]\nMTUBytes=%s' "$RG_CLUSTER" "$ifc" "$want")"; then
      ok=no
    fi
    if [ "$ok" = yes ] && ! { rg_has networkctl && rg_do networkctl reload && rg_do networkctl reconfigure "$ifc"; }; then
      [ "$RG_DRY_RUN" = yes ] || ok=reload
    fi
  fi
  if [ "$RG_DRY_RUN" = yes ]; then
    rg_check_change mtu_owner "$dev" warn error "$want" "$have" "dry run: would set $what (it sets $was now)" "$have"
    return 0
  fi
  if [ "${RG_NETMGR_KIND[i]}" = networkmanager ]; then
    after=$(rg_nm_profile_mtu "$ref")
  else
    after=$(rg_networkd_mtu "$ref")
  fi
  now=$(rg_read "/sys/class/net/$ifc/mtu") || now=""
  if [ "$ok" = reload ] && [ "$after" = "$want" ]; then
    rg_check mtu_owner "$dev" warn error "$want" "$after" \
      "wrote $dropin, but systemd-networkd did not reload it (networkctl reload needs systemd 244): systemctl restart systemd-networkd loads it"
    rg_netmgr_demote "$i" "systemd-networkd has not loaded $dropin yet: systemctl restart systemd-networkd"
  elif [ "$ok" = yes ] && [ "$after" = "$want" ] && [ "$now" = "$want" ]; then
    RG_NETMGR_MTU[i]=$after
    rg_check_change mtu_owner "$dev" changed error "$want" "$after" "set $what (it set $was); $ifc has MTU $now" "$have"
  else
    rg_check mtu_owner "$dev" fail error "$want" "$after" \
      "setting $what failed: ${show} now sets MTU ${after:-unknown} and $ifc has ${now:-no readable} MTU (see the log above)"
    rg_netmgr_demote "$i" "$show does not carry it: $(rg_netmgr_fix "$i")"
  fi
}

# rg_netmgr_rollback: rollback of what apply changed in the managers' files, from the saved
# `netmgr_mtu` lines: the profile's MTU as it was (then `nmcli device reapply`), the drop-in
# removed (then `networkctl reload` and `reconfigure`). Check `mtu_owner`.
rg_netmgr_rollback() {
  local id dev value kind ref old i ifc after
  [ -r "$RG_SAVED" ] || return 0
  # The saved state on its own descriptor: the tools run inside the loop keep stdin.
  while IFS=$'\t' read -r -u 3 id dev value; do
    [ "$id" = netmgr_mtu ] || continue
    read -r kind ref old <<<"$value"
    if ! i=$(rg_index_of "$dev"); then
      rg_check mtu_owner "$dev" fail error "" "" "$dev is not in this bundle's plan; undo by hand: $kind $ref ${old:-}"
      continue
    fi
    ifc=${RG_NIC_NETDEV[i]}
    if [ "$kind" = networkmanager ]; then
      after=$(rg_nm_profile_mtu "$ref")
      if [ "$after" = "$old" ]; then
        rg_check mtu_owner "$dev" pass error "$old" "$after" "NetworkManager profile $ref already sets MTU $old"
        continue
      fi
      if rg_do nmcli connection modify "$ref" 802-3-ethernet.mtu "$old"; then
        rg_do nmcli device reapply "$ifc" || true
      fi
      if [ "$RG_DRY_RUN" = yes ]; then
        rg_check_change mtu_owner "$dev" warn error "$old" "$after" "dry run: would set 802-3-ethernet.mtu $old again in NetworkManager profile $ref" "$after"
        continue
      fi
      after=$(rg_nm_profile_mtu "$ref")
      if [ "$after" = "$old" ]; then
        rg_check_change mtu_owner "$dev" changed error "$old" "$after" "NetworkManager profile $ref sets MTU $old again" "${RG_NIC_MTU[i]}"
      else
        rg_check mtu_owner "$dev" fail error "$old" "$after" "could not set 802-3-ethernet.mtu $old again in NetworkManager profile $ref (it sets ${after:-unknown})"
      fi
    else
      if [ ! -e "$RG_ROOT$ref" ]; then
        rg_check mtu_owner "$dev" pass error absent absent "the drop-in $ref is not there"
        continue
      fi
      rg_do rm -f "$RG_ROOT$ref" || true
      [ "$RG_DRY_RUN" = yes ] || rmdir "$RG_ROOT${ref%/*}" 2>/dev/null || true
      after=" and reconfigured $ifc"
      if ! { rg_has networkctl && rg_do networkctl reload && rg_do networkctl reconfigure "$ifc"; }; then
        after="; systemd-networkd drops it when it restarts (systemctl restart systemd-networkd)"
      fi
      rg_check_removed mtu_owner "$dev" error "$ref" "the drop-in $ref" "$after"
    fi
  done 3<"$RG_SAVED"
}

# rg_netmgr_fact I: REPLY = the facts of NIC I's manager, `"net_manager":…,"net_manager_profile":…`.
rg_netmgr_fact() {
  [ -n "${RG_NETMGR_KIND[$1]+set}" ] || rg_netmgr_probe "$1"
  rg_json_fmt '"net_manager":%s,"net_manager_profile":%s' s "${RG_NETMGR_KIND[$1]}" s "${RG_NETMGR_REF[$1]}"
}

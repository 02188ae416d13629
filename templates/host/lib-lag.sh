# shellcheck shell=bash
# lib-lag.sh, part of lib.sh: RoCE LAG. A NIC row whose netdev is a bond (bonding sysfs,
# drivers/net/bonding/bond_sysfs.c) and whose ib_dev is the LAG device mlx5 registers for it
# (mlx5_ib main.c: "mlx5_bond_%d", on the LAG master PF). The per-port settings (trust, DSCP
# map, PFC, pause, ECN, CNP, DCQCN, cable length, DCBX) live on each PF's netdev, so they are
# read, set, saved and restored on every slave; RDMA-CM and the traffic class belong to the LAG
# device, the MTU to the bond (bond_main.c bond_change_mtu sets each slave's first); identity,
# address and GID are the bond's (roce_gid_mgmt puts the bond's addresses in the LAG device's
# GID table, which is how ibdev2netdev names the bond). The bond has no DCB, pause, statistics
# or module operations of its own, so the facts and health series are each slave's too
# (lib-probe.sh, lib-health.sh), and the card's firmware values are read and set through PF0 for
# both ports (lib-firmware.sh rg_fw_device, rg_fw_ports).

# The bond of each LAG NIC (RG_NIC_BOND[i], the planned netdev) and its slaves, space-separated
# (RG_NIC_SLAVES[i], bonding/slaves), found by rg_lag_resolve; unset for any other NIC.
RG_NIC_BOND=()
RG_NIC_SLAVES=()
# The slaves rg_check_lag found down, space-separated: apply does not wait for their link.
RG_LAG_DOWN=()
# The slave whose per-port settings are in hand (rg_lag_settings, rg_lag_restore); meanwhile
# RG_NIC_NETDEV[i] names it, so the per-port code reads and writes that slave.
RG_LAG_PORT=""

# rg_lag_resolve: finds each planned bond's slaves on the host. Run after rg_resolve_netdevs.
rg_lag_resolve() {
  local i ifc slaves
  for ((i = 0; i < ${#RG_NIC_NETDEV[@]}; i++)); do
    ifc=${RG_NIC_NETDEV[i]}
    [ -d "$RG_ROOT/sys/class/net/$ifc/bonding" ] || continue
    # bonding_show_slaves: the names, space-separated, one newline; empty with no slave.
    slaves=$(rg_read "/sys/class/net/$ifc/bonding/slaves") || slaves=""
    RG_NIC_BOND[i]=$ifc
    RG_NIC_SLAVES[i]=$(printf '%s' "$slaves" | tr -s ' \t' '  ')
  done
}

# rg_is_lag I: true when NIC I's netdev is a bond.
rg_is_lag() { [ -n "${RG_NIC_BOND[$1]-}" ]; }

# rg_nic_ports I: REPLY = the physical ports of NIC I, space-separated: a LAG's slaves (the bond
# has no statistics or port of its own), else its netdev.
rg_nic_ports() {
  REPLY=${RG_NIC_NETDEV[$1]}
  if rg_is_lag "$1" && [ -n "${RG_NIC_SLAVES[$1]}" ]; then REPLY=${RG_NIC_SLAVES[$1]}; fi
}

# rg_lag_port_id ID: true for the settings each physical port has for itself.
rg_lag_port_id() {
  case $1 in
    dcbx | trust | dscp2prio | dscp_map | pfc | cable_length | pause | ecn_np | ecn_rp | cnp_dscp | cnp_priority | dcqcn_*) return 0 ;;
  esac
  return 1
}

# rg_lag_wants ID I: whether rg_port_settings handles ID in this pass: every setting on a NIC that
# is no LAG; on a LAG, the per-port ones while a slave is in hand, the others on the bond pass.
rg_lag_wants() {
  rg_is_lag "$2" || return 0
  if [ -n "$RG_LAG_PORT" ]; then rg_lag_port_id "$1"; else ! rg_lag_port_id "$1"; fi
}

# rg_lag_on_bond I CMD...: runs CMD with NIC I's netdev the bond again (the address, GID and
# link checks a flapped slave's wait repeats are the bond's).
rg_lag_on_bond() {
  local i=$1 port=$RG_LAG_PORT rc=0
  shift
  if [ -z "$port" ]; then
    "$@"
    return
  fi
  RG_LAG_PORT=""
  RG_NIC_NETDEV[i]=${RG_NIC_BOND[i]}
  "$@" || rc=$?
  RG_NIC_NETDEV[i]=$port
  RG_LAG_PORT=$port
  return "$rc"
}

# rg_lag_name_checks FROM PORT: the checks recorded from index FROM on name the slave they are
# about, in their message and for the summary (RG_C_PORT).
rg_lag_name_checks() {
  local k
  # Escaped here once: the summary prints RG_C_PORT as it is (a name is the host's text).
  rg_esc "$2"
  for ((k = $1; k < ${#RG_C_ID[@]}; k++)); do
    RG_C_MSG[k]="$2: ${RG_C_MSG[k]}"
    # shellcheck disable=SC2034 # the summary (lib.sh) reads it
    RG_C_PORT[k]=$REPLY
  done
}

# rg_lag_settings MODE I: rg_port_settings on each slave of NIC I's bond, then on the bond.
rg_lag_settings() {
  local mode=$1 i=$2 s from
  for s in ${RG_NIC_SLAVES[i]}; do
    from=${#RG_C_ID[@]}
    RG_LAG_PORT=$s
    RG_NIC_NETDEV[i]=$s
    rg_port_settings "$mode" "$i"
    RG_NIC_NETDEV[i]=${RG_NIC_BOND[i]}
    RG_LAG_PORT=""
    rg_lag_name_checks "$from" "$s"
  done
  rg_port_settings "$mode" "$i"
}

# rg_lag_restore DEV/PORT ID=VALUE...: rollback of one slave of a LAG: the values apply saved for
# it under DEV/PORT, restored on PORT.
rg_lag_restore() {
  local dev=${1%%/*} port=${1#*/} i from planned=""
  shift
  from=${#RG_C_ID[@]}
  if i=$(rg_index_of "$dev"); then
    planned=${RG_NIC_NETDEV[i]}
    RG_LAG_PORT=$port
    RG_NIC_NETDEV[i]=$port
  fi
  rg_restore "$dev" "$@"
  if [ -n "$planned" ]; then
    RG_NIC_NETDEV[i]=$planned
    RG_LAG_PORT=""
  fi
  rg_lag_name_checks "$from" "$port"
}

# rg_lag_port_was_down I: true when the slave in hand was down before the run (rg_check_lag).
rg_lag_port_was_down() {
  [ -n "$RG_LAG_PORT" ] && [[ " ${RG_LAG_DOWN[$1]-} " == *" $RG_LAG_PORT "* ]]
}

# rg_lag_netdev DEV: the netdev of a LAG device's RoCE port: its default GID's, as ibdev2netdev
# reads it (gid_attrs/ndevs/0); the device link names only the LAG master PF's netdev.
rg_lag_netdev() {
  rg_read "/sys/class/infiniband/$1/ports/1/gid_attrs/ndevs/0" || true
}

# rg_lag_pci I: the PCI function of NIC I's LAG device (the LAG master PF, its first slave's).
rg_lag_pci() {
  local pci
  pci=$(readlink "$RG_ROOT/sys/class/infiniband/${RG_NIC_IBDEV[$1]}/device" 2>/dev/null) || return 0
  printf '%s' "${pci##*/}"
}

# rg_check_lag I: the bond's slaves: each there, up and a port of the same card, and every port of
# that card a slave (mlx5 activates RoCE LAG only then: lag.c, every PF's netdev a lower device of
# one bond). A slave down warns (the LAG runs on the other port at half the bandwidth); a slave
# missing fails, naming it.
rg_check_lag() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} bond=${RG_NIC_BOND[$1]-} s pci card="" f n p bad="" down="" mode
  rg_is_lag "$i" || return 0
  if [ -z "${RG_NIC_SLAVES[i]}" ]; then
    rg_check lag "$dev" fail error "the ports of one card" none \
      "$bond has no slaves (/sys/class/net/$bond/bonding/slaves is empty): enslave both ports of the card to $bond (the bond's network configuration), then run again"
    return 0
  fi
  for s in ${RG_NIC_SLAVES[i]}; do
    if [ ! -d "$RG_ROOT/sys/class/net/$s" ]; then
      bad+="${bad:+; }slave $s is not in /sys/class/net/"
      continue
    fi
    pci=$(rg_netdev_pci "$s")
    [ -n "$card" ] || card=${pci%.*}
    if [ -z "$pci" ] || [ "${pci%.*}" != "$card" ]; then
      bad+="${bad:+; }slave $s is at PCI ${pci:-none}, not a port of the card at $card: mlx5 bonds only the ports of one card"
    fi
    # carrier refuses to be read (EINVAL) while the interface is administratively down.
    if [ "$(rg_read "/sys/class/net/$s/carrier" || true)" != 1 ] || [ "$(rg_read "/sys/class/net/$s/operstate" || true)" != up ]; then
      down+="${down:+, }$s"
    fi
  done
  RG_LAG_DOWN[i]=${down//,/}
  # Every port of the card must be a slave: a port left out stops mlx5 from bonding the card.
  # Only its physical ports: a VF's function (physfn) and a switchdev representor (mlx5 en_rep.c
  # makes it a child of the PF, phys_port_name pfNvfM or pfNsfM; the uplink's is pN) are none.
  if [ -n "$card" ]; then
    for f in "$RG_ROOT/sys/bus/pci/devices/$card".*/net/*; do
      [ -e "$f" ] || continue
      n=${f##*/}
      p=${f%/net/*}
      [ ! -e "$p/physfn" ] || continue
      if rg_read_v "/sys/class/net/$n/phys_port_name"; then
        case $RG_V in
          '' | p[0-9]*) ;;
          *) continue ;;
        esac
      fi
      [[ " ${RG_NIC_SLAVES[i]} " == *" $n "* ]] ||
        bad+="${bad:+; }$n (PCI ${p##*/}) is a port of the same card but not a slave of $bond: mlx5 activates RoCE LAG only with every port of the card in the bond, and $n stays lossy; add $n to $bond's slaves in the network configuration"
    done
  fi
  mode=$(rg_read "/sys/class/net/$bond/bonding/mode") || mode=""
  if [ -n "$bad" ]; then
    rg_check lag "$dev" fail error "the ports of one card" "${RG_NIC_SLAVES[i]}" "$bond: $bad"
  elif [ -n "$down" ]; then
    rg_check lag "$dev" warn warning "every slave up" "down: $down" \
      "$bond's slave $down is down (carrier, operstate): the LAG runs on the other port at part of its bandwidth; its settings are still applied; check the cable, the optic and the switch port"
  else
    rg_check lag "$dev" pass error "the ports of one card" "${RG_NIC_SLAVES[i]}" \
      "$bond bonds ${RG_NIC_SLAVES[i]// /, }${mode:+ (${mode%% *})}, every slave up and a port of the card at $card"
  fi
}

# rg_lag_check_driver I: the driver check of a bond: bonding over mlx5_core slaves. Its values
# are the slaves' driver, as another port's are, so that hosts compare alike (ingest).
rg_lag_check_driver() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} bond=${RG_NIC_BOND[$1]} s d other=""
  for s in ${RG_NIC_SLAVES[i]}; do
    rg_driver_of "$s"
    d=$REPLY
    [ "$d" = mlx5_core ] || other+="${other:+, }$s (${d:-unknown})"
  done
  if [ -z "${RG_NIC_SLAVES[i]}" ]; then
    rg_check driver "$dev" fail error mlx5_core "" "$bond is a bond without slaves"
  elif [ -n "$other" ]; then
    rg_check driver "$dev" fail error mlx5_core "$other" "$bond bonds ports not driven by mlx5_core: $other"
  else
    rg_check driver "$dev" pass error mlx5_core mlx5_core \
      "$bond is a bond (bonding) over mlx5_core ports (${RG_NIC_SLAVES[i]// /, })"
  fi
}

# rg_lag_slaves_json I: the slaves of NIC I as a JSON list (facts.nics.DEV.slaves).
rg_lag_slaves_json() {
  local s sep="" out="["
  for s in ${RG_NIC_SLAVES[$1]-}; do
    rg_json_q "$s"
    out+="$sep$REPLY"
    sep=","
  done
  printf '%s]' "$out"
}

# shellcheck shell=bash
# lib-checks.sh, part of lib.sh: the read-only checks shared by precheck and apply, in dependency
# order: bundle, host name, root, host environment (modules, OFED, tools), then per NIC its
# identity (RDMA device, netdev, mapping, link layer, PCI, MAC) and environment (link, driver,
# firmware, address).
rg_check_hostname() {
  local seen=$RG_OBSERVED_HOST short
  short=${seen%%.*}
  if [ "${seen,,}" = "${RG_HOST,,}" ] || [ "${short,,}" = "${RG_HOST,,}" ]; then
    rg_check hostname "" pass error "$RG_HOST" "$seen" "host name is $seen"
  elif [ -n "$RG_IDENTIFIED_BY" ]; then
    rg_check hostname "" warn warning "$RG_HOST" "$seen" \
      "host name is ${seen:-unset}, not $RG_HOST; identified as $RG_HOST by its $RG_IDENTIFIED_BY (run-here.sh)"
  else
    rg_check hostname "" fail error "$RG_HOST" "$seen" "this bundle is for $RG_HOST, but this host is ${seen:-unnamed}"
  fi
}

rg_check_bundle() {
  local out
  if [ ! -r "$RG_DIR/SHA256SUMS" ]; then
    rg_check bundle_integrity "" fail error "SHA256SUMS matches" "no SHA256SUMS" "$RG_DIR/SHA256SUMS is missing"
  elif out=$(cd "$RG_DIR" && sha256sum -c --strict --quiet SHA256SUMS 2>&1); then
    rg_check bundle_integrity "" pass error "SHA256SUMS matches" "matches" "every file matches SHA256SUMS"
  else
    out=$(printf '%s' "$out" | grep -v '^sha256sum:' | tr '\n' ' ')
    rg_check bundle_integrity "" fail error "SHA256SUMS matches" "mismatch" "bundle files do not match SHA256SUMS: ${out% }"
  fi
}

# rg_check_root SEVERITY_IF_NOT_ROOT: apply needs root (fail); precheck only warns.
rg_check_root() {
  local uid
  uid=$(id -u)
  if [ "$uid" = 0 ]; then
    rg_check root "" pass error "0" "$uid" "running as root"
  else
    rg_check root "" "$1" error "0" "$uid" "not running as root: some settings cannot be read or changed"
  fi
}

# rg_check_identity I: the NIC's RDMA device, netdev, their mapping, link layer, PCI and MAC.
rg_check_identity() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} mapped layer pci mac
  if [ -d "$RG_ROOT/sys/class/infiniband/$dev" ]; then
    rg_check ib_dev "$dev" pass error present present "$dev is in /sys/class/infiniband/"
  else
    rg_check ib_dev "$dev" fail error present absent \
      "$dev is not in /sys/class/infiniband/ (present: $(rg_list /sys/class/infiniband))"
  fi
  if [ -d "$RG_ROOT/sys/class/net/$ifc" ]; then
    rg_check netdev "$dev" pass error "$ifc" present "$ifc is in /sys/class/net/"
  else
    rg_check netdev "$dev" fail error "$ifc" absent "$ifc is not in /sys/class/net/ (present: $(rg_list /sys/class/net))"
  fi
  if [ "$(rg_status_of ib_dev "$dev")" != pass ] || [ "$(rg_status_of netdev "$dev")" != pass ]; then
    rg_check netdev_map "$dev" skip error "$ifc" "" "skipped: $dev or $ifc is missing"
    rg_check link_layer "$dev" skip error Ethernet "" "skipped: $dev is missing"
    return 0
  fi
  mapped=$(rg_netdev_of "$dev")
  # Some kernels expose no device/net link for the RDMA device; OFED's ibdev2netdev still maps it.
  if [ -z "$mapped" ] && rg_has ibdev2netdev; then
    mapped=$(rg_x ibdev2netdev 2>/dev/null | rg_parse_ibdev2netdev "$dev") || mapped=""
    mapped=${mapped%% *}
  fi
  if [[ " $mapped " == *" $ifc "* ]]; then
    rg_check netdev_map "$dev" pass error "$ifc" "$mapped" "$dev maps to $ifc"
  else
    rg_check netdev_map "$dev" fail error "$ifc" "$mapped" "$dev maps to ${mapped:-no netdev}, the plan says $ifc"
  fi
  layer=$(rg_read "/sys/class/infiniband/$dev/ports/1/link_layer") || layer=""
  if [ "$layer" = Ethernet ]; then
    rg_check link_layer "$dev" pass error Ethernet "$layer" "port 1 of $dev is Ethernet"
  else
    rg_check link_layer "$dev" fail error Ethernet "$layer" "port 1 of $dev is ${layer:-of unknown link layer}, not Ethernet"
  fi
  if [ -n "${RG_NIC_PCI[i]}" ]; then
    pci=$(readlink "$RG_ROOT/sys/class/net/$ifc/device" 2>/dev/null) || pci=""
    pci=${pci##*/}
    if [ "$pci" = "${RG_NIC_PCI[i]}" ]; then
      rg_check pci "$dev" pass error "${RG_NIC_PCI[i]}" "$pci" "$ifc is at PCI $pci"
    else
      rg_check pci "$dev" fail error "${RG_NIC_PCI[i]}" "$pci" "$ifc is at PCI ${pci:-unknown}, the plan says ${RG_NIC_PCI[i]}"
    fi
  fi
  if [ -n "${RG_NIC_MAC[i]}" ]; then
    mac=$(rg_read "/sys/class/net/$ifc/address") || mac=""
    mac=${mac,,}
    if [ "$mac" = "${RG_NIC_MAC[i]}" ]; then
      rg_check mac "$dev" pass error "${RG_NIC_MAC[i]}" "$mac" "$ifc has MAC $mac"
    else
      rg_check mac "$dev" fail error "${RG_NIC_MAC[i]}" "$mac" "$ifc has MAC ${mac:-unknown}, the plan says ${RG_NIC_MAC[i]}"
    fi
  fi
}

# rg_identity_ok I: true when the NIC's identity checks all passed.
rg_identity_ok() {
  local dev=${RG_NIC_IBDEV[$1]} id
  for id in ib_dev netdev netdev_map link_layer; do
    [ "$(rg_status_of "$id" "$dev")" = pass ] || return 1
  done
  for id in pci mac; do
    [ "$(rg_status_of "$id" "$dev")" != fail ] || return 1
  done
}


# rg_version_ge A B: true when version A >= B, comparing numeric groups split at `.` and `-`.
rg_version_ge() {
  local a=${1//-/.} b=${2//-/.} x y
  while [ -n "$a" ] || [ -n "$b" ]; do
    x=${a%%.*}
    y=${b%%.*}
    x=${x//[!0-9]/}
    y=${y//[!0-9]/}
    x=$((10#${x:-0}))
    y=$((10#${y:-0}))
    [ "$x" -eq "$y" ] || { [ "$x" -gt "$y" ]; return; }
    [[ $a == *.* ]] && a=${a#*.} || a=""
    [[ $b == *.* ]] && b=${b#*.} || b=""
  done
  return 0
}

# rg_check_host_env: the host-wide environment: modules, OFED, tools.
rg_check_host_env() {
  local m missing="" ofed="" tools="" t
  for m in mlx5_core mlx5_ib ib_core ib_uverbs rdma_cm; do
    [ -d "$RG_ROOT/sys/module/$m" ] || missing="${missing:+$missing, }$m"
  done
  if [ -z "$missing" ]; then
    rg_check modules "" pass error "mlx5_core, mlx5_ib, ib_core, ib_uverbs, rdma_cm" "loaded" "the RDMA kernel modules are loaded"
  else
    rg_check modules "" fail error "mlx5_core, mlx5_ib, ib_core, ib_uverbs, rdma_cm" "missing: $missing" "kernel modules not loaded: $missing"
  fi
  ofed=$RG_OFED
  if [ -z "$RG_MIN_OFED" ]; then
    rg_check ofed "" pass info "any" "${ofed:-inbox}" "driver stack: ${ofed:-inbox (no ofed_info)}"
  elif [ -z "$ofed" ]; then
    rg_check ofed "" fail error ">= $RG_MIN_OFED" "inbox" "no MLNX_OFED/DOCA (ofed_info is missing); the plan needs $RG_MIN_OFED or newer"
  elif rg_version_ge "$(printf '%s' "$ofed" | sed 's/^[^0-9]*//')" "$RG_MIN_OFED"; then
    rg_check ofed "" pass error ">= $RG_MIN_OFED" "$ofed" "$ofed is at least $RG_MIN_OFED"
  else
    rg_check ofed "" fail error ">= $RG_MIN_OFED" "$ofed" "$ofed is older than the planned minimum $RG_MIN_OFED"
  fi
  for t in mlnx_qos dcb cma_roce_mode cma_roce_tos ethtool ip ibdev2netdev; do
    rg_has "$t" && tools="${tools:+$tools, }$t"
  done
  if rg_has mlnx_qos || rg_has dcb; then
    rg_check tools "" pass error "mlnx_qos or dcb" "$tools" "tools: $tools (QoS through $(rg_has mlnx_qos && echo mlnx_qos || echo dcb))"
  else
    rg_check tools "" fail error "mlnx_qos or dcb" "${tools:-none}" "neither mlnx_qos nor dcb is installed: trust, PFC and DSCP mapping cannot be set"
  fi
}

# rg_check_nic_env I: link state, driver, firmware and address of a NIC whose identity passed.
rg_check_nic_env() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} state driver fw addrs want
  if ! rg_identity_ok "$i"; then
    for want in link_state driver fw_ver ip; do
      rg_check "$want" "$dev" skip error "" "" "skipped: the identity of $dev did not check out"
    done
    return 0
  fi
  state=$(rg_read "/sys/class/infiniband/$dev/ports/1/state") || state=""
  if [ "$state" = "4: ACTIVE" ]; then
    rg_check link_state "$dev" pass warning "4: ACTIVE" "$state" "port 1 of $dev is ACTIVE"
  else
    rg_check link_state "$dev" warn warning "4: ACTIVE" "$state" "port 1 of $dev is ${state:-in an unknown state}, not ACTIVE (cable or switch port?)"
  fi
  driver=$(rg_x ethtool -i "$ifc" 2>/dev/null | sed -n 's/^driver: //p') || driver=""
  if [ "$driver" = mlx5_core ]; then
    rg_check driver "$dev" pass error mlx5_core "$driver" "$ifc is driven by mlx5_core"
  elif [ -z "$driver" ]; then
    rg_check driver "$dev" warn warning mlx5_core "" "cannot tell the driver of $ifc (ethtool -i gave nothing)"
  else
    rg_check driver "$dev" fail error mlx5_core "$driver" "$ifc is driven by $driver, not mlx5_core"
  fi
  fw=$(rg_read "/sys/class/infiniband/$dev/fw_ver") || fw=""
  if [ -z "$RG_MIN_FW" ]; then
    rg_check fw_ver "$dev" pass info "any" "$fw" "firmware ${fw:-unknown}"
  elif [ "${fw%%.*}" != "${RG_MIN_FW%%.*}" ]; then
    rg_check fw_ver "$dev" warn warning ">= $RG_MIN_FW" "$fw" "firmware ${fw:-unknown} is of another device family than the planned $RG_MIN_FW: not compared"
  elif rg_version_ge "$fw" "$RG_MIN_FW"; then
    rg_check fw_ver "$dev" pass error ">= $RG_MIN_FW" "$fw" "firmware $fw is at least $RG_MIN_FW"
  else
    rg_check fw_ver "$dev" fail error ">= $RG_MIN_FW" "$fw" "firmware $fw is older than the planned minimum $RG_MIN_FW"
  fi
  want=${RG_NIC_IP[i]}
  addrs=$(rg_x ip -o addr show dev "$ifc" 2>/dev/null | awk '{print $4}' | tr '\n' ' ') || addrs=""
  addrs=${addrs% }
  if [[ " $addrs " == *" $want "* ]]; then
    rg_check ip "$dev" pass warning "$want" "$addrs" "$ifc has $want"
  else
    rg_check ip "$dev" warn warning "$want" "$addrs" "$ifc does not have $want (has: ${addrs:-no address}); roce-gen does not assign addresses"
  fi
}

# rg_precheck ROOT_SEVERITY compare|apply: the read-only checks in dependency order; with
# `compare`, also each planned setting against the host (apply changes them itself).
rg_precheck() {
  local i
  rg_check_bundle
  rg_check_hostname
  rg_check_root "$1"
  rg_check_host_env
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    rg_check_identity "$i"
    rg_check_nic_env "$i"
    rg_check_gid "$i"
    rg_check_monitor "$i"
    [ "$2" = compare ] || continue
    rg_nic_settings compare "$i"
  done
  # apply writes nccl.env once it has configured the ports (apply.sh).
  [ "$2" != compare ] || rg_nccl_env compare
}

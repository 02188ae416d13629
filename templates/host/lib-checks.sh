# shellcheck shell=bash
# lib-checks.sh, part of lib.sh: the read-only checks shared by precheck and apply, in dependency
# order: bundle, host name, root, host environment (modules, OFED, tools), then per NIC its
# identity (RDMA device, netdev, mapping, link layer, PCI, MAC) and environment (link, driver,
# firmware, address).
# rg_short_name NAME: REPLY = NAME's short form in lower case: up to its first dot, as
# `hostname -s` cuts it. Host names are compared by their short forms on both sides, so a plan's
# FQDN (gpu-001.dc1.example) matches a host that calls itself gpu-001, and the reverse.
rg_short_name() {
  REPLY=${1%%.*}
  REPLY=${REPLY,,}
}

rg_check_hostname() {
  local seen=$RG_OBSERVED_HOST mine
  rg_short_name "$seen"
  mine=$REPLY
  rg_short_name "$RG_HOST"
  if [ -n "$mine" ] && [ "$mine" = "$REPLY" ]; then
    if [ "${seen,,}" = "${RG_HOST,,}" ]; then
      rg_check hostname "" pass error "$RG_HOST" "$seen" "host name is $seen"
    else
      rg_check hostname "" pass error "$RG_HOST" "$seen" "host name is $seen: $RG_HOST by its short name"
    fi
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

# The planned netdevs, as plan.sh names them, and what rg_resolve_netdevs found for a planned name
# the host does not have: how it found the interface the host uses instead (RG_NIC_NETDEV[i]
# then names that one), or why it found none.
RG_NIC_PLANNED=()
RG_NIC_FOUND_BY=()
RG_NIC_NOT_FOUND=()

# rg_link_name: the interface `ip -o link show dev NAME` printed on stdin (`2: NAME: <...`, a
# VLAN's `NAME@PARENT:`), from its first line; fails on anything else.
rg_link_name() {
  local idx name rest
  IFS=' ' read -r idx name rest || [ -n "$idx" ] || return 1
  [[ $idx =~ ^[0-9]+:$ ]] && [[ $name == ?*: ]] && [[ $rest == \<* ]] || return 1
  name=${name%:}
  printf '%s' "${name%%@*}"
}

# rg_netdev_mac IF: IF's MAC in lower case, from sysfs.
rg_netdev_mac() {
  local mac
  mac=$(rg_read "/sys/class/net/$1/address") || return 1
  printf '%s' "${mac,,}"
}

# rg_netdev_pci IF: the PCI function IF belongs to (its sysfs device link), empty for a virtual
# interface (bond, VLAN, macvlan) that has none.
rg_netdev_pci() {
  local pci
  pci=$(readlink "$RG_ROOT/sys/class/net/$1/device" 2>/dev/null) || return 0
  printf '%s' "${pci##*/}"
}

# rg_resolve_netdevs: for each planned netdev the host does not have (renamed by a newer naming
# scheme, OFED's udev rules or a .link file; or the planned name is an altname, which is not a
# sysfs directory), the interface the host uses for it: the one an altname resolves to, else the
# one at the planned PCI address or with the planned MAC. It must match every one of the two the
# plan has (an interface at the planned PCI address with another MAC is not this port), and be
# the only one that does. RG_NIC_NETDEV[i] then names it, before any check or setting uses it;
# rg_check_identity warns with both names. Run by rg_start and again by rg_precheck (at boot the
# device may have come later); a NIC resolved once keeps its name.
rg_resolve_netdevs() {
  local i
  for ((i = 0; i < ${#RG_NIC_NETDEV[@]}; i++)); do
    [ -n "${RG_NIC_PLANNED[i]+set}" ] || RG_NIC_PLANNED[i]=${RG_NIC_NETDEV[i]}
    [ "${RG_NIC_NETDEV[i]}" = "${RG_NIC_PLANNED[i]}" ] || continue
    [ ! -d "$RG_ROOT/sys/class/net/${RG_NIC_NETDEV[i]}" ] || continue
    rg_resolve_netdev "$i"
  done
  rg_lag_resolve
}

# rg_resolve_netdev I: see rg_resolve_netdevs.
rg_resolve_netdev() {
  local i=$1 want=${RG_NIC_PLANNED[$1]} pci=${RG_NIC_PCI[$1]-} mac=${RG_NIC_MAC[$1]-}
  local name="" by="" f n found=() other=()
  RG_NIC_FOUND_BY[i]=""
  RG_NIC_NOT_FOUND[i]=""
  # The kernel resolves an altname (IFLA_ALT_IFNAME) to its interface; sysfs knows only the name.
  if rg_has ip && name=$(rg_x ip -o link show dev "$want" 2>/dev/null | rg_link_name); then
    by="its altname $want"
  elif [ -n "$pci" ]; then
    for f in "$RG_ROOT/sys/bus/pci/devices/$pci/net"/*; do
      [ -e "$f" ] || continue
      n=${f##*/}
      if [ -z "$mac" ] || [ "$(rg_netdev_mac "$n" || true)" = "$mac" ]; then found+=("$n"); else other+=("$n"); fi
    done
    if [ ${#found[@]} -eq 0 ] && [ ${#other[@]} -gt 0 ]; then
      RG_NIC_NOT_FOUND[i]="the interface at its PCI address $pci, ${other[*]}, has MAC $(rg_netdev_mac "${other[0]}" || true), not the planned $mac: not this port"
      return 0
    fi
    by="its PCI address $pci${mac:+ and MAC $mac}"
  elif [ -n "$mac" ]; then
    # Bonds, VLANs and macvlans carry their port's MAC too: only a PCI function's own interface.
    for f in "$RG_ROOT/sys/class/net"/*; do
      n=${f##*/}
      if [ -e "$f/device" ] && [ "$(rg_netdev_mac "$n" || true)" = "$mac" ]; then found+=("$n"); fi
    done
    by="its MAC $mac"
  fi
  if [ ${#found[@]} -gt 1 ]; then
    RG_NIC_NOT_FOUND[i]="${found[*]} all match ${by#its }: which one is $want is ambiguous"
    return 0
  fi
  [ -n "$name" ] || name=${found[0]-}
  if [ -z "$name" ]; then
    if [ -z "$pci$mac" ]; then
      RG_NIC_NOT_FOUND[i]="the plan has no PCI address or MAC to find it by"
    elif [ -n "$pci" ] && [ -n "$mac" ]; then
      RG_NIC_NOT_FOUND[i]="no interface has its PCI address $pci and MAC $mac"
    else
      RG_NIC_NOT_FOUND[i]="no interface has its ${pci:+PCI address $pci}${mac:+MAC $mac}"
    fi
    return 0
  fi
  if [ ! -d "$RG_ROOT/sys/class/net/$name" ]; then
    RG_NIC_NOT_FOUND[i]="$want resolves to $name, which is not in /sys/class/net/"
    return 0
  fi
  # Whatever found it, the interface must be the planned port.
  if [ -n "$pci" ] && [ "$(rg_netdev_pci "$name")" != "$pci" ]; then
    RG_NIC_NOT_FOUND[i]="$name (found by $by) is at PCI $(rg_netdev_pci "$name"), not the planned $pci: not this port"
    return 0
  fi
  if [ -n "$mac" ] && [ "$(rg_netdev_mac "$name" || true)" != "$mac" ]; then
    RG_NIC_NOT_FOUND[i]="$name (found by $by) has MAC $(rg_netdev_mac "$name" || true), not the planned $mac: not this port"
    return 0
  fi
  RG_NIC_FOUND_BY[i]=$by
  RG_NIC_NETDEV[i]=$name
}

# The mount table (rg_read_mounts): each mount's point and file system type, in the kernel's order.
RG_MNT_POINT=()
RG_MNT_TYPE=()
# What of roce-gen's files would not survive a reboot, as `PATH: TYPE, ...`, and the message that
# says so (rg_check_volatile); empty when everything is on lasting storage or nothing is known.
RG_VOLATILE=""
RG_VOLATILE_MSG=""

# rg_unoctal TEXT: REPLY = a path as the kernel's mount tables escape it (seq_path: space, tab,
# newline and backslash as \040 \011 \012 \134), unescaped.
rg_unoctal() {
  local bs=\\
  REPLY=${1//\\040/ }
  REPLY=${REPLY//\\011/$'\t'}
  REPLY=${REPLY//\\012/$'\n'}
  REPLY=${REPLY//\\134/"$bs"}
}

# rg_read_mounts: RG_MNT_POINT and RG_MNT_TYPE from /proc/self/mountinfo (fs/proc_namespace.c
# show_mountinfo: `ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - TYPE SOURCE SUPER`), else
# /proc/mounts (show_vfsmnt: `SOURCE POINT TYPE OPTIONS 0 0`); fails when neither can be read.
rg_read_mounts() {
  local f=() k
  RG_MNT_POINT=()
  RG_MNT_TYPE=()
  if [ -r "$RG_ROOT/proc/self/mountinfo" ]; then
    while read -r -a f; do
      for ((k = 6; k + 1 < ${#f[@]}; k++)); do
        [ "${f[k]}" = - ] || continue
        rg_unoctal "${f[4]}"
        RG_MNT_POINT+=("$REPLY")
        RG_MNT_TYPE+=("${f[k + 1]}")
        break
      done
    done <"$RG_ROOT/proc/self/mountinfo"
  elif [ -r "$RG_ROOT/proc/mounts" ]; then
    while read -r -a f; do
      [ ${#f[@]} -ge 3 ] || continue
      rg_unoctal "${f[1]}"
      RG_MNT_POINT+=("$REPLY")
      RG_MNT_TYPE+=("${f[2]}")
    done <"$RG_ROOT/proc/mounts"
  else
    return 1
  fi
}

# rg_mount_type PATH: the type of the file system PATH is on: that of the longest mount point
# that is PATH or a folder above it, the last of several mounted on the same point (the one on
# top: an initramfs `rootfs` line comes before the real root's). Empty when none is.
rg_mount_type() {
  local k mp best=-1 type=""
  for ((k = 0; k < ${#RG_MNT_POINT[@]}; k++)); do
    mp=${RG_MNT_POINT[k]%/}
    if [ "$1" = "${mp:-/}" ] || [[ $1 == "$mp"/* ]]; then
      [ ${#mp} -ge "$best" ] || continue
      best=${#mp}
      type=${RG_MNT_TYPE[k]}
    fi
  done
  printf '%s' "$type"
}

# rg_volatile_fs TYPE: a file system that does not keep what is written to it across a reboot:
# memory (tmpfs, ramfs, the initramfs rootfs), a stateless node's overlay over its image, a
# read-only image (squashfs), an NFS root shared from the provisioning server.
rg_volatile_fs() {
  case $1 in
    tmpfs | ramfs | rootfs | overlay | aufs | squashfs | nfs | nfs4) return 0 ;;
  esac
  return 1
}

# rg_check_volatile: whether the boot unit, the installed bundle and the saved state would outlive
# a reboot (diskless and stateless nodes rebuild their root from an image at every boot). Sets
# RG_VOLATILE and RG_VOLATILE_MSG; precheck records them as a `persistence` warning, apply puts
# them into its own `persistence` check (rg_persist_volatile). Nothing when the plan does not
# persist, or the mount table cannot be read.
rg_check_volatile() {
  local unit=/etc/systemd/system state=/var/lib/roce-gen what path type on="" lost="" why="" fix=""
  RG_VOLATILE=""
  RG_VOLATILE_MSG=""
  [ "$RG_PERSIST" = yes ] || return 0
  rg_read_mounts || return 0
  for what in "the unit:$unit" "the bundle:$RG_INSTALL_DIR" "the saved state:$state"; do
    path=${what#*:}
    type=$(rg_mount_type "$path")
    rg_volatile_fs "$type" || continue
    RG_VOLATILE+="${RG_VOLATILE:+, }$path: $type"
    on+="${on:+, }$path is on $type"
    lost+="${lost:+, }${what%%:*} in $path"
  done
  [ -n "$RG_VOLATILE" ] || return 0
  type=$(rg_mount_type /)
  rg_volatile_fs "$type" && on="the root file system is $type"
  case $RG_VOLATILE in
    *"$unit:"* | *"$RG_INSTALL_DIR:"*)
      why="nothing would apply the settings again"
      fix=" Put the bundle into the node image: its files in $RG_INSTALL_DIR, $RG_UNIT in $unit, and"
      fix+=" 'systemctl enable $RG_UNIT' run in the image (or have the node's provisioning run apply.sh at every boot)."
      ;;
  esac
  case $RG_VOLATILE in
    *"$state:"*)
      why+="${why:+ and }rollback would have nothing to restore"
      fix+=" Keep $state on storage that survives a reboot."
      ;;
  esac
  RG_VOLATILE_MSG="$on, which does not survive a reboot: at the next boot $lost would be gone, so $why.$fix"
  [ "$RG_PHASE" != precheck ] ||
    rg_check persistence "" warn warning "survives a reboot" "$RG_VOLATILE" "$RG_VOLATILE_MSG"
}

# rg_persist_volatile: apply's `persistence` check (rg_persist) on a host whose root does not
# survive a reboot: what apply installed (or found installed, or would install) is gone at the
# next boot, so it is a warning that says what to do, not a change or a pass. At boot, with the
# unit running from the image, and when nothing was installed, the check stays as it is.
# The check arrays are lib.sh's (rg_check); here one recorded check is rewritten in place.
# shellcheck disable=SC2034,SC2153
rg_persist_volatile() {
  local i
  [ -n "$RG_VOLATILE" ] && [ "$RG_BOOT" = no ] || return 0
  for ((i = 0; i < ${#RG_C_ID[@]}; i++)); do
    if [ "${RG_C_ID[i]}" != persistence ] || [ -n "${RG_C_NIC[i]}" ]; then continue; fi
    case ${RG_C_STATUS[i]}:$RG_DRY_RUN in
      pass:* | changed:* | warn:yes) ;;
      *) return 0 ;;
    esac
    RG_C_STATUS[i]=warn
    RG_C_SEV[i]=warning
    RG_C_EXP[i]="survives a reboot"
    RG_C_ACT[i]=$RG_VOLATILE
    # Precheck's prediction says it as precheck's own check did (rg_check_volatile).
    if [ "$RG_PREDICT" = yes ]; then
      RG_C_MSG[i]=$RG_VOLATILE_MSG
    else
      RG_C_MSG[i]="${RG_C_MSG[i]}; but $RG_VOLATILE_MSG"
    fi
    # Listed with the warnings that need a person, not with the changes.
    RG_C_KIND[i]=""
    RG_C_FROM[i]=""
    return 0
  done
}

# rg_check_identity I: the NIC's RDMA device, netdev, their mapping, link layer, PCI and MAC.
rg_check_identity() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} planned mapped layer pci mac
  if [ -d "$RG_ROOT/sys/class/infiniband/$dev" ]; then
    rg_check ib_dev "$dev" pass error present present "$dev is in /sys/class/infiniband/"
  else
    rg_check ib_dev "$dev" fail error present absent \
      "$dev is not in /sys/class/infiniband/ (present: $(rg_list /sys/class/infiniband))"
  fi
  planned=${RG_NIC_PLANNED[i]:-$ifc}
  if [ "$ifc" != "$planned" ] && [ -d "$RG_ROOT/sys/class/net/$ifc" ]; then
    if [ "${RG_NIC_FOUND_BY[i]}" = "its altname $planned" ]; then
      rg_check netdev "$dev" warn warning "$planned" "$ifc" \
        "$planned is an altname of $ifc here (ip link; sysfs knows only $ifc), so the settings go to $ifc; put $ifc in the plan's netdev column"
    else
      rg_check netdev "$dev" warn warning "$planned" "$ifc" \
        "$planned is not an interface here: this host calls it $ifc (found by ${RG_NIC_FOUND_BY[i]}), so the settings go to $ifc; put $ifc in the plan's netdev column"
    fi
  elif [ -d "$RG_ROOT/sys/class/net/$ifc" ]; then
    rg_check netdev "$dev" pass error "$ifc" present "$ifc is in /sys/class/net/"
  elif [ -n "${RG_NIC_NOT_FOUND[i]-}" ]; then
    rg_check netdev "$dev" fail error "$ifc" absent \
      "$ifc is not in /sys/class/net/ (present: $(rg_list /sys/class/net)), and ${RG_NIC_NOT_FOUND[i]}"
  else
    rg_check netdev "$dev" fail error "$ifc" absent "$ifc is not in /sys/class/net/ (present: $(rg_list /sys/class/net))"
  fi
  # A bond's slaves, before the mapping: they say why mlx5 has no LAG device for it.
  rg_check_lag "$i"
  if ! rg_status_is ib_dev "$dev" pass || ! rg_netdev_found "$dev"; then
    rg_check netdev_map "$dev" skip error "$ifc" "" "skipped: $dev or $ifc is missing"
    rg_check link_layer "$dev" skip error Ethernet "" "skipped: $dev is missing"
    return 0
  fi
  mapped=$(rg_netdev_of "$dev")
  # A LAG device's device link names its master PF; its RoCE port's netdev is the bond.
  ! rg_is_lag "$i" || mapped=$(rg_lag_netdev "$dev")
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
    # A bond has no PCI function: a LAG row's is its LAG device's, the master PF's.
    ! rg_is_lag "$i" || pci=$(rg_lag_pci "$i")
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

# rg_netdev_found DEV: true when the netdev check of DEV found its interface: under the planned
# name (pass), or under the one the host uses for it (warn).
rg_netdev_found() {
  rg_status_of netdev "$1"
  case $REPLY in
    pass | warn) return 0 ;;
  esac
  return 1
}

# rg_identity_ok I: true when the NIC's identity checks all passed (a netdev found under another
# name included).
rg_identity_ok() {
  local dev=${RG_NIC_IBDEV[$1]} id
  rg_netdev_found "$dev" || return 1
  for id in ib_dev netdev_map link_layer; do
    rg_status_is "$id" "$dev" pass || return 1
  done
  for id in pci mac lag; do
    ! rg_status_is "$id" "$dev" fail || return 1
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
  if rg_has mlnx_qos || rg_dcb_probe; then
    rg_check tools "" pass error "mlnx_qos or dcb" "$tools" "tools: $tools (QoS through $(rg_has mlnx_qos && echo mlnx_qos || echo dcb))"
  elif rg_has dcb; then
    rg_check tools "" fail error "mlnx_qos or dcb" "$tools" "no mlnx_qos, and $RG_DCB_WHY: trust, PFC and DSCP mapping cannot be set"
  else
    rg_check tools "" fail error "mlnx_qos or dcb" "${tools:-none}" "neither mlnx_qos nor dcb is installed: trust, PFC and DSCP mapping cannot be set"
  fi
}

# rg_driver_of IF: REPLY = the driver of netdev IF as `ethtool -i` names it (empty when unknown).
rg_driver_of() {
  local line
  rg_cap -1 rg_x ethtool -i "$1" 2>/dev/null || RG_CAP=""
  while IFS= read -r line; do
    case $line in
      'driver: '*)
        REPLY=${line#driver: }
        return 0
        ;;
    esac
  done <<<"$RG_CAP"
  REPLY=""
}

# rg_check_nic_env I: link state, driver, firmware and address of a NIC whose identity passed.
rg_check_nic_env() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} state driver fw addrs want a
  if ! rg_identity_ok "$i"; then
    for want in link_state driver fw_ver ip; do
      rg_check "$want" "$dev" skip error "" "" "skipped: the identity of $dev did not check out"
    done
    return 0
  fi
  rg_read_v "/sys/class/infiniband/$dev/ports/1/state" || RG_V=""
  state=$RG_V
  if [ "$state" = "4: ACTIVE" ]; then
    rg_check link_state "$dev" pass warning "4: ACTIVE" "$state" "port 1 of $dev is ACTIVE"
  else
    rg_check link_state "$dev" warn warning "4: ACTIVE" "$state" "port 1 of $dev is ${state:-in an unknown state}, not ACTIVE (cable or switch port?)"
  fi
  rg_driver_of "$ifc"
  driver=$REPLY
  if [ "$driver" = bonding ] && rg_is_lag "$i"; then
    rg_lag_check_driver "$i"
  elif [ "$driver" = mlx5_core ]; then
    rg_check driver "$dev" pass error mlx5_core "$driver" "$ifc is driven by mlx5_core"
  elif [ -z "$driver" ]; then
    rg_check driver "$dev" warn warning mlx5_core "" "cannot tell the driver of $ifc (ethtool -i gave nothing)"
  else
    rg_check driver "$dev" fail error mlx5_core "$driver" "$ifc is driven by $driver, not mlx5_core"
  fi
  rg_read_v "/sys/class/infiniband/$dev/fw_ver" || RG_V=""
  fw=$RG_V
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
  addrs=""
  if rg_cap -1 rg_x ip -o addr show dev "$ifc" 2>/dev/null; then
    # `ip -o` prints one address a line: `2: IF    inet ADDR/LEN brd …`.
    while read -r _ _ _ a _; do
      [ -z "$a" ] || addrs+="$a "
    done <<<"$RG_CAP"
  fi
  addrs=${addrs% }
  if [[ " $addrs " == *" $want "* ]]; then
    rg_check ip "$dev" pass warning "$want" "$addrs" "$ifc has $want"
  else
    rg_check ip "$dev" warn warning "$want" "$addrs" "$ifc does not have $want (has: ${addrs:-no address}); roce-gen does not assign addresses"
  fi
}

# rg_precheck ROOT_SEVERITY compare|apply: the read-only checks in dependency order; with
# `compare`, also each planned setting against the host (apply changes them itself).
# rg_host_changes: apply's changes beyond each port's settings, in apply's order. apply.sh runs
# them; precheck runs the same as a dry run (rg_predict_host), so that precheck's "apply will
# change" and the dry run's plan are one list.
rg_host_changes() {
  rg_net_apply
  rg_gpu_apply
  rg_persist
  rg_persist_volatile
  rg_nccl_env apply
}

# rg_predict_host: precheck's prediction of apply's host-wide changes: rg_host_changes as a dry
# run whose checks replace precheck's own of the same id and port (rg_check). After a failure,
# where apply stops, only how nccl.env and nccl.conf compare.
rg_predict_host() {
  if rg_failed; then
    rg_nccl_env compare
    return 0
  fi
  # shellcheck disable=SC2034 # rg_check (lib.sh) reads it
  RG_DRY_RUN=yes RG_PREDICT=yes
  rg_host_changes
  # shellcheck disable=SC2034
  RG_DRY_RUN=no RG_PREDICT=no
}

rg_precheck() {
  local i
  rg_resolve_netdevs
  rg_check_bundle
  rg_check_hostname
  rg_check_root "$1"
  rg_check_host_env
  # fabric.sh's traffic tool: precheck's word, not apply's (the boot run needs no perftest).
  [ "$2" != compare ] || rg_check_perftest
  [ "$2" != compare ] || rg_check_firewall "fabric.sh would fail fabric_peer"
  rg_check_volatile
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    rg_check_identity "$i"
    rg_check_nic_env "$i"
    rg_check_gid "$i"
    rg_check_monitor "$i"
    [ "$2" = compare ] || continue
    rg_nic_settings compare "$i"
  done
  # The GPU path of the planned GPU↔port pairs (plan format 1.3; nothing without a GPU).
  rg_gpu_path
  rg_net_check
  # nccl.env and nccl.conf: precheck's prediction of apply (rg_predict_host).
  [ "$2" != compare ] || rg_nccl_tc_check
}

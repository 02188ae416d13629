# shellcheck shell=bash
# lib-rdma.sh, part of lib.sh: what plan format 1.1 adds on the RDMA side. Two settings of each
# port that apply changes like the others (lib-settings.sh asks here for them): the DCQCN
# parameters (`dcqcn_NAME`, the files of OFED's ecn/ sysfs tree) and the cable length the driver
# keeps for sizing lossless buffers (`cable_length`, the DCB PFC delay). Read-only checks: that
# the lossless priorities sit in a receive buffer that has room (`pfc_buffer`), and the index of
# the RoCE v2 GID that carries each port's planned address (`gid`). And the NCCL environment
# file apply writes beside the installed bundle (`nccl_env`), which rollback removes.

# The DCQCN parameters the plan sets, as check ids: dcqcn_NAME for ecn/roce_rp/NAME or
# ecn/roce_np/NAME (rg_rdma_init).
RG_DCQCN_IDS=""

# The index of each port's RoCE v2 GID for its planned address, as the gid check found it
# (empty: none); the facts and nccl.env use it.
RG_GID_INDEX=()

# Where apply keeps the sha256 of the nccl.env it wrote last, so that rollback removes that file
# and not one someone has edited since; and the file as it was before apply first wrote it
# (rg_rdma_init).
RG_NCCL_SUM=""
RG_NCCL_ORIG=""

# rg_rdma_init: what follows from plan.sh (rg_init): the DCQCN ids, last among the settings
# since they depend on no other setting and none on them, and the nccl.env state files.
rg_rdma_init() {
  local file
  RG_DCQCN_IDS=""
  for file in ${RG_DCQCN_FILE[@]+"${RG_DCQCN_FILE[@]}"}; do
    RG_DCQCN_IDS+="${RG_DCQCN_IDS:+ }dcqcn_${file##*/}"
  done
  RG_SETTINGS+="${RG_DCQCN_IDS:+ $RG_DCQCN_IDS}"
  RG_NCCL_SUM="$RG_STATE_DIR/nccl.env.sha256"
  RG_NCCL_ORIG="$RG_STATE_DIR/nccl.env.orig"
}

# --- DCQCN parameters and the cable length as settings -------------------------------------------

# rg_dcqcn_file ID: the file of a DCQCN parameter under ecn/ (roce_rp/NAME or roce_np/NAME). An id
# from an earlier plan (rollback) is not in RG_DCQCN_FILE: only min_time_between_cnps is the
# notification point's.
rg_dcqcn_file() {
  local name=${1#dcqcn_} k
  for ((k = 0; k < ${#RG_DCQCN_FILE[@]}; k++)); do
    if [ "${RG_DCQCN_FILE[k]##*/}" = "$name" ]; then
      printf '%s' "${RG_DCQCN_FILE[k]}"
      return 0
    fi
  done
  if [ "$name" = min_time_between_cnps ]; then printf 'roce_np/%s' "$name"; else printf 'roce_rp/%s' "$name"; fi
}

# rg_rdma_applies ID: the cable length only when the plan gives one.
rg_rdma_applies() {
  case $1 in
    cable_length) [ -n "$RG_CABLE_LEN" ] ;;
    *) return 0 ;;
  esac
}

# rg_rdma_planned ID: the planned value.
rg_rdma_planned() {
  local k
  case $1 in
    cable_length) printf '%s' "$RG_CABLE_LEN" ;;
    dcqcn_*)
      for ((k = 0; k < ${#RG_DCQCN_FILE[@]}; k++)); do
        [ "dcqcn_${RG_DCQCN_FILE[k]##*/}" != "$1" ] || printf '%s' "${RG_DCQCN_VALUE[k]}"
      done
      ;;
  esac
}

# rg_rdma_supported ID I: true when this host can read and set ID for NIC I; otherwise RG_WHY.
# Runs in the caller's shell (the cable length is read here, and mlnx_qos's output kept).
rg_rdma_supported() {
  local ifc=${RG_NIC_NETDEV[$2]} file
  case $1 in
    dcqcn_*)
      file="/sys/class/net/$ifc/ecn/$(rg_dcqcn_file "$1")"
      if [ ! -d "$RG_ROOT/sys/class/net/$ifc/ecn" ]; then
        RG_WHY="no /sys/class/net/$ifc/ecn: DCQCN parameters are set in MLNX_OFED/DOCA's ecn/ sysfs tree, which the inbox driver does not have (its debugfs cc_params are not used)"
      elif [ ! -e "$RG_ROOT$file" ]; then
        RG_WHY="no $file: this driver has no such DCQCN parameter"
      fi
      ;;
    cable_length)
      if ! rg_has mlnx_qos && ! rg_dcb_probe; then
        RG_WHY="no mlnx_qos, and $RG_DCB_WHY"
      elif rg_rdma_get cable_length "$2" && [ "$RG_V" = 0 ]; then
        # getpfc reports the cable length only where the port's buffers can be configured.
        RG_WHY="the driver reports no cable length for $ifc (PFC delay 0): its receive buffers cannot be configured"
      fi
      ;;
  esac
  [ -z "$RG_WHY" ]
}

# rg_rdma_get ID I: RG_V = the current value; fails with the reason in RG_V.
rg_rdma_get() {
  local ifc=${RG_NIC_NETDEV[$2]}
  RG_V=""
  case $1 in
    dcqcn_*)
      # `%d\n`: a value above 2^31 - 1 reads negative, and is written back the same way.
      rg_get_sysfs "/sys/class/net/$ifc/ecn/$(rg_dcqcn_file "$1")"
      ;;
    cable_length)
      if rg_qos_is mlnx_qos; then
        rg_qos "$2" || {
          rg_qos_error
          return 1
        }
        rg_v rg_parse_qos_cable <<<"$RG_QOS_OUT" || true
      else
        rg_dcb_read pfc show dev "$ifc" delay || return 1
        rg_v rg_parse_dcb_delay <<<"$RG_DCB_OUT" || true
      fi
      [ -n "$RG_V" ] || {
        rg_qos_backend
        RG_V="$REPLY shows no cable length for $ifc"
        return 1
      }
      ;;
  esac
}

# rg_rdma_set ID I VALUE: changes ID of NIC I (or prints how, with --dry-run).
rg_rdma_set() {
  local ifc=${RG_NIC_NETDEV[$2]} pfc
  case $1 in
    dcqcn_*) rg_write "/sys/class/net/$ifc/ecn/$(rg_dcqcn_file "$1")" "$3" ;;
    cable_length)
      if [ "$3" -ge 1000 ]; then
        # mlx5e_dcbnl_ieee_setpfc takes a delay below MLX5E_MAX_CABLE_LENGTH and drops others
        # without an error: nothing to run.
        rg_log "the mlx5 driver ignores a cable length of 1000 m or more; $3 cannot be set on $ifc"
        return 1
      elif rg_qos_is dcb; then
        # `dcb pfc set` reads the port's PFC settings and writes them back with the new delay.
        rg_do dcb pfc set dev "$ifc" delay "$3"
        return
      fi
      # mlnx_qos sends PFC mask and delay in one request. Older mlnx-tools build that request
      # from the arguments alone, so `--cable_len` without `--pfc` turns PFC off on every
      # priority: the port's PFC goes with it, as it is now (no change, no link flap).
      # With --dry-run inside apply, the PFC the changes so far would have left (rg_current
      # reads rg_apply_all's `sim`; rollback has none).
      # shellcheck disable=SC2154
      if [ "$RG_DRY_RUN" = yes ] && declare -p sim >/dev/null 2>&1 && rg_current pfc "$2"; then
        :
      elif ! rg_get pfc "$2"; then
        RG_V="cannot read the PFC of $ifc to keep it: $RG_V"
        rg_log "$RG_V"
        return 1
      fi
      pfc=$RG_V
      rg_qos_set "$2" --pfc "$pfc" --cable_len "$3"
      ;;
  esac
}

# rg_cable_args I IDS: `--cable_len N` when apply, about to change NIC I's PFC through mlnx_qos,
# should change the cable length in the same call (one mlnx_qos start, and the request carries
# both); nothing otherwise. Reads RG_PORT_SIM with --dry-run (rg_current).
rg_cable_args() {
  rg_qos_is mlnx_qos && [[ " $2 " == *" cable_length "* ]] && [ "$RG_CABLE_LEN" -lt 1000 ] || return 0
  if rg_current cable_length "$1" && [ "$RG_V" != "$RG_CABLE_LEN" ]; then
    printf -- '--cable_len %s' "$RG_CABLE_LEN"
  fi
}

# rg_qos_buffers I: RG_P2B (the buffer of each priority), RG_BUF_SIZE and RG_BUF_XOFF (of each
# buffer, bytes), comma-separated, from OFED's qos/prio2buffer and qos/buffer_size (each a
# firmware query, under the time limit); fails, with RG_WHY, when they cannot be read.
RG_P2B="" RG_BUF_SIZE="" RG_BUF_XOFF=""
rg_qos_buffers() {
  local q="/sys/class/net/${RG_NIC_NETDEV[$1]}/qos"
  RG_P2B="" RG_BUF_SIZE="" RG_BUF_XOFF="" RG_WHY=""
  if [ ! -r "$RG_ROOT$q/prio2buffer" ] || [ ! -r "$RG_ROOT$q/buffer_size" ]; then
    RG_WHY="no $q/prio2buffer and buffer_size (MLNX_OFED/DOCA sysfs)"
    return 1
  fi
  if rg_bounded read "$q/prio2buffer" rg_io_all "$RG_ROOT$q/prio2buffer"; then
    ! rg_cap -1 rg_parse_prio2buffer <<<"$RG_IO_OUT" 2>/dev/null || RG_P2B=$RG_CAP
  fi
  if rg_bounded read "$q/buffer_size" rg_io_all "$RG_ROOT$q/buffer_size"; then
    ! rg_cap -1 rg_parse_buffer_size <<<"$RG_IO_OUT" 2>/dev/null || RG_BUF_SIZE=$RG_CAP
    ! rg_cap -1 rg_parse_buffer_xoff <<<"$RG_IO_OUT" 2>/dev/null || RG_BUF_XOFF=$RG_CAP
  fi
  [ -n "$RG_P2B" ] && [ -n "$RG_BUF_SIZE" ] && [ -n "$RG_BUF_XOFF" ] && return 0
  RG_WHY="cannot read the receive buffers from $q/prio2buffer and buffer_size"
  return 1
}

# rg_cable_effect I CABLE: true when the driver sizes NIC I's lossless headroom from a cable
# length of CABLE m. It does so only while it owns the receive buffers (mlx5e_dcbnl_ieee_setpfc
# calls mlx5e_port_manual_buffer_config only with priv->dcbx.manual_buffer, set by a write to
# qos/buffer_size, qos/prio2buffer or dcb buffer set; upstream since 2025 when the firmware
# reports them software-owned); neither mlnx_qos nor sysfs shows who owns them, so it is read
# from the buffers: with the driver owning them each lossless buffer keeps size - xoff =
# calculate_xoff (port_buffer.c) = (301 + 216 * CABLE / 100) * max(speed, 40000) / 1000 +
# 272 * MTU / 100 for the MTU of the last change. RG_WHY says why not.
rg_cable_effect() {
  local i=$1 c=$2 ifc=${RG_NIC_NETDEV[$1]} p=0 on b s x t m mtus ok speed bad="" unknown=yes
  local -a p2b=() size=() xoff=() now=()
  RG_WHY=""
  if [[ $RG_PFC != *1* ]]; then
    RG_WHY="the plan makes no priority lossless, so no receive buffer has headroom for the cable length to size"
    return 1
  fi
  if ! rg_qos_buffers "$i"; then
    RG_WHY="$RG_WHY: whether the driver sized the headroom of $ifc from it cannot be read, and with the firmware owning the receive buffers (the default) it does not"
    return 1
  fi
  IFS=, read -r -a p2b <<<"$RG_P2B"
  IFS=, read -r -a size <<<"$RG_BUF_SIZE"
  IFS=, read -r -a xoff <<<"$RG_BUF_XOFF"
  speed=$(rg_read "/sys/class/net/$ifc/speed") || speed=""
  [[ $speed =~ ^[0-9]+$ ]] || speed=0
  [ "$speed" -ge 40000 ] || speed=40000
  t=$(((301 + 216 * c / 100) * speed / 1000))
  # The MTU the driver used is the netdev's at the last change: now, before this apply, the
  # one saved before the first, or the plan's.
  mtus="$(rg_read "/sys/class/net/$ifc/mtu" || true) ${RG_PORT_BEFORE[mtu]-} $(rg_saved mtu "${RG_NIC_IBDEV[i]}" || true) ${RG_NIC_MTU[i]-}"
  # PFC as the port has it now: a priority not yet lossless has no headroom to read.
  IFS=, read -r -a now <<<"${RG_PORT_BEFORE[pfc]-}"
  for on in ${RG_PFC//,/ }; do
    if [ "$on" = 1 ]; then
      b=${p2b[p]} s=${size[b]:-0} x=${xoff[b]:-0} ok=no
      for m in $mtus; do
        [[ $m =~ ^[0-9]+$ ]] || continue
        [ "$x" -gt 0 ] && [ $((s - x)) -eq $((t + 272 * m / 100)) ] && ok=yes
      done
      if [ "$ok" = no ]; then
        bad+="${bad:+, }buffer $b (size $s, xoff $x: $((s - x)) bytes of headroom)"
        [ "$x" = 0 ] && [ "${now[p]-}" = 0 ] || unknown=no
      fi
    fi
    p=$((p + 1))
  done
  [ -n "$bad" ] || return 0
  if [ "$unknown" = yes ]; then
    # Read before PFC is on: the buffers show no headroom whoever owns them.
    RG_WHY="PFC is not on yet on $ifc, so its buffers show no headroom ($bad) and who owns them cannot be read: with the firmware owning them (the default) the cable length sizes none; only buffers configured by hand, which the driver then owns, get it sized when PFC comes on"
    return 1
  fi
  RG_WHY="the firmware owns the receive buffers of $ifc (the default): $bad is not what the driver computes from a cable length of $c m at $speed Mb/s ($t bytes + 272 × MTU / 100), and the driver resizes the headroom from the cable length only while it owns the buffers"
  return 1
}

# rg_cable_fix I: how to make the cable length take effect on NIC I.
rg_cable_fix() {
  printf 'to have the headroom sized for the cable, configure the receive buffers (mlnx_qos -i %s --buffer_size ... --prio2buffer ..., or dcb buffer set), which hands them to the driver; or leave cable_length out of the plan' "${RG_NIC_NETDEV[$1]}"
}

# rg_dcqcn_saved_ids ID...: the DCQCN ids among the saved ids of a port (rollback), for
# restoring them first: they may be from an earlier plan than this bundle's.
rg_dcqcn_saved_ids() {
  local id out=""
  for id in "$@"; do
    case $id in dcqcn_*) out+="${out:+ }$id" ;; esac
  done
  printf '%s' "$out"
}

# --- receive buffers of the lossless priorities ----------------------------------------------------

# rg_check_pfc_buffer I: each priority the plan makes lossless must map (qos/prio2buffer) to a
# receive buffer that can pause (qos/buffer_size): a lossless buffer has an xoff threshold
# (xoff > 0, where PFC starts pausing the sender) below its size (size > xoff, the room above it
# holds what is in flight). A buffer of 0 bytes or with xoff 0 is lossy: its priority drops.
# Read-only, after apply's changes.
rg_check_pfc_buffer() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} q p=0 b s x want on seen="" bad=""
  local -a p2b=() size=() xoff=()
  q="/sys/class/net/$ifc/qos"
  want="every lossless priority in a receive buffer with 0 < xoff < size"
  if ! rg_identity_ok "$i"; then
    rg_check pfc_buffer "$dev" skip warning "$want" "" "skipped: the identity of $dev did not check out"
    return 0
  elif [[ $RG_PFC != *1* ]]; then
    rg_check pfc_buffer "$dev" skip info "" "" "skipped: the plan makes no priority lossless (PFC off)"
    return 0
  elif [ ! -r "$RG_ROOT$q/prio2buffer" ] || [ ! -r "$RG_ROOT$q/buffer_size" ]; then
    rg_check pfc_buffer "$dev" skip warning "$want" "" \
      "skipped: no $q/prio2buffer and buffer_size (MLNX_OFED/DOCA sysfs): the receive buffers of $ifc are not read"
    return 0
  elif { [ "$RG_PHASE" != apply ] || [ "$RG_DRY_RUN" = yes ]; } && [ -n "${RG_PORT_BEFORE[pfc]+set}" ] &&
    [ "${RG_PORT_BEFORE[pfc]}" != "$RG_PFC" ]; then
    # Until PFC is as planned the buffers are sized for the PFC the port has (the firmware
    # re-sizes them when the mask changes): apply checks them after its change.
    rg_check pfc_buffer "$dev" skip info "$want" "" \
      "skipped: PFC of $ifc is not yet as planned, and its receive buffers follow PFC; apply checks them once it has set PFC"
    return 0
  fi
  if ! rg_qos_buffers "$i"; then
    rg_check pfc_buffer "$dev" warn warning "$want" "" "cannot read the receive buffers of $ifc from $q/prio2buffer and buffer_size"
    return 0
  fi
  IFS=, read -r -a p2b <<<"$RG_P2B"
  IFS=, read -r -a size <<<"$RG_BUF_SIZE"
  IFS=, read -r -a xoff <<<"$RG_BUF_XOFF"
  for on in ${RG_PFC//,/ }; do
    if [ "$on" = 1 ]; then
      b=${p2b[p]}
      s=${size[b]:-0} x=${xoff[b]:-0}
      seen+="${seen:+, }priority $p: buffer $b ($s bytes, xoff $x)"
      if [ "$s" = 0 ]; then
        bad+="${bad:+, }priority $p (buffer $b has 0 bytes)"
      elif [ "$x" = 0 ]; then
        bad+="${bad:+, }priority $p (buffer $b has xoff 0: it never pauses, a lossy buffer)"
      elif [ "$s" -le "$x" ]; then
        bad+="${bad:+, }priority $p (buffer $b: xoff $x is not below its size $s, no room for what is in flight)"
      fi
    fi
    p=$((p + 1))
  done
  if [ -n "$bad" ]; then
    rg_check pfc_buffer "$dev" warn warning "$want" "$seen" \
      "lossless $bad on $ifc: PFC cannot hold its traffic, it drops (map the lossless priorities to a lossless buffer with qos/prio2buffer and size it with qos/buffer_size (mlnx_qos --prio2buffer, --buffer_size), or let the firmware size the buffers)"
  else
    rg_check pfc_buffer "$dev" pass warning "$want" "$seen" "the lossless priorities of $ifc have lossless receive buffers: $seen"
  fi
}

# --- the RoCE v2 GID of the planned address --------------------------------------------------------

# rg_find_gid I: RG_V = the lowest index of port 1's GID table whose entry is the planned
# address as a RoCE v2 GID on the planned netdev; fails when there is none (RG_V then says
# whether a RoCE v1 entry was there). An unused entry reads as the zero GID, and its type and
# netdev refuse to be read (EINVAL).
rg_find_gid() {
  local i=$1 base f n g type ndev want best="" v1=""
  base="$RG_ROOT/sys/class/infiniband/${RG_NIC_IBDEV[$1]}/ports/1"
  want=$(rg_gid_of_ip "${RG_NIC_IP[i]}")
  for f in "$base"/gids/*; do
    n=${f##*/}
    [[ $n =~ ^[0-9]+$ ]] || continue
    g=""
    { IFS= read -r g <"$f"; } 2>/dev/null || [ -n "$g" ] || continue
    [ "$g" = "$want" ] || continue
    type="" ndev=""
    { IFS= read -r type <"$base/gid_attrs/types/$n"; } 2>/dev/null || true
    { IFS= read -r ndev <"$base/gid_attrs/ndevs/$n"; } 2>/dev/null || true
    [ "$ndev" = "${RG_NIC_NETDEV[i]}" ] || continue
    if [ "$type" = "RoCE v2" ]; then
      if [ -z "$best" ] || [ "$n" -lt "$best" ]; then best=$n; fi
    elif [ "$type" = "IB/RoCE v1" ]; then
      v1=$n
    fi
  done
  RG_V=$best
  [ -n "$best" ] && return 0
  RG_V=${v1:+v1}
  return 1
}

# rg_check_gid I: the RoCE v2 GID of NIC I's planned address, and its index (RG_GID_INDEX[I]).
rg_check_gid() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} ip=${RG_NIC_IP[$1]%%/*} want
  want="RoCE v2 GID of $ip"
  RG_GID_INDEX[i]=""
  if ! rg_identity_ok "$i"; then
    rg_check gid "$dev" skip warning "$want" "" "skipped: the identity of $dev did not check out"
  elif [ ! -d "$RG_ROOT/sys/class/infiniband/$dev/ports/1/gids" ]; then
    rg_check gid "$dev" skip warning "$want" "" "skipped: $dev has no GID table in /sys/class/infiniband/$dev/ports/1/gids"
  elif rg_find_gid "$i"; then
    RG_GID_INDEX[i]=$RG_V
    rg_check gid "$dev" pass warning "$want" "index $RG_V" "$ip of $ifc is RoCE v2 GID index $RG_V of $dev port 1"
  elif [ "$RG_V" = v1 ]; then
    rg_check gid "$dev" warn warning "$want" "RoCE v1 only" \
      "$ip of $ifc has only a RoCE v1 GID on $dev port 1 (RoCE v2 disabled?): RoCE v2 traffic cannot use it"
  else
    rg_check gid "$dev" warn warning "$want" "none" \
      "no RoCE v2 GID of $dev port 1 carries $ip: the address is not configured on $ifc (roce-gen does not assign addresses), so RDMA-CM and NCCL cannot use it"
  fi
}

# rg_gid_fact I: REPLY = the facts member `"gid_index":N` (null when none was found or looked for).
rg_gid_fact() {
  local i=$1
  if [ -z "${RG_GID_INDEX[i]+set}" ] && [ -d "$RG_ROOT/sys/class/net/${RG_NIC_NETDEV[i]}" ]; then
    # A run without the check (rollback) looks it up here.
    RG_GID_INDEX[i]=""
    ! rg_find_gid "$i" || RG_GID_INDEX[i]=$RG_V
  fi
  rg_json_fmt '"gid_index":%s' n "${RG_GID_INDEX[i]-}"
}

# --- nccl.env --------------------------------------------------------------------------------------

# rg_nccl_index: RG_V = the GID index every planned port agrees on; fails, with RG_V saying
# why, when a port has none or they differ (NCCL then picks each device's GID itself).
rg_nccl_index() {
  local i idx="" missing="" list="" differ=no
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    if [ -z "${RG_GID_INDEX[i]-}" ]; then
      missing+="${missing:+, }${RG_NIC_IBDEV[i]}"
      continue
    fi
    list+="${list:+, }${RG_NIC_IBDEV[i]}: ${RG_GID_INDEX[i]}"
    if [ -z "$idx" ]; then
      idx=${RG_GID_INDEX[i]}
    elif [ "$idx" != "${RG_GID_INDEX[i]}" ]; then
      differ=yes
    fi
  done
  if [ -n "$missing" ]; then
    RG_V="no RoCE v2 GID for the planned address of $missing"
    return 1
  elif [ "$differ" = yes ]; then
    RG_V="the ports' RoCE v2 GIDs are at different indexes ($list)"
    return 1
  fi
  RG_V=$idx
}

# rg_nccl_text: the nccl.env this host gets: exact device names (NCCL's `=` prefix, so mlx5_1
# never also selects mlx5_10), the plan's ToS and, when every port agrees on it, the GID index.
rg_nccl_text() {
  local i hca=""
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do hca+="${hca:+,}${RG_NIC_IBDEV[i]}:1"; done
  printf '# NCCL settings for the RoCE ports of %s (cluster %s), written by roce-gen apply.sh;\n' "$RG_HOST" "$RG_CLUSTER"
  printf '# rollback.sh removes it. Load it before mpirun or torchrun:\n'
  printf '#   set -a; . %s/nccl.env; set +a\n' "$RG_INSTALL_DIR"
  printf 'NCCL_IB_HCA==%s\n' "$hca"
  printf 'NCCL_IB_TC=%s\n' "$RG_ROCE_TOS"
  # UCX (ucx src/uct/ib/base/ib_iface.c: TRAFFIC_CLASS and GID_INDEX of the IB_ prefix) does
  # not read NCCL's variables.
  printf 'UCX_IB_TRAFFIC_CLASS=%s\n' "$RG_ROCE_TOS"
  if rg_nccl_index; then
    printf 'NCCL_IB_GID_INDEX=%s\n' "$RG_V"
    printf 'UCX_IB_GID_INDEX=%s\n' "$RG_V"
  else
    printf '# NCCL_IB_GID_INDEX and UCX_IB_GID_INDEX are left out: %s; NCCL and UCX find each device'"'"'s RoCE v2 GID themselves.\n' "$RG_V"
  fi
}

# --- /etc/nccl.conf: NCCL reads it by itself (init.cpp initEnv, "/etc/nccl.conf"), no sourcing --

# rg_nccl_conf_block: the block apply keeps in /etc/nccl.conf: the NCCL_ lines of nccl.env
# between `# BEGIN roce-gen CLUSTER` and `# END roce-gen CLUSTER` (UCX does not read the file).
rg_nccl_conf_block() {
  local line
  printf '# BEGIN roce-gen %s\n' "$RG_CLUSTER"
  while IFS= read -r line; do
    case $line in NCCL_*) printf '%s\n' "$line" ;; esac
  done <<<"$(rg_nccl_text)"
  printf '# END roce-gen %s' "$RG_CLUSTER"
}

# rg_nccl_conf_split TEXT: the lines of TEXT before this cluster's block (RG_CONF_BEFORE), the
# block (RG_CONF_BLOCK, empty when there is none) and the lines after it (RG_CONF_AFTER), each
# without a final newline; RG_CONF_OTHER, the lines outside the block.
rg_nccl_conf_split() {
  local line in=no seen=no
  RG_CONF_BEFORE="" RG_CONF_BLOCK="" RG_CONF_AFTER=""
  while IFS= read -r line || [ -n "$line" ]; do
    if [ "$seen" = no ] && [ "$line" = "# BEGIN roce-gen $RG_CLUSTER" ]; then
      in=yes seen=yes
    fi
    if [ "$in" = yes ]; then
      RG_CONF_BLOCK+="${RG_CONF_BLOCK:+$'\n'}$line"
      [ "$line" != "# END roce-gen $RG_CLUSTER" ] || in=no
    elif [ "$seen" = yes ]; then
      RG_CONF_AFTER+="$line"$'\n'
    else
      RG_CONF_BEFORE+="$line"$'\n'
    fi
  done <<<"$1"
  RG_CONF_BEFORE=${RG_CONF_BEFORE%$'\n'} RG_CONF_AFTER=${RG_CONF_AFTER%$'\n'}
  # An empty file reads as one empty line.
  [ -n "$1" ] || RG_CONF_BEFORE=""
  RG_CONF_OTHER=$RG_CONF_BEFORE
  [ -z "$RG_CONF_AFTER" ] || RG_CONF_OTHER+="${RG_CONF_OTHER:+$'\n'}$RG_CONF_AFTER"
}

# rg_nccl_conf compare|apply: check `nccl_conf`: this cluster's block in /etc/nccl.conf, the
# rest of the file kept as it is; apply writes the block (replacing its own, never a second one).
# Whether the file was there before is kept for rollback (the file apply made is removed).
rg_nccl_conf() {
  local mode=$1 file=/etc/nccl.conf path text="" want state new err
  path="$RG_ROOT$file"
  want=$(rg_nccl_conf_block)
  [ ! -f "$path" ] || text=$(cat "$path" 2>/dev/null)
  rg_nccl_conf_split "$text"
  if [ "$RG_CONF_BLOCK" = "$want" ]; then
    rg_check nccl_conf "" pass info written written "$file carries the NCCL settings of cluster $RG_CLUSTER"
    return 0
  fi
  state=absent
  [ -z "$RG_CONF_BLOCK" ] || state="other block"
  if [ "$mode" = compare ]; then
    if [ -z "$RG_CONF_BLOCK" ]; then
      new="$file has no block of cluster $RG_CLUSTER"
    else
      new="$file has another block of cluster $RG_CLUSTER than planned"
    fi
    rg_check_action nccl_conf "" warn info written "$state" "$new (apply will change it; NCCL reads the file by itself)" "$state → written ($file)"
    return 0
  elif rg_failed; then
    rg_check nccl_conf "" skip warning written "$state" "not written: apply did not succeed"
    return 0
  elif [ "$RG_BOOT" = yes ]; then
    rg_check nccl_conf "" warn warning written "$state" "the boot run does not write $file (/etc is read-only to the boot unit): run apply.sh"
    return 0
  fi
  rg_step "write: $file"
  if [ "$RG_DRY_RUN" = yes ]; then
    if [ -z "$RG_CONF_BLOCK" ]; then
      new="$file has no block of cluster $RG_CLUSTER"
    else
      new="$file has another block of cluster $RG_CLUSTER than planned"
    fi
    rg_check_action nccl_conf "" warn info written "$state" "dry run: would write the block of cluster $RG_CLUSTER into $file ($new; NCCL reads the file by itself)" "$state → written ($file)"
    return 0
  fi
  # The block where it was (or at the end), the other lines as they are.
  new="${RG_CONF_BEFORE:+$RG_CONF_BEFORE$'\n'}$want${RG_CONF_AFTER:+$'\n'$RG_CONF_AFTER}"
  # What rollback needs, once: that apply made the file, or the block it replaces.
  if [ ! -e "$RG_STATE_DIR/nccl.conf.created" ] && [ ! -e "$RG_STATE_DIR/nccl.conf.block" ]; then
    if [ ! -e "$path" ]; then
      err=$({ mkdir -p "$RG_STATE_DIR" && : >"$RG_STATE_DIR/nccl.conf.created"; } 2>&1) || state=unsaved
    else
      err=$({ mkdir -p "$RG_STATE_DIR" && printf '%s' "$RG_CONF_BLOCK" >"$RG_STATE_DIR/nccl.conf.block"; } 2>&1) || state=unsaved
    fi
    if [ "$state" = unsaved ]; then
      rg_check nccl_conf "" fail error written "" "cannot keep in $RG_STATE_DIR what rollback needs of $file (${err##*: }): not written"
      return 0
    fi
  fi
  if ! err=$(rg_write_file "$path" "$new" 2>&1); then
    rg_check nccl_conf "" fail error written "$state" "could not write $file (${err##*: })"
    return 0
  fi
  rg_check_action nccl_conf "" changed info written written "wrote the block of cluster $RG_CLUSTER into $file${RG_CONF_OTHER:+ (its other lines kept)}" "$state → written ($file)"
}

# rg_nccl_conf_restore: rollback of `nccl_conf`: this cluster's block removed from /etc/nccl.conf
# (or the one apply replaced put back), the other lines kept; the file goes when apply made it and
# nothing else is left in it.
rg_nccl_conf_restore() {
  local file=/etc/nccl.conf path text created=no old
  path="$RG_ROOT$file"
  [ ! -e "$RG_STATE_DIR/nccl.conf.created" ] || created=yes
  if [ ! -f "$path" ]; then
    rg_check nccl_conf "" pass info absent absent "$file is not there"
    [ "$RG_DRY_RUN" = yes ] || rm -f "$RG_STATE_DIR/nccl.conf.created" "$RG_STATE_DIR/nccl.conf.block"
    return 0
  fi
  rg_nccl_conf_split "$(cat "$path" 2>/dev/null)"
  if [ -z "$RG_CONF_BLOCK" ]; then
    rg_check nccl_conf "" pass info absent absent "$file has no block of cluster $RG_CLUSTER"
    return 0
  fi
  if [ "$RG_DRY_RUN" = yes ]; then
    rg_check_action nccl_conf "" warn info absent written "dry run: would remove the block of cluster $RG_CLUSTER from $file" "written → absent ($file)"
    return 0
  fi
  rg_step "write: $file"
  old=""
  [ ! -f "$RG_STATE_DIR/nccl.conf.block" ] || old=$(cat "$RG_STATE_DIR/nccl.conf.block" 2>/dev/null)
  if [ "$created" = yes ] && [ -z "$RG_CONF_OTHER" ]; then
    text="removed $file (apply had made it)"
    rm -f "$path" || text=""
  elif [ -n "$old" ]; then
    text="put the block of cluster $RG_CLUSTER that was there before apply back into $file"
    rg_write_file "$path" "${RG_CONF_BEFORE:+$RG_CONF_BEFORE$'\n'}$old${RG_CONF_AFTER:+$'\n'$RG_CONF_AFTER}" 2>/dev/null || text=""
  else
    text="removed the block of cluster $RG_CLUSTER from $file (its other lines kept)"
    rg_write_file "$path" "$RG_CONF_OTHER" 2>/dev/null || text=""
  fi
  if [ -z "$text" ]; then
    rg_check nccl_conf "" fail error absent written "could not remove the block of cluster $RG_CLUSTER from $file"
    return 0
  fi
  rm -f "$RG_STATE_DIR/nccl.conf.created" "$RG_STATE_DIR/nccl.conf.block"
  if [ -n "$old" ]; then old="the earlier block"; else old=absent; fi
  rg_check_action nccl_conf "" changed info absent absent "$text" "written → $old ($file)"
}

# rg_nccl_tc_check: on a port without the verbs traffic-class file (tc/1/traffic_class, MLNX_OFED's
# main_ext.c; inbox drivers have none) nothing gives verbs traffic a class by default: NCCL's
# comes from NCCL_IB_TC alone (/etc/nccl.conf or the job's environment). Check `nccl_tc`.
rg_nccl_tc_check() {
  local i devs=""
  for ((i = 0; i < ${#RG_NIC_IBDEV[@]}; i++)); do
    [ -n "${RG_NIC_IBDEV[i]}" ] || continue
    [ -d "$RG_ROOT/sys/class/infiniband/${RG_NIC_IBDEV[i]}" ] || continue
    [ -e "$RG_ROOT/sys/class/infiniband/${RG_NIC_IBDEV[i]}/tc/1/traffic_class" ] || devs+="${devs:+, }${RG_NIC_IBDEV[i]}"
  done
  [ -n "$devs" ] || return 0
  if [ "$RG_NCCL_ENV" = yes ]; then
    rg_check nccl_tc "" warn warning "traffic_class file" "absent" \
      "$devs ha$([[ $devs == *,* ]] && printf ve || printf s) no verbs traffic-class file (tc/1/traffic_class is MLNX_OFED's): NCCL's traffic class then depends on NCCL_IB_TC=$RG_ROCE_TOS in /etc/nccl.conf (apply writes it), and a job that overrides it or a library that reads neither (UCX: UCX_IB_TRAFFIC_CLASS in nccl.env) sends at priority 0, lossy"
  else
    rg_check nccl_tc "" warn warning "traffic_class file" "absent" \
      "$devs ha$([[ $devs == *,* ]] && printf ve || printf s) no verbs traffic-class file (tc/1/traffic_class is MLNX_OFED's) and the plan says nccl_env = no: NCCL and UCX traffic goes at priority 0, lossy, unless each job sets NCCL_IB_TC=$RG_ROCE_TOS (UCX_IB_TRAFFIC_CLASS=$RG_ROCE_TOS)"
  fi
}

# rg_sha256 FILE: its sha256, or nothing.
rg_sha256() {
  local sum
  sum=$(sha256sum "$1" 2>/dev/null) || return 0
  printf '%s' "${sum%% *}"
}

# rg_nccl_env compare|apply: the nccl.env of the plan (`nccl_env = yes`) against the one in the
# install folder; apply writes it (a temporary file renamed over it) when it differs, and
# remembers what it wrote for rollback. Also the host-wide `gid` check: whether the ports agree
# on the GID index nccl.env can name.
rg_nccl_env() {
  local mode=$1 file="$RG_INSTALL_DIR/nccl.env" path text state change why="" err
  path="$RG_ROOT$file"
  if [ "$RG_NCCL_ENV" != yes ]; then
    rg_check nccl_env "" skip info no "" "the plan says nccl_env = no: no nccl.env is written"
    return 0
  fi
  rg_nccl_conf "$mode"
  if rg_nccl_index; then
    rg_check gid "" pass warning "one GID index on every port" "$RG_V" \
      "every port's RoCE v2 GID is at index $RG_V: nccl.env sets NCCL_IB_GID_INDEX=$RG_V"
  else
    why=$RG_V
    rg_check gid "" warn warning "one GID index on every port" "$why" \
      "$why: nccl.env leaves NCCL_IB_GID_INDEX out and NCCL finds each device's RoCE v2 GID itself"
  fi
  text=$(rg_nccl_text)
  state=absent
  if [ -f "$path" ]; then
    state="other content"
    if [ "$(cat "$path" 2>/dev/null)" = "$text" ]; then
      rg_check nccl_env "" pass info written written "$file is as planned${why:+ (without NCCL_IB_GID_INDEX)}"
      return 0
    fi
  fi
  change="$state → written ($file)"
  if [ "$mode" = compare ]; then
    if [ "$state" = absent ]; then
      rg_check_action nccl_env "" warn info written "$state" "$file is absent, the plan says written (apply will change it)" "$change"
    else
      rg_check_action nccl_env "" warn info written "$state" "$file holds other settings than planned (apply will change it)" "$change"
    fi
    return 0
  elif rg_failed; then
    rg_check nccl_env "" skip warning written "$state" "not written: apply did not succeed"
    return 0
  elif [ "$RG_DRY_RUN" = yes ]; then
    rg_step "write: $file"
    if [ "$state" = absent ]; then
      rg_check_action nccl_env "" warn info written "$state" "dry run: would write $file (it is absent)" "$change"
    else
      rg_check_action nccl_env "" warn info written "$state" "dry run: would write $file (it holds other settings than planned)" "$change"
    fi
    return 0
  fi
  # What was there before roce-gen first wrote it comes back at rollback: a file (kept in the
  # state folder), or nothing (and then the folder too, when apply made it for this file).
  if ! rg_saved nccl_env "" >/dev/null; then
    if [ -f "$path" ]; then
      if ! err=$({ mkdir -p "$RG_STATE_DIR" && cp -p "$path" "$RG_NCCL_ORIG"; } 2>&1); then
        rg_check nccl_env "" fail error written "$state" "cannot keep the existing $file for rollback (${err##*: }): not written"
        return 0
      fi
      rg_save nccl_env "" present
    elif [ -d "$RG_ROOT$RG_INSTALL_DIR" ]; then
      rg_save nccl_env "" absent
    else
      rg_save nccl_env "" "absent folder"
    fi
  fi
  rg_step "write: $file"
  if ! err=$({ mkdir -p "$RG_ROOT$RG_INSTALL_DIR" "$RG_STATE_DIR" && rg_write_file "$path" "$text" &&
    rg_write_file "$RG_NCCL_SUM" "$(rg_sha256 "$path")"; } 2>&1); then
    rg_check nccl_env "" fail error written "$state" "could not write $file (${err##*: })"
    return 0
  fi
  rg_check_action nccl_env "" changed info written written "wrote $file${why:+ without NCCL_IB_GID_INDEX}" "$change"
}

# rg_nccl_env_restore SAVED PERSISTED: rollback of nccl.env (and of the block in /etc/nccl.conf). The file apply wrote (its sha256 as
# apply recorded it) is removed, or the one that was there before put back; a file edited since
# is left, or, when the install folder goes (PERSISTED = yes), kept in the state folder.
rg_nccl_env_restore() {
  local saved=$1 persisted=$2 file="$RG_INSTALL_DIR/nccl.env" path sum="" kept tmp=""
  path="$RG_ROOT$file"
  rg_nccl_conf_restore
  [ ! -r "$RG_NCCL_SUM" ] || IFS= read -r sum <"$RG_NCCL_SUM" || true
  if [ ! -e "$path" ]; then
    rg_check nccl_env "" pass info absent absent "$file is already gone"
    return 0
  elif [ -z "$sum" ] || [ "$(rg_sha256 "$path")" != "$sum" ]; then
    kept="$RG_STATE_DIR/nccl.env.edited"
    if [ "$persisted" = no ]; then
      rg_check nccl_env "" warn warning absent edited "$file was edited after apply wrote it: left as it is"
    elif [ "$RG_DRY_RUN" = yes ]; then
      rg_check nccl_env "" warn warning absent edited "$file was edited after apply wrote it: rollback would keep it as $kept before the install folder goes"
    elif cp -p "$path" "$kept" 2>/dev/null; then
      rg_check nccl_env "" warn warning absent edited "$file was edited after apply wrote it: kept as $kept before the install folder goes"
    else
      rg_check nccl_env "" fail error absent edited "$file was edited after apply wrote it, and could not be kept as $kept: it goes with the install folder"
    fi
    return 0
  fi
  if [ "$RG_DRY_RUN" = yes ]; then
    if [ "$saved" = present ] && [ "$persisted" = no ]; then
      rg_step "write: $file"
      rg_check_action nccl_env "" warn info present written "dry run: would put back the $file that was there before apply" "written → the earlier file ($file)"
    else
      rg_check_action nccl_env "" warn info absent written "dry run: would remove $file" "written → absent ($file)"
    fi
    return 0
  fi
  if [ "$saved" = present ] && [ -f "$RG_NCCL_ORIG" ] && [ "$persisted" = no ]; then
    rg_step "write: $file"
    if tmp=$(mktemp "${path%/*}/.nccl.env.XXXXXX") && cp -p "$RG_NCCL_ORIG" "$tmp" && mv -fT "$tmp" "$path"; then
      rm -f "$RG_NCCL_ORIG" "$RG_NCCL_SUM"
      rg_check_action nccl_env "" changed info present present "put back the $file that was there before apply" "written → the earlier file ($file)"
    else
      rm -f "${tmp:-}"
      rg_check nccl_env "" fail error present written "could not put back the earlier $file from $RG_NCCL_ORIG"
    fi
    return 0
  fi
  rg_step "remove: $file"
  if rm -f "$path"; then
    rm -f "$RG_NCCL_SUM"
    # The folder apply made for it alone goes too (rmdir: only when empty).
    [ "$saved" != "absent folder" ] || rmdir "$RG_ROOT$RG_INSTALL_DIR" 2>/dev/null || true
    if [ "$saved" = present ]; then
      # The install folder goes with the unit: the earlier file stays where apply kept it.
      rg_check_action nccl_env "" changed info absent absent "removed $file; the one that was there before apply is kept as $RG_NCCL_ORIG, as the install folder goes" \
        "written → absent ($file; the earlier one kept in the state folder)"
    else
      rg_check_action nccl_env "" changed info absent absent "removed $file" "written → absent ($file)"
    fi
  else
    rg_check nccl_env "" fail error absent written "could not remove $file"
  fi
}

# --- SR-IOV VFs of a planned port --------------------------------------------------------------

# Per NIC: the `vfs` fact, a JSON array of its VFs' RDMA devices with their ToS and class.
RG_VF_FACTS=()
# The RDMA subsystem's network namespace mode (rg_rdma_netns), read once a run; "" not yet.
RG_RDMA_NETNS=""
# The PCI functions of the planned ports' VFs (rg_vf_bdfs): per PF with SR-IOV, its VFs'
# functions joined by `|`; and how many in all.
RG_VF_KERNELS=()
RG_VF_N=0

# rg_vf_devs I: the RDMA devices of NIC I's VFs, `DEV BDF` a line: the PF's virtfnN links
# (drivers/pci/iov.c) and each VF's infiniband/ folder.
rg_vf_devs() {
  local pf link vf ib
  pf=$(rg_fw_device "$1")
  [ -n "$pf" ] || return 0
  for link in "$RG_ROOT/sys/bus/pci/devices/$pf"/virtfn*; do
    [ -L "$link" ] || continue
    vf=$(readlink "$link") || continue
    vf=${vf##*/}
    for ib in "$RG_ROOT/sys/bus/pci/devices/$vf/infiniband"/*; do
      [ -e "$ib" ] || continue
      printf '%s %s\n' "${ib##*/}" "$vf"
    done
  done
}

# rg_vf_bdfs: RG_VF_KERNELS and RG_VF_N = the PCI functions the planned ports' PFs (RG_BDFS,
# rg_port_bdfs) give their VFs, created yet or not, for the udev rule (lib-persist.sh; one line
# per PF keeps each line short with hundreds of VFs): a VF is a sibling of its PF on the bus, not
# below it. drivers/pci/iov.c pci_iov_virtfn_bus/devfn: VF K (K below sriov_totalvfs) sits at
# the PF's routing ID (bus << 8 | devfn) + sriov_offset + K * sriov_stride, on the PF's domain.
# Offset and stride as the PF shows them now (the kernel reads them again when NumVFs is
# written; ConnectX keeps them).
rg_vf_bdfs() {
  local b total off stride bus slot fn rid k v list
  RG_VF_KERNELS=() RG_VF_N=0
  for b in ${RG_BDFS[@]+"${RG_BDFS[@]}"}; do
    total=$(rg_read "/sys/bus/pci/devices/$b/sriov_totalvfs") || continue
    off=$(rg_read "/sys/bus/pci/devices/$b/sriov_offset") || continue
    stride=$(rg_read "/sys/bus/pci/devices/$b/sriov_stride") || continue
    [[ "$total $off $stride" =~ ^[0-9]+\ [1-9][0-9]*\ [0-9]+$ ]] || continue
    bus=${b#*:} slot=${bus#*:} bus=${bus%%:*} fn=${slot#*.} slot=${slot%.*}
    rid=$(((16#$bus << 8) + (16#$slot << 3) + fn))
    list=""
    for ((k = 0; k < 10#$total; k++)); do
      v=$((rid + 10#$off + 10#$stride * k))
      ((v < 65536)) || break
      list+="${list:+|}$(printf '%s:%02x:%02x.%d' "${b%%:*}" $((v >> 8)) $(((v >> 3) & 31)) $((v & 7)))"
      RG_VF_N=$((RG_VF_N + 1))
    done
    [ -z "$list" ] || RG_VF_KERNELS+=("$list")
  done
}

# rg_vf_on DEV CMD ARGS...: runs CMD with the scratch plan index 999 standing for the VF's RDMA
# device DEV (no netdev: a VF has no dcbnl, pause or ecn/ to set, finding 21), so that the planned
# port's readers and writers (rg_get, rg_set: cma_roce_tos or configfs, the traffic_class file)
# serve the VF as they are.
rg_vf_on() {
  local rc=0
  RG_NIC_IBDEV[999]=$1 RG_NIC_NETDEV[999]=""
  shift
  "$@" || rc=$?
  unset 'RG_NIC_IBDEV[999]' 'RG_NIC_NETDEV[999]'
  return "$rc"
}

# rg_vf_get ID DEV: RG_V = setting ID (roce_tos, traffic_class) of the VF's RDMA device DEV.
rg_vf_get() { rg_vf_on "$2" rg_get "$1" 999; }

# rg_vf_set ID DEV VALUE: changes it (or prints how, with --dry-run).
rg_vf_set() { rg_vf_on "$2" rg_set "$1" 999 "$3"; }

# rg_vf_read DEV: RG_VF_TOS and RG_VF_TC = the ToS and traffic class of the VF's RDMA device DEV,
# `?` where unreadable; the class `unset` (no global class) or `none` (no traffic_class file:
# OFED only).
rg_vf_read() {
  if rg_vf_get roce_tos "$1"; then RG_VF_TOS=$RG_V; else RG_VF_TOS="?"; fi
  if [ ! -e "$RG_ROOT/sys/class/infiniband/$1/tc/1/traffic_class" ]; then
    RG_VF_TC=none
  elif rg_vf_get traffic_class "$1"; then
    RG_VF_TC=${RG_V:-unset}
  else
    RG_VF_TC="?"
  fi
}

# rg_vf_ok: true when RG_VF_TOS and RG_VF_TC are the plan's.
rg_vf_ok() {
  [ "$RG_VF_TOS" = "$RG_ROCE_TOS" ] && { [ "$RG_VF_TC" = none ] || [ "$RG_VF_TC" = "$RG_ROCE_TOS" ]; }
}

# rg_vf_entry DEV BDF: the text (RG_VF_TEXT) and the fact (RG_VF_JSON) of one VF, from RG_VF_TOS
# and RG_VF_TC; rg_vf_fix DEV: the commands that set it as planned.
rg_vf_entry() {
  if [ "$RG_VF_TC" = none ]; then
    RG_VF_TEXT="$1 ($2) ToS $RG_VF_TOS, no traffic_class file (OFED only)"
  else
    RG_VF_TEXT="$1 ($2) ToS $RG_VF_TOS, traffic class $RG_VF_TC"
  fi
  rg_json_fmt '{"ib_dev":%s,"pci":%s,"roce_tos":%s,"traffic_class":%s}' s "$1" s "$2" s "$RG_VF_TOS" s "$RG_VF_TC"
  RG_VF_JSON=$REPLY
}
rg_vf_fix() {
  printf 'cma_roce_tos -d %s -t %s' "$1" "$RG_ROCE_TOS"
  [ "$RG_VF_TC" = none ] || printf ' and echo %s > /sys/class/infiniband/%s/tc/1/traffic_class' "$RG_ROCE_TOS" "$1"
}

# rg_rdma_netns: RG_RDMA_NETNS = shared, exclusive or unknown (`rdma system show`, iproute2).
rg_rdma_netns() {
  [ -z "$RG_RDMA_NETNS" ] || return 0
  RG_RDMA_NETNS=unknown
  rg_has rdma || return 0
  if rg_cap rg_x rdma system show && rg_v rg_parse_rdma_netns "$RG_CAP"; then RG_RDMA_NETNS=$RG_V; fi
  return 0
}

# rg_vf_netns_note I: RG_V = why the ToS set on NIC I's VFs does not reach pods, or "". In the
# exclusive netns mode (rdma-cni's) a VF's RDMA device moved into a pod's namespace is removed and
# added again there, and its cma device is re-created with ToS 0 (device.c rdma_dev_change_netns,
# cma.c cma_add_one); its uevent belongs to the pod's namespace, so the host's udev rule never sees
# it. OFED's verbs class (tc/1/traffic_class) is driver state of the device and survives the move.
rg_vf_netns_note() {
  rg_rdma_netns
  RG_V=""
  [ "$RG_RDMA_NETNS" = exclusive ] || return 0
  RG_V="the RDMA subsystem is in exclusive network namespace mode (rdma system show), as rdma-cni sets it: a VF's RDMA device moved into a pod is re-created there with RDMA-CM ToS 0, out of this host's sight, so the ToS set here does not reach pods; set it from the pod (cma_roce_tos in its namespace) or give the application its class (NCCL_IB_TC, UCX_IB_TRAFFIC_CLASS, rdma_cm's -T)"
  if [ -e "$RG_ROOT/sys/class/infiniband/${RG_NIC_IBDEV[$1]}/tc/1/traffic_class" ]; then
    RG_V+="; the verbs traffic class set here stays with the device (OFED), so verbs traffic keeps it"
  fi
}

# rg_vf_report I: precheck's `vf_qos` of NIC I, where its PF has VFs with RDMA devices: each one's
# RDMA-CM ToS and verbs traffic class against the plan's ToS. A VF's traffic leaves with its own
# device's values, the kernel's defaults (ToS 0, no class: the lossy class) until set; Kubernetes
# SR-IOV pods and VMs use them.
rg_vf_report() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} vdev vbdf list="" off="" facts="" fix="" short=""
  while read -r vdev vbdf; do
    [ -n "$vdev" ] || continue
    rg_vf_read "$vdev"
    rg_vf_entry "$vdev" "$vbdf"
    list+="${list:+, }$RG_VF_TEXT"
    facts+="${facts:+,}$RG_VF_JSON"
    if ! rg_vf_ok; then
      off+="${off:+, }$vdev"
      # The change as the dry run's summary shows it (rg_vf_apply).
      [[ " / $short / " == *" / ToS $RG_VF_TOS class $RG_VF_TC / "* ]] || short+="${short:+ / }ToS $RG_VF_TOS class $RG_VF_TC"
      fix+="${fix:+; }$(rg_vf_fix "$vdev")"
    fi
  done <<<"$(rg_vf_devs "$i")"
  [ -n "$list" ] || return 0
  # shellcheck disable=SC2034 # rg_facts (lib-probe.sh) reads it
  RG_VF_FACTS[i]="\"vfs\":[$facts]"
  rg_vf_netns_note "$i"
  if [ -z "$off" ] && [ -z "$RG_V" ]; then
    rg_check vf_qos "$dev" pass warning "$RG_ROCE_TOS" "$RG_ROCE_TOS" "the RDMA devices of ${RG_NIC_NETDEV[i]}'s VFs carry the planned ToS $RG_ROCE_TOS: $list"
  elif [ -z "$off" ]; then
    rg_check vf_qos "$dev" warn warning "$RG_ROCE_TOS" "$RG_ROCE_TOS" "the RDMA devices of ${RG_NIC_NETDEV[i]}'s VFs carry the planned ToS $RG_ROCE_TOS ($list), but $RG_V"
  else
    rg_check_change vf_qos "$dev" warn warning "$RG_ROCE_TOS" "$list" \
      "the RDMA devices of ${RG_NIC_NETDEV[i]}'s VFs carry another ToS or traffic class than the planned $RG_ROCE_TOS ($list): RDMA traffic of pods and VMs on $off leaves in another, lossy class; apply will set them ($fix)${RG_V:+; and $RG_V}" "$short"
  fi
}

# rg_vf_apply I: apply's `vf_qos` of NIC I: the RDMA-CM ToS and, where the host has the
# traffic_class file, the verbs class of every RDMA device of its PF's VFs become the plan's ToS
# (the PF's mechanism, rg_set); nothing else is set on a VF. The values from before are saved
# first (`vf_roce_tos` and `vf_traffic_class`, keyed `PF@VF-BDF`: a VF's RDMA device may come
# back under another name, its PCI function does not), then each VF is read back. `changed` only
# when every VF reads back as planned. --dry-run takes the same steps and changes nothing.
rg_vf_apply() {
  local i=$1 dev=${RG_NIC_IBDEV[$1]} ifc=${RG_NIC_NETDEV[$1]} want=$RG_ROCE_TOS pairs vdev vbdf key
  local lines="" list="" facts="" set="" bad="" fix="" from="" short="" wrote
  pairs=$(rg_vf_devs "$i")
  [ -n "$pairs" ] || return 0
  if ! rg_supported roce_tos "$i"; then
    rg_check vf_qos "$dev" skip warning "$want" "" "skipped: the ToS of $ifc's VFs cannot be set: $RG_WHY"
    return 0
  elif rg_nic_wedged "$i"; then
    rg_check vf_qos "$dev" skip error "$want" "" "not changed: a driver file of $dev did not answer within ${RG_TOOL_TIMEOUT}s (tool_timeout), so apply leaves its VFs as they are; check it, then run apply again"
    return 0
  fi
  if [ "$RG_DRY_RUN" = no ]; then
    while read -r vdev vbdf; do
      rg_vf_read "$vdev"
      key="$dev@$vbdf"
      [ "$RG_VF_TOS" = "?" ] || rg_saved vf_roce_tos "$key" >/dev/null ||
        lines+="vf_roce_tos"$'\t'"$key"$'\t'"$RG_VF_TOS"$'\n'
      case $RG_VF_TC in
        none | "?") ;;
        *)
          rg_saved vf_traffic_class "$key" >/dev/null ||
            lines+="vf_traffic_class"$'\t'"$key"$'\t'"${RG_VF_TC#unset}"$'\n'
          ;;
      esac
    done <<<"$pairs"
    [ -z "$lines" ] || rg_save_lines "$lines" "the original ToS and traffic class of $ifc's VFs" "nothing was changed on them, so rollback stays possible"
  fi
  while read -r vdev vbdf; do
    rg_vf_read "$vdev"
    rg_vf_ok && continue
    rg_vf_entry "$vdev" "$vbdf"
    from+="${from:+, }$RG_VF_TEXT"
    # The summary's short form: each distinct pair once, no commas (a list reads as `N entries`).
    [[ " / $short / " == *" / ToS $RG_VF_TOS class $RG_VF_TC / "* ]] || short+="${short:+ / }ToS $RG_VF_TOS class $RG_VF_TC"
    wrote=ok
    [ "$RG_VF_TOS" = "$want" ] || rg_vf_set roce_tos "$vdev" "$want" || wrote=failed
    [ "$RG_VF_TC" = none ] || [ "$RG_VF_TC" = "$want" ] || rg_vf_set traffic_class "$vdev" "$want" || wrote=failed
    set+="${set:+ }$vdev:$wrote"
  done <<<"$pairs"
  if [ "$RG_DRY_RUN" = yes ]; then
    if [ -z "$set" ]; then
      rg_check vf_qos "$dev" pass warning "$want" "$want" "the RDMA devices of $ifc's VFs carry the planned ToS $want; unchanged"
    else
      rg_check_change vf_qos "$dev" warn warning "$want" "$from" "dry run: the RDMA devices of $ifc's VFs would get the planned ToS $want: $from" "$short"
    fi
    return 0
  fi
  while read -r vdev vbdf; do
    rg_vf_read "$vdev"
    rg_vf_entry "$vdev" "$vbdf"
    list+="${list:+, }$RG_VF_TEXT"
    facts+="${facts:+,}$RG_VF_JSON"
    rg_vf_ok && continue
    if [[ " $set " == *" $vdev:failed "* ]]; then
      bad+="${bad:+, }$vdev (setting it failed, see the log above; it reads ToS $RG_VF_TOS, traffic class $RG_VF_TC)"
    else
      bad+="${bad:+, }$vdev (ToS $RG_VF_TOS, traffic class $RG_VF_TC)"
    fi
    fix+="${fix:+; }$(rg_vf_fix "$vdev")"
  done <<<"$pairs"
  # shellcheck disable=SC2034 # rg_facts (lib-probe.sh) reads it
  RG_VF_FACTS[i]="\"vfs\":[$facts]"
  rg_vf_netns_note "$i"
  if [ -n "$bad" ]; then
    rg_check vf_qos "$dev" fail error "$want" "$list" "the RDMA devices of $ifc's VFs do not read back the planned ToS $want: $bad; RDMA traffic of pods and VMs on them leaves in another, lossy class: $fix${RG_V:+; and $RG_V}"
  elif [ -n "$set" ] && [ -n "$RG_V" ]; then
    rg_check_change vf_qos "$dev" warn warning "$want" "$list" "the RDMA devices of $ifc's VFs changed to the planned ToS $want (was $from): $list; but $RG_V" "$short"
  elif [ -n "$set" ]; then
    rg_check_change vf_qos "$dev" changed warning "$want" "$list" "the RDMA devices of $ifc's VFs changed to the planned ToS $want (was $from): $list" "$short"
  elif [ -n "$RG_V" ]; then
    rg_check vf_qos "$dev" warn warning "$want" "$list" "the RDMA devices of $ifc's VFs carry the planned ToS $want ($list), but $RG_V"
  else
    rg_check vf_qos "$dev" pass warning "$want" "$list" "the RDMA devices of $ifc's VFs carry the planned ToS $want; unchanged: $list"
  fi
}

# rg_vf_rollback: rollback's `vf_qos` per PF whose VFs apply changed: each VF's saved ToS and
# traffic class back, found by its PCI function. A VF gone since (VFs disabled, or a VF bound to
# another driver: no RDMA device) is a warning naming it, and the others are still restored; a VF
# created again starts at the kernel's defaults.
rg_vf_rollback() {
  local id key value pf pfs=""
  [ -r "$RG_SAVED" ] || return 0
  while IFS=$'\t' read -r id key value; do
    case $id in
      vf_roce_tos | vf_traffic_class) [[ " $pfs " == *" ${key%@*} "* ]] || pfs+=" ${key%@*}" ;;
    esac
  done <"$RG_SAVED"
  for pf in $pfs; do rg_vf_restore "$pf"; done
}

# rg_vf_restore PF: rg_vf_rollback for the VFs of the planned RDMA device PF.
rg_vf_restore() {
  local pf=$1 id key value vbdf vdev ib sid now gone="" done="" bad="" pending="" was="" to=""
  while IFS=$'\t' read -r id key value; do
    case $id in
      vf_roce_tos) sid=roce_tos ;;
      vf_traffic_class) sid=traffic_class ;;
      *) continue ;;
    esac
    [ "${key%@*}" = "$pf" ] || continue
    vbdf=${key#*@} vdev=""
    for ib in "$RG_ROOT/sys/bus/pci/devices/$vbdf/infiniband"/*; do
      [ -e "$ib" ] || continue
      vdev=${ib##*/}
      break
    done
    if [ -z "$vdev" ]; then
      [[ ", $gone, " == *", $vbdf, "* ]] || gone+="${gone:+, }$vbdf"
      continue
    fi
    if ! rg_vf_get "$sid" "$vdev"; then
      bad+="${bad:+, }$vdev $sid (cannot read it: $RG_V)"
      continue
    fi
    now=$RG_V
    [ "$now" != "$value" ] || continue
    # The summary's short form (rg_vf_apply): each distinct value once.
    [[ " / $was / " == *" / $sid ${now:-unset} / "* ]] || was+="${was:+ / }$sid ${now:-unset}"
    [[ " / $to / " == *" / $sid ${value:-unset} / "* ]] || to+="${to:+ / }$sid ${value:-unset}"
    if ! rg_vf_set "$sid" "$vdev" "$value"; then
      bad+="${bad:+, }$vdev $sid to ${value:-unset} (see the log above)"
    elif [ "$RG_DRY_RUN" = yes ]; then
      pending+="${pending:+, }$vdev $sid ${now:-unset} to ${value:-unset}"
    elif rg_vf_get "$sid" "$vdev" && [ "$RG_V" = "$value" ]; then
      done+="${done:+, }$vdev $sid ${now:-unset} to ${value:-unset}"
    else
      bad+="${bad:+, }$vdev $sid to ${value:-unset} (reads ${RG_V:-nothing})"
    fi
  done <"$RG_SAVED"
  [ -z "$gone" ] || gone="; not restored, gone since apply (no RDMA device at $gone: VFs disabled or given to another driver; a VF created again starts at the kernel's defaults)"
  if [ -n "$bad" ]; then
    rg_check vf_qos "$pf" fail error "saved" "" "could not restore the VFs of $pf: $bad${done:+; restored $done}$gone: set them by hand (cma_roce_tos -d DEV -t TOS, echo CLASS > /sys/class/infiniband/DEV/tc/1/traffic_class, -1 for none)"
  elif [ -n "$pending" ]; then
    rg_check_change vf_qos "$pf" warn warning "$to" "$was" "dry run: would restore the VFs of $pf: $pending$gone" "$was"
  elif [ -n "$gone" ]; then
    if [ -n "$done" ]; then done="restored the VFs of $pf: $done"; else done="nothing else of the VFs of $pf to restore"; fi
    rg_check vf_qos "$pf" warn warning "saved" "" "$done$gone"
  elif [ -n "$done" ]; then
    rg_check_change vf_qos "$pf" changed warning "$to" "$to" "restored the VFs of $pf: $done" "$was"
  else
    rg_check vf_qos "$pf" pass warning "saved" "saved" "the VFs of $pf already carry their values from before apply"
  fi
}

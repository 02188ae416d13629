# shellcheck shell=bash
# The mlx5 driver's DCB netlink behaviour (en_dcbnl.c, port.c), shared by the mlnx_qos and
# dcb stand-ins because both program the same driver. Sourced after common.sh.
#
# State (netlink-only, so not in sysfs), per interface in .fake/dcb/IF/:
#   app        the kernel's DCB APP table, one "dscp PROTOCOL PRIORITY" line per entry, in
#              the kernel's list order: dcb_app_add() inserts at the head, so the newest
#              entry is the first line. It is the truth for trust: any dscp entry means the
#              port trusts DSCP (mlx5e_dcbnl_ieee_setapp/delapp switch QPTS on the first
#              add / last delete).
#   pfc        PFC enable per priority, "0,0,0,1,0,0,0,0" (pfc_en bit N = priority N)
#   cable_len  the PFC "delay" (cable length in metres, mlx5 default 7)
#   manual_buffer  present: the driver owns the receive buffers (drv_setpfc)
#   dcbx       the DCBX capability flags as `dcb dcbx show` prints them: "host cee ieee"
#              when OS controlled (the default here), "cee ieee" when firmware controlled
#   flaps      one line per link toggle (mlx5_toggle_port_link on a PFC mask change); the
#              link is down for .fake/net/IF/flap_seconds after the file was last written
#              (driverfs shows carrier, operstate and the RDMA port's state from it)
# The 802.3x pause state that a PFC change clears is .fake/net/IF/pause ("rx tx autoneg").
# .fake/no-dcb makes every DCB netlink call fail with EOPNOTSUPP (an interface without
# dcbnl ops, e.g. a veth). A netdev that is no PCI function's (no `device` link: a bond, whose
# driver, drivers/net/bonding/bond_main.c bond_setup, sets no dcbnl_ops) always has none:
# net/dcb/dcbnl.c dcb_doit answers every DCB request for it with -EOPNOTSUPP, for every object
# at once.

declare -a app_d=() app_p=() pfcv=()

# dcb_ok IF: the interface exists and has DCB (else the caller reports its own error).
dcb_ok() { have_if "$1" && [[ ! -e $FAKE/no-dcb && -e $NET/$1/device ]]; }
dcb_dir() {
  REPLY=$FAKE/dcb/$1
  [[ -d $REPLY ]] || mkdir -p -- "$REPLY"
}

app_load() { # IF: app_d[] app_p[] in table order (head first)
  local sel d p f=$FAKE/dcb/$1/app
  app_d=() app_p=()
  [[ -f $f ]] || return 0
  while read -r sel d p || [[ -n ${sel-} ]]; do
    if [[ $sel == dscp && $d =~ ^[0-9]+$ && ${p-} =~ ^[0-7]$ ]] && ((10#$d < 64)); then
      app_d+=("$((10#$d))") app_p+=("$p")
    fi
    sel=
  done <"$f"
}

app_save() {
  local i out=''
  for ((i = 0; i < ${#app_d[@]}; i++)); do out+="dscp ${app_d[i]} ${app_p[i]}"$'\n'; done
  dcb_dir "$1"
  printf '%s' "$out" >"$REPLY/app"
}

app_find() { # D: REPLY = index of DSCP D in the table; status 1 when absent
  local i
  for ((i = 0; i < ${#app_d[@]}; i++)); do
    if ((app_d[i] == $1)); then
      REPLY=$i
      return 0
    fi
  done
  return 1
}

app_remove() { # INDEX
  app_d=("${app_d[@]:0:$1}" "${app_d[@]:$1+1}")
  app_p=("${app_p[@]:0:$1}" "${app_p[@]:$1+1}")
  ((${#app_d[@]})) || app_d=() app_p=()
}

csv() { # VALUES...: REPLY = them joined with commas
  local IFS=,
  REPLY="$*"
}

trust_of_table() { if ((${#app_d[@]})); then REPLY=dscp; else REPLY=pcp; fi; }

# drv_setapp IF D P: mlx5e_dcbnl_ieee_setapp: the first DSCP entry switches the port to
# DSCP trust; the old entry of D is deleted and the new one added at the head (so even
# re-setting the same mapping moves it to the front). Operates on the loaded table.
drv_setapp() {
  if app_find "$2"; then app_remove "$REPLY"; fi
  app_d=("$2" ${app_d[@]+"${app_d[@]}"})
  app_p=("$3" ${app_p[@]+"${app_p[@]}"})
}

# drv_delapp IF D P: mlx5e_dcbnl_ieee_delapp: ENOENT (status 1) when the port has no DSCP
# entry or D is not mapped to P; else the entry goes (the firmware map of D is reset to
# priority 0) and deleting the last one switches the port back to PCP trust.
drv_delapp() {
  ((${#app_d[@]})) || return 1
  app_find "$2" || return 1
  ((app_p[REPLY] == $3)) || return 1
  app_remove "$REPLY"
}

pfc_load() { # IF: pfcv[0..7]
  local -a a=()
  local i
  pfcv=(0 0 0 0 0 0 0 0)
  rd "$FAKE/dcb/$1/pfc" || return 0
  IFS=, read -r -a a <<<"$REPLY"
  for ((i = 0; i < 8 && i < ${#a[@]}; i++)); do [[ ${a[i]} == 1 ]] && pfcv[i]=1; done
}

cable_len() { # IF: REPLY = the PFC delay / cable length
  rd "$FAKE/dcb/$1/cable_len" && [[ $REPLY =~ ^[0-9]+$ ]] || REPLY=7
}

dcbx_flags() { # IF: REPLY = the DCBX capability words
  rd "$FAKE/dcb/$1/dcbx" && [[ -n $REPLY ]] || REPLY='host cee ieee'
}

# drv_setpfc IF MASK DELAY: mlx5e_dcbnl_ieee_setpfc. A changed mask is written with
# mlx5_set_port_pfc, which also clears 802.3x global pause (pptx/pprx = 0), and the link
# is toggled once. DELAY (cable length) is taken when 0 < DELAY < 1000
# (MLX5E_MAX_CABLE_LENGTH) and different. Who sizes the receive buffers then:
# - the firmware (the default; the driver's priv->dcbx.manual_buffer is false): on a mask
#   change it maps the lossless priorities to buffer 1 (fixed example sizes, see
#   fixtures/README.md); the cable length is only stored (getpfc reports it) and resizes
#   nothing;
# - the driver, with .fake/dcb/IF/manual_buffer (manual_buffer set by a write to
#   qos/buffer_size or qos/prio2buffer or dcbnl setbuffer, which the stand-ins do not model:
#   a test writes the file and the buffers): mlx5e_port_manual_buffer_config on a mask or
#   cable length change (drv_manual_buffers). When it refuses (ENOMEM) the cable length stays
#   as it was and the call fails (status 1, the mask already written).
drv_setpfc() {
  local ifc=$1 new=$2 delay=$3 old an changed=0 manual=0 was
  local IFS=,
  pfc_load "$ifc"
  old="${pfcv[*]}"
  unset IFS
  dcb_dir "$ifc"
  [[ -e $REPLY/manual_buffer ]] && manual=1
  if [[ $new != "$old" ]]; then
    wr "$REPLY/pfc" "$new"
    printf 'pfc %s -> %s\n' "$old" "$new" >>"$REPLY/flaps"
    an=off
    if rd "$FAKE/net/$ifc/pause"; then read -r _ _ an <<<"$REPLY"; fi
    [[ -d $FAKE/net/$ifc ]] || mkdir -p -- "$FAKE/net/$ifc"
    wr "$FAKE/net/$ifc/pause" "off off ${an:-off}"
    ((manual)) || drv_buffers "$ifc" "$new"
    changed=1
  fi
  cable_len "$ifc"
  was=$REPLY
  if ((delay > 0 && delay < 1000 && delay != was)); then
    wr "$FAKE/dcb/$ifc/cable_len" "$delay"
    changed=1
  fi
  if ((manual && changed)) && ! drv_manual_buffers "$ifc" "$new"; then
    wr "$FAKE/dcb/$ifc/cable_len" "$was"
    return 1
  fi
  return 0
}

# drv_manual_buffers IF MASK: port_buffer.c with the driver owning the buffers: a buffer is
# lossless when a PFC priority maps to it (update_buffer_lossy, qos/prio2buffer); its xoff
# threshold becomes size - calculate_xoff and its xon that minus max_mtu (update_xoff_threshold),
# a lossy one gets 0 and 0; ENOMEM (status 1, nothing written) when a lossless buffer is smaller
# than calculate_xoff + max_mtu + the cell size. calculate_xoff = (301 + 216 * cable / 100) *
# max(speed, 40000) / 1000 + 272 * mtu / 100, with the netdev's speed (Mb/s) and MTU; max_mtu
# is mlx5e's 9978, the cell size 128 (mlx5e_query_port_buffers_cell_size on ConnectX-6/7).
drv_manual_buffers() {
  local ifc=$1 q=$NET/$1/qos b s p speed mtu xoff head='' out='' line
  local -a m=() p2b=(0 0 0 0 0 0 0 0) size=() lossless=()
  [[ -f $q/buffer_size ]] || return 0
  IFS=, read -r -a m <<<"$2"
  if [[ -f $q/prio2buffer ]]; then
    while read -r p b; do [[ $p =~ ^[0-7]$ && $b =~ ^[0-7]$ ]] && p2b[p]=$b; done <"$q/prio2buffer"
  fi
  for ((b = 0; b < 8; b++)); do lossless[b]=0; done
  for ((p = 0; p < 8; p++)); do [[ ${m[p]:-0} == 1 ]] && lossless[p2b[p]]=1; done
  while IFS= read -r line; do
    if [[ $line =~ ^([0-7])[[:space:]]+([0-9]+) ]]; then
      size[BASH_REMATCH[1]]=${BASH_REMATCH[2]}
    elif [[ -z $out ]]; then
      head+=$line$'\n'
    fi
  done <"$q/buffer_size"
  rd "$NET/$ifc/speed" && [[ $REPLY =~ ^[0-9]+$ ]] && speed=$REPLY || speed=40000
  ((speed >= 40000)) || speed=40000
  rd "$NET/$ifc/mtu" && [[ $REPLY =~ ^[0-9]+$ ]] && mtu=$REPLY || mtu=1500
  cable_len "$ifc"
  xoff=$(((301 + 216 * REPLY / 100) * speed / 1000 + 272 * mtu / 100))
  for ((b = 0; b < 8; b++)); do
    s=${size[b]:-0}
    if ((lossless[b])); then
      ((s >= xoff + 9978 + 128)) || return 1
      out+="$b"$'\t'"$s"$'\t'"$((s - xoff))"$'\t\t'"$((s - xoff - 9978))"$'\n'
    else
      out+="$b"$'\t'"$s"$'\t0\t\t0\n'
    fi
  done
  printf '%s%s' "$head" "$out" >"$q/buffer_size"
}

# drv_buffers IF MASK: the OFED sysfs views qos/prio2buffer and qos/buffer_size
# (en_sysfs.c formats), when the host has them.
drv_buffers() {
  local q=$NET/$1/qos i out b
  local -a m=()
  [[ -f $q/prio2buffer || -f $q/buffer_size ]] || return 0
  IFS=, read -r -a m <<<"$2"
  out=$'Priority\tBuffer\n' b=0
  for ((i = 0; i < 8; i++)); do
    out+="$i"$'\t\t'"${m[i]:-0}"$'\n'
    [[ ${m[i]:-0} == 1 ]] && b=1
  done
  printf '%s' "$out" >"$q/prio2buffer"
  out=$'Port buffer size = 262016\nSpare buffer size = 0\nBuffer\tSize\txoff_threshold\txon_threshold\n'
  if ((b)); then
    out+=$'0\t130944\t0\t\t0\n1\t130944\t111104\t\t101120\n'
  else
    out+=$'0\t262016\t0\t\t0\n1\t0\t0\t\t0\n'
  fi
  for ((i = 2; i < 8; i++)); do out+="$i"$'\t0\t0\t\t0\n'; done
  printf '%s' "$out" >"$q/buffer_size"
}

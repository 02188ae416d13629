# shellcheck shell=bash
# firewalld.sh: firewalld's runtime zones as a simulated host keeps them (.fake/firewalld), read
# by the firewall-cmd stand-in and by the ib_write_bw wire model, whose connections a closed port
# refuses. State: .fake/firewalld/running (firewalld runs while it exists), default_zone, and
# zones/Z with `target T`, `interfaces IF...`, `services S...`, `ports P/tcp|A-B/tcp...` and
# `rich RULE` lines. A zone or key without a line is as firewalld ships it (firewalld/firewalld
# config/zones/*.xml): target `default`, public admits the services ssh and dhcpv6-client,
# trusted has target ACCEPT.

# fwd_get FW ZONE KEY: REPLY = the values of KEY in ZONE (FW: the .fake/firewalld folder).
fwd_get() {
  local k v
  REPLY=""
  [[ $3 != target ]] || REPLY=default
  [[ $2:$3 != trusted:target ]] || REPLY=ACCEPT
  if [[ -f $1/zones/$2 ]]; then
    while read -r k v || [[ -n ${k-} ]]; do
      [[ $k != "$3" ]] || REPLY=$v
      k=
    done <"$1/zones/$2"
  elif [[ $2:$3 == public:services ]]; then
    REPLY='dhcpv6-client ssh'
  fi
}

# fwd_default FW: REPLY = the default zone.
fwd_default() {
  REPLY=public
  [[ ! -f $1/default_zone ]] || read -r REPLY <"$1/default_zone"
}

# fwd_zone_of FW IF: REPLY = the zone whose interfaces list IF, empty when none.
fwd_zone_of() {
  local f
  for f in "$1"/zones/*; do
    [[ -f $f ]] || continue
    fwd_get "$1" "${f##*/}" interfaces
    if [[ " $REPLY " == *" $2 "* ]]; then
      REPLY=${f##*/}
      return 0
    fi
  done
  REPLY=""
}

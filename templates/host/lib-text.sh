# shellcheck shell=bash
# lib-text.sh, part of lib.sh (and of run-here.sh, which roce-gen writes with this file in it):
# text for the console. Every text the scripts print that came from the host or the network (a
# host name, an LLDP neighbour, a tool's output, a file name) passes rg_esc, so that no control
# character reaches a terminal, which would run it (move the cursor, erase lines, retitle the
# window). The functions need LC_ALL=C (bash then counts bytes) and start no process.

# rg_plain_console: true when the console may not show UTF-8, so the scripts print ASCII: the
# locale's character set (the first of LC_ALL, LC_CTYPE, LANG that is set; none is the POSIX
# locale) is not UTF-8, or TERM is a serial terminal (vt100, vt220, …, as serial getty and BMC
# serial-over-LAN set it) or the Linux text console (`linux`, a BMC's video redirection), whose
# fonts have no status symbols. Called before LC_ALL=C hides the locale.
rg_plain_console() {
  local charset=${LC_ALL:-${LC_CTYPE:-${LANG:-}}}
  case ${charset,,} in
    *utf-8* | *utf8*) ;;
    *) return 0 ;;
  esac
  case ${TERM:-} in
    vt[0-9]* | linux) return 0 ;;
  esac
  return 1
}

# The summary's symbols, in UTF-8 and for plain consoles (--ascii) in ASCII, index for index.
RG_SYM_UTF8=('✅' '❌' '⚠' 'ℹ' '→' '…')
RG_SYM_PLAIN=('[OK]' '[FAIL]' '[WARN]' '[INFO]' '->' '...')

# Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points above U+10FFFF), as
# bytes.
RG_UTF8_RE=$'^([\001-\177]|[\302-\337][\200-\277]|\340[\240-\277][\200-\277]|[\341-\354\356\357][\200-\277][\200-\277]|\355[\200-\237][\200-\277]|\360[\220-\277][\200-\277][\200-\277]|[\361-\363][\200-\277][\200-\277][\200-\277]|\364[\200-\217][\200-\277][\200-\277])*$'

# rg_utf8 STRING: REPLY = STRING with every byte that is not part of well-formed UTF-8 replaced
# by U+FFFD.
rg_utf8() {
  local s=$1 out="" i=0 n=${#1} b b2 len k lo hi ok
  if [[ $s =~ $RG_UTF8_RE ]]; then
    REPLY=$s
    return 0
  fi
  while ((i < n)); do
    printf -v b '%d' "'${s:i:1}"
    # Bytes of a sign-extended char print negative on some platforms.
    ((b >= 0)) || b=$((b + 256))
    if ((b < 128)); then
      out+=${s:i:1}
      i=$((i + 1))
      continue
    fi
    len=0 lo=128 hi=191
    if ((b >= 0xc2 && b <= 0xdf)); then
      len=2
    elif ((b >= 0xe0 && b <= 0xef)); then
      len=3
      ((b != 0xe0)) || lo=0xa0
      ((b != 0xed)) || hi=0x9f
    elif ((b >= 0xf0 && b <= 0xf4)); then
      len=4
      ((b != 0xf0)) || lo=0x90
      ((b != 0xf4)) || hi=0x8f
    fi
    ok=0
    if ((len > 0 && i + len <= n)); then
      ok=1
      for ((k = 1; k < len; k++)); do
        printf -v b2 '%d' "'${s:i+k:1}"
        ((b2 >= 0)) || b2=$((b2 + 256))
        ((k == 1)) || { lo=128 hi=191; }
        if ((b2 < lo || b2 > hi)); then
          ok=0
          break
        fi
      done
    fi
    if ((ok)); then
      out+=${s:i:len}
      i=$((i + len))
    else
      out+=$'\357\277\275'
      i=$((i + 1))
    fi
  done
  REPLY=$out
}

# rg_byte C: RG_B = the value of byte C (0-255).
rg_byte() {
  printf -v RG_B '%d' "'$1"
  ((RG_B >= 0)) || RG_B=$((RG_B + 256))
}

# The text up to the first byte that may begin something to escape (a control character, or the
# first byte of C1, U+061C, the bidi controls or the noncharacters). A regular expression, which
# stops there: bash's `${s#*[…]}` takes quadratic time.
RG_ESC_RE=$'^[^\001-\037\177\302\330\342\357]*'

# rg_esc TEXT [KEEP]: REPLY = TEXT as it may reach a terminal: each control character (C0, tab
# and newline included, DEL, C1), bidirectional control (U+200E, U+200F, U+061C, U+202A-U+202E,
# U+2066-U+2069) and the noncharacters U+FFFE and U+FFFF as the escape roce-gen itself prints
# (`\u{1b}`, `\u{9b}`, `\u{202e}`: lowercase hex, no leading zeros); a byte that is not UTF-8
# as U+FFFD. KEEP, one character, stays (the newlines between the lines of a text). Clean text
# costs a few pattern matches.
rg_esc() {
  local s=$1 keep=${2-} t n c rest code skip out=""
  t=$s
  [ -z "$keep" ] || t=${t//"$keep"/}
  case $t in
    *[$'\001'-$'\037'$'\177'$'\200'-$'\377']*) ;;
    *)
      REPLY=$s
      return 0
      ;;
  esac
  if [[ $t == *[$'\200'-$'\377']* ]]; then
    rg_utf8 "$s"
    s=$REPLY t=$s
    [ -z "$keep" ] || t=${t//"$keep"/}
    case $t in
      *[$'\001'-$'\037'$'\177']* | *$'\302'[$'\200'-$'\237']* | *$'\330\234'* | *$'\342\200'[$'\216\217\252'-$'\256']* | \
        *$'\342\201'[$'\246'-$'\251']* | *$'\357\277'[$'\276\277']*) ;;
      *)
        REPLY=$s
        return 0
        ;;
    esac
  fi
  while [[ $s =~ $RG_ESC_RE ]] && [ ${#BASH_REMATCH[0]} -lt ${#s} ]; do
    n=${#BASH_REMATCH[0]}
    out+=${BASH_REMATCH[0]}
    c=${s:n:1}
    rest=${s:n+1}
    # The code point to escape, and how many bytes after the first one it has.
    code="" skip=0
    case $c in
      "$keep") ;;
      $'\302')
        if [[ ${rest:0:1} == [$'\200'-$'\237'] ]]; then
          rg_byte "${rest:0:1}"
          code=$RG_B skip=1
        fi
        ;;
      $'\330') [ "${rest:0:1}" != $'\234' ] || code=$((0x61c)) skip=1 ;;
      $'\342')
        rg_byte "${rest:1:1}"
        if [[ ${rest:0:2} == $'\200'[$'\216\217\252'-$'\256'] ]]; then
          code=$((0x2000 + RG_B - 0x80)) skip=2
        elif [[ ${rest:0:2} == $'\201'[$'\246'-$'\251'] ]]; then
          code=$((0x2040 + RG_B - 0x80)) skip=2
        fi
        ;;
      $'\357')
        case ${rest:0:2} in
          $'\277\276') code=$((0xfffe)) skip=2 ;;
          $'\277\277') code=$((0xffff)) skip=2 ;;
        esac
        ;;
      *)
        rg_byte "$c"
        code=$RG_B
        ;;
    esac
    if [ -z "$code" ]; then
      out+=$c
    else
      printf -v code '%x' "$code"
      out+="\\u{$code}"
    fi
    s=${rest:skip}
  done
  REPLY=$out$s
}

# rg_console TEXT: prints TEXT, line by line, for the console: escaped (rg_esc, its newlines
# kept), and on a plain console (RG_ASCII=yes) with each symbol in its ASCII form and every
# other byte beyond ASCII as `?`.
rg_console() {
  local s k
  rg_esc "$1" $'\n'
  s=$REPLY
  if [ "${RG_ASCII:-no}" = yes ]; then
    for ((k = 0; k < ${#RG_SYM_UTF8[@]}; k++)); do
      s=${s//"${RG_SYM_UTF8[k]}"/${RG_SYM_PLAIN[k]}}
    done
    s=${s//[$'\200'-$'\377']/?}
  fi
  printf '%s\n' "$s"
}

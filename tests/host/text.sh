#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Function-level tests of the bundle's console text (templates/host/lib-text.sh): rg_esc turns
# every control character, bidi control and XML-forbidden noncharacter into the escape roce-gen
# prints (`\u{1b}`), keeps clean UTF-8 as it is, and rg_console on a plain console turns what is
# left beyond ASCII into `?` after the escaping. Runs in milliseconds; prints "N passed, M failed"
# and exits 1 on a failure.
# Usage: text.sh [BASH]   (the bash that runs the functions; default: this one)

set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ $# -gt 0 ] && [ -z "${TEXT_INNER-}" ]; then
  TEXT_INNER=1 exec "$1" "${BASH_SOURCE[0]}"
fi
# shellcheck source=../../templates/host/lib-text.sh
. "$HERE/../../templates/host/lib-text.sh"

# shellcheck source=assert.sh
. "$HERE/assert.sh"
esc() { # TEXT [KEEP]: rg_esc's REPLY
  rg_esc "$@"
  printf '%s' "$REPLY"
}
# raw TEXT: the bytes no console may get: C0 but the newline, DEL, C1 and the bidi controls.
raw() {
  case $1 in
    *[$'\001'-$'\011'$'\013'-$'\037'$'\177']* | *$'\302'[$'\200'-$'\237']* | *$'\330\234'* | \
      *$'\342\200'[$'\216\217\252'-$'\256']* | *$'\342\201'[$'\246'-$'\251']*) printf raw ;;
    *) printf clean ;;
  esac
}

# C0, every one, and DEL: the code point in lowercase hex without leading zeros.
for ((c = 1; c < 32; c++)); do
  printf -v oct '%03o' "$c"
  printf -v ch '%b' "\\0$oct"
  printf -v want 'a\\u{%x}b' "$c"
  eq "C0 $c" "$want" "$(esc "a${ch}b")"
done
eq "DEL" 'a\u{7f}b' "$(esc $'a\177b')"
eq "ESC sequence" '\u{1b}[31mred\u{1b}[0m' "$(esc $'\e[31mred\e[0m')"
eq "newline and tab" 'a\u{a}b\u{9}c' "$(esc $'a\nb\tc')"
eq "newline kept, tab not" $'a\nb\\u{9}c\nd' "$(esc $'a\nb\tc\nd' $'\n')"
eq "carriage return" 'ok\u{d}FAIL' "$(esc $'ok\rFAIL')"

# C1, as UTF-8 (U+0080-U+009F).
for ((c = 0x80; c <= 0x9f; c++)); do
  printf -v oct '%03o' "$c"
  printf -v ch '%b' "\\0302\\0$oct"
  printf -v want '[\\u{%x}]' "$c"
  eq "C1 $c" "$want" "$(esc "[$ch]")"
done

# Bidirectional controls.
eq "U+202E" '\u{202e}gnp.exe' "$(esc $'\342\200\256gnp.exe')"
for pair in 200e:$'\342\200\216' 200f:$'\342\200\217' 61c:$'\330\234' 202a:$'\342\200\252' \
  202b:$'\342\200\253' 202c:$'\342\200\254' 202d:$'\342\200\255' 202e:$'\342\200\256' \
  2066:$'\342\201\246' 2067:$'\342\201\247' 2068:$'\342\201\250' 2069:$'\342\201\251'; do
  eq "bidi U+${pair%%:*}" "x\\u{${pair%%:*}}y" "$(esc "x${pair#*:}y")"
done
# The noncharacters XML 1.0 forbids, as the Rust side escapes them.
eq "U+FFFE U+FFFF" 'a\u{fffe}b\u{ffff}c' "$(esc $'a\357\277\276b\357\277\277c')"

# Clean text stays byte for byte: symbols, CJK, Latin-1, joiners and the neighbours of the bidi
# controls, U+FFFD and U+FFFC.
for text in '✅ node-a: precheck: all checks passed' '❌ ⚠ ℹ → …' '服务器规划 RoCE网卡 全局参数' \
  'café ©' $'a\342\200\215b' $'\342\200\213\342\200\220\342\201\245\342\201\252' $'\330\233\330\235' \
  $'\357\277\275\357\277\274' 'plain ASCII with $ \ ` and " quotes' ''; do
  eq "clean: $text" "$text" "$(esc "$text")"
done

# Not UTF-8: each stray byte becomes U+FFFD, the rest is escaped as usual.
eq "stray bytes" $'a\357\277\275b\357\277\275' "$(esc $'a\377b\302')"
eq "a lone C1 byte" $'\357\277\275[2J' "$(esc $'\233[2J')"
eq "overlong ESC" $'\357\277\275\357\277\275' "$(esc $'\300\233')"
eq "stray byte and ESC" $'\357\277\275\\u{1b}' "$(esc $'\377\033')"

# Escaping twice changes nothing more.
once=$(esc $'\e]0;OWNED\a\e[31m \342\200\256 \302\233')
eq "idempotent" "$once" "$(esc "$once")"
eq "OSC title" '\u{1b}]0;OWNED\u{7}\u{1b}[31m' "$(esc $'\e]0;OWNED\a\e[31m')"

# A hostile LLDP neighbour name: nothing raw is left, the visible text stays.
lldp=$'leaf-1\e[4A\r\e[2K\342\234\205 gpu-003: precheck: all checks passed\342\200\246\e[8m'
out=$(esc "$lldp")
eq "lldp: nothing raw" clean "$(raw "$out")"
eq "lldp" 'leaf-1\u{1b}[4A\u{d}\u{1b}[2K✅ gpu-003: precheck: all checks passed…\u{1b}[8m' "$out"

# rg_console: the lines stay lines; on a plain console the escapes come first, then the
# symbols' ASCII forms and `?` for every other byte beyond ASCII.
# (One `?` per byte: 服 is three.)
text=$'\342\234\205 a\e[2K\n\342\200\256b \346\234\215'
RG_ASCII=no
eq "console utf-8" $'✅ a\\u{1b}[2K\n\\u{202e}b 服' "$(rg_console "$text")"
RG_ASCII=yes
eq "console ascii" $'[OK] a\\u{1b}[2K\n\\u{202e}b ???' "$(rg_console "$text")"
eq "console ascii: C1 escaped, not ?" '\u{9b}2J' "$(rg_console $'\302\2332J')"

# A long text with something to escape on every line takes one pass, not quadratic time.
long=""
for ((i = 0; i < 200; i++)); do long+="  mtu: 2 ports 1500 → 4200 ✅ (mlx5_$i)"$'\e'"[K"$'\n'; done
start=$SECONDS
rg_esc "$long" $'\n'
eq "long text: lines" 200 "$(printf '%s' "$REPLY" | grep -c 'u{1b}\[K$')"
eq "long text: within a second or two" yes "$([ $((SECONDS - start)) -le 2 ] && echo yes || echo no)"

done_testing

# shellcheck shell=bash
# assert.sh: what the function tests of the shell library share (sourced by parsers.sh, text.sh
# and settings.sh): eq counts each case as passed or failed, and done prints the line the test
# runner reads, "N passed, M failed", with exit status 1 when one failed.

pass=0 fail=0
eq() { # NAME WANT GOT
  if [ "$2" = "$3" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    printf 'FAIL %s\n  want: %q\n  got:  %q\n' "$1" "$2" "$3"
  fi
}

done_testing() {
  printf '%s passed, %s failed\n' "$pass" "$fail"
  [ "$fail" -eq 0 ]
}

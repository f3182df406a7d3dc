#!/bin/sh
# launcher.usage: command-line errors exit 2 with a usage text; good command lines run.
. "$(dirname "$0")/lib.sh"

expect() { # expect <exit code> <duetrun args...>
    want=$1
    shift
    "$duetrun" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq "$want" ] || fail "duetrun $*: exit $rc, want $want"
    if [ "$want" -eq 2 ]; then
        grep -q '^usage: duetrun' "$tmp/err" || fail "duetrun $*: no usage text on stderr"
    fi
}

unset DUET_SURELY_UNSET_VAR
expect 2
expect 2 -n 2
expect 2 -n 2 --
expect 2 -n 0 true
expect 2 -n 4097 true
expect 2 -n -1 true
expect 2 -n two true
expect 2 -n 2x true
expect 2 -n
expect 2 --bogus -n 1 true
expect 2 -n 1 -x
expect 2 -n 1 -x =value true
expect 2 -n 1 -x DUET_SURELY_UNSET_VAR true
expect 2 -n 1 --timeout -1 true
expect 2 -n 1 --timeout abc true
expect 2 -n 1 --timeout

expect 0 --help
grep -q '^usage: duetrun' "$tmp/out" || fail "--help prints no usage on stdout"
expect 0 -n 1 true
expect 0 -np 3 true
expect 0 -n 2 --timeout 0 -- true
expect 0 -n 4096 true
expect 1 -n 2 false
# options end at the program: its own options are its business
expect 0 -n 1 sh -c 'test "$1" = "-n"' sh -n

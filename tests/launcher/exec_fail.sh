#!/bin/sh
# launcher.exec_fail: a program that does not exist: the rank says why and exits 127,
# duetrun reports it and exits 1.
. "$(dirname "$0")/lib.sh"

prog=/nonexistent/duet-no-such-program
"$duetrun" -n 2 --timeout 30 "$prog" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "exit code $rc, want 1"
grep -q "^duetrun: rank [01]: cannot execute $prog: No such file or directory\$" "$tmp/err" ||
    fail "no message naming the program"
grep -q '^duetrun: rank [01] (pid [0-9]*) exited with status 127$' "$tmp/err" || fail "no failure line"

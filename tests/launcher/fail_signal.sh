#!/bin/sh
# launcher.fail_signal: rank 1 of 3 SIGKILLs itself while the others would run 60 s.
# duetrun must exit 128+9 within a few seconds, naming rank 1 and the signal.
. "$(dirname "$0")/lib.sh"

stopwatch_start
"$duetrun" -n 3 --timeout 30 sh -c '
    if [ "$DUET_RANK" = 1 ]; then kill -KILL $$; fi
    exec sleep 60' 2>"$tmp/err"
rc=$?
took=$(elapsed)

[ "$rc" -eq 137 ] || fail "exit code $rc, want 137"
grep -q '^duetrun: rank 1 (pid [0-9]*) killed by signal 9 (Killed)$' "$tmp/err" || fail "no line naming rank 1 and signal 9"
[ "$(grep -c '^duetrun:' "$tmp/err")" -eq 1 ] || fail "more than the cause reported"
[ "$took" -lt 10 ] || fail "took $took s"

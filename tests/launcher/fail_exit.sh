#!/bin/sh
# launcher.fail_exit: rank 2 of 4 exits 3 while the others would run 60 s; one of them
# (rank 3) ignores SIGTERM and so needs the SIGKILL after the grace period.
# duetrun must exit 1 within a few seconds, report rank 2 and nothing else.
. "$(dirname "$0")/lib.sh"

mkfifo "$tmp/ready" || fail "mkfifo"
stopwatch_start
# Rank 2 fails only once rank 3 ignores SIGTERM (a FIFO hands over the word, no sleep).
"$duetrun" -n 4 --timeout 30 -x TESTDIR="$tmp" sh -c '
    case $DUET_RANK in
    2) read go <"$TESTDIR/ready"; exit 3 ;;
    3) trap "" TERM; echo go >"$TESTDIR/ready"; exec sleep 60 ;;
    *) exec sleep 60 ;;
    esac' 2>"$tmp/err"
rc=$?
took=$(elapsed)

[ "$rc" -eq 1 ] || fail "exit code $rc, want 1"
grep -q '^duetrun: rank 2 (pid [0-9]*) exited with status 3$' "$tmp/err" || fail "no line naming rank 2"
[ "$(grep -c '^duetrun:' "$tmp/err")" -eq 1 ] || fail "more than the cause reported"
[ "$took" -lt 10 ] || fail "took $took s"

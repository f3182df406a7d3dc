#!/bin/sh
# launcher.timeout: --timeout ends ranks that run too long, names the ones still running
# and exits 124; a fractional timeout works.
. "$(dirname "$0")/lib.sh"

stopwatch_start
"$duetrun" -n 3 --timeout 1 sleep 60 2>"$tmp/err"
rc=$?
took=$(elapsed)
[ "$rc" -eq 124 ] || fail "exit code $rc, want 124"
grep -q '^duetrun: timeout after 1 s; ranks still running: 0 1 2$' "$tmp/err" || fail "no timeout line"
[ "$took" -lt 6 ] || fail "took $took s"

# rank 1 is done long before the deadline, so only 0 and 2 are still running
"$duetrun" -n 3 --timeout 1.5 sh -c '[ "$DUET_RANK" = 1 ] || exec sleep 60' 2>"$tmp/err"
rc=$?
[ "$rc" -eq 124 ] || fail "exit code $rc, want 124"
grep -q '^duetrun: timeout after 1.5 s; ranks still running: 0 2$' "$tmp/err" || fail "no timeout line for 0 2"
[ "$(grep -c '^duetrun:' "$tmp/err")" -eq 1 ] || fail "more than the timeout reported"

#!/bin/sh
# launcher.tag_output: with --tag-output every line of a rank's stdout and stderr comes
# out on duetrun's stdout and stderr as "[rank] line", in order, with a partial last line
# completed; without it the ranks write to duetrun's stdout directly.
. "$(dirname "$0")/lib.sh"

"$duetrun" -n 3 --tag-output sh -c '
    echo "hello $DUET_RANK"
    printf "two\nlines\n"
    echo "err $DUET_RANK" >&2
    printf "partial $DUET_RANK"' >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "exit code $rc, want 0"

for r in 0 1 2; do
    printf '[%s] hello %s\n[%s] two\n[%s] lines\n[%s] partial %s\n' $r $r $r $r $r $r >"$tmp/want"
    grep "^\[$r\] " "$tmp/out" >"$tmp/got"
    cmp -s "$tmp/want" "$tmp/got" || fail "stdout of rank $r: $(cat "$tmp/got")"
    grep -qx "\[$r\] err $r" "$tmp/err" || fail "no stderr line of rank $r"
done
[ "$(wc -l <"$tmp/out")" -eq 12 ] || fail "stdout has other lines: $(cat "$tmp/out")"
[ "$(wc -l <"$tmp/err")" -eq 3 ] || fail "stderr has other lines"

"$duetrun" -n 2 sh -c 'echo plain' >"$tmp/out" 2>"$tmp/err" || fail "plain run failed"
printf 'plain\nplain\n' | cmp -s - "$tmp/out" || fail "untagged output: $(cat "$tmp/out")"

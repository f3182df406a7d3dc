#!/bin/sh
# launcher.shm_cleanup: names of the job (/dev/shm/duet-<job part>-*, the job part a keyed
# hash of the secret: duet-info --shm-prefix) left by the ranks are removed when the job
# ends: one made by a rank that exited 0, one by a rank that was SIGKILLed. Files of other
# jobs stay.
. "$(dirname "$0")/lib.sh"
info=$(dirname "$duetrun")/duet-info

[ -d /dev/shm ] || { echo "no /dev/shm: skipped"; exit 77; }
other=/dev/shm/duet-launchertest-$$-other
: >"$other" || fail "cannot create $other"
cleanup_extra='rm -f "$other"; [ -s "$tmp/prefix.0" ] && rm -f /dev/shm/$(cat "$tmp/prefix.0")*'
mkfifo "$tmp/ready" || fail "mkfifo"

# rank 0 makes its file and exits 0; rank 1 waits for that, makes its own and dies
"$duetrun" -n 2 --timeout 30 -x TESTDIR="$tmp" -x INFO="$info" sh -c '
    p=$("$INFO" --shm-prefix) || exit 8
    echo "$p" >"$TESTDIR/prefix.$DUET_RANK"
    if [ "$DUET_RANK" = 0 ]; then
        : >"/dev/shm/${p}test0"
        echo done >"$TESTDIR/ready"
        exit 0
    fi
    read done <"$TESTDIR/ready"
    [ -f "/dev/shm/${p}test0" ] || exit 9
    : >"/dev/shm/${p}test1"
    kill -KILL $$' 2>"$tmp/err"
rc=$?

[ "$rc" -eq 137 ] || fail "exit code $rc, want 137"
prefix=$(cat "$tmp/prefix.0")
case $prefix in duet-????????????????????????-) ;; *) fail "prefix \"$prefix\" is not duet-<24 hex>-" ;; esac
cmp -s "$tmp/prefix.0" "$tmp/prefix.1" || fail "ranks got different prefixes"
left=$(ls /dev/shm | grep "^$prefix")
[ -z "$left" ] || fail "left in /dev/shm: $left"
[ -f "$other" ] || fail "removed another job's file"

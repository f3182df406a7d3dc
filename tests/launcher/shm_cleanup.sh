#!/bin/sh
# launcher.shm_cleanup: /dev/shm/duet-<secret>* left by the ranks are removed when the job
# ends: one made by a rank that exited 0, one by a rank that was SIGKILLed. Files of other
# jobs stay.
. "$(dirname "$0")/lib.sh"

[ -d /dev/shm ] || { echo "no /dev/shm: skipped"; exit 77; }
other=/dev/shm/duet-launchertest-$$-other
: >"$other" || fail "cannot create $other"
cleanup_extra='rm -f "$other"; [ -s "$tmp/secret.0" ] && rm -f /dev/shm/duet-$(cat "$tmp/secret.0")*'
mkfifo "$tmp/ready" || fail "mkfifo"

# rank 0 makes its file and exits 0; rank 1 waits for that, makes its own and dies
"$duetrun" -n 2 --timeout 30 -x TESTDIR="$tmp" sh -c '
    echo "$DUET_JOB_SECRET" >"$TESTDIR/secret.$DUET_RANK"
    if [ "$DUET_RANK" = 0 ]; then
        : >"/dev/shm/duet-$DUET_JOB_SECRET-test0"
        echo done >"$TESTDIR/ready"
        exit 0
    fi
    read done <"$TESTDIR/ready"
    [ -f "/dev/shm/duet-$DUET_JOB_SECRET-test0" ] || exit 9
    : >"/dev/shm/duet-$DUET_JOB_SECRET-test1"
    kill -KILL $$' 2>"$tmp/err"
rc=$?

[ "$rc" -eq 137 ] || fail "exit code $rc, want 137"
secret=$(cat "$tmp/secret.0")
cmp -s "$tmp/secret.0" "$tmp/secret.1" || fail "ranks got different secrets"
left=$(ls /dev/shm | grep "^duet-$secret")
[ -z "$left" ] || fail "left in /dev/shm: $left"
[ -f "$other" ] || fail "removed another job's file"

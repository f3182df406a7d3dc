#!/bin/sh
# launcher.signal_forward: SIGTERM sent to duetrun reaches every rank, whose trap writes a
# marker and exits 0; duetrun then exits 0.
. "$(dirname "$0")/lib.sh"

n=4
mkfifo "$tmp/events" || fail "mkfifo"
exec 3<>"$tmp/events" # read-write: opening does not block and no EOF between writers

# Each rank, once its trap is set, writes its parent's pid (duetrun's) to the FIFO; when
# duetrun ends, "exit <code>" follows. So every read below is answered, whatever happens.
{
    "$duetrun" -n $n --timeout 30 -x TESTDIR="$tmp" sh -c '
        trap "echo \$DUET_RANK >\"\$TESTDIR/got.\$DUET_RANK\"; kill \$nap; exit 0" TERM
        sleep 60 >/dev/null 2>&1 &
        nap=$!
        echo "$PPID" >"$TESTDIR/events"
        wait' 2>"$tmp/err"
    echo "exit $?" >"$tmp/events"
} &

i=0
while [ $i -lt $n ]; do
    read launcher <&3 || fail "events pipe"
    case $launcher in exit*) fail "duetrun ended early ($launcher)" ;; esac
    i=$((i + 1))
done
kill -TERM "$launcher" || fail "kill duetrun"
read result <&3
wait

[ "$result" = "exit 0" ] || fail "duetrun: $result, want exit 0"
i=0
while [ $i -lt $n ]; do
    [ -f "$tmp/got.$i" ] || fail "rank $i did not get SIGTERM"
    i=$((i + 1))
done

#!/bin/sh
# tools.duet_sim: duet-sim's command line. A million-rank sweep of every allreduce
# algorithm (each column there, a pick per row, analytic, fast); CSV; --help; where the
# model comes from (--alpha/--beta, DUET_TUNE_*, the tune file, the defaults); -a ALGO
# gives the same numbers as the full table; over hosts (--hosts, --host-sizes): the
# hierarchical columns, the net pair and where it comes from, hring picked for a large allreduce
# across 4 hosts at the default prices and never on one host, equal prices on both classes giving
# the one-host numbers; bad input exits 2 with a message.
#     sh duet_sim.sh <path to duet-sim>
set -u
sim=${1:?usage: sh $0 <path to duet-sim>}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/duet-sim-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
fail() { echo "FAIL: $*" >&2; [ -s "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err" >&2; exit 1; }
# keep the host's own tune file and settings out of it
export DUET_TUNE_FILE="$tmp/none.txt"
unset DUET_TUNE_ALPHA_US DUET_TUNE_BETA_GBPS DUET_TUNE_NET_ALPHA_US DUET_TUNE_NET_BETA_GBPS DUET_COLL_CHUNK DUET_COLL_SLOTS

run() { "$sim" "$@" >"$tmp/out" 2>"$tmp/err"; }

# a million ranks, 8 B .. 1 GiB by 4: 14 sizes, every algorithm, a pick on every row
t0=$(date +%s)
run allreduce -n 1048576 -b 8 -e 1G -f 4 || fail "allreduce -n 1048576: exit $?"
[ $(($(date +%s) - t0)) -le 5 ] || fail "allreduce -n 1048576 took more than 5 s"
algos="ring tree dbtree rd rhd oneshot twoshot"
header=$(grep -E '^ +bytes +count +method' "$tmp/out") || fail "no column header"
for a in $algos; do
    echo "$header" | grep -qw "$a" || fail "no column for $a in: $header"
done
grep -q 'model: alpha 0.5 us per message, beta 8 GB/s (from the defaults' "$tmp/out" ||
    fail "the header does not say the defaults were used"
rows=$(grep -cE '^ +[0-9]+ ' "$tmp/out")
[ "$rows" -eq 14 ] || fail "$rows rows, want 14"
bad=$(grep -E '^ +[0-9]+ ' "$tmp/out" | awk -v list=" $algos " '$3 != "analytic" || index(list, " " $NF " ") == 0')
[ -z "$bad" ] || fail "rows without an analytic method or a known pick: $bad"

# 2^24 ranks, every collective
for c in allreduce broadcast reduce allgather reducescatter alltoall; do
    run "$c" -n 16777216 -b 8 -e 1G -f 2 || fail "$c -n 16777216: exit $?"
done

# CSV: a header and one row per size, the pick last
run allreduce -n 1048576 -b 8 -e 1G -f 4 --alpha 0.2 --beta 10 --csv || fail "--csv: exit $?"
head -1 "$tmp/out" | grep -q '^collective,ranks,bytes,count,dtype,method,alpha_us,beta_gbps,ring_us,.*,pick$' ||
    fail "CSV header: $(head -1 "$tmp/out")"
[ "$(sed 1d "$tmp/out" | wc -l)" -eq 14 ] || fail "CSV rows: $(sed 1d "$tmp/out" | wc -l)"
sed 1d "$tmp/out" | awk -F, '$7 != 0.2 || $8 != 10 || $NF == "" { exit 1 }' || fail "CSV model or pick column"
cp "$tmp/out" "$tmp/all.csv"
# -a ring: the same numbers as the ring column
run allreduce -n 1048576 -b 8 -e 1G -f 4 --alpha 0.2 --beta 10 --csv -a ring || fail "-a ring: exit $?"
cut -d, -f9 "$tmp/all.csv" >"$tmp/ring_all"
cut -d, -f9 "$tmp/out" >"$tmp/ring_one"
cmp -s "$tmp/ring_all" "$tmp/ring_one" || fail "-a ring differs from the ring column"

# where the model comes from
printf 'alpha_us=0.25 beta_gbps=5.5\n' >"$tmp/tune.txt"
DUET_TUNE_FILE="$tmp/tune.txt" run allreduce -n 8 || fail "with a tune file: exit $?"
grep -q "alpha 0.25 us per message, beta 5.5 GB/s (from the tune file $tmp/tune.txt)" "$tmp/out" ||
    fail "tune file not used: $(grep model: "$tmp/out")"
DUET_TUNE_FILE="$tmp/tune.txt" DUET_TUNE_ALPHA_US=2 run allreduce -n 8 || fail "DUET_TUNE_ALPHA_US: exit $?"
grep -q "alpha 2 us per message, beta 5.5 GB/s" "$tmp/out" || fail "DUET_TUNE_ALPHA_US ignored"
DUET_TUNE_FILE="$tmp/tune.txt" run allreduce -n 8 --beta 20 || fail "--beta: exit $?"
grep -q "alpha 0.25 us per message, beta 20 GB/s (from --beta; alpha from the tune file" "$tmp/out" ||
    fail "--beta with the tune file: $(grep model: "$tmp/out")"
# small rank counts are simulated, as the tuner does
run broadcast -n 4 -b 8 -e 8 || fail "broadcast -n 4: exit $?"
grep -qE '^ +8 +2 +simulated ' "$tmp/out" || fail "4 ranks, 8 bytes are not simulated"
# an algorithm that cannot run: '-' and the reason
run allgather -n 6 -b 1K -e 1K || fail "allgather -n 6: exit $?"
grep -q '^# rd: -, cannot run: rd allgather needs a power-of-two rank count, not 6' "$tmp/out" ||
    fail "no reason for rd allgather at 6 ranks"

# over hosts: 16 ranks in blocks of 4
run allreduce -n 16 --hosts 4 -b 8 -e 16M -f 16 || fail "--hosts 4: exit $?"
grep -q '^# hosts: 4 (ranks in blocks); between hosts alpha 20 us per message, beta 0.5 GB/s (from the defaults' \
    "$tmp/out" || fail "--hosts: the header does not give the default net pair: $(grep hosts: "$tmp/out")"
header=$(grep -E '^ +bytes +count +method' "$tmp/out")
for a in hring hdbtree; do echo "$header" | grep -qw "$a" || fail "no column for $a over hosts"; done
last=$(grep -E '^ +8388608 ' "$tmp/out") || fail "no 8 MiB row over hosts"
[ "$(echo "$last" | awk '{print $NF}')" = hring ] || fail "8 MiB across 4 hosts: not hring: $last"
# one host: refused, with the reason, and never picked
run allreduce -n 16 -b 8 -e 16M -f 16 || fail "one host: exit $?"
grep -q '^# hring: -, cannot run: .*every rank is on one host' "$tmp/out" || fail "hring on one host: no reason"
grep -E '^ +[0-9]+ ' "$tmp/out" | awk '$NF ~ /^h/ { exit 1 }' || fail "a hierarchical pick on one host"
# equal prices on both classes: every flat algorithm costs what it costs on one host
run allreduce -n 12 -b 8 -e 4M -f 8 --alpha 0.5 --beta 8 --csv || fail "one host, csv: exit $?"
cut -d, -f1-15 "$tmp/out" >"$tmp/flat_one"
run allreduce -n 12 --hosts 3 -b 8 -e 4M -f 8 --alpha 0.5 --beta 8 --net-alpha 0.5 --net-beta 8 --csv ||
    fail "--hosts 3, equal prices: exit $?"
grep -q 'between hosts alpha 0.5 us per message, beta 8 GB/s (from --net-alpha and --net-beta)' "$tmp/err" ||
    fail "--csv over hosts: no hosts line on stderr: $(cat "$tmp/err")"
cut -d, -f1-15 "$tmp/out" >"$tmp/flat_hosts"
cmp -s "$tmp/flat_one" "$tmp/flat_hosts" || fail "equal prices over 3 hosts differ from one host:
$(diff "$tmp/flat_one" "$tmp/flat_hosts" | head -5)"
# -a hring: the same numbers as the hring column
run allreduce -n 16 --hosts 4 -b 8 -e 16M -f 16 --csv || fail "--hosts csv: exit $?"
col=$(head -1 "$tmp/out" | tr , '\n' | grep -n '^hring_us$' | cut -d: -f1)
[ -n "$col" ] || fail "no hring_us column: $(head -1 "$tmp/out")"
cut -d, -f"$col" "$tmp/out" | sed 1d >"$tmp/h_all"
run allreduce -n 16 --hosts 4 -b 8 -e 16M -f 16 --csv -a hring || fail "-a hring: exit $?"
cut -d, -f9 "$tmp/out" | sed 1d >"$tmp/h_one"
cmp -s "$tmp/h_all" "$tmp/h_one" || fail "-a hring differs from the hring column"
# the net pair from the settings and from the net tune file (DUET_TUNE_FILE + "-net")
DUET_TUNE_NET_ALPHA_US=7 DUET_TUNE_NET_BETA_GBPS=1.5 run broadcast -n 8 --hosts 2 || fail "DUET_TUNE_NET_*: exit $?"
grep -q 'between hosts alpha 7 us per message, beta 1.5 GB/s (from DUET_TUNE_NET_ALPHA_US and DUET_TUNE_NET_BETA_GBPS)' \
    "$tmp/out" || fail "DUET_TUNE_NET_* ignored: $(grep hosts: "$tmp/out")"
printf 'alpha_us=12 beta_gbps=1.25\n' >"$tmp/tune.txt-net"
DUET_TUNE_FILE="$tmp/tune.txt" run reduce -n 8 --hosts 2 || fail "net tune file: exit $?"
grep -q "between hosts alpha 12 us per message, beta 1.25 GB/s (from the tune file $tmp/tune.txt-net)" "$tmp/out" ||
    fail "net tune file not used: $(grep hosts: "$tmp/out")"
# uneven hosts, and a million ranks on 2^17 hosts (analytic, fast)
run allreduce -n 7 --host-sizes 1,2,4 -b 8 -e 1M -f 32 || fail "--host-sizes: exit $?"
grep -q '^# hosts: 3 (ranks in blocks of --host-sizes)' "$tmp/out" || fail "--host-sizes header"
t0=$(date +%s)
run allreduce -n 1048576 --hosts 131072 -b 8 -e 1G -f 4 || fail "a million ranks on hosts: exit $?"
[ $(($(date +%s) - t0)) -le 5 ] || fail "a million ranks on hosts took more than 5 s"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +analytic ' "$tmp/out")" -eq 14 ] || fail "a million ranks on hosts: rows"

run --help || fail "--help: exit $?"
grep -q '^usage: duet-sim' "$tmp/out" || fail "--help prints no usage"

# bad input: exit 2 and a message
expect_usage_error() {
    run "$@"
    rc=$?
    [ "$rc" -eq 2 ] || fail "duet-sim $*: exit $rc, want 2"
    grep -q '^duet-sim: ' "$tmp/err" || fail "duet-sim $*: no message on stderr"
}
expect_usage_error
expect_usage_error -n 4
expect_usage_error allreduc -n 4
expect_usage_error send -n 4
expect_usage_error allreduce
expect_usage_error allreduce -n 0
expect_usage_error allreduce -n -5
expect_usage_error allreduce -n 4x
expect_usage_error allreduce -n 3000000000
expect_usage_error allreduce -n 4 -b 1X
expect_usage_error allreduce -n 4 -b 1M -e 1K
expect_usage_error allreduce -n 4 -f 1
expect_usage_error allreduce -n 4 -d nosuch
expect_usage_error allreduce -n 4 -a nosuch
expect_usage_error allreduce -n 4 --alpha 0
expect_usage_error allreduce -n 4 --beta -3
expect_usage_error allreduce -n 4 --alpha x
expect_usage_error broadcast -n 4 -r 4
expect_usage_error allreduce broadcast -n 4
expect_usage_error allreduce -n 4 --bogus
expect_usage_error allreduce -n 4 --hosts 5
expect_usage_error allreduce -n 4 --hosts 0
expect_usage_error allreduce -n 4 --hosts 2 --host-sizes 2,2
expect_usage_error allreduce -n 4 --host-sizes 2,1
expect_usage_error allreduce -n 4 --host-sizes 2,0,2
expect_usage_error allreduce -n 4 --host-sizes 2,x
expect_usage_error allreduce -n 4 --hosts 2 --net-alpha 0
exit 0

#!/bin/sh
# tools.duet_sim: duet-sim's command line. A million-rank sweep of every allreduce
# algorithm (each column there, a pick per row, analytic, fast); CSV; --help; where the
# model comes from (--alpha/--beta, DUET_TUNE_*, the tune file, the defaults); -a ALGO
# gives the same numbers as the full table; bad input exits 2 with a message.
#     sh duet_sim.sh <path to duet-sim>
set -u
sim=${1:?usage: sh $0 <path to duet-sim>}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/duet-sim-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
fail() { echo "FAIL: $*" >&2; [ -s "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err" >&2; exit 1; }
# keep the host's own tune file and settings out of it
export DUET_TUNE_FILE="$tmp/none.txt"
unset DUET_TUNE_ALPHA_US DUET_TUNE_BETA_GBPS DUET_COLL_CHUNK DUET_COLL_SLOTS

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
printf 'alpha_us 0.25 beta_gbps 5.5\n' >"$tmp/tune.txt"
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
exit 0

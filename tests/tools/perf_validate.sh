#!/bin/sh
# tools.perf_validate: duet-perf --validate forces every algorithm of a collective in turn, in
# one process, and sets the tuner's predictions beside the medians measured. On 2 ranks over
# 8 B .. 4 KiB by 8, allreduce and all-to-all, with verification on: it must succeed with no
# wrong result; the CSV must hold, for every size, a row of each algorithm that runs on one
# host (allreduce: ring tree dbtree rd rhd oneshot twoshot; all-to-all: pairwise), with a
# positive prediction and time, and a row "auto" (the tuner's run); exactly one algorithm of
# a cell is marked fastest (the smallest time) and one picked, the one the TUNE log of the
# unforced run names. The forced runs must be the forced algorithms: the log's TUNE lines
# say "(forced by duet_coll_tune_force)" for each of them.
#     sh perf_validate.sh <duetrun> <duet-perf>
set -u
duetrun=${1:?usage: sh $0 <duetrun> <duet-perf>}
perf=${2:?}
name=validate; . "$(dirname "$0")/pinned_model.sh"

DUET_DEBUG=INFO DUET_DEBUG_SUBSYS=TUNE "$duetrun" -n 2 --timeout 100 "$perf" --validate allreduce alltoall \
    -b 8 -e 4K -f 8 --rounds 1 -n 3 --csv "$tmp/v.csv" >"$tmp/out" 2>"$tmp/err" ||
    fail "duet-perf --validate failed: $(tail -5 "$tmp/err")"
grep -q '^# summary: .* allreduce ' "$tmp/out" || fail "no allreduce summary line: $(tail -5 "$tmp/out")"
grep -q '^# summary: .* alltoall ' "$tmp/out" || fail "no alltoall summary line"
for want in "allreduce ring tree dbtree rd rhd oneshot twoshot auto" "alltoall pairwise auto"; do
    set -- $want
    coll=$1
    shift
    for bytes in 8 64 512 4096; do
        for algo in "$@"; do
            row=$(grep "^$coll,$bytes,$algo," "$tmp/v.csv") || fail "no row for $coll $bytes B $algo"
            echo "$row" | awk -F, -v a="$algo" '{ if ($5 <= 0 || (a != "auto" && $4 <= 0)) exit 1 }' ||
                fail "$coll $bytes B $algo: prediction or time not positive: $row"
        done
        # one fastest (the smallest time among the forced), one picked
        awk -F, -v c="$coll" -v b="$bytes" '
            $1 == c && $2 == b && $3 != "auto" {
                if (best == "" || $5 < t) { best = $3; t = $5 }
                if ($9 == 1) { nf++; f = $3 }
                if ($8 == 1) np++
            }
            END { exit !(nf == 1 && np == 1 && f == best) }' "$tmp/v.csv" ||
            fail "$coll $bytes B: not one fastest (the smallest) and one picked: $(grep "^$coll,$bytes," "$tmp/v.csv")"
    done
done
# every forced run's TUNE line says who forced it; the unforced run's pick is the picked row
for algo in ring tree dbtree rd rhd oneshot twoshot; do
    grep -q "\[TUNE\] allreduce [0-9]* bytes .*-> $algo (forced by duet_coll_tune_force)" "$tmp/err" ||
        fail "no TUNE line of a forced $algo allreduce"
done
pick=$(grep -E '\[TUNE\] allreduce 4096 bytes .* -> [a-z]+$' "$tmp/err" | head -1 | sed -E 's/.* -> ([a-z]+)$/\1/')
[ -n "$pick" ] || fail "no TUNE line of the unforced 4 KiB allreduce"
grep -q "^allreduce,4096,$pick,.*,1,[01]\$" "$tmp/v.csv" || fail "the tuner picked $pick, the CSV marks: $(grep '^allreduce,4096,' "$tmp/v.csv" | awk -F, '$8 == 1')"
# --timing call on a plain sweep (3 ranks: a root and a chain), and a bad --timing
"$duetrun" -n 3 --timeout 100 "$perf" broadcast -b 8 -e 4K -f 8 -n 5 --timing call --csv "$tmp/t.csv" \
    >"$tmp/tout" 2>"$tmp/terr" || fail "duet-perf broadcast --timing call failed: $(tail -5 "$tmp/terr")"
rows=$(awk -F, 'NR > 1 && $0 !~ /,-1$/ { n++ } END { print n + 0 }' "$tmp/t.csv")
[ "$rows" -eq 4 ] || fail "--timing call: $rows checked rows of 4: $(cat "$tmp/t.csv")"
if "$perf" broadcast --timing sometimes >"$tmp/bout" 2>&1; then fail "--timing sometimes was accepted"; fi
grep -q -- "--timing takes loop or call" "$tmp/bout" || fail "--timing sometimes: $(cat "$tmp/bout")"
echo "perf_validate: ok"

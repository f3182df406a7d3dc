#!/bin/sh
# tools.perf_calibrate: duet-perf --calibrate measures alpha and beta, forces every algorithm
# of the collectives named over a sweep, fits the model's terms to the medians and saves
# them. On 2 ranks, allreduce and reduce-scatter over 64 B .. 1 MiB by 4, 2 rounds: it must
# succeed and print every term (alpha_us as measured and kept; step_us beta_gbps copy_gbps
# mem_gbps reduce_gbps and the call terms of the two collectives swept, with their spreads;
# none for a collective not swept), the knee and the fit's error; the tune file's line for this machine must then
# hold the fitted terms (fit_err > 0, alpha and beta positive); a later run's TUNE lines show
# the fitted model, and duet-sim reads the same terms from the file.
#     sh perf_calibrate.sh <duetrun> <duet-perf> <duet-sim>
set -u
duetrun=${1:?usage: sh $0 <duetrun> <duet-perf> <duet-sim>}
perf=${2:?}
sim=${3:?}
name=calibrate; . "$(dirname "$0")/pinned_model.sh"
rm -f "$tmp/tune.txt" # measured here, not pinned

"$duetrun" -n 2 --timeout 100 "$perf" --calibrate allreduce reducescatter -b 64 -e 1M -f 4 --rounds 2 -n 3 \
    >"$tmp/out" 2>"$tmp/err" || fail "duet-perf --calibrate failed: $(tail -5 "$tmp/err")"
grep -Eq "^  alpha_us +[0-9.e+-]+ +measured, kept" "$tmp/out" || fail "alpha is not the measured one: $(cat "$tmp/out")"
grep -Eq "^calibrate: 2 ranks: alpha [0-9.]+ us \(ping-pong" "$tmp/out" || fail "no ping-pong alpha: $(head -1 "$tmp/out")"
for term in step_us beta_gbps copy_gbps mem_gbps reduce_gbps call_allreduce_us call_reducescatter_us; do
    grep -Eq "^  $term +[0-9.e+-]+ +spread +[0-9]+ %" "$tmp/out" || fail "no line for $term: $(cat "$tmp/out")"
done
! grep -Eq '^  call_broadcast_us ' "$tmp/out" || fail "a call term for broadcast, which was not swept"
grep -Eq '^  knee_MiB ' "$tmp/out" || fail "no knee line"
grep -Eq '^  fit error: median [0-9.]+ %, worst [0-9]+ %' "$tmp/out" || fail "no fit error line: $(cat "$tmp/out")"
grep -q "^calibrate: saved in $tmp/tune.txt" "$tmp/out" || fail "not saved: $(tail -2 "$tmp/out")"
line=$(grep -v '^#' "$tmp/tune.txt" | grep 'ranks=2 hosts=1') || fail "no line for 2 ranks: $(cat "$tmp/tune.txt")"
echo "$line" | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
    END { exit !(v["fit_err"] > 0 && v["alpha_us"] > 0 && v["beta_gbps"] > 0 && ("step_us" in v) && ("call_allreduce_us" in v) &&
                 ("knee_bytes" in v) && ("copy_gbps" in v) && ("mem_gbps" in v) && ("reduce_gbps" in v)) }' ||
    fail "the tune file's line lacks the fitted terms: $line"
# the fit's median error, as printed, is the file's fit_err
printed=$(sed -n 's/^  fit error: median \([0-9.]*\) %.*/\1/p' "$tmp/out")
echo "$line" | awk -v p="$printed" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "fit_err") f = kv[2] } }
    END { d = f * 100 - p; if (d < 0) d = -d; exit !(d < 0.06) }' || fail "fit_err in the file is not the printed $printed %: $line"

# a later run uses them
DUET_DEBUG=INFO DUET_DEBUG_SUBSYS=TUNE "$duetrun" -n 2 --timeout 60 "$perf" allreduce -b 1M -e 1M -n 2 -w 1 \
    >/dev/null 2>"$tmp/err2" || fail "duet-perf after the calibration failed: $(tail -3 "$tmp/err2")"
grep -q '\[TUNE\] allreduce 1048576 bytes float, 2 ranks (alpha .*step .*fit err [0-9]*%)' "$tmp/err2" ||
    fail "the TUNE line does not show the fitted model: $(grep -m1 'TUNE\] allreduce' "$tmp/err2")"
"$sim" allreduce -n 2 -b 1M -e 1M >"$tmp/sim" 2>&1 || fail "duet-sim failed: $(cat "$tmp/sim")"
grep -q '^# fitted terms: call ' "$tmp/sim" || fail "duet-sim does not read the fitted terms: $(head -5 "$tmp/sim")"
# at 3 ranks alpha is taken around the ring of the host's ranks, and kept by the fit: the
# printed alpha is the fitted model's and the tune file's line for 3 ranks
"$duetrun" -n 3 --timeout 100 "$perf" --calibrate reducescatter allgather -b 64 -e 256K -f 8 --rounds 1 -n 2 \
    >"$tmp/out3" 2>"$tmp/err3" || fail "duet-perf --calibrate at 3 ranks failed: $(tail -5 "$tmp/err3")"
ring=$(sed -n 's/^calibrate: 3 ranks: alpha \([0-9.]*\) us (a token around the ring.*/\1/p' "$tmp/out3")
[ -n "$ring" ] || fail "no ring alpha at 3 ranks: $(head -1 "$tmp/out3")"
kept=$(sed -n 's/^  alpha_us *\([0-9.e+-]*\) *measured, kept.*/\1/p' "$tmp/out3")
awk -v a="$ring" -v b="$kept" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 0.0005 + 0.001 * a) }' ||
    fail "the fit moved alpha: measured $ring, fitted $kept"
line3=$(grep -v '^#' "$tmp/tune.txt" | grep 'ranks=3 hosts=1') || fail "no line for 3 ranks: $(cat "$tmp/tune.txt")"
echo "$line3" | awk -v a="$ring" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "alpha_us") f = kv[2] } }
    END { d = f - a; if (d < 0) d = -d; exit !(d <= 0.0005 + 0.001 * a) }' || fail "the file's alpha is not $ring: $line3"
exit 0

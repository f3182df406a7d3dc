#!/bin/sh
# tools.duet_sim_tuner: duet-sim reports what the tuner decides. A real run (duet-perf under
# duetrun, DUET_DEBUG_SUBSYS=TUNE) logs, per call shape, each candidate's predicted time
# and the pick; duet-sim, given the same model (one tune file for both) and placement (--heap:
# duet-perf's buffers are in the heap), must print the
# same method, times (to the log's 0.01 us) and pick for every size, on both sides of the
# size where the tuner stops simulating; then the same over 2 hosts (DUET_COLL_RANKS_PER_HOST=2,
# duet-sim --hosts 2), where the tuner picks hierarchical algorithms where the model says so,
# and never on one host.
#     sh duet_sim_tuner.sh <duet-sim> <duetrun> <duet-perf>
set -u
sim=${1:?usage: sh $0 <duet-sim> <duetrun> <duet-perf>}
duetrun=${2:?}
perf=${3:?}
name=sim-tuner; . "$(dirname "$0")/pinned_model.sh"

check() { # check <collective> <ranks> <duet-perf size flags...>
    coll=$1 n=$2
    shift 2
    DUET_DEBUG=INFO DUET_DEBUG_SUBSYS=TUNE "$duetrun" -n "$n" --timeout 60 \
        "$perf" "$coll" "$@" -n 2 -w 1 -c 0 >"$tmp/perf.out" 2>"$tmp/perf.err" ||
        fail "$coll on $n ranks: duet-perf failed: $(tail -3 "$tmp/perf.err")"
    # rank 0's TUNE lines of the float calls (not the placement exchanges, uint8): "<bytes> <method>
    # <algo>=<us> ... <pick>", one per call shape
    grep -E '^[^ ]*:0 \[TUNE\] [a-z]+ [0-9]+ bytes float, ' "$tmp/perf.err" |
        sed -E 's/^.*\[TUNE\] [a-z]+ ([0-9]+) bytes [a-z0-9]+, [0-9]+ ranks( on [0-9]+ hosts \([^)]*\))?, [a-z ,]+( \(agreed by all ranks\))?, ([a-z -]+):(.*) -> ([a-z]+).*$/\1|\4|\5|\6/' |
        sort -u -t'|' -k1,1n >"$tmp/tuner"
    [ -s "$tmp/tuner" ] || fail "$coll on $n ranks: no TUNE lines in the log"
    # shellcheck disable=SC2086 # SIMFLAGS: words
    "$sim" "$coll" -n "$n" --heap ${SIMFLAGS:-} "$@" --csv >"$tmp/sim.csv" 2>"$tmp/sim.err" || fail "duet-sim $coll -n $n failed"
    # the CSV row of the same call: bytes of the call = count x 4 (float)
    awk -F, -v tuner="$tmp/tuner" '
        NR == 1 { for (i = 9; i < NF; i++) { name[i] = $i; sub(/_us$/, "", name[i]) } last = NF - 1; next }
        { row[$4 * 4] = $0 }
        END {
            bad = 0; seen = 0
            while ((getline line < tuner) > 0) {
                split(line, f, "|"); bytes = f[1]; method = f[2]; pick = f[4]
                if (!(bytes in row)) { print "no duet-sim row for " bytes " bytes"; bad = 1; continue }
                split(row[bytes], c, ",")
                if (c[6] != method) { print bytes ": method " c[6] " vs the tuner " method; bad = 1 }
                if (c[NF_of(row[bytes])] != pick) { print bytes ": pick " c[NF_of(row[bytes])] " vs the tuner " pick; bad = 1 }
                n = split(f[3], kv, " ")
                for (j = 1; j <= n; j++) {
                    split(kv[j], p, "="); us = p[2]; sub(/us$/, "", us)
                    for (i = 9; i <= last; i++) if (name[i] == p[1]) {
                        d = c[i] - us; if (d < 0) d = -d
                        if (d > 0.0051 + 1e-4 * us) { print bytes ": " p[1] " " c[i] " vs the tuner " us; bad = 1 }
                    }
                }
                seen++
            }
            if (seen == 0) { print "nothing compared"; bad = 1 }
            exit bad
        }
        function NF_of(r,   t) { return split(r, t, ",") }' "$tmp/sim.csv" >"$tmp/diff" ||
        fail "$coll on $n ranks: duet-sim and the tuner differ:
$(cat "$tmp/diff")"
}

check allreduce 2 -b 8 -e 4M -f 8
# 4 B .. 64 MiB: at 64 MiB on 4 ranks the tuner extends its simulation in size
check allreduce 4 -b 4 -e 64M -f 16
check broadcast 4 -b 8 -e 4M -f 8
check allgather 4 -b 8 -e 4M -f 8
# one host: the hierarchical algorithms are never picked (the choices above are the flat ones)
grep -q '|h[a-z]*$' "$tmp/tuner" && fail "a hierarchical pick on one host: $(grep '|h[a-z]*$' "$tmp/tuner")"

# over hosts: 2 hosts of 2 ranks for the collectives (DUET_COLL_RANKS_PER_HOST), duet-sim --hosts 2,
# one net pair for both; the tuner's TUNE lines name the hosts and both pairs, and the
# hierarchical algorithms are candidates it picks where the model says so
export DUET_COLL_RANKS_PER_HOST=2 DUET_TUNE_NET_ALPHA_US=20 DUET_TUNE_NET_BETA_GBPS=0.5
SIMFLAGS="--hosts 2"
check allreduce 4 -b 8 -e 4M -f 8
grep -q 'allreduce .* 4 ranks on 2 hosts (shm 0.3us 6GB/s, net 20us 0.5GB/s), ' "$tmp/perf.err" ||
    fail "the TUNE line over hosts does not give both pairs: $(grep -m1 'TUNE\] allreduce' "$tmp/perf.err")"
grep -q '^2097152|.*|hring$' "$tmp/tuner" || fail "2 MiB allreduce across 2 hosts: not hring: $(tail -1 "$tmp/tuner")"
grep -q '^8|.*|hring$' "$tmp/tuner" && fail "8 B allreduce across 2 hosts: hring (the model says rd or oneshot)"
check broadcast 4 -b 8 -e 4M -f 8
grep -q '|htree$' "$tmp/tuner" || fail "broadcast across 2 hosts: htree never picked"
exit 0

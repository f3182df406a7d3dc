/*
 * test_sched.c — every algorithm's schedules, run together in the simulator
 * (src/coll/duet_coll_sim.c): matched messages, no deadlock under the executor's rules, no
 * race (in place included), and every result element right — each contribution reduced
 * exactly once.
 *
 * Matrix: every row of duet_coll_algos[] x ranks 1..9, 12, 16, 17, 31, 32, 64 x counts 0, 1,
 * 2, 7, n-1, n, n+1 (128 KiB chunks: one message per peer and block) and two counts of
 * several chunk columns with 64-byte chunks (three columns of the whole buffer; and, for
 * one-buffer collectives, three per 1/n part: ring segments, halvings, two-shot parts; each
 * with an odd tail) x element sizes 1, 2, 4, 8 x in place / out of place x roots 0, 1, n-1
 * (broadcast, reduce) x 2 and 4 slots. Fewer at scale: 16 and 17 ranks run element sizes
 * 1 and 8 (counts 0..n+1 with 8 only), 31 ranks and up size 8 only; calls of more than
 * MAX_STEPS steps in all (the n^2-message algorithms with many columns) are skipped and
 * counted. Then "long" calls — more messages on one link than the executor's 512-step
 * window — at 2, 3 and 8 ranks (10000 8-byte elements, 64-byte chunks, 4 slots).
 * Algorithms that refuse a call (DUET_ERR_UNSUPPORTED) must refuse exactly the expected set
 * (rd allgather and rhd reduce-scatter off powers of two, alltoall in place).
 *
 * Then the clock: the exact makespan of hand-computed cases (slots and acks included),
 * ring allreduce time linear in the size, rd and one-shot beating ring for 8 bytes and ring
 * beating rd for 64 MiB at 8 ranks (alpha 1 us, 10 GB/s); and hand-built broken schedules
 * the simulator must catch: mismatched sizes, unmatched messages, a deadlocking order, a
 * deadlock that only slots or only the window cause, a contribution reduced twice, an
 * in-place race, ranges, deps, writes into the send buffer; and ring allreduce's schedule
 * mutated: without the receives' deps it is still ordered (through the other ranks),
 * without the forwarding sends' deps it races.
 *
 * Usage: test_sched [-v]   (-v: print every failing case, not only the first twelve)
 * Each failing case is printed with its shape and what the simulator found; a summary table
 * per algorithm (cases, not applicable, failed, skipped, kinds of problems) and the first
 * failure of each kind follow. Exit 1 on any failure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "coll/duet_coll_sim.h"

static int g_failed, g_verbose;
#define EXPECT(cond, ...)                                                             \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            g_failed++;                                                               \
        }                                                                             \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int pow2(int n) { return (n & (n - 1)) == 0; }

static int is_hier(const duet_coll_algo_t *al) { return al->name[0] == 'h'; } /* hring hdbtree htree */

/* The calls an algorithm must refuse (hier: the host map, NULL for one host). */
static int expected_na(const duet_coll_algo_t *al, int n, int in_place, const int *host)
{
    if (is_hier(al)) { /* one host: nothing hierarchical to do */
        int hosts = 0;
        for (int r = 0; host && r < n; r++) hosts |= host[r] != host[0];
        return !hosts;
    }
    if (al->kind == DUET_COLL_ALLGATHER && strcmp(al->name, "rd") == 0) return !pow2(n);
    if (al->kind == DUET_COLL_REDUCE_SCATTER && strcmp(al->name, "rhd") == 0) return !pow2(n);
    if (al->kind == DUET_COLL_ALLTOALL) return in_place && n > 1;
    return 0;
}

/* ------------------------------------------------------------------------------- the matrix */
typedef struct {
    int cases, na, failed, skipped;
    unsigned errors;
    double sim_s;
    char first[640]; /* the first failing case and what was found */
} algo_stats_t;

static algo_stats_t g_stats[64];
static int g_printed;

static const char *err_names(unsigned e, char *b, size_t cap)
{
    static const char *names[] = {"build", "step", "range", "match", "deadlock", "race", "data"};
    size_t used = 0;
    b[0] = '\0';
    for (int i = 0; i < 7; i++)
        if (e & (1u << i)) used += (size_t)snprintf(b + used, cap - used, "%s%s", used ? "," : "", names[i]);
    return b;
}

static void run_case_on(int ai, int n, size_t count, size_t elem, size_t chunk, int in_place, int root, int slots,
                        const int *host, int nhosts)
{
    const duet_coll_algo_t *al = &duet_coll_algos[ai];
    algo_stats_t *st = &g_stats[ai];
    duet_coll_args_t a = {al->kind, 0, n, root, count, elem, chunk, in_place, 0, host, nhosts, 0};
    duet_sim_model_t m;
    duet_sim_model_default(&m);
    m.slots = slots;
    duet_sim_result_t res;
    double t0 = now_s();
    duet_status_t s = duet_coll_simulate(al, &a, 1, &m, &res, NULL);
    st->sim_s += now_s() - t0;
    st->cases++;
    int want_na = expected_na(al, n, in_place, host);
    char what[240], hosts[80] = "";
    for (int r = 0, used = 0; host && r < n && used < (int)sizeof hosts - 4; r++)
        used += snprintf(hosts + used, sizeof hosts - (size_t)used, "%s%d", r ? "," : " hosts=", host[r]);
    snprintf(what, sizeof what, "%s %s n=%d count=%zu elem=%zu chunk=%zu %s root=%d slots=%d%s", al->name,
             duet_coll_kind_name(al->kind), n, count, elem, chunk, in_place ? "in-place" : "out-of-place", root, slots,
             hosts);
    if (s == DUET_ERR_UNSUPPORTED) {
        st->na++;
        EXPECT(want_na, "%s: unexpectedly not applicable: %s", what, duet_last_error());
        return;
    }
    EXPECT(s == DUET_OK, "%s: duet_coll_simulate returned %s: %s", what, duet_status_str(s), duet_last_error());
    if (s != DUET_OK) return;
    EXPECT(!want_na, "%s: should be refused (not applicable) but was simulated", what);
    if (res.ok) return;
    st->failed++;
    g_failed++;
    char names[64];
    if (!st->errors || (res.errors & ~st->errors)) /* keep one example of each new kind of problem */
        snprintf(st->first + strlen(st->first), sizeof st->first - strlen(st->first), "  [%s] %s: %.300s\n",
                 err_names(res.errors & ~st->errors, names, sizeof names), what, res.error);
    st->errors |= res.errors;
    if (g_verbose || g_printed < 12) {
        g_printed++;
        fprintf(stderr, "FAIL %s [%s] (%d problems):\n  %s\n", what, err_names(res.errors, names, sizeof names),
                res.nerrors, res.error);
    }
}

static void run_case(int ai, int n, size_t count, size_t elem, size_t chunk, int in_place, int root, int slots)
{
    run_case_on(ai, n, count, elem, chunk, in_place, root, slots, NULL, 0);
}

/* Steps of the whole call, estimated from rank 0's schedule: the matrix skips the calls
 * that would take the simulator long (the n^2-message algorithms at 64 ranks with many
 * chunk columns); smaller shapes cover what they would. */
#define MAX_STEPS 100000
static long estimate_steps(const duet_coll_algo_t *al, const duet_coll_args_t *a)
{
    duet_sched_t sc;
    duet_sched_init(&sc, 0, a->nranks, a->elem);
    duet_status_t s = al->build(a, &sc);
    long steps = s == DUET_OK ? (long)sc.nsteps * a->nranks : 0;
    duet_sched_free(&sc);
    return steps;
}

/* The sampled counts: 0 .. n+1, one message per peer and block (128 KiB chunks); then chunk
 * columns with 64-byte chunks: three of the whole buffer, and (one buffer cut in n parts: ring
 * segments, halvings, two-shot parts) three per part, each with an odd tail (not for
 * collectives whose count is per block: last_whole 0). */
static void sample_counts(size_t counts[9], int n, size_t per_chunk, int last_whole)
{
    const size_t c[9] = {0, 1, 2, 7, (size_t)n - 1, (size_t)n, (size_t)n + 1, 3 * per_chunk + 5,
                         last_whole ? 3 * per_chunk * (size_t)n + 5 : 0};
    memcpy(counts, c, sizeof c);
}

/* Count ci is skipped: a repeat of an earlier one, or (big n) not a chunk column unless 8-byte. */
static int skip_count(const size_t counts[9], int ci, int big, size_t elem)
{
    for (int cj = 0; cj < ci; cj++)
        if (ci > 0 && counts[cj] == counts[ci]) return 1;
    return big && ci < 7 && elem != 8;
}

static int root_repeats(const int *roots, int ri)
{
    for (int rj = 0; rj < ri; rj++)
        if (roots[rj] == roots[ri]) return 1;
    return 0;
}

static void matrix(void)
{
    static const int ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 31, 32, 64};
    static const size_t elems[] = {1, 2, 4, 8};
    for (int ai = 0; ai < duet_coll_nalgos; ai++) {
        const duet_coll_algo_t *al = &duet_coll_algos[ai];
        int rooted = al->kind == DUET_COLL_BROADCAST || al->kind == DUET_COLL_REDUCE;
        int blocks = al->kind == DUET_COLL_ALLGATHER || al->kind == DUET_COLL_REDUCE_SCATTER ||
                     al->kind == DUET_COLL_ALLTOALL; /* count is per block */
        for (size_t ni = 0; ni < DUET_ARRAY_LEN(ns); ni++) {
            int n = ns[ni], big = n >= 16, huge = n >= 31;
            int roots[3] = {0, 1 % n, n - 1}, nroots = rooted ? 3 : 1;
            for (size_t ei = 0; ei < DUET_ARRAY_LEN(elems); ei++) {
                size_t elem = elems[ei], per_chunk = 64 / elem;
                if ((big && elem != 1 && elem != 8) || (huge && elem != 8)) continue;
                size_t counts[9];
                sample_counts(counts, n, per_chunk, !blocks);
                for (int ci = 0; ci < 9; ci++) {
                    if (skip_count(counts, ci, big, elem)) continue;
                    size_t chunk = ci >= 7 ? 64 : 128 * 1024;
                    for (int ip = 0; ip < 2; ip++)
                        for (int ri = 0; ri < nroots; ri++) {
                            if (root_repeats(roots, ri)) continue;
                            duet_coll_args_t a = {al->kind, 0, n, roots[ri], counts[ci], elem, chunk, ip, 0, NULL, 0, 0};
                            if (estimate_steps(al, &a) > MAX_STEPS) {
                                g_stats[ai].skipped += 2;
                                continue;
                            }
                            for (int slots = 2; slots <= 4; slots += 2)
                                run_case(ai, n, counts[ci], elem, chunk, ip, roots[ri], slots);
                        }
                }
            }
        }
    }
}

/* The hierarchical algorithms over host maps: even hosts, uneven ones (the smallest host
 * decides the parts, larger hosts' extra ranks only send and receive inside), hosts whose
 * ranks interleave, sparse host ids, one host (refused), rank counts that are not powers of
 * two; every count shape of the flat matrix, element sizes 1 and 8 (2 and 4 at 4 ranks),
 * in place and not, roots 0, 1 and n-1, 2 and 4 slots. */
static void hier_matrix(void)
{
    static const struct {
        int n, nhosts;
        int host[16];
    } maps[] = {
        {2, 2, {0, 1}},                                          /* one rank per host */
        {4, 2, {0, 0, 1, 1}},                                    /* 2 x 2 */
        {6, 3, {0, 0, 1, 1, 2, 2}},                              /* 3 x 2 */
        {6, 2, {0, 0, 0, 1, 1, 1}},                              /* 2 x 3 */
        {3, 2, {0, 1, 1}},                                       /* 1 + 2 */
        {4, 2, {0, 0, 0, 1}},                                    /* 3 + 1 */
        {6, 3, {0, 0, 1, 1, 1, 2}},                              /* 2 + 3 + 1 */
        {7, 3, {0, 1, 1, 2, 2, 2, 2}},                           /* 1 + 2 + 4 */
        {5, 2, {0, 1, 0, 1, 0}},                                 /* interleaved, 3 + 2 */
        {4, 9, {7, 7, 2, 2}},                                    /* sparse ids: 2 x 2 */
        {3, 1, {0, 0, 0}},                                       /* one host: refused */
        {15, 5, {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4}}, /* 5 x 3 */
        {16, 4, {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}},
    };
    for (int ai = 0; ai < duet_coll_nalgos; ai++) {
        const duet_coll_algo_t *al = &duet_coll_algos[ai];
        if (!is_hier(al)) continue;
        int rooted = al->kind == DUET_COLL_BROADCAST || al->kind == DUET_COLL_REDUCE;
        for (size_t mi = 0; mi < DUET_ARRAY_LEN(maps); mi++) {
            int n = maps[mi].n, big = n >= 12;
            int roots[3] = {0, 1 % n, n - 1}, nroots = rooted ? 3 : 1;
            for (size_t elem = 1; elem <= 8; elem *= 2) {
                if ((elem == 2 || elem == 4) && n != 4) continue;
                size_t per_chunk = 64 / elem;
                size_t counts[9];
                sample_counts(counts, n, per_chunk, 1);
                for (int ci = 0; ci < 9; ci++) {
                    if (skip_count(counts, ci, big, elem)) continue;
                    size_t chunk = ci >= 7 ? 64 : 128 * 1024;
                    for (int ip = 0; ip < 2; ip++)
                        for (int ri = 0; ri < nroots; ri++) {
                            if (root_repeats(roots, ri)) continue;
                            for (int slots = 2; slots <= 4; slots += 2)
                                run_case_on(ai, n, counts[ci], elem, chunk, ip, roots[ri], slots, maps[mi].host,
                                            maps[mi].nhosts);
                        }
                }
            }
        }
    }
}

/* Calls with more messages on one link than the executor's window holds. */
static void long_calls(void)
{
    static const int ns[] = {2, 3, 8};
    for (int ai = 0; ai < duet_coll_nalgos; ai++) {
        int rooted = duet_coll_algos[ai].kind == DUET_COLL_BROADCAST || duet_coll_algos[ai].kind == DUET_COLL_REDUCE;
        for (size_t ni = 0; ni < DUET_ARRAY_LEN(ns); ni++)
            for (int ip = 0; ip < 2; ip++)
                run_case(ai, ns[ni], 10000, 8, 64, ip, rooted ? ns[ni] - 1 : 0, 4);
    }
}

static void print_matrix_summary(void)
{
    printf("\n%-10s %-14s %7s %5s %7s %7s %8s  %s\n", "algorithm", "collective", "cases", "n/a", "failed",
           "skipped", "sim s", "problems");
    for (int ai = 0; ai < duet_coll_nalgos; ai++) {
        const algo_stats_t *st = &g_stats[ai];
        char names[64];
        printf("%-10s %-14s %7d %5d %7d %7d %8.3f  %s\n", duet_coll_algos[ai].name,
               duet_coll_kind_name(duet_coll_algos[ai].kind), st->cases, st->na, st->failed, st->skipped, st->sim_s,
               st->errors ? err_names(st->errors, names, sizeof names) : "-");
    }
    for (int ai = 0; ai < duet_coll_nalgos; ai++)
        if (g_stats[ai].first[0]) printf("\n%s %s, first failures:\n%s", duet_coll_algos[ai].name,
                                         duet_coll_kind_name(duet_coll_algos[ai].kind), g_stats[ai].first);
}

/* ------------------------------------------------------------------------------- the clock */
static double sim_time(const char *name, duet_coll_kind_t kind, int n, size_t bytes, const duet_sim_model_t *m)
{
    const duet_coll_algo_t *al = duet_sim_find_algo(kind, name);
    duet_coll_args_t a = {kind, 0, n, 0, bytes / 8, 8, 128 * 1024, 0, 0, NULL, 0, 0};
    duet_sim_result_t res;
    int ok = al && duet_coll_simulate(al, &a, 0, m, &res, NULL) == DUET_OK && res.ok && res.time_us > 0;
    EXPECT(ok, "timing %s %s n=%d %zu B did not simulate cleanly: %s", name, duet_coll_kind_name(kind), n, bytes,
           al ? res.error : "no such algorithm");
    return ok ? res.time_us : -1;
}

static void clock_model(void)
{
    duet_sim_model_t m = {.alpha_us = 1.0, .beta_us_per_byte = 1e-4, .gamma_us_per_byte = 1e-5, .slots = 4}; /* alpha 1 us, 10 GB/s, 100 GB/s locally */

    /* exact: one 1000-byte message: injected 0..0.1, arrives 1.1, copied out by 1.11; with
     * one slot a second message waits for the ack (1.11 + 1), then the same again */
    {
        duet_sim_model_t m1 = {.alpha_us = 1.0, .beta_us_per_byte = 1e-4, .gamma_us_per_byte = 1e-5, .slots = 1};
        duet_coll_args_t a = {DUET_COLL_BROADCAST, 0, 2, 0, 1000, 1, 1000, 1, 0, NULL, 0, 0};
        duet_sched_t sc[2];
        duet_sim_result_t res;
        duet_sim_rank_t rk[2];
        for (int msgs = 1; msgs <= 2; msgs++) {
            a.count = 1000 * (size_t)msgs;
            for (int r = 0; r < 2; r++) duet_sched_init(&sc[r], r, 2, 1);
            for (int k = 0; k < msgs; k++) {
                duet_sched_send(&sc[0], 1, DUET_BUF_SEND, 1000 * (size_t)k, 1000, -1);
                duet_sched_recv(&sc[1], 0, DUET_BUF_RECV, 1000 * (size_t)k, 1000, -1);
            }
            EXPECT(duet_sim_run(sc, &a, 1, &m1, &res, rk) == DUET_OK && res.ok, "%s", res.error);
            double want = msgs == 1 ? 1.11 : 1.11 + 1.0 + 1.11;
            EXPECT(res.time_us > want - 1e-9 && res.time_us < want + 1e-9, "%d message(s): makespan %.6f us, want %.6f",
                   msgs, res.time_us, want);
            EXPECT(rk[0].msgs_sent == (uint64_t)msgs && rk[1].msgs_recvd == (uint64_t)msgs &&
                   rk[0].bytes_sent == 1000 * (uint64_t)msgs && rk[1].bytes_recvd == 1000 * (uint64_t)msgs,
                   "traffic %" PRIu64 " %" PRIu64, rk[0].msgs_sent, rk[1].msgs_recvd);
            for (int r = 0; r < 2; r++) duet_sched_free(&sc[r]);
        }
    }

    int n = 8;
    double r16 = sim_time("ring", DUET_COLL_ALLREDUCE, n, 16u << 20, &m);
    double r32 = sim_time("ring", DUET_COLL_ALLREDUCE, n, 32u << 20, &m);
    double r64 = sim_time("ring", DUET_COLL_ALLREDUCE, n, 64u << 20, &m);
    double bound = 2.0 * (n - 1) / n * (double)(64u << 20) * m.beta_us_per_byte;
    printf("\nring allreduce, 8 ranks: 16 MiB %.0f us, 32 MiB %.0f us, 64 MiB %.0f us (bandwidth bound %.0f us)\n",
           r16, r32, r64, bound);
    EXPECT(r64 / r32 > 1.9 && r64 / r32 < 2.1 && r32 / r16 > 1.85 && r32 / r16 < 2.15,
           "ring allreduce not linear in the size: %.1f %.1f %.1f us", r16, r32, r64);
    EXPECT(r64 >= bound && r64 < 1.3 * bound, "ring allreduce 64 MiB: %.0f us against a bound of %.0f us", r64, bound);

    static const char *ar[] = {"ring", "tree", "dbtree", "rd", "rhd", "oneshot", "twoshot"};
    static const size_t sizes[] = {8, 4096, 1u << 20, 64u << 20};
    double t[4][7];
    printf("\nallreduce at 8 ranks, alpha 1 us, 10 GB/s, %d slots, 128 KiB chunks (us):\n%10s", m.slots, "bytes");
    for (int i = 0; i < 7; i++) printf(" %10s", ar[i]);
    printf("\n");
    for (int si = 0; si < 4; si++) {
        printf("%10zu", sizes[si]);
        for (int i = 0; i < 7; i++) {
            t[si][i] = sim_time(ar[i], DUET_COLL_ALLREDUCE, n, sizes[si], &m);
            if (t[si][i] < 0) printf(" %10s", "FAILED");
            else printf(" %10.1f", t[si][i]);
        }
        printf("\n");
    }
    EXPECT(t[0][3] < t[0][0] && t[0][5] < t[0][0], "8 bytes: rd %.1f, oneshot %.1f must beat ring %.1f us", t[0][3],
           t[0][5], t[0][0]);
    EXPECT(t[3][0] < t[3][3], "64 MiB: ring %.0f must beat rd %.0f us", t[3][0], t[3][3]);

    /* speed of the simulator itself (printed, not asserted: speed is for benchmarks) */
    struct {
        const char *name;
        duet_coll_kind_t kind;
        size_t bytes;
    } big[] = {{"ring", DUET_COLL_ALLREDUCE, 4u << 20}, {"dbtree", DUET_COLL_ALLREDUCE, 4u << 20},
               {"rhd", DUET_COLL_ALLREDUCE, 4u << 20}, {"ring", DUET_COLL_ALLGATHER, 16u << 10},
               {"direct", DUET_COLL_ALLGATHER, 16u << 10}, {"pairwise", DUET_COLL_ALLTOALL, 16u << 10}};
    printf("\n256 ranks, timing only:\n");
    for (size_t i = 0; i < DUET_ARRAY_LEN(big); i++) {
        const duet_coll_algo_t *al = duet_sim_find_algo(big[i].kind, big[i].name);
        duet_coll_args_t a = {big[i].kind, 0, 256, 0, big[i].bytes / 8, 8, 128 * 1024, 0, 0, NULL, 0, 0};
        duet_sim_result_t res;
        double t0 = now_s();
        duet_status_t s = duet_coll_simulate(al, &a, 0, &m, &res, NULL);
        double dt = now_s() - t0;
        EXPECT(s == DUET_OK && res.ok, "%s %s at 256 ranks: %s %s", big[i].name, duet_coll_kind_name(big[i].kind),
               duet_status_str(s), res.error);
        printf("  %-8s %-10s %8zu B per rank: %10.1f us simulated, %6" PRIu64 " msgs max, steps max %6d, %.3f s\n",
               big[i].name, duet_coll_kind_name(big[i].kind), big[i].bytes, res.time_us, res.msgs_max, res.steps_max,
               dt);
    }
}

/* ------------------------------------------------------------------------------- broken schedules */
typedef struct {
    duet_sched_t sc[3];
    duet_coll_args_t a;
    int n;
} hand_t;

static void hand_init(hand_t *h, duet_coll_kind_t kind, int n, size_t count, size_t elem, int in_place)
{
    h->n = n;
    h->a = (duet_coll_args_t){kind, 0, n, 0, count, elem, 1024, in_place, 0, NULL, 0, 0};
    for (int r = 0; r < n; r++) duet_sched_init(&h->sc[r], r, n, elem);
}

static duet_sim_result_t hand_run(hand_t *h, int slots)
{
    duet_sim_model_t m;
    duet_sim_model_default(&m);
    m.slots = slots;
    duet_sim_result_t res;
    duet_status_t s = duet_sim_run(h->sc, &h->a, 1, &m, &res, NULL);
    EXPECT(s == DUET_OK, "duet_sim_run: %s", duet_status_str(s));
    for (int r = 0; r < h->n; r++) duet_sched_free(&h->sc[r]);
    return res;
}

#define EXPECT_FOUND(res, bit, text)                                                                    \
    EXPECT(!(res).ok && ((res).errors & (bit)) && strstr((res).error, text),                           \
           "expected %s (\"%s\"), got errors 0x%x: %s", #bit, text, (res).errors, (res).error)

/* A correct two-rank allreduce: each sends its input and reduces the other's into recv. */
static void exchange(hand_t *h, size_t bytes, int dep_on_send)
{
    for (int r = 0; r < 2; r++) {
        int s = duet_sched_send(&h->sc[r], 1 - r, DUET_BUF_SEND, 0, bytes, -1);
        duet_sched_recv_reduce(&h->sc[r], 1 - r, DUET_BUF_SEND, 0, DUET_BUF_RECV, 0, bytes, dep_on_send ? s : -1);
    }
}

static void broken(void)
{
    hand_t h;
    duet_sim_result_t res;

    /* the reference: correct, in place and out of place */
    for (int ip = 0; ip < 2; ip++) {
        hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, ip);
        exchange(&h, 128, 1);
        res = hand_run(&h, 2);
        EXPECT(res.ok, "correct exchange (in place %d) rejected: %s", ip, res.error);
    }
    /* in place, the receive may overwrite the input before the send has read it */
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, 1);
    exchange(&h, 128, 0);
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_RACE, "race");
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, 0); /* ... out of place it is fine */
    exchange(&h, 128, 0);
    res = hand_run(&h, 2);
    EXPECT(res.ok, "out-of-place exchange without deps rejected: %s", res.error);

    /* mismatched sizes */
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, 0);
    exchange(&h, 128, 1);
    duet_sched_send(&h.sc[0], 1, DUET_BUF_SEND, 0, 16, -1);
    duet_sched_recv(&h.sc[1], 0, DUET_BUF_TMP, 0, 8, -1);
    h.sc[1].tmp_bytes = 8;
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_MATCH, "size mismatch");

    /* a send nobody receives */
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, 0);
    exchange(&h, 128, 1);
    duet_sched_send(&h.sc[0], 1, DUET_BUF_SEND, 0, 8, -1);
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_MATCH, "unmatched");

    /* a deadlocking order: everyone receives before sending */
    hand_init(&h, DUET_COLL_ALLREDUCE, 3, 16, 8, 0);
    for (int r = 0; r < 3; r++) {
        int got = duet_sched_recv_reduce(&h.sc[r], (r + 2) % 3, DUET_BUF_SEND, 0, DUET_BUF_RECV, 0, 128, -1);
        duet_sched_send(&h.sc[r], (r + 1) % 3, DUET_BUF_RECV, 0, 128, got);
    }
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_DEADLOCK, "3 of 3 ranks stuck");
    EXPECT_FOUND(res, DUET_SIM_ERR_DEADLOCK, "0->2");

    /* three messages each way before any receive: 2 slots deadlock, 4 do not */
    for (int slots = 2; slots <= 4; slots += 2) {
        hand_init(&h, DUET_COLL_ALLGATHER, 2, 3, 8, 0);
        for (int r = 0; r < 2; r++) {
            duet_sched_copy(&h.sc[r], DUET_BUF_SEND, 0, DUET_BUF_RECV, (size_t)r * 24, 24, -1);
            int prev = -1;
            for (int k = 0; k < 3; k++) prev = duet_sched_send(&h.sc[r], 1 - r, DUET_BUF_SEND, 8 * (size_t)k, 8, prev);
            for (int k = 0; k < 3; k++)
                prev = duet_sched_recv(&h.sc[r], 1 - r, DUET_BUF_RECV, (size_t)(1 - r) * 24 + 8 * (size_t)k, 8, prev);
        }
        res = hand_run(&h, slots);
        if (slots == 2) EXPECT_FOUND(res, DUET_SIM_ERR_DEADLOCK, "slots full");
        else EXPECT(res.ok, "4 slots: %s", res.error);
    }

    /* no window: receives listed 500 or 600 steps after the sends still run (the executor
     * advances each peer queue's head, wherever it is in the list) */
    for (int msgs = 500; msgs <= 600; msgs += 100) {
        hand_init(&h, DUET_COLL_ALLGATHER, 2, (size_t)msgs, 8, 1);
        for (int r = 0; r < 2; r++) {
            for (int k = 0; k < msgs; k++) duet_sched_send(&h.sc[r], 1 - r, DUET_BUF_RECV, ((size_t)r * (size_t)msgs + (size_t)k) * 8, 8, -1);
            for (int k = 0; k < msgs; k++)
                duet_sched_recv(&h.sc[r], 1 - r, DUET_BUF_RECV, ((size_t)(1 - r) * (size_t)msgs + (size_t)k) * 8, 8, -1);
        }
        res = hand_run(&h, 2);
        EXPECT(res.ok, "%d messages: %s", msgs, res.error);
    }

    /* a contribution reduced twice */
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, 0);
    exchange(&h, 128, 1);
    duet_sched_send(&h.sc[1], 0, DUET_BUF_SEND, 0, 128, -1);
    duet_sched_recv_reduce(&h.sc[0], 1, DUET_BUF_RECV, 0, DUET_BUF_RECV, 0, 128, 1);
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_DATA, "rank 1's contribution counted twice");

    /* a contribution missing: rank 0 only copies its own input */
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, 0);
    duet_sched_copy(&h.sc[0], DUET_BUF_SEND, 0, DUET_BUF_RECV, 0, 128, -1);
    duet_sched_send(&h.sc[0], 1, DUET_BUF_SEND, 0, 128, -1);
    duet_sched_recv_reduce(&h.sc[1], 0, DUET_BUF_SEND, 0, DUET_BUF_RECV, 0, 128, -1);
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_DATA, "rank 0's recv element 0 (byte 0) is wrong: holds rank 0's input");

    /* an output element never written */
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, 0);
    exchange(&h, 120, 1);
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_DATA, "never written");

    /* out of range, a later dep, a write into the send buffer */
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, 0);
    exchange(&h, 128, 1);
    duet_sched_copy(&h.sc[0], DUET_BUF_SEND, 64, DUET_BUF_RECV, 0, 128, -1);
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_RANGE, "beyond the 128 bytes of rank 0's send buffer");
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, 0);
    exchange(&h, 128, 1);
    h.sc[1].steps[0].dep = 1;
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_STEP, "not an earlier step");
    EXPECT_FOUND(res, DUET_SIM_ERR_DEADLOCK, "deadlock");
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, 0);
    exchange(&h, 128, 1);
    duet_sched_copy(&h.sc[1], DUET_BUF_RECV, 0, DUET_BUF_SEND, 0, 128, 1);
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_STEP, "writes into the caller's send buffer");
    /* a message larger than the chunk, and a step that splits an element */
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 256, 8, 0);
    exchange(&h, 2048, 1);
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_STEP, "larger than the chunk");
    hand_init(&h, DUET_COLL_ALLREDUCE, 2, 16, 8, 0);
    exchange(&h, 124, 1);
    res = hand_run(&h, 2);
    EXPECT_FOUND(res, DUET_SIM_ERR_STEP, "whole 8-byte elements");

    /* a real schedule, mutated: ring allreduce in place, 4 ranks, 3 chunk columns per segment.
     * The allgather receives wait on our own earlier send of the chunk (dep); without it they
     * are still ordered, through the other ranks (the chunk comes back around the ring only
     * after we sent it): no race. The forwarding sends wait for the chunk's arrival; without
     * that they read before the reduction wrote: a race. */
    for (int variant = 0; variant < 3; variant++) {
        const duet_coll_algo_t *ring = duet_sim_find_algo(DUET_COLL_ALLREDUCE, "ring");
        duet_sched_t sc[4];
        duet_coll_args_t a4 = {DUET_COLL_ALLREDUCE, 0, 4, 0, 4 * 24 + 5, 8, 64, 1, 0, NULL, 0, 0};
        for (int r = 0; r < 4; r++) {
            a4.rank = r;
            duet_sched_init(&sc[r], r, 4, 8);
            EXPECT(ring->build(&a4, &sc[r]) == DUET_OK, "ring build");
            for (int i = 0; i < sc[r].nsteps; i++) {
                duet_step_t *st = &sc[r].steps[i];
                if (variant == 1 && st->kind == DUET_STEP_RECV) st->dep = -1;
                if (variant == 2 && st->kind == DUET_STEP_SEND && st->src_buf == DUET_BUF_RECV) st->dep = -1;
            }
        }
        duet_sim_model_t m2;
        duet_sim_model_default(&m2);
        EXPECT(duet_sim_run(sc, &a4, 1, &m2, &res, NULL) == DUET_OK, "duet_sim_run");
        if (variant < 2) EXPECT(res.ok, "ring allreduce%s: %s", variant ? " without the receives' deps" : "", res.error);
        else EXPECT_FOUND(res, DUET_SIM_ERR_RACE, "race");
        for (int r = 0; r < 4; r++) duet_sched_free(&sc[r]);
    }

    /* the API refuses what it cannot simulate */
    duet_sim_model_t m;
    duet_sim_model_default(&m);
    duet_coll_args_t a = {DUET_COLL_SEND, 0, 2, 1, 4, 8, 1024, 0, 0, NULL, 0, 0};
    EXPECT(duet_coll_simulate(&duet_coll_algos[0], &a, 1, &m, &res, NULL) == DUET_ERR_INVALID_ARG, "p2p simulated");
    a.kind = DUET_COLL_BROADCAST;
    EXPECT(duet_coll_simulate(&duet_coll_algos[0], &a, 1, &m, &res, NULL) == DUET_ERR_INVALID_ARG,
           "an allreduce algorithm ran a broadcast");
    EXPECT(duet_sim_find_algo(DUET_COLL_ALLREDUCE, "ring") == &duet_coll_algos[0] &&
           !duet_sim_find_algo(DUET_COLL_ALLREDUCE, "nope"), "duet_sim_find_algo");
}

int main(int argc, char **argv)
{
    g_verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
    double t0 = now_s();
    broken();
    double t1 = now_s();
    clock_model();
    double t2 = now_s();
    matrix();
    hier_matrix();
    double t3 = now_s();
    long_calls();
    double t4 = now_s();
    printf("\ntime: broken schedules %.2f s, clock %.2f s, matrix %.2f s, long calls %.2f s\n", t1 - t0, t2 - t1,
           t3 - t2, t4 - t3);
    print_matrix_summary();
    int na_total = 0, cases = 0, failed = 0;
    for (int ai = 0; ai < duet_coll_nalgos; ai++)
        na_total += g_stats[ai].na, cases += g_stats[ai].cases, failed += g_stats[ai].failed;
    printf("\n%d cases, %d not applicable, %d failed; %.2f s\n", cases, na_total, failed, now_s() - t0);
    if (g_failed) {
        fprintf(stderr, "test_sched: %d failures\n", g_failed);
        return 1;
    }
    return 0;
}

/*
 * test_predict.c — the tuner's cost prediction (src/coll/duet_coll_predict.c) and the closed
 * forms of its analytic method (src/coll/duet_coll_formula.c).
 *
 * 1. Honesty of the closed forms: every algorithm of duet_coll_algos[] against the schedule
 *    simulator (the makespan of all ranks' schedules), at 17, 33, 64, 100 and 256 ranks,
 *    8 B, 1 KiB, 64 KiB, 300000 B (two and a fraction chunks) and 1 MiB per rank (per block
 *    for the block collectives), under two models: this host's kind (alpha 0.155 us,
 *    3.44 GB/s) and the simulator's default kind (1 us, 10 GB/s); in place at 64 KiB; and
 *    1024 ranks at 8 B and 1 KiB under the first model. Calls of more than MAX_SIM_STEPS
 *    steps in all (estimated from two ranks' schedules) are skipped and counted.
 *    Tolerance: TOL (20%) of the simulated time, DBTREE_TOL (30%) for the double binary
 *    tree, whose form is fitted (see dbtree_allreduce). A table of the worst error per
 *    algorithm is printed. Outside this range the forms are looser: below 17 ranks the
 *    tuner simulates instead, and with alpha above a chunk's copy time (a network-like
 *    5 us, 25 GB/s) errors reach 30-50% around the sizes where alpha stops hiding behind
 *    the data (not checked here).
 * 2. One rank and empty calls: exact (a copy; nothing).
 * 3. Refusals: the analytic method refuses exactly the calls the builders refuse (rd
 *    allgather and rhd reduce-scatter off powers of two, all-to-all in place), 1..70 ranks.
 * 4. The method: simulated up to 16 ranks and small calls, simulated and extended in size
 *    for larger calls up to 16 ranks, analytic beyond; duet_coll_predict_all uses it for all
 *    candidates and its pick is the cheapest (the first on a tie), and honours `only`.
 * 5. Agreement of picks: at 64 and 256 ranks, where the simulator's best beats the runner-up
 *    by more than the tolerance, the analytic pick is the same algorithm.
 * 6. Scale: every form at 2^24 ranks and sizes up to 1 GiB, all finite, positive and
 *    non-decreasing with size, in well under a second.
 * 7. Calls back to back (a stream model): one call's increment is exact where it can be
 *    worked out by hand (one rank: its copy; broadcasts of step-priced messages at 4 ranks:
 *    a chain's call two steps, its busiest rank's, where a call alone takes the copy and the
 *    chain's 3 hops; a tree's the root's three, alone the copy and 2 hops), never
 *    more than a call alone, and the run never shorter than its busiest rank's work; the
 *    stream model's prediction is the increment, so it prefers the chain broadcast at 4 ranks
 *    where the call model prefers the tree; a data check of calls back to back is refused.
 *
 * Usage: test_predict [-v]   (-v: every compared point)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "coll/duet_coll_predict.h"
#include "coll/duet_coll_sim.h"
#include "coll/duet_coll_lane.h"

#define TOL 0.20
#define DBTREE_TOL 0.30
#define MAX_SIM_STEPS 400000.0

static int g_failed, g_verbose;
#define EXPECT(cond, ...)                                                             \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            if (++g_failed > 40) {                                                    \
                fprintf(stderr, "too many failures\n");                               \
                exit(1);                                                              \
            }                                                                         \
        }                                                                             \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* About the steps of all ranks' schedules of a call: n times the longer of rank 0's and rank
 * n-1's (building two schedules is cheap; simulating millions of steps is not). */
static double total_steps(const duet_coll_algo_t *al, const duet_coll_args_t *a)
{
    int most = 0;
    for (int r = 0; r < a->nranks; r += a->nranks - 1 > 0 ? a->nranks - 1 : 1) {
        duet_coll_args_t ra = *a;
        ra.rank = r;
        duet_sched_t s;
        duet_sched_init(&s, r, a->nranks, a->elem);
        if (al->build(&ra, &s) == DUET_OK && s.nsteps > most) most = s.nsteps;
        duet_sched_free(&s);
    }
    return (double)most * a->nranks;
}

static int is_hier(const duet_coll_algo_t *al) { return al->name[0] == 'h'; } /* hring hdbtree htree */

static duet_coll_args_t shape(const duet_coll_algo_t *al, int n, size_t bytes, int in_place)
{
    duet_coll_args_t a = {al->kind, 0, n, 0, bytes / 8, 8, 131072, bytes >= 8 ? in_place : 0, 0, NULL, 0, 0};
    return a;
}

/* The simulator's time for the tuner's model (alpha; beta split into send and receive). */
static duet_status_t simulate(const duet_coll_algo_t *al, const duet_coll_args_t *a, const duet_coll_model_t *m,
                              double *us)
{
    double half = 0.5 / (m->beta_gbps * 1e3);
    duet_sim_model_t sm = {.alpha_us = m->alpha_us, .beta_us_per_byte = half, .gamma_us_per_byte = half, .slots = 8};
    duet_sim_result_t res;
    duet_status_t st = duet_coll_simulate(al, a, 0, &sm, &res, NULL);
    if (st == DUET_OK && !res.ok) return DUET_ERR_INTERNAL;
    *us = res.time_us;
    return st;
}

/* ---------------------------------------------------------------- 1. forms against the simulator */
static void forms_against_simulator(void)
{
    static const int ranks[] = {17, 33, 64, 100, 256, 1024};
    static const size_t sizes[] = {8, 1024, 65536, 300000, 1 << 20};
    static const duet_coll_model_t models[] = {{.alpha_us = 0.155, .beta_gbps = 3.44},
                                               {.alpha_us = 1.0, .beta_gbps = 10.0}};
    double worst[64] = {0}, t0 = now_s();
    int points[64] = {0}, skipped = 0;
    for (int k = 0; k < duet_coll_nalgos; k++) {
        const duet_coll_algo_t *al = &duet_coll_algos[k];
        double tol = al->build == duet_coll_dbtree_allreduce ? DBTREE_TOL : TOL;
        for (size_t mi = 0; mi < 2; mi++)
            for (size_t ni = 0; ni < sizeof ranks / sizeof *ranks; ni++)
                for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
                    for (int in_place = 0; in_place < 2; in_place++) {
                        int n = ranks[ni];
                        /* in place only at one size and model: it changes a copy or two;
                         * 1024 ranks at the small sizes of one model (the links alone are
                         * a million) */
                        if (in_place && (si != 2 || mi != 0)) continue;
                        if (n > 256 && (mi != 0 || sizes[si] > 1024)) continue;
                        duet_coll_args_t a = shape(al, n, sizes[si], in_place);
                        if (total_steps(al, &a) > MAX_SIM_STEPS) {
                            skipped++;
                            continue;
                        }
                        double sim = 0, form = 0;
                        duet_status_t s1 = simulate(al, &a, &models[mi], &sim);
                        duet_status_t s2 = duet_coll_predict_analytic(al, &a, &models[mi], &form);
                        if (s1 == DUET_ERR_UNSUPPORTED || s2 == DUET_ERR_UNSUPPORTED) {
                            EXPECT(s1 == s2, "%s %s n=%d in_place=%d: the simulator says %s, the form %s", al->name,
                                   duet_coll_kind_name(al->kind), n, in_place, duet_status_str(s1),
                                   duet_status_str(s2));
                            continue;
                        }
                        EXPECT(s1 == DUET_OK && s2 == DUET_OK, "%s n=%d: %s / %s: %s", al->name, n,
                               duet_status_str(s1), duet_status_str(s2), duet_last_error());
                        if (s1 || s2) continue;
                        double err = sim > 0 ? (form - sim) / sim : form;
                        points[k]++;
                        if (fabs(err) > fabs(worst[k])) worst[k] = err;
                        if (g_verbose)
                            printf("  %-8s %-13s n=%-5d %8zu B ip=%d alpha=%-5g sim %12.3f form %12.3f %+6.1f%%\n",
                                   al->name, duet_coll_kind_name(al->kind), n, sizes[si], in_place,
                                   models[mi].alpha_us, sim, form, 100 * err);
                        EXPECT(fabs(err) <= tol, "%s %s, %d ranks, %zu bytes, in place %d, alpha %g us, %g GB/s: "
                               "simulated %.3f us, closed form %.3f us (%+.1f%%, tolerance %.0f%%)", al->name,
                               duet_coll_kind_name(al->kind), n, sizes[si], in_place, models[mi].alpha_us,
                               models[mi].beta_gbps, sim, form, 100 * err, 100 * tol);
                    }
    }
    printf("closed forms against the simulator (%d shapes skipped as too big to simulate, %.1f s):\n", skipped,
           now_s() - t0);
    printf("  %-8s %-14s %7s %10s\n", "algo", "collective", "points", "worst");
    for (int k = 0; k < duet_coll_nalgos; k++)
        printf("  %-8s %-14s %7d %+9.1f%%\n", duet_coll_algos[k].name, duet_coll_kind_name(duet_coll_algos[k].kind),
               points[k], 100 * worst[k]);
}

/* ---------------------------------------------------------------- 2. one rank, empty calls */
static void trivial_calls(void)
{
    duet_coll_model_t m = {.alpha_us = 0.5, .beta_gbps = 8.0};
    double h = 0.5 / 8e3;
    for (int k = 0; k < duet_coll_nalgos; k++) {
        const duet_coll_algo_t *al = &duet_coll_algos[k];
        duet_coll_args_t a = shape(al, 1, 4096, 0);
        double form = -1, sim = -1;
        if (is_hier(al)) { /* one rank is one host: nothing hierarchical */
            EXPECT(duet_coll_predict_analytic(al, &a, &m, &form) == DUET_ERR_UNSUPPORTED &&
                   simulate(al, &a, &m, &sim) == DUET_ERR_UNSUPPORTED, "%s at 1 rank: not refused", al->name);
            continue;
        }
        EXPECT(duet_coll_predict_analytic(al, &a, &m, &form) == DUET_OK, "%s: %s", al->name, duet_last_error());
        EXPECT(simulate(al, &a, &m, &sim) == DUET_OK, "%s", al->name);
        EXPECT(fabs(form - sim) < 1e-9 * (1 + sim), "%s %s at 1 rank: form %g, simulator %g", al->name,
               duet_coll_kind_name(al->kind), form, sim);
        EXPECT(form >= h * 4096 * 0.999, "%s at 1 rank: %g us is less than a copy", al->name, form);
        a = shape(al, 1024, 0, 0);
        EXPECT(duet_coll_predict_analytic(al, &a, &m, &form) == DUET_OK && form == 0, "%s empty: %g", al->name, form);
    }
}

/* ---------------------------------------------------------------- 3. refusals */
static void refusals(void)
{
    duet_coll_model_t m = {.alpha_us = 0.5, .beta_gbps = 8.0};
    for (int k = 0; k < duet_coll_nalgos; k++) {
        const duet_coll_algo_t *al = &duet_coll_algos[k];
        for (int n = 1; n <= 70; n++)
            for (int in_place = 0; in_place < 2; in_place++) {
                duet_coll_args_t a = shape(al, n, 64, in_place);
                duet_sched_t s;
                duet_sched_init(&s, 0, n, a.elem);
                duet_status_t built = al->build(&a, &s);
                duet_sched_free(&s);
                double us;
                duet_status_t form = duet_coll_predict_analytic(al, &a, &m, &us);
                EXPECT(built == form, "%s %s, %d ranks, in place %d: the builder says %s, the form %s", al->name,
                       duet_coll_kind_name(al->kind), n, in_place, duet_status_str(built), duet_status_str(form));
            }
    }
}

/* ---------------------------------------------------------------- 4. the method and the candidates */
static void method_and_candidates(void)
{
    const duet_coll_algo_t *ring = duet_sim_find_algo(DUET_COLL_ALLREDUCE, "ring");
    duet_coll_args_t a = shape(ring, 8, 4096, 0);
    EXPECT(duet_coll_predict_how(&a) == DUET_PREDICT_SIMULATED, "8 ranks, 4 KiB");
    a = shape(ring, 16, 1 << 20, 0); /* the tuner counts n x 1 MiB: 129 chunks x 2 x 256 > 40000 */
    EXPECT(duet_coll_predict_how(&a) == DUET_PREDICT_EXTRAPOLATED, "16 ranks, 1 MiB");
    a = shape(ring, 16, 512 << 10, 0); /* 65 chunks x 2 x 256 < 40000 */
    EXPECT(duet_coll_predict_how(&a) == DUET_PREDICT_SIMULATED, "16 ranks, 512 KiB");
    a = shape(ring, 8, 16 << 20, 0); /* 1025 x 2 x 64 > 40000 */
    EXPECT(duet_coll_predict_how(&a) == DUET_PREDICT_EXTRAPOLATED, "8 ranks, 16 MiB");
    a = shape(ring, 5, 16 << 20, 0); /* 641 x 2 x 25 < 40000 */
    EXPECT(duet_coll_predict_how(&a) == DUET_PREDICT_SIMULATED, "5 ranks, 16 MiB");
    a = shape(ring, 17, 8, 0);
    EXPECT(duet_coll_predict_how(&a) == DUET_PREDICT_ANALYTIC, "17 ranks");
    a = shape(ring, 4097, 8, 0);
    EXPECT(duet_coll_predict_how(&a) == DUET_PREDICT_ANALYTIC, "4097 ranks");
    a = shape(ring, 64, (size_t)1 << 30, 0);
    EXPECT(duet_coll_predict_how(&a) == DUET_PREDICT_ANALYTIC, "64 ranks, 1 GiB");
    EXPECT(strcmp(duet_predict_how_name(DUET_PREDICT_EXTRAPOLATED), "extended simulation") == 0, "name");

    duet_coll_model_t m = {.alpha_us = 0.155, .beta_gbps = 3.44};
    static const int ranks[] = {4, 100, 5000, 1 << 20};
    for (int kind = 0; kind < DUET_COLL_SEND; kind++)
        for (size_t ni = 0; ni < 4; ni++) {
            duet_coll_args_t c = {(duet_coll_kind_t)kind, 0, ranks[ni], 0, 1024, 4, 131072, 0, 0, NULL, 0, 0};
            duet_predict_t p;
            EXPECT(duet_coll_predict_all(&c, &m, NULL, &p) == DUET_OK, "%s", duet_last_error());
            EXPECT(p.how == duet_coll_predict_how(&c), "method");
            int want = -1;
            for (int i = 0; i < p.n; i++) {
                double us = -1;
                duet_status_t st = duet_coll_predict_cost(p.e[i].algo, &c, &m, p.how, &us);
                EXPECT(st == p.e[i].status && (st || us == p.e[i].us), "%s: the candidate loop and a single "
                       "cost differ", p.e[i].algo->name);
                if (st == DUET_OK && (want < 0 || us < p.e[want].us)) want = i;
            }
            EXPECT(p.best == want && p.best >= 0, "%s at %d ranks: pick %d, the cheapest %d",
                   duet_coll_kind_name((duet_coll_kind_t)kind), ranks[ni], p.best, want);
            duet_predict_t one;
            const char *name = p.e[p.n - 1].algo->name;
            EXPECT(duet_coll_predict_all(&c, &m, name, &one) == DUET_OK && one.n == 1 &&
                   strcmp(one.e[0].algo->name, name) == 0, "only %s", name);
            EXPECT(duet_coll_predict_all(&c, &m, "nosuch", &one) == DUET_OK && one.n == 0 && one.best == -1,
                   "only an unknown name");
        }
    duet_coll_args_t c = {DUET_COLL_SEND, 0, 2, 1, 8, 1, 131072, 0, 0, NULL, 0, 0};
    duet_predict_t p;
    EXPECT(duet_coll_predict_all(&c, &m, NULL, &p) == DUET_ERR_INVALID_ARG, "send has no candidates");
    duet_coll_model_t bad = {.alpha_us = 0, .beta_gbps = 3.0};
    c.kind = DUET_COLL_ALLREDUCE;
    EXPECT(duet_coll_predict_all(&c, &bad, NULL, &p) == DUET_ERR_INVALID_ARG, "alpha 0");
}

/* ---------------------------------------------------------------- 4b. the methods meet */
/* The tuner's prediction (its method for the shape) of one algorithm. */
static double predicted(const duet_coll_algo_t *al, const duet_coll_args_t *a, const duet_coll_model_t *m,
                        duet_status_t *st)
{
    double us = -1;
    *st = duet_coll_predict_cost(al, a, m, duet_coll_predict_how(a), &us);
    return us;
}

/* Where the method changes, the prediction does not jump: at 17 ranks (analytic, anchored at
 * 16) it is within METHODS_MEET of the simulator at 17 ranks; past the simulator's size bound
 * (extended in size) within METHODS_MEET of the simulator at that size (simulated in the
 * test, whatever the bound); and at sampled rank counts up to 4096, the algorithms whose
 * schedules stay small there, within TOL of the simulator. No prediction from 2 to 2^20 ranks
 * is below the algorithm's critical path of alphas (duet_coll_predict.h). */
#define METHODS_MEET 0.10
static void methods_meet(void)
{
    static const duet_coll_model_t models[] = {{.alpha_us = 0.155, .beta_gbps = 3.44},
                                               {.alpha_us = 1.0, .beta_gbps = 10.0}};
    static const size_t sizes[] = {8, 1024, 65536, 300000};
    double worst17 = 0, worst_size = 0, worst_far = 0, t0 = now_s();
    int points = 0;
    for (int k = 0; k < duet_coll_nalgos; k++) {
        const duet_coll_algo_t *al = &duet_coll_algos[k];
        if (is_hier(al)) continue;
        for (size_t mi = 0; mi < 2; mi++) {
            for (size_t si = 0; si < 4; si++) { /* 16 / 17 ranks */
                duet_coll_args_t a = shape(al, 17, sizes[si], 0);
                if (al->build == duet_coll_oneshot_allreduce && sizes[si] <= DUET_LANE_BYTES) continue; /* the lane */
                duet_status_t st;
                double sim = 0, pred = predicted(al, &a, &models[mi], &st);
                if (st == DUET_ERR_UNSUPPORTED || total_steps(al, &a) > MAX_SIM_STEPS) continue;
                EXPECT(st == DUET_OK && simulate(al, &a, &models[mi], &sim) == DUET_OK, "%s %s at 17 ranks: %s",
                       al->name, duet_coll_kind_name(al->kind), duet_last_error());
                double err = (pred - sim) / sim;
                EXPECT(fabs(err) <= METHODS_MEET, "%s %s, 17 ranks, %zu B, model %zu: predicted %.3f us, "
                       "simulated %.3f (%+.1f%%)", al->name, duet_coll_kind_name(al->kind), sizes[si], mi, pred, sim,
                       100 * err);
                if (fabs(err) > fabs(worst17)) worst17 = err;
                points++;
            }
            /* past the size bound: 8 and 16 ranks, 1 and 4 MiB (extended in size) */
            static const int few[] = {8, 16};
            static const size_t big[] = {1 << 20, 4 << 20};
            for (size_t ni = 0; ni < 2; ni++)
                for (size_t bi = 0; bi < 2; bi++) {
                    duet_coll_args_t a = shape(al, few[ni], big[bi], 0);
                    if (duet_coll_predict_how(&a) != DUET_PREDICT_EXTRAPOLATED) continue;
                    if (total_steps(al, &a) > MAX_SIM_STEPS) continue;
                    duet_status_t st;
                    double sim = 0, pred = predicted(al, &a, &models[mi], &st);
                    if (st == DUET_ERR_UNSUPPORTED) continue;
                    EXPECT(st == DUET_OK && simulate(al, &a, &models[mi], &sim) == DUET_OK, "%s: %s", al->name,
                           duet_last_error());
                    double err = (pred - sim) / sim;
                    EXPECT(fabs(err) <= METHODS_MEET, "%s %s, %d ranks, %zu B, model %zu: extended %.3f us, "
                           "simulated %.3f (%+.1f%%)", al->name, duet_coll_kind_name(al->kind), few[ni], big[bi], mi,
                           pred, sim, 100 * err);
                    if (fabs(err) > fabs(worst_size)) worst_size = err;
                    points++;
                }
        }
        /* far: 1024, 2048, 4096 ranks, 8 B, where the schedules stay small */
        static const int far[] = {1024, 2048, 4096};
        for (size_t ni = 0; ni < 3; ni++) {
            duet_coll_args_t a = shape(al, far[ni], 8, 0);
            if (total_steps(al, &a) > MAX_SIM_STEPS) continue;
            duet_status_t st;
            double sim = 0, pred = predicted(al, &a, &models[0], &st);
            if (st == DUET_ERR_UNSUPPORTED) continue;
            EXPECT(st == DUET_OK && simulate(al, &a, &models[0], &sim) == DUET_OK, "%s: %s", al->name,
                   duet_last_error());
            double err = (pred - sim) / sim, tol = al->build == duet_coll_dbtree_allreduce ? DBTREE_TOL : TOL;
            EXPECT(fabs(err) <= tol, "%s %s, %d ranks, 8 B: predicted %.3f us, simulated %.3f (%+.1f%%)", al->name,
                   duet_coll_kind_name(al->kind), far[ni], pred, sim, 100 * err);
            if (fabs(err) > fabs(worst_far)) worst_far = err;
            points++;
        }
        /* critical-path lower bounds, 2 .. 2^20 ranks */
        for (int n = 2; n <= 1 << 20; n = n < 40 ? n + 1 : n * 2 + 1) {
            duet_coll_args_t a = shape(al, n, 8, 0);
            duet_status_t st;
            double us = predicted(al, &a, &models[1], &st), alpha = models[1].alpha_us;
            if (st == DUET_ERR_UNSUPPORTED) continue;
            int depth = 0;
            while ((2LL << depth) <= n) depth++;
            double bound = alpha;
            int ar = al->kind == DUET_COLL_ALLREDUCE;
            if (!strcmp(al->name, "ring")) bound = (ar ? 2 : 1) * (n - 1) * alpha;
            else if (!strcmp(al->name, "chain")) bound = (n - 1) * alpha;
            else if (!strcmp(al->name, "tree") || !strcmp(al->name, "dbtree")) bound = (ar ? 2 : 1) * depth * alpha;
            else if (!strcmp(al->name, "rd") || !strcmp(al->name, "rhd")) bound = depth * alpha;
            else if (al->build == duet_coll_oneshot_allreduce) bound = alpha / 2; /* 8 B: the lane's one line */
            EXPECT(st == DUET_OK && us >= bound * (1 - 1e-12), "%s %s, %d ranks, 8 B: %.3f us, below its critical "
                   "path %.3f", al->name, duet_coll_kind_name(al->kind), n, us, bound);
        }
    }
    printf("methods meet: %d points in %.1f s; worst at 17 ranks %+.1f%%, past the size bound %+.1f%%, "
           "at 1024-4096 ranks %+.1f%%\n", points, now_s() - t0, 100 * worst17, 100 * worst_size, 100 * worst_far);
}

/* ---------------------------------------------------------------- 5. picks */
static void picks_agree(void)
{
    duet_coll_model_t m = {.alpha_us = 0.155, .beta_gbps = 3.44};
    static const int ranks[] = {64, 256};
    static const size_t sizes[] = {8, 1024, 65536, 1 << 20};
    int compared = 0;
    for (int kind = 0; kind < DUET_COLL_SEND; kind++)
        for (size_t ni = 0; ni < 2; ni++)
            for (size_t si = 0; si < 4; si++) {
                double best = 0, second = 0, best_form = 0;
                const duet_coll_algo_t *sim_pick = NULL, *form_pick = NULL;
                for (int k = 0; k < duet_coll_nalgos; k++) {
                    const duet_coll_algo_t *al = &duet_coll_algos[k];
                    if (al->kind != (duet_coll_kind_t)kind) continue;
                    duet_coll_args_t a = shape(al, ranks[ni], sizes[si], 0);
                    if (total_steps(al, &a) > MAX_SIM_STEPS) goto next;
                    double sim, form;
                    if (simulate(al, &a, &m, &sim) || duet_coll_predict_analytic(al, &a, &m, &form)) continue;
                    if (!sim_pick || sim < best) second = sim_pick ? best : second, best = sim, sim_pick = al;
                    else if (second == 0 || sim < second) second = sim;
                    if (!form_pick || form < best_form) best_form = form, form_pick = al;
                }
                if (!sim_pick || second == 0 || second < best * (1 + 2 * DBTREE_TOL)) continue; /* too close */
                compared++;
                EXPECT(sim_pick == form_pick, "%s, %d ranks, %zu bytes: the simulator picks %s (%.2f us, runner-up "
                       "%.2f), the closed forms %s", duet_coll_kind_name((duet_coll_kind_t)kind), ranks[ni],
                       sizes[si], sim_pick->name, best, second, form_pick->name);
            next:;
            }
    printf("picks: the closed forms agree with the simulator on %d clear-cut shapes\n", compared);
    EXPECT(compared >= 10, "only %d shapes compared", compared);
}

/* ---------------------------------------------------------------- 6. millions of ranks */
static void scale(void)
{
    duet_coll_model_t m = {.alpha_us = 0.155, .beta_gbps = 3.44};
    double t0 = now_s();
    int forms = 0;
    for (int k = 0; k < duet_coll_nalgos; k++) {
        const duet_coll_algo_t *al = &duet_coll_algos[k];
        double last = 0;
        if (is_hier(al)) continue; /* on hosts: below */
        for (size_t bytes = 8; bytes <= (size_t)1 << 30; bytes *= 4) {
            int n = 1 << 24;
            int block = al->kind == DUET_COLL_ALLGATHER || al->kind == DUET_COLL_REDUCE_SCATTER ||
                        al->kind == DUET_COLL_ALLTOALL;
            duet_coll_args_t a = {al->kind, 0, n, 0, block ? bytes / 4 / (size_t)n + 1 : bytes / 4, 4, 131072, 0, 0, NULL, 0, 0};
            double us = -1;
            duet_status_t st = duet_coll_predict_analytic(al, &a, &m, &us);
            EXPECT(st == DUET_OK, "%s %s at 2^24 ranks: %s", al->name, duet_coll_kind_name(al->kind), duet_last_error());
            EXPECT(isfinite(us) && us > 0 && us >= last * 0.999, "%s %s at 2^24 ranks, %zu bytes: %g us after %g",
                   al->name, duet_coll_kind_name(al->kind), bytes, us, last);
            last = us;
            forms++;
        }
    }
    double took = now_s() - t0;
    printf("scale: %d closed forms at 2^24 ranks in %.3f ms\n", forms, took * 1e3);
    EXPECT(took < 0.5, "%.3f s for %d forms", took, forms);
}

/* ---------------------------------------------------------------- 7. over hosts */
/* shm pair, then net pair: the defaults (0.5 us, 8 GB/s; 20 us, 0.5 GB/s) and a faster net */
static const duet_coll_model_t host_models[] = {
    {.alpha_us = 0.5, .beta_gbps = 8.0, .net_alpha_us = 20.0, .net_beta_gbps = 0.5},
    {.alpha_us = 0.155, .beta_gbps = 3.44, .net_alpha_us = 5.0, .net_beta_gbps = 2.0}};

/* Host map of `nh` hosts of the given sizes, ranks in blocks; returns the rank count. */
static int block_hosts(int *host, const int *sizes, int nh)
{
    int n = 0;
    for (int g = 0; g < nh; g++)
        for (int i = 0; i < sizes[g]; i++) host[n++] = g;
    return n;
}

/* The simulator's time with the model's two link classes. */
static duet_status_t simulate_hosts(const duet_coll_algo_t *al, const duet_coll_args_t *a, const duet_coll_model_t *m,
                                    double *us)
{
    double half = 0.5 / (m->beta_gbps * 1e3), net_half = 0.5 / (m->net_beta_gbps * 1e3);
    duet_sim_model_t sm = {.alpha_us = m->alpha_us, .beta_us_per_byte = half, .gamma_us_per_byte = half, .slots = 8,
                          .net_alpha_us = m->net_alpha_us, .net_beta_us_per_byte = net_half, .net_gamma_us_per_byte = net_half};
    duet_sim_result_t res;
    duet_status_t st = duet_coll_simulate(al, a, 0, &sm, &res, NULL);
    if (st == DUET_OK && !res.ok) return DUET_ERR_INTERNAL;
    *us = res.time_us;
    return st;
}

/* The hierarchical closed forms against the simulator (within HIER_TOL); the flat forms over
 * hosts (every message at the net pair) are printed, not bounded: they are the pace of the
 * slowest link, an estimate. Then the tuner's choice: on one host (no host map) the
 * hierarchical algorithms are never candidates, so every pick is the flat one it was; over
 * hosts, the simulator's cheapest wins, and it is hierarchical for large allreduces, where
 * the flat ring sends 2(n-1)/n of the buffer over its net links against 2(H-1)/(H P). */
#define HIER_TOL 0.35
static void over_hosts(void)
{
    static const int layouts[][9] = {/* host count, then each host's ranks */
                                     {2, 2, 2}, {2, 4, 4}, {4, 2, 2, 2, 2}, {4, 4, 4, 4, 4}, {2, 8, 8},
                                     {8, 2, 2, 2, 2, 2, 2, 2, 2}, {2, 3, 5}, {3, 1, 3, 4}};
    static const size_t sizes[] = {8, 1024, 65536, 1 << 20, 8 << 20};
    double worst[64] = {0};
    int points[64] = {0}, host[64];
    for (size_t li = 0; li < DUET_ARRAY_LEN(layouts); li++) {
        int n = block_hosts(host, &layouts[li][1], layouts[li][0]);
        for (size_t mi = 0; mi < DUET_ARRAY_LEN(host_models); mi++)
            for (size_t si = 0; si < DUET_ARRAY_LEN(sizes); si++)
                for (int k = 0; k < duet_coll_nalgos; k++) {
                    const duet_coll_algo_t *al = &duet_coll_algos[k];
                    if (al->kind != DUET_COLL_ALLREDUCE && al->kind != DUET_COLL_BROADCAST &&
                        al->kind != DUET_COLL_REDUCE)
                        continue;
                    duet_coll_args_t a = shape(al, n, sizes[si], 0);
                    a.host = host;
                    a.nhosts = layouts[li][0];
                    if (total_steps(al, &a) > MAX_SIM_STEPS) continue;
                    double sim = 0, form = 0;
                    duet_status_t s1 = simulate_hosts(al, &a, &host_models[mi], &sim);
                    duet_status_t s2 = duet_coll_predict_analytic(al, &a, &host_models[mi], &form);
                    EXPECT(s1 == DUET_OK && s2 == DUET_OK, "%s %s over hosts, %d ranks: %s / %s: %s", al->name,
                           duet_coll_kind_name(al->kind), n, duet_status_str(s1), duet_status_str(s2),
                           duet_last_error());
                    if (s1 || s2) continue;
                    double err = (form - sim) / sim;
                    points[k]++;
                    if (fabs(err) > fabs(worst[k])) worst[k] = err;
                    if (g_verbose)
                        printf("  %-8s %-10s n=%-3d hosts=%d %8zu B model %zu sim %12.3f form %12.3f %+6.1f%%\n",
                               al->name, duet_coll_kind_name(al->kind), n, layouts[li][0], sizes[si], mi, sim, form,
                               100 * err);
                    if (is_hier(al))
                        EXPECT(fabs(err) <= HIER_TOL, "%s %s, %d ranks on %d hosts, %zu bytes, model %zu: simulated "
                               "%.3f us, closed form %.3f us (%+.1f%%, tolerance %.0f%%)", al->name,
                               duet_coll_kind_name(al->kind), n, layouts[li][0], sizes[si], mi, sim, form, 100 * err,
                               100 * HIER_TOL);
                }
    }
    printf("over hosts, closed forms against the simulator (hierarchical within %.0f%%; flat: the net pace):\n",
           100 * HIER_TOL);
    for (int k = 0; k < duet_coll_nalgos; k++)
        if (points[k])
            printf("  %-8s %-14s %7d %+9.1f%%\n", duet_coll_algos[k].name,
                   duet_coll_kind_name(duet_coll_algos[k].kind), points[k], 100 * worst[k]);
}

/* ---------------------------------------------------------------- 7. calls back to back */
static duet_status_t run_calls(const duet_coll_algo_t *al, const duet_coll_args_t *a, duet_sim_model_t sm, int calls,
                               duet_sim_result_t *res, duet_sim_rank_t *ranks)
{
    sm.calls = calls;
    duet_status_t st = duet_coll_simulate(al, a, 0, &sm, res, ranks);
    if (st == DUET_OK && !res->ok) {
        fprintf(stderr, "%s: %s\n", al->name, res->error);
        return DUET_ERR_INTERNAL;
    }
    return st;
}

static void back_to_back(void)
{
    duet_sim_rank_t ranks[16];
    duet_sim_result_t one, three;
    /* messages priced by their steps alone (3 us each side, nearly free bytes and flight) */
    duet_sim_model_t steps = {.alpha_us = 1e-4, .beta_us_per_byte = 1e-9, .gamma_us_per_byte = 1e-9, .slots = 8,
                              .step_us = 3};
    const duet_coll_algo_t *chain = duet_sim_find_algo(DUET_COLL_BROADCAST, "chain");
    const duet_coll_algo_t *tree = duet_sim_find_algo(DUET_COLL_BROADCAST, "tree");
    duet_coll_args_t b = shape(chain, 4, 8, 0); /* the root copies its input, then sends */
    EXPECT(run_calls(chain, &b, steps, 1, &one, NULL) == DUET_OK && run_calls(chain, &b, steps, 3, &three, NULL) == DUET_OK,
           "chain: %s", duet_last_error());
    EXPECT(fabs(one.per_call_us - one.time_us) < 1e-12, "one call: increment %g, makespan %g", one.per_call_us,
           one.time_us);
    EXPECT(fabs(one.time_us - 7 * 3) < 0.01, "chain broadcast alone, 4 ranks: %g us, not 7 steps (copy, 3 hops)",
           one.time_us);
    EXPECT(fabs(three.per_call_us - 2 * 3) < 0.01, "chain broadcast back to back: %g us a call, not 2 steps",
           three.per_call_us);
    double tree_one, tree_three;
    EXPECT(run_calls(tree, &b, steps, 1, &one, NULL) == DUET_OK && run_calls(tree, &b, steps, 3, &three, NULL) == DUET_OK,
           "tree: %s", duet_last_error());
    tree_one = one.time_us, tree_three = three.per_call_us;
    EXPECT(fabs(tree_one - 5 * 3) < 0.01 && fabs(tree_three - 3 * 3) < 0.01,
           "tree broadcast: alone %g (not 5 steps: copy, 2 hops), increment %g (not the root's 3 steps)", tree_one,
           tree_three);
    /* one rank: its copy, call after call */
    duet_coll_args_t solo = shape(chain, 1, 4096, 0);
    duet_sim_model_t def;
    duet_sim_model_default(&def);
    EXPECT(run_calls(chain, &solo, def, 1, &one, NULL) == DUET_OK && run_calls(chain, &solo, def, 3, &three, NULL) == DUET_OK &&
               fabs(three.per_call_us - one.time_us) < 1e-9 && fabs(three.time_us - 3 * one.time_us) < 1e-9,
           "one rank: alone %g, increment %g, three %g", one.time_us, three.per_call_us, three.time_us);
    /* every algorithm, 2 .. 9 ranks, small and pipelined */
    for (int k = 0; k < duet_coll_nalgos; k++) {
        const duet_coll_algo_t *al = &duet_coll_algos[k];
        if (is_hier(al)) continue;
        for (int n = 2; n <= 9; n++)
            for (size_t bytes = 8; bytes <= 300000; bytes = bytes == 8 ? 4096 : bytes == 4096 ? 300000 : SIZE_MAX) {
                duet_coll_args_t a = shape(al, n, bytes, 0);
                a.root = n / 2;
                if (run_calls(al, &a, def, 1, &one, NULL) != DUET_OK) {
                    duet_error_clear();
                    continue; /* refused (rd off powers of two) */
                }
                EXPECT(run_calls(al, &a, def, 3, &three, ranks) == DUET_OK, "%s %d ranks: %s", al->name, n,
                       duet_last_error());
                double busiest = 0;
                for (int r = 0; r < n; r++) busiest = ranks[r].busy_us > busiest ? ranks[r].busy_us : busiest;
                EXPECT(three.per_call_us > 0 && three.per_call_us <= one.time_us * (1 + 1e-9),
                       "%s %s, %d ranks, %zu B: increment %g us, a call alone %g", al->name,
                       duet_coll_kind_name(al->kind), n, bytes, three.per_call_us, one.time_us);
                EXPECT(three.time_us >= busiest * (1 - 1e-9) && three.time_us <= 3 * one.time_us * (1 + 1e-9),
                       "%s %d ranks, %zu B: three calls %g us, the busiest rank's work %g, one call %g", al->name, n,
                       bytes, three.time_us, busiest, one.time_us);
            }
    }
    /* the prediction: the stream model's pick is the chain, the call model's the tree */
    duet_coll_model_t m = {.alpha_us = 1e-4, .beta_gbps = 1e6, .step_us = 3};
    duet_predict_t call, stream;
    EXPECT(duet_coll_predict_all(&b, &m, NULL, &call) == DUET_OK, "%s", duet_last_error());
    m.stream = 1;
    EXPECT(duet_coll_predict_all(&b, &m, NULL, &stream) == DUET_OK, "%s", duet_last_error());
    EXPECT(call.best >= 0 && stream.best >= 0 && call.e[call.best].algo == tree && stream.e[stream.best].algo == chain,
           "broadcast picks at 4 ranks: call model %s, stream model %s", call.best >= 0 ? call.e[call.best].algo->name : "-",
           stream.best >= 0 ? stream.e[stream.best].algo->name : "-");
    def.calls = 3;
    EXPECT(duet_coll_simulate(chain, &b, 1, &def, &one, NULL) == DUET_ERR_INVALID_ARG,
           "calls back to back with the data checked: not refused");
    duet_error_clear();
}

int main(int argc, char **argv)
{
    g_verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
    trivial_calls();
    refusals();
    method_and_candidates();
    methods_meet();
    scale();
    picks_agree();
    forms_against_simulator();
    over_hosts();
    back_to_back();
    if (g_failed) fprintf(stderr, "test_predict: %d failures\n", g_failed);
    else printf("test_predict: all passed\n");
    return g_failed ? 1 : 0;
}

/*
 * The analytic method of duet_coll_predict.h: a closed form per algorithm of the time the
 * schedule simulator (duet_coll_sim.c) would give, for rank counts far beyond what can be
 * built or simulated (millions of ranks cost microseconds here).
 *
 * The clock is the simulator's: a message of m bytes keeps its sender busy m h (h = beta/2
 * per byte), arrives alpha later and keeps its receiver busy m h (copy out, or reduce); a
 * local copy or reduction costs h per byte; a rank runs one step at a time, the earliest
 * in its schedule among those that may run. Two shapes of formula cover the algorithms:
 *
 *   rounds     a rank sends and receives a round's bytes, then the next round (whose
 *              sends wait on this round's receives): it sends while the partner's first
 *              chunk is in flight, so alpha shows only when the sends take less —
 *              round_time();
 *   pipelines  (chain, trees) the first chunk's time along the critical path T1, then the
 *              rest of the data at the pace of the busiest rank (its steps per chunk x h).
 *
 * These are approximations of the simulator's makespan (the same schedules, without
 * building them): tests/unit/test_predict.c states the tolerance and checks it.
 */
#include <stdlib.h>
#include "coll/duet_coll_predict.h"

typedef struct {
    double a, h; /* alpha (us); half of beta (us per byte) */
    double chunk; /* largest message, bytes */
    long long n;
    int in_place;
} fctx_t;

static double dmax(double x, double y) { return x > y ? x : y; }
static double dmin(double x, double y) { return x < y ? x : y; }

/* log2 of the largest power of two <= n */
static int floor_log2(long long n)
{
    int l = 0;
    while ((2LL << l) <= n) l++;
    return l;
}

/* A round that moves `bytes` each way: the rank's sends (h bytes) overlap the flight of
 * the partner's first chunk (h m + alpha), then it receives (h bytes); nothing moved, no
 * time. */
static double round_time(const fctx_t *f, double bytes)
{
    if (bytes <= 0) return 0;
    return dmax(f->h * bytes, f->h * dmin(bytes, f->chunk) + f->a) + f->h * bytes;
}

/* ------------------------------------------------------------------------ trees (duet_coll_tree.c)
 * Binary heap order: node v's children are 2v+1 and 2v+2, relative to the root. The up
 * phase (reduce): a node receives and reduces its children's partials in child order, then
 * sends its own up; a perfect subtree of height H is ready at perf[H], and at each level
 * only one subtree is not perfect, so the walk costs O(log^2 n) even for millions of ranks.
 * The down phase (broadcast): a node forwards to its children in order, so a chunk reaches
 * a node of depth j after j hops of alpha + 2h m, plus h m for every hop to a second child. */
typedef struct {
    long long n;
    double a, hm;
    double perf[64];
} tree_t;

/* Levels below v in a heap of n nodes; *perfect: every one of them is full. */
static int heap_height(long long v, long long n, int *perfect)
{
    int j = 0;
    while (((v + 1) << (j + 1)) - 1 <= n - 1) j++;
    *perfect = ((v + 1) << j) + (1LL << j) - 2 <= n - 1;
    return j;
}

static double up_time(const tree_t *t, long long v)
{
    int perfect, height = heap_height(v, t->n, &perfect);
    if (perfect) return t->perf[height];
    double time = 0;
    for (long long c = 2 * v + 1; c <= 2 * v + 2 && c < t->n; c++) {
        double arrive = up_time(t, c) + t->hm + t->a; /* the child's send, then alpha */
        time = dmax(time, arrive) + t->hm;
    }
    return time;
}

static int popcount64(unsigned long long x) { return __builtin_popcountll(x); }

/* The last node to get the chunk, from the time the root has it. Node v has depth
 * floor(log2(v+1)); the bits of v+1 after the leading one spell its path, a 1 for each
 * second child. Every level above the last is full: its deepest node went through second
 * children only. On the last level, the most 1 bits among v+1 <= n. */
static double down_time(long long n, double a, double hm)
{
    int depth = floor_log2(n);
    if (depth == 0) return 0;
    double last = 0;
    if (depth >= 2) last = (depth - 1) * (a + 3 * hm);
    int ones = popcount64((unsigned long long)n) - 1;
    for (int i = 0; i < depth; i++)
        if ((n >> i) & 1) { /* clear bit i of n, set every bit below it */
            int c = popcount64((unsigned long long)(n >> (i + 1))) - 1 + i;
            if (c > ones) ones = c;
        }
    return dmax(last, depth * (a + 2 * hm) + ones * hm);
}

/* The first chunk's time through one tree or chain (reduce up, broadcast down, or both),
 * with latency a and h m per step of the chunk. */
static double tree_first(long long n, int chain, int up, int down, double a, double hm)
{
    if (chain) return (up + down) * (double)(n - 1) * (a + 2 * hm);
    double t1 = 0;
    if (up) {
        tree_t t = {n, a, hm, {0}};
        for (int H = 1; H < 64; H++) t.perf[H] = t.perf[H - 1] + a + 3 * hm; /* see up_time */
        t1 += up_time(&t, 0);
    }
    return t1 + (down ? down_time(n, a, hm) : 0);
}

/* One tree or chain over S bytes: reduce up (up), broadcast down (down), or both. */
static double tree_time(const fctx_t *f, int chain, int up, int down, double S)
{
    long long n = f->n;
    double m = dmin(S, f->chunk), hm = f->h * m;
    int root_copy = down && !up && !f->in_place; /* a broadcast root keeps a copy */
    double t1 = (root_copy ? hm : 0) + tree_first(n, chain, up, down, f->a, hm);
    /* the busiest rank's steps per chunk: per phase, one per child and one for the parent
     * (a binary tree's node 1 has both from 5 ranks on); a broadcast root adds its copy */
    int root_children = chain || n == 2 ? 1 : 2;
    int deg = chain ? (n >= 3 ? 2 : 1) : (n >= 5 ? 3 : n >= 3 ? 2 : 1);
    int steps = (up + down) * deg;
    if (root_copy && steps < root_children + 1) steps = root_children + 1;
    double rest = (S - m) * steps * f->h;
    /* an allreduce's busiest rank (node 1, from 5 ranks on) waits for the first chunk to come
     * back from the root, and fills the wait with later chunks' up phase: the simulator shows
     * about 2 alpha + 2h m saved (fitted) */
    if (up && down && !chain && n >= 5) rest -= dmin(2 * f->a + 2 * hm, (S - m) * 3 * f->h);
    return t1 + rest;
}

/* ------------------------------------------------------------------------ the forms */
static double ring_allreduce(const fctx_t *f, const duet_coll_args_t *a, double S)
{
    if (f->n == 1) return f->h * S;
    double w = (double)((a->count + (size_t)f->n - 1) / (size_t)f->n * a->elem); /* the widest segment */
    return 2.0 * (double)(f->n - 1) * round_time(f, w);
}

/* The double binary tree interleaves its two trees chunk column by chunk column, so one
 * link carries, in one FIFO, a tree's down-sends and the other tree's up-sends: a column's
 * up phase in one tree waits for the previous column's round trip in the other, and the
 * columns do not pipeline. The simulator shows the first column at 1.5 to 1.9 times a
 * single tree's first-chunk time T1 and a column every 1.15 to 1.85 T1 after it; the
 * factors below are fitted to it, not derived (tests/unit/test_predict.c bounds the
 * error). With one element, only the second tree has data. */
static double dbtree_allreduce(const fctx_t *f, const duet_coll_args_t *a, double S)
{
    if (f->n == 1) return f->h * S;
    double half = (double)(a->count / 2 * a->elem), wide = S - half; /* the second tree's half */
    if (half == 0) return tree_time(f, 0, 1, 1, S);
    double m = dmin(wide, f->chunk), t1 = tree_first(f->n, 0, 1, 1, f->a, f->h * m);
    return 1.75 * t1 + (wide - m) / m * 1.4 * t1;
}

/* Recursive doubling / halving: p = largest power of two <= n runs the rounds; the other
 * e = n - p ranks fold their input into a neighbour first (one message of S) and get the
 * result back at the end (one more): 2 alpha + 2h (S + first chunk) more. For a call of
 * one chunk, recursive doubling hides some of it: a rank delayed by the fold catches up
 * an alpha per round with partners that are not (ceil(log2 e) rounds pair delayed ranks
 * with each other). */
static double fold_time(const fctx_t *f, double S, long long e, int L, int doubling)
{
    if (e == 0) return 0;
    if (!doubling || S > f->chunk) return 2 * f->h * (S + dmin(S, f->chunk)) + 2 * f->a;
    int delayed_rounds = floor_log2(e) + ((e & (e - 1)) != 0); /* ceil(log2 e) */
    return dmax(f->a + 2 * f->h * S, 4 * f->h * S + (2 + delayed_rounds - L) * f->a);
}

static double rd_allreduce(const fctx_t *f, double S)
{
    if (f->n == 1) return f->h * S;
    int L = floor_log2(f->n);
    return L * round_time(f, S) + fold_time(f, S, f->n - (1LL << L), L, 1);
}

static double rhd_allreduce(const fctx_t *f, double S)
{
    if (f->n == 1) return f->h * S;
    int L = floor_log2(f->n);
    long long e = f->n - (1LL << L);
    double t = 0, part = S;
    for (int i = 0; i < L; i++) { /* a halving and, later, the doubling that retraces it */
        part /= 2;
        t += 2 * round_time(f, part);
    }
    /* the folded ranks' partners fold in and out; the others copy their input first */
    return t + (e ? fold_time(f, S, e, L, 0) : f->h * S);
}

static double oneshot_allreduce(const fctx_t *f, double S)
{
    if (f->n == 1) return f->h * S;
    /* n-1 sends, then n receives or reductions in rank order: the last rank waits alpha
     * for rank 0's message, sent last; in place, a copy back from scratch */
    return f->a + (double)(2 * f->n - 1) * f->h * S + (f->in_place ? f->h * S : 0);
}

static double twoshot_allreduce(const fctx_t *f, const duet_coll_args_t *a, double S)
{
    if (f->n == 1) return 2 * f->h * S;
    double w = (double)((a->count + (size_t)f->n - 1) / (size_t)f->n * a->elem); /* the widest part */
    double q = (double)(a->count < (size_t)f->n ? a->count : (size_t)f->n);        /* parts with data */
    /* the owner of the widest part: q-1 other parts out, n in (reduced), n-1 results out, a
     * copy, q-1 other results in. The last result to arrive comes from rank 0's last send; its
     * alpha hides behind the receiver's other q-1 results when they take longer */
    double busy = f->h * ((2 * q - 2) * S / q + 2.0 * (double)f->n * w);
    return busy + f->a + dmax(0, f->a - (q - 1) * f->h * dmin(w, f->chunk));
}

/* Direct and pairwise: every rank sends to all, then receives from all; the first receive
 * hides behind the sends unless alpha is longer than them. */
static double direct_allgather(const fctx_t *f, double b)
{
    double copy = f->in_place ? 0 : f->h * b;
    if (f->n == 1) return copy;
    double n1 = (double)(f->n - 1);
    return copy + 2 * n1 * f->h * b + dmax(0, f->a + f->h * dmin(b, f->chunk) - n1 * f->h * b);
}

static double direct_reduce_scatter(const fctx_t *f, double b)
{
    if (f->n == 1) return f->h * b;
    /* the reduction in rank order waits for rank 0's message, sent to the last rank last */
    double n1 = (double)(f->n - 1);
    return n1 * f->h * b + dmax(0, f->a + f->h * dmin(b, f->chunk) - f->h * b) + (double)f->n * f->h * b +
           (f->in_place ? f->h * b : 0);
}

static double pairwise_alltoall(const fctx_t *f, double b)
{
    if (f->n == 1) return f->h * b;
    double n1 = (double)(f->n - 1);
    return f->h * b + 2 * n1 * f->h * b + dmax(0, f->a + f->h * dmin(b, f->chunk) - n1 * f->h * b);
}

static double ring_rounds(const fctx_t *f, double b) { return (double)(f->n - 1) * round_time(f, b); }

/* rd allgather: rounds of 1, 2, 4, ... blocks; rhd reduce-scatter: n/2, ..., 2, 1 */
static double doubling_rounds(const fctx_t *f, double b)
{
    double t = 0;
    for (long long d = 1; d < f->n; d *= 2) t += round_time(f, (double)d * b);
    return t;
}

/* ------------------------------------------------------------ hierarchical (duet_coll_hier.c) */
/* The call's hosts: how many, the largest and the smallest (ranks). */
typedef struct {
    long long n, largest, smallest;
} host_stats_t;

static int is_hier(duet_coll_build_fn b)
{
    return b == duet_coll_hier_ring_allreduce || b == duet_coll_hier_dbtree_allreduce ||
           b == duet_coll_hier_tree_broadcast || b == duet_coll_hier_tree_reduce;
}

/* 0 when the host map is out of range; hs->n 1 for one host (or none). */
static int host_stats(const duet_coll_args_t *a, host_stats_t *hs)
{
    *hs = (host_stats_t){1, a->nranks, a->nranks};
    if (!a->host || a->nhosts < 2) return 1;
    long long *size = calloc((size_t)a->nhosts, sizeof *size);
    if (!size) return 0;
    for (int r = 0; r < a->nranks; r++) {
        if (a->host[r] < 0 || a->host[r] >= a->nhosts) {
            free(size);
            return 0;
        }
        size[a->host[r]]++;
    }
    *hs = (host_stats_t){0, 0, a->nranks};
    for (int g = 0; g < a->nhosts; g++) {
        if (!size[g]) continue;
        hs->n++;
        hs->largest = size[g] > hs->largest ? size[g] : hs->largest;
        hs->smallest = size[g] < hs->smallest ? size[g] : hs->smallest;
    }
    free(size);
    return 1;
}

/* Allreduce: reduce-scatter in the host, the part across, the part to the host's others
 * (the phases follow each other: the schedule joins them, so they do not overlap). */
static double hier_allreduce(const fctx_t *in, const fctx_t *net, const duet_coll_args_t *a, const host_stats_t *hs,
                             int dbtree)
{
    long long L = hs->largest, P = hs->smallest;
    size_t part = (a->count + (size_t)P - 1) / (size_t)P;
    double w = (double)(part * a->elem), first = dmin(w, in->chunk);
    double t = 0;
    if (L > 1) t += (double)(P - 1 + L - 1) * in->h * w + in->a + in->h * first;
    duet_coll_args_t pa = *a;
    pa.count = part;
    fctx_t across = *net;
    across.n = hs->n;
    across.in_place = 1;
    t += dbtree ? dbtree_allreduce(&across, &pa, w) : ring_allreduce(&across, &pa, w);
    if (L > 1) t += (double)(L - 1) * in->h * w + in->a + in->h * w;
    return t;
}

/* Broadcast or reduce: the tree over the hosts' leaders, and the tree inside the largest host.
 * A chunk goes on to the next phase as soon as it is through the first (the schedule joins
 * them chunk by chunk): the slower phase paces the call, the other adds its first chunk. The
 * broadcast root's own copy is a local one, hidden behind its net sends. */
static double hier_tree(const fctx_t *in, const fctx_t *net, const host_stats_t *hs, int up, double S)
{
    fctx_t across = *net, inside = *in;
    across.n = hs->n;
    across.in_place = 1;
    inside.n = hs->largest;
    inside.in_place = 1;
    double first = dmin(S, in->chunk), t = tree_time(&across, 0, up, !up, S);
    if (inside.n < 2) return t;
    /* the leader runs both phases' steps on one thread: they add up there */
    double t_in = tree_time(&inside, 0, up, !up, S);
    return dmax(t + t_in - tree_time(&inside, 0, up, !up, first) / 2,
                dmax(t + tree_time(&inside, 0, up, !up, first), t_in + tree_time(&across, 0, up, !up, first)));
}

/* The builders' refusals (tests/unit/test_predict.c checks they agree). */
static duet_status_t refusal(const duet_coll_algo_t *al, const duet_coll_args_t *a)
{
    int n = a->nranks, pow2 = (n & (n - 1)) == 0;
    host_stats_t hs;
    if (is_hier(al->build) && !host_stats(a, &hs))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: a host map out of range (or no memory)", al->name);
    if (is_hier(al->build) && hs.n < 2)
        return duet_error_set(DUET_ERR_UNSUPPORTED, "%s %s: every rank is on one host (a hierarchical algorithm "
                              "needs ranks on two hosts or more; the flat ones cover one host)", al->name,
                              duet_coll_kind_name(a->kind));
    if (al->build == duet_coll_rd_allgather && !pow2)
        return duet_error_set(DUET_ERR_UNSUPPORTED, "rd allgather needs a power-of-two rank count, not %d", n);
    if (al->build == duet_coll_rhd_reduce_scatter && !pow2)
        return duet_error_set(DUET_ERR_UNSUPPORTED, "rhd reduce-scatter needs a power-of-two rank count, not %d", n);
    if (al->build == duet_coll_pairwise_alltoall && a->in_place && n > 1)
        return duet_error_set(DUET_ERR_UNSUPPORTED, "alltoall: in place is not supported (pass separate buffers)");
    return DUET_OK;
}

duet_status_t duet_coll_predict_analytic(const duet_coll_algo_t *al, const duet_coll_args_t *a,
                                         const duet_coll_model_t *m, double *us)
{
    if (!al || !a || !m || !us || al->kind != a->kind || a->nranks < 1 || a->elem == 0 || !(m->alpha_us > 0) ||
        !(m->beta_gbps > 0))
        return duet_error_set(DUET_ERR_INVALID_ARG, "predict: a shape of %d ranks, or a model of alpha %g us and "
                              "beta %g GB/s, out of range", a ? a->nranks : 0, m ? m->alpha_us : 0, m ? m->beta_gbps : 0);
    duet_status_t st = refusal(al, a);
    if (st) return st;
    fctx_t f = {m->alpha_us, duet_coll_copy_us_per_byte(m, a), (double)duet_coll_chunk(a), a->nranks, a->in_place};
    fctx_t net = f; /* between hosts */
    if (m->net_alpha_us > 0 && m->net_beta_gbps > 0) net.a = m->net_alpha_us, net.h = 0.5 / (m->net_beta_gbps * 1e3);
    double S = (double)a->count * (double)a->elem; /* the call's bytes per rank, or per block */
    duet_coll_build_fn b = al->build;
    host_stats_t hs;
    if (!host_stats(a, &hs))
        return duet_error_set(DUET_ERR_INVALID_ARG, "predict: a host map out of range (or no memory)");
    *us = 0;
    if (S == 0) return DUET_OK; /* nothing moves: no step at all */
    if (is_hier(b)) {
        if (b == duet_coll_hier_ring_allreduce || b == duet_coll_hier_dbtree_allreduce)
            *us = hier_allreduce(&f, &net, a, &hs, b == duet_coll_hier_dbtree_allreduce);
        else *us = hier_tree(&f, &net, &hs, b == duet_coll_hier_tree_reduce, S);
        return DUET_OK;
    }
    if (hs.n > 1) f.a = net.a, f.h = net.h; /* a flat algorithm over hosts: paced by its net links */
    if (b == duet_coll_ring_allreduce) *us = ring_allreduce(&f, a, S);
    else if (b == duet_coll_tree_allreduce) *us = f.n == 1 ? f.h * S : tree_time(&f, 0, 1, 1, S);
    else if (b == duet_coll_dbtree_allreduce) *us = dbtree_allreduce(&f, a, S);
    else if (b == duet_coll_rd_allreduce) *us = rd_allreduce(&f, S);
    else if (b == duet_coll_rhd_allreduce) *us = rhd_allreduce(&f, S);
    else if (b == duet_coll_oneshot_allreduce) *us = oneshot_allreduce(&f, S);
    else if (b == duet_coll_twoshot_allreduce) *us = twoshot_allreduce(&f, a, S);
    else if (b == duet_coll_chain_broadcast || b == duet_coll_tree_broadcast)
        *us = f.n == 1 ? f.h * S : tree_time(&f, b == duet_coll_chain_broadcast, 0, 1, S);
    else if (b == duet_coll_chain_reduce || b == duet_coll_tree_reduce)
        *us = f.n == 1 ? f.h * S : tree_time(&f, b == duet_coll_chain_reduce, 1, 0, S);
    else if (b == duet_coll_ring_allgather) *us = f.h * S + ring_rounds(&f, S);
    else if (b == duet_coll_ring_reduce_scatter) *us = f.n == 1 ? f.h * S : ring_rounds(&f, S);
    else if (b == duet_coll_rd_allgather) *us = f.h * S + doubling_rounds(&f, S);
    else if (b == duet_coll_rhd_reduce_scatter) *us = f.n == 1 ? f.h * S : doubling_rounds(&f, S);
    else if (b == duet_coll_direct_allgather) *us = direct_allgather(&f, S);
    else if (b == duet_coll_direct_reduce_scatter) *us = direct_reduce_scatter(&f, S);
    else if (b == duet_coll_pairwise_alltoall) *us = pairwise_alltoall(&f, S);
    else
        return duet_error_set(DUET_ERR_UNSUPPORTED, "%s %s has no closed form (duet_coll_formula.c)", al->name,
                              duet_coll_kind_name(a->kind));
    return DUET_OK;
}

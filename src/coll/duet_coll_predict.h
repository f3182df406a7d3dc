/*
 * duet_coll_predict.h — what an algorithm is predicted to cost for a call shape under the
 * alpha-beta model: the numbers the tuner (duet_coll_tune.c) compares and duet-sim prints.
 *
 * One call shape is costed by one method, the same for every candidate algorithm (so the
 * comparison is fair) and on every rank (so every rank picks the same); the methods meet at
 * their boundaries, so a prediction does not jump where the method changes:
 *
 *   simulated   up to 16 ranks and a bounded number of steps: every rank's schedule runs in
 *               the schedule simulator (duet_coll_sim.h) and the makespan counts — the
 *               critical path, overlaps and pipelining included;
 *   simulated, extended in size   up to 16 ranks, a call too big for that: simulated at
 *               the largest count within the bound and at half of it, and extended along
 *               the line through the two;
 *   analytic    beyond 16 ranks: a closed form per algorithm (duet_coll_formula.c), with no
 *               schedule built, so a call of millions of ranks is costed in microseconds;
 *               on one host scaled by the ratio of the simulator's time to the form's at
 *               16 ranks (anchored), so that it meets the simulator at 17 ranks.
 *
 * The model's terms (duet_coll_model_t; those beyond alpha and beta are 0 until `duet-perf
 * --calibrate` fits them, duet_coll_fit.h), as the simulator charges them:
 *   alpha        per message (and per acknowledgement);
 *   h = beta/2   per byte of a staged message, on each side: copied in by its sender, out by
 *                its receiver (2h);
 *   copy         per byte of a single copy: a local copy or reduction's operand, and a message
 *                by reference (duet_coll_args_t.byref), copied once out of the sender's heap
 *                (0: h);
 *   knee, mem    past the cache: when the bytes of the call's buffers on a host, F, exceed
 *                knee_bytes, a byte costs (knee/F) h + (1 - knee/F) h_mem, h_mem = 1/(2 mem);
 *   reduce       per byte reduced, beside its copy;
 *   step         per step a rank runs (the executor's bookkeeping, its polls);
 *   call         once per call (preparation, the executor's start and end), one term per
 *                collective (the fit finds 8-byte allgathers and broadcasts dearer to start than
 *                allreduces: docs/PERF.md, issue 20), else one for every call: the same for every
 *                algorithm, it moves errors, not picks.
 *
 * No prediction is below its algorithm's critical path of messages: 2(n-1) alpha for a ring
 * allreduce, (n-1) for a ring allgather or reduce-scatter and a chain, a binary tree's
 * depth (twice for an allreduce), log2 n rounds of recursive doubling / halving.
 *
 * A stream model (duet_coll_model_t.stream: the GPU executor's, whose calls run one kernel
 * after another on each rank's stream) costs a call by what it adds to a run of calls of its
 * shape: the simulator runs three back to back and the third's increment counts (a rank that
 * is done starts its next call while others finish this one, so the busiest rank matters as
 * much as the critical path: at 4 ranks on one H200 a chain broadcast, two steps per rank,
 * beats the binary tree, whose root runs three). The critical-path floor above does not
 * apply to it, nor the latency lane below (the host executor's).
 *
 * The closed forms approximate the simulator's makespan: a message of m bytes costs its
 * sender m x beta/2, arrives alpha later and costs its receiver m x beta/2; a local copy or
 * reduction costs beta/2 per byte; a rank runs one step at a time. With h = beta/2 per
 * byte, S the call's bytes per rank (a block for allgather, reduce-scatter, all-to-all),
 * w the widest 1/n part, m the first chunk (at most DUET_COLL_CHUNK), L = log2 of the
 * largest power of two p <= n, and round(x) = max(h x, h m + alpha) + h x (a round moving
 * x bytes each way, alpha hidden behind the other chunks when there are several):
 *
 *   ring allreduce       2(n-1) round(w)
 *   tree allreduce       first chunk up and down the binary tree (each level alpha + 2h m,
 *                        a second child h m later; O(log^2 n) to walk), then the rest at
 *                        6h per byte (node 1: two children and a parent, both ways)
 *   dbtree allreduce     1.75 T1 + 1.4 T1 per further chunk column, T1 the single tree's
 *                        first chunk: the two trees share FIFOs, so columns do not
 *                        pipeline (fitted to the simulator, see the formula file)
 *   rd allreduce         L round(S), plus the n-p folded ranks: 2 alpha + 2h (S + m)
 *   rhd allreduce        2 round(S/2^i) for i = 1..L, plus folding or a copy (h S)
 *   oneshot allreduce    alpha + (2n-1) h S; up to 48 bytes (the latency lane, whatever the
 *                        method): alpha / 2 + (n-1) h 64 (a line per peer, no acknowledgement)
 *   twoshot allreduce    alpha + h ((2q-2) S/q + 2n w) + what alpha the last result does
 *                        not hide, q = parts that hold data
 *   chain bcast/reduce   (n-1)(alpha + 2h m), then the rest at 2h per byte
 *   tree bcast/reduce    one direction of the tree allreduce, the rest at 3h per byte
 *   ring allgather, reduce-scatter   (n-1) round(S) (+ h S, the allgather's own copy)
 *   rd allgather, rhd reduce-scatter round(d S) for d = 1, 2, ..., n/2
 *   direct allgather, reduce-scatter, pairwise all-to-all   (2n-1) h S and the part of
 *                        alpha the sends do not hide
 *
 * tests/unit/test_predict.c checks every form against the simulator from 17 to 1024 ranks
 * (within 20%, 30% for dbtree) and prints the worst error of each.
 *
 * Links of two classes (docs/NETWORK.md 2.7): with a host map (duet_coll_args_t.host) and a
 * net pair in the model, a message between hosts costs the net alpha and beta, one inside a
 * host the shared-memory pair — in the simulator message by message. The closed forms of a
 * flat algorithm over several hosts take the net pair for every message (the slowest link
 * paces a ring or a tree round); those of the hierarchical ones add their phases: inside the
 * host at the shm pair, across at the net pair
 *
 *   hring, hdbtree allreduce   (P-1 + L-1) h w + alpha        reduce-scatter in the host
 *                              + ring / dbtree over H hosts of the part w (net)
 *                              + (L-1) h w + alpha + h w      the part to the host's others
 *   htree broadcast, reduce    tree over H leaders (net) + tree over L ranks (shm)
 *
 * with L the largest host, P the smallest, w the widest of P parts.
 */
#ifndef DUET_COLL_PREDICT_H
#define DUET_COLL_PREDICT_H

#include "coll/duet_coll_tune.h"

#define DUET_PREDICT_MAX 16               /* candidates of one collective, at most            */

typedef enum { DUET_PREDICT_SIMULATED, DUET_PREDICT_EXTRAPOLATED, DUET_PREDICT_ANALYTIC } duet_predict_how_t;

/* "simulated", "extended simulation" (simulated, extended in size where too big), "analytic" */
const char *duet_predict_how_name(duet_predict_how_t how);

/* The model's (alpha, beta) for a message between ranks x and y of call a: the net pair when
 * they are on different hosts and the model has one. */
static inline void duet_coll_model_link(const duet_coll_model_t *m, const duet_coll_args_t *a, int x, int y,
                                        double *alpha_us, double *beta_gbps)
{
    int net = m->net_alpha_us > 0 && m->net_beta_gbps > 0 && duet_coll_across(a, x, y);
    *alpha_us = net ? m->net_alpha_us : m->alpha_us;
    *beta_gbps = net ? m->net_beta_gbps : m->beta_gbps;
}

_Static_assert(DUET_MODEL_CALL_KINDS == (int)DUET_COLL_ALLTOALL + 1,
               "a call term for each collective, allreduce .. all-to-all");

/* What a call of `kind` costs besides its messages and bytes under m: its own fitted term, or
 * the one for every call (sends and receives: that one). */
static inline double duet_coll_call_us(const duet_coll_model_t *m, duet_coll_kind_t kind)
{
    return (int)kind < DUET_MODEL_CALL_KINDS && m->call_kind_us[kind] > 0 ? m->call_kind_us[kind] : m->call_us;
}

/* One side of a staged message, per byte, for call a under model m (the shm pair), in us:
 * beta/2, or past the cache knee the mix of the cache's and the memory's by the share the
 * cache holds. */
double duet_coll_copy_us_per_byte(const duet_coll_model_t *m, const duet_coll_args_t *a);
/* A single copy (a local copy, a message by reference), per byte, likewise: 1 / copy_gbps
 * (beta/2 without one). */
double duet_coll_single_us_per_byte(const duet_coll_model_t *m, const duet_coll_args_t *a);
/* The share of call a's bytes the cache holds under m: 1 below the knee (or without one),
 * else knee / the bytes of the call's buffers on rank 0's host. */
double duet_coll_cache_held(const duet_coll_model_t *m, const duet_coll_args_t *a);

/* The method the tuner uses for this call shape (the same for all its candidates). */
duet_predict_how_t duet_coll_predict_how(const duet_coll_args_t *a);

/* Algorithm `al`'s predicted time for shape `a` (a->rank is ignored) under model `m` by
 * method `how`, in microseconds. DUET_ERR_UNSUPPORTED (with the reason in
 * duet_last_error()) when the algorithm cannot run the call; DUET_ERR_INVALID_ARG for a
 * shape or model out of range (the simulator's limits for `simulated`); DUET_ERR_NO_MEMORY. */
duet_status_t duet_coll_predict_cost(const duet_coll_algo_t *al, const duet_coll_args_t *a,
                                     const duet_coll_model_t *m, duet_predict_how_t how, double *us);

/* The closed form alone (any rank count >= 1). */
duet_status_t duet_coll_predict_analytic(const duet_coll_algo_t *al, const duet_coll_args_t *a,
                                         const duet_coll_model_t *m, double *us);

/* Every candidate of one call, as the tuner sees them. */
typedef struct {
    const duet_coll_algo_t *algo;
    duet_status_t status; /* DUET_OK: `us` holds its cost; else why it cannot run, in `why` */
    double us;
    char why[200];
} duet_predict_entry_t;

typedef struct {
    duet_predict_how_t how;
    int n;    /* candidates in e[], in the order of duet_coll_algos[] */
    int best; /* index in e[] of the cheapest that can run (first one on a tie), -1: none */
    duet_predict_entry_t e[DUET_PREDICT_MAX];
} duet_predict_t;

/*
 * Costs every algorithm of a->kind — or only the one named `only` (a forced algorithm;
 * NULL or "" for all) — by the tuner's method for the shape, and names the cheapest.
 * Returns DUET_OK whenever it could cost the candidates, even if none can run (best -1,
 * the reasons in e[].why); an empty candidate set (n 0: `only` names no algorithm of the
 * kind) is DUET_OK too. Errors: DUET_ERR_INVALID_ARG for a model without a positive alpha
 * and beta or a kind without algorithms (send / recv).
 */
duet_status_t duet_coll_predict_all(const duet_coll_args_t *a, const duet_coll_model_t *m, const char *only,
                                    duet_predict_t *out);

/* What the tuner would cost for call a on c (a->rank is this rank; nothing is remembered or
 * logged): every candidate of a->kind, forced or not, under the model of a's executor (in
 * *model; collective the first time the model is needed on c, as the tuner's first pick is)
 * and with c's host map. Errors as duet_coll_predict_all's and the model's. */
duet_status_t duet_coll_tune_costs(duet_comm_t c, const duet_coll_args_t *a, duet_coll_model_t *model,
                                   duet_predict_t *pred);

/* The channel chunk and slots the settings give (DUET_COLL_CHUNK, DUET_COLL_SLOTS), as the
 * channels settle them: for costing calls without a communicator (duet-sim, tests). */
size_t duet_coll_predict_chunk(void);
int duet_coll_predict_slots(void);

#endif

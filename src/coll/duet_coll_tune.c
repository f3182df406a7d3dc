/*
 * The tuner: which algorithm runs a collective.
 *
 * DUET_ALGO forces a choice, for all collectives ("ring") or per collective
 * ("allreduce:tree,broadcast:ring"); a forced algorithm that cannot run the call is an
 * error, never a silent fallback. Otherwise every algorithm of the collective is costed
 * under the alpha-beta model of the transport (duet_coll_predict.h: simulated, extended in
 * size, or analytic, by the call's size) and the cheapest wins; duet-sim prints the same numbers.
 * Where the pick depends on where each rank's buffers are, the ranks agree it ("Placement");
 * where the best candidates are close, the tuner times them and keeps the fastest measured
 * ("Learning"). DUET_DEBUG=INFO DUET_DEBUG_SUBSYS=TUNE logs each pick. Where the ranks span hosts
 * (duet_coll_hosts.c), the candidates include the hierarchical algorithms (duet_coll_hier.c),
 * messages between hosts are priced at the model's net pair, and the log line says so:
 *   allreduce 1048576 bytes float, 4 ranks on 2 hosts (shm 0.5us 8GB/s, net 20us 0.5GB/s),
 *   simulated: ring=... hring=... -> hring
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_predict.h"
#include "coll/duet_coll_chan.h"
#include "coll/duet_coll_lane.h"
#include "coll/duet_coll_executor.h"

const duet_coll_algo_t duet_coll_algos[] = {
    {"ring", DUET_COLL_ALLREDUCE, duet_coll_ring_allreduce},
    {"tree", DUET_COLL_ALLREDUCE, duet_coll_tree_allreduce},
    {"dbtree", DUET_COLL_ALLREDUCE, duet_coll_dbtree_allreduce},
    {"rd", DUET_COLL_ALLREDUCE, duet_coll_rd_allreduce},
    {"rhd", DUET_COLL_ALLREDUCE, duet_coll_rhd_allreduce},
    {"oneshot", DUET_COLL_ALLREDUCE, duet_coll_oneshot_allreduce},
    {"twoshot", DUET_COLL_ALLREDUCE, duet_coll_twoshot_allreduce},
    {"hring", DUET_COLL_ALLREDUCE, duet_coll_hier_ring_allreduce},
    {"hdbtree", DUET_COLL_ALLREDUCE, duet_coll_hier_dbtree_allreduce},
    {"chain", DUET_COLL_BROADCAST, duet_coll_chain_broadcast},
    {"tree", DUET_COLL_BROADCAST, duet_coll_tree_broadcast},
    {"htree", DUET_COLL_BROADCAST, duet_coll_hier_tree_broadcast},
    {"chain", DUET_COLL_REDUCE, duet_coll_chain_reduce},
    {"tree", DUET_COLL_REDUCE, duet_coll_tree_reduce},
    {"htree", DUET_COLL_REDUCE, duet_coll_hier_tree_reduce},
    {"ring", DUET_COLL_ALLGATHER, duet_coll_ring_allgather},
    {"rd", DUET_COLL_ALLGATHER, duet_coll_rd_allgather},
    {"direct", DUET_COLL_ALLGATHER, duet_coll_direct_allgather},
    {"ring", DUET_COLL_REDUCE_SCATTER, duet_coll_ring_reduce_scatter},
    {"rhd", DUET_COLL_REDUCE_SCATTER, duet_coll_rhd_reduce_scatter},
    {"direct", DUET_COLL_REDUCE_SCATTER, duet_coll_direct_reduce_scatter},
    {"pairwise", DUET_COLL_ALLTOALL, duet_coll_pairwise_alltoall},
};
const int duet_coll_nalgos = (int)DUET_ARRAY_LEN(duet_coll_algos);

/* The algorithm DUET_ALGO names for `kind`, "" when it names none. */
/* DUET_ALGO, parsed once per process (the settings are read once): the forced name per
 * collective ("" none). Every GPU call asks, so it must not parse the string again. */
static char forced_names[DUET_COLL_KIND_COUNT][64];
static pthread_once_t forced_once = PTHREAD_ONCE_INIT;

static void parse_forced(void)
{
    for (int kind = 0; kind < DUET_COLL_KIND_COUNT; kind++) {
        const char *kname = duet_coll_kind_name((duet_coll_kind_t)kind);
        char buf[256], *out = forced_names[kind];
        size_t len = sizeof forced_names[kind];
        snprintf(buf, sizeof buf, "%s", duet_cfg()->algo);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            char *colon = strchr(tok, ':');
            if (!colon) {
                snprintf(out, len, "%s", tok); /* applies to every collective unless named */
                continue;
            }
            *colon = '\0';
            if (strcmp(tok, kname) == 0) {
                snprintf(out, len, "%s", colon + 1);
                break;
            }
        }
    }
}

/*
 * Learning. The model predicts; the machine decides. For a call shape whose best predicted
 * candidates are close (the next ones within LEARN_WITHIN of the best, at most LEARN_MAX in
 * all), the tuner runs each in turn for LEARN_WARMUP + LEARN_CALLS calls, the predicted best
 * first, timing each call (two clock reads around the executor). Every rank counts the same
 * calls (a shape on trial takes the full path on every rank: the repeat path is off for it),
 * so at the same call every rank holds the means of every candidate; the ranks then exchange
 * them (the slowest rank's mean is the call's time: double MAX, under the call's signature)
 * and keep the fastest measured, on every rank alike. The TUNE line then gives the measured
 * times beside the predicted ones. DUET_TUNE_LEARN=0 turns it off; a forced algorithm, a call
 * the latency lane may run and one inside a group are never learned from. A GPU call only
 * queues work, so its time is known later: such a call on trial (duet_coll_tune_trial) is
 * recorded as 0 when queued and timed on its stream, and the times are handed over before
 * the deciding call (duet_coll_tune_deciding, duet_coll_tune_set_times); a call being captured
 * into a CUDA graph is not counted.
 */
#define LEARN_MAX DUET_TUNE_LEARN_MAX
#define LEARN_WITHIN 2.0   /* ... predicted within this factor of the best                      */
#define LEARN_WARMUP 1     /* a candidate's first call is not counted (its schedule, cold caches) */
#define LEARN_CALLS DUET_TUNE_LEARN_CALLS
enum { LEARN_OFF, LEARN_TRYING, LEARN_DONE };

typedef struct {
    int phase;
    int n, cur, calls;   /* candidates, the one on trial, its calls so far                        */
    int cand[LEARN_MAX]; /* indexes in duet_coll_algos                                            */
    double sum[LEARN_MAX]; /* this rank's counted times, us                                        */
} learn_t;

/* Decisions already taken on this communicator, by call shape: TUNE_CACHE entries in sets of
 * TUNE_WAYS (a shape lives in its set's ways; a new one takes an empty way, else the least
 * recently used): two shapes a job alternates between never take each other's place, which
 * would restart their learning at every call. */
#define TUNE_CACHE 64
#define TUNE_WAYS 4
#define CACHED_STEPS_MAX 4096 /* schedules up to this size are kept for reuse */
struct duet_coll_tune_cache {
    duet_coll_repeat_t repeat; /* first: duet_coll_tune_repeat */
    /* duet_coll_tune_force's choice per collective (a name of duet_coll_algos[]), NULL:
     * DUET_ALGO's; kept when the decisions are forgotten */
    const char *force[DUET_COLL_KIND_COUNT];
    struct {
        uint64_t key1, key2;
        int algo;           /* index in duet_coll_algos, -1: empty */
        int in_place;       /* the call the schedule was built for was in place */
        duet_sched_t sched; /* this rank's schedule for the shape (nsteps 0: not kept) */
        learn_t learn;      /* what is measured of it (see "Learning") */
        char why[1024];     /* the TUNE log line: each candidate's predicted time, the choice */
        uint64_t used;      /* when last picked (the cache's clock): the least recent goes first */
    } e[TUNE_CACHE];
    uint64_t clock;
    int last; /* the entry of the last call picked with an exchange (duet_coll_tune_record), -1 */
};

_Static_assert(offsetof(struct duet_coll_tune_cache, repeat) == 0, "duet_coll_tune_repeat reads the first member");

/* c's cache, made on first use (NULL when out of memory: then nothing is remembered). */
static struct duet_coll_tune_cache *cache_of(duet_comm_t c)
{
    if (!c->tune && (c->tune = calloc(1, sizeof *c->tune))) {
        for (int i = 0; i < TUNE_CACHE; i++) c->tune->e[i].algo = -1;
        c->tune->last = -1;
    }
    return c->tune;
}

void duet_coll_forced_algo(duet_comm_t c, duet_coll_kind_t kind, char *out, size_t len)
{
    pthread_once(&forced_once, parse_forced);
    int known = (int)kind >= 0 && kind < DUET_COLL_KIND_COUNT;
    const char *mine = known && c && c->tune ? c->tune->force[kind] : NULL;
    snprintf(out, len, "%s", mine ? mine : known ? forced_names[kind] : "");
}

/* Who forces kind's algorithm on c, in words (when one is forced). */
static const char *forced_by(duet_comm_t c, duet_coll_kind_t kind)
{
    return c->tune && c->tune->force[kind] ? "duet_coll_tune_force" : "DUET_ALGO";
}

void duet_coll_tune_forget(duet_comm_t c)
{
    if (!c->tune) return;
    for (int i = 0; i < TUNE_CACHE; i++) {
        duet_sched_free(&c->tune->e[i].sched);
        c->tune->e[i].algo = -1;
    }
    c->tune->last = -1;
    memset(&c->tune->repeat, 0, sizeof c->tune->repeat);
}

duet_status_t duet_coll_tune_force(duet_comm_t c, duet_coll_kind_t kind, const char *name)
{
    if ((int)kind < 0 || kind >= DUET_COLL_KIND_COUNT)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, TUNE, "duet_coll_tune_force: no collective of kind %d", (int)kind);
    const char *found = NULL;
    for (int i = 0; name && name[0] && i < duet_coll_nalgos && !found; i++)
        if (duet_coll_algos[i].kind == kind && strcmp(duet_coll_algos[i].name, name) == 0)
            found = duet_coll_algos[i].name;
    if (name && name[0] && !found)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, TUNE, "duet_coll_tune_force: %s has no algorithm \"%s\"",
                         duet_coll_kind_name(kind), name);
    if (!cache_of(c)) return DUET_FAIL(DUET_ERR_NO_MEMORY, TUNE, "out of host memory");
    duet_coll_tune_forget(c); /* decisions taken under the old choice */
    c->tune->force[kind] = found;
    return DUET_OK;
}

void duet_coll_tune_free(duet_comm_t c)
{
    if (c->tune)
        for (int i = 0; i < TUNE_CACHE; i++) duet_sched_free(&c->tune->e[i].sched);
    free(c->tune);
    c->tune = NULL;
}

/* *out: a with the host map of c's ranks (CPU calls: the GPU executor keeps its one model):
 * hierarchical algorithms and the net pair of the model apply where the ranks span hosts. */
static duet_status_t with_hosts(duet_comm_t c, const duet_coll_args_t *a, duet_coll_args_t *out)
{
    *out = *a;
    if (a->gpu || a->host) return DUET_OK;
    const int *host;
    int nhosts;
    duet_status_t st = duet_coll_hosts_get(c, &host, &nhosts);
    if (!st && nhosts > 1) out->host = host, out->nhosts = nhosts;
    return st;
}

/* Every candidate's cost for a (with the host map) under the model of a's executor. */
static duet_status_t costs(duet_comm_t c, const duet_coll_args_t *a, const char *only, duet_coll_model_t *model,
                           duet_predict_t *pred)
{
    const duet_coll_executor_t *ex = a->gpu ? duet_coll_gpu_executor : &duet_coll_host_executor;
    duet_status_t mst = ex ? ex->model(c, model)
                           : duet_error_set(DUET_ERR_UNSUPPORTED, "the GPU model: no device executor in this build");
    return mst ? mst : duet_coll_predict_all(a, model, only, pred);
}

duet_status_t duet_coll_tune_costs(duet_comm_t c, const duet_coll_args_t *a, duet_coll_model_t *model,
                                   duet_predict_t *pred)
{
    duet_coll_args_t ha;
    duet_status_t st = with_hosts(c, a, &ha);
    return st ? st : costs(c, &ha, NULL, model, pred);
}

/*
 * Placement. Whether a call's buffers lie in the heap (messages by reference, one copy) and
 * whether it runs in place change its costs, and each rank knows only its own: costed by
 * them alone, two ranks could pick different algorithms for one call. So the tuner costs a
 * call's candidates under every placement it could have — in place or not, and (from
 * DUET_CHAN_BYREF_MIN bytes) by reference or not — which every rank does alike. When they all
 * pick the same, that is the pick, with no word exchanged; else the ranks tell each other
 * theirs (once per call shape: decisions are cached by shape alone, so every rank meets the
 * same first calls), in an exchange that is part of the call (under its signature: a rank
 * that makes another call is a mismatch, as in any other message), and cost the placement of
 * them all: by reference if every rank's buffers are in the heap, in place if every rank's
 * call is. Where no exchange may run (inside a group) such a call is costed as copied, out of
 * place, on every rank.
 */
enum { PLACE_COPIED, PLACE_BYREF, PLACE_IN_PLACE = 2, PLACES = 4 };

static int place_of(const duet_coll_args_t *a) { return (a->byref ? PLACE_BYREF : 0) | (a->in_place ? PLACE_IN_PLACE : 0); }

/* The candidates of every placement a's call could have (pred[p], p of PLACE_ bits; by
 * reference only from DUET_CHAN_BYREF_MIN bytes; a forced algorithm, a GPU call or one rank:
 * this rank's alone). *place: the placement to use — this rank's when the pick does not
 * depend on it, else the one agreed (*exchanged 1), or copied without `agree`. */
static duet_status_t costs_placed(duet_comm_t c, const duet_coll_args_t *a, const char *only, duet_coll_agree_fn agree,
                                  void *ctx, duet_coll_model_t *model, duet_predict_t *pred, int *place, int *exchanged)
{
    *place = place_of(a), *exchanged = 0;
    size_t most = a->count * a->elem * (a->kind == DUET_COLL_ALLTOALL || a->kind == DUET_COLL_REDUCE_SCATTER
                                            ? (size_t)a->nranks : 1);
    int byref_may = most >= DUET_CHAN_BYREF_MIN, fixed = (only && only[0]) || a->gpu || a->nranks < 2;
    duet_coll_args_t pa = *a;
    if (!byref_may) *place &= ~PLACE_BYREF;
    int first_best = -2, differ = 0;
    for (int p = 0; p < PLACES; p++) {
        if ((p & PLACE_BYREF) && !byref_may) continue;
        if (fixed && p != *place) continue;
        pa.byref = (p & PLACE_BYREF) != 0, pa.in_place = (p & PLACE_IN_PLACE) != 0;
        duet_status_t st = costs(c, &pa, only, model, &pred[p]);
        if (st) return st;
        int best = pred[p].best >= 0 ? (int)(pred[p].e[pred[p].best].algo - duet_coll_algos) : -1;
        if (first_best == -2) first_best = best;
        differ |= best != first_best;
    }
    if (!differ) return DUET_OK;
    if (!agree) { /* no exchange may run: the same placement on every rank */
        *place = PLACE_COPIED;
        return DUET_OK;
    }
    /* the pick depends on where the buffers are: every rank says where its are */
    const uint8_t mine[2] = {(*place & PLACE_BYREF) != 0, (*place & PLACE_IN_PLACE) != 0};
    uint8_t all[2];
    duet_status_t st = agree(ctx, mine, all, 2, DUET_UINT8, DUET_MIN);
    if (st) return st;
    *place = (all[0] ? PLACE_BYREF : 0) | (all[1] ? PLACE_IN_PLACE : 0);
    *exchanged = 1;
    return DUET_OK;
}

static const char *place_name(int place)
{
    static const char *const names[PLACES] = {"copied", "by reference", "in place, copied", "in place, by reference"};
    return names[place & (PLACES - 1)];
}

/* A call shape's cache key and the first entry of its set: by shape alone, as placement is
 * the rank's own (see "Placement" above). */
static size_t set_of(const duet_coll_args_t *a, uint64_t *key1, uint64_t *key2)
{
    *key1 = ((uint64_t)a->kind << 56) ^ (a->count * a->elem);
    *key2 = ((uint64_t)(uint32_t)a->root << 32) | ((uint64_t)a->gpu << 24) | (uint64_t)a->elem;
    /* every bit of both keys mixed into every bit of the slot's (a plain product's low bits
     * depend on the low bits alone: every size that is a multiple of 64 bytes, of any
     * collective, shared one slot) */
    uint64_t h = *key1 ^ (*key2 * 0x9e3779b97f4a7c15ull);
    h ^= h >> 33, h *= 0xff51afd7ed558ccdull, h ^= h >> 33, h *= 0xc4ceb9fe1a85ec53ull, h ^= h >> 33;
    return (size_t)(h % (TUNE_CACHE / TUNE_WAYS)) * TUNE_WAYS;
}

/* The entry holding shape a (its keys in *key1, *key2); when none does, -1, or with `take` the
 * entry it is to take (an empty way of its set, else the least recently used). Every rank
 * picks the same shapes in the same order, so every rank takes the same entry. */
static int slot_of(duet_comm_t c, const duet_coll_args_t *a, uint64_t *key1, uint64_t *key2, int take)
{
    size_t base = set_of(a, key1, key2);
    if (!c->tune) return take ? (int)base : -1;
    int empty = -1, oldest = (int)base;
    for (int w = 0; w < TUNE_WAYS; w++) {
        int i = (int)base + w;
        if (c->tune->e[i].algo < 0) {
            if (empty < 0) empty = i;
            continue;
        }
        if (c->tune->e[i].key1 == *key1 && c->tune->e[i].key2 == *key2) return i;
        if (c->tune->e[i].used < c->tune->e[oldest].used || c->tune->e[oldest].algo < 0) oldest = i;
    }
    return !take ? -1 : empty >= 0 ? empty : oldest;
}

int duet_coll_tune_learn_calls(void)
{
    return duet_cfg()->tune_learn ? LEARN_MAX * (LEARN_WARMUP + LEARN_CALLS) + 1 : 0; /* + the deciding call */
}

int duet_coll_tune_learn_phase(duet_comm_t c, const duet_coll_args_t *a)
{
    uint64_t key1, key2;
    int slot = slot_of(c, a, &key1, &key2, 0);
    return slot < 0 ? -1 : c->tune->e[slot].learn.phase;
}

/* The candidates to time for a shape just costed (pred, its pick `best`), or phase OFF. */
static learn_t learn_plan(const duet_predict_t *pred, const duet_coll_algo_t *best, int may)
{
    learn_t L = {LEARN_OFF, 0, 0, 0, {0}, {0}};
    if (!may || pred->best < 0) return L;
    double top = pred->e[pred->best].us;
    L.cand[L.n++] = (int)(best - duet_coll_algos);
    while (L.n < LEARN_MAX) { /* the next cheapest within LEARN_WITHIN, in order */
        int next = -1;
        for (int i = 0; i < pred->n; i++) {
            const duet_predict_entry_t *e = &pred->e[i];
            int taken = 0;
            for (int k = 0; k < L.n; k++) taken |= L.cand[k] == (int)(e->algo - duet_coll_algos);
            if (e->status == DUET_OK && !taken && e->us <= LEARN_WITHIN * top && (next < 0 || e->us < pred->e[next].us))
                next = i;
        }
        if (next < 0) break;
        L.cand[L.n++] = (int)(pred->e[next].algo - duet_coll_algos);
    }
    if (L.n > 1) L.phase = LEARN_TRYING;
    return L;
}

void duet_coll_tune_record(duet_comm_t c, double us)
{
    if (!c->tune || c->tune->last < 0) return;
    struct duet_coll_tune_cache *t = c->tune;
    learn_t *L = &t->e[t->last].learn;
    if (L->phase != LEARN_TRYING || L->cur >= L->n) return;
    t->repeat.again.valid = 0; /* the shape's next call takes the full path on every rank, and is counted */
    if (++L->calls > LEARN_WARMUP) L->sum[L->cur] += us;
    if (L->calls < LEARN_WARMUP + LEARN_CALLS) return;
    L->cur++, L->calls = 0;
    if (L->cur < L->n) { /* the next candidate's turn */
        t->e[t->last].algo = L->cand[L->cur];
        duet_sched_free(&t->e[t->last].sched);
    }
}

int duet_coll_tune_trial(duet_comm_t c)
{
    if (!c->tune || c->tune->last < 0) return -1;
    const learn_t *L = &c->tune->e[c->tune->last].learn;
    if (L->phase != LEARN_TRYING || L->cur >= L->n) return -1;
    return L->calls >= LEARN_WARMUP ? L->cur : -2; /* record() counts it when calls > WARMUP after ++ */
}

/* a's entry, when the cache holds it; NULL otherwise */
static learn_t *learn_of(duet_comm_t c, const duet_coll_args_t *a)
{
    uint64_t key1, key2;
    int slot = slot_of(c, a, &key1, &key2, 0);
    return slot < 0 ? NULL : &c->tune->e[slot].learn;
}

int duet_coll_tune_deciding(duet_comm_t c, const duet_coll_args_t *a)
{
    const learn_t *L = learn_of(c, a);
    return L && L->phase == LEARN_TRYING && L->cur == L->n;
}

void duet_coll_tune_set_times(duet_comm_t c, const duet_coll_args_t *a, const double *sum)
{
    learn_t *L = learn_of(c, a);
    if (!L || L->phase != LEARN_TRYING) return;
    for (int i = 0; i < L->n; i++) L->sum[i] = sum[i];
}

/* Every candidate of entry `slot` has been timed: the ranks exchange their means and keep the
 * fastest (the exchange is a call of its own, which may take the entry's slot: it is written
 * back whole). */
static duet_status_t learn_decide(duet_comm_t c, size_t slot, duet_coll_agree_fn agree, void *ctx)
{
    struct duet_coll_tune_cache *t = c->tune;
    learn_t L = t->e[slot].learn;
    uint64_t key1 = t->e[slot].key1, key2 = t->e[slot].key2;
    int in_place = t->e[slot].in_place;
    char why[sizeof t->e[slot].why];
    memcpy(why, t->e[slot].why, sizeof why);
    double mine[LEARN_MAX], all[LEARN_MAX];
    for (int i = 0; i < L.n; i++) mine[i] = L.sum[i] / LEARN_CALLS;
    duet_status_t st = agree(ctx, mine, all, (size_t)L.n, DUET_FLOAT64, DUET_MAX);
    if (st) return st;
    int win = 0;
    for (int i = 1; i < L.n; i++)
        if (all[i] < all[win]) win = i;
    if (t->e[slot].key1 != key1 || t->e[slot].key2 != key2 || t->e[slot].algo != L.cand[win]) {
        duet_sched_free(&t->e[slot].sched);
        t->repeat.again.valid = 0; /* it may name the schedule freed here */
    }
    t->e[slot].key1 = key1, t->e[slot].key2 = key2, t->e[slot].in_place = in_place;
    t->e[slot].algo = L.cand[win];
    L.phase = LEARN_DONE;
    t->e[slot].learn = L;
    size_t used = strlen(why);
    used += (size_t)snprintf(why + used, sizeof why - used, "; measured (the slowest rank's mean of %d calls):",
                             LEARN_CALLS);
    for (int i = 0; i < L.n && used < sizeof why; i++)
        used += (size_t)snprintf(why + used, sizeof why - used, " %s=%.2fus", duet_coll_algos[L.cand[i]].name, all[i]);
    if (used < sizeof why)
        snprintf(why + used, sizeof why - used, " -> %s (learned)", duet_coll_algos[L.cand[win]].name);
    memcpy(t->e[slot].why, why, sizeof why);
    DUET_LOG(INFO, TUNE, "%s", why);
    return DUET_OK;
}

static duet_status_t pick(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt, duet_coll_agree_fn agree,
                          void *ctx, int cached, const duet_coll_algo_t **algo, duet_sched_t *sched,
                          const duet_sched_t **plan);

duet_status_t duet_coll_tune_pick(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt,
                                  const duet_coll_algo_t **algo, duet_sched_t *sched, const duet_sched_t **plan)
{
    return pick(c, a, dt, NULL, NULL, 1, algo, sched, plan);
}

duet_status_t duet_coll_tune_pick_agreed(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt,
                                         duet_coll_agree_fn agree, void *ctx, const duet_coll_algo_t **algo,
                                         duet_sched_t *sched, const duet_sched_t **plan)
{
    return pick(c, a, dt, agree, ctx, 1, algo, sched, plan);
}

duet_status_t duet_coll_tune_pick_inner(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt,
                                        const duet_coll_algo_t **algo, duet_sched_t *sched, const duet_sched_t **plan)
{
    return pick(c, a, dt, NULL, NULL, 0, algo, sched, plan);
}

/* cached 0: neither read nor write the decisions (duet_coll_tune_pick_inner) */
static duet_status_t pick(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt, duet_coll_agree_fn agree,
                          void *ctx, int cached, const duet_coll_algo_t **algo, duet_sched_t *sched,
                          const duet_sched_t **plan)
{
    const char *kname = duet_coll_kind_name(a->kind);
    uint64_t key1, key2;
    cache_of(c);
    size_t slot = (size_t)slot_of(c, a, &key1, &key2, 1);
    if (cached && c->tune) c->tune->last = -1, c->tune->e[slot].used = ++c->tune->clock;
    const duet_coll_algo_t *best = NULL;
    if (cached && c->tune && c->tune->e[slot].algo >= 0 && c->tune->e[slot].key1 == key1 && c->tune->e[slot].key2 == key2) {
        learn_t *L = &c->tune->e[slot].learn;
        if (agree && L->phase == LEARN_TRYING && L->cur == L->n) { /* all timed: decide, every rank at this call */
            duet_status_t lst = learn_decide(c, slot, agree, ctx);
            if (lst) return lst;
        } else {
            DUET_LOG(INFO, TUNE, "%s", c->tune->e[slot].why); /* one line per call, cached or not */
        }
        best = &duet_coll_algos[c->tune->e[slot].algo];
        if (agree) c->tune->last = (int)slot;
        if (c->tune->e[slot].sched.nsteps && c->tune->e[slot].in_place == a->in_place) { /* the same call again */
            *algo = best;
            *plan = &c->tune->e[slot].sched;
            return DUET_OK;
        }
    }
    learn_t learn = {LEARN_OFF, 0, 0, 0, {0}, {0}};
    int hit = best != NULL;
    duet_coll_args_t ha;
    duet_status_t hst = with_hosts(c, a, &ha);
    if (hst) return hst;
    a = &ha;
    char forced[64];
    duet_coll_forced_algo(c, a->kind, forced, sizeof forced);
    if (!best) {
        duet_coll_model_t model;
        duet_predict_t *preds = malloc(sizeof *preds * PLACES); /* each placement's candidates */
        if (!preds) return DUET_FAIL(DUET_ERR_NO_MEMORY, TUNE, "out of host memory");
        int place, exchanged;
        duet_status_t pst = costs_placed(c, a, forced, agree, ctx, &model, preds, &place, &exchanged);
        duet_predict_t pred = preds[place];
        free(preds);
        if (pst) return pst;
        char line[768];
        const char *refused = "";
        duet_status_t refusal = DUET_OK;
        char hosts[160] = ""; /* over hosts: the two link classes' prices */
        if (a->nhosts > 1)
            snprintf(hosts, sizeof hosts, " on %d hosts (shm %.3gus %.3gGB/s, net %.3gus %.3gGB/s)", a->nhosts,
                     model.alpha_us, model.beta_gbps, model.net_alpha_us, model.net_beta_gbps);
        char terms[200] = ""; /* the fitted terms beside alpha and beta, when there are */
        if (model.fit_err > 0)
            snprintf(terms, sizeof terms, " (alpha %.3gus, beta %.3gGB/s, copy %.3gGB/s, mem %.3gGB/s past %.3gMiB, "
                     "reduce %.3gGB/s, step %.3gus, call %.3gus; fit err %.0f%%)", model.alpha_us, model.beta_gbps,
                     model.copy_gbps, model.mem_gbps, model.knee_bytes / 1048576.0, model.reduce_gbps, model.step_us,
                     duet_coll_call_us(&model, a->kind), 100 * model.fit_err);
        int used = snprintf(line, sizeof line, "%s %zu bytes %s, %d ranks%s%s, %s%s%s, %s%s:", kname, a->count * a->elem,
                            duet_dtype_name(dt), a->nranks, hosts, terms, a->gpu ? "gpu, " : "", place_name(place),
                            exchanged ? " (agreed by all ranks)" : "", duet_predict_how_name(pred.how),
                            model.stream ? ", one of a stream" : "");
        for (int i = 0; i < pred.n; i++) {
            const duet_predict_entry_t *e = &pred.e[i];
            if (e->status != DUET_OK) {
                if (forced[0])
                    return DUET_FAIL(DUET_ERR_INVALID_ARG, TUNE, "%s forces %s for %s, which cannot run "
                                     "it: %s", forced_by(c, a->kind), forced, kname, e->why);
                refusal = e->status;
                refused = e->why;
                continue;
            }
            if (used < (int)sizeof line)
                used += snprintf(line + used, sizeof line - (size_t)used, " %s=%.2fus", e->algo->name, e->us);
        }
        if (pred.best >= 0) best = pred.e[pred.best].algo;
        size_t bytes = a->count * a->elem;
        int may_learn = duet_cfg()->tune_learn && agree && !forced[0] && a->nranks > 1 && bytes > 0 &&
                        (a->gpu || !(a->kind == DUET_COLL_ALLREDUCE && bytes <= 2 * DUET_LANE_BYTES)); /* not the lane's */
        if (best) learn = learn_plan(&pred, best, may_learn);
        if (!best) {
            if (forced[0])
                return DUET_FAIL(DUET_ERR_INVALID_ARG, TUNE, "%s forces \"%s\" for %s: no such "
                                 "algorithm for this collective", forced_by(c, a->kind), forced, kname);
            return DUET_FAIL(refusal ? refusal : DUET_ERR_INTERNAL, TUNE, "no algorithm can run this %s: %s", kname,
                             refused[0] ? refused : "none is registered");
        }
        if (used < (int)sizeof line)
            snprintf(line + used, sizeof line - (size_t)used, " -> %s%s%s", best->name,
                     forced[0] ? " (forced by " : "", forced[0] ? forced_by(c, a->kind) : "");
        if (forced[0] && used < (int)sizeof line) strncat(line, ")", sizeof line - strlen(line) - 1);
        DUET_LOG(INFO, TUNE, "%s", line);
        if (cached && c->tune) snprintf(c->tune->e[slot].why, sizeof c->tune->e[slot].why, "%s", line);
    }
    duet_sched_init(sched, a->rank, a->nranks, a->elem);
    duet_status_t st = best->build(a, sched);
    if (st == DUET_OK) duet_sched_drop_unused_tmp(sched); /* no scratch to allocate per call */
    sched->name = best->name;
    *algo = best;
    *plan = sched;
    if (st) { /* a decision of this shape taken for a call of another placement (in place or not) */
        duet_sched_free(sched);
        if (forced[0] && st == DUET_ERR_UNSUPPORTED)
            return DUET_FAIL(DUET_ERR_INVALID_ARG, TUNE, "%s forces %s for %s, which cannot run it: %s",
                             forced_by(c, a->kind), forced, kname, duet_last_error());
        return st;
    }
    if (cached && c->tune) { /* remember the decision, and a small schedule itself (the cache owns it) */
        c->tune->repeat.again.valid = 0; /* it may name the schedule freed here */
        duet_sched_free(&c->tune->e[slot].sched);
        c->tune->e[slot].key1 = key1;
        c->tune->e[slot].key2 = key2;
        c->tune->e[slot].algo = (int)(best - duet_coll_algos);
        c->tune->e[slot].in_place = a->in_place;
        if (!hit) c->tune->e[slot].learn = learn; /* a new decision: what to time of it */
        if (agree) c->tune->last = (int)slot;
        if (sched->nsteps > 0 && sched->nsteps <= CACHED_STEPS_MAX) {
            c->tune->e[slot].sched = *sched;
            duet_sched_init(sched, a->rank, a->nranks, a->elem); /* ownership moved */
            *plan = &c->tune->e[slot].sched;
        }
    }
    return DUET_OK;
}

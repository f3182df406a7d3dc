/*
 * The tuner: which algorithm runs a collective.
 *
 * DUET_ALGO forces a choice, for all collectives ("ring") or per collective
 * ("allreduce:tree,broadcast:ring"); a forced algorithm that cannot run the call is an
 * error, never a silent fallback. Otherwise every algorithm of the collective is costed
 * under the alpha-beta model of the transport (duet_coll_predict.h: simulated, extended in
 * size, or analytic, by the call's size) and the cheapest wins; duet-sim prints the same numbers.
 * DUET_DEBUG=INFO DUET_DEBUG_SUBSYS=TUNE logs each pick. Where the ranks span hosts
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

/* Decisions already taken on this communicator, by call shape. */
#define TUNE_CACHE 64
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
        char why[768];      /* the TUNE log line: each candidate's predicted time, the choice */
    } e[TUNE_CACHE];
};

_Static_assert(offsetof(struct duet_coll_tune_cache, repeat) == 0, "duet_coll_tune_repeat reads the first member");

/* c's cache, made on first use (NULL when out of memory: then nothing is remembered). */
static struct duet_coll_tune_cache *cache_of(duet_comm_t c)
{
    if (!c->tune && (c->tune = calloc(1, sizeof *c->tune)))
        for (int i = 0; i < TUNE_CACHE; i++) c->tune->e[i].algo = -1;
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
    duet_status_t st = agree(ctx, mine, all);
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

duet_status_t duet_coll_tune_pick(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt,
                                  const duet_coll_algo_t **algo, duet_sched_t *sched, const duet_sched_t **plan)
{
    return duet_coll_tune_pick_agreed(c, a, dt, NULL, NULL, algo, sched, plan);
}

duet_status_t duet_coll_tune_pick_agreed(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt,
                                         duet_coll_agree_fn agree, void *ctx, const duet_coll_algo_t **algo,
                                         duet_sched_t *sched, const duet_sched_t **plan)
{
    const char *kname = duet_coll_kind_name(a->kind);
    /* by shape alone: placement is the rank's own (see "Placement" above) */
    uint64_t key1 = ((uint64_t)a->kind << 56) ^ (a->count * a->elem), key2 = ((uint64_t)(uint32_t)a->root << 32) |
                    ((uint64_t)a->gpu << 24) | (uint64_t)a->elem;
    size_t slot = (size_t)((key1 * 0x9e3779b97f4a7c15ull) ^ key2) % TUNE_CACHE;
    cache_of(c);
    const duet_coll_algo_t *best = NULL;
    if (c->tune && c->tune->e[slot].algo >= 0 && c->tune->e[slot].key1 == key1 && c->tune->e[slot].key2 == key2) {
        best = &duet_coll_algos[c->tune->e[slot].algo];
        DUET_LOG(INFO, TUNE, "%s", c->tune->e[slot].why); /* one line per call, cached or not */
        if (c->tune->e[slot].sched.nsteps && c->tune->e[slot].in_place == a->in_place) { /* the same call again */
            *algo = best;
            *plan = &c->tune->e[slot].sched;
            return DUET_OK;
        }
    }
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
                     model.call_us, 100 * model.fit_err);
        int used = snprintf(line, sizeof line, "%s %zu bytes %s, %d ranks%s%s, %s%s%s, %s:", kname, a->count * a->elem,
                            duet_dtype_name(dt), a->nranks, hosts, terms, a->gpu ? "gpu, " : "", place_name(place),
                            exchanged ? " (agreed by all ranks)" : "", duet_predict_how_name(pred.how));
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
        if (c->tune) snprintf(c->tune->e[slot].why, sizeof c->tune->e[slot].why, "%s", line);
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
    if (c->tune) { /* remember the decision, and a small schedule itself (the cache owns it) */
        c->tune->repeat.again.valid = 0; /* it may name the schedule freed here */
        duet_sched_free(&c->tune->e[slot].sched);
        c->tune->e[slot].key1 = key1;
        c->tune->e[slot].key2 = key2;
        c->tune->e[slot].algo = (int)(best - duet_coll_algos);
        c->tune->e[slot].in_place = a->in_place;
        if (sched->nsteps > 0 && sched->nsteps <= CACHED_STEPS_MAX) {
            c->tune->e[slot].sched = *sched;
            duet_sched_init(sched, a->rank, a->nranks, a->elem); /* ownership moved */
            *plan = &c->tune->e[slot].sched;
        }
    }
    return DUET_OK;
}

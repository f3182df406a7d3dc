/*
 * ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd.
 *
 * They are Duet's groups: ncclGroupStart opens one (duet_group_start), a call or an init inside
 * it waits in Duet's one group queue as this layer's entry (duet_ext_group_add, duet_ext.h),
 * and the outermost ncclGroupEnd closes it (duet_group_end), which hands this layer its
 * entries, in call order (run_entries below), before Duet's own calls of the group. This
 * layer runs the inits first, each on a thread of its own when there are several (an init
 * returns only when all its ranks have joined, and NCCL lets one thread initialise several
 * ranks in a group), then the calls, split by communicator, keeping their order: one
 * communicator's calls run in this thread; the calls of several communicators run on a thread
 * per communicator (the ranks of an ncclCommInitAll clique driven from one thread must
 * progress together). The first error is returned; everything queued is released. A Duet
 * call made inside an NCCL group is part of it; ncclCommSplit and ncclCommShrink run at once
 * (nccl_split.c sets the group aside for their own exchange).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl_compat.h"
#include "duet/duet_ext.h"

/* One entry of this layer in Duet's group queue. */
typedef struct {
    int is_init;
    union {
        nccl_call_t call;
        nccl_init_call_t init;
    } u;
} entry_t;

static const duet_ext_group_layer_t nccl_layer;

/* The result of this thread's last run of the layer's entries (ncclGroupEnd returns it). */
static _Thread_local ncclResult_t last_run = ncclSuccess;

int nccl_group_depth(void) { return duet_ext_group_depth(); }

static ncclResult_t add(const entry_t *e, const char *fn)
{
    duet_status_t st = duet_ext_group_add(&nccl_layer, e, sizeof *e);
    if (st == DUET_ERR_NO_MEMORY)
        return nccl_fail(ncclSystemError, "%s: out of host memory queuing the call in a group", fn);
    return st ? nccl_fail(ncclInternalError, "%s: %s", fn, duet_last_error()) : ncclSuccess;
}

ncclResult_t nccl_group_add_call(const nccl_call_t *call)
{
    entry_t e = {.is_init = 0, .u.call = *call};
    return add(&e, call->fn);
}

ncclResult_t nccl_group_add_init(const nccl_init_call_t *init)
{
    entry_t e = {.is_init = 1, .u.init = *init};
    return add(&e, "ncclCommInitRank");
}

/* A unit of work for a thread: one init, or one communicator's calls. */
typedef struct {
    const nccl_init_call_t *init;
    nccl_call_t *calls;
    int n;
    struct ncclComm *destroy; /* or a communicator to destroy (cliques) */
    ncclResult_t result;
    char msg[512]; /* the worker's last error, carried back to the calling thread */
} work_t;

static void *work_main(void *arg)
{
    work_t *w = arg;
    if (w->init) {
        w->result = nccl_init_run(w->init);
    } else if ((w->result = nccl_comm_enter(w->calls[0].comm, "ncclGroupEnd")) == ncclSuccess) {
        nccl_cuda_set_device(w->calls[0].comm->cuda_dev); /* (an abort from another thread waits) */
        w->result = nccl_calls_run(w->calls, w->n);
        duet_ext_inflight_leave();
    } else {
        for (int i = 0; i < w->n; i++) nccl_call_free_temp(&w->calls[i]);
    }
    if (w->result) snprintf(w->msg, sizeof w->msg, "%s", duet_last_error());
    return NULL;
}

/* Runs works[0..n) (the first in this thread when n == 1, else a thread each); the first error. */
static ncclResult_t run_works(work_t *works, int n)
{
    if (n == 1) {
        work_main(&works[0]);
        return works[0].result;
    }
    pthread_t *tids = calloc((size_t)n, sizeof *tids);
    int *started = calloc((size_t)n, sizeof *started);
    ncclResult_t r = ncclSuccess;
    if (!tids || !started) r = nccl_fail(ncclSystemError, "ncclGroupEnd: out of host memory");
    for (int i = 0; i < n && r == ncclSuccess; i++) {
        if (pthread_create(&tids[i], NULL, work_main, &works[i]) != 0) {
            r = nccl_fail(ncclSystemError, "ncclGroupEnd: cannot start a thread for the group's work %d of %d", i, n);
            break;
        }
        started[i] = 1;
    }
    for (int i = 0; i < n; i++)
        if (started && started[i]) pthread_join(tids[i], NULL);
    for (int i = 0; i < n && r == ncclSuccess; i++)
        if (works[i].result) {
            r = works[i].result;
            duet_ext_error_set(DUET_ERR_INVALID_ARG, "%s", works[i].msg);
        }
    free(tids);
    free(started);
    return r;
}

/* ---- cliques ---------------------------------------------------------------------------- */
static void make_clique(const nccl_init_call_t *inits, int ninits)
{
    struct nccl_clique *q = calloc(1, sizeof *q + sizeof(struct ncclComm *) * (size_t)ninits);
    if (!q) return; /* then each rank is destroyed on its own, as a program with a thread per rank does */
    q->n = ninits;
    for (int i = 0; i < ninits; i++) q->comms[i] = *inits[i].out, q->comms[i]->clique = q;
}

static void *destroy_main(void *arg)
{
    work_t *w = arg;
    w->result = nccl_comm_free(w->destroy, "ncclCommDestroy");
    if (w->result) snprintf(w->msg, sizeof w->msg, "%s", duet_last_error());
    return NULL;
}

ncclResult_t nccl_clique_free(struct ncclComm *comm, const char *fn)
{
    struct nccl_clique *q = comm->clique;
    if (!q) return nccl_comm_free(comm, fn);
    comm->destroy_pending = 1;
    if (++q->pending < q->n) return ncclSuccess;
    /* the last of the clique: all leave together, each on its thread */
    work_t *works = calloc((size_t)q->n, sizeof *works);
    pthread_t *tids = calloc((size_t)q->n, sizeof *tids);
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < q->n; i++) {
        q->comms[i]->clique = NULL, q->comms[i]->destroy_pending = 0;
        if (works) works[i].destroy = q->comms[i];
    }
    if (!works || !tids) {
        r = nccl_fail(ncclSystemError, "%s: out of host memory destroying %d ranks together", fn, q->n);
    } else {
        int started = 0;
        for (; started < q->n; started++)
            if (pthread_create(&tids[started], NULL, destroy_main, &works[started]) != 0) break;
        for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
        if (started < q->n) r = nccl_fail(ncclSystemError, "%s: cannot start the threads to destroy the ranks", fn);
        for (int i = 0; i < q->n && r == ncclSuccess; i++)
            if (works[i].result) r = works[i].result, duet_ext_error_set(DUET_ERR_INVALID_ARG, "%s", works[i].msg);
    }
    free(works), free(tids), free(q);
    return r;
}

/* The group's inits, then its calls by communicator (see the top). */
static ncclResult_t run_group(const nccl_init_call_t *inits, int ninits, nccl_call_t *calls, int ncalls)
{
    ncclResult_t r = ncclSuccess;
    work_t *works = calloc((size_t)(ninits + ncalls + 1), sizeof *works);
    if (!works) return nccl_fail(ncclSystemError, "ncclGroupEnd: out of host memory");
    if (ninits) {
        for (int i = 0; i < ninits; i++) works[i].init = &inits[i];
        r = run_works(works, ninits);
        if (r == ncclSuccess && ninits > 1) make_clique(inits, ninits);
    }
    if (r == ncclSuccess && ncalls > 0) {
        /* stable partition by communicator, in the order communicators first appear */
        nccl_call_t *sorted = malloc(sizeof *sorted * (size_t)ncalls);
        int *taken = calloc((size_t)ncalls, sizeof *taken), nw = 0, k = 0;
        if (!sorted || !taken) r = nccl_fail(ncclSystemError, "ncclGroupEnd: out of host memory");
        for (int i = 0; i < ncalls && r == ncclSuccess; i++) {
            if (taken[i]) continue;
            works[nw] = (work_t){.calls = sorted + k};
            for (int j = i; j < ncalls; j++)
                if (!taken[j] && calls[j].comm == calls[i].comm) sorted[k++] = calls[j], taken[j] = 1;
            works[nw].n = (int)(sorted + k - works[nw].calls);
            nw++;
        }
        if (r == ncclSuccess) r = run_works(works, nw); /* nccl_calls_run frees each call's temp */
        free(sorted);
        free(taken);
    }
    free(works);
    return r;
}

/* This layer's entries of a closing Duet group (duet_ext_group_layer_t.run), in call order. */
static duet_status_t run_entries(void *const *payloads, int n)
{
    nccl_init_call_t *inits = malloc(sizeof *inits * (size_t)n);
    nccl_call_t *calls = malloc(sizeof *calls * (size_t)n);
    int ninits = 0, ncalls = 0;
    if (!inits || !calls) {
        last_run = nccl_fail(ncclSystemError, "ncclGroupEnd: out of host memory");
    } else {
        for (int i = 0; i < n; i++) {
            const entry_t *e = payloads[i];
            if (e->is_init) inits[ninits++] = e->u.init;
            else calls[ncalls++] = e->u.call;
        }
        last_run = run_group(inits, ninits, calls, ncalls);
    }
    free(inits);
    free(calls);
    return last_run == ncclSuccess ? DUET_OK : duet_last_status() ? duet_last_status() : DUET_ERR_INVALID_ARG;
}

static const duet_ext_group_layer_t nccl_layer = {sizeof(duet_ext_group_layer_t), "ncclGroupEnd", run_entries};

NCCL_API ncclResult_t pncclGroupStart(void)
{
    (void)duet_group_start();
    return ncclSuccess;
}
NCCL_ALIAS(ncclGroupStart)

NCCL_API ncclResult_t pncclGroupEnd(void)
{
    if (duet_ext_group_depth() == 0)
        return nccl_fail(ncclInvalidUsage, "ncclGroupEnd: no group is open (ncclGroupStart first)");
    last_run = ncclSuccess;
    duet_status_t st = duet_group_end(); /* runs this layer's entries (last_run), then Duet's own */
    if (last_run != ncclSuccess) return last_run;
    return st ? nccl_fail(nccl_from_duet(st), "ncclGroupEnd: %s", duet_last_error()) : ncclSuccess;
}
NCCL_ALIAS(ncclGroupEnd)

NCCL_API ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    (void)simInfo;
    if (duet_ext_group_depth() == 0)
        return nccl_fail(ncclInvalidUsage, "ncclGroupSimulateEnd: no group is open (ncclGroupStart first)");
    (void)duet_ext_group_drop();
    return nccl_fail(ncclInvalidUsage, "ncclGroupSimulateEnd: Duet has no simulator of NCCL's kernels; the group "
                     "was closed without running its calls (duet-sim predicts Duet's own algorithms)");
}
NCCL_ALIAS(ncclGroupSimulateEnd)

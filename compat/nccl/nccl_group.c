/*
 * ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd.
 *
 * Per thread: a nesting depth and two queues, one of communicator inits and one of calls.
 * The outermost ncclGroupEnd runs the inits first, each on a thread of its own when there
 * are several (an init returns only when all its ranks have joined, and NCCL lets one thread
 * initialise several ranks in a group), then the calls, split by communicator, keeping their
 * order: one communicator's calls run in this thread; the calls of several communicators run
 * on a thread per communicator (the ranks of an ncclCommInitAll clique driven from one thread
 * must progress together). The first error is returned; everything queued is released.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl_compat.h"
#include "duet/duet_ext.h"

static _Thread_local int depth;
static _Thread_local nccl_call_t *calls;
static _Thread_local int ncalls, calls_cap;
static _Thread_local nccl_init_call_t *inits;
static _Thread_local int ninits, inits_cap;

int nccl_group_depth(void) { return depth; }

static int grow(void **arr, int *cap, int n, size_t elem)
{
    if (n < *cap) return 0;
    int c = *cap ? 2 * *cap : 16;
    void *a = realloc(*arr, elem * (size_t)c);
    if (!a) return -1;
    *arr = a, *cap = c;
    return 0;
}

ncclResult_t nccl_group_add_call(const nccl_call_t *call)
{
    if (grow((void **)&calls, &calls_cap, ncalls, sizeof *calls))
        return nccl_fail(ncclSystemError, "%s: out of host memory queuing the call in a group", call->fn);
    calls[ncalls++] = *call;
    return ncclSuccess;
}

ncclResult_t nccl_group_add_init(const nccl_init_call_t *init)
{
    if (grow((void **)&inits, &inits_cap, ninits, sizeof *inits))
        return nccl_fail(ncclSystemError, "ncclCommInitRank: out of host memory queuing the init in a group");
    inits[ninits++] = *init;
    return ncclSuccess;
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
    } else {
        nccl_cuda_set_device(w->calls[0].comm->cuda_dev);
        w->result = nccl_calls_run(w->calls, w->n);
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
static void make_clique(void)
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

static void release_queues(void)
{
    for (int i = 0; i < ncalls; i++) nccl_call_free_temp(&calls[i]);
    free(calls), free(inits);
    calls = NULL, inits = NULL;
    ncalls = calls_cap = ninits = inits_cap = 0;
}

static ncclResult_t run_group(void)
{
    ncclResult_t r = ncclSuccess;
    work_t *works = calloc((size_t)(ninits + ncalls + 1), sizeof *works);
    if (!works) return nccl_fail(ncclSystemError, "ncclGroupEnd: out of host memory");
    if (ninits) {
        for (int i = 0; i < ninits; i++) works[i].init = &inits[i];
        r = run_works(works, ninits);
        if (r == ncclSuccess && ninits > 1) make_clique();
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
        if (r == ncclSuccess) {
            memcpy(calls, sorted, sizeof *calls * (size_t)ncalls); /* temps are freed through calls */
            for (int i = 0; i < nw; i++) works[i].calls = calls + (works[i].calls - sorted);
            r = run_works(works, nw);
            for (int i = 0; i < ncalls; i++) calls[i].temp = NULL; /* nccl_calls_run freed them */
        }
        free(sorted);
        free(taken);
    }
    free(works);
    return r;
}

NCCL_API ncclResult_t pncclGroupStart(void)
{
    depth++;
    return ncclSuccess;
}
NCCL_ALIAS(ncclGroupStart)

NCCL_API ncclResult_t pncclGroupEnd(void)
{
    if (depth == 0) return nccl_fail(ncclInvalidUsage, "ncclGroupEnd: no group is open (ncclGroupStart first)");
    if (--depth > 0) return ncclSuccess;
    ncclResult_t r = run_group();
    release_queues();
    return r;
}
NCCL_ALIAS(ncclGroupEnd)

NCCL_API ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    (void)simInfo;
    if (depth == 0)
        return nccl_fail(ncclInvalidUsage, "ncclGroupSimulateEnd: no group is open (ncclGroupStart first)");
    if (--depth == 0) release_queues();
    return nccl_fail(ncclInvalidUsage, "ncclGroupSimulateEnd: Duet has no simulator of NCCL's kernels; the group "
                     "was closed without running its calls (duet-sim predicts Duet's own algorithms)");
}
NCCL_ALIAS(ncclGroupSimulateEnd)

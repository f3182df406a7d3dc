/*
 * Groups: duet_group_start() / duet_group_end() bracket calls that run together.
 *
 * Per thread: a nesting depth and one queue of operations, host and device alike, in call
 * order; each entry says who runs it: a layer above (duet_ext.h: its NCCL API's calls) or
 * an executor (coll/duet_coll_executor.h: the table of the one that queued it, the device's or
 * the host's). The outermost end takes the queue off the thread (whatever runs may open
 * groups of its own), hands each layer its entries, then each executor its own through its
 * group_run: the device executor's first (that only launches kernels), then the host's (see
 * duet_coll_api.c for how it runs a group). The first error is returned; every queued
 * operation is released.
 *
 * On one communicator a group's calls all belong to one executor (all host or all GPU): the
 * call that would mix them fails with DUET_ERR_UNSUPPORTED.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll.h"
#include "coll/duet_coll_executor.h"
#include "duet/duet_ext.h"

typedef struct {
    const duet_ext_group_layer_t *layer; /* a layer's entry (u.payload), else Duet's own: */
    const duet_coll_executor_t *ex;      /* the executor that queued it (u.call) */
    union {
        duet_coll_group_call_t call;
        void *payload; /* a layer's copy */
    } u;
} entry_t;

static _Thread_local int depth;
static _Thread_local entry_t *queue;
static _Thread_local int queued, capacity;
static _Thread_local duet_status_t deferred; /* an error while queuing, reported at the end */

int duet_coll_group_depth(void) { return depth; }
int duet_ext_group_depth(void) { return depth; }

duet_status_t duet_group_start(void)
{
    depth++;
    duet_error_clear(); /* a call that succeeds leaves no error behind */
    return DUET_OK;
}

/* Room for one more entry (its owner fields cleared), or NULL, the failure recorded for the
 * group's end too. */
static entry_t *grow(const char *fn)
{
    if (queued == capacity) {
        int cap = capacity ? 2 * capacity : 16;
        entry_t *q = realloc(queue, sizeof *q * (size_t)cap);
        if (!q) {
            duet_status_t st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory queuing a group's call", fn);
            if (!deferred) deferred = st;
            return NULL;
        }
        queue = q;
        capacity = cap;
    }
    entry_t *e = &queue[queued++];
    e->layer = NULL;
    e->ex = NULL;
    return e;
}

/* Room for one more entry of ex on c (*e), or the failure (running out of memory the group's
 * end reports too). */
static duet_status_t next_entry(duet_comm_t c, const duet_coll_executor_t *ex, const char *fn, entry_t **e)
{
    for (int i = 0; i < queued; i++) {
        if (queue[i].layer || queue[i].u.call.comm != c || queue[i].ex == ex) continue;
        int dev = ex != &duet_coll_host_executor;
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "%s: %s in a group that already holds calls on %s on this "
                         "communicator; a group's calls on one communicator must be all host or all GPU", fn,
                         dev ? "GPU buffers (or a stream)" : "host buffers",
                         dev ? "host buffers" : "GPU buffers (or with a stream)");
    }
    if (!(*e = grow(fn))) return DUET_ERR_NO_MEMORY;
    (*e)->ex = ex;
    return DUET_OK;
}

duet_status_t duet_coll_group_add(const duet_coll_executor_t *ex, duet_comm_t c, const duet_coll_exec_call_t *call)
{
    entry_t *e = NULL;
    duet_status_t st = next_entry(c, ex, call->fn, &e);
    if (st == DUET_OK) e->u.call = (duet_coll_group_call_t){c, *call};
    return st;
}

duet_status_t duet_ext_group_add(const duet_ext_group_layer_t *layer, const void *payload, size_t bytes)
{
    if (!layer || layer->size != sizeof *layer || !layer->run || (!payload && bytes))
        return duet_error_set(DUET_ERR_INVALID_ARG, "duet_ext_group_add: layer %p, payload %p of %zu bytes: not a "
                              "layer's table and call", (const void *)layer, payload, bytes);
    if (depth == 0)
        return duet_error_set(DUET_ERR_INVALID_ARG, "duet_ext_group_add (%s): no group is open (duet_group_start "
                              "first)", layer->name);
    void *copy = malloc(bytes ? bytes : 1);
    entry_t *e = copy ? grow(layer->name) : NULL;
    if (!e) {
        free(copy);
        return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory queuing a group's call", layer->name);
    }
    memcpy(copy, payload, bytes);
    e->layer = layer;
    e->u.payload = copy;
    return DUET_OK;
}

uint64_t duet_coll_group_first(duet_comm_t c)
{
    for (int i = 0; i < queued; i++)
        if (!queue[i].layer && queue[i].u.call.comm == c && queue[i].u.call.call.call_no)
            return queue[i].u.call.call.call_no;
    return 0;
}

/* Each layer's entries, in call order, handed to it (layers in the order they first appear). */
static duet_status_t run_layers(entry_t *q, int n)
{
    duet_status_t first = DUET_OK;
    for (int i = 0; i < n; i++) {
        const duet_ext_group_layer_t *layer = q[i].layer;
        int seen = 0;
        for (int j = 0; layer && j < i && !seen; j++) seen = q[j].layer == layer;
        if (!layer || seen) continue;
        int m = 0;
        for (int j = i; j < n; j++) m += q[j].layer == layer;
        void **payloads = malloc(sizeof *payloads * (size_t)m);
        duet_status_t st;
        if (!payloads) {
            st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "duet_group_end: out of host memory");
        } else {
            for (int j = i, k = 0; j < n; j++)
                if (q[j].layer == layer) payloads[k++] = q[j].u.payload;
            st = layer->run(payloads, m);
        }
        free(payloads);
        if (st && !first) first = st;
    }
    return first;
}

/* Frees the queue's copies of the layers' calls. */
static void free_payloads(entry_t *q, int n)
{
    for (int i = 0; i < n; i++)
        if (q[i].layer) free(q[i].u.payload);
}

/* An executor's entries, in call order, handed to it. */
static duet_status_t run_executor(const duet_coll_executor_t *ex, const entry_t *q, int queued_)
{
    int n = 0;
    for (int i = 0; i < queued_; i++) n += !q[i].layer && q[i].ex == ex;
    if (n == 0) return DUET_OK;
    duet_coll_group_call_t *calls = malloc(sizeof *calls * (size_t)n);
    if (!calls) return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "duet_group_end: out of host memory");
    for (int i = 0, k = 0; i < queued_; i++)
        if (!q[i].layer && q[i].ex == ex) calls[k++] = q[i].u.call;
    duet_status_t st = ex->group_run(calls, n);
    free(calls);
    return st;
}

/* Enters every communicator of Duet's own entries (duet_comm_enter: a thread destroying one
 * waits for the group's work on it); the entries of one that is not live or is being
 * destroyed are dropped (their executor cleared) and their status is returned, the message
 * set. *entered counts what to leave after. */
static duet_status_t enter_comms(entry_t *q, int n, int *entered)
{
    duet_status_t first = DUET_OK;
    *entered = 0;
    for (int i = 0; i < n; i++) {
        if (q[i].layer || !q[i].ex) continue;
        duet_comm_t c = q[i].u.call.comm;
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = !q[j].layer && q[j].u.call.comm == c && q[j].ex;
        if (seen) continue;
        int in = duet_comm_enter(c, "duet_group_end");
        if (in > 0) {
            (*entered)++;
            continue;
        }
        duet_status_t st = in < 0 ? (duet_status_t)in
                                  : duet_error_set(DUET_ERR_INVALID_ARG, "duet_group_end: %p is not a live "
                                                   "communicator any more (destroyed after its calls were queued)",
                                                   (void *)c);
        if (!first) first = st;
        for (int j = i; j < n; j++) /* its entries do not run */
            if (!q[j].layer && q[j].u.call.comm == c) q[j].ex = NULL;
    }
    return first;
}

/* The outermost end's queue, taken off the thread: what runs may open groups of its own. */
static void take_queue(entry_t **q, int *n, duet_status_t *queuing)
{
    *q = queue;
    *n = queued;
    *queuing = deferred;
    queue = NULL;
    queued = capacity = 0;
    deferred = DUET_OK;
}

duet_status_t duet_group_end(void)
{
    if (depth == 0)
        return duet_error_set(DUET_ERR_INVALID_ARG, "duet_group_end: no group is open (duet_group_start first)");
    if (--depth > 0) return duet_error_ok(DUET_OK);
    entry_t *q;
    int n;
    duet_status_t queuing;
    take_queue(&q, &n, &queuing);
    /* the layers' calls (they issue Duet calls of their own), then the device executor's: it
     * queues kernels only, before the blocking host part. The first failure is the group's,
     * with its message (a later part's success would clear it). */
    char why[512] = "";
    duet_status_t first = run_layers(q, n);
    if (first) snprintf(why, sizeof why, "%s", duet_last_error());
    int entered = 0;
    duet_status_t gone = enter_comms(q, n, &entered);
    if (gone && !first) first = gone, snprintf(why, sizeof why, "%s", duet_last_error());
    duet_status_t st = duet_coll_gpu_executor ? run_executor(duet_coll_gpu_executor, q, n) : DUET_OK;
    if (st && !first) first = st, snprintf(why, sizeof why, "%s", duet_last_error());
    st = queuing ? queuing : run_executor(&duet_coll_host_executor, q, n);
    if (st && !first) first = st, snprintf(why, sizeof why, "%s", duet_last_error());
    while (entered-- > 0) duet_inflight_leave();
    free_payloads(q, n);
    free(q);
    return first ? duet_error_set(first, "%s", why) : duet_error_ok(DUET_OK);
}

void duet_ext_group_suspend(duet_ext_group_saved_t *saved)
{
    *saved = (duet_ext_group_saved_t){{queue, NULL}, {depth, queued, capacity, deferred}};
    queue = NULL;
    depth = queued = capacity = 0;
    deferred = DUET_OK;
}

void duet_ext_group_resume(const duet_ext_group_saved_t *saved)
{
    free(queue); /* whatever a group opened meanwhile left (none, when its calls balanced) */
    queue = saved->opaque[0];
    depth = (int)saved->opaque_n[0];
    queued = (int)saved->opaque_n[1];
    capacity = (int)saved->opaque_n[2];
    deferred = (duet_status_t)saved->opaque_n[3];
}

duet_status_t duet_ext_group_drop(void)
{
    if (depth == 0)
        return duet_error_set(DUET_ERR_INVALID_ARG, "duet_ext_group_drop: no group is open (duet_group_start first)");
    if (--depth > 0) return DUET_OK;
    entry_t *q;
    int n;
    duet_status_t queuing;
    take_queue(&q, &n, &queuing);
    free_payloads(q, n);
    free(q);
    return DUET_OK;
}

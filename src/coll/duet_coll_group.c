/*
 * Groups: duet_group_start() / duet_group_end() bracket calls that run together.
 *
 * Per thread: a nesting depth and one queue of operations, host and device alike, in call
 * order; each entry says which executor runs it (coll/duet_coll_executor.h: NULL for the host
 * executor, else the table of the device executor that queued it). The outermost end hands a
 * device executor its entries first (that only launches kernels), then runs the host ones.
 *
 * The host ones run per communicator (communicators in the order they first appeared): every
 * send and receive of the group together with the group's first collective as one schedule —
 * their steps interleave in the executor, so exchanges that would deadlock one by one
 * complete, wherever the sends and receives sit among the collectives — then the remaining
 * collectives one at a time, in order, so a later collective sees the results of an earlier
 * one. Sends and receives travel on their own channels (comm->p2p): they match by peer and
 * order among themselves, as NCCL's do. The first error is returned; every queued operation is
 * released.
 *
 * On one communicator a group's calls all belong to one executor (all host or all GPU): the
 * call that would mix them fails with DUET_ERR_UNSUPPORTED.
 */
#include <stdlib.h>
#include "coll/duet_coll.h"
#include "coll/duet_coll_executor.h"

typedef struct {
    const duet_coll_executor_t *ex; /* NULL: the host executor */
    union {
        duet_coll_op_t host;
        duet_coll_group_call_t dev;
    } u;
} entry_t;

static _Thread_local int depth;
static _Thread_local entry_t *queue;
static _Thread_local int queued, capacity;
static _Thread_local duet_status_t deferred; /* an error while queuing, reported at the end */

int duet_coll_group_depth(void) { return depth; }

duet_status_t duet_group_start(void)
{
    depth++;
    duet_error_clear(); /* a call that succeeds leaves no error behind */
    return DUET_OK;
}

static duet_comm_t comm_of(const entry_t *e) { return e->ex ? e->u.dev.comm : e->u.host.comm; }

/* Room for one more entry of ex on c (*e), or the failure (running out of memory the group's
 * end reports too). */
static duet_status_t next_entry(duet_comm_t c, const duet_coll_executor_t *ex, const char *fn, entry_t **e)
{
    for (int i = 0; i < queued; i++) {
        if (comm_of(&queue[i]) != c || queue[i].ex == ex) continue;
        int dev = ex != NULL;
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "%s: %s in a group that already holds calls on %s on this "
                        "communicator; a group's calls on one communicator must be all host or all GPU", fn,
                        dev ? "GPU buffers (or a stream)" : "host buffers",
                        dev ? "host buffers" : "GPU buffers (or with a stream)");
    }
    if (queued == capacity) {
        int cap = capacity ? 2 * capacity : 16;
        entry_t *q = realloc(queue, sizeof *q * (size_t)cap);
        if (!q) {
            duet_status_t st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory queuing a group's call", fn);
            if (!deferred) deferred = st;
            return st;
        }
        queue = q;
        capacity = cap;
    }
    *e = &queue[queued++];
    (*e)->ex = ex;
    return DUET_OK;
}

duet_status_t duet_coll_group_add(const duet_coll_op_t *op)
{
    entry_t *e;
    duet_status_t st = next_entry(op->comm, NULL, op->fn, &e);
    if (st == DUET_OK) e->u.host = *op;
    return st;
}

duet_status_t duet_coll_group_add_dev(const duet_coll_executor_t *ex, duet_comm_t c, const duet_coll_dev_call_t *call)
{
    entry_t *e;
    duet_status_t st = next_entry(c, ex, call->fn, &e);
    if (st == DUET_OK) e->u.dev = (duet_coll_group_call_t){c, *call};
    return st;
}

uint64_t duet_coll_group_first(duet_comm_t c)
{
    for (int i = 0; i < queued; i++)
        if (queue[i].ex && queue[i].u.dev.comm == c && queue[i].u.dev.call.call_no) return queue[i].u.dev.call.call_no;
    return 0;
}

/* The device executor's entries, in call order, handed to it (it only launches kernels). */
static duet_status_t run_device(const duet_coll_executor_t *ex)
{
    int n = 0;
    for (int i = 0; i < queued; i++) n += queue[i].ex == ex;
    if (n == 0) return DUET_OK;
    duet_coll_group_call_t *calls = malloc(sizeof *calls * (size_t)n);
    if (!calls) return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "duet_group_end: out of host memory");
    for (int i = 0, k = 0; i < queued; i++)
        if (queue[i].ex == ex) calls[k++] = queue[i].u.dev;
    duet_status_t st = ex->group_run(calls, n);
    free(calls);
    return st;
}

/* The host executor's entries: per communicator, sends and receives fused with the first
 * collective, then the other collectives one by one. */
static duet_status_t run_host(void)
{
    int n = 0;
    for (int i = 0; i < queued; i++) n += queue[i].ex == NULL;
    if (n == 0) return DUET_OK;
    duet_coll_op_t *ops = malloc(sizeof *ops * (size_t)n);
    if (!ops) return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "duet_group_end: out of host memory");
    for (int i = 0, k = 0; i < queued; i++)
        if (!queue[i].ex) ops[k++] = queue[i].u.host;
    duet_status_t st = DUET_OK;
    /* stable partition by communicator: ops of the first communicator, then the next ... */
    for (int i = 0; i < n && st == DUET_OK;) {
        duet_comm_t c = ops[i].comm;
        int j = i;
        for (int k = i; k < n; k++) {
            if (ops[k].comm != c) continue;
            duet_coll_op_t t = ops[k];
            for (int m = k; m > j; m--) ops[m] = ops[m - 1];
            ops[j++] = t;
        }
        /* within the communicator: sends and receives first (stable), then the collectives */
        int first_coll = i;
        for (int k = i; k < j; k++) {
            if (ops[k].kind != DUET_COLL_SEND && ops[k].kind != DUET_COLL_RECV) continue;
            duet_coll_op_t t = ops[k];
            for (int m = k; m > first_coll; m--) ops[m] = ops[m - 1];
            ops[first_coll++] = t;
        }
        int end = first_coll < j ? first_coll + 1 : j; /* ... fused with the first collective */
        st = duet_coll_run_fused(ops + i, end - i);
        for (int k = end; k < j && st == DUET_OK; k++) st = duet_coll_run_fused(ops + k, 1);
        i = j;
    }
    free(ops);
    return st;
}

duet_status_t duet_group_end(void)
{
    if (depth == 0)
        return duet_error_set(DUET_ERR_INVALID_ARG, "duet_group_end: no group is open (duet_group_start first)");
    if (--depth > 0) return duet_error_ok(DUET_OK);
    /* the device executor's calls first: it queues kernels only, before the blocking host part */
    duet_status_t gpu = duet_coll_gpu_executor ? run_device(duet_coll_gpu_executor) : DUET_OK;
    duet_status_t st = deferred ? deferred : run_host();
    queued = 0;
    deferred = DUET_OK;
    free(queue);
    queue = NULL;
    capacity = 0;
    return duet_error_ok(gpu ? gpu : st);
}

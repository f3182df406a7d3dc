/*
 * Groups: duet_group_start() / duet_group_end() bracket calls that run together.
 *
 * Per thread: a nesting depth and a queue of operations. The outermost end runs them per
 * communicator (communicators in the order they first appeared): every send and receive of
 * the group together with the group's first collective as one schedule — their steps
 * interleave in the executor, so exchanges that would deadlock one by one complete, wherever
 * the sends and receives sit among the collectives — then the remaining collectives one at a
 * time, in order, so a later collective sees the results of an earlier one. Sends and
 * receives travel on their own channels (comm->p2p): they match by peer and order among
 * themselves, as NCCL's do. The first error is returned; every queued operation is released.
 *
 * Calls on GPU buffers (or with a stream) are queued by the CUDA backend instead
 * (src/cuda/duet_cuda_group.c); the outermost end queues them on the GPU first (that only
 * launches kernels), then runs the host calls. On one communicator a group's calls are all
 * host or all GPU: the call that would mix them fails with DUET_ERR_UNSUPPORTED.
 */
#include <stdlib.h>
#include "coll/duet_coll.h"
#include "coll/duet_coll_executor.h"

static _Thread_local int depth;
static _Thread_local duet_coll_op_t *queue;
static _Thread_local int queued, capacity;
static _Thread_local duet_status_t deferred; /* an error while queuing, reported at the end */

int duet_coll_group_depth(void) { return depth; }

duet_status_t duet_group_start(void)
{
    depth++;
    duet_error_clear(); /* a call that succeeds leaves no error behind */
    return DUET_OK;
}

int duet_coll_group_holds(duet_comm_t c)
{
    for (int i = 0; i < queued; i++)
        if (queue[i].comm == c) return 1;
    return 0;
}

duet_status_t duet_coll_group_add(const duet_coll_op_t *op)
{
    if (duet_coll_gpu_executor && duet_coll_gpu_executor->group_holds(op->comm))
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "%s: host buffers in a group that already holds calls on GPU "
                         "buffers (or with a stream) on this communicator; a group's calls on one communicator "
                         "must be all host or all GPU", op->fn);
    if (queued == capacity) {
        int cap = capacity ? 2 * capacity : 16;
        duet_coll_op_t *q = realloc(queue, sizeof *q * (size_t)cap);
        if (!q) {
            if (!deferred) deferred = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "group: out of host memory");
            return deferred;
        }
        queue = q;
        capacity = cap;
    }
    queue[queued++] = *op;
    return DUET_OK;
}

duet_status_t duet_group_end(void)
{
    if (depth == 0)
        return duet_error_set(DUET_ERR_INVALID_ARG, "duet_group_end: no group is open (duet_group_start first)");
    if (--depth > 0) return duet_error_ok(DUET_OK);
    /* the device executor's calls first: it queues kernels only, before the blocking host part */
    duet_status_t gpu = duet_coll_gpu_executor ? duet_coll_gpu_executor->group_end() : DUET_OK;
    duet_status_t st = deferred;
    /* stable partition by communicator: ops of the first communicator, then the next ... */
    for (int i = 0; i < queued && st == DUET_OK;) {
        duet_comm_t c = queue[i].comm;
        int j = i;
        for (int k = i; k < queued; k++) {
            if (queue[k].comm != c) continue;
            duet_coll_op_t t = queue[k];
            for (int m = k; m > j; m--) queue[m] = queue[m - 1];
            queue[j++] = t;
        }
        /* within the communicator: sends and receives first (stable), then the collectives */
        int first_coll = i;
        for (int k = i; k < j; k++) {
            if (queue[k].kind != DUET_COLL_SEND && queue[k].kind != DUET_COLL_RECV) continue;
            duet_coll_op_t t = queue[k];
            for (int m = k; m > first_coll; m--) queue[m] = queue[m - 1];
            queue[first_coll++] = t;
        }
        int end = first_coll < j ? first_coll + 1 : j; /* ... fused with the first collective */
        st = duet_coll_run_fused(queue + i, end - i);
        for (int k = end; k < j && st == DUET_OK; k++) st = duet_coll_run_fused(queue + k, 1);
        i = j;
    }
    queued = 0;
    deferred = DUET_OK;
    free(queue);
    queue = NULL;
    capacity = 0;
    return duet_error_ok(gpu ? gpu : st);
}

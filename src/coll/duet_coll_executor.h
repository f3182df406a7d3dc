/*
 * duet_coll_executor.h — where a collective call runs (issue 19 item 1). coll's own executor
 * (duet_coll_exec.c) runs calls on host memory; a backend that runs them elsewhere (the CUDA
 * backend: device buffers, streams) fills a table of this shape, and src/duet_backends.c hands
 * it to coll (duet_coll_gpu_executor: NULL in a build without one). duet_coll_api.c asks the
 * table whether a call is its own and passes the checked call on; the group calls and the
 * tuner reach the backend through it too. coll includes no backend header.
 */
#ifndef DUET_COLL_EXECUTOR_H
#define DUET_COLL_EXECUTOR_H

#include "core/duet_comm.h"

/* What an executor's accepts() says of a call (bits). */
#define DUET_COLL_ROUTED 1      /* the call belongs to that executor */
#define DUET_COLL_SEND_DEVICE 2 /* sendbuf is device memory */
#define DUET_COLL_RECV_DEVICE 4 /* recvbuf is device memory */

/* One collective call for a device executor, its arguments already checked (duet_coll_api.c). */
typedef struct {
    int kind;                      /* duet_coll_kind_t */
    const void *send;
    void *recv;
    size_t count;                  /* as the caller passed it */
    size_t send_count, recv_count; /* elements of each buffer */
    duet_datatype_t dt;
    duet_op_t op;
    int root;                      /* or the peer of a send / recv */
    int in_place;
    int where;                     /* accepts()' answer */
    duet_stream_t stream;
    const char *fn;
    uint64_t call_no;              /* a collective's number (duet_coll_sig.h); 0 until numbered */
    uint64_t first;                /* in a group: the number of its first collective on the comm, else 0 */
} duet_coll_dev_call_t;

typedef struct {
    size_t size;      /* sizeof(duet_coll_executor_t), first */
    const char *name; /* "cuda" */
    /* Nonzero (DUET_COLL_ROUTED, with where each buffer lies) when the call is this
     * executor's; 0, touching nothing, for a bad communicator or one it cannot serve. */
    int (*accepts)(duet_comm_t c, const void *sendbuf, const void *recvbuf, duet_stream_t stream);
    /* Runs (or, in an open group, queues) a checked call; numbers a collective as the host's. */
    duet_status_t (*run)(duet_comm_t c, duet_coll_dev_call_t *call);
    /* Whether this thread's open group holds calls of this executor on c. */
    int (*group_holds)(duet_comm_t c);
    /* At the outermost duet_group_end, before the host's part: runs this thread's queued calls. */
    duet_status_t (*group_end)(void);
    /* The tuner's alpha-beta model of this executor. */
    duet_status_t (*model)(duet_comm_t c, duet_coll_model_t *model);
} duet_coll_executor_t;

/* The device executor linked into this build, or NULL (src/duet_backends.c). */
extern const duet_coll_executor_t *const duet_coll_gpu_executor;

static inline int duet_coll_gpu_accepts(duet_comm_t c, const void *sendbuf, const void *recvbuf,
                                        duet_stream_t stream)
{
    return duet_coll_gpu_executor ? duet_coll_gpu_executor->accepts(c, sendbuf, recvbuf, stream) : 0;
}

#endif

/*
 * duet_coll_executor.h — where a collective call runs. Each executor is a table of this
 * shape: coll's own, the host executor (duet_coll_host_executor, duet_coll_api.c: calls on
 * host memory, run by duet_coll_exec.c), and a backend's that runs them elsewhere (the CUDA
 * backend: device buffers, streams), which src/duet_backends.c hands to coll
 * (duet_coll_gpu_executor: NULL in a build without one). duet_coll_api.c asks the device
 * table whether a call is its own, else the call is the host's, and passes it on to its
 * executor's run; the tuner asks the call's executor for its model. A group's calls, host and device, wait in coll's one group queue
 * (duet_coll_group.c): the executor queues its calls there and is handed them at the group's
 * end. coll includes no backend header.
 */
#ifndef DUET_COLL_EXECUTOR_H
#define DUET_COLL_EXECUTOR_H

#include "core/duet_comm.h"

/* What an executor's accepts() says of a call (bits). */
#define DUET_COLL_ROUTED 1      /* the call belongs to that executor */
#define DUET_COLL_SEND_DEVICE 2 /* sendbuf is device memory */
#define DUET_COLL_RECV_DEVICE 4 /* recvbuf is device memory */

/* One collective call for an executor, as the caller made it (a device executor's: its
 * arguments already checked, duet_coll_api.c). */
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
    int where;                     /* the device executor's accepts() answer (0: the host's call) */
    duet_stream_t stream;
    const char *fn;
    uint64_t call_no;              /* a collective's number (duet_coll_sig.h); 0 until numbered */
    uint64_t first;                /* in a group: the number of its first collective on the comm, else 0 */
    int32_t path;                  /* the device executor's choice from this rank's own facts, fixed
                                    * when the call is numbered and published in its signature
                                    * (duet_coll_sig_args_t.path) */
} duet_coll_exec_call_t;

/* A call waiting in a group: its communicator and the call. */
typedef struct {
    duet_comm_t comm;
    duet_coll_exec_call_t call;
} duet_coll_group_call_t;

typedef struct {
    size_t size;      /* sizeof(duet_coll_executor_t), first */
    const char *name; /* "host", "cuda" */
    /* Nonzero (DUET_COLL_ROUTED, with where each buffer lies) when the call is this
     * executor's; 0, touching nothing, for a bad communicator or one it cannot serve. */
    int (*accepts)(duet_comm_t c, const void *sendbuf, const void *recvbuf, duet_stream_t stream);
    /* Runs (or, in an open group, queues) a checked call; numbers a collective as the host's. */
    duet_status_t (*run)(duet_comm_t c, duet_coll_exec_call_t *call);
    /* At the outermost duet_group_end (the device executor's before the host's): runs this
     * executor's calls of the thread's group, calls[0..n) in call order (n > 0); the first
     * error. */
    duet_status_t (*group_run)(const duet_coll_group_call_t *calls, int n);
    /* The tuner's alpha-beta model of this executor. */
    duet_status_t (*model)(duet_comm_t c, duet_coll_model_t *model);
} duet_coll_executor_t;

/* The device executor linked into this build, or NULL (src/duet_backends.c), and coll's own. */
extern const duet_coll_executor_t *const duet_coll_gpu_executor;
extern const duet_coll_executor_t duet_coll_host_executor;

/* For an executor's run() inside an open group (duet_coll_group_depth() > 0): queues its
 * checked call in the thread's one group queue (duet_coll_group.c). DUET_ERR_UNSUPPORTED,
 * naming the call, when the group holds another executor's calls on c (a group's calls on
 * one communicator are all host or all GPU); DUET_ERR_NO_MEMORY. */
duet_status_t duet_coll_group_add(const duet_coll_executor_t *ex, duet_comm_t c, const duet_coll_exec_call_t *call);
/* The number of the first numbered collective queued on c in this thread's open group (0:
 * none; the host executor numbers its calls at the group's end): the group's calls are
 * published as one run that starts there (coll/duet_coll_sig.h). */
uint64_t duet_coll_group_first(duet_comm_t c);

static inline int duet_coll_gpu_accepts(duet_comm_t c, const void *sendbuf, const void *recvbuf,
                                        duet_stream_t stream)
{
    return duet_coll_gpu_executor ? duet_coll_gpu_executor->accepts(c, sendbuf, recvbuf, stream) : 0;
}

#endif

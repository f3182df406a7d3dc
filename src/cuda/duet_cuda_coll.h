/*
 * duet_cuda_coll.h — collectives on GPU buffers, stream-ordered (src/cuda/duet_cuda_coll.c,
 * kernels in duet_cuda_coll.cu). The collective API routes here when the communicator has a
 * GPU heap and the caller passed a stream or device buffers (the buffer's location selects
 * the backend); host buffers keep the CPU path. No CUDA headers here: src/coll includes it in
 * every build; without the CUDA backend the calls are inline stubs that route nothing.
 */
#ifndef DUET_CUDA_COLL_H
#define DUET_CUDA_COLL_H

#include "core/duet_comm.h"

/* What duet_cuda_coll_routes says of a call (bits). */
#define DUET_CUDA_ROUTED 1      /* the call belongs to the GPU backend */
#define DUET_CUDA_SEND_DEVICE 2 /* sendbuf is device memory */
#define DUET_CUDA_RECV_DEVICE 4 /* recvbuf is device memory */

/* One collective call for the GPU backend, its arguments already checked (duet_coll_api.c). */
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
    int where;                     /* duet_cuda_coll_routes' answer */
    duet_stream_t stream;
    const char *fn;
    uint64_t call_no;              /* a collective's number (duet_coll_sig.h); 0 until numbered */
    uint64_t first;                /* in a group: the number of its first collective on the comm, else 0 */
} duet_cuda_coll_call_t;

#ifdef DUET_HAVE_CUDA
/* Non-zero (DUET_CUDA_ROUTED, with where each buffer lies) when this call belongs to the GPU
 * backend: comm has a GPU heap and a stream was given or either buffer is device memory. 0
 * (and nothing touched) for a bad comm or a comm without a GPU heap, so the CPU path reports
 * those as before. Each buffer's location is asked once here; pass the answer on. */
int duet_cuda_coll_routes(duet_comm_t c, const void *sendbuf, const void *recvbuf, duet_stream_t stream);
/* Queues the call on its stream (NULL: the legacy default stream). Checks that the buffers
 * the call uses are device memory; numbers a collective (call->call_no, the communicator's
 * next call, host and GPU alike) and publishes its signature (a mismatch with a neighbour
 * that published first is DUET_ERR_INVALID_ARG now: coll/duet_coll_sig.h); picks the algorithm (DUET_ALGO, TUNE log) and launches;
 * returns once the kernels are queued. The first call on a communicator is collective in a
 * stronger sense: it allocates the symmetric scratch (duet_malloc_device) and ends with a host
 * barrier; so does the first call that needs the schedule executor. Inside a group the call is
 * checked and queued (duet_cuda_group_add); a send / recv to this rank itself only runs there. */
duet_status_t duet_cuda_coll_run(duet_comm_t c, duet_cuda_coll_call_t *call);
/* Groups (duet_cuda_group.c). Queues a checked call of a group (count > 0); a communicator's
 * calls in one group are all host or all GPU (DUET_ERR_UNSUPPORTED otherwise, naming the
 * call). */
duet_status_t duet_cuda_group_add(duet_comm_t c, const duet_cuda_coll_call_t *call);
/* The number of the first collective this thread's open group has queued on c (0: none):
 * the group's calls are published as one run that starts there (coll/duet_coll_sig.h). */
uint64_t duet_cuda_group_first(duet_comm_t c);
/* Whether this thread's open group holds GPU calls on c. */
int duet_cuda_group_holds(duet_comm_t c);
/* At the outermost duet_group_end: runs and releases this thread's queued GPU calls (see
 * duet_cuda_group.c for the order and the streams). The first error is returned. */
duet_status_t duet_cuda_group_end(void);
/* Channels of every GPU send / receive on c (in a group or not): the same for all sizes. */
int duet_cuda_coll_p2p_channels(duet_comm_t c);
/* The tuner's alpha-beta model of the GPU executor. */
duet_status_t duet_cuda_coll_model(duet_comm_t c, duet_coll_model_t *model);
/* The device memory traffic of this rank's part of `call` (its buffers are not touched),
 * for benchmarks: the algorithm the call would run (`algo`, len bytes) and the bytes it reads
 * and writes on the GPU — `staged` as Duet runs it (a message is written into the receiver's
 * inbox and read out of it), `direct` without the inbox (a message read where it lies and
 * written where it goes: the algorithm's own traffic). Collective (every rank agrees on the
 * direct kernel, as a call does) but for send / recv and allreduces under 64 KiB. */
duet_status_t duet_cuda_coll_traffic(duet_comm_t c, const duet_cuda_coll_call_t *call, char *algo, size_t len,
                                     double *staged, double *direct);
/* Frees a communicator's GPU collective state (from duet_cuda_comm_release). NULL: no-op. */
void duet_cuda_coll_release(void *state);
#else
static inline int duet_cuda_coll_routes(duet_comm_t c, const void *sendbuf, const void *recvbuf,
                                        duet_stream_t stream)
{
    (void)c;
    (void)sendbuf;
    (void)recvbuf;
    (void)stream;
    return 0;
}
static inline duet_status_t duet_cuda_coll_run(duet_comm_t c, duet_cuda_coll_call_t *call)
{
    (void)c;
    return duet_error_set(DUET_ERR_UNSUPPORTED, "%s: this Duet is built without CUDA", call->fn);
}
static inline duet_status_t duet_cuda_coll_model(duet_comm_t c, duet_coll_model_t *model)
{
    (void)c;
    (void)model;
    return duet_error_set(DUET_ERR_UNSUPPORTED, "the GPU model: this Duet is built without CUDA");
}
static inline void duet_cuda_coll_release(void *state) { (void)state; }
static inline int duet_cuda_group_holds(duet_comm_t c)
{
    (void)c;
    return 0;
}
static inline duet_status_t duet_cuda_group_end(void) { return DUET_OK; }
#endif
#endif

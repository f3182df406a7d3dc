/*
 * duet_cuda_coll.h — collectives on GPU buffers, stream-ordered (src/cuda/duet_cuda_coll.c,
 * kernels in duet_cuda_coll.cu). The collective API routes here when the communicator has a
 * GPU heap and the caller passed a stream or device buffers (the buffer's location selects
 * the backend); host buffers keep the CPU path. coll reaches these calls only through its
 * executor table (coll/duet_coll_executor.h: duet_cuda_coll_executor, wired in
 * src/duet_backends.c). No CUDA headers here.
 */
#ifndef DUET_CUDA_COLL_H
#define DUET_CUDA_COLL_H

#include "coll/duet_coll_executor.h"
#include "coll/duet_coll_predict.h"

/* The call and the answer of routes, as coll's executor table has them (coll/duet_coll_executor.h). */
#define DUET_CUDA_ROUTED DUET_COLL_ROUTED
#define DUET_CUDA_SEND_DEVICE DUET_COLL_SEND_DEVICE
#define DUET_CUDA_RECV_DEVICE DUET_COLL_RECV_DEVICE
typedef duet_coll_exec_call_t duet_cuda_coll_call_t;

#ifdef DUET_HAVE_CUDA
/* The CUDA backend's entry in coll's executor table (duet_cuda_coll.c): the calls below. */
extern const duet_coll_executor_t duet_cuda_coll_executor;
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
 * checked and queued (coll's group queue: duet_coll_group_add); a send / recv to this rank
 * itself only runs there. */
duet_status_t duet_cuda_coll_run(duet_comm_t c, duet_cuda_coll_call_t *call);
/* Groups (duet_cuda_group.c), the executor's group_run: at the outermost duet_group_end, runs
 * the group's GPU calls, calls[0..n) in call order, as coll's group queue hands them (see
 * duet_cuda_group.c for the order and the streams). The first error is returned. */
duet_status_t duet_cuda_group_run(const duet_coll_group_call_t *calls, int n);
/* Channels of every GPU send / receive on c (in a group or not): the same for all sizes. */
int duet_cuda_coll_p2p_channels(duet_comm_t c);
/* The tuner's alpha-beta model of the GPU executor. */
duet_status_t duet_cuda_coll_model(duet_comm_t c, duet_coll_model_t *model);
/* The device memory traffic of this rank's part of `call` (its buffers are not touched),
 * for benchmarks: the algorithm the call would run (`algo`, len bytes) and the bytes it reads
 * and writes on the GPU — `staged` as Duet runs it (a message is written into the receiver's
 * inbox and read out of it), `direct` without the inbox (a message read where it lies and
 * written where it goes: the algorithm's own traffic). Asks no peer, but the first GPU call on
 * c prepares its GPU collectives (collective), and so may this. */
duet_status_t duet_cuda_coll_traffic(duet_comm_t c, const duet_cuda_coll_call_t *call, char *algo, size_t len,
                                     double *staged, double *direct);
/* The shape the GPU model costs an executor call by (as the GPU path makes it for a call on
 * nranks ranks; rank and root as given): count elements of elem bytes (the compute type's),
 * `larger` the bytes of the call's larger buffer (it sets the channels, *nchan when not NULL,
 * and the chunk), in place or not. For fitting the model to measured calls without a
 * communicator (bench/gpu_model_refit.c). */
duet_coll_args_t duet_cuda_coll_shape(duet_coll_kind_t kind, int rank, int nranks, int root, size_t count, size_t elem,
                                      size_t larger, int in_place, int *nchan);
/* 1 when forcing algorithm `name` (DUET_ALGO, duet_coll_tune_force) on a call of `kind` and
 * `bytes` runs a kernel of its own, which the GPU model does not cost, rather than a schedule
 * in the executor: an allreduce's oneshot and twoshot up to DUET_CUDA_COLL_MAX_BYTES, and its
 * twoshot at any size when the buffers are in the GPU heap (the direct kernel). */
int duet_cuda_coll_forced_kernel(duet_coll_kind_t kind, const char *name, size_t bytes, int heap_buffers);
/* What `call` would run on c and what the tuner's GPU model costs (for duet-perf --validate
 * --device; nothing is queued and no peer asked, but the first GPU call on c prepares its GPU
 * collectives, collective, and so may this): `path` (len bytes) names it as the TUNE log does
 * ("direct kernel", "twoshot (direct kernel)", "oneshot (kernel)", or the executor's
 * algorithm), *direct is 1 when it is a kernel the model does not cost (the direct kernels and
 * the one-shot kernel of a small allreduce, chosen by rule), and *pred every executor algorithm of the
 * call's kind as the GPU executor would cost it (its model in *model, the shape it costs in
 * *shape when not NULL: for fitting the model to measured calls). */
duet_status_t duet_cuda_coll_costs(duet_comm_t c, const duet_cuda_coll_call_t *call, char *path, size_t len,
                                   int *direct, duet_coll_model_t *model, duet_predict_t *pred,
                                   duet_coll_args_t *shape);
/* Frees a communicator's GPU collective state (from duet_cuda_comm_release). NULL: no-op. */
void duet_cuda_coll_release(void *state);
#endif
#endif

/*
 * Collectives on GPU buffers, host side: routing (which calls belong to the GPU), the
 * tuner's pick between the GPU algorithms, the communicator's symmetric scratch, and the
 * launch on the caller's stream. The kernels and the reuse argument are in
 * duet_cuda_coll.cu; the scratch layout in duet_cuda_coll_kern.h.
 *
 * Routing: a call goes to the GPU when the communicator has a GPU heap and a stream was given
 * or either buffer is device memory (in the GPU heap, or cudaPointerGetAttributes says device
 * or managed; asked on every call, nothing cached: a freed and reused address may change
 * kind). Both buffers must then be device memory of this GPU. stream NULL means CUDA's legacy
 * default stream (stream 0), as in NCCL.
 *
 * Ordering: the kernels of one communicator must run in call order (duet_cuda_coll.cu says
 * why). On one stream they do; when a call comes on another stream than the last, the new
 * stream first waits for an event recorded after the last call (recorded after every call, so
 * the old stream may since have been destroyed). Calls from several threads on one
 * communicator at once are not supported (as for the CPU collectives).
 *
 * Tuner: the candidates are "oneshot" and "twoshot" (DUET_ALGO=allreduce:oneshot|twoshot
 * forces one; any other forced name is an error on GPU buffers, never a fallback). Their
 * costs come from constants, not calibrated on any machine yet:
 *     oneshot  GPU_ALPHA_US + (1 + n) * bytes / GPU_BW      (copy in, read n inputs)
 *     twoshot  2 * GPU_ALPHA_US + 3 * bytes / GPU_BW        (copy in, read n parts of 1/n, gather)
 * Messages above DUET_CUDA_COLL_MAX_BYTES need the ring executor (not yet built): refused.
 *
 * The first GPU collective on a communicator allocates its scratch with duet_malloc_device
 * (collective: every rank makes that first call, and it ends with a host barrier, so no peer
 * signals into flags before they are zeroed). Only a communicator that owns its GPU heap can
 * (a team's would need the parent's ranks to allocate too): teams are refused for now.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "coll/duet_coll.h"
#include "coll/duet_coll_dtype.h"
#include "coll/duet_coll_tune.h"
#include "cuda/duet_cuda_coll.h"
#include "cuda/duet_cuda_coll_kern.h"
#include "cuda/duet_cuda_driver.h"
#include "cuda/duet_cuda_state.h"

#define GPU_ALPHA_US 3.0 /* per synchronisation phase, launch included (not calibrated) */
#define GPU_BW 400e3     /* bytes per microsecond that one rank reads from peers (not calibrated) */

typedef struct duet_cuda_coll {
    duet_device_comm_t h;
    char *scratch;
    uint64_t epoch;       /* calls launched */
    uint64_t counter;     /* blocks launched, cumulative (the kernels' finished-block counter) */
    cudaEvent_t last;     /* recorded after the last call */
    cudaStream_t last_stream;
    int have_last;
    volatile int32_t *status_host; /* a kernel's failure (abort / timeout), sticky */
    int32_t *status_dev;
} coll_state_t;

void duet_cuda_coll_release(void *state)
{
    coll_state_t *s = state;
    if (!s) return;
    if (s->have_last) (void)cudaEventSynchronize(s->last); /* nothing may still use the scratch */
    if (s->last) cudaEventDestroy(s->last);
    if (s->status_host) cudaFreeHost((void *)s->status_host);
    (void)cudaGetLastError();
    free(s); /* the scratch goes with the heap, which this root communicator owns */
}

static int is_device(duet_comm_t c, const void *p)
{
    if (!p) return 0;
    if (duet_cuda_heap_owns(c->heap->gpu, p)) return 1;
    const char *host = c->heap->local_base; /* my host segment: host memory, no query needed */
    if ((const char *)p >= host && (const char *)p < host + c->heap->seg_size) return 0;
    struct cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return at.type == cudaMemoryTypeDevice || at.type == cudaMemoryTypeManaged;
}

int duet_cuda_coll_routes(duet_comm_t c, const void *sendbuf, const void *recvbuf, duet_stream_t stream)
{
    if (!c || c->magic != DUET_COMM_MAGIC || !c->heap || !c->heap->gpu) return 0;
    int where = (is_device(c, sendbuf) ? DUET_CUDA_SEND_DEVICE : 0) |
                (is_device(c, recvbuf) ? DUET_CUDA_RECV_DEVICE : 0);
    return stream != NULL || where ? DUET_CUDA_ROUTED | where : 0;
}

static duet_status_t pick(duet_comm_t c, size_t bytes, duet_datatype_t dt, int *twoshot, const char *fn)
{
    char forced[64];
    duet_coll_forced_algo(DUET_COLL_ALLREDUCE, forced, sizeof forced);
    if (forced[0] && strcmp(forced, "oneshot") != 0 && strcmp(forced, "twoshot") != 0)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, TUNE, "%s: DUET_ALGO forces \"%s\" for allreduce, which GPU buffers "
                         "cannot run (the GPU has oneshot and twoshot)", fn, forced);
    if (bytes > DUET_CUDA_COLL_MAX_BYTES)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "%s: GPU allreduce above %zu bytes needs the ring executor, "
                         "not yet built (%zu bytes asked)", fn, DUET_CUDA_COLL_MAX_BYTES, bytes);
    double n = c->size, one = GPU_ALPHA_US + (1 + n) * (double)bytes / GPU_BW;
    double two = 2 * GPU_ALPHA_US + 3 * (double)bytes / GPU_BW;
    *twoshot = forced[0] ? strcmp(forced, "twoshot") == 0 : two < one;
    DUET_LOG(INFO, TUNE, "allreduce %zu bytes %s, %d ranks, gpu constants (not calibrated): oneshot=%.2fus "
             "twoshot=%.2fus -> %s%s", bytes, duet_dtype_name(dt), c->size, one, two,
             *twoshot ? "twoshot" : "oneshot", forced[0] ? " (forced by DUET_ALGO)" : "");
    return DUET_OK;
}

/* The communicator's state; allocated by the first GPU collective (collective). */
static duet_status_t state_get(duet_comm_t c, coll_state_t **out, const char *fn)
{
    if (c->cuda && c->cuda->coll) {
        *out = c->cuda->coll;
        return DUET_OK;
    }
    if (c->parent)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "%s: GPU collectives on a team (a split communicator) are not "
                         "yet supported; use the communicator that owns the GPU heap", fn);
    duet_device_comm_t h;
    duet_status_t st = duet_device_comm_get(c, &h);
    if (st) return st;
    coll_state_t *s = calloc(1, sizeof *s);
    if (!s) return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory", fn);
    s->h = h;
    size_t flags = duet_cuda_coll_flag_bytes(c->size);
    s->scratch = duet_malloc_device(c, duet_cuda_coll_scratch_bytes(c->size));
    if (!s->scratch) {
        free(s);
        return duet_error_wrap(DUET_ERR_NO_MEMORY, "the GPU collectives' scratch"); /* its message is set */
    }
    void *host = NULL, *dev = NULL;
    cudaError_t err;
    if ((err = cudaMemset(s->scratch, 0, flags)) != cudaSuccess || (err = cudaStreamSynchronize(0)) != cudaSuccess ||
        (err = cudaEventCreateWithFlags(&s->last, cudaEventDisableTiming)) != cudaSuccess ||
        (err = cudaHostAlloc(&host, sizeof(int32_t), cudaHostAllocMapped | cudaHostAllocPortable)) != cudaSuccess ||
        (s->status_host = host, (err = cudaHostGetDevicePointer(&dev, host, 0)) != cudaSuccess)) {
        st = DUET_CUDA_FAIL_RT(err, "%s: the GPU collectives' state on rank %d", fn, c->rank);
        duet_cuda_coll_release(s);
        return st;
    }
    *s->status_host = 0;
    s->status_dev = dev;
    if ((st = duet_barrier(c))) { /* every rank's flags are zero before anyone signals */
        duet_cuda_coll_release(s);
        return st;
    }
    c->cuda->coll = s;
    *out = s;
    return DUET_OK;
}

duet_status_t duet_cuda_coll_allreduce(duet_comm_t c, int where, const void *sendbuf, void *recvbuf, size_t count,
                                       duet_datatype_t dt, duet_op_t op, duet_stream_t stream, const char *fn)
{
    if (duet_coll_group_depth() > 0)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "%s: GPU buffers or a stream inside duet_group_start/end are "
                         "not yet supported", fn);
    if (count == 0) return DUET_OK;
    int sd = (where & DUET_CUDA_SEND_DEVICE) != 0, rd = (where & DUET_CUDA_RECV_DEVICE) != 0;
    if (!sd || !rd)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, COLL, "%s: on the GPU path (a stream, or a device buffer) both "
                         "buffers must be device memory: sendbuf is %s, recvbuf is %s", fn,
                         sd ? "device" : "host", rd ? "device" : "host");
    size_t es = duet_datatype_size(dt), bytes = count * es;
    int twoshot = 0;
    duet_status_t st = pick(c, bytes, dt, &twoshot, fn);
    if (st) return st;
    coll_state_t *s = NULL;
    if ((st = state_get(c, &s, fn))) return st;
    int32_t failed = __atomic_load_n(s->status_host, __ATOMIC_ACQUIRE);
    if (failed)
        return DUET_FAIL((duet_status_t)failed, COLL, "%s: an earlier GPU collective on this communicator "
                         "stopped (%s); its GPU collectives cannot run any more", fn,
                         duet_status_str((duet_status_t)failed));
    cudaStream_t cs = (cudaStream_t)stream;
    cudaError_t err;
    if ((err = cudaSetDevice(c->heap->gpu->device)) != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: cudaSetDevice(%d)", fn, c->heap->gpu->device);
    if (s->have_last && s->last_stream != cs && (err = cudaStreamWaitEvent(cs, s->last, 0)) != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: ordering stream %p behind the last call's", fn, stream);
    size_t nb = (bytes + DUET_CUDA_COLL_BLOCK_BYTES - 1) / DUET_CUDA_COLL_BLOCK_BYTES;
    if (nb > DUET_CUDA_COLL_MAX_BLOCKS) nb = DUET_CUDA_COLL_MAX_BLOCKS;
    double tmo = duet_cfg()->wait_timeout;
    duet_cuda_coll_args_t a = {
        .h = s->h, .send = sendbuf, .recv = recvbuf, .scratch = s->scratch, .epoch = s->epoch + 1,
        .count_base = s->counter, .count = count, .dt = (int)dt, .op = (int)op, .twoshot = twoshot,
        .nblocks = (int)nb, .timeout_ns = tmo > 0 ? (int64_t)(tmo * 1e9) : 0, .status = s->status_dev};
    if ((err = (cudaError_t)duet_cuda_coll_launch(&a, cs)) != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: launching the %s kernel", fn, twoshot ? "twoshot" : "oneshot");
    s->epoch++;
    s->counter += nb;
    if ((err = cudaEventRecord(s->last, cs)) != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: recording the call's event", fn);
    s->last_stream = cs;
    s->have_last = 1;
    return DUET_OK;
}

/*
 * Collectives on GPU buffers, host side: routing (which calls belong to the GPU), the
 * algorithm, the communicator's GPU collective state, and the launch on the caller's stream.
 * The one-shot / two-shot kernels and their reuse argument are in duet_cuda_coll.cu (layout
 * in duet_cuda_coll_kern.h); the schedule executor in duet_cuda_exec.c / .cu.
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
 * Groups: inside duet_group_start/end a call is checked here and queued; the outermost end
 * runs the group's sends and receives as one schedule, then its collectives in order
 * (duet_cuda_group.c). Sends and receives use duet_cuda_coll_p2p_channels() channels at every
 * size, in a group or not, so the two sides of a pair always cut their messages alike.
 *
 * Algorithms: every collective runs a schedule of src/coll (ring, tree, dbtree, ... : the same
 * builders and the same tuner as on the CPU, DUET_ALGO and the TUNE log included) in the GPU
 * executor (duet_cuda_exec.c), except:
 *   - buffers in the GPU heap (what the call reads remotely; anywhere in each rank's heap): a
 *     direct kernel reads the peers' buffers where they lie (duet_cuda_direct.cu); allreduce
 *     above oneshot_max_bytes(n) (1 MiB to 4 ranks), the other collectives at any size. Each rank decides
 *     from its own buffers, asking no one (direct_choose), so a call only queues work; the
 *     decision is part of the call's signature (coll/duet_coll_sig.h: path), so ranks that
 *     decided otherwise (a call's buffers in the heap on some ranks only) are a mismatch,
 *     reported on every rank, never a hang;
 *   - an allreduce up to oneshot_max_bytes(n): the one-shot kernel, unless DUET_ALGO
 *     forces an algorithm; one the tuner gives to oneshot or twoshot, of at most
 *     DUET_CUDA_COLL_MAX_BYTES, runs those dedicated kernels (duet_cuda_coll.cu).
 * The tuner's model of the GPU (alpha per message, beta) is measured once per host
 * (duet_cuda_calib.c).
 * fp16 / bf16 reductions in the executor run on fp32 copies (rounded once, as on the CPU).
 *
 * The first GPU collective on a communicator allocates its scratch with duet_malloc_device
 * (collective: every rank makes that first call, and it ends with a host barrier, so no peer
 * signals into flags before they are zeroed). Only a communicator that may allocate on the GPU
 * heap can (duet_comm_heap_allocator: the heap's owner, or one holding all its live ranks, as
 * a shrunk one does); other teams are refused for now. A team's scratch stays allocated
 * after the team is destroyed (freeing it would need a collective that a failed team cannot
 * make): one scratch per shrunk communicator that ran GPU collectives.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "coll/duet_coll.h"
#include "coll/duet_coll_dtype.h"
#include "coll/duet_coll_sig.h"
#include "coll/duet_coll_sim.h"
#include "coll/duet_coll_tune.h"
#include "cuda/duet_cuda_coll.h"
#include "cuda/duet_cuda_coll_kern.h"
#include "cuda/duet_cuda_coll_state.h"
#include "cuda/duet_cuda_driver.h"
#include "cuda/duet_cuda_rma.h"
#include "cuda/duet_cuda_state.h"

/* An allreduce of at most oneshot_max_bytes(n) takes the one-shot kernel (its buffers
 * anywhere), a larger one the direct kernel (buffers in the GPU heap). Measured on one H200,
 * 2 and 4 ranks under MPS (docs/PERF.md, "The GPU model"): the one-shot kernel beats the
 * direct two-shot kernel up to 512 KiB at both (9.96 against 12.4 us at 2 ranks, 18.3 against
 * 23.5 at 4), the direct kernel wins from 2 MiB; the one-shot kernel reads every rank's copy,
 * so its share shrinks as n grows. At 8 ranks (cudaMalloc buffers only: against the two-shot
 * kernel and the executor) it still leads at 512 KiB, 25.7 us against 33.0 and 217 (rd);
 * against the direct kernel there, and between 512 KiB and 1 MiB, it is not measured. The
 * other collectives take their direct kernel at any size: their only other path is the
 * executor. */
static size_t oneshot_max_bytes(int n)
{
    size_t by_n = ((size_t)4 << 20) / (size_t)(n > 1 ? n : 1);
    return by_n < DUET_CUDA_COLL_MAX_BYTES ? by_n : DUET_CUDA_COLL_MAX_BYTES;
}
#define DIRECT_BLOCK_BYTES ((size_t)64 << 10) /* direct kernels: bytes per block before another */

_Static_assert(DUET_CUDA_DIRECT_ALLREDUCE == (int)DUET_COLL_ALLREDUCE && DUET_CUDA_DIRECT_BROADCAST ==
                   (int)DUET_COLL_BROADCAST && DUET_CUDA_DIRECT_REDUCE == (int)DUET_COLL_REDUCE &&
                   DUET_CUDA_DIRECT_ALLGATHER == (int)DUET_COLL_ALLGATHER && DUET_CUDA_DIRECT_REDUCE_SCATTER ==
                   (int)DUET_COLL_REDUCE_SCATTER && DUET_CUDA_DIRECT_ALLTOALL == (int)DUET_COLL_ALLTOALL,
               "the direct kernels' collective numbers are duet_coll_kind_t's");

typedef duet_cuda_coll_state_t coll_state_t;

void duet_cuda_coll_release(void *state)
{
    coll_state_t *s = state;
    if (!s) return;
    if (s->have_last) (void)cudaEventSynchronize(s->last); /* nothing may still use the scratch */
    if (s->last) cudaEventDestroy(s->last);
    if (s->cap_last) cudaEventDestroy(s->cap_last);
    if (s->aux_done) cudaEventDestroy(s->aux_done);
    duet_cuda_learn_release(s);
    if (s->aux) cudaStreamDestroy(s->aux);
    if (s->fail_host) cudaFreeHost((void *)s->fail_host);
    duet_cuda_exec_release(s);
    (void)cudaGetLastError();
    free(s); /* the scratch goes with the heap, which this root communicator owns */
}

static int is_device(duet_comm_t c, const void *p)
{
    if (!p) return 0;
    if (duet_cuda_heap_owns(duet_cuda_heap_of(c->heap), p)) return 1;
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
    if (!duet_comm_is_live(c) || c->magic != DUET_COMM_MAGIC || !c->heap || !duet_cuda_heap_of(c->heap)) return 0;
    int where = (is_device(c, sendbuf) ? DUET_CUDA_SEND_DEVICE : 0) |
                (is_device(c, recvbuf) ? DUET_CUDA_RECV_DEVICE : 0);
    return stream != NULL || where ? DUET_CUDA_ROUTED | where : 0;
}

/* c's async_failure hook: a mismatch one of c's kernels found (reported and c revoked the first
 * time: duet_cuda_coll_failure), or c's revoke for one another rank found; DUET_OK otherwise,
 * also after a kernel's other failures (a timeout, a dead peer: the GPU collectives refuse to
 * run, the rest of c goes on as before). */
static duet_status_t mismatch_found(duet_comm_t c, const char *fn)
{
    const coll_state_t *s = c->cuda ? c->cuda->coll : NULL;
    if (!s) return DUET_OK;
    int32_t failed = __atomic_load_n(&s->fail_host->status, __ATOMIC_ACQUIRE);
    if (failed && failed != DUET_ERR_INVALID_ARG) return DUET_OK;
    if (!failed && atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_relaxed) != DUET_ERR_INVALID_ARG)
        return DUET_OK;
    return duet_cuda_coll_failure(c, fn);
}

/* The communicator's state; allocated by the first GPU collective (collective). */
duet_status_t duet_cuda_coll_state(duet_comm_t c, coll_state_t **out, const char *fn)
{
    if (c->cuda && c->cuda->coll) {
        *out = c->cuda->coll;
        return DUET_OK;
    }
    if (c->parent && duet_comm_heap_allocator(c, fn))
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "%s: GPU collectives on a team split from the communicator that "
                         "owns the GPU heap are not yet supported (only on the owner, or on a communicator that "
                         "holds all its live ranks: a shrunk one)", fn);
    /* the GPU collectives move data by load/store through the mappings: a member whose part is
     * not mapped here (another host) makes them impossible, and every member finds one (the
     * relation is symmetric), so all refuse alike at the first GPU call, before it is numbered */
    const duet_cuda_heap_t *gh = duet_cuda_heap_of(c->heap);
    for (int q = 0; q < c->size; q++)
        if (!gh->peer[c->heap_pe[q]]) {
            char name[96];
            return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "%s: collectives on GPU buffers need every rank's GPU "
                             "memory mapped here, and %s is on another host (GPU collectives across hosts are "
                             "not supported yet: stage through host buffers, which take the network)", fn,
                             duet_comm_rank_name(c, q, name, sizeof name));
        }
    duet_device_comm_t h;
    duet_status_t st = duet_device_comm_get(c, &h);
    if (st) return st;
    /* every peer's part is mapped here (DUET_CUDA_PEERS=proxy keeps the mappings), so the
     * kernels do not take the device API's proxy path */
    h.remote = NULL;
    h.proxy_ring = NULL;
    h.proxy_head = NULL;
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
        (err = cudaEventCreateWithFlags(&s->cap_last, cudaEventDisableTiming)) != cudaSuccess ||
        (err = cudaEventCreateWithFlags(&s->aux_done, cudaEventDisableTiming)) != cudaSuccess ||
        (err = cudaStreamCreateWithFlags(&s->aux, cudaStreamNonBlocking)) != cudaSuccess ||
        (err = cudaHostAlloc(&host, sizeof(duet_cuda_fail_t), cudaHostAllocMapped | cudaHostAllocPortable)) !=
            cudaSuccess ||
        (s->fail_host = host, (err = cudaHostGetDevicePointer(&dev, host, 0)) != cudaSuccess)) {
        st = DUET_CUDA_FAIL_RT(err, "%s: the GPU collectives' state on rank %d", fn, c->rank);
        duet_cuda_coll_release(s);
        return st;
    }
    memset(host, 0, sizeof(duet_cuda_fail_t));
    s->fail_dev = dev;
    if ((st = duet_barrier(c))) { /* every rank's flags are zero before anyone signals */
        duet_cuda_coll_release(s);
        return st;
    }
    c->cuda->coll = s;
    c->async_failure = mismatch_found; /* duet_comm_status and the host calls learn of a kernel's finding */
    *out = s;
    return DUET_OK;
}

duet_status_t duet_cuda_coll_prepare(duet_comm_t c, const char *fn)
{
    coll_state_t *s = NULL;
    duet_status_t st = duet_cuda_coll_state(c, &s, fn);
    if (st) return st;
    duet_coll_model_t m;
    if (!(s->prepared & 1)) {
        if ((st = duet_coll_model_get(c, &m)) || (st = duet_cuda_exec_prepare(c, s, fn))) return st;
        s->prepared |= 1;
    }
    /* the GPU model may measure, with GPU calls of its own: not while a group is queuing (its
     * calls would join the group); a group's first call then measures when it runs */
    if (!(s->prepared & 2) && duet_coll_group_depth() == 0) {
        s->prepared |= 2; /* also while measuring: the measurement's own calls find it so */
        if ((st = duet_cuda_coll_model(c, &m))) s->prepared &= ~2;
    }
    return st;
}

duet_status_t duet_cuda_coll_failure(duet_comm_t c, const char *fn)
{
    coll_state_t *s = c->cuda ? c->cuda->coll : NULL;
    if (!s) return DUET_OK;
    volatile duet_cuda_fail_t *f = s->fail_host;
    int32_t failed = __atomic_load_n(&f->status, __ATOMIC_ACQUIRE);
    if (!failed) { /* revoked for a mismatch another rank found: its report */
        if (atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_acquire) == DUET_ERR_INVALID_ARG &&
            duet_coll_sig_explain(c, DUET_ERR_INVALID_ARG, fn))
            return DUET_ERR_INVALID_ARG;
        return DUET_OK;
    }
    if (failed == DUET_ERR_INVALID_ARG && __atomic_load_n(&f->claimed, __ATOMIC_ACQUIRE) == 1) {
        /* my kernel found a mismatch: reported once (claimed 2), then as any revoke */
        __atomic_store_n(&f->claimed, 2, __ATOMIC_RELAXED);
        uint64_t mine = f->mine, call = c->coll_calls; /* the kernel's call: the latest with its low bits */
        if (mine) call -= (uint32_t)((uint32_t)call - (uint32_t)(mine >> 32));
        duet_status_t st = duet_coll_sig_gpu_found(c, f->peer, call, mine, f->theirs);
        (void)duet_coll_sig_explain(c, st, fn);
        return st;
    }
    if (failed == DUET_ERR_INVALID_ARG && duet_coll_sig_explain(c, (duet_status_t)failed, fn)) return DUET_ERR_INVALID_ARG;
    return DUET_FAIL((duet_status_t)failed, COLL, "%s: an earlier GPU collective on this communicator stopped (%s); "
                     "its GPU collectives cannot run any more", fn, duet_status_str((duet_status_t)failed));
}

/* Whether cs is being captured (*id: the capture), or an error: a stream that takes no work
 * now (the legacy stream while another thread's stream is captured), or a capture that is
 * already invalid. */
static duet_status_t capture_of(cudaStream_t cs, int *capturing, unsigned long long *id, const char *fn)
{
    enum cudaStreamCaptureStatus cst = cudaStreamCaptureStatusNone;
    cudaError_t err = cudaStreamGetCaptureInfo(cs, &cst, id, NULL, NULL, NULL, NULL);
    *capturing = 0;
    if (err != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: stream %p cannot take work now (a CUDA graph capture in progress: %s)", fn,
                                 (void *)cs, cs ? "another thread's" : "the legacy stream takes nothing during one");
    if (cst == cudaStreamCaptureStatusInvalidated)
        return DUET_FAIL(DUET_ERR_CUDA, COLL, "%s: stream %p's CUDA graph capture was invalidated by an earlier call",
                         fn, (void *)cs);
    *capturing = cst == cudaStreamCaptureStatusActive;
    return DUET_OK;
}

duet_status_t duet_cuda_coll_capture_guard(duet_comm_t c, cudaStream_t cs, const char *fn)
{
    const coll_state_t *s = c->cuda ? c->cuda->coll : NULL;
    if (s && s->prepared == 3) return DUET_OK;
    int capturing = 0;
    unsigned long long id = 0;
    duet_status_t st = capture_of(cs, &capturing, &id, fn);
    if (st || !capturing) return st;
    return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "%s: the first GPU collective on a communicator sets up its GPU state "
                     "with every rank (memory, a barrier, a measurement) and cannot be captured into a CUDA graph: "
                     "make one GPU collective on it before cudaStreamBeginCapture", fn);
}

duet_status_t duet_cuda_coll_begin(duet_comm_t c, coll_state_t *s, cudaStream_t cs, const char *fn)
{
    duet_status_t st = duet_cuda_coll_failure(c, fn);
    if (st) return st;
    cudaError_t err;
    if ((err = cudaSetDevice(duet_cuda_heap_of(c->heap)->device)) != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: cudaSetDevice(%d)", fn, duet_cuda_heap_of(c->heap)->device);
    unsigned long long id = 0;
    if ((st = capture_of(cs, &s->capturing, &id, fn))) return st;
    if (s->capturing) {
        s->graphs = 1;
        if (id != s->cap_id) { /* the capture's first call: behind the last call queued before it */
            s->cap_id = id;
            s->cap_stream = NULL;
            if (s->have_last && s->last_stream != cs &&
                (err = cudaStreamWaitEvent(cs, s->last, cudaEventWaitExternal)) != cudaSuccess)
                return DUET_CUDA_FAIL_RT(err, "%s: ordering captured stream %p behind the last call's", fn, (void *)cs);
        } else if (s->cap_stream && s->cap_stream != cs && (err = cudaStreamWaitEvent(cs, s->cap_last, 0)) != cudaSuccess) {
            return DUET_CUDA_FAIL_RT(err, "%s: ordering captured stream %p behind the capture's last call", fn,
                                     (void *)cs);
        }
        return DUET_OK;
    }
    if (s->have_last && s->last_stream != cs && (err = cudaStreamWaitEvent(cs, s->last, 0)) != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: ordering stream %p behind the last call's", fn, (void *)cs);
    return DUET_OK;
}

duet_status_t duet_cuda_coll_end(coll_state_t *s, cudaStream_t cs, const char *fn)
{
    cudaError_t err;
    if ((err = cudaEventRecord(s->capturing ? s->cap_last : s->last, cs)) != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: recording the call's event", fn);
    if (s->capturing) {
        s->cap_stream = cs;
        s->capturing = 0;
        return DUET_OK;
    }
    s->last_stream = cs;
    s->have_last = 1;
    return DUET_OK;
}

/* A call's signature as the host publishes it, and as its kernels carry it (a word). */
static duet_coll_sig_t call_sig(const duet_cuda_coll_call_t *k)
{
    uint32_t path = (uint32_t)k->path * 0x9e3779b1u; /* 0 for no direct kernel: the host's hash */
    return (duet_coll_sig_t){k->call_no, {k->first ? k->first : k->call_no, k->count,
                                          duet_coll_sig_hash(k->kind, k->count, k->dt, k->op, k->root) ^ path,
                                          k->kind, (int32_t)k->dt, (int32_t)k->op, k->root, k->path}};
}
static uint64_t call_word(const duet_cuda_coll_call_t *k)
{
    return k->call_no ? duet_cuda_sig_word(k->call_no, call_sig(k).a.hash) : 0;
}

/* The one-shot / two-shot kernel (an allreduce of at most DUET_CUDA_COLL_MAX_BYTES). */
static duet_status_t launch_shot(duet_comm_t c, coll_state_t *s, const duet_cuda_coll_call_t *k, int twoshot,
                                 cudaStream_t cs)
{
    size_t bytes = k->count * duet_datatype_size(k->dt);
    size_t nb = (bytes + DUET_CUDA_COLL_BLOCK_BYTES - 1) / DUET_CUDA_COLL_BLOCK_BYTES;
    if (nb > DUET_CUDA_COLL_MAX_BLOCKS) nb = DUET_CUDA_COLL_MAX_BLOCKS;
    double tmo = duet_cfg()->wait_timeout;
    duet_cuda_coll_args_t a = {
        .h = s->h, .send = k->send, .recv = k->recv, .scratch = s->scratch, .count = k->count, .dt = (int)k->dt,
        .op = (int)k->op, .twoshot = twoshot,
        .nblocks = (int)nb, .timeout_ns = tmo > 0 ? (int64_t)(tmo * 1e9) : 0, .sig = call_word(k),
        .fail = s->fail_dev};
    (void)c;
    cudaError_t err = (cudaError_t)duet_cuda_coll_launch(&a, cs);
    if (err != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: launching the %s kernel", k->fn, twoshot ? "twoshot" : "oneshot");
    return DUET_OK;
}

/* A direct kernel (duet_cuda_direct.cu): blocks (0: none), and the buffer of mine it reads as
 * the send (an in-place allgather: the receive buffer). */
typedef struct {
    int nblocks;
    const void *send;
} direct_t;

static duet_status_t launch_direct(coll_state_t *s, const duet_cuda_coll_call_t *k, const direct_t *d,
                                   cudaStream_t cs)
{
    double tmo = duet_cfg()->wait_timeout;
    duet_cuda_coll_args_t a = {
        .h = s->h, .send = d->send, .recv = k->recv, .scratch = s->scratch, .count = k->count, .dt = (int)k->dt,
        .op = (int)k->op,
        .nblocks = d->nblocks, .timeout_ns = tmo > 0 ? (int64_t)(tmo * 1e9) : 0, .sig = call_word(k),
        .fail = s->fail_dev, .kind = k->kind, .root = k->root, .in_place = k->in_place};
    cudaError_t err = (cudaError_t)duet_cuda_direct_launch(&a, cs);
    if (err != cudaSuccess) return DUET_CUDA_FAIL_RT(err, "%s: launching the direct kernel", k->fn);
    return DUET_OK;
}

/* The direct kernel's blocks this GPU holds at once for (dt, op), asked once (-1: none). */
static int direct_most(coll_state_t *s, const duet_cuda_heap_t *g, duet_datatype_t dt, duet_op_t op)
{
    int *most = &s->direct_most[dt][op];
    if (*most == 0) {
        int got = 0;
        if (cudaSetDevice(g->device) != cudaSuccess || /* the occupancy is the current device's */
            duet_cuda_direct_max_blocks((int)dt, (int)op, &got) != (int)cudaSuccess || got < 1) {
            (void)cudaGetLastError();
            got = -1;
        }
        *most = got;
    }
    return *most;
}

/* Whether a call runs the direct kernel (its blocks, 0: no), from this rank's own facts: what
 * the kernel reads of my buffers lies in the GPU heap (allreduce: both buffers; broadcast: the
 * root's send, and the others judge their own send alike, though the kernel does not read it
 * (their receive buffer when the send is NULL): a program passes the same kinds of buffers on
 * every rank; an in-place allgather: the receive buffer; the others: the send), and the
 * blocks, from the call's size and the blocks the device holds shared by all n ranks (which
 * may be on this one GPU). An allreduce only above oneshot_max_bytes(n); not when
 * DUET_ALGO forces an algorithm (but twoshot for an allreduce, which this is), nor for an
 * all-to-all in place (refused by every algorithm). Published in the call's signature: a peer that chose otherwise is a mismatch. */
static int direct_choose(duet_comm_t c, coll_state_t *s, const duet_cuda_coll_call_t *k)
{
    size_t es = duet_datatype_size(k->dt), sbytes = k->send_count * es, rbytes = k->recv_count * es;
    size_t larger = sbytes > rbytes ? sbytes : rbytes;
    if (k->kind == DUET_COLL_SEND || k->kind == DUET_COLL_RECV || k->count == 0) return 0;
    if (k->kind == DUET_COLL_ALLREDUCE && larger <= oneshot_max_bytes(c->size)) return 0;
    if (k->kind == DUET_COLL_ALLTOALL && k->in_place) return 0;
    char forced[64];
    duet_coll_forced_algo(c, k->kind, forced, sizeof forced);
    if (forced[0] && !(k->kind == DUET_COLL_ALLREDUCE && strcmp(forced, "twoshot") == 0)) return 0;
    const duet_cuda_heap_t *g = duet_cuda_heap_of(c->heap);
    int ok;
    switch (k->kind) {
    case DUET_COLL_ALLREDUCE:
        ok = duet_cuda_rma_owns(g, k->send, sbytes) && duet_cuda_rma_owns(g, k->recv, rbytes);
        break;
    case DUET_COLL_BROADCAST: /* the others look at theirs alike (an unused NULL send: the receive buffer) */
        ok = duet_cuda_rma_owns(g, k->send || c->rank == k->root ? k->send : k->recv, sbytes);
        break;
    case DUET_COLL_ALLGATHER:
        ok = k->in_place ? duet_cuda_rma_owns(g, k->recv, rbytes) : duet_cuda_rma_owns(g, k->send, sbytes);
        break;
    default: ok = duet_cuda_rma_owns(g, k->send, sbytes); break;
    }
    if (!ok) return 0;
    int most = direct_most(s, g, k->dt, k->op);
    size_t want = (larger + DIRECT_BLOCK_BYTES - 1) / DIRECT_BLOCK_BYTES;
    long nb = (long)(want < DUET_CUDA_COLL_MAX_BLOCKS ? want : DUET_CUDA_COLL_MAX_BLOCKS);
    if (nb > most / c->size) nb = most / c->size;
    return nb >= 1 ? (int)nb : 0;
}

/* The direct kernel of a call that chose it (k->path blocks): what it reads of mine. */
static direct_t direct_of(const duet_cuda_coll_call_t *k)
{
    direct_t d = {k->path, k->send};
    if (k->kind == DUET_COLL_ALLGATHER && k->in_place) d.send = k->recv; /* its block rank is the send */
    return d;
}

static int reduces(duet_coll_kind_t kind)
{
    return kind == DUET_COLL_ALLREDUCE || kind == DUET_COLL_REDUCE || kind == DUET_COLL_REDUCE_SCATTER;
}

/* What a call runs: the compute type, channels, the algorithm (NULL: point to point) and this
 * rank's schedule (*plan: sched, or the tuner's cached copy; the caller frees sched). */
typedef struct {
    int wide, nchan;
    duet_datatype_t cdt;
    duet_coll_args_t a;
    const duet_coll_algo_t *algo;
    const duet_sched_t *plan;
    int shot; /* 1: oneshot, 2: twoshot kernel instead of the executor, 3: direct kernel */
    int by_rule; /* the kernel was chosen by rule (direct, or a small allreduce's one-shot), not costed */
    int trial;   /* duet_coll_tune_trial's answer for it: >= 0 timed, -2 counted only, -1 neither */
    direct_t direct;
} gpu_plan_t;

/* The allreduce table's rows of the kernels' algorithms, found once (the table is constant). */
static const duet_coll_algo_t *_Atomic oneshot_algo, *_Atomic twoshot_algo;
static const duet_coll_algo_t *table_algo(const duet_coll_algo_t *_Atomic *cached, const char *name)
{
    const duet_coll_algo_t *a = atomic_load_explicit(cached, memory_order_relaxed);
    if (!a) { /* any thread finds the same row */
        a = duet_sim_find_algo(DUET_COLL_ALLREDUCE, name);
        atomic_store_explicit(cached, a, memory_order_relaxed);
    }
    return a;
}

/* The executor's shape of a call on nchan channels (its chunk: what a message of them holds). */
static duet_coll_args_t exec_args(duet_coll_kind_t kind, int rank, int nranks, int root, size_t count, size_t elem,
                                  int nchan, int in_place)
{
    return (duet_coll_args_t){kind, rank, nranks, root, count, elem, duet_cuda_exec_chunk(nchan), in_place, 1, NULL, 0, 0};
}

duet_coll_args_t duet_cuda_coll_shape(duet_coll_kind_t kind, int rank, int nranks, int root, size_t count, size_t elem,
                                      size_t larger, int in_place, int *nchan)
{
    int ch = duet_cuda_exec_channels_for(nranks, larger);
    if (nchan) *nchan = ch;
    return exec_args(kind, rank, nranks, root, count, elem, ch, in_place);
}

int duet_cuda_coll_forced_kernel(duet_coll_kind_t kind, const char *name, size_t bytes, int heap_buffers)
{
    if (kind != DUET_COLL_ALLREDUCE || !name) return 0;
    int shot = strcmp(name, "oneshot") == 0 ? 1 : strcmp(name, "twoshot") == 0 ? 2 : 0;
    /* plan_call: a forced oneshot / twoshot up to the kernels' size runs their kernel; direct_choose:
     * a forced twoshot on heap buffers above the one-shot size runs the direct kernel */
    return shot && (bytes <= DUET_CUDA_COLL_MAX_BYTES || (shot == 2 && heap_buffers));
}

/* d: from direct_of (d->nblocks 0: the direct kernel is out). learn: the call may be one the
 * learning tuner times (queued now, not captured, not in a group): the pick may then exchange
 * with the other ranks (duet_cuda_learn_agree). */
static duet_status_t plan_call(duet_comm_t c, const duet_cuda_coll_call_t *k, const direct_t *d, duet_sched_t *sched,
                               gpu_plan_t *g, int learn)
{
    /* fp16 / bf16 reductions run in fp32 (widened into the work space, rounded once at the end) */
    g->wide = reduces(k->kind) && (k->dt == DUET_FLOAT16 || k->dt == DUET_BFLOAT16);
    g->cdt = g->wide ? DUET_FLOAT32 : k->dt;
    size_t es = duet_datatype_size(g->cdt), larger = k->send_count > k->recv_count ? k->send_count : k->recv_count;
    /* send / recv: the same channels at every size, so a pair agrees in and out of groups */
    int p2p = k->kind == DUET_COLL_SEND || k->kind == DUET_COLL_RECV;
    if (p2p) {
        g->nchan = duet_cuda_coll_p2p_channels(c);
        g->a = exec_args(k->kind, c->rank, c->size, k->root, k->count, es, g->nchan, k->in_place);
    } else {
        g->a = duet_cuda_coll_shape(k->kind, c->rank, c->size, k->root, k->count, es, larger * es,
                                    g->wide ? 0 : k->in_place, &g->nchan);
    }
    duet_sched_init(sched, c->rank, c->size, es);
    g->plan = sched;
    g->algo = NULL;
    g->shot = 0;
    g->by_rule = 0;
    g->trial = -1;
    g->direct = *d;
    if (d->nblocks > 0) {
        g->shot = 3;
        g->by_rule = 1;
        g->algo = k->kind == DUET_COLL_ALLREDUCE ? table_algo(&twoshot_algo, "twoshot") : NULL;
        DUET_LOG(INFO, TUNE, "%s %zu bytes %s, %d ranks, gpu, buffers in the GPU heap: %sdirect kernel (%d blocks)",
                 duet_coll_kind_name(k->kind), k->count * duet_datatype_size(k->dt), duet_dtype_name(k->dt), c->size,
                 g->algo ? "twoshot, " : "", d->nblocks);
        return DUET_OK;
    }
    if (k->kind == DUET_COLL_ALLREDUCE && k->count * duet_datatype_size(k->dt) <= oneshot_max_bytes(c->size)) {
        /* a small allreduce: the one-shot kernel (one launch, one flag exchange), unless DUET_ALGO
         * forces another algorithm. The tuner's GPU model prices every schedule of the executor
         * with one alpha and cannot tell the kernel from them (rd measured 11.8 us at 64 B on two
         * ranks of an H200, the kernel 7.8 us). */
        char forced[64];
        duet_coll_forced_algo(c, k->kind, forced, sizeof forced);
        if (!forced[0]) {
            g->shot = 1;
            g->by_rule = 1;
            g->algo = table_algo(&oneshot_algo, "oneshot");
            DUET_LOG(INFO, TUNE, "allreduce %zu bytes %s, %d ranks, gpu, at most %zu bytes: oneshot (kernel)",
                     k->count * duet_datatype_size(k->dt), duet_dtype_name(k->dt), c->size,
                     oneshot_max_bytes(c->size));
            return g->algo ? DUET_OK : DUET_FAIL(DUET_ERR_INTERNAL, COLL, "%s: no oneshot allreduce", k->fn);
        }
    }
    duet_status_t st;
    if (k->kind == DUET_COLL_SEND || k->kind == DUET_COLL_RECV) st = duet_coll_p2p(&g->a, sched);
    else if (!learn) st = duet_coll_tune_pick(c, &g->a, k->dt, &g->algo, sched, &g->plan);
    else if (duet_coll_tune_deciding(c, &g->a) && (st = duet_cuda_learn_settle(c, c->cuda->coll, &g->a, k->fn)))
        return st;
    else st = duet_coll_tune_pick_agreed(c, &g->a, k->dt, duet_cuda_learn_agree, c, &g->algo, sched, &g->plan);
    if (learn && st == DUET_OK && !p2p) g->trial = duet_coll_tune_trial(c);
    if (st == DUET_OK && g->algo && k->kind == DUET_COLL_ALLREDUCE &&
        k->count * duet_datatype_size(k->dt) <= DUET_CUDA_COLL_MAX_BYTES)
        g->shot = g->algo->build == duet_coll_oneshot_allreduce ? 1 : g->algo->build == duet_coll_twoshot_allreduce ? 2 : 0;
    return st;
}

/* The buffers a call uses must be device memory once it is on the GPU path. */
static duet_status_t check_device(duet_comm_t c, const duet_cuda_coll_call_t *k)
{
    int sd = (k->where & DUET_CUDA_SEND_DEVICE) != 0, rd = (k->where & DUET_CUDA_RECV_DEVICE) != 0;
    int needs_send = k->kind != DUET_COLL_RECV && (k->kind != DUET_COLL_BROADCAST || c->rank == k->root);
    int needs_recv = k->kind != DUET_COLL_SEND && (k->kind != DUET_COLL_REDUCE || c->rank == k->root);
    if ((needs_send && !sd) || (needs_recv && !rd))
        return DUET_FAIL(DUET_ERR_INVALID_ARG, COLL, "%s: on the GPU path (a stream, or a device buffer) the "
                         "buffers must be device memory: sendbuf is %s, recvbuf is %s", k->fn,
                         !needs_send ? "unused" : sd ? "device" : "host", !needs_recv ? "unused" : rd ? "device" : "host");
    return DUET_OK;
}

/* One call, queued on its stream now. */
static duet_status_t run_now(duet_comm_t c, const duet_cuda_coll_call_t *k)
{
    const char *fn = k->fn;
    int needs_recv = k->kind != DUET_COLL_SEND && (k->kind != DUET_COLL_REDUCE || c->rank == k->root);
    duet_sched_t sched;
    gpu_plan_t g;
    direct_t d = direct_of(k);
    cudaStream_t cs = (cudaStream_t)k->stream;
    duet_sched_init(&sched, c->rank, c->size, 1); /* freeable whatever happens */
    coll_state_t *s = NULL;
    duet_status_t st = duet_cuda_coll_state(c, &s, fn);
    /* begin first: it finds whether cs is being captured, and a captured call is not learned from */
    if (st == DUET_OK) st = duet_cuda_coll_begin(c, s, cs, fn);
    if (st == DUET_OK) st = plan_call(c, k, &d, &sched, &g, !s->capturing);
    duet_cuda_trial_t *trial = NULL;
    if (st == DUET_OK && g.trial >= 0) st = duet_cuda_learn_begin(s, &g.a, g.trial, cs, &trial, fn);
    if (st == DUET_OK) {
        if (g.shot == 3) {
            st = launch_direct(s, k, &g.direct, cs);
        } else if (g.shot) {
            st = launch_shot(c, s, k, g.shot == 2, cs);
        } else {
            long ai = g.algo ? (long)(g.algo - duet_coll_algos) : -1;
            duet_cuda_exec_call_t x = {
                .kind = k->kind, .send = k->send, .recv = k->recv, .send_count = k->send_count,
                .recv_count = k->recv_count, .dt = k->dt, .cdt = g.cdt, .op = reduces(k->kind) ? k->op : DUET_SUM,
                .writes_recv = needs_recv, .nchan = g.nchan, .plan = g.plan,
                .key = {1 + (uint64_t)k->kind + (uint64_t)(ai + 1) * 16 + (uint64_t)g.a.in_place * 4096 +
                            ((uint64_t)g.nchan << 16) + ((uint64_t)(uint32_t)k->root << 32),
                        k->count, g.a.elem},
                .sig = call_word(k)};
            st = duet_cuda_exec_run(c, s, &x, cs, fn);
        }
    }
    if (st == DUET_OK && trial) st = duet_cuda_learn_end(trial, cs, fn);
    if (st == DUET_OK) st = duet_cuda_coll_end(s, cs, fn);
    if (st == DUET_OK && g.trial != -1) duet_coll_tune_record(c, 0); /* its time: at the deciding call */
    duet_sched_free(&sched);
    return st;
}

/* Checks a call; inside a group queues it (coll's group queue), else runs it now. A send or
 * receive of no elements is a no-op whatever its buffers (as in NCCL). */
duet_status_t duet_cuda_coll_run(duet_comm_t c, duet_cuda_coll_call_t *k)
{
    int p2p = k->kind == DUET_COLL_SEND || k->kind == DUET_COLL_RECV;
    if (p2p && k->count == 0) return DUET_OK;
    duet_status_t st = check_device(c, k);
    if (st || (st = duet_cuda_coll_capture_guard(c, (cudaStream_t)k->stream, k->fn)) ||
        (st = duet_cuda_coll_prepare(c, k->fn)))
        return st;
    if (!p2p && !k->call_no) { /* numbered once: a group's call when it is queued */
        k->first = duet_coll_group_depth() > 0 ? duet_coll_group_first(c) : 0;
        k->path = direct_choose(c, c->cuda->coll, k);
        k->call_no = ++c->coll_calls;
        duet_coll_sig_t sig = call_sig(k);
        if ((st = duet_coll_sig_post(c, &sig))) return st;
    }
    if (k->count == 0) return DUET_OK;
    if (duet_coll_group_depth() > 0) return duet_coll_group_add(&duet_cuda_coll_executor, c, k);
    if (p2p && k->root == c->rank)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "%s: a send or receive to this rank itself (peer %d) runs only "
                         "inside duet_group_start/end, where it pairs with the matching call", k->fn, k->root);
    return run_now(c, k);
}

/* What plan g runs, as the TUNE log names it. */
static void plan_name(const gpu_plan_t *g, char *out, size_t len)
{
    snprintf(out, len, "%s%s", g->algo ? g->algo->name : g->shot == 3 ? "" : "p2p",
             g->shot == 3 ? (g->algo ? " (direct kernel)" : "direct kernel") : g->shot ? " (kernel)" : "");
}

/* This rank's plan of call k, as run_now would make it (the caller frees *sched). */
static duet_status_t plan_of(duet_comm_t c, const duet_cuda_coll_call_t *k, duet_sched_t *sched, gpu_plan_t *g)
{
    coll_state_t *s = NULL;
    duet_status_t st = duet_cuda_coll_prepare(c, k->fn);
    if (st == DUET_OK) st = duet_cuda_coll_state(c, &s, k->fn);
    duet_sched_init(sched, c->rank, c->size, 1); /* freeable whatever happens */
    if (st) return st;
    duet_cuda_coll_call_t mine = *k;
    mine.path = direct_choose(c, s, k);
    direct_t d = direct_of(&mine);
    duet_sched_free(sched);
    return plan_call(c, &mine, &d, sched, g, 0);
}

duet_status_t duet_cuda_coll_costs(duet_comm_t c, const duet_cuda_coll_call_t *k, char *path, size_t len,
                                   int *direct, duet_coll_model_t *model, duet_predict_t *pred,
                                   duet_coll_args_t *shape)
{
    duet_sched_t sched;
    gpu_plan_t g;
    duet_status_t st = plan_of(c, k, &sched, &g);
    if (st == DUET_OK) {
        plan_name(&g, path, len);
        *direct = g.by_rule;
        if (shape) *shape = g.a;
        st = duet_coll_tune_costs(c, &g.a, model, pred);
    }
    duet_sched_free(&sched);
    return st;
}

duet_status_t duet_cuda_coll_traffic(duet_comm_t c, const duet_cuda_coll_call_t *k, char *algo, size_t len,
                                     double *staged, double *direct)
{
    duet_sched_t sched;
    gpu_plan_t g;
    *staged = *direct = 0;
    duet_status_t st = plan_of(c, k, &sched, &g);
    if (st == DUET_OK) {
        plan_name(&g, algo, len);
        double S = (double)(k->count * duet_datatype_size(k->dt)), n = c->size;
        if (g.shot == 1) { /* copy in; read every pe's copy, write the result */
            *staged = *direct = 2 * S + n * S + S;
        } else if (g.shot == 3) { /* read where it lies, written where it goes (S: count elements) */
            int root = c->rank == k->root;
            switch (k->kind) {
            case DUET_COLL_ALLREDUCE: *direct = S + S / n + 2 * S * (n - 1) / n; break; /* my part; the others */
            case DUET_COLL_REDUCE_SCATTER: *direct = n * S + S; break;
            case DUET_COLL_REDUCE: *direct = root ? n * S + S : 0; break;
            case DUET_COLL_ALLGATHER: *direct = 2 * S * (k->in_place ? n - 1 : n); break;
            case DUET_COLL_ALLTOALL: *direct = 2 * S * n; break;
            default: *direct = root && k->in_place ? 0 : 2 * S; break; /* broadcast */
            }
            *staged = *direct;
        } else if (g.shot == 2) { /* copy in; my part: read n parts, write it twice; gather the rest */
            *staged = *direct = 2 * S + S + 2 * S / n + 2 * S * (n - 1) / n;
        } else {
            for (int i = 0; i < g.plan->nsteps; i++) {
                const duet_step_t *t = &g.plan->steps[i];
                double b = (double)t->bytes;
                switch (t->kind) {
                case DUET_STEP_COPY: *staged += 2 * b, *direct += 2 * b; break;
                case DUET_STEP_REDUCE: *staged += 3 * b, *direct += 3 * b; break;
                case DUET_STEP_SEND: *staged += 2 * b, *direct += b; break;      /* read, (write the inbox) */
                case DUET_STEP_RECV: *staged += 2 * b, *direct += b; break;      /* (read the inbox), write */
                default: *staged += 3 * b, *direct += 2 * b; break;              /* RECV_REDUCE */
                }
            }
            if (g.wide) { /* widen the input, round the result */
                double in = (double)k->send_count, out = (double)k->recv_count;
                *staged += 6 * in + 6 * out, *direct += 6 * in + 6 * out;
            }
        }
    }
    duet_sched_free(&sched);
    return st;
}

const duet_coll_executor_t duet_cuda_coll_executor = {
    sizeof(duet_coll_executor_t), "cuda", duet_cuda_coll_routes, duet_cuda_coll_run, duet_cuda_group_run,
    duet_cuda_coll_model,
};

/*
 * duet_cuda_direct.cu — the direct kernels: collectives whose buffers lie in the GPU heap on
 * every rank (each rank decides from its own buffers, and the decision is part of the call's
 * signature, so ranks that decided otherwise are a mismatch: duet_cuda_coll.c) read the peers'
 * buffers where they lie. Nothing is staged: the traffic is the algorithm's own, so large
 * calls run at the memory's (or NVLink's) rate. A rank's buffers may be anywhere in its heap:
 * each says where in its where[] words (duet_cuda_coll_kern.h) before its ready flags, and a
 * peer reads them after it sees one.
 *
 * Every rank's CUDA block b works with block b of every peer, through the flag words of the
 * shot kernels' scratch (duet_cuda_coll_kern.h), epoch e:
 *   1. write where[] (every block the same two words), release ready1[me][b] = e on every
 *      peer (my buffers of call e are in place: the stream ran everything before this kernel);
 *      wait ready1[q][b] >= e for every q, then read pe q's where[] (pe q cannot rewrite it
 *      before I release done[me] in step 3);
 *   2. the collective's own moves, on block b's sub-range (below);
 *   3. the last of my blocks releases done[me] = e on every peer, then waits done[q] >= e
 *      from every q: the kernel ends only when no peer reads my buffers any more, so the
 *      caller may reuse them as soon as the call is done on its stream.
 * What each reads (send_of[q], recv_of[q]: pe q's buffers; a block's sub-range b of each range
 * is the same on every rank, whole 16-byte packs):
 *   allreduce       two-shot: the elements are cut into n parts; sub-range b of my part is
 *                   reduced from every pe's send (pes 0, 1, ..., n-1 in that order: the same
 *                   bits whoever reduces; fp16 / bf16 in fp32, rounded once) into my recv;
 *                   release ready2[me][b] = e, wait ready2[q][b] >= e; then sub-range b of
 *                   every other part q is copied from pe q's recv. In place, I write only my
 *                   part in the first half (only my block b reads it, element by element
 *                   before writing), and part q in the second, which pe q read before its ready2.
 *   reduce-scatter  block me of every pe's send, reduced into my recv (count elements).
 *   reduce          the root: every pe's send, reduced into its recv; the others only sync.
 *   allgather       pe q's send into my recv block q (mine too, unless in place; in place,
 *                   pe q's block q of its recv, which is then the symmetric buffer).
 *   all-to-all      block me of pe q's send into my recv block q.
 *   broadcast       the root's send into my recv (the root: its own, unless in place).
 * Only what is read remotely must be in the heap: allreduce both buffers, broadcast the root's
 * send, an in-place allgather the receive buffer, the others every send; a rank's own recv may
 * be any device memory otherwise. Packs of 16 bytes are used only where every rank's buffer
 * has the same 16-byte alignment as mine (peers16).
 * The call's signature is published before step 1, and every ready flag carries its tag, checked
 * when the flag is seen (before any remote read);
 * every wait polls the abort word, the peer's line and the deadline, as the shot kernels do.
 *
 * nb blocks: at most what can be resident with every rank of the GPU running its own at once
 * (blocks of different ranks wait for each other: all must be resident).
 */
#include <cuda_runtime.h>
#include "duet/duet_device.cuh"
#include "cuda/duet_cuda_coll_kern.h"
#include "cuda/duet_cuda_coll_sync.cuh"
#include "cuda/duet_cuda_reduce.cuh"

namespace {

using namespace duet_dev_detail;
using namespace duet_cuda_reduce;
using namespace duet_cuda_sync;
constexpr int MB = DUET_CUDA_COLL_MAX_BLOCKS;
constexpr int MAX_PES = 128;

template <typename T, int OP>
__global__ void __launch_bounds__(DUET_CUDA_COLL_THREADS) direct_kernel(duet_cuda_coll_args_t a)
{
    constexpr size_t V = pack_<T>::V;
    __shared__ int st, last, misaligned;
    __shared__ const T *send_of[MAX_PES];
    __shared__ const T *recv_of[MAX_PES];
    const int n = a.h.n_pes, me = a.h.my_pe, b = (int)blockIdx.x, nb = a.nblocks;
    const uint64_t e = call_epoch(a);
    uint64_t *ready1 = (uint64_t *)(void *)a.scratch, *ready2 = ready1 + (size_t)n * MB;
    uint64_t *done = ready2 + (size_t)n * MB, *counter = done + n;
    int64_t *where = (int64_t *)(void *)(a.scratch + duet_cuda_coll_where_off(n));
    const T *send = (const T *)a.send;
    T *recv = (T *)a.recv;
    const size_t count = a.count;
    const bool ar = a.kind == DUET_CUDA_DIRECT_ALLREDUCE;
    if (threadIdx.x == 0) {
        st = 0;
        misaligned = 0;
        /* (a broadcast's non-root has no send: a number no one reads) */
        where[0] = (int64_t)((uintptr_t)a.send - (uintptr_t)a.scratch);
        where[1] = (int64_t)((uintptr_t)a.recv - (uintptr_t)a.scratch);
    }
    publish_call(a); /* before any flag of mine (duet_cuda_sig_kern.h) */
    __syncthreads();
    /* 1. */
    signal_ready(a, &ready1[(size_t)me * MB + b], e);
    if (wait_ready(a, ready1 + b, e, &st)) return;
    /* thread q waited for pe q's flag (acquire): pe q's where[] of this call is visible to it */
    for (int q = (int)threadIdx.x; q < n; q += (int)blockDim.x) {
        const char *base = q == me ? a.scratch : (const char *)duet_dev_ptr(a.h, a.scratch, q);
        const int64_t *w = q == me ? where : (const int64_t *)duet_dev_ptr(a.h, (const int64_t *)where, q);
        const T *ps = (const T *)(const void *)(base + (int64_t)ld_relaxed_u64(&w[0]));
        const T *pr = ar ? (const T *)(const void *)(base + (int64_t)ld_relaxed_u64(&w[1])) : nullptr;
        send_of[q] = ps;
        recv_of[q] = pr;
        /* (a broadcast reads the root's alone, and checks its alignment itself) */
        if (a.kind != DUET_CUDA_DIRECT_BROADCAST &&
            ((uintptr_t)ps % 16 != (uintptr_t)send % 16 || (ar && (uintptr_t)pr % 16 != (uintptr_t)recv % 16)))
            atomicExch(&misaligned, 1);
    }
    __syncthreads();
    const bool peers16 = !misaligned;
    /* 2. */
    size_t lo, hi, sub = part_elems(count, (size_t)nb, V); /* one range of count elements */
    sub_range(count, count, sub, 0, b, &lo, &hi);
    switch (a.kind) {
    case DUET_CUDA_DIRECT_ALLREDUCE: {
        size_t part = part_elems(count, (size_t)n, V);
        sub = part_elems(part, (size_t)nb, V);
        sub_range(count, part, sub, me, b, &lo, &hi);
        reduce_range<T, OP>(recv, send_of, n, 0, lo, hi, peers16 && al16(send) && al16(recv));
        __syncthreads();
        signal_ready(a, &ready2[(size_t)me * MB + b], e);
        if (wait_ready(a, ready2 + b, e, &st)) return;
        for (int k = 1; k < n; k++) {
            int q = (me + k) % n; /* every rank starts on another peer: spreads the reads */
            sub_range(count, part, sub, q, b, &lo, &hi);
            copy_range(recv, recv_of[q], lo, hi, peers16 && al16(recv));
        }
        break;
    }
    case DUET_CUDA_DIRECT_REDUCE_SCATTER: {
        size_t off = (size_t)me * count;
        reduce_range<T, OP>(recv, send_of, n, off, lo, hi, peers16 && al16(send + off) && al16(recv));
        break;
    }
    case DUET_CUDA_DIRECT_REDUCE:
        if (me == a.root) reduce_range<T, OP>(recv, send_of, n, 0, lo, hi, peers16 && al16(send) && al16(recv));
        break;
    case DUET_CUDA_DIRECT_ALLGATHER: /* in place, send is the receive buffer: pe q's block is at q */
        for (int k = 0; k < n; k++) {
            int q = (me + k) % n;
            size_t at = a.in_place ? (size_t)q * count : 0;
            T *dst = recv + (size_t)q * count;
            if (!a.in_place || q != me)
                copy_range(dst, send_of[q] + at, lo, hi, peers16 && al16(dst) && al16(send + at));
        }
        break;
    case DUET_CUDA_DIRECT_ALLTOALL:
        for (int k = 0; k < n; k++) {
            int q = (me + k) % n;
            T *dst = recv + (size_t)q * count;
            const T *src = send_of[q] + (size_t)me * count;
            copy_range(dst, src, lo, hi, peers16 && al16(dst) && al16(send + (size_t)me * count));
        }
        break;
    default: /* DUET_CUDA_DIRECT_BROADCAST: the root's send (a non-root's own send is not used) */
        if (me != a.root || send != recv)
            copy_range(recv, send_of[a.root], lo, hi, al16(recv) && al16(send_of[a.root]));
        break;
    }
    /* 3. */
    if (last_block(a, counter, &last)) {
        signal_peers(a, &done[me], e);
        if (!wait_peers(a, done, 1, e, &st)) call_done(a, counter, e);
    }
}

template <typename T, int OP> struct direct_k {
    static kernel_fn get() { return direct_kernel<T, OP>; }
};

} // namespace

extern "C" int duet_cuda_direct_load(void) { return (int)load_kernels<direct_k>(); }

extern "C" int duet_cuda_direct_max_blocks(int dt, int op, int *blocks)
{
    kernel_fn k = pick_kernel<direct_k>(dt, op);
    int dev = 0, sms = 0, per_sm = 0;
    if (!k) return (int)cudaErrorInvalidValue;
    cudaError_t err;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
        (err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)k, DUET_CUDA_COLL_THREADS, 0)) !=
            cudaSuccess)
        return (int)err;
    *blocks = sms * per_sm;
    return (int)cudaSuccess;
}

extern "C" int duet_cuda_direct_launch(const duet_cuda_coll_args_t *a, void *stream)
{
    kernel_fn k = pick_kernel<direct_k>(a->dt, a->op);
    if (!k || a->h.n_pes > MAX_PES || a->nblocks < 1 || a->nblocks > MB) return (int)cudaErrorInvalidValue;
    k<<<a->nblocks, DUET_CUDA_COLL_THREADS, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}

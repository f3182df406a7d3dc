/*
 * duet_cuda_coll.cu — the allreduce kernels on GPU buffers: one-shot and two-shot over the
 * communicator's symmetric scratch (layout in duet_cuda_coll_kern.h; host side, tuner and
 * routing in duet_cuda_coll.c).
 *
 * The work is cut into nb blocks (the same nb on every rank: it depends on the call's size
 * alone), and every CUDA block b runs its own protocol with block b of every peer, with its
 * own flag words, so blocks never wait for each other:
 *
 *   one-shot, epoch e, parity p = e & 1, block b owns elements [lo, hi):
 *     1. wait done[q] >= e - 2 for every peer q     (q no longer reads my buf[p])
 *     2. copy send[lo, hi) into my buf[p]; release ready1[me][b] = e on every peer
 *     3. wait ready1[q][b] >= e for every q           (acquire: q's data is visible; the
 *                                                      flag's tag checked)
 *     4. for each element: reduce buf[p] of pes 0, 1, ..., n-1 in that order (the same bits on
 *        every rank), in fp32 for fp16 / bf16 (rounded once), fp64 for fp64, and in the
 *        integer's own width (wrapping) for integers; avg divides by n at the end (integers:
 *        truncated toward 0, as on the CPU); write recv
 *     5. the last of my blocks to finish (a counter of the call's finished blocks) releases
 *        done[me] = e on every peer, sets the counter back to 0 and stores e as my epoch word
 *        (the call's epoch is read from it on the device, never passed by the host: a CUDA
 *        graph replays the same arguments, and its calls still count on)
 *   two-shot: each part q (count / n elements, rounded up) is cut the same way into nb
 *     sub-ranges; block b copies sub-range b of every part (2), reduces sub-range b of *my*
 *     part from every pe's buf[p] and writes it back into my buf[p] (only I read my own part
 *     in phase 1, element by element before writing it) and into recv, releases ready2, waits
 *     ready2[q][b] >= e and copies sub-range b of part q from pe q's buf[p] into recv; then (5).
 *
 * Copies and reductions move 16-byte packs, several in flight per thread, when the caller's
 * buffers are 16-byte aligned (duet_cuda_coll_sync.cuh); parts and sub-ranges start on packs.
 *
 * Why reuse is safe (the scratch of call e is never overwritten while a peer still reads it):
 * a rank's calls run in order (one stream, or the host orders a change of stream behind the
 * last call with an event), so its flags only grow. Rank q reads my buf[p] only during its
 * call e (after my ready1 / ready2 of e, which I release after writing it) and, when all its
 * blocks are done, releases done[me on q's side] = e into my flags. I write buf[p] next in call
 * e + 2, and only after seeing done[q] >= e from every q (step 1): an acquire that pairs with
 * q's release, which follows all of q's reads (block syncs, a system fence and the block
 * counter). Call e + 1 uses the other buffer, so a rank may run one call ahead of its
 * slowest peer and no further. Flags are set (not added), to the epoch: a flag from a later
 * call (>= e) also satisfies a wait for e, and it cannot come before q's data of e is in
 * place, since q's calls run in order. Nothing waits on a block that does not exist: ready
 * flags are per block of the same call on both sides, done is per rank.
 *
 * Every kernel first writes its call's signature word into its own line, and its ready flags
 * carry the word's tag (the epoch in the high 48 bits, the tag in the low 16): a block checks
 * the tag of every peer's ready flag it sees, before it reads the peer's data (a call with
 * other arguments, or another call, is a mismatch: duet_cuda_sig_kern.h). Every wait polls the communicator's
 * abort word, the peer's line and a deadline (timeout_ns); on any of them the block stops and
 * stores the status into the mapped host record a.fail (the host reports it on the next call;
 * the communicator is then unusable for GPU collectives).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include "duet/duet_device.cuh"
#include "cuda/duet_cuda_coll_kern.h"
#include "cuda/duet_cuda_reduce.cuh"
#include "cuda/duet_cuda_coll_sync.cuh"

namespace {

using namespace duet_dev_detail;
using namespace duet_cuda_reduce;
using namespace duet_cuda_sync;
constexpr int MB = DUET_CUDA_COLL_MAX_BLOCKS;

template <typename T, int OP>
__global__ void __launch_bounds__(DUET_CUDA_COLL_THREADS) allreduce_kernel(duet_cuda_coll_args_t a)
{
    constexpr size_t V = pack_<T>::V;
    __shared__ int st;
    __shared__ const T *peer[128];
    const int n = a.h.n_pes, me = a.h.my_pe, b = (int)blockIdx.x, nb = a.nblocks;
    const uint64_t e = call_epoch(a);
    uint64_t *ready1 = (uint64_t *)(void *)a.scratch, *ready2 = ready1 + (size_t)n * MB;
    uint64_t *done = ready2 + (size_t)n * MB, *counter = done + n;
    T *buf = (T *)(void *)(a.scratch + duet_cuda_coll_flag_bytes(n) + (size_t)(e & 1) * DUET_CUDA_COLL_MAX_BYTES);
    const T *send = (const T *)a.send;
    T *recv = (T *)a.recv;
    /* the scratch is aligned: 16-byte packs when the caller's buffers are too */
    const bool vec = (uintptr_t)a.send % 16 == 0 && (uintptr_t)a.recv % 16 == 0;
    if (threadIdx.x == 0) st = 0;
    for (int q = (int)threadIdx.x; q < n; q += (int)blockDim.x) peer[q] = duet_dev_ptr(a.h, (const T *)buf, q);
    publish_call(a); /* before any flag of mine (duet_cuda_sig_kern.h) */
    __syncthreads();
    /* 1. every peer has finished reading my buf of call e - 2 */
    if (e > 2 && wait_peers(a, done, 1, e - 2, &st)) return;

    size_t lo, hi;
    if (!a.twoshot) { /* one part, nb sub-ranges */
        size_t sub = part_elems(a.count, (size_t)nb, V);
        sub_range(a.count, a.count, sub, 0, b, &lo, &hi);
        copy_range(buf, send, lo, hi, vec);
        __syncthreads();
        signal_ready(a, &ready1[(size_t)me * MB + b], e);
        if (wait_ready(a, ready1 + b, e, &st)) return;
        reduce_range<T, OP>(recv, peer, n, 0, lo, hi, vec);
    } else {
        size_t part = part_elems(a.count, (size_t)n, V), sub = part_elems(part, (size_t)nb, V);
        for (int q = 0; q < n; q++) {
            sub_range(a.count, part, sub, q, b, &lo, &hi);
            copy_range(buf, send, lo, hi, vec);
        }
        __syncthreads();
        signal_ready(a, &ready1[(size_t)me * MB + b], e);
        if (wait_ready(a, ready1 + b, e, &st)) return;
        sub_range(a.count, part, sub, me, b, &lo, &hi);
        /* my part: into recv, then into my buf for the peers (each thread copies the
         * elements it reduced: only it read them from my buf) */
        reduce_range<T, OP>(recv, peer, n, 0, lo, hi, vec);
        copy_range(buf, (const T *)recv, lo, hi, vec);
        __syncthreads(); /* the copy before ready2 */
        signal_ready(a, &ready2[(size_t)me * MB + b], e);
        if (wait_ready(a, ready2 + b, e, &st)) return;
        for (int k = 1; k < n; k++) {
            int q = (me + k) % n;
            sub_range(a.count, part, sub, q, b, &lo, &hi);
            copy_range(recv, peer[q], lo, hi, vec);
        }
    }
    /* 5. the last of my blocks tells every peer that I no longer read its scratch of call e */
    __shared__ int last;
    if (last_block(a, counter, &last)) {
        signal_peers(a, &done[me], e);
        call_done(a, counter, e);
    }
}

template <typename T, int OP> struct shot_kernel {
    static kernel_fn get() { return allreduce_kernel<T, OP>; }
};

} // namespace

extern "C" int duet_cuda_coll_load(void) { return (int)load_kernels<shot_kernel>(); }

extern "C" int duet_cuda_coll_launch(const duet_cuda_coll_args_t *a, void *stream)
{
    kernel_fn k = pick_kernel<shot_kernel>(a->dt, a->op);
    if (!k || a->h.n_pes > 128 || a->nblocks < 1 || a->nblocks > MB) return (int)cudaErrorInvalidValue;
    k<<<a->nblocks, DUET_CUDA_COLL_THREADS, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}

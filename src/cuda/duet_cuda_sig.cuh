/*
 * duet_cuda_sig.cuh — the kernels' side of call signatures (design in duet_cuda_sig_kern.h):
 * publishing a call's word, reading a peer's, recording a mismatch. Inside src/cuda only.
 */
#ifndef DUET_CUDA_SIG_CUH
#define DUET_CUDA_SIG_CUH

#include "duet/duet_device.cuh"
#include "cuda/duet_cuda_sig_kern.h"

namespace duet_cuda_sig {

using namespace duet_dev_detail;

/* Thread 0: my word into my line (a local store: the flag releases that follow it, after a
 * block barrier or in thread 0 itself, order it before the flags). Nothing for a send /
 * receive. */
__device__ __forceinline__ void publish(uint64_t *lines, uint64_t word)
{
    if (word && threadIdx.x == 0) st_relaxed_u64(lines + duet_cuda_sig_line(word), word);
}

/* Peer q's word in its line for my call (a load through the mapping). */
__device__ __forceinline__ uint64_t theirs(const duet_device_comm_t &h, const uint64_t *lines, int q, uint64_t word)
{
    return ld_relaxed_u64(duet_dev_ptr(h, lines + duet_cuda_sig_line(word), q));
}

/* A word read while waiting: the same call with other arguments. */
__device__ __forceinline__ bool differs(uint64_t w, uint64_t word)
{
    return word && (w >> 32) == (word >> 32) && w != word;
}

/* A word read once peer q's flag for my call is seen: anything but my word, or a later call's
 * (q ran DUET_CUDA_SIG_LINES calls or more ahead and rewrote the line: not to be told). */
__device__ __forceinline__ bool not_mine(uint64_t w, uint64_t word)
{
    return word && w != word && (int32_t)((uint32_t)(w >> 32) - (uint32_t)(word >> 32)) <= 0;
}

/* Records a mismatch with peer q (the first finding wins) and returns DUET_ERR_INVALID_ARG.
 * Out of line: inlined at every wait it made the kernels' fast path spill registers to local
 * memory (the one-shot float sum: 32 bytes, +5 % on an 8-byte call). */
static __device__ __noinline__ int report(duet_cuda_fail_t *f, int q, uint64_t mine, uint64_t found)
{
    if (atomicCAS(&f->claimed, 0, 3) == 0) { /* 3: being written (another block may set status meanwhile) */
        f->peer = q;
        f->mine = mine;
        f->theirs = found;
        __threadfence_system(); /* the details before "claimed 1" and the status */
        atomicExch(&f->claimed, 1);
    }
    atomicCAS(&f->status, 0, (int)DUET_ERR_INVALID_ARG);
    return DUET_ERR_INVALID_ARG;
}

} // namespace duet_cuda_sig

#endif

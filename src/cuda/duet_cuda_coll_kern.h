/*
 * duet_cuda_coll_kern.h — what the host side of the GPU collectives (duet_cuda_coll.c, C)
 * and their kernels (duet_cuda_coll.cu and duet_cuda_direct.cu, CUDA C++) share: plain data only, no internal C
 * headers (they are not C++).
 *
 * My scratch, at the same offset in every rank's part of the GPU heap (uint64 flag words,
 * then two data buffers, one per call parity; n = pes, MB = DUET_CUDA_COLL_MAX_BLOCKS):
 *   ready1[q * MB + b]   epoch at which pe q's block b has its input in q's scratch (q writes;
 *                        a ready flag is e << 16 | the call's tag: duet_cuda_sig_flag)
 *   ready2[q * MB + b]   two-shot: epoch at which pe q's block b has its reduced part ready
 *   done[q]              epoch up to which pe q has finished reading my scratch (q writes)
 *   counter              my blocks of the current call that have finished (only I touch it;
 *                        the call's last block sets it back to 0)
 *   sigline[c % L]       my word of call c (L = DUET_CUDA_SIG_LINES: the call signatures of
 *                        every GPU collective, duet_cuda_sig_kern.h; peers read it)
 *   where[2]             the direct kernels: where my send and receive buffers of the current
 *                        call lie, as byte distances from my scratch (written before my ready
 *                        flags; a peer reads them after it sees one, so no rank's buffers
 *                        need be at the offsets of another's)
 *   epoch                my calls of these kernels that have finished (only I touch it): a
 *                        call's blocks read it when they start (the call's epoch is one more),
 *                        its last block stores the call's epoch. Kept on the device, not
 *                        passed by the host, so a CUDA graph's replay numbers its calls anew
 *   buf[0], buf[1]       DUET_CUDA_COLL_MAX_BYTES each: a call of epoch e uses buf[e & 1]
 */
#ifndef DUET_CUDA_COLL_KERN_H
#define DUET_CUDA_COLL_KERN_H

#include <stddef.h>
#include <stdint.h>
#include "duet/duet_cuda.h"
#include "cuda/duet_cuda_sig_kern.h"

#define DUET_CUDA_COLL_MAX_BYTES ((size_t)1 << 20) /* largest message: one scratch buffer */
#define DUET_CUDA_COLL_MAX_BLOCKS 64 /* blocks of one call (shot kernels use at most 32) */
#define DUET_CUDA_COLL_THREADS 512
#define DUET_CUDA_COLL_BLOCK_BYTES ((size_t)32 << 10) /* bytes per block before another is added */

#ifdef __CUDACC__
#define DUET_CUDA_COLL_HD __host__ __device__
#else
#define DUET_CUDA_COLL_HD
#endif

/* Bytes of the flag words for n pes (a multiple of 256, so the buffers stay aligned). */
DUET_CUDA_COLL_HD static inline size_t duet_cuda_coll_flag_bytes(int n)
{
    size_t words = 2 * (size_t)n * DUET_CUDA_COLL_MAX_BLOCKS + (size_t)n + 1 + DUET_CUDA_SIG_LINES + 2 + 1;
    return (words * 8 + 255) & ~(size_t)255;
}
/* Byte offset of sigline in the scratch. */
DUET_CUDA_COLL_HD static inline size_t duet_cuda_coll_sig_off(int n)
{
    return (2 * (size_t)n * DUET_CUDA_COLL_MAX_BLOCKS + (size_t)n + 1) * 8;
}
/* Byte offset of where[] (the direct kernels' buffer distances) in the scratch. */
DUET_CUDA_COLL_HD static inline size_t duet_cuda_coll_where_off(int n)
{
    return duet_cuda_coll_sig_off(n) + DUET_CUDA_SIG_LINES * 8;
}
/* Byte offset of epoch (my finished calls of the flag kernels) in the scratch. */
DUET_CUDA_COLL_HD static inline size_t duet_cuda_coll_epoch_off(int n)
{
    return duet_cuda_coll_where_off(n) + 2 * 8;
}
DUET_CUDA_COLL_HD static inline size_t duet_cuda_coll_scratch_bytes(int n)
{
    return duet_cuda_coll_flag_bytes(n) + 2 * DUET_CUDA_COLL_MAX_BYTES;
}

/* The collectives of the direct kernels (the values of duet_coll_kind_t). */
enum { DUET_CUDA_DIRECT_ALLREDUCE, DUET_CUDA_DIRECT_BROADCAST, DUET_CUDA_DIRECT_REDUCE, DUET_CUDA_DIRECT_ALLGATHER,
       DUET_CUDA_DIRECT_REDUCE_SCATTER, DUET_CUDA_DIRECT_ALLTOALL };

typedef struct {
    duet_device_comm_t h;
    const void *send;
    void *recv;
    char *scratch;        /* my scratch (symmetric); the call's epoch comes from its epoch word */
    size_t count;
    int dt, op;           /* duet_datatype_t, duet_op_t */
    int twoshot, nblocks;
    int kind, root;       /* the direct kernels: duet_coll_kind_t, and the root */
    int in_place;         /* the direct kernels: an in-place allgather (send is then recv) */
                          /* (the direct kernels read a peer's buffers where it says: where[]) */
    int64_t timeout_ns;   /* bound on each wait; 0: none */
    uint64_t sig;         /* the call's signature word (duet_cuda_sig_kern.h) */
    duet_cuda_fail_t *fail; /* device address of mapped host memory: the first failure */
} duet_cuda_coll_args_t;

#ifdef __cplusplus
extern "C" {
#endif
/* Launches the allreduce kernel on `stream` (a cudaStream_t). Returns a cudaError_t. */
int duet_cuda_coll_launch(const duet_cuda_coll_args_t *a, void *stream);
/* The direct kernels (symmetric buffers, read where they lie: duet_cuda_direct.cu): a launch
 * (a->kind says which collective), and the blocks of one the current device can hold at once
 * (all SMs). */
int duet_cuda_direct_launch(const duet_cuda_coll_args_t *a, void *stream);
int duet_cuda_direct_max_blocks(int dt, int op, int *blocks);
/* Load every instance of the allreduce kernels / the direct kernels now (duet_cuda_kernels_load).
 * Return a cudaError_t. */
int duet_cuda_coll_load(void);
int duet_cuda_direct_load(void);
#ifdef __cplusplus
}
#endif

#endif

/*
 * duet_cuda_exec_kern.h — what the host side of the GPU schedule executor (duet_cuda_exec.c,
 * C) and its kernel (duet_cuda_exec.cu, CUDA C++) share: plain data only.
 *
 * The executor runs one rank's schedule (src/coll/duet_coll_sched.h) on the GPU with `nchan`
 * channels, one CUDA block each. Every channel runs every step of the schedule on its own
 * slice of the step's elements (channel c of a step of e elements takes elements
 * [duet_part_start(e, nchan, c), duet_part_start(e, nchan, c + 1))), so a message of the
 * schedule becomes nchan messages, one per channel, each at most DUET_CUDA_EXEC_SLOT bytes
 * (the schedule is built with chunk = nchan x slot). The matching slice on the other side has
 * the same size: both sides cut the same message the same way.
 *
 * My executor scratch, at the same offset in every rank's part of the GPU heap (n = pes,
 * MC = the communicator's channel count, K = DUET_CUDA_EXEC_SLOTS, S = DUET_CUDA_EXEC_SLOT):
 *   posted[c * n + p]   messages pe p has put into my inbox on channel c (p writes, cumulative)
 *   freed[c * n + q]    messages of mine pe q has taken out of its inbox on channel c (q writes)
 *   sent[c * n + q], recvd[c * n + p]   my own counts (only my kernels touch them)
 *   inbox[((c * n + p) * K + k) * S]    slot k of the messages pe p sends me on channel c; its
 *                                       last 8 bytes: the sender's call word (duet_cuda_sig_kern.h)
 * A channel may put message m (cumulative) to q when m - freed < K, into slot m % K.
 */
#ifndef DUET_CUDA_EXEC_KERN_H
#define DUET_CUDA_EXEC_KERN_H

#include <stddef.h>
#include <stdint.h>
#include "duet/duet_cuda.h"
#include "cuda/duet_cuda_sig_kern.h"

#define DUET_CUDA_EXEC_SLOT ((size_t)128 << 10) /* bytes of one channel's slot */
#define DUET_CUDA_EXEC_SLOTS 4                  /* slots per channel and sender */
#define DUET_CUDA_EXEC_MAX_CHAN 64              /* channels, at most (fewer for many ranks) */
#define DUET_CUDA_EXEC_INBOX_BUDGET ((size_t)64 << 20) /* inbox bytes per rank, at most */
#define DUET_CUDA_EXEC_THREADS 512
#define DUET_CUDA_EXEC_SHARED_MAX (46 << 10) /* dynamic shared memory of the kernel, at most */

#ifdef __CUDACC__
#define DUET_CUDA_EXEC_HD __host__ __device__
#else
#define DUET_CUDA_EXEC_HD
#endif

/* Bytes of the counter words for n pes and mc channels (a multiple of 256). */
DUET_CUDA_EXEC_HD static inline size_t duet_cuda_exec_counter_bytes(int n, int mc)
{
    return ((size_t)4 * (size_t)n * (size_t)mc * 8 + 255) & ~(size_t)255;
}
DUET_CUDA_EXEC_HD static inline size_t duet_cuda_exec_scratch_bytes(int n, int mc)
{
    return duet_cuda_exec_counter_bytes(n, mc) + (size_t)mc * (size_t)n * DUET_CUDA_EXEC_SLOTS * DUET_CUDA_EXEC_SLOT;
}

/* Dynamic shared memory of a launch (see the kernel): counts, queue heads and tails, pending
 * local steps, done bits. */
DUET_CUDA_EXEC_HD static inline size_t duet_cuda_exec_shared_bytes(int n, int nsteps, int nlocal)
{
    return (size_t)n * 32 + (size_t)nlocal * 4 + ((size_t)nsteps + 31) / 32 * 4;
}

/* The largest message of a schedule run on `nchan` channels: every channel's slice fits its
 * slot (a slice is a whole number of 16-byte units, the last one also takes the remainder). */
DUET_CUDA_EXEC_HD static inline size_t duet_cuda_exec_chunk(int nchan)
{
    return (size_t)nchan * (DUET_CUDA_EXEC_SLOT - 64);
}

/* One step as the kernel reads it (the host's duet_step_t, with the queue link added). */
typedef struct {
    uint8_t kind, src_buf, dst_buf, pad; /* duet_step_kind_t, duet_buf_id_t x 2 */
    int32_t peer;
    int32_t dep;  /* an earlier step that must be done on every channel first, or -1 */
    int32_t next; /* the next step of the same queue (sends to peer, or receives from it), or -1 */
    uint64_t src_off, dst_off, bytes;
} duet_cuda_step_t;

enum { DUET_CUDA_STEP_COPY, DUET_CUDA_STEP_REDUCE, DUET_CUDA_STEP_SEND, DUET_CUDA_STEP_RECV,
       DUET_CUDA_STEP_RECV_REDUCE }; /* the values of duet_step_kind_t */

typedef struct {
    duet_device_comm_t h;
    char *scratch;            /* my executor scratch (symmetric) */
    const duet_cuda_step_t *steps; /* device copy of the schedule */
    const int32_t *heads;     /* 2n: the first send to pe q at [2q], the first receive from q at [2q+1] */
    const int32_t *locals;    /* the copies and reductions, in schedule order */
    uint32_t *stepdone;       /* nsteps counters: channels that finished the step (zero at start;
                               * the last channel to leave zeroes them again) */
    uint32_t *leaving;        /* channels that finished this call (the same) */
    int nsteps, nlocal;
    char *buf[3];              /* send, receive, scratch (duet_buf_id_t order) */
    int dt, op;               /* compute type (never fp16 / bf16: widened first) and op (avg runs as sum) */
    int elem;
    int nchan, maxchan;       /* channels of this call; of the scratch layout */
    int64_t timeout_ns;       /* bound on each wait; 0: none */
    uint64_t sig;             /* the call's signature word; 0: sends and receives */
    uint64_t *sigline;        /* my lines of words (symmetric: in the GPU collectives' scratch) */
    duet_cuda_fail_t *fail;   /* device address of mapped host memory: the first failure */
} duet_cuda_exec_args_t;

/* Elementwise kernels around the executor, for a reduction of fp16 / bf16 (run in fp32) or avg. */
typedef struct {
    const void *in;
    void *out;
    size_t count;
    int dt;       /* the caller's type */
    int divide;   /* > 0: divide by this (avg) */
} duet_cuda_conv_args_t;

#ifdef __cplusplus
extern "C" {
#endif
/* Loads the executor's kernels and the conversions now (duet_cuda_kernels_load). Returns a
 * cudaError_t. */
int duet_cuda_exec_load(void);
/* Launches the executor on `stream` (a cudaStream_t). Returns a cudaError_t. */
int duet_cuda_exec_launch(const duet_cuda_exec_args_t *a, size_t shared, void *stream);
/* fp16 / bf16 -> fp32 (`out` is float). */
int duet_cuda_widen_launch(const duet_cuda_conv_args_t *a, void *stream);
/* fp32 -> fp16 / bf16 when dt is one of them (`in` is float), else in place on `out` (dt
 * elements): divides by a->divide. */
int duet_cuda_finish_launch(const duet_cuda_conv_args_t *a, void *stream);
#ifdef __cplusplus
}
#endif

#endif

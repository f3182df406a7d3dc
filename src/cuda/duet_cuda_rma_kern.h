/*
 * duet_cuda_rma_kern.h — the kernels of the GPU-heap one-sided host calls
 * (duet_cuda_rma_kern.cu), as duet_cuda_rma.c launches them: plain C, each returns the launch's
 * cudaError_t as an int (0 = launched) and never waits. `stream` is a cudaStream_t.
 */
#ifndef DUET_CUDA_RMA_KERN_H
#define DUET_CUDA_RMA_KERN_H

#include <stddef.h>
#include <stdint.h>
#include "duet/duet_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The atomic operations (the order of duet_amo_op_t). */
enum { DUET_CUDA_K_FETCH, DUET_CUDA_K_SET, DUET_CUDA_K_SWAP, DUET_CUDA_K_CSWAP, DUET_CUDA_K_ADD,
       DUET_CUDA_K_AND, DUET_CUDA_K_OR, DUET_CUDA_K_XOR };

#define DUET_CUDA_K_P_MAX 64 /* bytes a put may carry in the kernel's arguments */

/* Loads these kernels now (duet_cuda_kernels_load). */
int duet_cuda_k_load(void);
/* Stores n <= DUET_CUDA_K_P_MAX bytes (copied from `bytes` at the call) at dst. */
int duet_cuda_k_p(void *dst, const void *bytes, size_t n, void *stream);
/* The atomic `op` of width 4 or 8 at addr (system scope); the old value to *out (may be NULL;
 * host-mapped or device memory). */
int duet_cuda_k_amo(void *addr, int width, int op, uint64_t operand, uint64_t cond, uint64_t *out, void *stream);
/* Waits (one thread, polling h's abort word) until *sig cmp value; a failure's status goes to
 * *err (the first one wins). */
int duet_cuda_k_wait(duet_device_comm_t h, const uint64_t *sig, int cmp, uint64_t value, int32_t *err,
                     void *stream);
/* duet_dev_barrier_block over h in one block; a failure's status goes to *err. */
int duet_cuda_k_barrier(duet_device_comm_t h, int32_t *err, void *stream);

#ifdef __cplusplus
}
#endif
#endif

/*
 * duet_cuda_coll_sync.cuh — what the flag-synchronised allreduce kernels (one-shot and
 * two-shot in duet_cuda_coll.cu, the direct kernel in duet_cuda_direct.cu) share: waiting for
 * and signalling the peers' flag words of the scratch (layout in duet_cuda_coll_kern.h), the
 * end-of-call counter, and the choice of a kernel instance by datatype and reduction.
 * Inside src/cuda only; included by .cu files, each in its own anonymous namespace.
 */
#ifndef DUET_CUDA_COLL_SYNC_CUH
#define DUET_CUDA_COLL_SYNC_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "duet/duet_device.cuh"
#include "cuda/duet_cuda_coll_kern.h"
#include "cuda/duet_cuda_reduce.cuh"

namespace duet_cuda_sync {

using namespace duet_dev_detail;

/* Threads t < n, t != me, wait until flags[t * stride] >= target; the block learns the
 * outcome (0, or the status that stopped it: the abort word or the deadline). Contains
 * __syncthreads. */
__device__ inline int wait_peers(const duet_cuda_coll_args_t &a, const uint64_t *flags, int stride, uint64_t target,
                                 int *shared_st)
{
    const int n = a.h.n_pes, me = a.h.my_pe, t = (int)threadIdx.x;
    if (t < n && t != me) {
        const uint64_t *f = flags + (size_t)t * (size_t)stride;
        uint64_t start = 0;
        for (unsigned polls = 0; ld_acquire_u64(f) < target; polls++) {
            if ((polls & (ABORT_EVERY - 1)) != ABORT_EVERY - 1) continue;
            int st = abort_status(a.h);
            if (!st && a.timeout_ns > 0) {
                uint64_t tn = duet_cuda_reduce::now_ns();
                if (!start) start = tn;
                else if (tn - start > (uint64_t)a.timeout_ns) st = DUET_ERR_TIMEOUT;
            }
            if (st) {
                atomicCAS(shared_st, 0, st);
                break;
            }
            if (*(volatile int *)shared_st) break;
        }
    }
    __syncthreads();
    int st = *(volatile int *)shared_st;
    if (st && threadIdx.x == 0) atomicCAS(a.status, 0, st);
    return st;
}

/* Threads t < n, t != me, release value into `flag` (an address in my scratch) on pe t. */
__device__ __forceinline__ void signal_peers(const duet_cuda_coll_args_t &a, uint64_t *flag, uint64_t value)
{
    const int n = a.h.n_pes, me = a.h.my_pe, t = (int)threadIdx.x;
    if (t < n && t != me) st_release_u64(duet_dev_ptr(a.h, flag, t), value);
}

/* 1 in every thread of the last of the call's blocks to get here (the block counter is
 * cumulative over calls; a.count_base is its value before this call), after all the block's
 * memory accesses, and those of the blocks before it, are ordered before what follows. */
__device__ inline int last_block(const duet_cuda_coll_args_t &a, uint64_t *counter, int *shared_last)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        unsigned long long old = atomicAdd((unsigned long long *)counter, 1ull);
        __threadfence_system();
        *shared_last = old == a.count_base + (uint64_t)a.nblocks - 1;
    }
    __syncthreads();
    return *shared_last;
}

typedef void (*kernel_fn)(duet_cuda_coll_args_t);

/* K<T, OP>::get() returns the kernel instance for storage type T and reduction OP. */
template <template <typename, int> class K, typename T> kernel_fn pick_op(int op)
{
    switch (op) {
    case DUET_SUM: return K<T, DUET_SUM>::get();
    case DUET_PROD: return K<T, DUET_PROD>::get();
    case DUET_MIN: return K<T, DUET_MIN>::get();
    case DUET_MAX: return K<T, DUET_MAX>::get();
    case DUET_AVG: return K<T, DUET_AVG>::get();
    default: return nullptr;
    }
}

template <template <typename, int> class K> kernel_fn pick_kernel(int dt, int op)
{
    switch (dt) {
    case DUET_INT8: return pick_op<K, int8_t>(op);
    case DUET_UINT8: return pick_op<K, uint8_t>(op);
    case DUET_INT32: return pick_op<K, int32_t>(op);
    case DUET_UINT32: return pick_op<K, uint32_t>(op);
    case DUET_INT64: return pick_op<K, int64_t>(op);
    case DUET_UINT64: return pick_op<K, uint64_t>(op);
    case DUET_FLOAT16: return pick_op<K, __half>(op);
    case DUET_BFLOAT16: return pick_op<K, __nv_bfloat16>(op);
    case DUET_FLOAT32: return pick_op<K, float>(op);
    case DUET_FLOAT64: return pick_op<K, double>(op);
    default: return nullptr;
    }
}

} // namespace duet_cuda_sync

#endif

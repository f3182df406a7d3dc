/*
 * The kernels behind the GPU-heap one-sided host calls and their stream-ordered forms
 * (duet_cuda_rma.c): one thread each, except the barrier (one block of one warp). They are
 * the GPU's side of a host call, so they are as small as a launch allows; the launch itself
 * (a few microseconds) is what a host call on GPU memory costs.
 */
#include <cuda_runtime.h>
#include <duet/duet_device.cuh>

#include "cuda/duet_cuda_rma_kern.h"

struct p_args {
    unsigned char b[DUET_CUDA_K_P_MAX];
};

__global__ void duet_cuda_k_p_kernel(unsigned char *dst, p_args a, unsigned n)
{
    for (unsigned i = 0; i < n; i++) dst[i] = a.b[i];
    __threadfence_system();
}

extern "C" int duet_cuda_k_p(void *dst, const void *bytes, size_t n, void *stream)
{
    p_args a;
    memcpy(a.b, bytes, n);
    duet_cuda_k_p_kernel<<<1, 1, 0, (cudaStream_t)stream>>>((unsigned char *)dst, a, (unsigned)n);
    return (int)cudaGetLastError();
}

template <typename U> __device__ U amo_apply(U *p, int op, U operand, U cond)
{
    switch (op) {
    case DUET_CUDA_K_FETCH: return *(volatile U *)p;
    case DUET_CUDA_K_SET:
    case DUET_CUDA_K_SWAP: return atomicExch_system(p, operand);
    case DUET_CUDA_K_CSWAP: return atomicCAS_system(p, cond, operand);
    case DUET_CUDA_K_ADD: return atomicAdd_system(p, operand);
    case DUET_CUDA_K_AND: return atomicAnd_system(p, operand);
    case DUET_CUDA_K_OR: return atomicOr_system(p, operand);
    default: return atomicXor_system(p, operand);
    }
}

__global__ void duet_cuda_k_amo_kernel(void *addr, int width, int op, uint64_t operand, uint64_t cond,
                                       uint64_t *out)
{
    uint64_t old;
    __threadfence_system(); /* earlier operations of the stream land first */
    if (width == 4)
        old = amo_apply<unsigned>((unsigned *)addr, op, (unsigned)operand, (unsigned)cond);
    else
        old = amo_apply<unsigned long long>((unsigned long long *)addr, op, (unsigned long long)operand,
                                            (unsigned long long)cond);
    __threadfence_system();
    if (out) *(volatile uint64_t *)out = old;
}

extern "C" int duet_cuda_k_amo(void *addr, int width, int op, uint64_t operand, uint64_t cond, uint64_t *out,
                               void *stream)
{
    duet_cuda_k_amo_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(addr, width, op, operand, cond, out);
    return (int)cudaGetLastError();
}

__global__ void duet_cuda_k_wait_kernel(duet_device_comm_t h, const uint64_t *sig, int cmp, uint64_t value,
                                        int32_t *err)
{
    int st = duet_dev_signal_wait_until(h, sig, cmp, value);
    if (st) atomicCAS_system((int *)err, 0, st);
    __threadfence_system();
}

extern "C" int duet_cuda_k_wait(duet_device_comm_t h, const uint64_t *sig, int cmp, uint64_t value, int32_t *err,
                                void *stream)
{
    duet_cuda_k_wait_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(h, sig, cmp, value, err);
    return (int)cudaGetLastError();
}

__global__ void duet_cuda_k_barrier_kernel(duet_device_comm_t h, int32_t *err)
{
    int st = duet_dev_barrier_block(h);
    if (st && threadIdx.x == 0) atomicCAS_system((int *)err, 0, st);
}

extern "C" int duet_cuda_k_barrier(duet_device_comm_t h, int32_t *err, void *stream)
{
    duet_cuda_k_barrier_kernel<<<1, 32, 0, (cudaStream_t)stream>>>(h, err);
    return (int)cudaGetLastError();
}

extern "C" int duet_cuda_k_load(void)
{
    const void *k[] = {(const void *)duet_cuda_k_p_kernel, (const void *)duet_cuda_k_amo_kernel,
                       (const void *)duet_cuda_k_wait_kernel, (const void *)duet_cuda_k_barrier_kernel};
    cudaError_t first = cudaSuccess;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        cudaFuncAttributes at;
        cudaError_t err = cudaFuncGetAttributes(&at, k[i]);
        if (err != cudaSuccess && first == cudaSuccess) first = err;
    }
    return (int)first;
}

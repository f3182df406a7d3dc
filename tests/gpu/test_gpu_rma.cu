/*
 * test_gpu_rma.cu — the kernels of test_gpu_rma.c (declared in test_gpu_rma.h).
 */
#include <duet/duet_device.cuh>
#include <cuda_runtime.h>

#include "test_gpu_rma.h"

__global__ void rt_k_fill(uint8_t *buf, size_t n, uint64_t key)
{
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n; j += (size_t)gridDim.x * blockDim.x)
        buf[j] = rt_byte(key, j);
}

__global__ void rt_k_check(const uint8_t *buf, size_t n, uint64_t key, unsigned long long *bad)
{
    unsigned long long mine = 0;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n; j += (size_t)gridDim.x * blockDim.x)
        mine += ((volatile const uint8_t *)buf)[j] != rt_byte(key, j);
    if (mine) atomicAdd(bad, mine);
}

static unsigned blocks_for(size_t n)
{
    size_t b = (n + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 1024 ? 1024 : b);
}

extern "C" int rt_fill(uint8_t *buf, size_t n, uint64_t key, void *stream)
{
    rt_k_fill<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(buf, n, key);
    return (int)cudaGetLastError();
}

extern "C" int rt_check(const uint8_t *buf, size_t n, uint64_t key, unsigned long long *bad, void *stream)
{
    rt_k_check<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(buf, n, key, bad);
    return (int)cudaGetLastError();
}

__global__ void rt_k_round_put(duet_device_comm_t h, uint64_t *words, uint64_t v)
{
    for (int q = 0; q < duet_dev_n_pes(h); q++) duet_dev_p(h, words + duet_dev_my_pe(h), v, q);
    duet_dev_quiet(h);
}

extern "C" int rt_round_put(duet_device_comm_t h, uint64_t *words, uint64_t v, void *stream)
{
    rt_k_round_put<<<1, 1, 0, (cudaStream_t)stream>>>(h, words, v);
    return (int)cudaGetLastError();
}

__global__ void rt_k_round_check(const uint64_t *words, int n, uint64_t v, unsigned long long *bad)
{
    for (int q = 0; q < n; q++)
        if (((volatile const uint64_t *)words)[q] != v) atomicAdd(bad, 1ull);
}

extern "C" int rt_round_check(const uint64_t *words, int n, uint64_t v, unsigned long long *bad, void *stream)
{
    rt_k_round_check<<<1, 1, 0, (cudaStream_t)stream>>>(words, n, v, bad);
    return (int)cudaGetLastError();
}

__global__ void rt_k_read_word(const uint64_t *sig, uint64_t *out) { *out = *(volatile const uint64_t *)sig; }

extern "C" int rt_read_word(const uint64_t *sig, uint64_t *out, void *stream)
{
    rt_k_read_word<<<1, 1, 0, (cudaStream_t)stream>>>(sig, out);
    return (int)cudaGetLastError();
}

__global__ void rt_k_coll(int *out)
{
    if (threadIdx.x == 0) out[blockIdx.x] = (int)blockIdx.x + 1;
}

extern "C" const void *rt_coll_func(void) { return (const void *)rt_k_coll; }

/*
 * perf_device.cu — the kernels of duet-perf's device modes (perf_device.c), through the device
 * API (include/duet/duet_device.cuh). Built only with the CUDA backend.
 */
#include <duet/duet_device.cuh>
#include <cuda_runtime.h>

#include "perf_device.h"

/* pingpong: rank 0 p's v into rank 1's flag and waits for its own flag to reach v; rank 1
 * waits, then p's v back. One thread; n round trips; *status: the first failed wait. */
__global__ void perf_k_pingpong(duet_device_comm_t h, uint64_t *flag, uint64_t base, long n, int *status)
{
    int me = duet_dev_my_pe(h), st = 0;
    for (long i = 1; i <= n && !st; i++) {
        uint64_t v = base + (uint64_t)i;
        if (me == 0) {
            duet_dev_p(h, flag, v, 1);
            st = duet_dev_wait_until(h, flag, DUET_CMP_GE, v);
        } else {
            st = duet_dev_wait_until(h, flag, DUET_CMP_GE, v);
            duet_dev_p(h, flag, v, 0);
        }
    }
    if (st) *status = st;
}

extern "C" int perf_dev_pingpong(duet_device_comm_t h, uint64_t *flag, uint64_t base, long n, int *status)
{
    perf_k_pingpong<<<1, 1>>>(h, flag, base, n, status);
    cudaError_t e = cudaGetLastError();
    return (int)(e == cudaSuccess ? cudaDeviceSynchronize() : e);
}

/* put: block b moves its chunk [b * chunk, min(bytes, (b + 1) * chunk)) with put_block_nbi, n
 * times, then quiet_block. */
__global__ void perf_k_put(duet_device_comm_t h, char *dst, const char *src, size_t bytes, size_t chunk,
                           long n, int pe)
{
    size_t off = (size_t)blockIdx.x * chunk;
    if (off >= bytes) return;
    size_t len = bytes - off < chunk ? bytes - off : chunk;
    for (long i = 0; i < n; i++) duet_dev_put_block_nbi(h, dst + off, src + off, len, pe);
    duet_dev_quiet_block(h);
}

extern "C" int perf_dev_put(duet_device_comm_t h, char *dst, const char *src, size_t bytes, long n, int pe,
                            int max_blocks, int threads)
{
    if (!bytes || n <= 0) return 0;
    size_t blocks = (bytes + (64u << 10) - 1) / (64u << 10); /* at least 64 KiB per block */
    if (blocks > (size_t)max_blocks) blocks = (size_t)max_blocks;
    size_t chunk = ((bytes + blocks - 1) / blocks + 15) & ~(size_t)15;
    blocks = (bytes + chunk - 1) / chunk;
    perf_k_put<<<(unsigned)blocks, threads>>>(h, dst, src, bytes, chunk, n, pe);
    cudaError_t e = cudaGetLastError();
    return (int)(e == cudaSuccess ? cudaDeviceSynchronize() : e);
}

/*
 * test_gpu_rma.h — the kernels of test_gpu_rma (test_gpu_rma.cu) as test_gpu_rma.c calls them.
 * Each enqueues on `stream` (a cudaStream_t) and returns the launch's cudaError_t as an int.
 */
#ifndef TEST_GPU_RMA_H
#define TEST_GPU_RMA_H

#include <duet/duet_cuda.h>

#ifdef __CUDACC__
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif

/* Byte j of the test stream `key` (the same on host and device). */
static inline RT_HD uint8_t rt_byte(uint64_t key, size_t j)
{
    uint64_t z = key * 0x9e3779b97f4a7c15ull + (uint64_t)j * 0xbf58476d1ce4e5b9ull;
    z ^= z >> 31;
    z *= 0x94d049bb133111ebull;
    return (uint8_t)(z ^ (z >> 29));
}

#ifdef __cplusplus
extern "C" {
#endif
int rt_fill(uint8_t *buf, size_t n, uint64_t key, void *stream);
/* adds to *bad the bytes of buf that differ from the stream key */
int rt_check(const uint8_t *buf, size_t n, uint64_t key, unsigned long long *bad, void *stream);
/* duet_dev_p of v into words[my_pe] of every pe */
int rt_round_put(duet_device_comm_t h, uint64_t *words, uint64_t v, void *stream);
/* adds to *bad the words[0 .. n) that are not v */
int rt_round_check(const uint64_t *words, int n, uint64_t v, unsigned long long *bad, void *stream);
/* *out = *sig (a dependent kernel records what it saw) */
int rt_read_word(const uint64_t *sig, uint64_t *out, void *stream);
/* a kernel for duet_launch_collective: out[block] = block + 1; args: {int *out} */
const void *rt_coll_func(void);
#ifdef __cplusplus
}
#endif
#endif

/*
 * perf_device.h — duet-perf's device kernels (perf_device.cu) as perf_device.c calls them:
 * each launches and waits, returning the cudaError_t (0 = success).
 */
#ifndef DUET_PERF_DEVICE_H
#define DUET_PERF_DEVICE_H

#include <duet/duet_cuda.h>

#ifdef __cplusplus
extern "C" {
#endif
int perf_dev_pingpong(duet_device_comm_t h, uint64_t *flag, uint64_t base, long n, int *status);
int perf_dev_put(duet_device_comm_t h, char *dst, const char *src, size_t bytes, long n, int pe,
                 int max_blocks, int threads);
#ifdef __cplusplus
}
#endif
#endif

/*
 * test_gpu_proxy.h — the kernels of test_gpu_proxy.cu as test_gpu_proxy.c calls them (plain C;
 * each launcher waits for its kernel unless it says otherwise and returns the cudaError_t).
 */
#ifndef TEST_GPU_PROXY_H
#define TEST_GPU_PROXY_H

#include <stddef.h>
#include <stdint.h>
#include <duet/duet_cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PX_THREADS 128
enum { PX_THREAD = 0, PX_WARP = 1, PX_BLOCK = 2 };

int px_xfer(duet_device_comm_t h, int get, int scope, int nbi, char *sym, char *local, size_t bytes, int pe,
            int *status);
int px_pg(duet_device_comm_t h, int64_t *wi, double *wd, int64_t vi, double vd, int pe, int64_t *out_i,
          double *out_d, int *status);
int px_put_signal(duet_device_comm_t h, int scope, int nbi, char *sym, const char *local, size_t bytes,
                  uint64_t *sig, uint64_t value, int op, int pe, int *status);
int px_wait_check(duet_device_comm_t h, const uint64_t *sig, uint64_t value, const char *sym, const char *expect,
                  size_t bytes, unsigned long long *errors, int *status);
int px_signal_add(duet_device_comm_t h, uint64_t *sig, int pe, int blocks, int iters, int *status);
int px_fetch_add(duet_device_comm_t h, uint64_t *ctr, int pe, int blocks, int iters, unsigned long long *sum);
int px_amo_single(duet_device_comm_t h, uint64_t *w64, int32_t *w32, uint64_t a, uint64_t b, int32_t c, int pe,
                  uint64_t *out, int *status);
int px_fence(duet_device_comm_t h, uint64_t *data, uint64_t *flag, uint64_t *src, int to, int rounds,
             unsigned long long *errors, int *status);
int px_quiet(duet_device_comm_t h, int role, int r, int blocks, char *sym, char *local, size_t slice,
             uint64_t *sig, int data_pe, int obs_pe, unsigned long long *errors, int *status);
int px_dead_launch(duet_device_comm_t h, char *sym, const char *local, int pe, long max_rounds, volatile int *started,
                   int *status, long *rounds_done, void *stream);

#ifdef __cplusplus
}
#endif
#endif

/*
 * test_gpu_proxy.cu — the kernels of test_gpu_proxy.c: device calls to remote pes (through
 * the host proxy with DUET_CUDA_PEERS=proxy). One block of PX_THREADS threads each unless
 * said otherwise; every launcher waits for its kernel and returns the cudaError_t as an int.
 */
#include <cuda_runtime.h>
#include <duet/duet_device.cuh>

#include "test_gpu_proxy.h"

/* put (get = 0) or get of bytes between local and sym on pe at scope; nbi forms; then a quiet
 * of the same scope, whose status goes to *status (thread 0's, first nonzero kept). */
__global__ void px_xfer_kernel(duet_device_comm_t h, int get, int scope, int nbi, char *sym, char *local,
                               size_t bytes, int pe, int *status)
{
    int st = 0;
    if (scope == PX_THREAD) {
        if (threadIdx.x == 0) {
            if (get) nbi ? duet_dev_get_nbi(h, local, sym, bytes, pe) : duet_dev_get(h, local, sym, bytes, pe);
            else nbi ? duet_dev_put_nbi(h, sym, local, bytes, pe) : duet_dev_put(h, sym, local, bytes, pe);
            st = duet_dev_quiet(h);
        }
    } else if (scope == PX_WARP) {
        if (threadIdx.x < 32) {
            if (get) nbi ? duet_dev_get_warp_nbi(h, local, sym, bytes, pe) : duet_dev_get_warp(h, local, sym, bytes, pe);
            else nbi ? duet_dev_put_warp_nbi(h, sym, local, bytes, pe) : duet_dev_put_warp(h, sym, local, bytes, pe);
            st = duet_dev_quiet_warp(h);
        }
    } else {
        if (get) nbi ? duet_dev_get_block_nbi(h, local, sym, bytes, pe) : duet_dev_get_block(h, local, sym, bytes, pe);
        else nbi ? duet_dev_put_block_nbi(h, sym, local, bytes, pe) : duet_dev_put_block(h, sym, local, bytes, pe);
        st = duet_dev_quiet_block(h);
    }
    if (st) atomicCAS(status, 0, st);
}

extern "C" int px_xfer(duet_device_comm_t h, int get, int scope, int nbi, char *sym, char *local, size_t bytes, int pe,
                       int *status)
{
    px_xfer_kernel<<<1, PX_THREADS>>>(h, get, scope, nbi, sym, local, bytes, pe, status);
    cudaError_t e = cudaGetLastError();
    return (int)(e != cudaSuccess ? e : cudaDeviceSynchronize());
}

/* p of an int64 and a double into pe's slots, a quiet, then g of both back into out[0..1]. */
__global__ void px_pg_kernel(duet_device_comm_t h, int64_t *wi, double *wd, int64_t vi, double vd, int pe,
                             int64_t *out_i, double *out_d, int *status)
{
    duet_dev_p(h, wi, vi, pe);
    duet_dev_p(h, wd, vd, pe);
    int st = duet_dev_quiet(h);
    if (st) *status = st;
    *out_i = duet_dev_g(h, wi, pe);
    *out_d = duet_dev_g(h, wd, pe);
}

extern "C" int px_pg(duet_device_comm_t h, int64_t *wi, double *wd, int64_t vi, double vd, int pe, int64_t *out_i,
                     double *out_d, int *status)
{
    px_pg_kernel<<<1, 1>>>(h, wi, wd, vi, vd, pe, out_i, out_d, status);
    cudaError_t e = cudaGetLastError();
    return (int)(e != cudaSuccess ? e : cudaDeviceSynchronize());
}

/* put_signal of bytes from local to sym on pe with sig (op, value), at scope; a quiet. */
__global__ void px_put_signal_kernel(duet_device_comm_t h, int scope, int nbi, char *sym, const char *local,
                                     size_t bytes, uint64_t *sig, uint64_t value, int op, int pe, int *status)
{
    int st = 0;
    if (scope == PX_THREAD) {
        if (threadIdx.x == 0) {
            if (nbi) duet_dev_put_signal_nbi(h, sym, local, bytes, sig, value, op, pe);
            else duet_dev_put_signal(h, sym, local, bytes, sig, value, op, pe);
            st = duet_dev_quiet(h);
        }
    } else if (scope == PX_WARP) {
        if (threadIdx.x < 32) {
            if (nbi) duet_dev_put_signal_warp_nbi(h, sym, local, bytes, sig, value, op, pe);
            else duet_dev_put_signal_warp(h, sym, local, bytes, sig, value, op, pe);
            st = duet_dev_quiet_warp(h);
        }
    } else {
        if (nbi) duet_dev_put_signal_block_nbi(h, sym, local, bytes, sig, value, op, pe);
        else duet_dev_put_signal_block(h, sym, local, bytes, sig, value, op, pe);
        st = duet_dev_quiet_block(h);
    }
    if (st) atomicCAS(status, 0, st);
}

extern "C" int px_put_signal(duet_device_comm_t h, int scope, int nbi, char *sym, const char *local, size_t bytes,
                             uint64_t *sig, uint64_t value, int op, int pe, int *status)
{
    px_put_signal_kernel<<<1, PX_THREADS>>>(h, scope, nbi, sym, local, bytes, sig, value, op, pe, status);
    cudaError_t e = cudaGetLastError();
    return (int)(e != cudaSuccess ? e : cudaDeviceSynchronize());
}

/* Waits until *sig >= value (acquire), then compares bytes of sym with expect: mismatches
 * into *errors, the wait's status into *status. */
__global__ void px_wait_check_kernel(duet_device_comm_t h, const uint64_t *sig, uint64_t value, const char *sym,
                                     const char *expect, size_t bytes, unsigned long long *errors, int *status)
{
    __shared__ int st;
    if (threadIdx.x == 0) st = duet_dev_signal_wait_until(h, sig, DUET_CMP_GE, value);
    __syncthreads();
    if (st) {
        if (threadIdx.x == 0) *status = st;
        return;
    }
    unsigned long long bad = 0;
    for (size_t i = threadIdx.x; i < bytes; i += blockDim.x) bad += sym[i] != expect[i];
    if (bad) atomicAdd(errors, bad);
}

extern "C" int px_wait_check(duet_device_comm_t h, const uint64_t *sig, uint64_t value, const char *sym,
                             const char *expect, size_t bytes, unsigned long long *errors, int *status)
{
    px_wait_check_kernel<<<1, PX_THREADS>>>(h, sig, value, sym, expect, bytes, errors, status);
    cudaError_t e = cudaGetLastError();
    return (int)(e != cudaSuccess ? e : cudaDeviceSynchronize());
}

/* Every thread of `blocks` blocks: signal_op ADD (thread index + 1) on pe's sig, iters times;
 * then a quiet. */
__global__ void px_signal_add_kernel(duet_device_comm_t h, uint64_t *sig, int pe, int iters, int *status)
{
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < iters; i++) duet_dev_signal_op(h, sig, (uint64_t)g + 1, DUET_SIGNAL_ADD, pe);
    int st = duet_dev_quiet(h);
    if (st) atomicCAS(status, 0, st);
}

extern "C" int px_signal_add(duet_device_comm_t h, uint64_t *sig, int pe, int blocks, int iters, int *status)
{
    px_signal_add_kernel<<<blocks, PX_THREADS>>>(h, sig, pe, iters, status);
    cudaError_t e = cudaGetLastError();
    return (int)(e != cudaSuccess ? e : cudaDeviceSynchronize());
}

/* Every thread: fetch_add(1) on pe's uint64 ctr iters times, the fetched values summed into
 * *sum; one thread also a signal_op SET of 7 then a fence-ordered... (see the host). */
__global__ void px_fetch_add_kernel(duet_device_comm_t h, uint64_t *ctr, int pe, int iters, unsigned long long *sum)
{
    unsigned long long s = 0;
    for (int i = 0; i < iters; i++) s += duet_dev_atomic_fetch_add(h, ctr, (uint64_t)1, pe);
    atomicAdd(sum, s);
}

extern "C" int px_fetch_add(duet_device_comm_t h, uint64_t *ctr, int pe, int blocks, int iters,
                            unsigned long long *sum)
{
    px_fetch_add_kernel<<<blocks, PX_THREADS>>>(h, ctr, pe, iters, sum);
    cudaError_t e = cudaGetLastError();
    return (int)(e != cudaSuccess ? e : cudaDeviceSynchronize());
}

/* One thread, on pe's words w64 (uint64) and w32 (int32): out[0] = compare_swap(w64, 12345, x)
 * (fails: returns the current value), out[1] = compare_swap(w64, cur, a) (succeeds: cur),
 * out[2] = swap(w64, b) (a), out[3] = fetch(w64) (b), set(w32, c), quiet, out[4] = fetch(w32),
 * out[5] = fetch_add(w32, -3) (c), out[6] = g(w32) (c - 3). */
__global__ void px_amo_single_kernel(duet_device_comm_t h, uint64_t *w64, int32_t *w32, uint64_t a, uint64_t b,
                                     int32_t c, int pe, uint64_t *out, int *status)
{
    uint64_t cur = duet_dev_atomic_fetch(h, w64, pe);
    out[0] = duet_dev_atomic_compare_swap(h, w64, cur + 12345, (uint64_t)999, pe);
    out[1] = duet_dev_atomic_compare_swap(h, w64, cur, a, pe);
    out[2] = duet_dev_atomic_swap(h, w64, b, pe);
    out[3] = duet_dev_atomic_fetch(h, w64, pe);
    duet_dev_atomic_set(h, w32, c, pe);
    int st = duet_dev_quiet(h);
    if (st) *status = st;
    out[4] = (uint64_t)(int64_t)duet_dev_atomic_fetch(h, w32, pe);
    out[5] = (uint64_t)(int64_t)duet_dev_atomic_fetch_add(h, w32, (int32_t)-3, pe);
    out[6] = (uint64_t)(int64_t)duet_dev_g(h, w32, pe);
    out[7] = cur;
}

extern "C" int px_amo_single(duet_device_comm_t h, uint64_t *w64, int32_t *w32, uint64_t a, uint64_t b, int32_t c,
                             int pe, uint64_t *out, int *status)
{
    px_amo_single_kernel<<<1, 1>>>(h, w64, w32, a, b, c, pe, out, status);
    cudaError_t e = cudaGetLastError();
    return (int)(e != cudaSuccess ? e : cudaDeviceSynchronize());
}

/* Fence ordering, sender and receiver in one launch (block 0 sends to `to`, block 1 watches
 * my own words, written by `from`): for r = 1..rounds, a put of 64 bytes of r's pattern into
 * data, a fence, then p(flag, r). The receiver polls flag (acquire) until it reaches rounds;
 * each time it sees a new value f it reads data (at least round f must be there: the first
 * word >= f) and counts violations into *errors. */
__global__ void px_fence_kernel(duet_device_comm_t h, uint64_t *data, uint64_t *flag, uint64_t *src, int to,
                                int rounds, unsigned long long *errors, int *status)
{
    if (blockIdx.x == 0) {
        if (threadIdx.x != 0) return;
        for (int r = 1; r <= rounds; r++) {
            for (int i = 0; i < 8; i++) src[(r & 1) * 8 + i] = (uint64_t)r;
            duet_dev_put(h, data, src + (r & 1) * 8, 64, to);
            duet_dev_fence(h);
            duet_dev_p(h, flag, (uint64_t)r, to);
        }
        int st = duet_dev_quiet(h);
        if (st) atomicCAS(status, 0, st);
        return;
    }
    if (threadIdx.x != 0) return;
    uint64_t seen = 0;
    while (seen < (uint64_t)rounds) {
        uint64_t f;
        int st = duet_dev_wait_until(h, flag, DUET_CMP_GT, seen, &f);
        if (st) {
            atomicCAS(status, 0, st);
            return;
        }
        uint64_t d = duet_dev_detail::ld_acquire(data);
        if (d < f) atomicAdd(errors, 1ull);
        seen = f;
    }
}

extern "C" int px_fence(duet_device_comm_t h, uint64_t *data, uint64_t *flag, uint64_t *src, int to, int rounds,
                        unsigned long long *errors, int *status)
{
    px_fence_kernel<<<2, 32>>>(h, data, flag, src, to, rounds, errors, status);
    cudaError_t e = cudaGetLastError();
    return (int)(e != cudaSuccess ? e : cudaDeviceSynchronize());
}

/* Quiet seen by a third party, round r. On the origin (role 0): block b fills its slice of
 * local (slice bytes) with pattern(r, b), put_block_nbi's it into sym + b * slice on `data_pe`,
 * quiet_block, then thread 0 sets sig[b] = r on `obs_pe`. On the observer (role 1): block b
 * waits for its sig[b] >= r, then get_block's that slice from `data_pe` into local and counts
 * the bytes that differ from pattern(r, b) into *errors. A quiet that completed before its own
 * puts were applied at data_pe shows as stale bytes. */
static __device__ unsigned char quiet_pattern(int r, int b, size_t j)
{
    return (unsigned char)((unsigned)r * 131u + (unsigned)b * 7u + (unsigned)(j * 13u) + (unsigned)(j >> 9));
}

__global__ void px_quiet_kernel(duet_device_comm_t h, int role, int r, char *sym, char *local, size_t slice,
                                uint64_t *sig, int data_pe, int obs_pe, unsigned long long *errors, int *status)
{
    int b = blockIdx.x;
    char *mine = local + (size_t)b * slice;
    if (role == 0) {
        for (size_t j = threadIdx.x; j < slice; j += blockDim.x) mine[j] = (char)quiet_pattern(r, b, j);
        __syncthreads();
        duet_dev_put_block_nbi(h, sym + (size_t)b * slice, mine, slice, data_pe);
        int st = duet_dev_quiet_block(h);
        if (threadIdx.x == 0) {
            if (st) atomicCAS(status, 0, st);
            duet_dev_signal_op(h, sig + b, (uint64_t)r, DUET_SIGNAL_SET, obs_pe);
        }
        return;
    }
    __shared__ int wst;
    if (threadIdx.x == 0) wst = duet_dev_wait_until(h, sig + b, DUET_CMP_GE, (uint64_t)r);
    __syncthreads();
    if (wst) {
        if (threadIdx.x == 0) atomicCAS(status, 0, wst);
        return;
    }
    duet_dev_get_block(h, mine, sym + (size_t)b * slice, slice, data_pe);
    unsigned long long bad = 0;
    for (size_t j = threadIdx.x; j < slice; j += blockDim.x) bad += (unsigned char)mine[j] != quiet_pattern(r, b, j);
    if (bad) atomicAdd(errors, bad);
}

extern "C" int px_quiet(duet_device_comm_t h, int role, int r, int blocks, char *sym, char *local, size_t slice,
                        uint64_t *sig, int data_pe, int obs_pe, unsigned long long *errors, int *status)
{
    px_quiet_kernel<<<blocks, PX_THREADS>>>(h, role, r, sym, local, slice, sig, data_pe, obs_pe, errors, status);
    cudaError_t e = cudaGetLastError();
    return (int)(e != cudaSuccess ? e : cudaDeviceSynchronize());
}

/* Puts to a pe that dies: 64-byte put_nbi + quiet in a loop until quiet fails (or max
 * rounds); *status gets the failure, *rounds_done the rounds. Launched without waiting;
 * *started (mapped) set first. */
__global__ void px_dead_kernel(duet_device_comm_t h, char *sym, const char *local, int pe, long max_rounds,
                               volatile int *started, int *status, long *rounds_done)
{
    *started = 1;
    __threadfence_system();
    long r = 0;
    int st = 0;
    for (; r < max_rounds && !st; r++) {
        duet_dev_put_nbi(h, sym, local, 64, pe);
        st = duet_dev_quiet(h);
    }
    *status = st;
    *rounds_done = r;
}

extern "C" int px_dead_launch(duet_device_comm_t h, char *sym, const char *local, int pe, long max_rounds,
                              volatile int *started, int *status, long *rounds_done, void *stream)
{
    px_dead_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(h, sym, local, pe, max_rounds, started, status, rounds_done);
    return (int)cudaGetLastError();
}

/*
 * test_device_api.cu — kernels that exercise every call of include/duet/duet_device.cuh, one
 * launcher per test (device_api_test.h). The host driver, device_api_main.c, runs them on 2
 * and 4 ranks (processes under duetrun sharing one GPU under MPS) and checks the results.
 */
#include <duet/duet_device.cuh>
#include "device_api_test.h"

#include <cuda_runtime.h>

static int finish(void)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    return (int)e;
}

/* ---- p / g ----------------------------------------------------------------------------- */
extern "C" void dk_pg_fill(unsigned char slot[DK_PG], int from, int to)
{
    int32_t i32 = -(from * 1000 + to) - 1;
    uint32_t u32 = 0x80000000u + (uint32_t)(from * 1000 + to);
    int64_t i64 = -((int64_t)1 << 40) - (from * 1000 + to);
    uint64_t u64 = ((uint64_t)1 << 63) + (uint64_t)(from * 1000 + to);
    float f = (float)from + 0.5f * (float)to;
    double d = 1e10 * from + to + 0.25;
    for (int i = 0; i < DK_PG; i++) slot[i] = 0;
    memcpy(slot + 0, &i32, 4);
    memcpy(slot + 4, &u32, 4);
    memcpy(slot + 8, &i64, 8);
    memcpy(slot + 16, &u64, 8);
    memcpy(slot + 24, &f, 4);
    memcpy(slot + 32, &d, 8);
}

__global__ void k_pg_put(duet_device_comm_t h, char *pg)
{
    int me = duet_dev_my_pe(h);
    for (int q = threadIdx.x; q < duet_dev_n_pes(h); q += blockDim.x) {
        char *s = pg + (size_t)me * DK_PG;
        int v = me * 1000 + q;
        duet_dev_p(h, (int32_t *)(s + 0), -v - 1, q);
        duet_dev_p(h, (uint32_t *)(s + 4), 0x80000000u + (uint32_t)v, q);
        duet_dev_p(h, (int64_t *)(s + 8), -((int64_t)1 << 40) - v, q);
        duet_dev_p(h, (uint64_t *)(s + 16), ((uint64_t)1 << 63) + (uint64_t)v, q);
        duet_dev_p(h, (float *)(s + 24), (float)me + 0.5f * (float)q, q);
        duet_dev_p(h, (double *)(s + 32), 1e10 * me + q + 0.25, q);
    }
}

__global__ void k_pg_get(duet_device_comm_t h, const char *pg, char *out)
{
    int me = duet_dev_my_pe(h);
    for (int q = threadIdx.x; q < duet_dev_n_pes(h); q += blockDim.x) {
        const char *s = pg + (size_t)me * DK_PG;
        char *o = out + (size_t)q * DK_PG;
        *(int32_t *)(o + 0) = duet_dev_g(h, (const int32_t *)(s + 0), q);
        *(uint32_t *)(o + 4) = duet_dev_g(h, (const uint32_t *)(s + 4), q);
        *(int64_t *)(o + 8) = duet_dev_g(h, (const int64_t *)(s + 8), q);
        *(uint64_t *)(o + 16) = duet_dev_g(h, (const uint64_t *)(s + 16), q);
        *(float *)(o + 24) = duet_dev_g(h, (const float *)(s + 24), q);
        *(double *)(o + 32) = duet_dev_g(h, (const double *)(s + 32), q);
    }
}

extern "C" int dk_pg_put(duet_device_comm_t h, char *pg)
{
    k_pg_put<<<1, DK_THREADS>>>(h, pg);
    return finish();
}
extern "C" int dk_pg_get(duet_device_comm_t h, const char *pg, char *out)
{
    k_pg_get<<<1, DK_THREADS>>>(h, pg, out);
    return finish();
}

/* ---- put / get at each scope ------------------------------------------------------------- */
/* Thread scope: thread t serves pe t, t + DK_THREADS, ...; warp scope: warp w serves pe w,
 * w + 4, ...; block scope: the block serves every pe in turn. */
__global__ void k_xfer(duet_device_comm_t h, int get, int scope, int nbi, char *region, char *local,
                       const dk_case_t *cases)
{
    int me = duet_dev_my_pe(h), n = duet_dev_n_pes(h);
    int first = 0, step = 1;
    if (scope == DK_THREAD) first = threadIdx.x, step = blockDim.x;
    if (scope == DK_WARP) first = threadIdx.x / 32, step = blockDim.x / 32;
    for (int q = first; q < n; q += step) {
        dk_case_t c = cases[q];
        char *l = local + (size_t)q * DK_SLOT;
        if (!get) {
            char *d = region + (size_t)me * DK_SLOT + c.doff;
            const char *s = l + c.soff;
            if (scope == DK_THREAD) {
                if (nbi) duet_dev_put_nbi(h, d, s, c.len, q);
                else duet_dev_put(h, d, s, c.len, q);
            } else if (scope == DK_WARP) {
                if (nbi) duet_dev_put_warp_nbi(h, d, s, c.len, q);
                else duet_dev_put_warp(h, d, s, c.len, q);
            } else {
                if (nbi) duet_dev_put_block_nbi(h, d, s, c.len, q);
                else duet_dev_put_block(h, d, s, c.len, q);
            }
        } else {
            char *d = l + c.doff;
            const char *s = region + c.soff;
            if (scope == DK_THREAD) {
                if (nbi) duet_dev_get_nbi(h, d, s, c.len, q);
                else duet_dev_get(h, d, s, c.len, q);
            } else if (scope == DK_WARP) {
                if (nbi) duet_dev_get_warp_nbi(h, d, s, c.len, q);
                else duet_dev_get_warp(h, d, s, c.len, q);
            } else {
                if (nbi) duet_dev_get_block_nbi(h, d, s, c.len, q);
                else duet_dev_get_block(h, d, s, c.len, q);
            }
        }
    }
    if (nbi) {
        if (scope == DK_THREAD) duet_dev_quiet(h);
        else if (scope == DK_WARP) duet_dev_quiet_warp(h);
        else duet_dev_quiet_block(h);
    }
}

extern "C" int dk_xfer(duet_device_comm_t h, int get, int scope, int nbi, char *region, char *local,
                       const dk_case_t *cases_dev)
{
    k_xfer<<<1, DK_THREADS>>>(h, get, scope, nbi, region, local, cases_dev);
    return finish();
}

/* ---- put with signal ---------------------------------------------------------------------- */
__device__ static void put_signal_at(const duet_device_comm_t &h, int scope, int nbi, char *d,
                                     const char *s, size_t len, uint64_t *sig, uint64_t v, int op,
                                     int q)
{
    if (scope == DK_THREAD) {
        if (nbi) duet_dev_put_signal_nbi(h, d, s, len, sig, v, op, q);
        else duet_dev_put_signal(h, d, s, len, sig, v, op, q);
    } else if (scope == DK_WARP) {
        if (nbi) duet_dev_put_signal_warp_nbi(h, d, s, len, sig, v, op, q);
        else duet_dev_put_signal_warp(h, d, s, len, sig, v, op, q);
    } else {
        if (nbi) duet_dev_put_signal_block_nbi(h, d, s, len, sig, v, op, q);
        else duet_dev_put_signal_block(h, d, s, len, sig, v, op, q);
    }
}

/* Compares a slot with its expected bytes, the whole block; returns (on every thread) the
 * number of mismatching bytes. */
__device__ static unsigned long long compare_slot(const char *got, const char *want)
{
    __shared__ unsigned long long bad;
    if (threadIdx.x == 0) bad = 0;
    __syncthreads();
    unsigned long long mine = 0;
    for (size_t i = threadIdx.x; i < DK_SLOT; i += blockDim.x) mine += got[i] != want[i];
    if (mine) atomicAdd(&bad, mine);
    __syncthreads();
    unsigned long long r = bad;
    __syncthreads();
    return r;
}

__global__ void k_signal(duet_device_comm_t h, int scope, int nbi, char *regA, char *regB,
                         const char *src, uint64_t *sig, uint64_t *sigadd, const dk_case_t *cases,
                         const char *expect, uint64_t round, uint64_t add_total,
                         unsigned long long *errors, int *status)
{
    int me = duet_dev_my_pe(h), n = duet_dev_n_pes(h);
    if (blockIdx.x == 0) { /* the sender: the group that calls is thread 0, warp 0 or the block */
        if (scope == DK_THREAD && threadIdx.x != 0) return;
        if (scope == DK_WARP && threadIdx.x >= 32) return;
        for (int q = 0; q < n; q++) {
            dk_case_t c = cases[q];
            const char *s = src + (size_t)q * DK_SLOT + c.soff;
            put_signal_at(h, scope, nbi, regA + (size_t)me * DK_SLOT + c.doff, s, c.len, sig + me,
                          round, DUET_SIGNAL_SET, q);
            put_signal_at(h, scope, nbi, regB + (size_t)me * DK_SLOT + c.doff, s, c.len, sigadd,
                          (uint64_t)me + 1, DUET_SIGNAL_ADD, q);
        }
        return;
    }
    __shared__ int st;
    for (int s = 0; s < n; s++) {
        if (threadIdx.x == 0) {
            uint64_t got = 0;
            st = duet_dev_signal_wait_until(h, sig + s, DUET_CMP_EQ, round, &got);
            if (st == DUET_OK && got != round) st = -100;
        }
        __syncthreads();
        if (st) {
            if (threadIdx.x == 0) *status = st;
            return;
        }
        unsigned long long bad = compare_slot(regA + (size_t)s * DK_SLOT, expect + (size_t)s * DK_SLOT);
        if (threadIdx.x == 0 && bad) atomicAdd(errors, bad);
    }
    if (threadIdx.x == 0) st = duet_dev_signal_wait_until(h, sigadd, DUET_CMP_GE, add_total);
    __syncthreads();
    if (st) {
        if (threadIdx.x == 0) *status = st;
        return;
    }
    for (int s = 0; s < n; s++) {
        unsigned long long bad = compare_slot(regB + (size_t)s * DK_SLOT, expect + (size_t)s * DK_SLOT);
        if (threadIdx.x == 0 && bad) atomicAdd(errors, bad);
    }
    if (threadIdx.x == 0 && duet_dev_signal_fetch(sigadd) != add_total) *status = -101;
}

extern "C" int dk_signal(duet_device_comm_t h, int scope, int nbi, char *regA, char *regB,
                         const char *src, uint64_t *sig, uint64_t *sigadd,
                         const dk_case_t *cases_dev, const char *expect, uint64_t round,
                         uint64_t add_total, unsigned long long *errors, int *status)
{
    k_signal<<<2, DK_THREADS>>>(h, scope, nbi, regA, regB, src, sig, sigadd, cases_dev, expect,
                                round, add_total, errors, status);
    return finish();
}

/* ---- atomics --------------------------------------------------------------------------- */
/* ctr layout: 0 int32 fetch_add(+1)   4 uint32 fetch_inc   8 int64 fetch_add(-1)
 *             16 uint64 add(+3)       24 uint64 CAS loop   32 int32 CAS loop   36 int32 done */
__global__ void k_atomics(duet_device_comm_t h, char *ctr, int target, int iters,
                          unsigned long long *sums, int *status)
{
    unsigned long long s0 = 0, s1 = 0, s2 = 0, s4 = 0, s5 = 0;
    for (int i = 0; i < iters; i++) {
        s0 += (uint32_t)duet_dev_atomic_fetch_add(h, (int32_t *)(ctr + 0), 1, target);
        s1 += duet_dev_atomic_fetch_inc(h, (uint32_t *)(ctr + 4), target);
        s2 += (unsigned long long)-duet_dev_atomic_fetch_add(h, (int64_t *)(ctr + 8), -1, target);
        duet_dev_atomic_add(h, (uint64_t *)(ctr + 16), 3, target);
        uint64_t old = duet_dev_atomic_fetch(h, (const uint64_t *)(ctr + 24), target);
        for (;;) {
            uint64_t seen = duet_dev_atomic_compare_swap(h, (uint64_t *)(ctr + 24), old, old + 1, target);
            if (seen == old) break;
            old = seen;
        }
        s4 += old;
        int32_t o32 = duet_dev_atomic_fetch(h, (const int32_t *)(ctr + 32), target);
        for (;;) {
            int32_t seen = duet_dev_atomic_compare_swap(h, (int32_t *)(ctr + 32), o32, o32 + 1, target);
            if (seen == o32) break;
            o32 = seen;
        }
        s5 += (uint32_t)o32;
    }
    atomicAdd(sums + 0, s0);
    atomicAdd(sums + 1, s1);
    atomicAdd(sums + 2, s2);
    atomicAdd(sums + 4, s4);
    atomicAdd(sums + 5, s5);
    __syncthreads();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        duet_dev_quiet(h);
        duet_dev_atomic_inc(h, (int32_t *)(ctr + 36), target);
        if (duet_dev_my_pe(h) == target)
            *status = duet_dev_wait_until(h, (const int32_t *)(ctr + 36), DUET_CMP_GE,
                                          duet_dev_n_pes(h));
    }
}

extern "C" int dk_atomics(duet_device_comm_t h, char *ctr, int target, int iters,
                          unsigned long long *sums, int *status)
{
    k_atomics<<<2, DK_THREADS>>>(h, ctr, target, iters, sums, status);
    return finish();
}

__host__ __device__ static inline uint64_t single_u64(int from, int to)
{
    return 0x5000000000ull + (uint64_t)from * 64 + (uint64_t)to;
}
__host__ __device__ static inline int32_t single_i32(int from, int to) { return -7 - from * 64 - to; }
extern "C" uint64_t dk_single_u64(int from, int to) { return single_u64(from, to); }
extern "C" int32_t dk_single_i32(int from, int to) { return single_i32(from, to); }

__global__ void k_atomic_single(duet_device_comm_t h, char *sw, unsigned long long *errors)
{
    int me = duet_dev_my_pe(h);
    unsigned long long bad = 0;
    for (int q = 0; q < duet_dev_n_pes(h); q++) {
        uint64_t *w = (uint64_t *)(sw + (size_t)me * 16);
        int32_t *x = (int32_t *)(sw + (size_t)me * 16 + 8);
        uint64_t fin = single_u64(me, q);
        bad += duet_dev_atomic_swap(h, w, 11, q) != 0;
        bad += duet_dev_atomic_fetch(h, w, q) != 11;
        duet_dev_atomic_set(h, w, 12, q);
        bad += duet_dev_atomic_fetch(h, w, q) != 12;
        bad += duet_dev_atomic_compare_swap(h, w, 13, fin, q) != 12; /* fails */
        bad += duet_dev_atomic_fetch(h, w, q) != 12;
        bad += duet_dev_atomic_compare_swap(h, w, 12, fin, q) != 12; /* succeeds */
        bad += duet_dev_atomic_fetch(h, w, q) != fin;
        int32_t fin32 = single_i32(me, q);
        bad += duet_dev_atomic_swap(h, x, -1, q) != 0;
        bad += duet_dev_atomic_compare_swap(h, x, 5, fin32, q) != -1;  /* fails */
        bad += duet_dev_atomic_compare_swap(h, x, -1, fin32, q) != -1; /* succeeds */
        bad += duet_dev_atomic_fetch(h, x, q) != fin32;
    }
    *errors += bad;
}

extern "C" int dk_atomic_single(duet_device_comm_t h, char *sw, unsigned long long *errors)
{
    k_atomic_single<<<1, 1>>>(h, sw, errors);
    return finish();
}

/* ---- barriers ---------------------------------------------------------------------------- */
__global__ void k_barrier(duet_device_comm_t h, int scope, int iters, uint64_t base, uint64_t *ring,
                          unsigned long long *errors, int *status)
{
    if (scope == DK_THREAD && threadIdx.x != 0) return;
    if (scope == DK_WARP && threadIdx.x >= 32) return;
    int me = duet_dev_my_pe(h), n = duet_dev_n_pes(h);
    unsigned long long bad = 0;
    for (int i = 0; i < iters; i++) {
        uint64_t v = base + (uint64_t)i;
        if (threadIdx.x == 0) duet_dev_p(h, ring + (v & 1), v, (me + 1) % n);
        int st = scope == DK_THREAD ? duet_dev_barrier(h)
                 : scope == DK_WARP ? duet_dev_barrier_warp(h)
                                    : duet_dev_barrier_block(h);
        if (st) {
            if (threadIdx.x == 0) *status = st;
            break;
        }
        /* the left neighbour's p of v came before its barrier; its p of v + 2 (same word)
         * can only come after my next barrier */
        if (threadIdx.x == 0 && duet_dev_g(h, ring + (v & 1), me) != v) bad++;
    }
    if (threadIdx.x == 0) *errors += bad;
}

extern "C" int dk_barrier(duet_device_comm_t h, int scope, int iters, uint64_t base, uint64_t *ring,
                          unsigned long long *errors, int *status)
{
    k_barrier<<<1, DK_THREADS>>>(h, scope, iters, base, ring, errors, status);
    return finish();
}

/* ---- fence + signal_op -------------------------------------------------------------------- */
/* Block 0, thread 0: for every pe q, p of round * 1000 + me into fdata[me] on q, fence, then
 * signal_op SET fsig[me] := round and ADD fadd += 1. Block 1, thread 0: for every s, waits for
 * fsig[s] == round and reads fdata[s] (the fence orders the p before the signal), then waits
 * for fadd >= n * round and tests that it is exactly that. */
__global__ void k_fence(duet_device_comm_t h, uint64_t *fdata, uint64_t *fsig, uint64_t *fadd,
                        uint64_t round, unsigned long long *errors, int *status)
{
    if (threadIdx.x != 0) return;
    int me = duet_dev_my_pe(h), n = duet_dev_n_pes(h);
    if (blockIdx.x == 0) {
        for (int q = 0; q < n; q++) {
            duet_dev_p(h, fdata + me, round * 1000 + (uint64_t)me, q);
            duet_dev_fence(h);
            duet_dev_signal_op(h, fsig + me, round, DUET_SIGNAL_SET, q);
            duet_dev_signal_op(h, fadd, 1, DUET_SIGNAL_ADD, q);
        }
        return;
    }
    unsigned long long bad = 0;
    for (int s = 0; s < n; s++) {
        int st = duet_dev_signal_wait_until(h, fsig + s, DUET_CMP_EQ, round);
        if (st) {
            *status = st;
            return;
        }
        bad += duet_dev_g(h, (const uint64_t *)fdata + s, me) != round * 1000 + (uint64_t)s;
    }
    uint64_t want = (uint64_t)n * round;
    int st = duet_dev_signal_wait_until(h, fadd, DUET_CMP_GE, want);
    if (st) {
        *status = st;
        return;
    }
    bad += !duet_dev_test((const uint64_t *)fadd, DUET_CMP_EQ, want);
    bad += duet_dev_test((const uint64_t *)fadd, DUET_CMP_GT, want);
    *errors += bad;
}

extern "C" int dk_fence(duet_device_comm_t h, uint64_t *fdata, uint64_t *fsig, uint64_t *fadd,
                        uint64_t round, unsigned long long *errors, int *status)
{
    k_fence<<<2, 32>>>(h, fdata, fsig, fadd, round, errors, status);
    return finish();
}

/* ---- abort ------------------------------------------------------------------------------- */
__global__ void k_abort(duet_device_comm_t h, uint64_t *sig, uint64_t value, volatile int *started,
                        int *status)
{
    *started = 1;
    __threadfence_system();
    *status = duet_dev_signal_wait_until(h, sig, DUET_CMP_EQ, value);
}

extern "C" int dk_abort_launch(duet_device_comm_t h, uint64_t *sig, uint64_t value,
                               volatile int *started_dev, int *status)
{
    k_abort<<<1, 1>>>(h, sig, value, started_dev, status);
    return (int)cudaGetLastError();
}

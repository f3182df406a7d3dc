/*
 * nvshmem_coll.cu — NVSHMEM-named calls added for MoE and collective code, run on Duet's NVSHMEM
 * headers and checked against host references (exit code 0 on success; 2, 3 or 4 pes):
 *   waits and tests on sets (wait_until_all / any / some, their _vector forms, test_all / any /
 *   some and _vector forms, status masks, empty sets), short wait_until; strided iput / iget
 *   (typed, sized, thread / warp / block); bitwise atomics (fetch_and / or / xor, and / or / xor)
 *   and float / double fetch / set / swap; team collectives: reduce (every op, several types,
 *   in place too) at thread / warp / block scope, broadcast / fcollect / alltoall at block
 *   scope, the host forms and the _on_stream forms, on the world and on a strided split.
 * Usage: nvshmem_coll   (under duetrun)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nvshmem.h"
#include "nvshmemx.h"

enum { N = 300, F = 8 };
static int me = -1, fails = 0;
#define CU(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "pe %d: %s: %s\n", me, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "pe %d: FAIL %s:%d: ", me, __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); fails++; } } while (0)

/* ---- waits and tests: the previous pe sets the odd words of my flags to i + 1 (even ones stay
 * 0 and are masked out by status); out[] gets what each call returned. */
__global__ void k_wait(long long *flags, short *sflag, long long *out)
{
    int me_ = nvshmem_my_pe(), n = nvshmem_n_pes(), next = (me_ + 1) % n;
    __shared__ int status[F], none[F];
    __shared__ size_t idx[F];
    __shared__ long long vals[F];
    if (threadIdx.x) return;
    for (int i = 0; i < F; i++) status[i] = i % 2 == 0, none[i] = 1, vals[i] = i + 1;
    out[0] = nvshmem_longlong_test_all(flags, F, status, NVSHMEM_CMP_GE, 1); /* maybe not yet: ignored */
    for (int i = 1; i < F; i += 2) nvshmem_longlong_atomic_set(flags + i, (long long)i + 1, next);
    nvshmem_short_p(sflag, (short)7, next);
    nvshmem_longlong_wait_until_all(flags, F, status, NVSHMEM_CMP_GE, 1);
    nvshmem_short_wait_until(sflag, NVSHMEM_CMP_EQ, 7);
    out[0] = nvshmem_longlong_wait_until_any(flags, F, status, NVSHMEM_CMP_GE, 1);
    out[1] = nvshmem_longlong_wait_until_some(flags, F, idx, status, NVSHMEM_CMP_GE, 1);
    out[2] = 0;
    for (int k = 0; k < (int)out[1]; k++) out[2] |= 1ll << idx[k];
    nvshmem_longlong_wait_until_all_vector(flags, F, status, NVSHMEM_CMP_EQ, vals);
    out[3] = nvshmem_longlong_wait_until_any_vector(flags, F, status, NVSHMEM_CMP_EQ, vals);
    out[4] = nvshmem_longlong_wait_until_some_vector(flags, F, idx, status, NVSHMEM_CMP_EQ, vals);
    out[5] = nvshmem_longlong_test_all(flags, F, status, NVSHMEM_CMP_GE, 1);
    out[6] = nvshmem_longlong_test_all(flags, F, NULL, NVSHMEM_CMP_GE, 1); /* even words are 0 */
    out[7] = nvshmem_longlong_test_any(flags, F, none, NVSHMEM_CMP_GE, 0) == SIZE_MAX;
    out[8] = nvshmem_longlong_test_any(flags, F, NULL, NVSHMEM_CMP_EQ, 4);
    out[9] = nvshmem_longlong_test_some(flags, F, idx, NULL, NVSHMEM_CMP_GT, 7);
    out[10] = out[9] == 1 ? (long long)idx[0] : -1; /* only flags[7] == 8 > 7 */
    out[11] = nvshmem_longlong_test_all_vector(flags, F, status, NVSHMEM_CMP_EQ, vals);
    out[12] = nvshmem_longlong_test_any_vector(flags, F, status, NVSHMEM_CMP_NE, vals) == SIZE_MAX;
    out[13] = nvshmem_longlong_test_some_vector(flags, F, idx, NULL, NVSHMEM_CMP_EQ, vals); /* the 4 odd ones */
    out[14] = nvshmem_longlong_wait_until_any(flags, F, none, NVSHMEM_CMP_GE, 1) == SIZE_MAX;
    out[15] = nvshmem_longlong_wait_until_some(flags, F, idx, none, NVSHMEM_CMP_GE, 1);
    out[16] = nvshmem_short_test(sflag, NVSHMEM_CMP_EQ, 7);
    out[17] = nvshmem_int_test_all((int *)flags, 0, NULL, NVSHMEM_CMP_EQ, 99); /* empty set: 1 */
    nvshmem_barrier_all();
}

/* ---- iput / iget and atomics */
__global__ void k_rma(int *symi, double *symd, unsigned long long *word, float *fw, int *out)
{
    int me_ = nvshmem_my_pe(), n = nvshmem_n_pes(), next = (me_ + 1) % n;
    __shared__ int src[2 * N];
    for (int i = threadIdx.x; i < 2 * N; i += blockDim.x) src[i] = i % 2 ? -1 : me_ * 1000 + i / 2;
    __syncthreads();
    /* every other element of src to every other slot of next's symi[0..2N), at each scope in turn */
    if (threadIdx.x == 0) nvshmem_int_iput(symi, src, 2, 2, N / 3, next);
    if (threadIdx.x < 32) nvshmemx_int_iput_warp(symi + 2 * (N / 3), src + 2 * (N / 3), 2, 2, N / 3, next);
    nvshmemx_iput32_block(symi + 4 * (N / 3), src + 4 * (N / 3), 2, 2, N - 2 * (N / 3), next);
    if (threadIdx.x == 0) {
        nvshmem_quiet();
        nvshmem_ulonglong_atomic_fetch_or(word, 1ull << me_, 0);
        nvshmem_ulonglong_atomic_xor(word + 1, 1ull << (2 * me_), 0);
        nvshmem_ulonglong_atomic_and(word + 2, ~(1ull << me_), 0);
        nvshmem_uint64_atomic_or((uint64_t *)(word + 3), (uint64_t)1 << (me_ + 8), 0);
        (void)nvshmem_float_atomic_swap(fw, (float)me_ + 0.5f, next);
    }
    nvshmemx_barrier_all_block();
    /* read back: the even slots of next's symi (which pe me_ wrote) with iget, stride 2 -> 1 */
    if (threadIdx.x == 0) nvshmem_int_iget(out, symi, 1, 2, N / 2, next);
    if (threadIdx.x < 32) nvshmemx_int_iget_warp(out + N / 2, symi + 2 * (N / 2), 1, 2, N / 4, next);
    nvshmemx_iget32_block(out + N / 2 + N / 4, symi + 2 * (N / 2 + N / 4), 1, 2, N - N / 2 - N / 4, next);
    if (threadIdx.x == 0) {
        out[N] = (int)(nvshmem_float_atomic_fetch(fw, me_) * 2); /* prev swapped in prev + 0.5 */
        out[N + 1] = (int)nvshmem_ulonglong_atomic_fetch_and(word + 4, 0ull, 0) == 0;
        nvshmem_double_atomic_set(symd, 2.5 * me_, me_);
        out[N + 2] = (int)(nvshmem_double_atomic_fetch(symd, me_) * 2);
        out[N + 3] = (int)nvshmem_ulonglong_atomic_fetch_xor(word + 5, 0ull, 0);
    }
    nvshmemx_barrier_all_block();
}

/* ---- device collectives on team t: block scope on int, float, half, double, all ops; in place;
 * broadcast / fcollect / alltoall; then a thread-scope and a warp-scope reduce. */
struct dev_bufs {
    int *si, *di;      /* N ints, symmetric */
    float *sf, *df;
    __half *sh, *dh;
    double *sd, *dd;
    int *res;          /* 16 * N ints, local: results */
};
__global__ void k_coll(nvshmem_team_t t, dev_bufs b, int root)
{
    int tp = nvshmem_team_my_pe(t), tn = nvshmem_team_n_pes(t);
    if (tp < 0) return;
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        b.si[i] = (tp + 1) * 3 + i % 7 + ((i + tp) % 5 == 0 ? 64 : 0);
        b.sf[i] = (float)(tp + i % 4);
        b.sh[i] = __float2half((float)(tp + i % 3));
        b.sd[i] = (double)((tp * 7 + i) % 11);
    }
    __syncthreads();
    int *r = b.res;
    const int ops = 7;
    nvshmemx_int_sum_reduce_block(t, b.di, b.si, N);
    for (int i = threadIdx.x; i < N; i += blockDim.x) r[0 * N + i] = b.di[i];
    nvshmemx_int_max_reduce_block(t, b.di, b.si, N);
    for (int i = threadIdx.x; i < N; i += blockDim.x) r[1 * N + i] = b.di[i];
    nvshmemx_int_min_reduce_block(t, b.di, b.si, N);
    for (int i = threadIdx.x; i < N; i += blockDim.x) r[2 * N + i] = b.di[i];
    nvshmemx_int_prod_reduce_block(t, b.di, b.si, N);
    for (int i = threadIdx.x; i < N; i += blockDim.x) r[3 * N + i] = b.di[i];
    nvshmemx_int32_and_reduce_block(t, (int32_t *)b.di, (const int32_t *)b.si, N);
    for (int i = threadIdx.x; i < N; i += blockDim.x) r[4 * N + i] = b.di[i];
    nvshmemx_int32_or_reduce_block(t, (int32_t *)b.di, (const int32_t *)b.si, N);
    for (int i = threadIdx.x; i < N; i += blockDim.x) r[5 * N + i] = b.di[i];
    nvshmemx_int32_xor_reduce_block(t, (int32_t *)b.di, (const int32_t *)b.si, N);
    for (int i = threadIdx.x; i < N; i += blockDim.x) r[6 * N + i] = b.di[i];
    nvshmemx_float_sum_reduce_block(t, b.df, b.sf, N);
    nvshmemx_half_sum_reduce_block(t, b.dh, b.sh, N);
    nvshmemx_double_max_reduce_block(t, b.dd, b.sd, N);
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        r[ops * N + i] = (int)b.df[i], r[(ops + 1) * N + i] = (int)__half2float(b.dh[i]), r[(ops + 2) * N + i] = (int)b.dd[i];
    /* in place: sum of si into si (si itself changes) */
    __syncthreads();
    nvshmemx_int_sum_reduce_block(t, b.si, b.si, N);
    for (int i = threadIdx.x; i < N; i += blockDim.x) r[(ops + 3) * N + i] = b.si[i];
    /* broadcast from root, fcollect of N / tn-ish ints, alltoall of 8 ints per pe */
    for (int i = threadIdx.x; i < N; i += blockDim.x) b.si[i] = tp * 1000 + i;
    __syncthreads();
    nvshmemx_int_broadcast_block(t, b.di, b.si, N, root);
    for (int i = threadIdx.x; i < N; i += blockDim.x) r[(ops + 4) * N + i] = b.di[i];
    int fc = N / 4 / tn;
    nvshmemx_int_fcollect_block(t, b.di, b.si, fc);
    for (int i = threadIdx.x; i < fc * tn; i += blockDim.x) r[(ops + 5) * N + i] = b.di[i];
    nvshmemx_int_alltoall_block(t, b.di, b.si, 8);
    for (int i = threadIdx.x; i < 8 * tn; i += blockDim.x) r[(ops + 6) * N + i] = b.di[i];
    /* thread and warp scope */
    if (threadIdx.x == 0) nvshmem_int_max_reduce(t, b.di, b.si, N);
    __syncthreads();
    for (int i = threadIdx.x; i < N; i += blockDim.x) r[(ops + 7) * N + i] = b.di[i];
    __syncthreads();
    if (threadIdx.x < 32) nvshmemx_longlong_sum_reduce_warp(t, (long long *)b.dd, (const long long *)b.sd, 4);
    __syncthreads();
    nvshmemx_barrier_block(t);
}

/* Host references of k_coll for team pe numbers 0..tn-1 (team pe q's si etc.). */
static int ref_si(int q, int i) { return (q + 1) * 3 + i % 7 + ((i + q) % 5 == 0 ? 64 : 0); }
static void check_coll(const int *r, int tn, int tp, int root, const char *what)
{
    const int ops = 7;
    int bad[17] = {0};
    for (int i = 0; i < N; i++) {
        int s = 0, mx = -1 << 30, mn = 1 << 30, a = -1, o = 0, x = 0;
        unsigned p = 1;
        float fsum = 0;
        float hsum = 0;
        double dmax = -1;
        for (int q = 0; q < tn; q++) {
            int v = ref_si(q, i);
            s += v, mx = v > mx ? v : mx, mn = v < mn ? v : mn, p *= (unsigned)v, a &= v, o |= v, x ^= v;
            fsum += (float)(q + i % 4), hsum += (float)(q + i % 3);
            double d = (double)((q * 7 + i) % 11);
            dmax = d > dmax ? d : dmax;
        }
        int want[ops + 4] = {s, mx, mn, (int)p, a, o, x, (int)fsum, (int)hsum, (int)dmax, s};
        for (int k = 0; k < ops + 4; k++) bad[k] += r[k * N + i] != want[k];
        bad[ops + 4] += r[(ops + 4) * N + i] != root * 1000 + i;
        bad[ops + 7] += r[(ops + 7) * N + i] != (tn - 1) * 1000 + i;
    }
    int fc = N / 4 / tn;
    for (int q = 0; q < tn; q++) {
        for (int i = 0; i < fc; i++) bad[ops + 5] += r[(ops + 5) * N + q * fc + i] != q * 1000 + i;
        for (int i = 0; i < 8; i++) bad[ops + 6] += r[(ops + 6) * N + q * 8 + i] != q * 1000 + tp * 8 + i;
    }
    for (int k = 0; k < 17; k++) CHECK(!bad[k], "%s: result %d: %d wrong", what, k, bad[k]);
}

/* ---- host forms: world or team t; values from the team pe */
static void host_coll(nvshmem_team_t t, int *si, int *di, cudaStream_t s, const char *what)
{
    int tp = nvshmem_team_my_pe(t), tn = nvshmem_team_n_pes(t);
    if (tp < 0) return;
    int h[N], g[N];
    for (int i = 0; i < N; i++) h[i] = (tp + 1) * 10 + i;
    CU(cudaMemcpy(si, h, sizeof h, cudaMemcpyHostToDevice));
    CU(cudaDeviceSynchronize());
    CHECK(nvshmem_int_sum_reduce(t, di, si, N) == 0, "host sum");
    CU(cudaMemcpy(g, di, sizeof g, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += g[i] != 10 * tn * (tn + 1) / 2 + tn * i;
    CHECK(!bad, "%s: host sum: %d wrong", what, bad);
    CHECK(nvshmemx_int32_xor_reduce_on_stream(t, (int32_t *)di, (const int32_t *)si, N, s) == 0, "xor on stream");
    CU(cudaStreamSynchronize(s));
    CU(cudaMemcpy(g, di, sizeof g, cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < N; i++) {
        int x = 0;
        for (int q = 0; q < tn; q++) x ^= (q + 1) * 10 + i;
        bad += g[i] != x;
    }
    CHECK(!bad, "%s: xor on stream: %d wrong", what, bad);
    int root = tn - 1;
    CHECK(nvshmem_int_broadcast(t, di, si, N, root) == 0, "host broadcast");
    CU(cudaMemcpy(g, di, sizeof g, cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < N; i++) bad += g[i] != (root + 1) * 10 + i;
    CHECK(!bad, "%s: broadcast: %d wrong", what, bad);
    int fc = N / tn;
    CHECK(nvshmem_fcollectmem(t, di, si, fc * sizeof(int)) == 0, "host fcollectmem");
    CU(cudaMemcpy(g, di, sizeof g, cudaMemcpyDeviceToHost));
    bad = 0;
    for (int q = 0; q < tn; q++)
        for (int i = 0; i < fc; i++) bad += g[q * fc + i] != (q + 1) * 10 + i;
    CHECK(!bad, "%s: fcollectmem: %d wrong", what, bad);
    CHECK(nvshmemx_int_alltoall_on_stream(t, di, si, fc, s) == 0, "alltoall on stream");
    CU(cudaStreamSynchronize(s));
    CU(cudaMemcpy(g, di, sizeof g, cudaMemcpyDeviceToHost));
    bad = 0;
    for (int q = 0; q < tn; q++)
        for (int i = 0; i < fc; i++) bad += g[q * fc + i] != (q + 1) * 10 + tp * fc + i;
    CHECK(!bad, "%s: alltoall on stream: %d wrong", what, bad);
    CHECK(nvshmem_double_max_reduce(t, (double *)di, (const double *)si, 4) == 0 &&
              nvshmemx_broadcastmem_on_stream(t, di, si, 16, 0, s) == 0 && nvshmem_alltoallmem(t, di, si, 4) == 0,
          "more host forms");
    CU(cudaStreamSynchronize(s));
}

int main(void)
{
    nvshmem_init();
    me = nvshmem_my_pe();
    int n = nvshmem_n_pes(), prev = (me + n - 1) % n;
    cudaStream_t s;
    CU(cudaStreamCreate(&s));
    long long *flags = (long long *)nvshmem_calloc(F, sizeof(long long));
    short *sflag = (short *)nvshmem_calloc(1, sizeof(short));
    int *symi = (int *)nvshmem_calloc(2 * N, sizeof(int));
    double *symd = (double *)nvshmem_calloc(1, sizeof(double));
    unsigned long long *word = (unsigned long long *)nvshmem_calloc(8, sizeof(unsigned long long));
    float *fw = (float *)nvshmem_calloc(1, sizeof(float));
    dev_bufs b;
    b.si = (int *)nvshmem_malloc(N * sizeof(int)), b.di = (int *)nvshmem_malloc(N * sizeof(int));
    b.sf = (float *)nvshmem_malloc(N * sizeof(float)), b.df = (float *)nvshmem_malloc(N * sizeof(float));
    b.sh = (__half *)nvshmem_malloc(N * sizeof(__half)), b.dh = (__half *)nvshmem_malloc(N * sizeof(__half));
    b.sd = (double *)nvshmem_malloc(N * sizeof(double)), b.dd = (double *)nvshmem_malloc(N * sizeof(double));
    CU(cudaMalloc(&b.res, 16 * N * sizeof(int)));
    long long *dout;
    int *iout;
    CU(cudaMalloc(&dout, 32 * sizeof(long long)));
    CU(cudaMalloc(&iout, (N + 8) * sizeof(int)));

    /* waits */
    unsigned long long w0[8] = {0, 0, ~0ull, 0, 0, 0x5a, 0, 0};
    CU(cudaMemcpy(word, w0, sizeof w0, cudaMemcpyHostToDevice));
    CU(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    k_wait<<<1, 32, 0, s>>>(flags, sflag, dout);
    CU(cudaStreamSynchronize(s));
    long long o[18];
    CU(cudaMemcpy(o, dout, sizeof o, cudaMemcpyDeviceToHost));
    CHECK(o[0] % 2 == 1 && o[0] < F, "wait_until_any: %lld", o[0]);
    CHECK(o[1] == 4 && o[2] == 0xaa, "wait_until_some: %lld %llx", o[1], (unsigned long long)o[2]);
    CHECK(o[3] % 2 == 1 && o[3] < F && o[4] == 4, "vector any/some: %lld %lld", o[3], o[4]);
    CHECK(o[5] == 1 && o[6] == 0 && o[7] == 1 && o[8] == 3, "test_all/any: %lld %lld %lld %lld", o[5], o[6], o[7], o[8]);
    CHECK(o[9] == 1 && o[10] == 7, "test_some: %lld %lld", o[9], o[10]);
    CHECK(o[11] == 1 && o[12] == 1 && o[13] == 4, "test vector: %lld %lld %lld", o[11], o[12], o[13]);
    CHECK(o[14] == 1 && o[15] == 0 && o[16] == 1 && o[17] == 1, "empty sets, short: %lld %lld %lld %lld", o[14], o[15],
          o[16], o[17]);

    /* strided and atomics */
    nvshmem_barrier_all();
    k_rma<<<1, 128, 0, s>>>(symi, symd, word, fw, iout);
    CU(cudaStreamSynchronize(s));
    int ho[N + 4];
    CU(cudaMemcpy(ho, iout, sizeof ho, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += ho[i] != me * 1000 + i;
    CHECK(!bad, "iput/iget: %d wrong", bad);
    CHECK(ho[N] == 2 * prev + 1 && ho[N + 1] == 1 && ho[N + 2] == 5 * me, "float swap, double set/fetch: %d %d %d",
          ho[N], ho[N + 1], ho[N + 2]);
    nvshmem_barrier_all();
    if (me == 0) {
        unsigned long long w[6];
        CU(cudaMemcpy(w, word, sizeof w, cudaMemcpyDeviceToHost));
        unsigned long long all = (1ull << n) - 1, x = 0;
        for (int q = 0; q < n; q++) x ^= 1ull << (2 * q);
        CHECK(w[0] == all && w[1] == x && w[2] == ~all && w[3] == all << 8 && w[5] == 0x5a && ho[N + 3] == 0x5a,
              "bitwise atomics: %llx %llx %llx %llx %llx", w[0], w[1], w[2], w[3], w[5]);
    }

    /* device collectives: world, then the pes 1, 3, ... (a strided split; with 2 pes: pe 1 alone) */
    nvshmem_team_t odd = NVSHMEM_TEAM_INVALID;
    CHECK(nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd) == 0, "split");
    int hr[16 * N];
    for (int pass = 0; pass < 2; pass++) {
        nvshmem_team_t t = pass ? odd : NVSHMEM_TEAM_WORLD;
        int tn = nvshmem_team_n_pes(t), tp = nvshmem_team_my_pe(t);
        CU(cudaDeviceSynchronize());
        nvshmem_barrier_all();
        if (tp < 0) continue;
        int root = tn > 1 ? 1 : 0;
        void *args[] = {&t, &b, &root};
        CHECK(nvshmemx_collective_launch((const void *)k_coll, dim3(1), dim3(256), args, 0, s) == 0, "launch");
        CU(cudaStreamSynchronize(s));
        CU(cudaMemcpy(hr, b.res, sizeof hr, cudaMemcpyDeviceToHost));
        check_coll(hr, tn, tp, root, pass ? "odd team" : "world");
    }
    CU(cudaDeviceSynchronize());
    nvshmem_barrier_all();

    /* host and on-stream forms */
    host_coll(NVSHMEM_TEAM_WORLD, b.si, b.di, s, "world");
    CU(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    host_coll(odd, b.si, b.di, s, "odd team");
    CU(cudaDeviceSynchronize());
    nvshmem_barrier_all();

    if (odd != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(odd);
    nvshmem_barrier_all();
    nvshmem_finalize();
    if (me == 0 || fails) printf("nvshmem_coll pe %d: %s\n", me, fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}

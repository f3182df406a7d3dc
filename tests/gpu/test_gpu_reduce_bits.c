/*
 * test_gpu_reduce_bits.c — MIN and MAX of floating-point values on GPU buffers give the bits
 * the reductions promise everywhere (include/duet/duet_reduce_ops.h): a NaN anywhere makes
 * the result a NaN, and -0 is below +0, so every rank gets the same bits whatever the order
 * in which the ranks' values were combined (label gpu; registered by reduce_bits.cmake at 2
 * and 3 ranks with the tuner's choice and at 3 with the ring forced, so the one-shot, direct
 * and schedule-executor kernels all run).
 *
 * Inputs: element j of rank r is one of eight values — NaN, -inf, -2.25, -0, +0, the smallest
 * subnormal, 1.5, +inf — picked by (j, r), so every pair of them meets somewhere, and a NaN on
 * one rank only. The reference is computed here from that definition (not by the library):
 * NaN if any rank's value is NaN, else the least (MIN) or greatest (MAX) in the order above.
 * Checked: float32, float64, float16 and bfloat16; allreduce in and out of place, reduce to
 * root n-1 and reduce-scatter; counts 1, 7, 1001 and 70001 (large enough for the direct
 * kernels when the buffers are in the GPU heap); buffers from the GPU heap and cudaMalloc by
 * turns. A NaN result must be a NaN (its payload is not promised); any other must match bit
 * for bit. Rank 0 prints "test_gpu_reduce_bits: passed".
 */
#include "duet_test.h"
#include "gpu/gpu_check.h"

#include <duet/duet_cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_NAN, V_NINF, V_NEG, V_NZERO, V_PZERO, V_SUB, V_POS, V_PINF, NV };
/* the bit patterns of the eight values in each type, in the order above */
static const uint64_t bits16[NV] = {0x7e00, 0xfc00, 0xc080, 0x8000, 0x0000, 0x0001, 0x3e00, 0x7c00};
static const uint64_t bitsb16[NV] = {0x7fc0, 0xff80, 0xc010, 0x8000, 0x0000, 0x0001, 0x3fc0, 0x7f80};
static const uint64_t bits32[NV] = {0x7fc00000, 0xff800000, 0xc0100000, 0x80000000,
                                    0x00000000, 0x00000001, 0x3fc00000, 0x7f800000};
static const uint64_t bits64[NV] = {0x7ff8000000000000ull, 0xfff0000000000000ull, 0xc002000000000000ull,
                                    0x8000000000000000ull, 0x0000000000000000ull, 0x0000000000000001ull,
                                    0x3ff8000000000000ull, 0x7ff0000000000000ull};

static int me, np;
static cudaStream_t s;
static long ncases;

static const uint64_t *bits_of(duet_datatype_t dt)
{
    return dt == DUET_FLOAT16 ? bits16 : dt == DUET_BFLOAT16 ? bitsb16 : dt == DUET_FLOAT32 ? bits32 : bits64;
}

/* Which value element j of rank r holds: NaN on rank (j % np) for one j in 11, else by (j, r). */
static int value_at(size_t j, int r)
{
    if (j % 11 == 3 && (size_t)r == j % (size_t)np) return V_NAN;
    return 1 + (int)((j * 5 + (size_t)r * 3 + j / 7) % (NV - 1));
}

static int reference(size_t j, duet_op_t op)
{
    int best = -1;
    for (int r = 0; r < np; r++) {
        int v = value_at(j, r);
        if (v == V_NAN) return V_NAN;
        if (best < 0 || (op == DUET_MIN ? v < best : v > best)) best = v;
    }
    return best;
}

static int is_nan_bits(duet_datatype_t dt, uint64_t b)
{
    switch (dt) {
    case DUET_FLOAT16: return (b & 0x7c00) == 0x7c00 && (b & 0x3ff);
    case DUET_BFLOAT16: return (b & 0x7f80) == 0x7f80 && (b & 0x7f);
    case DUET_FLOAT32: return (b & 0x7f800000) == 0x7f800000 && (b & 0x7fffff);
    default: return (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (b & 0xfffffffffffffull);
    }
}

static const char *dt_name(duet_datatype_t dt)
{
    return dt == DUET_FLOAT16 ? "float16" : dt == DUET_BFLOAT16 ? "bfloat16" : dt == DUET_FLOAT32 ? "float32" : "float64";
}

static void put_elem(char *p, size_t es, uint64_t b) { memcpy(p, &b, es); } /* little endian */
static uint64_t get_elem(const char *p, size_t es)
{
    uint64_t b = 0;
    memcpy(&b, p, es);
    return b;
}

enum { AR, AR_INPLACE, RD, RS, NKIND };
static const char *kind_names[NKIND] = {"allreduce", "allreduce in place", "reduce to root n-1", "reducescatter"};

/* One call; element j of the result is element `first + j` of the reduction. */
static void run_case(duet_comm_t w, int kind, duet_datatype_t dt, duet_op_t op, size_t count, int heap)
{
    size_t es = duet_datatype_size(dt), in_elems = kind == RS ? count * (size_t)np : count;
    size_t bytes = in_elems * es;
    const uint64_t *vb = bits_of(dt);
    char *host = malloc(bytes), *got = malloc(bytes);
    CHECK(host && got, "out of host memory");
    for (size_t j = 0; j < in_elems; j++) put_elem(host + j * es, es, vb[value_at(j, me)]);
    void *dsend, *drecv;
    if (heap) {
        dsend = duet_malloc_device(w, bytes);
        drecv = kind == AR_INPLACE ? dsend : duet_malloc_device(w, bytes);
        CHECK(dsend && drecv, "duet_malloc_device: %s", duet_last_error());
    } else {
        CU(cudaMalloc(&dsend, bytes));
        drecv = dsend;
        if (kind != AR_INPLACE) CU(cudaMalloc(&drecv, bytes));
    }
    CU(cudaMemcpyAsync(dsend, host, bytes, cudaMemcpyHostToDevice, s));
    if (drecv != dsend) CU(cudaMemsetAsync(drecv, 0xa5, bytes, s));
    duet_status_t st;
    switch (kind) {
    case RD: st = duet_reduce(dsend, drecv, count, dt, op, np - 1, w, s); break;
    case RS: st = duet_reduce_scatter(dsend, drecv, count, dt, op, w, s); break;
    default: st = duet_allreduce(dsend, drecv, count, dt, op, w, s); break;
    }
    char what[160];
    snprintf(what, sizeof what, "%s %s %s count %zu (%s)", kind_names[kind], dt_name(dt),
             op == DUET_MIN ? "min" : "max", count, heap ? "GPU heap" : "cudaMalloc");
    EXPECT(st == DUET_OK, "%s: %s", what, duet_last_error());
    CU(cudaMemcpyAsync(got, drecv, count * es, cudaMemcpyDeviceToHost, s));
    CU(cudaStreamSynchronize(s));
    int checks = st == DUET_OK && (kind != RD || me == np - 1);
    size_t first = kind == RS ? (size_t)me * count : 0;
    int reported = 0;
    for (size_t j = 0; checks && j < count && reported < 3; j++) {
        int want = reference(first + j, op);
        uint64_t b = get_elem(got + j * es, es);
        int ok = want == V_NAN ? is_nan_bits(dt, b) : b == vb[want];
        if (!ok) {
            FAIL("%s: element %zu is 0x%llx, expected %s0x%llx", what, j, (unsigned long long)b,
                 want == V_NAN ? "a NaN like " : "", (unsigned long long)vb[want]);
            reported++;
        }
    }
    if (heap) {
        if (drecv != dsend) duet_free(w, drecv);
        duet_free(w, dsend);
    } else {
        if (drecv != dsend) cudaFree(drecv);
        cudaFree(dsend);
    }
    free(host);
    free(got);
    ncases++;
}

int main(void)
{
    CHECK_OK(duet_init());
    duet_comm_t w = dt_world(&me, &np);
    CHECK(duet_cuda_available() && duet_cuda_device(w) >= 0, "no GPU heap: this test needs a GPU on every rank");
    CU(cudaSetDevice(duet_cuda_device(w)));
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const duet_datatype_t dts[] = {DUET_FLOAT32, DUET_FLOAT64, DUET_FLOAT16, DUET_BFLOAT16};
    const size_t counts[] = {1, 7, 1001, 70001};
    int turn = 0;
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
        for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
            for (int op = DUET_MIN; op <= DUET_MAX; op++)
                for (int kind = 0; kind < NKIND; kind++)
                    run_case(w, kind, dts[d], (duet_op_t)op, counts[c], turn++ % 2 == 0);
    EXPECT_BARRIER_ALL("after every case");
    cudaStreamDestroy(s);
    if (me == 0 && dt_failures() == 0) printf("test_gpu_reduce_bits: passed (%ld cases)\n", ncases);
    CHECK_OK(duet_finalize());
    return dt_finish();
}

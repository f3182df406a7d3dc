/*
 * test_coll_lane.c — the latency lane (src/coll/duet_coll_lane.h): one-shot allreduce of up
 * to 48 bytes without the executor. Run with DUET_ALGO=allreduce:oneshot (so every small
 * allreduce takes the lane) and with the tuner's choice.
 *
 * Covers:
 *   - the boundary: 48 bytes of every datatype (the lane) and one element more (the executor),
 *     sum, max and avg, every element against the reference each rank computes from everyone's
 *     inputs (integers exactly; floats hold small integers, so sums are exact; avg of fp16 /
 *     bf16 within their half unit in the last place);
 *   - reuse: 3000 calls back to back, each with new inputs, alternating in place and out of
 *     place, with a broadcast and a larger allreduce (the executor) every 97 calls;
 *   - ranks out of step: rank 0 sleeps before some calls (the others wait, nobody reads a line
 *     twice);
 *   - mismatched calls (on a copy of the world, which they revoke): one rank contributes 2
 *     elements, the others 3 -> DUET_ERR_INVALID_ARG on every rank with a message naming rank 0,
 *     another and both counts ("rank 0 called allreduce with count 2, rank 2 with 3"); the copy
 *     is revoked (a barrier on it fails), and the communicator duet_comm_shrink gives runs the
 *     lane again.
 * Usage: test_coll_lane [seed]
 */
#include <unistd.h>
#include "duet_test.h"
#include "coll/duet_coll_dtype.h" /* exact fp16 / bf16 conversions of small integers */

static int me, np;
static duet_comm_t W;
static long ncases, npassed;

static const size_t es_of[DUET_DATATYPE_COUNT] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};

/* Rank r's input element i in call t: a small integer every type holds exactly. */
static int input(int r, size_t i, uint64_t t) { return (int)((mix(key3((uint64_t)r, i, t)) % 9)) + 1; }

static void store(duet_datatype_t dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case DUET_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case DUET_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case DUET_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case DUET_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case DUET_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case DUET_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case DUET_FLOAT16: ((uint16_t *)buf)[i] = duet_f32_to_f16((float)v); break;
    case DUET_BFLOAT16: ((uint16_t *)buf)[i] = duet_f32_to_bf16((float)v); break;
    case DUET_FLOAT32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
    }
}

static double load(duet_datatype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case DUET_INT8: return ((const int8_t *)buf)[i];
    case DUET_UINT8: return ((const uint8_t *)buf)[i];
    case DUET_INT32: return ((const int32_t *)buf)[i];
    case DUET_UINT32: return ((const uint32_t *)buf)[i];
    case DUET_INT64: return (double)((const int64_t *)buf)[i];
    case DUET_UINT64: return (double)((const uint64_t *)buf)[i];
    case DUET_FLOAT16: return duet_f16_to_f32(((const uint16_t *)buf)[i]);
    case DUET_BFLOAT16: return duet_bf16_to_f32(((const uint16_t *)buf)[i]);
    case DUET_FLOAT32: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

/* The expected element: op over every rank's input (sums stay below 127: 8 ranks x 9). */
static double expected(duet_datatype_t dt, duet_op_t op, size_t i, uint64_t t)
{
    double v = input(0, i, t);
    for (int r = 1; r < np; r++) {
        double x = input(r, i, t);
        v = op == DUET_MAX ? (x > v ? x : v) : v + x;
    }
    if (op != DUET_AVG) return v;
    if (dt <= DUET_UINT64) return (double)((long long)v / np); /* integers: C division */
    return v / np;
}

/* The tolerance of an avg: a half unit in the last place of the type, at values below 16. */
static double tolerance(duet_datatype_t dt, duet_op_t op)
{
    if (op != DUET_AVG) return 0;
    return dt == DUET_FLOAT16 ? 16.0 / 2048 : dt == DUET_BFLOAT16 ? 16.0 / 256 : dt == DUET_FLOAT32 ? 1e-6 : 1e-12;
}

/* One allreduce of `count` elements in call t, checked element by element. */
static void one_call(duet_datatype_t dt, duet_op_t op, size_t count, uint64_t t, int in_place, const char *what)
{
    size_t bytes = count * es_of[dt];
    unsigned char send[512], recv[512];
    for (size_t i = 0; i < count; i++) store(dt, send, i, input(me, i, t));
    memset(recv, 0xEE, sizeof recv);
    if (in_place) memcpy(recv, send, bytes);
    ncases++;
    duet_status_t st = duet_allreduce(in_place ? recv : send, recv, count, dt, op, W, NULL);
    if (st != DUET_OK) {
        FAIL("%s: dt %d op %d count %zu call %llu: %s (%s)", what, (int)dt, (int)op, count, (unsigned long long)t,
             duet_status_str(st), duet_last_error());
        return;
    }
    for (size_t i = 0; i < count; i++) {
        double want = expected(dt, op, i, t), got = load(dt, recv, i), d = got - want;
        if (d < 0) d = -d;
        if (d > tolerance(dt, op)) {
            FAIL("%s: dt %d op %d count %zu call %llu: element %zu is %g, want %g", what, (int)dt, (int)op, count,
                 (unsigned long long)t, i, got, want);
            return;
        }
    }
    if (recv[bytes] != 0xEE) {
        FAIL("%s: dt %d count %zu: a byte past the result was written", what, (int)dt, count);
        return;
    }
    npassed++;
}

static void run_boundary(void)
{
    const duet_op_t ops[] = {DUET_SUM, DUET_MAX, DUET_AVG};
    uint64_t t = 1;
    for (int dt = 0; dt < DUET_DATATYPE_COUNT; dt++)
        for (int o = 0; o < 3; o++)
            for (int extra = 0; extra < 2; extra++) /* 48 bytes: the lane; one element more: not */
                for (int in_place = 0; in_place < 2; in_place++)
                    one_call((duet_datatype_t)dt, ops[o], 48 / es_of[dt] + (size_t)extra, t++, in_place, "boundary");
}

static void run_reuse(void)
{
    static int32_t big_send[4096], big_recv[4096];
    for (uint64_t t = 0; t < 3000; t++) {
        one_call(t % 3 ? DUET_INT32 : DUET_FLOAT16, t % 5 ? DUET_SUM : DUET_AVG, 1 + t % 12, 1000 + t, (int)(t & 1),
                 "reuse");
        if (t % 97 == 0) { /* the executor's calls in between */
            for (int i = 0; i < 4096; i++) big_send[i] = me + i;
            ncases++;
            if (duet_allreduce(big_send, big_recv, 4096, DUET_INT32, DUET_SUM, W, NULL) ||
                duet_broadcast(big_send, big_recv, 100, DUET_INT32, (int)(t % (uint64_t)np), W, NULL))
                FAIL("reuse: a collective between lane calls failed: %s", duet_last_error());
            else if (big_recv[5] != (int32_t)(t % (uint64_t)np) + 5)
                FAIL("reuse: broadcast from %d gave %d, want %d", (int)(t % (uint64_t)np), big_recv[5],
                     (int)(t % (uint64_t)np) + 5);
            else
                npassed++;
        }
        if (me == 0 && t % 499 == 0) usleep(2000); /* rank 0 late: the others wait in the lane */
    }
}

static void run_mismatch(void)
{
    if (np < 2) return;
    int32_t send[4] = {1, 2, 3, 4}, recv[4];
    ncases++;
    duet_comm_t world = W, D = NULL;
    CHECK_OK(duet_comm_split(world, 0, me, &D));
    W = D;
    /* a matched call first: a communicator's first collective makes exchanges over its bootstrap
     * (the tuner's), which a rank failing at entry (revoked by a faster one) would skip */
    one_call(DUET_INT32, DUET_SUM, 3, 8999, 0, "before the mismatch");
    duet_status_t st = duet_allreduce(send, recv, me == 0 ? 2 : 3, DUET_INT32, DUET_SUM, W, NULL);
    const char *e = duet_last_error(), *at = strstr(e, "rank 0 called allreduce with count 2, rank ");
    if (st != DUET_ERR_INVALID_ARG || !at || !strstr(at, " with 3 (call #"))
        FAIL("mismatched counts: %s, \"%s\"; want DUET_ERR_INVALID_ARG naming rank 0, another and the counts",
             duet_status_str(st), duet_last_error());
    else
        npassed++;
    EXPECT(duet_barrier(D) == DUET_ERR_INVALID_ARG, "a barrier on the revoked copy: %s", duet_last_error());
    duet_comm_t S = NULL;
    CHECK_OK(duet_comm_shrink(D, &S));
    CHECK_OK(duet_comm_destroy(D));
    W = S;
    for (uint64_t t = 0; t < 50; t++) one_call(DUET_INT32, DUET_SUM, 3, 9000 + t, 0, "after the mismatch");
    CHECK_OK(duet_barrier(S));
    CHECK_OK(duet_comm_destroy(S));
    W = world;
}

int main(int argc, char **argv)
{
    CHECK_OK(duet_init());
    W = dt_world(&me, &np);
    (void)argc, (void)argv;
    const char *algo = getenv("DUET_ALGO");
    if (me == 0) printf("test_coll_lane: %d ranks, DUET_ALGO=%s\n", np, algo && algo[0] ? algo : "(tuner)");
    double t0 = now_s();
    run_boundary();
    run_reuse();
    run_mismatch();
    EXPECT_BARRIER_ALL("end");
    if (me == 0) printf("test_coll_lane: %ld of %ld cases passed (%.2f s)\n", npassed, ncases, now_s() - t0);
    CHECK_OK(duet_finalize());
    return dt_finish();
}

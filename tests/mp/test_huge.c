/*
 * test_huge.c — collectives with counts no buffer can hold are refused at once, on every rank,
 * with DUET_ERR_INVALID_ARG: 2^62, SIZE_MAX / 2 and SIZE_MAX elements (and the first count past
 * DUET_MAX_BUFFER_BYTES) for every collective, of 1-byte, fp16 and 8-byte types, in place and
 * out of place. Before the check a broadcast of 2^62 elements, an alltoall or an in-place
 * allgather of SIZE_MAX / 2 spun in the schedule builders and grew to gigabytes: the
 * test's timeout (duetrun --timeout) bounds every call, and the peak resident size may grow by
 * at most 64 MiB. The buffers are tiny: nothing may touch them. Afterwards a real allreduce
 * still works (every rank refused alike, so nobody waits for another).
 */
#include "duet_test.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

static long peak_kib(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static int me, npes;
static duet_comm_t W;
static char bufs[2][256];

/* One collective with `count`: send and recv point into bufs (in place: the convention's way). */
static duet_status_t call(int kind, size_t count, duet_datatype_t dt, int in_place)
{
    char *recv = bufs[1], *send = in_place ? recv : bufs[0];
    size_t es = duet_datatype_size(dt);
    /* allgather in place: sendbuf = recvbuf + rank * count (wrapping address arithmetic) */
    if (in_place && kind == 3) send = (char *)(uintptr_t)((uintptr_t)recv + (uintptr_t)me * count * es);
    if (in_place && kind == 4) recv = (char *)(uintptr_t)((uintptr_t)send + (uintptr_t)me * count * es);
    switch (kind) {
    case 0: return duet_allreduce(send, recv, count, dt, DUET_SUM, W, NULL);
    case 1: return duet_broadcast(send, recv, count, dt, 0, W, NULL);
    case 2: return duet_reduce(send, recv, count, dt, DUET_SUM, 0, W, NULL);
    case 3: return duet_allgather(send, recv, count, dt, W, NULL);
    case 4: return duet_reduce_scatter(send, recv, count, dt, DUET_SUM, W, NULL);
    case 5: return duet_alltoall(send, recv, count, dt, W, NULL);
    case 6: return duet_send(send, count, dt, (me + 1) % npes, W, NULL);
    default: return duet_recv(recv, count, dt, (me + npes - 1) % npes, W, NULL);
    }
}

int main(void)
{
    static const char *names[] = {"allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "alltoall",
                                  "send", "recv"};
    setenv("DUET_SYMMETRIC_SIZE", "8M", 1);
    setenv("DUET_DEBUG", "NONE", 0);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    const size_t counts[] = {(size_t)1 << 62, SIZE_MAX / 2, SIZE_MAX, DUET_MAX_BUFFER_BYTES + 1};
    const duet_datatype_t dts[] = {DUET_INT8, DUET_FLOAT16, DUET_FLOAT64};
    long before = peak_kib();
    int cases = 0;
    for (int kind = 0; kind < 8; kind++) {
        if (kind >= 6 && npes == 1) continue; /* a send needs another rank */
        for (size_t k = 0; k < ARRAY_LEN(counts); k++)
            for (size_t d = 0; d < ARRAY_LEN(dts); d++)
                for (int in_place = 0; in_place < (kind >= 6 ? 1 : 2); in_place++) {
                    dt_prime_error();
                    duet_status_t st = call(kind, counts[k], dts[d], in_place);
                    EXPECT(st == DUET_ERR_INVALID_ARG && !dt_error_primed() && duet_last_error()[0],
                           "%s of %zu elements of type %d%s: %s, want DUET_ERR_INVALID_ARG with a message",
                           names[kind], counts[k], (int)dts[d], in_place ? " in place" : "", duet_status_str(st));
                    cases++;
                }
    }
    long grew = peak_kib() - before;
    EXPECT(grew < 64 * 1024, "the peak resident size grew by %ld KiB", grew);
    /* every rank refused alike: the communicator still works */
    int32_t x = me + 1, sum = 0;
    EXPECT_OK(duet_allreduce(&x, &sum, 1, DUET_INT32, DUET_SUM, W, NULL));
    EXPECT(sum == npes * (npes + 1) / 2, "allreduce after the refusals: %d, want %d", sum, npes * (npes + 1) / 2);
    EXPECT_OK(duet_finalize());
    if (me == 0) printf("test_huge: %d refusals, peak memory +%ld KiB\n", cases, grew);
    return dt_finish();
}

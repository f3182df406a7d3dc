/*
 * raw_pingpong: the hardware floor under duet-perf pingpong. Two ranks bounce a counter
 * through plain loads and stores on each other's mapped heap (duet_ptr), with and without
 * a pause in the spin, then the same through duet_p + duet_wait_until. What the library
 * adds over the floor is the difference between the third line and the first two.
 * Then the floor of a 2-rank allreduce: both ranks store into each other's line at once and
 * wait for their own (one one-way transfer per call, not two), against duet_allreduce of
 * 8 bytes (run with DUET_ALGO=allreduce:oneshot to see the latency lane).
 * Last, what a heap atomic adds: rank 0's fetch_add on rank 1's word, as a CPU atomic on the
 * mapping and as duet_atomic_fetch_add_uint64 (the checks and the call in flight around it).
 *
 *   build/bin/duetrun -n 2 build/bin/raw_pingpong [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "duet/duet.h"
#include "util/duet_util.h"

#define CHECK(call)                                                                              \
    do {                                                                                         \
        duet_status_t st_ = (call);                                                              \
        if (st_) {                                                                               \
            fprintf(stderr, "%s: %s: %s\n", #call, duet_status_str(st_), duet_last_error());     \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

enum { RAW_PAUSE, RAW_BARE, LIBRARY, RAW_EXCHANGE, RAW_LANE, ALLREDUCE, RAW_AMO, AMO, MODES };
static const char *mode_names[] = {"raw store + load loop with pause", "raw store + bare load loop",
                                   "duet_p + duet_wait_until", "raw exchange (both store, both wait)", "raw lane (parity lines, 8 B data)",
                                   "duet_allreduce 8 B", "raw fetch_add on the peer's word", "duet_atomic_fetch_add_uint64"};

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    CHECK(duet_init());
    duet_comm_t w = duet_comm_world();
    int me = duet_my_pe();
    if (duet_n_pes() != 2) {
        if (me == 0) fprintf(stderr, "raw_pingpong: run it with 2 ranks\n");
        return 2;
    }
    uint64_t *flag = duet_calloc(w, 1, 64);
    if (!flag) CHECK(duet_last_status());
    volatile uint64_t *mine = flag, *peer = duet_ptr(w, flag, 1 - me);
    uint64_t v = 0;
    char *lanes = duet_calloc(w, 4, 64), *lanes_peer = duet_ptr(w, lanes, 1 - me);
    volatile float sink = 0;
    for (int mode = 0; mode < MODES; mode++) {
        CHECK(duet_barrier_all());
        uint64_t t0 = duet_time_ns();
        for (long i = 0; i < n; i++) {
            v++;
            if (mode >= RAW_AMO) { /* rank 0 alone, on rank 1's word; rank 1 waits in the barrier */
                if (me != 0) break;
                uint64_t old = 0;
                if (mode == RAW_AMO) old = __atomic_fetch_add((uint64_t *)(uintptr_t)peer, 1, __ATOMIC_SEQ_CST);
                else CHECK(duet_atomic_fetch_add_uint64(w, flag, 1, 1, &old));
                sink += (float)(old & 1);
                continue;
            }
            if (mode == ALLREDUCE) {
                float x[2] = {(float)i, 1}, y[2];
                CHECK(duet_allreduce(x, y, 2, DUET_FLOAT32, DUET_SUM, w, NULL));
                continue;
            }
            if (mode == RAW_LANE) {
                struct line { _Atomic uint64_t seq; uint64_t len; char data[48]; };
                struct line *pl = (struct line *)(void *)(lanes_peer) + 2 * me + (i & 1);
                struct line *ml = (struct line *)(void *)(lanes) + 2 * (1 - me) + (i & 1);
                float x[2] = {(float)i, 1}, y[2];
                memcpy(pl->data, x, 8);
                pl->len = 8;
                atomic_store_explicit(&pl->seq, (uint64_t)i + 1, memory_order_release);
                while (atomic_load_explicit(&ml->seq, memory_order_acquire) != (uint64_t)i + 1) {
                }
                memcpy(y, ml->data, 8);
                sink += y[0];
                continue;
            }
            if (mode == RAW_EXCHANGE) {
                *peer = v; /* the peer may be a call ahead: its value is then v + 1 */
                while (*mine < v) {
                }
                continue;
            }
            if (mode == LIBRARY) {
                if (me == 0) CHECK(duet_p_uint64(w, flag, v, 1));
                CHECK(duet_wait_until_uint64(w, flag, DUET_CMP_EQ, v));
                if (me == 1) CHECK(duet_p_uint64(w, flag, v, 0));
                continue;
            }
            if (me == 0) *peer = v;
            while (*mine != v)
                if (mode == RAW_PAUSE) duet_cpu_relax();
            if (me == 1) *peer = v;
        }
        double us = (double)(duet_time_ns() - t0) * 1e-3 / (double)n;
        if (me == 0 && mode >= RAW_AMO)
            printf("%-36s %.2f ns per call\n", mode_names[mode], us * 1e3);
        else if (me == 0)
            printf("%-36s %.3f us per %s\n", mode_names[mode], us, mode < RAW_EXCHANGE ? "round trip" : "call");
    }
    CHECK(duet_free(w, flag));
    CHECK(duet_finalize());
    return 0;
}

/*
 * raw_pingpong: the hardware floor under duet-perf pingpong. Two ranks bounce a counter
 * through plain loads and stores on each other's mapped heap (duet_ptr), with and without
 * a pause in the spin, then the same through duet_p + duet_wait_until. What the library
 * adds over the floor is the difference between the last line and the first two.
 *
 *   build/bin/duetrun -n 2 build/bin/raw_pingpong [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
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

enum { RAW_PAUSE, RAW_BARE, LIBRARY, MODES };
static const char *mode_names[] = {"raw store + load loop with pause", "raw store + bare load loop",
                                   "duet_p + duet_wait_until"};

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
    for (int mode = 0; mode < MODES; mode++) {
        CHECK(duet_barrier_all());
        uint64_t t0 = duet_time_ns();
        for (long i = 0; i < n; i++) {
            v++;
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
        if (me == 0) printf("%-34s %.3f us per round trip\n", mode_names[mode], us);
    }
    CHECK(duet_free(w, flag));
    CHECK(duet_finalize());
    return 0;
}

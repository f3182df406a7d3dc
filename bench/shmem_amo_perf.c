/*
 * shmem_amo_perf.c — OpenSHMEM atomics on the symmetric heap against the same atomics on
 * static data (a global), timed with the OpenSHMEM API alone, so that the same file builds
 * against Duet (duetcc) and Open MPI's oshmem (oshcc).
 *
 *   duetrun -n 2 shmem_amo_perf [-n CALLS] [-r ROUNDS]       (defaults 1000000, 3)
 *
 * PE 0 runs CALLS shmem_long_atomic_fetch_add, then shmem_long_atomic_add, on PE 1's long,
 * once on a shmem_malloc'ed one and once on a global, and prints ns per call for each, per
 * round; the final values are checked (exit 1 when wrong).
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long global_counter;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    long calls = 1000000;
    int rounds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n")) calls = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-r")) rounds = atoi(argv[i + 1]);
    }
    shmem_init();
    int me = shmem_my_pe(), bad = 0;
    if (shmem_n_pes() < 2) {
        fprintf(stderr, "shmem_amo_perf: needs 2 PEs\n");
        shmem_global_exit(2);
    }
    long *heap = shmem_malloc(sizeof *heap);
    *heap = 0;
    shmem_barrier_all();
    for (int r = 0; r < rounds; r++) {
        if (me == 0) {
            double t0 = now_ns();
            for (long i = 0; i < calls; i++) (void)shmem_long_atomic_fetch_add(heap, 1, 1);
            double t1 = now_ns();
            for (long i = 0; i < calls; i++) (void)shmem_long_atomic_fetch_add(&global_counter, 1, 1);
            double t2 = now_ns();
            for (long i = 0; i < calls; i++) shmem_long_atomic_add(heap, 1, 1);
            double t3 = now_ns();
            for (long i = 0; i < calls; i++) shmem_long_atomic_add(&global_counter, 1, 1);
            double t4 = now_ns();
            printf("round %d: fetch_add heap %.1f static %.1f ns; add heap %.1f static %.1f ns\n", r,
                   (t1 - t0) / (double)calls, (t2 - t1) / (double)calls, (t3 - t2) / (double)calls,
                   (t4 - t3) / (double)calls);
            fflush(stdout);
        }
        shmem_barrier_all();
    }
    if (me == 1 && (*heap != 2 * calls * rounds || global_counter != 2 * calls * rounds)) {
        fprintf(stderr, "shmem_amo_perf: PE 1 counts %ld (heap) and %ld (global), want %ld\n", *heap, global_counter,
                2 * calls * rounds);
        bad = 1;
    }
    shmem_barrier_all();
    shmem_free(heap);
    shmem_finalize();
    return bad;
}

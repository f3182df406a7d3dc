/*
 * shmem_reduce_perf.c — OpenSHMEM reductions, timed with the OpenSHMEM API alone, so the same
 * file builds against any implementation (bench/vs_oshmem_reduce.sh: Duet through duetcc,
 * Open MPI's oshmem through oshcc).
 *
 *   shmem_reduce_perf [-b MIN] [-e MAX] [-n ITERS]     (bytes; defaults 8 .. 1 MiB by 4, 200)
 *
 * For each size, a float sum over all PEs two ways: the 1.5 team reduction
 * (shmem_float_sum_reduce on SHMEM_TEAM_WORLD; only where the library is 1.5 or later: Open
 * MPI 4.1's oshmem is 1.4) and the deprecated active-set one (shmem_float_sum_to_all over
 * every PE, its pWrk and pSync). Each call's result is checked
 * (the inputs are small integers, so every order of the sum is exact); a barrier before each
 * call, the call timed alone, the median over the calls. PE 0 prints "team|to_all BYTES US"
 * lines; exit 1 on a wrong result.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long psync[SHMEM_REDUCE_SYNC_SIZE];

int main(int argc, char **argv)
{
    size_t minb = 8, maxb = (size_t)1 << 20;
    int iters = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-b")) minb = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "-e")) maxb = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "-n")) iters = atoi(argv[i + 1]);
    }
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), bad = 0;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    size_t most = maxb / sizeof(float);
    float *src = shmem_malloc(most * sizeof *src), *dst = shmem_malloc(most * sizeof *dst);
    size_t wrk_elems = most / 2 + 1 > SHMEM_REDUCE_MIN_WRKDATA_SIZE ? most / 2 + 1 : SHMEM_REDUCE_MIN_WRKDATA_SIZE;
    float *wrk = shmem_malloc(wrk_elems * sizeof *wrk);
    double *t = malloc(sizeof *t * (size_t)iters);
    if (!src || !dst || !wrk || !t) {
        fprintf(stderr, "shmem_reduce_perf: out of memory\n");
        shmem_global_exit(1);
    }
    for (size_t j = 0; j < most; j++) src[j] = (float)((j * 7 + (size_t)me) % 13);
    shmem_barrier_all();
    for (size_t bytes = minb; bytes <= maxb; bytes *= 4) {
        size_t count = bytes / sizeof(float);
        if (count == 0) continue;
#if SHMEM_MAJOR_VERSION > 1 || (SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION >= 5)
        int first = 0;
#else
        int first = 1; /* no teams before 1.5 */
#endif
        for (int mode = first; mode < 2; mode++) {
            for (int it = -iters / 10 - 1; it < iters; it++) {
                shmem_barrier_all();
                double t0 = now_us();
#if SHMEM_MAJOR_VERSION > 1 || (SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION >= 5)
                if (mode == 0) shmem_float_sum_reduce(SHMEM_TEAM_WORLD, dst, src, count);
                else
#endif
                    shmem_float_sum_to_all(dst, src, (int)count, 0, 0, n, wrk, psync);
                double t1 = now_us();
                if (it >= 0) t[it] = t1 - t0;
                if (it == 0 || it == iters - 1)
                    for (size_t j = 0; j < count; j++) {
                        float want = 0;
                        for (int p = 0; p < n; p++) want += (float)((j * 7 + (size_t)p) % 13);
                        if (dst[j] != want && bad++ < 5)
                            fprintf(stderr, "PE %d: %s %zu bytes: element %zu is %g, want %g\n", me,
                                    mode ? "to_all" : "team", bytes, j, (double)dst[j], (double)want);
                    }
            }
            qsort(t, (size_t)iters, sizeof *t, cmp);
            if (me == 0) printf("%s %zu %.2f\n", mode ? "to_all" : "team", bytes, t[iters / 2]);
            fflush(stdout);
        }
    }
    shmem_barrier_all();
    shmem_free(wrk);
    shmem_free(dst);
    shmem_free(src);
    free(t);
    shmem_finalize();
    return bad ? 1 : 0;
}

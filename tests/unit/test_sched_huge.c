/*
 * test_sched_huge.c — every schedule builder refuses, before it builds a step, a call that
 * cannot exist: a byte size that overflows, a buffer larger than DUET_MAX_BUFFER_BYTES, more
 * chunks than DUET_SCHED_MAX_CHUNKS. Each builder of the algorithm table, 1-5 ranks, every
 * rank, in place and not: DUET_ERR_INVALID_ARG and an empty schedule. Before the check a tree
 * broadcast of 2^62 bytes looped for ever (the ctest timeout bounds this test); so that memory
 * cannot grow unseen either, the process's peak resident size may grow by at most 64 MiB.
 * A count just inside the limits still builds (the check refuses only what it must).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "duet_test.h"
#include "coll/duet_coll_tune.h"

static long peak_kib(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

int main(void)
{
    const size_t counts[] = {(size_t)1 << 62, SIZE_MAX / 2, SIZE_MAX, SIZE_MAX / 8 + 1,
                             DUET_MAX_BUFFER_BYTES + 1};
    long before = peak_kib();
    int cases = 0;
    for (int i = 0; i < duet_coll_nalgos; i++) {
        const duet_coll_algo_t *al = &duet_coll_algos[i];
        for (int n = 1; n <= 5; n++)
            for (int r = 0; r < n; r++)
                for (size_t k = 0; k < DUET_ARRAY_LEN(counts); k++)
                    for (int in_place = 0; in_place < 2; in_place++) {
                        duet_coll_args_t a = {al->kind, r, n, 0, counts[k], 1, 128 << 10, in_place, 0, NULL, 0, 0};
                        duet_sched_t s;
                        duet_sched_init(&s, r, n, 1);
                        duet_status_t st = al->build(&a, &s);
                        EXPECT(st == DUET_ERR_INVALID_ARG && s.nsteps == 0,
                               "%s %s, %d ranks, rank %d, count %zu%s: %s with %d steps, want "
                               "DUET_ERR_INVALID_ARG and none", al->name, duet_coll_kind_name(al->kind), n, r,
                               counts[k], in_place ? " in place" : "", duet_status_str(st), s.nsteps);
                        duet_sched_free(&s);
                        cases++;
                    }
    }
    /* too many chunks: 2^33 bytes in 64-byte messages are 2^27 chunks */
    for (int i = 0; i < duet_coll_nalgos; i++) {
        const duet_coll_algo_t *al = &duet_coll_algos[i];
        duet_coll_args_t a = {al->kind, 0, 2, 0, (size_t)1 << 33, 1, 64, 0, 0, NULL, 0, 0};
        duet_sched_t s;
        duet_sched_init(&s, 0, 2, 1);
        duet_status_t st = al->build(&a, &s);
        EXPECT(st == DUET_ERR_INVALID_ARG && s.nsteps == 0 && strstr(duet_last_error(), "chunks"),
               "%s %s, 2^33 bytes in 64-byte chunks: %s (%s), %d steps", al->name, duet_coll_kind_name(al->kind),
               duet_status_str(st), duet_last_error(), s.nsteps);
        duet_sched_free(&s);
        cases++;
    }
    /* inside the limits it still builds: 1 MiB (8 chunks) on 4 ranks, every algorithm that
     * runs on one host */
    for (int i = 0; i < duet_coll_nalgos; i++) {
        const duet_coll_algo_t *al = &duet_coll_algos[i];
        if (al->name[0] == 'h') continue; /* hierarchical: over hosts only */
        duet_coll_args_t a = {al->kind, 1, 4, 0, (size_t)1 << 20, 1, 128 << 10, 0, 0, NULL, 0, 0};
        duet_sched_t s;
        duet_sched_init(&s, 1, 4, 1);
        duet_status_t st = al->build(&a, &s);
        EXPECT(st == DUET_OK && s.nsteps > 0, "%s %s, 1 MiB on 4 ranks: %s, %d steps (%s)", al->name,
               duet_coll_kind_name(al->kind), duet_status_str(st), s.nsteps, duet_last_error());
        duet_sched_free(&s);
    }
    long grew = peak_kib() - before;
    EXPECT(grew < 64 * 1024, "the peak resident size grew by %ld KiB", grew);
    printf("test_sched_huge: %d refusals checked, peak memory +%ld KiB\n", cases, grew);
    return dt_finish();
}

/* atomic_inc.c — contention on one word: every PE increments PE 0's global counters (the
 * 1.3 names shmem_int_inc, shmem_long_finc, shmem_long_fadd) ITERS times at once; the counts
 * must come out exact, and the fetched values of finc must be distinct (each ticket once). */
#include <stdio.h>
#include <stdlib.h>
#include <shmem.h>

#define ITERS 1000

int icount;
long lcount, lsum;

int main(void)
{
    int i, me, npes, errors = 0;
    long *seen, *tickets;
    start_pes(0);
    me = _my_pe();
    npes = _num_pes();
    tickets = (long *)shmalloc(ITERS * sizeof(long));
    shmem_barrier_all();
    for (i = 0; i < ITERS; i++) {
        shmem_int_inc(&icount, 0);
        tickets[i] = shmem_long_finc(&lcount, 0);
        shmem_long_fadd(&lsum, me + 1, 0);
    }
    shmem_barrier_all();
    if (me == 0) {
        if (icount != npes * ITERS) errors++;
        if (lcount != (long)npes * ITERS) errors++;
        if (lsum != (long)ITERS * npes * (npes + 1) / 2) errors++;
        seen = (long *)calloc((size_t)npes * ITERS, sizeof(long));
        for (int pe = 0; pe < npes; pe++) {
            long t[ITERS];
            shmem_long_get(t, tickets, ITERS, pe);
            for (i = 0; i < ITERS; i++) {
                if (t[i] < 0 || t[i] >= (long)npes * ITERS || seen[t[i]]++) errors++;
                if (i && t[i] <= t[i - 1]) errors++; /* one PE's tickets grow */
            }
        }
        free(seen);
        printf("atomic_inc: %d PEs x %d: int %d, long %ld, sum %ld, %d errors\n", npes, ITERS, icount, lcount, lsum,
               errors);
    }
    shmem_barrier_all();
    shfree(tickets);
    return errors ? 1 : 0;
}

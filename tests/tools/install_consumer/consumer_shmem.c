/* consumer_shmem.c — an OpenSHMEM program built against an installed Duet
 * (tests/tools/install.sh): a put around the ring and a sum reduction, each checked. Prints
 * "consumer_shmem: ok" on PE 0; exits 1 on a wrong result. */
#include <shmem.h>
#include <stdio.h>

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), bad = 0;
    static long got, src, sum;
    src = 10 + me;
    shmem_long_put(&got, &src, 1, (me + 1) % n);
    shmem_barrier_all();
    if (got != 10 + (me + n - 1) % n) bad++;
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &sum, &src, 1);
    if (sum != 10L * n + (long)n * (n - 1) / 2) bad++;
    if (bad) fprintf(stderr, "consumer_shmem: PE %d: %d wrong\n", me, bad);
    else if (me == 0) printf("consumer_shmem: ok (%d PEs)\n", n);
    shmem_finalize();
    return bad ? 1 : 0;
}

/* hello.c — the first program of the README: every rank writes into its right neighbour's
 * symmetric box with one-sided put, then a barrier completes it. Run: duetrun -n 4 hello */
#include <stdio.h>
#include <duet/duet.h>

int main(void)
{
    if (duet_init() != DUET_OK) { fprintf(stderr, "%s\n", duet_last_error()); return 1; }
    duet_comm_t world = duet_comm_world();
    int me = duet_my_pe(), n = duet_n_pes();

    long *box = duet_calloc(world, 1, sizeof(long));      /* symmetric: one per rank */
    duet_p_long(world, box, 100 + me, (me + 1) % n);       /* write into my right neighbour's */
    duet_barrier_all();                                     /* completes the put everywhere */
    printf("rank %d of %d got %ld\n", me, n, *box);
    int ok = *box == 100 + (me + n - 1) % n;               /* what my left neighbour sent */

    duet_free(world, box);
    return duet_finalize() == DUET_OK && ok ? 0 : 1;
}

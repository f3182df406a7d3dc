/* coll_loop.c — the pSync / pWrk style of the classic collective tests: arrays in globals
 * initialised to SHMEM_SYNC_VALUE, reused every iteration by shmem_barrier,
 * shmem_broadcast64 (a rotating root), shmem_long_sum_to_all, shmem_int_max_to_all and
 * shmem_fcollect32 over the whole world. Checks every result. */
#include <stdio.h>
#include <shmem.h>

#define ITERS 50
#define N 16

long pSync[SHMEM_BCAST_SYNC_SIZE];
long pSyncRed[SHMEM_REDUCE_SYNC_SIZE];
long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
int ipWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
long src[N], dst[N];
int isrc[N], idst[N];
int csrc[2], cdst[2 * 64];

int main(void)
{
    int i, it, me, npes, root, errors = 0;
    for (i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    for (i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSyncRed[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    shmem_barrier_all(); /* every PE's pSync is initialised */
    for (it = 0; it < ITERS; it++) {
        root = it % npes;
        for (i = 0; i < N; i++) src[i] = me * 1000 + it * 10 + i, dst[i] = -1, isrc[i] = me * it + i;
        shmem_barrier(0, 0, npes, pSync);
        shmem_broadcast64(dst, src, N, root, 0, 0, npes, pSync);
        if (me != root)
            for (i = 0; i < N; i++)
                if (dst[i] != root * 1000 + it * 10 + i) errors++;
        shmem_long_sum_to_all(dst, src, N, 0, 0, npes, pWrk, pSyncRed);
        for (i = 0; i < N; i++)
            if (dst[i] != 1000L * npes * (npes - 1) / 2 + (long)npes * (it * 10 + i)) errors++;
        shmem_int_max_to_all(idst, isrc, N, 0, 0, npes, ipWrk, pSync);
        for (i = 0; i < N; i++)
            if (idst[i] != (npes - 1) * it + i) errors++;
        csrc[0] = me, csrc[1] = it;
        shmem_fcollect32(cdst, csrc, 2, 0, 0, npes, pSyncRed);
        for (i = 0; i < npes; i++)
            if (cdst[2 * i] != i || cdst[2 * i + 1] != it) errors++;
    }
    shmem_barrier_all();
    printf("coll_loop: PE %d: %d iterations, %d errors\n", me, ITERS, errors);
    shmem_finalize();
    return errors ? 1 : 0;
}

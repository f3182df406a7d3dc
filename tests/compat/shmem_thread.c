/*
 * shmem_thread.c — shmem_init_thread provides the thread level asked for (every call is thread
 * safe, so every level can be given), and shmem_query_thread answers the same. PE p asks for
 * level p mod 4 (run it at 4 PEs to see all four); before that, a level that does not exist
 * is refused with a nonzero return, and provided is left alone.
 */
#include "shmem_test.h"

#include <stdlib.h>

int main(void)
{
    static const int levels[] = {SHMEM_THREAD_SINGLE, SHMEM_THREAD_FUNNELED, SHMEM_THREAD_SERIALIZED,
                                 SHMEM_THREAD_MULTIPLE};
    int provided = -7;
    int bad = shmem_init_thread(SHMEM_THREAD_MULTIPLE + 1, &provided);
    int left_alone = provided == -7;
    const char *r = getenv("DUET_RANK"); /* before init: duetrun's rank, to pick the level */
    int rank = r ? atoi(r) : 0;
    int want = levels[rank % 4];
    ST_CHECK(shmem_init_thread(want, &provided) == 0, "shmem_init_thread(%d) failed", want);
    ST_EXPECT(bad != 0 && left_alone, "an unknown level returned %d and set provided to %d", bad, provided);
    ST_EXPECT(provided == want, "asked for level %d, provided %d", want, provided);
    int q = -1;
    shmem_query_thread(&q);
    ST_EXPECT(q == want, "shmem_query_thread says %d, asked for %d", q, want);
    ST_EXPECT(shmem_my_pe() == rank, "my_pe %d, the launcher's rank %d", shmem_my_pe(), rank);
    return st_finish();
}

/*
 * shmem_corners.c — corners the other programs do not reach (run with a small heap,
 * DUET_SYMMETRIC_SIZE=4M, tests/compat/shmem.cmake):
 *   - shmem_realloc growing into a full heap (filled to the last 64 bytes) returns NULL on
 *     every PE and leaves the old block (and every other block) as it was, readable by the
 *     peers; freeing room then lets the same realloc succeed, contents kept;
 *   - the 1.3 waits shmem_<short|int|long|longlong>_wait, shmem_wait and shmem_short_wait_until
 *     on static ivars, set by a peer after a delay.
 */
#include <time.h>

#include "shmem_test.h"

#define MB (1024L * 1024L)

static short s_short;
static int s_int;
static long s_long, s_wait;
static long long s_ll;

static void fill(long *p, size_t n, long tag)
{
    for (size_t i = 0; i < n; i++) p[i] = tag + (long)i;
}
static int intact(const long *p, size_t n, long tag)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != tag + (long)i) return 0;
    return 1;
}

int main(int argc, char **argv)
{
    shmem_init();
    st_seed(argc, argv);
    int me = shmem_my_pe(), npes = shmem_n_pes();

    /* ---- realloc into a full heap: a and b, then fillers (halving sizes, every PE alike)
     * until not even 64 bytes fit */
    size_t na = (size_t)MB / sizeof(long), nb = (size_t)(MB / 2) / sizeof(long);
    long *a = shmem_malloc((size_t)MB), *b = shmem_malloc((size_t)(MB / 2));
    ST_CHECK(a && b, "1 MiB + 0.5 MiB");
    fill(a, na, me * 1000000L), fill(b, nb, me * 1000000L + 7);
    void *filler[64];
    int nfill = 0;
    for (size_t sz = (size_t)64 * MB; sz >= 64 && nfill < 64;) {
        void *f = shmem_malloc(sz);
        if (f) filler[nfill++] = f;
        else sz /= 2;
    }
    ST_CHECK(nfill < 64, "the heap never filled");
    shmem_barrier_all();
    long *r = shmem_realloc(a, (size_t)(2 * MB)); /* no room beside a */
    ST_EXPECT(r == NULL, "realloc into a full heap returned %p, want NULL", (void *)r);
    ST_EXPECT(intact(a, na, me * 1000000L), "the old block changed after a failed realloc");
    ST_EXPECT(intact(b, nb, me * 1000000L + 7), "another block changed after a failed realloc");
    /* the heap still works: the peers' copies are reachable and right */
    long peer = shmem_long_g(&a[na - 1], (me + 1) % npes);
    ST_EXPECT(peer == ((me + 1) % npes) * 1000000L + (long)na - 1, "a peer's old block reads %ld", peer);
    shmem_barrier_all();
    for (int i = nfill - 1; i >= 0; i--) shmem_free(filler[i]);
    long *c = shmem_malloc(64);
    ST_EXPECT(c != NULL, "a small malloc after the failed realloc");
    shmem_free(c);
    shmem_free(b);
    r = shmem_realloc(a, (size_t)(2 * MB)); /* now there is room */
    ST_CHECK(r != NULL, "realloc with room");
    ST_EXPECT(intact(r, na, me * 1000000L), "realloc lost the contents");
    size_t last = (size_t)(2 * MB) / sizeof(long) - 1;
    r[last] = me;
    shmem_barrier_all();
    ST_EXPECT(shmem_long_g(&r[last], (me + 1) % npes) == (me + 1) % npes, "the grown block is symmetric");
    shmem_barrier_all();
    shmem_free(r);

    /* ---- 1.3 waits on static ivars: PE (me + 1) sets mine after a short delay */
    s_short = 0, s_int = 0, s_long = 0, s_ll = 0, s_wait = 0;
    shmem_barrier_all();
    {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        int to = (me + npes - 1) % npes; /* I set my left neighbour's ivars */
        shmem_short_p(&s_short, 3, to);
        shmem_int_p(&s_int, 4, to);
        shmem_long_p(&s_long, 5, to);
        shmem_longlong_p(&s_ll, 6, to);
        shmem_long_p(&s_wait, 7, to);
        shmem_quiet();
    }
    shmem_short_wait(&s_short, 0);          /* waits while == 0 */
    shmem_int_wait(&s_int, 0);
    shmem_long_wait(&s_long, 0);
    shmem_longlong_wait(&s_ll, 0);
    shmem_wait(&s_wait, 0);
    shmem_short_wait_until(&s_short, SHMEM_CMP_EQ, 3);
    shmem_int_wait_until(&s_int, SHMEM_CMP_GE, 4);
    shmem_long_wait_until(&s_long, SHMEM_CMP_GT, 4);
    ST_EXPECT(s_short == 3 && s_int == 4 && s_long == 5 && s_ll == 6 && s_wait == 7, "1.3 waits saw %d %d %ld %lld %ld",
              s_short, s_int, s_long, s_ll, s_wait);
    int rc = st_finish();
    shmem_finalize();
    return rc;
}

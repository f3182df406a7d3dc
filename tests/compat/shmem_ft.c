/*
 * shmem_ft.c — no OpenSHMEM wait hangs: a PE killed (SIGKILL), a revoked world or the
 * DUET_WAIT_TIMEOUT bound ends every wait, heap and static, with one line naming the call,
 * the address and what it waited for. Run by tests/compat/shmem_ft.sh, which checks the lines,
 * their number and the time (label compat).
 *
 *   shmem_ft static|heap   the last PE dies (SIGKILL) while the others wait for a flag it would
 *                          have set: PE 0 in shmem_long_wait_until, PE 1 in
 *                          shmem_long_wait_until_any (static) or _all (heap); run under
 *                          duetrun --ft, so that the survivors find out by themselves
 *   shmem_ft revoke        PE 0 revokes the world (Duet's duet_comm_revoke) while the others
 *                          wait (odd PEs on static data, even ones on the heap); then waits too
 *   shmem_ft timeout       (one PE, DUET_WAIT_TIMEOUT=1) waits on a static flag nobody sets
 *   shmem_ft timeout-heap  the same on the heap
 *   shmem_ft hang-static   (DUET_HANG_REPORT_S, DUET_WAIT_TIMEOUT=1) the static wait of timeout:
 *                          the hang report names it before the bound ends it
 *   shmem_ft hang-lock     the same for shmem_set_lock: PE 0 holds the lock (and waits on a
 *                          static flag), the others wait for the lock
 */
#include <duet/duet.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shmem_test.h"

static long s_flag, s_flags[4];

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void wait_static(int me)
{
    if (me % 2 == 0) shmem_long_wait_until(&s_flag, SHMEM_CMP_EQ, 1);
    else (void)shmem_long_wait_until_any(s_flags, 4, NULL, SHMEM_CMP_EQ, 1);
}

static void wait_heap(int me, long *h)
{
    if (me % 2 == 0) shmem_long_wait_until(h, SHMEM_CMP_EQ, 1);
    else shmem_long_wait_until_all(h + 1, 3, NULL, SHMEM_CMP_EQ, 1);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "static";
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *h = shmem_calloc(4, sizeof(long));
    shmem_barrier_all();
    if (strcmp(mode, "static") == 0 || strcmp(mode, "heap") == 0) {
        if (me == npes - 1) { /* the victim: let the others start waiting, then die */
            nap_ms(200);
            fflush(NULL);
            kill(getpid(), SIGKILL);
            pause();
        }
        if (mode[0] == 's') wait_static(me);
        else wait_heap(me, h);
    } else if (strcmp(mode, "revoke") == 0) {
        if (me == 0) {
            nap_ms(200);
            duet_comm_revoke(duet_comm_world());
            wait_static(me);
        }
        if (me % 2) wait_static(me);
        else wait_heap(me, h);
    } else if (strcmp(mode, "timeout") == 0) {
        wait_static(0);
    } else if (strcmp(mode, "timeout-heap") == 0) {
        wait_heap(0, h);
    } else if (strcmp(mode, "hang-static") == 0) { /* DUET_HANG_REPORT_S: reported, then the bound */
        wait_static(0);
    } else if (strcmp(mode, "hang-lock") == 0) { /* PE 0 holds the lock; the others wait for it */
        static long lock;
        if (me == 0) shmem_set_lock(&lock);
        shmem_barrier_all();
        if (me == 0) wait_static(0);
        shmem_set_lock(&lock);
    }
    fprintf(stderr, "shmem_ft: PE %d: the wait returned (it must not)\n", me);
    return 2;
}

/*
 * ft_perf.c — what failures cost (issue 5, item 9): one run of N ranks under duetrun --ft in
 * which the last rank dies, measuring on every survivor
 *   detect   from the victim's death (the time it stores into every survivor just before its
 *            SIGKILL, CLOCK_MONOTONIC of the one host) to the survivor's barrier returning
 *            DUET_ERR_PEER_FAILED;
 *   revoke   from rank 0's duet_comm_revoke (its time, stored first) to another survivor's
 *            barrier returning DUET_ERR_REVOKED (on a team of the survivors, split before);
 *   agree    one duet_comm_agree on the failed world;
 *   shrink   one duet_comm_shrink of the failed world.
 * Rank 0 prints one CSV line per quantity and survivor: `what,ranks,rank,us`.
 *
 *   duetrun -n 4 --ft build/bin/ft_perf      (bench/ft_bench.sh runs it over rank counts
 *                                            and rounds, and takes the medians)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <duet/duet.h>

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fail(const char *what)
{
    fprintf(stderr, "ft_perf: rank %d: %s: %s\n", duet_my_pe(), what, duet_last_error());
    exit(1);
}

int main(void)
{
    if (duet_init() != DUET_OK) fail("duet_init");
    duet_comm_t W = duet_comm_world();
    int me = duet_my_pe(), n = duet_n_pes(), victim = n - 1;
    if (n < 2) fail("needs 2 ranks or more");
    uint64_t *t = duet_calloc(W, 2, sizeof(uint64_t)); /* [0]: the death, [1]: the revoke */
    double *us = duet_calloc(W, 4 * (size_t)n, sizeof(double)); /* rank 0 gathers here */
    if (!t || !us) fail("duet_calloc");
    duet_comm_t team; /* the survivors, for the revoke and to gather the numbers */
    if (duet_comm_split(W, me == victim ? DUET_COLOR_UNDEFINED : 0, me, &team) != DUET_OK) fail("split");
    if (duet_barrier(W) != DUET_OK) fail("barrier");
    if (me == victim) {
        usleep(20000); /* the others wait in the barrier by now */
        uint64_t now = mono_ns();
        for (int pe = 0; pe < n; pe++) duet_put(W, &t[0], &now, sizeof now, pe);
        duet_quiet(W);
        kill(getpid(), SIGKILL);
    }
    double mine[4];
    duet_status_t st = duet_barrier(W);
    if (st != DUET_ERR_PEER_FAILED) fail("barrier (detect)");
    mine[0] = (double)(mono_ns() - t[0]) / 1e3;
    /* revoke: rank 0 revokes the survivors' team while the others wait in its barrier */
    if (duet_barrier(team) != DUET_OK) fail("team barrier");
    if (me == 0) {
        usleep(20000);
        uint64_t now = mono_ns();
        for (int pe = 0; pe < n - 1; pe++) duet_put(team, &t[1], &now, sizeof now, pe);
        duet_quiet(team);
        if (duet_comm_revoke(team) != DUET_OK) fail("revoke");
        mine[1] = 0;
    } else {
        if (duet_barrier(team) != DUET_ERR_REVOKED) fail("team barrier (revoke)");
        mine[1] = (double)(mono_ns() - t[1]) / 1e3;
    }
    int flag = 1;
    uint64_t t0 = mono_ns();
    if (duet_comm_agree(W, &flag) != DUET_OK) fail("agree");
    mine[2] = (double)(mono_ns() - t0) / 1e3;
    duet_comm_t S;
    t0 = mono_ns();
    if (duet_comm_shrink(W, &S) != DUET_OK) fail("shrink");
    mine[3] = (double)(mono_ns() - t0) / 1e3;
    /* every survivor's numbers to rank 0, over the shrunk communicator */
    for (int k = 0; k < 4; k++)
        if (duet_put(S, &us[4 * me + k], &mine[k], sizeof mine[k], 0) != DUET_OK) fail("put");
    if (duet_barrier(S) != DUET_OK) fail("barrier on the shrunk communicator");
    if (me == 0) {
        static const char *what[4] = {"detect", "revoke", "agree", "shrink"};
        for (int r = 0; r < n - 1; r++)
            for (int k = 0; k < 4; k++)
                if (!(k == 1 && r == 0)) printf("%s,%d,%d,%.2f\n", what[k], n, r, us[4 * r + k]);
    }
    duet_comm_destroy(S);
    duet_comm_destroy(team);
    duet_finalize();
    return 0;
}

/*
 * test_ft_detect.c — a rank really dies (SIGKILL) and the survivors find out, within a bound,
 * from every kind of wait (label ft; run under `duetrun --ft`, which lets them go on).
 *
 *   test_ft_detect SCENARIO [seed]
 *
 * Scenarios (the victim is the last rank unless said otherwise):
 *   allreduce   the ranks run verified allreduces; the victim kills itself at a scripted call
 *   random      a mixed loop (allreduce, barrier, put + quiet, broadcast), the victim killed at
 *               a random iteration (from the seed), rank 0 the victim when the seed is odd
 *   barrier     the survivors are in duet_barrier when the victim dies
 *   signal      the survivors wait (duet_signal_wait_until) for a signal the victim never sends
 *   group       the survivors are in duet_group_end of two allreduces
 *   puts        a storm of put_nbi to every rank (quiet every 64); the victim dies in it: the
 *               first put to it returns DUET_ERR_PEER_FAILED (puts to the live ranks still
 *               work), and duet_comm_status says so from then on
 *   sigstop     no death: rank 0 stops rank 1 with SIGSTOP for 0.3 s in the middle of the
 *               loop, then SIGCONT; nobody may see a failure (a stopped rank is alive)
 *   cut         across namespace hosts (tests/net, one rank per host): as barrier, but the
 *               victim first takes its host's link down (ip link set $DUETNET_IFACE down), so
 *               its death reaches nobody: the survivors must see it by the heartbeat's
 *               silence (DUET_FT_NET_TIMEOUT, docs/NETWORK.md 2.10)
 * Before dying, the victim stores the time (CLOCK_MONOTONIC, one host) into every survivor's
 * symmetric word. Each survivor then checks: the call that was waiting returns
 * DUET_ERR_PEER_FAILED with a message naming the victim ("rank V died"), within
 * DETECT_BOUND_S of the death; duet_comm_get_failed gives exactly {V}; a later world call
 * fails the same way at once; and a team of the survivors, split before the death, keeps
 * computing verified allreduces (a communicator without the dead rank sees no error); then the
 * world shrinks to the survivors (their old order) and computes again. Rank 0
 * of the survivors prints the detection latencies ("test_ft_detect: detected in X ms").
 */
#include "duet_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DETECT_BOUND_S 2.0 /* generous for a loaded CI machine; bench/ measures the median */
#define KILL_AT 40         /* the scripted scenarios' victim dies at this iteration */

static int me, npes, victim;
static const char *cut_iface; /* "cut": the victim's network interface, taken down before it dies */
static duet_comm_t W, team;
static uint64_t *death_ns; /* symmetric: the victim's time of death */
static uint64_t *sig;      /* symmetric: the signal the victim never sends */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die_now(void)
{
    uint64_t t = mono_ns();
    for (int pe = 0; pe < npes; pe++)
        if (pe != me) CHECK_OK(duet_put(W, death_ns, &t, sizeof t, pe));
    CHECK_OK(duet_quiet(W));
    fflush(stdout);
    if (cut_iface) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "ip link set dev %s down", cut_iface);
        CHECK(system(cmd) == 0, "%s failed", cmd);
    }
    kill(getpid(), SIGKILL);
    pause();
}

/* One verified allreduce on c of iteration it; returns its status (checks the data when OK). */
static duet_status_t allreduce_step(duet_comm_t c, int it)
{
    int n = duet_comm_size(c), r = duet_comm_rank(c);
    int64_t v[3] = {r + 1, (int64_t)it * (r + 1), 7}, want[3] = {(int64_t)n * (n + 1) / 2,
                                                                  (int64_t)it * n * (n + 1) / 2, 7 * n};
    duet_status_t st = duet_allreduce(v, v, 3, DUET_INT64, DUET_SUM, c, NULL);
    if (st == DUET_OK)
        for (int k = 0; k < 3; k++) CHECK(v[k] == want[k], "allreduce %d: element %d is %lld, want %lld", it, k,
                                          (long long)v[k], (long long)want[k]);
    return st;
}

/* What every survivor checks once the call that waited returned `st`. */
static void check_detected(duet_status_t st, const char *where)
{
    uint64_t now = mono_ns();
    CHECK(st == DUET_ERR_PEER_FAILED, "%s returned %s, want DUET_ERR_PEER_FAILED", where, duet_status_str(st));
    char want[32];
    snprintf(want, sizeof want, "rank %d died", victim);
    CHECK(strstr(duet_last_error(), want) != NULL, "%s: the message does not say \"%s\"", where, want);
    uint64_t t = __atomic_load_n(death_ns, __ATOMIC_ACQUIRE);
    CHECK(t != 0, "%s: failed before the victim said it dies", where);
    double ms = (double)(now - t) * 1e-6;
    CHECK(ms < DETECT_BOUND_S * 1e3, "%s: detected %.1f ms after the death (bound %.0f ms)", where, ms,
          DETECT_BOUND_S * 1e3);
    printf("test_ft_detect: rank %d: %s: detected in %.2f ms\n", me, where, ms);
    int failed[8], nf = -1;
    CHECK_OK(duet_comm_get_failed(W, failed, 8, &nf));
    CHECK(nf == 1 && failed[0] == victim, "duet_comm_get_failed: %d rank(s), first %d; want only %d", nf,
          nf > 0 ? failed[0] : -1, victim);
    /* later calls on the world fail at once, and say why */
    uint64_t t0 = mono_ns();
    CHECK_STATUS(duet_barrier(W), DUET_ERR_PEER_FAILED);
    CHECK((double)(mono_ns() - t0) * 1e-9 < 1.0, "a later barrier took %.3f s to fail",
          (double)(mono_ns() - t0) * 1e-9);
    /* the survivors' team goes on */
    for (int it = 0; it < 20; it++) CHECK_OK(allreduce_step(team, it));
    CHECK_OK(duet_barrier(team));
    int tf = -1;
    CHECK_OK(duet_comm_get_failed(team, NULL, 0, &tf));
    CHECK(tf == 0, "the survivors' team reports %d failed rank(s)", tf);
    /* and the world shrinks to the survivors (across hosts too: a killed host or a cut link),
     * who compute on it in their old order */
    duet_comm_t S = NULL;
    CHECK_OK(duet_comm_shrink(W, &S));
    CHECK(duet_comm_size(S) == npes - 1 && duet_comm_rank(S) == (me < victim ? me : me - 1),
          "the shrunk world: %d ranks, rank %d here (was %d of %d, victim %d)", duet_comm_size(S), duet_comm_rank(S),
          me, npes, victim);
    for (int it = 0; it < 10; it++) CHECK_OK(allreduce_step(S, it));
    CHECK_OK(duet_comm_destroy(S));
}

static void scenario_loop(int kill_at, int mixed, uint64_t seed)
{
    char *buf = duet_malloc(W, 4096);
    CHECK(buf != NULL, "duet_malloc");
    CHECK_OK(duet_barrier(W));
    for (int it = 0;; it++) {
        if (me == victim && it == kill_at) die_now();
        duet_status_t st;
        const char *where = "allreduce";
        switch (mixed ? (int)((seed + (uint64_t)it) % 4) : 0) {
        case 0: st = allreduce_step(W, it); break;
        case 1: st = duet_barrier(W), where = "barrier"; break;
        case 2: {
            char x[64];
            memset(x, it & 0xff, sizeof x);
            st = duet_put(W, buf + 64 * me, x, sizeof x, (me + 1) % npes);
            if (st == DUET_OK) st = duet_quiet(W);
            if (st == DUET_OK) st = duet_barrier(W); /* (the put itself never waits) */
            where = "put + quiet + barrier";
            break;
        }
        default: {
            int64_t v = it;
            st = duet_broadcast(&v, &v, 1, DUET_INT64, it % npes, W, NULL), where = "broadcast";
            if (st == DUET_OK) CHECK(v == it, "broadcast %d gave %lld", it, (long long)v);
        }
        }
        if (st != DUET_OK) {
            check_detected(st, where);
            return;
        }
        CHECK(it < kill_at + 100000, "no failure seen %d iterations after the death", 100000);
    }
}

static void scenario_wait(const char *kind)
{
    CHECK_OK(duet_barrier(W));
    if (me == victim) {
        usleep(50000); /* the others are waiting by now */
        die_now();
    }
    duet_status_t st;
    if (!strcmp(kind, "barrier") || !strcmp(kind, "cut")) {
        st = duet_barrier(W);
    } else if (!strcmp(kind, "signal")) {
        st = duet_signal_wait_until(W, sig, DUET_CMP_GE, 1, NULL);
    } else { /* group */
        int64_t a = me, b = 2 * me;
        CHECK_OK(duet_group_start());
        CHECK_OK(duet_allreduce(&a, &a, 1, DUET_INT64, DUET_SUM, W, NULL));
        CHECK_OK(duet_allreduce(&b, &b, 1, DUET_INT64, DUET_SUM, W, NULL));
        st = duet_group_end();
    }
    check_detected(st, kind);
}

/* Whether every other rank's block in buf (MSG bytes each) holds its first put (rank + 1). */
static int all_arrived(const char *buf, size_t msg)
{
    for (int r = 0; r < npes; r++)
        if (r != me && __atomic_load_n(&buf[(size_t)r * msg], __ATOMIC_ACQUIRE) != (char)(r + 1)) return 0;
    return 1;
}

static void scenario_puts(void)
{
    enum { MSG = 256 };
    char *buf = duet_malloc(W, (size_t)npes * MSG);
    CHECK(buf != NULL, "duet_malloc");
    char x[MSG];
    memset(x, me + 1, sizeof x);
    memset(buf, 0, (size_t)npes * MSG); /* (mine: the others' puts come after the barrier) */
    CHECK_OK(duet_barrier(W));
    for (long i = 0;; i++) {
        /* the victim dies once every other rank's puts have reached it: all have left the barrier
         * (else a slow one could see the death there, before its storm) */
        if (me == victim && i >= 2000 && all_arrived(buf, MSG)) die_now();
        int pe = (int)(i % npes);
        duet_status_t st = duet_put_nbi(W, buf + me * MSG, x, MSG, pe);
        if (st == DUET_OK && i % 64 == 63) st = duet_quiet(W);
        if (st != DUET_OK) {
            CHECK(pe == victim || st == DUET_ERR_PEER_FAILED, "put storm: %s to rank %d", duet_status_str(st), pe);
            CHECK_STATUS(duet_comm_status(W), DUET_ERR_PEER_FAILED);
            check_detected(st, "put storm"); /* reads the message: before the successful puts clear it */
            /* the live ranks are still reachable */
            for (int q = 0; q < npes; q++)
                if (q != victim) CHECK_OK(duet_put(W, buf + me * MSG, x, MSG, q));
            return;
        }
        CHECK(i < 100000000, "no failure seen");
    }
}

static void scenario_sigstop(void)
{
    int pids[64];
    int mine = (int)getpid();
    CHECK(npes <= 64, "at most 64 ranks");
    int *slots = duet_malloc(W, sizeof(int) * 64);
    CHECK(slots != NULL, "duet_malloc");
    CHECK_OK(dt_allgather(W, slots, &mine, sizeof mine));
    memcpy(pids, slots, sizeof(int) * (size_t)npes);
    for (int it = 0; it < 200; it++) {
        if (me == 0 && it == 50) {
            CHECK(kill(pids[1], SIGSTOP) == 0, "SIGSTOP rank 1");
            usleep(300000);
            CHECK(kill(pids[1], SIGCONT) == 0, "SIGCONT rank 1");
        }
        CHECK_OK(allreduce_step(W, it));
    }
    int nf = -1;
    CHECK_OK(duet_comm_get_failed(W, NULL, 0, &nf));
    CHECK(nf == 0, "a stopped rank was declared dead (%d failed)", nf);
    CHECK_OK(duet_barrier(W));
    CHECK_OK(duet_free(W, slots));
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "allreduce";
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    CHECK(npes >= 2, "needs at least 2 ranks");
    uint64_t seed = dt_pick_seed(argc > 2 ? argv[2] : getenv("DUET_TEST_SEED"), (uint64_t)time(NULL));
    death_ns = duet_calloc(W, 2, sizeof(uint64_t));
    CHECK(death_ns != NULL, "duet_calloc");
    sig = death_ns + 1;
    uint64_t *slot = duet_malloc(W, sizeof(uint64_t));
    CHECK(slot != NULL, "duet_malloc");
    CHECK_OK(dt_share_seed(W, slot, &seed));
    victim = !strcmp(scenario, "random") && (seed & 1) ? 0 : npes - 1;
    /* the survivors' team, before anyone dies */
    CHECK_OK(duet_comm_split(W, me == victim ? DUET_COLOR_UNDEFINED : 0, me, &team));
    CHECK((me == victim) == (team == NULL), "the team");
    if (!strcmp(scenario, "allreduce")) scenario_loop(KILL_AT, 0, seed);
    else if (!strcmp(scenario, "random")) scenario_loop((int)(seed % 200), 1, seed);
    else if (!strcmp(scenario, "barrier") || !strcmp(scenario, "signal") || !strcmp(scenario, "group"))
        scenario_wait(scenario);
    else if (!strcmp(scenario, "cut")) {
        cut_iface = getenv("DUETNET_IFACE"); /* set by tests/net/netns.sh in each host */
        CHECK(cut_iface && *cut_iface, "cut: DUETNET_IFACE is not set (run it under tests/net/netns.sh)");
        scenario_wait(scenario);
    }
    else if (!strcmp(scenario, "sigstop")) scenario_sigstop();
    else if (!strcmp(scenario, "puts")) scenario_puts();
    else FATAL("unknown scenario %s", scenario);
    if (team) CHECK_OK(duet_comm_destroy(team));
    duet_status_t fst = duet_finalize();
    if (!strcmp(scenario, "sigstop")) CHECK(fst == DUET_OK, "duet_finalize: %s", duet_status_str(fst));
    int rc = dt_finish();
    if (rc == 0 && me == (victim == 0 ? 1 : 0)) printf("test_ft_detect: %s: passed\n", scenario);
    return rc;
}

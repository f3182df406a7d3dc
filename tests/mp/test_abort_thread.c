/*
 * test_abort_thread.c — a communicator taken down from another thread while calls run on it,
 * as PyTorch's watchdog does with ncclCommAbort (calls in flight: duet_comm_enter in
 * src/core/duet_comm.h, util's duet_inflight_*). Run by every rank under duetrun.
 *
 * Each round makes a team (a split of the world holding every rank). On it the main thread
 * loops calls on host buffers — allreduces of 1 to 65,536 int64 (the latency lane, the
 * executor; checked element by element against the reference), broadcasts, barriers, groups
 * of two allreduces (their work runs in duet_group_end), and
 * one-sided calls through the team (a put into the right neighbour's slot of mine in a
 * world-allocated symmetric array, a quiet, a get of it back, compared) — until one fails. A second thread, the watchdog, takes the team down meanwhile:
 *   - on the round's aborting rank (round % n), after 2-60 ms (random, so the abort meets
 *     every stage of a call), it revokes the team and destroys it at once;
 *   - on the others it polls duet_comm_status until the team is revoked (as a watchdog polls
 *     ncclCommGetAsyncError), then destroys it, the main thread still calling.
 * Checks on every rank: duet_comm_destroy returns DUET_OK from the watchdog, within 10 s of
 * the revoke; every call that returned DUET_OK had the right result; the main thread's first
 * failing call returned DUET_ERR_REVOKED (revoked, or "being destroyed" at entry) or
 * DUET_ERR_INVALID_ARG "not a live communicator" (the handle already freed), never anything
 * else; after it the main thread makes no more calls on the team. Under ASan (make asan) a
 * use of the freed team would be reported. The world is still sound after every round.
 *
 * Usage: test_abort_thread [rounds] [seed]
 */
#include "duet_test.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXN 65536

static int me, np;
static uint64_t seed;
static int64_t *slots; /* symmetric (the world's heap, which the teams share): np each */

typedef struct {
    duet_comm_t team;
    int round, aborter, delay_ms;
    duet_status_t destroy_st;
    double revoke_to_destroyed;  /* seconds, on the aborting rank from its revoke */
    char destroy_msg[256];
} watch_t;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *watchdog(void *arg)
{
    watch_t *w = arg;
    double t0;
    if (me == w->aborter) {
        sleep_ms(w->delay_ms);
        t0 = now_s();
        duet_status_t st = duet_comm_revoke(w->team);
        if (st != DUET_OK) FAIL("round %d: duet_comm_revoke returned %s: %s", w->round, duet_status_str(st),
                                duet_last_error());
    } else {
        /* until the team is revoked (the aborting rank's revoke reaches us) */
        for (;;) {
            duet_status_t st = duet_comm_status(w->team);
            if (st == DUET_ERR_REVOKED) break;
            if (st != DUET_OK) {
                FAIL("round %d: duet_comm_status returned %s, want DUET_OK or DUET_ERR_REVOKED: %s", w->round,
                     duet_status_str(st), duet_last_error());
                break;
            }
            sleep_ms(1);
        }
        t0 = now_s();
    }
    w->destroy_st = duet_comm_destroy(w->team);
    w->revoke_to_destroyed = now_s() - t0;
    snprintf(w->destroy_msg, sizeof w->destroy_msg, "%s", duet_last_error());
    return NULL;
}

/* The main thread's calls until one fails; returns the calls that succeeded. */
static long call_loop(duet_comm_t team, int round, uint64_t *rng, int64_t *in, int64_t *out, duet_status_t *failed,
                      char *msg, size_t len)
{
    long ok = 0;
    for (uint64_t k = 0;; k++) {
        uint64_t r = mix(*rng += 0x9e3779b97f4a7c15ull);
        int what = (int)(r % 10);
        duet_status_t st;
        size_t n = 1;
        if (what < 6) { /* an allreduce: small sizes most often (the lane), some large */
            n = what < 3 ? 1 + (size_t)(r >> 8) % 6 : 1 + (size_t)(r >> 8) % MAXN;
            for (size_t i = 0; i < n; i++) in[i] = (int64_t)(me + 1) * (int64_t)(i + 1) + (int64_t)k;
            st = duet_allreduce(in, out, n, DUET_INT64, DUET_SUM, team, NULL);
            if (st == DUET_OK) {
                int64_t ranks = (int64_t)np * (np + 1) / 2;
                for (size_t i = 0; i < n; i++) {
                    int64_t want = ranks * (int64_t)(i + 1) + (int64_t)np * (int64_t)k;
                    if (out[i] != want) {
                        FAIL("round %d: allreduce %llu of %zu int64: element %zu is %lld, want %lld", round,
                             (unsigned long long)k, n, i, (long long)out[i], (long long)want);
                        break;
                    }
                }
            }
        } else if (what == 6) {
            int root = (int)(k % (uint64_t)np);
            n = 1 + (size_t)(r >> 8) % 4096;
            for (size_t i = 0; i < n; i++) out[i] = me == root ? (int64_t)(i * 7 + k) : -1;
            st = duet_broadcast(out, out, n, DUET_INT64, root, team, NULL);
            for (size_t i = 0; st == DUET_OK && i < n; i++)
                if (out[i] != (int64_t)(i * 7 + k)) {
                    FAIL("round %d: broadcast %llu from %d: element %zu is %lld", round, (unsigned long long)k, root,
                         i, (long long)out[i]);
                    break;
                }
        } else if (what == 7) {
            st = duet_barrier(team);
        } else if (what == 8) { /* a group of two allreduces: its work runs in duet_group_end */
            int64_t a = me + 1, b = 2 * (me + 1), sa = 0, sb = 0;
            CHECK_OK(duet_group_start());
            duet_status_t q1 = duet_allreduce(&a, &sa, 1, DUET_INT64, DUET_SUM, team, NULL);
            duet_status_t q2 = duet_allreduce(&b, &sb, 1, DUET_INT64, DUET_SUM, team, NULL);
            st = duet_group_end();
            if (!st) st = q1 ? q1 : q2;
            int64_t want = (int64_t)np * (np + 1) / 2;
            if (st == DUET_OK && (sa != want || sb != 2 * want))
                FAIL("round %d: grouped allreduces gave %lld and %lld, want %lld and %lld", round, (long long)sa,
                     (long long)sb, (long long)want, (long long)(2 * want));
        } else { /* one-sided: my slot on my right neighbour, then read back */
            int right = (me + 1) % np;
            int64_t v = (int64_t)(k * 1000 + (uint64_t)me), back = -1;
            st = duet_put(team, &slots[me], &v, sizeof v, right);
            if (st == DUET_OK) st = duet_quiet(team);
            if (st == DUET_OK) st = duet_get(team, &back, &slots[me], sizeof back, right);
            if (st == DUET_OK && back != v)
                FAIL("round %d: put %lld into rank %d, got back %lld", round, (long long)v, right, (long long)back);
        }
        if (st != DUET_OK) {
            *failed = st;
            snprintf(msg, len, "%s", duet_last_error());
            return ok;
        }
        ok++;
    }
}

int main(int argc, char **argv)
{
    CHECK_OK(duet_init());
    duet_comm_t W = dt_world(&me, &np);
    int rounds = argc > 1 ? atoi(argv[1]) : 24;
    uint64_t *sym = duet_malloc(W, sizeof *sym);
    CHECK(sym, "duet_malloc: %s", duet_last_error());
    seed = dt_pick_seed(argc > 2 ? argv[2] : getenv("DUET_TEST_SEED"), (uint64_t)time(NULL));
    CHECK_OK(dt_share_seed(W, sym, &seed));
    slots = duet_malloc(W, sizeof(int64_t) * (size_t)np);
    CHECK(slots, "duet_malloc: %s", duet_last_error());
    int64_t *in = malloc(sizeof(int64_t) * MAXN), *out = malloc(sizeof(int64_t) * MAXN);
    CHECK(in && out, "out of host memory");
    long calls = 0;
    double worst = 0;
    for (int round = 0; round < rounds; round++) {
        duet_comm_t team = NULL;
        CHECK_OK(duet_comm_split(W, 0, me, &team));
        watch_t w = {team, round, round % np, 2 + (int)(mix(seed + (uint64_t)round) % 59), DUET_OK, 0, ""};
        pthread_t tid;
        CHECK(pthread_create(&tid, NULL, watchdog, &w) == 0, "pthread_create");
        uint64_t rng = seed * 31 + (uint64_t)round * 1000; /* the same calls on every rank */
        duet_status_t failed = DUET_OK;
        char msg[512];
        calls += call_loop(team, round, &rng, in, out, &failed, msg, sizeof msg);
        /* the first failing call: revoked, or refused at entry while or after the team went */
        int gone = failed == DUET_ERR_INVALID_ARG && strstr(msg, "not a live communicator");
        EXPECT(failed == DUET_ERR_REVOKED || gone, "round %d: the main thread's failing call returned %s, want "
               "DUET_ERR_REVOKED or DUET_ERR_INVALID_ARG (not a live communicator): %s", round,
               duet_status_str(failed), msg);
        pthread_join(tid, NULL);
        EXPECT(w.destroy_st == DUET_OK, "round %d: duet_comm_destroy from the watchdog returned %s: %s", round,
               duet_status_str(w.destroy_st), w.destroy_msg);
        EXPECT(w.revoke_to_destroyed < 10.0, "round %d: the team took %.2f s to go after the revoke", round,
               w.revoke_to_destroyed);
        if (w.revoke_to_destroyed > worst) worst = w.revoke_to_destroyed;
        CHECK_OK(duet_barrier(W)); /* the world is sound */
    }
    free(in), free(out);
    if (me == 0)
        printf("test_abort_thread: %d rounds on %d ranks, %ld calls before the aborts, slowest teardown %.3f s\n",
               rounds, np, calls, worst);
    CHECK_OK(duet_free(W, slots));
    CHECK_OK(duet_free(W, sym));
    CHECK_OK(duet_finalize());
    return dt_finish();
}

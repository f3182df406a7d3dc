/*
 * test_errstate.c — (1) a call that succeeds leaves no error behind: after each of a table of
 * successful calls (every collective with counts 0 and 7, in place and not, a group of sends
 * and receives, the one-sided calls, signals, atomics, ordering, heap calls, splits, agree),
 * each made right after a call that failed on purpose, duet_last_status() is DUET_OK and
 * duet_last_error() is "". Before, the failed call's error stayed, and a zero-count broadcast
 * left the UNSUPPORTED of a candidate the tuner had rejected (htree, on one host) even with no
 * failure before it: the "fresh" rows check that.
 * (2) Messages, exactly: one prefix per message ("duet_allreduce: sendbuf is NULL", not
 * "duet_allreduce: duet_allreduce: ..."), and duet_atomic_inc_* / fetch_inc_* name themselves.
 * Any rank count.
 */
#include "duet_test.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int me, npes;
static duet_comm_t W;

/* A call that must fail (a NULL remote address): it sets a last error. */
static void fail_first(void)
{
    char b[8] = {0};
    duet_status_t st = duet_put(W, NULL, b, sizeof b, me);
    CHECK(st == DUET_ERR_INVALID_ARG && duet_last_status() == DUET_ERR_INVALID_ARG && duet_last_error()[0],
          "the deliberate failure: %s", duet_status_str(st));
}

static void clean_after(const char *what, duet_status_t st)
{
    EXPECT(st == DUET_OK, "%s: %s (%s)", what, duet_status_str(st), duet_last_error());
    EXPECT(duet_last_status() == DUET_OK && duet_last_error()[0] == '\0',
           "after a successful %s the last status is %s, the message \"%s\"", what,
           duet_status_str(duet_last_status()), duet_last_error());
}

/* call after a failure; FRESH: with no failure before it */
#define OKAFTER(call) do { fail_first(); clean_after(#call, (call)); } while (0)
#define FRESH(call) clean_after(#call " (fresh)", (call))
#define OKPTR(call, out) do { fail_first(); out = (call); clean_after(#call, (out) ? DUET_OK : duet_last_status()); } while (0)

static void collectives(char *sym)
{
    char *send = sym, *recv = sym + 4096;
    for (int count = 0; count <= 7; count += 7)
        for (int in_place = 0; in_place < 2; in_place++) {
            char *s = in_place ? recv : send;
            dt_set_context(in_place ? "collectives, in place" : "collectives");
            if (count == 0) { /* the original report: no failure before it */
                FRESH(duet_broadcast(s, recv, 0, DUET_INT32, 0, W, NULL));
                FRESH(duet_reduce(s, recv, 0, DUET_INT32, DUET_SUM, 0, W, NULL));
            }
            OKAFTER(duet_allreduce(s, recv, (size_t)count, DUET_INT32, DUET_SUM, W, NULL));
            OKAFTER(duet_allreduce(s, recv, (size_t)count, DUET_FLOAT16, DUET_AVG, W, NULL));
            OKAFTER(duet_broadcast(s, recv, (size_t)count, DUET_INT32, npes - 1, W, NULL));
            OKAFTER(duet_reduce(s, recv, (size_t)count, DUET_FLOAT64, DUET_MAX, 0, W, NULL));
            char *ag = in_place ? recv + (size_t)me * (size_t)count * 4 : send;
            OKAFTER(duet_allgather(ag, recv, (size_t)count, DUET_INT32, W, NULL));
            char *rs = in_place ? send + (size_t)me * (size_t)count * 4 : recv;
            OKAFTER(duet_reduce_scatter(send, rs, (size_t)count, DUET_INT32, DUET_SUM, W, NULL));
            if (!in_place) OKAFTER(duet_alltoall(send, recv, (size_t)count, DUET_INT8, W, NULL));
            if (npes > 1) {
                fail_first();
                duet_status_t st = duet_group_start();
                if (!st) st = duet_send(send, (size_t)count, DUET_INT32, (me + 1) % npes, W, NULL);
                if (!st) st = duet_recv(recv, (size_t)count, DUET_INT32, (me + npes - 1) % npes, W, NULL);
                duet_status_t end = duet_group_end();
                clean_after("a group of a send and a receive", st ? st : end);
            }
        }
}

static void one_sided(char *sym)
{
    dt_set_context("one-sided");
    int pe = (me + 1) % npes;
    char local[64] = {1, 2, 3};
    int iv = 0;
    long lv = 0;
    uint64_t *sig = (uint64_t *)(void *)(sym + 8192);
    OKAFTER(duet_put(W, sym, local, 64, pe));
    OKAFTER(duet_get(W, local, sym, 64, pe));
    OKAFTER(duet_put_nbi(W, sym, local, 64, pe));
    OKAFTER(duet_get_nbi(W, local, sym, 64, pe));
    OKAFTER(duet_iput(W, sym, local, 2, 1, 4, 4, pe));
    OKAFTER(duet_iget(W, local, sym, 1, 2, 4, 4, pe));
    OKAFTER(duet_p_int(W, (int *)(void *)sym, 5, pe));
    OKAFTER(duet_g_int(W, (int *)(void *)sym, pe, &iv));
    OKAFTER(duet_put(W, sym, local, 0, pe));
    OKAFTER(duet_quiet(W));
    OKAFTER(duet_fence(W));
    OKAFTER(duet_barrier(W)); /* nobody touches sym+64.. below before all are here */
    long *lsym = (long *)(void *)(sym + 128);
    OKAFTER(duet_atomic_add_long(W, lsym, 2, pe));
    OKAFTER(duet_atomic_inc_long(W, lsym, pe));
    OKAFTER(duet_atomic_fetch_inc_long(W, lsym, pe, &lv));
    OKAFTER(duet_atomic_fetch_long(W, lsym, pe, &lv));
    OKAFTER(duet_atomic_compare_swap_long(W, lsym, -1, 0, pe, &lv));
    OKAFTER(duet_signal_op(W, sig, 1, DUET_SIGNAL_ADD, pe));
    OKAFTER(duet_put_signal(W, sym + 256, local, 8, sig, 1, DUET_SIGNAL_ADD, pe));
    OKAFTER(duet_quiet(W));
    OKAFTER(duet_barrier(W));
    uint64_t got = 0;
    OKAFTER(duet_signal_wait_until(W, sig, DUET_CMP_GE, 2, &got));
    OKAFTER(duet_signal_fetch(W, sig, &got));
    OKAFTER(duet_sync(W));
    OKAFTER(duet_barrier_all());
}

static void heap_and_comms(void)
{
    dt_set_context("heap and communicators");
    void *p = NULL;
    OKPTR(duet_malloc(W, 1000), p);
    OKAFTER(duet_free(W, p));
    OKPTR(duet_calloc(W, 10, 100), p);
    OKAFTER(duet_free(W, p));
    OKPTR(duet_align(W, 4096, 64), p);
    OKAFTER(duet_free(W, p));
    OKAFTER(duet_free(W, NULL));
    duet_comm_t t = NULL;
    OKAFTER(duet_comm_split(W, 0, npes - me, &t));
    int flag = 1;
    OKAFTER(duet_comm_agree(t, &flag));
    OKAFTER(duet_comm_status(t));
    OKAFTER(duet_comm_destroy(t));
}

/* Messages, word for word. */
static void messages(char *sym)
{
    dt_set_context("messages");
    char want[256];
    int32_t x = 0;
    EXPECT(duet_allreduce(NULL, &x, 1, DUET_INT32, DUET_SUM, W, NULL) == DUET_ERR_INVALID_ARG &&
           !strcmp(duet_last_error(), "duet_allreduce: sendbuf is NULL"), "allreduce: \"%s\"", duet_last_error());
    EXPECT(duet_broadcast(&x, NULL, 1, DUET_INT32, 0, W, NULL) == DUET_ERR_INVALID_ARG &&
           !strcmp(duet_last_error(), "duet_broadcast: recvbuf is NULL"), "broadcast: \"%s\"", duet_last_error());
    long v = 0;
    snprintf(want, sizeof want, "duet_atomic_inc_long: PE -1 is out of range [0, %d)", npes);
    EXPECT(duet_atomic_inc_long(W, (long *)(void *)sym, -1) == DUET_ERR_INVALID_ARG &&
           !strcmp(duet_last_error(), want), "inc: \"%s\", want \"%s\"", duet_last_error(), want);
    snprintf(want, sizeof want, "duet_atomic_fetch_inc_long: PE %d is out of range [0, %d)", npes, npes);
    EXPECT(duet_atomic_fetch_inc_long(W, (long *)(void *)sym, npes, &v) == DUET_ERR_INVALID_ARG &&
           !strcmp(duet_last_error(), want), "fetch_inc: \"%s\", want \"%s\"", duet_last_error(), want);
    snprintf(want, sizeof want, "duet_atomic_inc_int: %p is not aligned to 4 bytes", (void *)(sym + 1));
    EXPECT(duet_atomic_inc_int(W, (int *)(void *)(sym + 1), 0) == DUET_ERR_INVALID_ARG &&
           !strcmp(duet_last_error(), want), "inc, misaligned: \"%s\", want \"%s\"", duet_last_error(), want);
}

int main(void)
{
    setenv("DUET_SYMMETRIC_SIZE", "8M", 1);
    setenv("DUET_DEBUG", "NONE", 0);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    char *sym = duet_calloc(W, 1, 16384);
    CHECK(sym, "calloc");
    FRESH(duet_barrier(W));
    collectives(sym);
    one_sided(sym);
    heap_and_comms();
    messages(sym);
    dt_set_context("finalize");
    CHECK_OK(duet_barrier(W));
    CHECK_OK(duet_free(W, sym));
    OKAFTER(duet_finalize());
    if (me == 0) printf("test_errstate: done\n");
    return dt_finish();
}

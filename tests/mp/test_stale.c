/*
 * test_stale.c — a communicator handle used after duet_comm_destroy (a team) or after
 * duet_finalize (the world) is refused with DUET_ERR_INVALID_ARG and a message, by every kind
 * of call, without reading the freed object: the library looks handles up by address
 * (src/core/duet_comm_live.c) before it dereferences them. Under ASan (make asan) the old
 * check, which read the freed object's magic word, was a heap-use-after-free; without ASan
 * the same reads go unseen, so the ASan run is the one that proves it. Any rank count.
 */
#include "duet_test.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int me, npes;

#define STALE(call)                                                                               \
    do {                                                                                          \
        dt_prime_error();                                                                         \
        duet_status_t st_ = (call);                                                               \
        EXPECT(st_ == DUET_ERR_INVALID_ARG && strstr(duet_last_error(), "not a live communicator"), \
               "%s on a stale handle: %s (%s)", #call, duet_status_str(st_), duet_last_error());  \
    } while (0)
#define STALE_PTR(call)                                                                           \
    do {                                                                                          \
        dt_prime_error();                                                                         \
        void *p_ = (void *)(call);                                                                \
        EXPECT(p_ == NULL && strstr(duet_last_error(), "not a live communicator"),                \
               "%s on a stale handle: %p (%s)", #call, p_, duet_last_error());                    \
    } while (0)

/* Every family of call, on a handle that is no longer alive. */
static void stale_calls(duet_comm_t c, void *sym)
{
    char local[64] = {0};
    int32_t v = 0;
    long l = 0;
    int flag = 1, nf = 0;
    duet_comm_t out = NULL;
    EXPECT(duet_comm_rank(c) == -1 && duet_comm_size(c) == -1, "rank/size of a stale handle");
    STALE(duet_put(c, sym, local, 8, 0));
    STALE(duet_get(c, local, sym, 8, 0));
    STALE(duet_put_nbi(c, sym, local, 8, 0));
    STALE(duet_iput(c, sym, local, 1, 1, 2, 4, 0));
    STALE(duet_p_int(c, sym, 1, 0));
    STALE(duet_g_int(c, sym, 0, &v));
    STALE(duet_atomic_fetch_add_long(c, sym, 1, 0, &l));
    STALE(duet_atomic_inc_long(c, sym, 0));
    STALE(duet_signal_op(c, sym, 1, DUET_SIGNAL_ADD, 0));
    STALE(duet_put_signal(c, sym, local, 8, (uint64_t *)sym + 1, 1, DUET_SIGNAL_SET, 0));
    STALE(duet_fence(c));
    STALE(duet_quiet(c));
    STALE(duet_barrier(c));
    STALE(duet_sync(c));
    STALE(duet_allreduce(local, local + 32, 4, DUET_INT32, DUET_SUM, c, NULL));
    STALE(duet_allreduce(local, local + 32, 4, DUET_INT32, DUET_SUM, c, NULL)); /* the lane's fast path */
    STALE(duet_broadcast(local, local, 4, DUET_INT8, 0, c, NULL));
    STALE(duet_alltoall(local, local + 32, 1, DUET_INT8, c, NULL));
    STALE_PTR(duet_malloc(c, 64));
    STALE_PTR(duet_calloc(c, 1, 64));
    STALE(duet_free(c, NULL));
    STALE(duet_free(c, sym));
    STALE(duet_comm_split(c, 0, 0, &out));
    STALE(duet_comm_revoke(c));
    STALE(duet_comm_agree(c, &flag));
    STALE(duet_comm_status(c));
    STALE(duet_comm_get_failed(c, NULL, 0, &nf));
    STALE(duet_comm_shrink(c, &out));
    STALE(duet_comm_destroy(c));
    EXPECT(duet_ptr(c, sym, 0) == NULL && duet_addr_accessible(c, sym, 0) == 0, "duet_ptr on a stale handle");
}

int main(void)
{
    setenv("DUET_SYMMETRIC_SIZE", "8M", 1);
    setenv("DUET_DEBUG", "NONE", 0);
    CHECK_OK(duet_init());
    duet_comm_t w = dt_world(&me, &npes);
    uint64_t *sym = duet_calloc(w, 8, sizeof(uint64_t));
    CHECK(sym, "calloc");
    /* a team, used once, destroyed, then used again */
    duet_comm_t team = NULL;
    CHECK_OK(duet_comm_split(w, 0, me, &team));
    int32_t one = 1, n = 0;
    CHECK_OK(duet_allreduce(&one, &n, 1, DUET_INT32, DUET_SUM, team, NULL)); /* the lane remembers it */
    CHECK(n == npes, "team allreduce %d", n);
    CHECK_OK(duet_comm_destroy(team));
    dt_set_context("destroyed team");
    stale_calls(team, sym);
    dt_set_context("world");
    CHECK_OK(duet_barrier(w)); /* the world is unaffected */
    CHECK_OK(duet_free(w, sym));
    CHECK_OK(duet_finalize());
    dt_set_context("after finalize");
    stale_calls(w, sym);
    if (me == 0) printf("test_stale: stale handles refused\n");
    return dt_finish();
}

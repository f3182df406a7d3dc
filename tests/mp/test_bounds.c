/*
 * test_bounds.c — the bounds-checking mode. `test_bounds on` runs with DUET_CHECK_BOUNDS=1,
 * `test_bounds off` without it (the default). Blocks: a = malloc(100), b = malloc(64) right
 * after it, and a freed block f. Every one-sided family (put, get, nbi, strided, p, atomics,
 * signal_op, put_signal, wait_until) is tried on
 *   - ranges inside a: accepted in both modes;
 *   - ranges past a's end by one byte, or running from a into b: refused in the mode with
 *     DUET_ERR_INVALID_ARG and a message giving the address, the length, the block and the
 *     overrun (checked word for word once); accepted without it (only the whole heap is
 *     checked, as duet.h says);
 *   - ranges in the freed block f: refused in the mode, accepted without it.
 * Before the mode existed, the "on" run accepted every overrun. Any rank count.
 */
#include "duet_test.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int me, npes, on;
static duet_comm_t W;

/* The call must succeed (inside, or the mode off) or be refused by the mode. */
static void expect(const char *what, duet_status_t st, int refused)
{
    if (refused && on)
        EXPECT(st == DUET_ERR_INVALID_ARG && strstr(duet_last_error(), "DUET_CHECK_BOUNDS=1"),
               "%s: %s (%s), want the mode's refusal", what, duet_status_str(st), duet_last_error());
    else
        EXPECT(st == DUET_OK, "%s: %s (%s), want DUET_OK", what, duet_status_str(st), duet_last_error());
}
#define INSIDE(call) expect(#call, (call), 0)
#define OUTSIDE(call) expect(#call, (call), 1)

int main(int argc, char **argv)
{
    on = argc > 1 && !strcmp(argv[1], "on");
    setenv("DUET_CHECK_BOUNDS", on ? "1" : "0", 1);
    setenv("DUET_SYMMETRIC_SIZE", "8M", 1);
    setenv("DUET_DEBUG", "NONE", 0);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    char *a = duet_malloc(W, 100), *b = duet_malloc(W, 64), *f = duet_malloc(W, 256);
    uint64_t *sig = duet_calloc(W, 4, sizeof *sig);
    CHECK(a && b && f && sig, "malloc: %s", duet_last_error());
    CHECK(b >= a + 100, "b lies after a");
    CHECK_OK(duet_free(W, f));
    int pe = (me + 1) % npes;
    char local[512];
    memset(local, 7, sizeof local);
    long lv = 0;
    int iv = 0;

    dt_set_context("inside a block");
    INSIDE(duet_put(W, a, local, 100, pe));
    INSIDE(duet_put(W, a + 50, local, 50, pe));
    INSIDE(duet_get(W, local, a, 100, pe));
    INSIDE(duet_put_nbi(W, a + 99, local, 1, pe));
    INSIDE(duet_get_nbi(W, local, a, 64, pe));
    INSIDE(duet_iput(W, a, local, 2, 1, 13, 4, pe)); /* every 8 bytes: the last element at a + 96 .. 100 */
    INSIDE(duet_p_int(W, (int *)(void *)(a + 96), 1, pe));
    INSIDE(duet_g_int(W, (int *)(void *)(a + 96), pe, &iv));
    INSIDE(duet_atomic_fetch_add_long(W, (long *)(void *)(a + 88), 1, pe, &lv));
    INSIDE(duet_signal_op(W, sig, 1, DUET_SIGNAL_ADD, pe));
    INSIDE(duet_put_signal(W, a, local, 100, sig, 1, DUET_SIGNAL_ADD, pe));
    INSIDE(duet_put(W, b, local, 64, pe));
    INSIDE(duet_quiet(W));

    dt_set_context("past the block's end");
    OUTSIDE(duet_put(W, a, local, 101, pe));
    if (on) { /* the message, word for word */
        char want[300];
        snprintf(want, sizeof want, "duet_put: the remote address %p (+101 bytes) overruns its allocation [%p, +100 "
                 "bytes) by 1 bytes (DUET_CHECK_BOUNDS=1)", (void *)a, (void *)a);
        EXPECT(!strcmp(duet_last_error(), want), "message \"%s\", want \"%s\"", duet_last_error(), want);
    }
    OUTSIDE(duet_put(W, a + 64, local, 128, pe)); /* into b */
    OUTSIDE(duet_get(W, local, a + 1, 100, pe));
    OUTSIDE(duet_put_nbi(W, a + 100, local, 1, pe));
    OUTSIDE(duet_get_nbi(W, local, a + 90, 11, pe));
    OUTSIDE(duet_iput(W, a + 4, local, 2, 1, 13, 4, pe)); /* the last element at a + 100 */
    OUTSIDE(duet_p_int(W, (int *)(void *)(a + 100), 1, pe));
    OUTSIDE(duet_g_int(W, (int *)(void *)(a + 100), pe, &iv));
    OUTSIDE(duet_atomic_fetch_add_long(W, (long *)(void *)(a + 96), 1, pe, &lv));
    OUTSIDE(duet_atomic_inc_long(W, (long *)(void *)(a + 96), pe));
    OUTSIDE(duet_signal_op(W, (uint64_t *)(void *)(a + 96), 1, DUET_SIGNAL_ADD, pe));
    OUTSIDE(duet_put_signal(W, a, local, 101, sig, 1, DUET_SIGNAL_ADD, pe));
    OUTSIDE(duet_put_signal(W, b, local, 8, (uint64_t *)(void *)(a + 96), 1, DUET_SIGNAL_ADD, pe));
    INSIDE(duet_quiet(W));

    dt_set_context("a freed block");
    OUTSIDE(duet_put(W, f, local, 8, pe));
    OUTSIDE(duet_get(W, local, f + 64, 8, pe));
    OUTSIDE(duet_atomic_inc_long(W, (long *)(void *)f, pe));
    if (on) EXPECT(strstr(duet_last_error(), "is in no live allocation"), "message \"%s\"", duet_last_error());
    INSIDE(duet_quiet(W));

    dt_set_context("finalize");
    CHECK_OK(duet_barrier(W)); /* nobody writes into a, b or sig any more */
    CHECK_OK(duet_free(W, sig));
    CHECK_OK(duet_free(W, b));
    CHECK_OK(duet_free(W, a));
    CHECK_OK(duet_finalize());
    if (me == 0) printf("test_bounds %s: done\n", on ? "on" : "off");
    return dt_finish();
}

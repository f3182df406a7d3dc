/*
 * ring_check EXPECTED_NRANKS [LAUNCHER]: a rank started by any launcher joins the world,
 * checks its size (and which launcher duet_init detected, if named), passes its rank
 * around a ring with put + barrier, and checks what it got. Exit 0 on success.
 */
#include "duet_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int expected = argc > 1 ? atoi(argv[1]) : 0, me, n;
    CHECK_OK(duet_init());
    duet_comm_t w = dt_world(&me, &n);
    CHECK(n == expected, "sees %d ranks, expected %d", n, expected);
    int *box = duet_calloc(w, 1, sizeof(int));
    CHECK(box, "duet_calloc");
    CHECK_OK(duet_p_int(w, box, 1000 + me, (me + 1) % n));
    CHECK_OK(duet_barrier_all());
    int want = 1000 + (me - 1 + n) % n;
    CHECK(*box == want, "got %d, expected %d", *box, want);
    CHECK_OK(duet_free(w, box));
    CHECK_OK(duet_finalize());
    return 0;
}

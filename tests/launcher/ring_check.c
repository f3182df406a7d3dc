/*
 * ring_check EXPECTED_NRANKS [LAUNCHER]: a rank started by any launcher joins the world,
 * checks its size (and which launcher duet_init detected, if named), passes its rank
 * around a ring with put + barrier, and checks what it got. Exit 0 on success.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "duet/duet.h"

#define CHECK(call)                                                                             \
    do {                                                                                        \
        duet_status_t st_ = (call);                                                             \
        if (st_ != DUET_OK) {                                                                   \
            fprintf(stderr, "ring_check: %s: %s: %s\n", #call, duet_status_str(st_), duet_last_error()); \
            return 1;                                                                           \
        }                                                                                       \
    } while (0)

int main(int argc, char **argv)
{
    int expected = argc > 1 ? atoi(argv[1]) : 0;
    CHECK(duet_init());
    duet_comm_t w = duet_comm_world();
    int me = duet_my_pe(), n = duet_n_pes();
    if (n != expected) {
        fprintf(stderr, "ring_check: rank %d sees %d ranks, expected %d\n", me, n, expected);
        return 1;
    }
    int *box = duet_calloc(w, 1, sizeof(int));
    if (!box) {
        fprintf(stderr, "ring_check: duet_calloc: %s\n", duet_last_error());
        return 1;
    }
    CHECK(duet_p_int(w, box, 1000 + me, (me + 1) % n));
    CHECK(duet_barrier_all());
    int want = 1000 + (me - 1 + n) % n;
    if (*box != want) {
        fprintf(stderr, "ring_check: rank %d got %d, expected %d\n", me, *box, want);
        return 1;
    }
    CHECK(duet_free(w, box));
    CHECK(duet_finalize());
    return 0;
}

/*
 * boot_cycles CYCLES NRANKS ADDR: a rank started by any launcher runs CYCLES rounds of
 * duet_init, a checked allreduce and put, a split and a shrink of the world, duet_finalize
 * (issue 18 item 11: re-init after finalize). On rank 0 every listener the library opened
 * (the world's, the split's, the shrink's) must be bound to ADDR (dotted IPv4; item 2: never
 * 0.0.0.0), as getsockname says (duet_boot_last_bound). Exit 0 on success.
 */
#include "duet_test.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "boot/duet_boot.h" /* duet_boot_last_bound */

static void check_bound(int me, const char *want, const char *what, int cycle)
{
    if (me != 0) return;
    uint32_t a;
    uint16_t p;
    duet_boot_last_bound(&a, &p);
    struct in_addr ia = {a};
    CHECK(a != 0 && p != 0, "cycle %d, %s: no listener noted (or bound to 0.0.0.0:%u)", cycle, what, ntohs(p));
    CHECK(!strcmp(inet_ntoa(ia), want), "cycle %d, %s: the listener is bound to %s, expected %s", cycle, what,
          inet_ntoa(ia), want);
}

int main(int argc, char **argv)
{
    CHECK(argc == 4, "usage: boot_cycles CYCLES NRANKS ADDR");
    int cycles = atoi(argv[1]), expected = atoi(argv[2]);
    const char *addr = argv[3];
    for (int cycle = 0; cycle < cycles; cycle++) {
        int me, n;
        CHECK_STATUS(duet_init(), DUET_OK);
        duet_comm_t w = dt_world(&me, &n);
        CHECK(n == expected, "cycle %d: sees %d ranks, expected %d", cycle, n, expected);
        check_bound(me, addr, "the world", cycle);
        /* allreduce: sum of (rank + 1) * (i + cycle) */
        int64_t in[5], out[5];
        for (int i = 0; i < 5; i++) in[i] = (int64_t)(me + 1) * (i + cycle), out[i] = -1;
        CHECK_OK(duet_allreduce(in, out, 5, DUET_INT64, DUET_SUM, w, NULL));
        for (int i = 0; i < 5; i++)
            CHECK(out[i] == (int64_t)n * (n + 1) / 2 * (i + cycle), "cycle %d: allreduce[%d] = %lld", cycle, i,
                  (long long)out[i]);
        /* put: each rank writes into its right neighbour's box */
        int *box = duet_calloc(w, 1, sizeof(int));
        CHECK(box, "duet_calloc");
        int v = 100 * cycle + me;
        CHECK_OK(duet_put(w, box, &v, sizeof v, (me + 1) % n));
        CHECK_OK(duet_barrier_all());
        CHECK(*box == 100 * cycle + (me - 1 + n) % n, "cycle %d: put delivered %d", cycle, *box);
        CHECK_OK(duet_free(w, box));
        /* a split and a shrink: their roots listen too */
        duet_comm_t t, s;
        CHECK_OK(duet_comm_split(w, 0, me, &t));
        check_bound(me, addr, "a split", cycle);
        CHECK(duet_comm_size(t) == n, "cycle %d: split of %d ranks", cycle, duet_comm_size(t));
        CHECK_OK(duet_comm_shrink(w, &s));
        check_bound(me, addr, "a shrink", cycle);
        CHECK(duet_comm_size(s) == n, "cycle %d: shrink kept %d of %d ranks", cycle, duet_comm_size(s), n);
        CHECK_OK(duet_comm_destroy(s));
        CHECK_OK(duet_comm_destroy(t));
        CHECK_OK(duet_finalize());
    }
    return 0;
}

/* consumer.c — a program built against an installed Duet (tests/tools/install.sh): an
 * allreduce over the world and a put around the ring, each checked. Prints "consumer: ok"
 * on rank 0; exits 1 on a wrong result or a failed call. */
#include <duet/duet.h>
#include <stdint.h>
#include <stdio.h>

#define N 1000

int main(void)
{
    if (duet_init() != DUET_OK) {
        fprintf(stderr, "consumer: duet_init: %s\n", duet_last_error());
        return 1;
    }
    duet_comm_t w = duet_comm_world();
    int me = duet_my_pe(), n = duet_n_pes(), bad = 0;
    int32_t in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = i + me;
    if (duet_allreduce(in, out, N, DUET_INT32, DUET_SUM, w, NULL) != DUET_OK) bad++;
    for (int i = 0; i < N; i++)
        if (out[i] != n * i + n * (n - 1) / 2) bad++;
    int64_t *slot = duet_malloc(w, sizeof *slot);
    if (!slot) bad++;
    int64_t mine = 100 + me;
    if (slot && (duet_put(w, slot, &mine, sizeof mine, (me + 1) % n) != DUET_OK || duet_barrier(w) != DUET_OK)) bad++;
    if (slot && *slot != 100 + (me + n - 1) % n) bad++;
    if (slot) duet_free(w, slot);
    if (bad) fprintf(stderr, "consumer: rank %d: %d wrong (%s)\n", me, bad, duet_last_error());
    else if (me == 0) printf("consumer: ok (%d ranks)\n", n);
    duet_finalize();
    return bad ? 1 : 0;
}

/*
 * bench/sig_cost.c — what a call signature adds to a latency-lane allreduce, alone (issue 18,
 * item 5): the hash of the call's arguments, the publication of the call
 * (src/coll/duet_coll_sig.h) and the seq word, on one core, no peer. The end-to-end difference
 * is below the 2-core machine's noise; this bounds it.
 *
 *   build/bin/sig_cost    -> "hash + publish + seq word: X ns of CPU time per call (best of 7 x N)"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "coll/duet_coll_sig.h"

static uint64_t cpu_ns(void) /* this thread's CPU time: the machine's load does not inflate it */
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(void)
{
    static struct duet_comm c;
    static duet_coll_chan_t ch;
    char *block = aligned_alloc(64, 1 << 16);
    if (!block) return 1;
    memset(block, 0, 1 << 16);
    char *pb[1] = {block};
    ch.peer_block = pb;
    ch.sig_off = 4096;
    ch.sig_mine = (duet_coll_sig_line_t *)(void *)(block + ch.sig_off);
    c.chan = &ch;
    volatile size_t count = 2; /* not a constant: the hash is computed every call */
    uint32_t sink = 0;
    const long n = 100000000;
    double best = 1e9;
    for (int rep = 0; rep < 7; rep++) {
        uint64_t t0 = cpu_ns();
        for (long i = 1; i <= n; i++) {
            duet_coll_sig_args_t a = {(uint64_t)i, count, 0, DUET_COLL_ALLREDUCE, DUET_FLOAT32, DUET_SUM, 0, 0};
            a.hash = duet_coll_sig_hash(DUET_COLL_ALLREDUCE, count, DUET_FLOAT32, DUET_SUM, 0);
            duet_coll_sig_publish(&c, (uint64_t)i, &a);
            sink ^= (uint32_t)duet_chan_seq(a.hash, (uint64_t)i);
        }
        double ns = (double)(cpu_ns() - t0) / (double)n;
        if (ns < best) best = ns;
    }
    printf("hash + publish + seq word: %.2f ns of CPU time per call (best of 7 x %ld)%s\n", best, n,
           sink == 1 ? " " : "");
    free(block);
    return 0;
}

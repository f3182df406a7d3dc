/*
 * test_recv_stable.c — the promise behind sends by reference (src/coll/duet_coll_chan.h).
 *
 * A schedule with recv_stable set lets its sends from the receive buffer go by reference:
 * the receiver copies straight out of the sender's buffer while the sender goes on. That is
 * safe only if no step of the sender writes those bytes after the send may have run. For
 * every algorithm that sets the flag, every rank's schedule over a matrix of shapes must
 * satisfy, in the receive buffer:
 *   - every byte is written by at most one step;
 *   - a send that reads a byte some step writes can run only after that step (through deps
 *     and the order of a peer's queue), so the write is complete before the send and nothing
 *     writes it later.
 * And the flag must be set where it is expected (broadcast chain / tree, allgather ring / rd /
 * direct) — a builder that dropped it would silently lose the single-copy path.
 *
 * Matrix: ranks 1..9 and 16, counts 1, 7, 1001 of 4-byte elements, chunks 64 B and 128 KiB,
 * in place and out of place, roots 0, 1 and n-1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_tune.h"

static int failures, checked;

static int expects_flag(const duet_coll_algo_t *al)
{
    return al->kind == DUET_COLL_BROADCAST || al->kind == DUET_COLL_ALLGATHER;
}

static int is_message(const duet_step_t *st) { return st->kind >= DUET_STEP_SEND; }
static int same_queue(const duet_step_t *x, const duet_step_t *y)
{
    return is_message(x) && is_message(y) && x->peer == y->peer && (x->kind == DUET_STEP_SEND) == (y->kind == DUET_STEP_SEND);
}

/* 1 when step `anc` must complete before step `i` can run under the executor's rules: it is
 * reached backwards through deps and through the order of a peer's queue (a message step runs
 * after the earlier ones of its queue). `seen` has room for s->nsteps. */
static int depends_on(const duet_sched_t *s, int i, int anc, int *stack, unsigned char *seen)
{
    memset(seen, 0, (size_t)s->nsteps);
    int top = 0;
    stack[top++] = i;
    seen[i] = 1;
    while (top > 0) {
        int x = stack[--top];
        const duet_step_t *st = &s->steps[x];
        int before[2] = {st->dep, -1};
        for (int j = x - 1; j >= 0 && is_message(st); j--) /* the previous step of its queue */
            if (same_queue(&s->steps[j], st)) {
                before[1] = j;
                break;
            }
        for (int k = 0; k < 2; k++) {
            int y = before[k];
            if (y < 0 || seen[y]) continue;
            if (y == anc) return 1;
            seen[y] = 1;
            stack[top++] = y;
        }
    }
    return 0;
}

static int writes_recv(const duet_step_t *st)
{
    return st->kind != DUET_STEP_SEND && st->dst_buf == DUET_BUF_RECV;
}

static void check_rank(const duet_coll_algo_t *al, const duet_coll_args_t *a, const char *shape)
{
    duet_sched_t s;
    duet_sched_init(&s, a->rank, a->nranks, a->elem);
    duet_status_t st = al->build(a, &s);
    if (st == DUET_ERR_UNSUPPORTED) {
        duet_sched_free(&s);
        return;
    }
    if (st) {
        printf("FAIL %s %s: the builder failed: %s\n", al->name, shape, duet_last_error());
        failures++;
        duet_sched_free(&s);
        return;
    }
    checked++;
    if (s.recv_stable != expects_flag(al)) {
        printf("FAIL %s %s: recv_stable is %d, expected %d\n", al->name, shape, s.recv_stable, expects_flag(al));
        failures++;
    }
    if (!s.recv_stable) {
        duet_sched_free(&s);
        return;
    }
    size_t size = a->count * a->elem * (a->kind == DUET_COLL_ALLGATHER ? (size_t)a->nranks : 1);
    int *writer = malloc(sizeof(int) * (size ? size : 1)), *stack = malloc(sizeof(int) * (size_t)s.nsteps + 1);
    unsigned char *seen = malloc((size_t)s.nsteps + 1);
    for (size_t b = 0; b < size; b++) writer[b] = -1;
    for (int i = 0; i < s.nsteps; i++) { /* at most one writer per byte */
        const duet_step_t *w = &s.steps[i];
        if (!writes_recv(w)) continue;
        for (size_t b = w->dst_off; b < w->dst_off + w->bytes && b < size; b++) {
            if (writer[b] >= 0) {
                printf("FAIL %s %s rank %d: receive byte %zu written by steps %d and %d\n", al->name, shape, a->rank,
                       b, writer[b], i);
                failures++;
                goto out;
            }
            writer[b] = i;
        }
    }
    for (int i = 0; i < s.nsteps; i++) { /* a send waits for the writes of what it sends */
        const duet_step_t *snd = &s.steps[i];
        if (snd->kind != DUET_STEP_SEND || snd->src_buf != DUET_BUF_RECV) continue;
        for (size_t b = snd->src_off; b < snd->src_off + snd->bytes && b < size; b++) {
            int w = writer[b];
            if (w >= 0 && (b == snd->src_off || w != writer[b - 1]) && !depends_on(&s, i, w, stack, seen)) {
                printf("FAIL %s %s rank %d: send step %d reads receive byte %zu, which step %d writes "
                       "without the send depending on it\n", al->name, shape, a->rank, i, b, w);
                failures++;
                goto out;
            }
        }
    }
out:
    free(writer), free(stack), free(seen);
    duet_sched_free(&s);
}

int main(void)
{
    const int ranks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16};
    const size_t counts[] = {1, 7, 1001}, chunks[] = {64, 128 << 10};
    for (int ai = 0; ai < duet_coll_nalgos; ai++) {
        const duet_coll_algo_t *al = &duet_coll_algos[ai];
        for (size_t ri = 0; ri < sizeof ranks / sizeof *ranks; ri++)
            for (size_t ci = 0; ci < 3; ci++)
                for (size_t hi = 0; hi < 2; hi++)
                    for (int in_place = 0; in_place < 2; in_place++)
                        for (int root_i = 0; root_i < 3; root_i++) {
                            int n = ranks[ri], roots[3] = {0, 1 % n, n - 1};
                            for (int r = 0; r < n; r++) {
                                duet_coll_args_t a = {al->kind, r, n, roots[root_i], counts[ci], 4, chunks[hi],
                                                      in_place, 0, NULL, 0, 0};
                                char shape[128];
                                snprintf(shape, sizeof shape, "(%s, %d ranks, count %zu, chunk %zu, %s, root %d)",
                                         duet_coll_kind_name(al->kind), n, counts[ci], chunks[hi],
                                         in_place ? "in place" : "out of place", roots[root_i]);
                                check_rank(al, &a, shape);
                                if (failures > 20) return 1;
                            }
                        }
    }
    printf("test_recv_stable: %d schedules checked, %d failures\n", checked, failures);
    return failures ? 1 : 0;
}

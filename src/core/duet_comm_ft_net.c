/*
 * duet_comm_ft_net.c — agreement on (flag, failed set) when members are on other hosts
 * (docs/NETWORK.md 2.10).
 *
 * Why not the one-host protocol (duet_comm_ft.c): it keeps the decision in the segment of the
 * communicator's rank 0 and counts on a dead rank's posts staying readable; a host that dies
 * takes both with it. Here nothing needs a dead member's memory: each member writes only its
 * own area, the others read it (a get), and a member that cannot be read any more is dead.
 *
 * The protocol (a rotating coordinator, for a failure detector that reports only real
 * deaths), for call `call`:
 *   1. post: I store my flag, then posted = seq, in my area.
 *   2. estimate: for every other member, I wait until it has posted seq or is dead; my
 *      estimate is (the AND of my flag and those read, the members not read + the failed set
 *      of an earlier agree). Each estimate is consistent by itself: its flag is the AND over
 *      exactly the members outside its set.
 *   3. rounds k = 0 .. n-1: member k publishes its current estimate (est_flag, est_failed,
 *      then est_seq = seq); every other member waits until it can read it or k is dead, and
 *      adopts it whole when read. A member already in my estimate's set is dead: skipped.
 *   4. decide: my estimate.
 * Agreement: let m be the lowest member alive at the end. Nobody skips m's round (m is never
 * seen dead), so every survivor adopts m's estimate there; every later coordinator publishes
 * that same estimate (it adopted it too), so nothing changes after round m. Termination: each
 * wait ends with a read or a death. Deaths mid-protocol only decide which estimate wins.
 *
 * Reuse of the slots (by the parity of the call): nobody can be two calls ahead of a live
 * member, because finishing a call needs that member's post (step 2) and estimate (step 3).
 *
 * The premise is the detector's: a member declared dead is dead (or cut off for good: a cut
 * link is a death for this job, 2.10). A live member declared dead by some members but not by
 * others (a stop longer than DUET_FT_NET_TIMEOUT, a partial network cut) can make the
 * survivors decide differently, as in any agreement built on a detector that errs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include "core/duet_comm_ft.h"
#include "core/duet_ft.h"

/* Between two reads of a word of a member on another host (each a get): the protocol is
 * rare and not in a hurry, and fewer requests are in flight when a member dies (UCX 1.13 over
 * TCP aborts the serving process when it answers a request from a peer whose endpoint it has
 * just seen fail; docs/NETWORK.md 2.10). */
#define POLL_GAP_US 200

void duet_ft_protocol_ctx(duet_comm_t c, duet_wait_ctx_t *ctx)
{
    *ctx = c->wait_ctx;
    ctx->abort_flag = NULL;
}

duet_status_t duet_ft_read(duet_comm_t c, int r, size_t field, void *buf, size_t len)
{
    duet_ft_area_t *a = duet_comm_ft_of(c, r);
    if (a) {
        memcpy(buf, (char *)a + field, len);
        return DUET_OK;
    }
    duet_tport_ep_t *ep = &c->heap->eps[c->heap_pe[r]];
    return ep->ops->get(ep, buf, DUET_HEAP_FT_OFFSET + (size_t)c->slot * DUET_FT_AREA_BYTES + field, len);
}

/* After a failed read of member r: is it because r died? (the transport marks the endpoint
 * first; the detector's mark follows at its next look, taken now) */
static int read_failed_by_death(duet_comm_t c, int r)
{
    duet_ft_net_refresh(c);
    return duet_ft_is_dead(c, r);
}

static duet_status_t read_word(duet_comm_t c, int r, size_t field, uint64_t *v)
{
    duet_ft_area_t *a = duet_comm_ft_of(c, r);
    if (a) {
        *v = atomic_load_explicit((_Atomic uint64_t *)(void *)((char *)a + field), memory_order_acquire);
        return DUET_OK;
    }
    return duet_ft_read(c, r, field, v, sizeof *v);
}

duet_status_t duet_ft_await(duet_comm_t c, int r, size_t field, uint64_t seq, int *seen, const char *what,
                            const char *fn)
{
    duet_wait_ctx_t ctx;
    duet_ft_protocol_ctx(c, &ctx);
    char label[128]; /* the waiter formats its message only if the wait fails */
    snprintf(label, sizeof label, "%s: rank %d's %s", fn, r, what);
    duet_waiter_t w;
    duet_waiter_init(&w, &ctx, "%s (seq %llu)", label, (unsigned long long)seq, 0, r);
    for (;;) {
        int dead = duet_ft_is_dead(c, r); /* read before the word: nothing is written after a death */
        uint64_t v = 0;
        duet_status_t st = read_word(c, r, field, &v);
        if (st == DUET_OK && v >= seq) {
            *seen = 1;
            return DUET_OK;
        }
        if (dead || (st && read_failed_by_death(c, r))) {
            *seen = 0;
            return DUET_OK;
        }
        if (st) return duet_error_wrap(st, fn);
        if (!duet_comm_ft_of(c, r)) usleep(POLL_GAP_US); /* a get each time: see POLL_GAP_US */
        if ((st = duet_waiter_turn(&w))) return st;
    }
}

/* Step 2: my estimate from every member's post. */
static duet_status_t estimate(duet_comm_t c, uint64_t seq, int par, uint64_t *flag, uint64_t *set, const char *fn)
{
    for (int r = 0; r < c->size; r++) {
        if (r == c->rank) continue;
        if (c->agreed_failed && duet_ft_set_has(c->agreed_failed, r)) {
            duet_ft_set_add(set, r);
            continue;
        }
        int seen;
        duet_status_t st = duet_ft_await(c, r, offsetof(duet_ft_area_t, posted), seq, &seen, "flag", fn);
        if (st) return st;
        uint64_t f = 0;
        if (seen && (st = duet_ft_read(c, r, offsetof(duet_ft_area_t, flag) + (size_t)par * sizeof f, &f, sizeof f))) {
            if (!read_failed_by_death(c, r)) return duet_error_wrap(st, fn);
            seen = 0; /* died after posting: counted as failed by me, which is as true */
        }
        if (seen) *flag &= f;
        else duet_ft_set_add(set, r);
    }
    return DUET_OK;
}

/* Step 3, the round of coordinator k (not me): adopts k's estimate if it can be read. */
static duet_status_t adopt(duet_comm_t c, int k, uint64_t seq, int par, uint64_t *flag, uint64_t *set,
                           uint64_t *tmp, const char *fn)
{
    int seen;
    duet_status_t st = duet_ft_await(c, k, offsetof(duet_ft_area_t, est_seq), seq, &seen, "estimate", fn);
    if (st || !seen) return st;
    size_t bytes = duet_ft_set_words(c->size) * sizeof *set;
    uint64_t f = 0;
    st = duet_ft_read(c, k, offsetof(duet_ft_area_t, est_flag) + (size_t)par * sizeof f, &f, sizeof f);
    if (!st) st = duet_ft_read(c, k, offsetof(duet_ft_area_t, est_failed) + (size_t)par * sizeof(((duet_ft_area_t *)0)->est_failed[0]),
                               tmp, bytes);
    if (st) return read_failed_by_death(c, k) ? DUET_OK : duet_error_wrap(st, fn);
    *flag = f;
    memcpy(set, tmp, bytes);
    return DUET_OK;
}

duet_status_t duet_ft_consensus_net(duet_comm_t c, uint64_t call, uint64_t *flag, uint64_t *set, const char *fn)
{
    uint64_t seq = duet_ft_seq(call, 0);
    int par = (int)(call & 1);
    size_t words = duet_ft_set_words(c->size);
    duet_ft_area_t *mine = duet_comm_ft(c);
    uint64_t *tmp = malloc(words * sizeof *tmp);
    if (!tmp) return DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "%s: out of host memory", fn);
    memset(set, 0, words * sizeof *set);
    mine->flag[par] = *flag; /* 1. post */
    atomic_store_explicit(&mine->posted, seq, memory_order_release);
    duet_status_t st = estimate(c, seq, par, flag, set, fn);
    for (int k = 0; k < c->size && st == DUET_OK; k++) {
        if (k == c->rank) { /* my round: publish what I hold now */
            mine->est_flag[par] = *flag;
            memcpy(mine->est_failed[par], set, words * sizeof *set);
            atomic_store_explicit(&mine->est_seq, seq, memory_order_release);
        } else if (!duet_ft_set_has(set, k)) {
            st = adopt(c, k, seq, par, flag, set, tmp, fn);
        }
    }
    free(tmp);
    return st;
}

/*
 * Ordering, completion and barriers: fence, quiet, sync, barrier; duet_ptr.
 *
 * sync is a dissemination barrier over the communicator's sync slot. In round k every
 * rank raises the flag of rank (me + 2^k) and waits for its own flag from (me - 2^k):
 *
 *   round 0:  0->1  1->2  2->3  3->4  4->0        after ceil(log2 n) rounds every rank
 *   round 1:  0->2  1->3  2->4  3->0  4->1        has heard, transitively, from all.
 *   round 2:  0->4  1->0  2->1  3->2  4->3
 *
 * Flags hold the barrier's epoch (a count that only grows), so nothing is ever reset and
 * a fast rank already in the next barrier cannot confuse a slow one (it waits for >=).
 */
#include <stdio.h>
#include "rma/duet_rma.h"
#include "core/duet_comm_mod.h"
#include "heap/duet_heap_dev.h"

/* Completes every endpoint of a segment (eps: npes of them; NULL: no such segment). */
static duet_status_t quiet_eps(duet_tport_ep_t *eps, int npes, duet_status_t first)
{
    for (int pe = 0; eps && pe < npes; pe++) {
        duet_status_t st = eps[pe].ops->quiet(&eps[pe]);
        if (st && !first) first = st;
    }
    return first;
}

duet_status_t duet_rma_quiet_all(duet_comm_t c)
{
    duet_heap_t *h = c->heap;
    duet_status_t first = quiet_eps(h->eps, h->npes, DUET_OK);
    if (DUET_UNLIKELY(h->dev_eps != NULL)) {
        first = quiet_eps(h->dev_eps, h->npes, first);
        /* and what the device part's modules owe (the GPU proxy's device-posted operations) */
        duet_status_t st = duet_comm_mods_quiet(c);
        if (st && !first) first = st;
    }
    return first;
}

static duet_status_t duet_fence_(duet_comm_t c)
{
    duet_status_t st = duet_comm_check(c, "duet_fence");
    if (st) return st;
    duet_heap_t *h = c->heap;
    duet_status_t first = DUET_OK;
    for (int pe = 0; pe < h->npes; pe++)
        if ((st = h->eps[pe].ops->fence(&h->eps[pe])) && !first) first = st;
    /* the device heap's endpoints order their operations among themselves (one stream), not
     * against the host heap's: completing them orders both */
    if (DUET_UNLIKELY(h->dev_eps != NULL)) {
        first = quiet_eps(h->dev_eps, h->npes, first);
        if ((st = duet_comm_mods_quiet(c)) && !first) first = st;
    }
    return first;
}
duet_status_t duet_fence(duet_comm_t c)
{
    DUET_COMM_CALL(c, "duet_fence", duet_fence_(c));
}

static duet_status_t duet_quiet_(duet_comm_t c)
{
    duet_status_t st = duet_comm_check(c, "duet_quiet");
    return st ? st : duet_rma_quiet_all(c);
}
duet_status_t duet_quiet(duet_comm_t c)
{
    DUET_COMM_CALL(c, "duet_quiet", duet_quiet_(c));
}

static duet_status_t sync_slot(duet_comm_t c)
{
    uint64_t epoch = ++c->sync_epoch;
    duet_heap_t *h = c->heap;
    duet_team_slot_t *mine = duet_heap_slot(h->local_base, c->slot);
    size_t slot_off = (size_t)((char *)mine - h->local_base);
    int k = 0;
    for (int dist = 1; dist < c->size; dist <<= 1, k++) {
        int to = (c->rank + dist) % c->size, from = (c->rank - dist + c->size) % c->size;
        duet_tport_ep_t *ep = &h->eps[c->heap_pe[to]];
        size_t off = slot_off + (size_t)k * sizeof(duet_sync_flag_t);
        duet_status_t st = ep->ops->amo(ep, DUET_AMO_SET, off, 8, epoch, 0, NULL);
        if (st) return st;
        ep->ops->notify(ep);
        _Atomic uint64_t *flag = &mine->round[k].value;
        if (atomic_load_explicit(flag, memory_order_acquire) >= epoch) continue;
        duet_waiter_t w;
        duet_waiter_init(&w, &c->wait_ctx, "barrier%s #%llu (round %llu)", "", epoch,
                         (unsigned long long)k, from);
        while (atomic_load_explicit(flag, memory_order_acquire) < epoch)
            if ((st = duet_waiter_turn(&w))) return st;
    }
    return DUET_OK;
}

static duet_status_t sync_(duet_comm_t c)
{
    duet_status_t st = duet_comm_check_usable(c, "duet_sync");
    return st ? st : sync_slot(c);
}
duet_status_t duet_sync(duet_comm_t c) { DUET_COMM_CALL(c, "duet_sync", sync_(c)); }

static duet_status_t barrier_(duet_comm_t c)
{
    duet_status_t st = duet_comm_check_usable(c, "duet_barrier");
    if (!st) st = duet_rma_quiet_all(c);
    return st ? st : sync_slot(c);
}
duet_status_t duet_barrier(duet_comm_t c) { DUET_COMM_CALL(c, "duet_barrier", barrier_(c)); }

duet_status_t duet_barrier_all(void)
{
    duet_comm_t w = duet_comm_world();
    if (!w) return duet_error_set(DUET_ERR_INVALID_ARG, "duet_barrier_all: duet_init() was not called");
    return duet_barrier(w);
}

void *duet_ptr(duet_comm_t c, const void *addr, int pe)
{
    duet_tport_ep_t *ep = NULL;
    size_t off = 0;
    if (duet_rma_target(c, addr, 1, pe, "duet_ptr", &ep, &off)) return NULL;
    return ep->ops->ptr(ep, off);
}

int duet_addr_accessible(duet_comm_t c, const void *addr, int pe)
{
    duet_tport_ep_t *ep = NULL;
    size_t off = 0;
    if (duet_rma_target(c, addr, 1, pe, "duet_addr_accessible", &ep, &off)) return 0;
    /* the host heap reaches every pe (by the net transport if need be); the device heap only
     * the pes whose memory is mapped here */
    return !duet_rma_on_device(c->heap, ep) || ep->ops->ptr(ep, off) != NULL;
}

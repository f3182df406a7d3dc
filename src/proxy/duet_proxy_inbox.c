/* Ordered message boxes in the host heap (layout and protocol in duet_proxy_inbox.h). */
#include <stdlib.h>
#include <string.h>
#include "proxy/duet_proxy_inbox.h"

typedef struct {
    int32_t want, ok;
    int32_t slots, pad;
    uint64_t chunk;
    uint64_t seg_off; /* my block in my segment */
} inbox_info_t;

static size_t inbox_at(const duet_proxy_inbox_t *ib, int origin, uint64_t m)
{
    return (size_t)ib->npes * DUET_CACHELINE +
           ((size_t)origin * (size_t)ib->slots + (size_t)((m - 1) % (uint64_t)ib->slots)) * ib->slot_bytes;
}

static size_t reply_at(const duet_proxy_inbox_t *ib, int pe, uint64_t m)
{
    return (size_t)((const char *)duet_proxy_inbox_reply(ib, pe, m) - ib->block);
}

void duet_proxy_inbox_destroy(duet_proxy_inbox_t *ib)
{
    if (!ib) return;
    if (ib->block) {
        pthread_mutex_lock(&ib->heap->lock);
        duet_alloc_give(ib->heap->zone, ib->zone_off);
        pthread_mutex_unlock(&ib->heap->lock);
    }
    free(ib->peer_off);
    free(ib->sent);
    free(ib->recvd);
    free(ib->ack_word);
    free(ib->frame);
    free(ib);
}

duet_status_t duet_proxy_inbox_create(duet_heap_t *h, duet_boot_t *b, int want, size_t chunk, int slots,
                                      duet_proxy_inbox_t **out)
{
    int n = b->nranks;
    *out = NULL;
    inbox_info_t mine = {.want = want != 0, .slots = slots, .chunk = chunk}, *all = malloc(sizeof *all * (size_t)n);
    if (!all) return DUET_FAIL(DUET_ERR_NO_MEMORY, RMA, "proxy inbox: out of host memory");
    duet_status_t st = duet_boot_allgather(b, &mine, all, sizeof mine);
    int anyone = 0;
    for (int r = 0; !st && r < n; r++) anyone |= all[r].want;
    if (st || !anyone) {
        free(all);
        return st;
    }
    duet_proxy_inbox_t *ib = calloc(1, sizeof *ib);
    if (ib) {
        ib->heap = h;
        ib->me = b->rank;
        ib->npes = n;
        ib->slots = slots;
        ib->chunk = chunk;
        ib->slot_bytes = DUET_PROXY_HDR + ((chunk + 63) & ~(size_t)63);
        ib->block_bytes = (size_t)n * DUET_CACHELINE + 2 * (size_t)n * (size_t)slots * ib->slot_bytes;
        ib->peer_off = calloc((size_t)n, sizeof *ib->peer_off);
        ib->sent = calloc((size_t)n, sizeof *ib->sent);
        ib->recvd = calloc((size_t)n, sizeof *ib->recvd);
        ib->ack_word = calloc((size_t)n, sizeof *ib->ack_word);
        ib->frame = calloc(1, DUET_PROXY_HDR);
    }
    int ok = 0;
    if (ib && ib->peer_off && ib->sent && ib->recvd && ib->ack_word && ib->frame && slots >= 1 && chunk >= 8) {
        size_t off;
        pthread_mutex_lock(&h->lock);
        int rc = duet_alloc_take(h->zone, ib->block_bytes, 4096, &off);
        pthread_mutex_unlock(&h->lock);
        if (rc == 0) {
            ib->zone_off = off;
            ib->block = h->local_base + h->user_end + off;
            /* what is read before it is written: the ack lines and the inbox headers (the zone
             * is sparse: the data areas are touched only when used) */
            memset(ib->block, 0, (size_t)n * DUET_CACHELINE);
            for (int o = 0; o < n; o++)
                for (uint64_t m = 1; m <= (uint64_t)slots; m++)
                    memset(ib->block + inbox_at(ib, o, m), 0, DUET_PROXY_HDR);
            mine.seg_off = h->user_end + off;
            ok = 1;
        }
    }
    mine.ok = ok;
    /* the exchange is also the barrier: nobody writes into a block before it is zeroed */
    st = duet_boot_allgather(b, &mine, all, sizeof mine);
    for (int r = 0; !st && r < n; r++) {
        if (!all[r].ok)
            st = DUET_FAIL(DUET_ERR_NO_MEMORY, RMA, "proxy inbox: rank %d could not make its %zu-byte block in its "
                           "collective zone (DUET_COLL_ZONE_SIZE)", r, ib ? ib->block_bytes : (size_t)0);
        else if (all[r].chunk != chunk || all[r].slots != slots)
            st = DUET_FAIL(DUET_ERR_INVALID_ARG, RMA, "proxy inbox: rank %d uses %d slots of %llu bytes, rank %d "
                           "%d of %zu: the settings must match", r, all[r].slots,
                           (unsigned long long)all[r].chunk, b->rank, slots, chunk);
        else
            ib->peer_off[r] = all[r].seg_off;
    }
    free(all);
    if (st) {
        duet_proxy_inbox_destroy(ib);
        return st;
    }
    DUET_LOG(INFO, RMA, "proxy inbox: %d slots of %zu bytes per peer, %zu bytes in the collective zone", slots,
             chunk, ib->block_bytes);
    *out = ib;
    return DUET_OK;
}

duet_status_t duet_proxy_inbox_send(duet_proxy_inbox_t *ib, int pe, const duet_proxy_msg_t *msg, void *frame,
                                    uint64_t *m_out)
{
    duet_tport_ep_t *ep = &ib->heap->eps[pe];
    uint64_t m = ib->sent[pe] + 1;
    size_t at = (size_t)ib->peer_off[pe] + inbox_at(ib, ib->me, m);
    duet_proxy_slot_t *hdr = frame;
    memcpy(&hdr->msg, msg, sizeof *msg);
    hdr->pad = 0;
    atomic_store_explicit(&hdr->seq, 0, memory_order_relaxed); /* not m: it goes in its own put */
    duet_status_t st = ep->ops->put(ep, at, frame, DUET_PROXY_HDR + msg->len);
    if (st == DUET_OK) st = ep->ops->fence(ep);
    atomic_store_explicit(&hdr->seq, m, memory_order_relaxed);
    if (st == DUET_OK) st = ep->ops->put(ep, at + offsetof(duet_proxy_slot_t, seq), (const void *)&hdr->seq,
                                         sizeof(uint64_t));
    if (st) return duet_error_wrap(st, "a proxy message");
    ib->sent[pe] = m;
    if (m_out) *m_out = m;
    return DUET_OK;
}

const duet_proxy_msg_t *duet_proxy_inbox_peek(const duet_proxy_inbox_t *ib, int origin)
{
    return duet_proxy_inbox_peek_at(ib, origin, 0);
}

const duet_proxy_msg_t *duet_proxy_inbox_peek_at(const duet_proxy_inbox_t *ib, int origin, int k)
{
    if (k < 0 || k >= ib->slots) return NULL;
    uint64_t m = ib->recvd[origin] + 1 + (uint64_t)k;
    const duet_proxy_slot_t *s = (const duet_proxy_slot_t *)(const void *)(ib->block + inbox_at(ib, origin, m));
    if (atomic_load_explicit((_Atomic uint64_t *)&s->seq, memory_order_acquire) != m) return NULL;
    return &s->msg;
}

duet_status_t duet_proxy_inbox_answer(duet_proxy_inbox_t *ib, int origin, duet_status_t status, uint64_t result,
                                      void *frame, size_t len)
{
    duet_tport_ep_t *ep = &ib->heap->eps[origin];
    uint64_t m = ib->recvd[origin] + 1;
    if (!frame) {
        frame = ib->frame;
        len = 0;
    }
    duet_proxy_reply_t *r = frame;
    memset(r, 0, sizeof *r);
    r->status = status;
    r->result = result;
    r->len = len;
    duet_status_t st = ep->ops->put(ep, (size_t)ib->peer_off[origin] + reply_at(ib, ib->me, m), frame,
                                    DUET_PROXY_HDR + len);
    if (st == DUET_OK) st = ep->ops->fence(ep);
    ib->ack_word[origin] = m;
    if (st == DUET_OK)
        st = ep->ops->put(ep, (size_t)ib->peer_off[origin] + (size_t)ib->me * DUET_CACHELINE, &ib->ack_word[origin],
                          sizeof(uint64_t));
    ib->recvd[origin] = m; /* released even when the answer failed: the origin is gone then */
    return st ? duet_error_wrap(st, "a proxy answer") : DUET_OK;
}

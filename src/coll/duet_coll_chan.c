/* Collective channels: setup and the send / receive primitives (layout in the header). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_chan.h"
#include "coll/duet_coll_lane.h"
#include "coll/duet_coll_sig.h"
#include "tport/duet_tport.h"

/* The endpoint of a comm rank (a net peer's: its segment takes the transport's puts). */
static duet_tport_ep_t *peer_ep(duet_comm_t c, int rank) { return &c->heap->eps[c->heap_pe[rank]]; }

/* Where rank's block lies in my mapping, as its endpoint maps it: the transport's own fast
 * path, asked once at set-up (NULL: a net peer, written by the transport's puts). */
static char *block_of(duet_comm_t c, int rank, size_t block_off)
{
    duet_tport_ep_t *ep = peer_ep(c, rank);
    return ep->ops->ptr(ep, c->heap->user_end + block_off);
}

static duet_chan_line_t *acked_line(duet_coll_chan_t *ch, char *block, int peer)
{
    return (duet_chan_line_t *)(void *)block + peer;
}

/* Where message m from `from` lies in a block of a communicator of nranks, from its start. */
static size_t inbox_slot_off(duet_coll_chan_t *ch, int nranks, int from, uint64_t m)
{
    size_t inbox_off = (size_t)nranks * sizeof(duet_chan_line_t);
    size_t slot = (size_t)((m - 1) % (uint64_t)ch->slots);
    return inbox_off + ((size_t)from * (size_t)ch->slots + slot) * ch->slot_stride;
}

static char *inbox_slot(duet_coll_chan_t *ch, char *block, int nranks, int from, uint64_t m)
{
    return block + inbox_slot_off(ch, nranks, from, m);
}

typedef struct {
    uint64_t block_off, chunk;
    uint64_t seg_off; /* the block in the segment: user_end + block_off */
    int32_t slots, ok;
} chan_info_t;

duet_status_t duet_coll_chan_create(duet_comm_t c, duet_coll_chan_t **out)
{
    const duet_cfg_t *cfg = duet_cfg();
    int n = c->size;
    duet_coll_chan_t *ch = calloc(1, sizeof *ch);
    chan_info_t *all = malloc(sizeof *all * (size_t)n);
    if (ch) {
        ch->peer_block = calloc((size_t)n, sizeof *ch->peer_block);
        ch->sent = calloc((size_t)n, sizeof *ch->sent);
        ch->recvd = calloc((size_t)n, sizeof *ch->recvd);
        ch->byref_last = calloc((size_t)n, sizeof *ch->byref_last);
        ch->peer_off = calloc((size_t)n, sizeof *ch->peer_off);
        ch->p2p_sends = calloc(2 * (size_t)n, sizeof *ch->p2p_sends);
        if (ch->p2p_sends) ch->p2p_recvs = ch->p2p_sends + n;
    }
    duet_status_t st = DUET_OK;
    if (!ch || !all || !ch->peer_block || !ch->sent || !ch->recvd || !ch->byref_last || !ch->peer_off ||
        !ch->p2p_sends) {
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "collective channels: out of host memory");
        goto out;
    }
    ch->chunk = (cfg->coll_chunk + 63) & ~(size_t)63;
    if (ch->chunk < 64) ch->chunk = 64;
    if (ch->chunk > DUET_CHAN_CHUNK_MAX) {
        st = DUET_FAIL(DUET_ERR_INVALID_ARG, COLL, "collective channels: DUET_COLL_CHUNK=%zu is above the %u "
                       "bytes a message may carry", (size_t)cfg->coll_chunk, DUET_CHAN_CHUNK_MAX);
        goto out;
    }
    ch->slots = cfg->coll_slots < 2 ? 2 : (int)cfg->coll_slots;
    ch->slot_stride = sizeof(duet_chan_slot_t) + ch->chunk;
    ch->lane_off = (size_t)n * (sizeof(duet_chan_line_t) + (size_t)ch->slots * ch->slot_stride);
    ch->sig_off = ch->lane_off + duet_coll_lane_bytes(n);
    ch->block_bytes = ch->sig_off + duet_coll_sig_bytes(n);
    pthread_mutex_lock(&c->heap->lock);
    int rc = duet_alloc_take(c->heap->zone, ch->block_bytes, 4096, &ch->block_off);
    pthread_mutex_unlock(&c->heap->lock);
    chan_info_t mine = {ch->block_off, ch->chunk, c->heap->user_end + ch->block_off, ch->slots, rc == 0};
    if (rc == 0) { /* zero what is read before written: acked lines and slot headers (the
                      * zone is sparse memory; data areas are touched only when used) */
        char *block = block_of(c, c->rank, ch->block_off);
        memset(block, 0, (size_t)n * sizeof(duet_chan_line_t));
        for (int from = 0; from < n; from++)
            for (uint64_t m = 1; m <= (uint64_t)ch->slots; m++)
                memset(inbox_slot(ch, block, n, from, m), 0, sizeof(duet_chan_slot_t));
        memset(block + ch->lane_off, 0, duet_coll_lane_bytes(n) + duet_coll_sig_bytes(n));
    }
    /* the exchange is also the barrier: nobody writes into a block before it is zeroed */
    st = duet_boot_allgather(&c->boot, &mine, all, sizeof mine);
    for (int r = 0; st == DUET_OK && r < n; r++) {
        if (!all[r].ok)
            st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL,
                           "collective channels: rank %d has no room for %zu bytes in its collective "
                           "zone (raise DUET_COLL_ZONE_SIZE)", r, ch->block_bytes);
        else if (all[r].chunk != ch->chunk || all[r].slots != ch->slots)
            st = DUET_FAIL(DUET_ERR_INVALID_ARG, COLL,
                           "collective channels: rank %d uses DUET_COLL_CHUNK=%llu, DUET_COLL_SLOTS=%d; "
                           "rank %d %zu, %d: settings must match", r, (unsigned long long)all[r].chunk,
                           all[r].slots, c->rank, ch->chunk, ch->slots);
        else {
            ch->peer_block[r] = block_of(c, r, all[r].block_off);
            ch->peer_off[r] = all[r].seg_off;
        }
    }
    if (st == DUET_OK) ch->sig_mine = (struct duet_coll_sig_line *)(void *)(ch->peer_block[c->rank] + ch->sig_off);
    if (st != DUET_OK && rc == 0) {
        pthread_mutex_lock(&c->heap->lock);
        duet_alloc_give(c->heap->zone, ch->block_off);
        pthread_mutex_unlock(&c->heap->lock);
    }
out:
    free(all);
    if (st != DUET_OK) {
        if (ch) {
            free(ch->peer_block);
            free(ch->sent);
            free(ch->recvd);
            free(ch->byref_last);
            free(ch->peer_off);
            free(ch->p2p_sends);
            free(ch);
        }
        return st;
    }
    *out = ch;
    return DUET_OK;
}

void duet_coll_chan_destroy(duet_comm_t c, duet_coll_chan_t *ch)
{
    if (!ch) return;
    pthread_mutex_lock(&c->heap->lock);
    duet_alloc_give(c->heap->zone, ch->block_off);
    pthread_mutex_unlock(&c->heap->lock);
    free(ch->peer_block);
    free(ch->sent);
    free(ch->recvd);
    free(ch->byref_last);
    free(ch->peer_off);
    free(ch->p2p_sends);
    free(ch);
}

/* The offset of [src, src + len) in my segment when it lies in my user heap, else 0. */
static size_t heap_offset(duet_comm_t c, const void *src, size_t len)
{
    const char *base = c->heap->local_base, *p = src;
    if (p < base + DUET_HEAP_USER_OFFSET || p >= base + c->heap->user_end || len > (size_t)(base + c->heap->user_end - p))
        return 0;
    return (size_t)(p - base);
}

int duet_coll_chan_heap_range(duet_comm_t c, const duet_coll_chan_t *ch, const void *p, size_t len)
{
    return ch->byref && (!p || !len || heap_offset(c, p, len) != 0);
}

duet_status_t duet_coll_chan_net_line(duet_comm_t c, duet_coll_chan_t *ch, int peer, size_t off, uint64_t seq,
                                      uint32_t hash, const void *src, size_t len)
{
    duet_tport_ep_t *ep = peer_ep(c, peer);
    duet_chan_slot_t *stage = &ch->net_stage;
    size_t line = ch->peer_off[peer] + off;
    size_t len_at = line + offsetof(duet_chan_slot_t, len), words = offsetof(duet_chan_slot_t, data) - offsetof(duet_chan_slot_t, len);
    stage->len = (uint32_t)len;
    stage->hash = hash;
    duet_status_t st;
    if (len <= DUET_CHAN_INLINE) {
        memcpy(stage->data, src, len);
        st = ep->ops->put(ep, len_at, &stage->len, words + len);
    } else {
        st = ep->ops->put(ep, len_at, &stage->len, words);
        if (st == DUET_OK) st = ep->ops->put(ep, line + sizeof(duet_chan_slot_t), src, len);
    }
    if (st == DUET_OK) st = ep->ops->fence(ep);
    atomic_store_explicit(&stage->seq, seq, memory_order_relaxed);
    if (st == DUET_OK) st = ep->ops->put(ep, line + offsetof(duet_chan_slot_t, seq), (const void *)&stage->seq,
                                         sizeof(uint64_t));
    return st ? duet_error_wrap(st, "a collective's message") : DUET_OK;
}

int duet_coll_chan_try_send(duet_comm_t c, duet_coll_chan_t *ch, int peer, const void *src, size_t len, int stable,
                            uint32_t call, uint32_t hash)
{
    uint64_t m = ch->sent[peer] + 1;
    duet_chan_line_t *acked = acked_line(ch, ch->peer_block[c->rank], peer);
    if (m > atomic_load_explicit(&acked->value, memory_order_acquire) + (uint64_t)ch->slots) return 0;
    if (!ch->peer_block[peer]) { /* a net peer */
        duet_status_t st = duet_coll_chan_net_line(c, ch, peer, inbox_slot_off(ch, c->size, c->rank, m),
                                                   duet_chan_seq(call, m), hash, src, len);
        if (st) return (int)st;
        ch->sent[peer] = m;
        return 1;
    }
    duet_chan_slot_t *slot = (duet_chan_slot_t *)(void *)inbox_slot(ch, ch->peer_block[peer], c->size, c->rank, m);
    size_t off = stable && ch->byref && len >= DUET_CHAN_BYREF_MIN ? heap_offset(c, src, len) : 0;
    if (off) {
        uint64_t o = off;
        memcpy(slot->data, &o, sizeof o);
        slot->len = (uint32_t)len | DUET_CHAN_BYREF;
        ch->byref_last[peer] = m;
        ch->byref_any = 1;
        ch->byref_sent++;
    } else {
        duet_copy(len <= DUET_CHAN_INLINE ? (void *)slot->data : (void *)(slot + 1), src, len);
        slot->len = (uint32_t)len;
    }
    slot->hash = hash;
    atomic_store_explicit(&slot->seq, duet_chan_seq(call, m), memory_order_release);
    ch->sent[peer] = m;
    duet_doorbell_ring(peer_ep(c, peer)->doorbell);
    return 1;
}

duet_status_t duet_coll_chan_byref_wait(duet_comm_t c, duet_coll_chan_t *ch, const char *what)
{
    for (int peer = 0; peer < c->size; peer++) {
        uint64_t last = ch->byref_last[peer];
        if (!last) continue;
        duet_chan_line_t *acked = acked_line(ch, ch->peer_block[c->rank], peer);
        if (atomic_load_explicit(&acked->value, memory_order_acquire) < last) {
            duet_waiter_t w;
            duet_waiter_init(&w, &c->wait_ctx, "%s: the reading of message %llu (sent by reference)", what,
                             (unsigned long long)last, 0, peer);
            while (atomic_load_explicit(&acked->value, memory_order_acquire) < last) {
                duet_status_t st = duet_waiter_turn(&w);
                if (st) return st;
            }
        }
        ch->byref_last[peer] = 0;
    }
    ch->byref_any = 0;
    return DUET_OK;
}

const void *duet_coll_chan_peek(duet_comm_t c, duet_coll_chan_t *ch, int peer, size_t len, uint32_t call,
                                uint32_t hash, duet_chan_got_t *got)
{
    uint64_t m = ch->recvd[peer] + 1;
    duet_chan_slot_t *slot = (duet_chan_slot_t *)(void *)inbox_slot(ch, ch->peer_block[c->rank], c->size, peer, m);
    uint64_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
    if ((uint32_t)seq != (uint32_t)m) return NULL;
    uint32_t bytes = slot->len & ~DUET_CHAN_BYREF;
    if (DUET_UNLIKELY(seq != duet_chan_seq(call, m) || slot->hash != hash || bytes != len)) {
        *got = (duet_chan_got_t){1, (uint32_t)(seq >> 32), slot->hash, bytes};
        return NULL;
    }
    if (slot->len & DUET_CHAN_BYREF) {
        uint64_t off;
        memcpy(&off, slot->data, sizeof off);
        duet_tport_ep_t *ep = peer_ep(c, peer);
        return ep->ops->ptr(ep, off);
    }
    return len <= DUET_CHAN_INLINE ? (const void *)slot->data : (const void *)(slot + 1);
}

duet_status_t duet_coll_chan_release(duet_comm_t c, duet_coll_chan_t *ch, int peer)
{
    uint64_t m = ++ch->recvd[peer];
    if (!ch->peer_block[peer]) { /* a net peer: my acked line in its block */
        duet_tport_ep_t *ep = peer_ep(c, peer);
        ch->net_ack = m;
        duet_status_t st = ep->ops->put(ep, ch->peer_off[peer] + (size_t)c->rank * sizeof(duet_chan_line_t),
                                        &ch->net_ack, sizeof ch->net_ack);
        return st ? duet_error_wrap(st, "a collective's acknowledgement") : DUET_OK;
    }
    duet_chan_line_t *acked = acked_line(ch, ch->peer_block[peer], c->rank);
    atomic_store_explicit(&acked->value, m, memory_order_release);
    duet_doorbell_ring(peer_ep(c, peer)->doorbell);
    return DUET_OK;
}

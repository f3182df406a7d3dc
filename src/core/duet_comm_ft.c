/*
 * duet_comm_ft.c — revoke, agree and shrink (after MPI's ULFM), over the members' shared
 * memory (with members on other hosts: see below). Every member's segment holds, per
 * communicator (team slot), a fault-tolerance area (duet_ft_area_t in heap/duet_heap.h); a
 * dead rank's segment stays mapped in the survivors,
 * so what it wrote before dying can still be read, and the words in it still used.
 *
 * State: duet_comm_get_failed (the agreed set after an agree, else what the detector saw),
 * duet_comm_status (the abort word, and any member seen dead), and the entry check of
 * collectives and barriers (duet_comm_unusable_).
 *
 * Revoke: the revoker writes DUET_ERR_REVOKED into every member's abort word (after its own
 * rank into revoked_by) and rings their doorbells; their waits return at the next turn.
 *
 * Consensus on the failed set (decide): each agree / shrink call has a sequence number seq
 * (the call's number on this communicator, times 256, plus the attempt), the same on every
 * survivor since they make the same calls. In the area of the communicator's rank 0 (alive
 * or not) the first survivor to swing `claim` to (seq, itself) writes the ranks it knows dead
 * (a direct look at every member's process first, not waiting for its detector's thread,
 * plus what an earlier agree decided) into failed[seq & 1] and then publishes decided = seq; the others wait for it and read
 * that set. A claimer that dies before publishing is replaced: a survivor that sees it dead
 * swings the claim to itself and writes anew. The set only holds ranks really dead (the
 * failure detector only reports deaths), and every survivor reads the same one.
 *
 * Agree: after deciding D, every survivor posts its flag (flag[call & 1], then posted = seq)
 * and waits, for each rank outside D, until it has posted seq or is dead. A rank's post
 * outlives it, so every survivor sees the same posts: if every rank outside D posted, the
 * result is the AND of their flags (the same everywhere); if one died before posting, every
 * survivor sees that too, and they all try again with the next attempt (a new D).
 * Reuse of the two slots: a decided set (failed[seq & 1]) is read before its reader posts or
 * joins, and nobody gets two sequence numbers past a live survivor's post or join. A flag is
 * indexed by the call, not the attempt: a fast rank may post the next attempt while a slow
 * one still reads this one (the same value: a rank's flag does not change between attempts),
 * or post the next call (the other slot: it cannot be two calls ahead).
 *
 * Shrink: after deciding D, the first rank outside D makes a bootstrap listener and publishes
 * its address in its area (new_id[seq & 1], then id_ready = seq; no secret: every survivor
 * derives the new one from comm's and seq); the others join it with their new ranks
 * (the new root gives up as soon as one that has not joined is seen dead);
 * a team slot free on all of them is picked over the new bootstrap, and the communicator is
 * built as a team of the heap's root communicator (so it outlives comm, and shares its heap).
 *
 * Members on other hosts (c->net_peers): the decision and the posts above cannot outlive a
 * host, so agree and shrink decide (flag, failed set) by duet_comm_ft_net.c's consensus
 * instead, in one attempt; the shrink's steps after the decision are the same.
 *
 * The protocol's own waits ignore the communicator's abort word (they must run on failed and
 * revoked communicators) but keep the deadline (DUET_WAIT_TIMEOUT) and give up at once when
 * what they wait for is dead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include "core/duet_comm_ft.h"
#include "core/duet_ft.h"
#include "core/duet_comm_mod.h"
#include "heap/duet_heap_dev.h"

#define ATTEMPTS 256 /* retries of one agree: each needs a death during the one before */

/* Decides the failed set of sequence number seq (see above) into set (duet_ft_set_words(c->size) words). */
static duet_status_t decide(duet_comm_t c, uint64_t seq, uint64_t *set, const char *fn)
{
    duet_ft_area_t *a0 = duet_comm_ft_of(c, 0);
    duet_wait_ctx_t ctx;
    duet_ft_protocol_ctx(c, &ctx);
    duet_waiter_t w;
    duet_waiter_init(&w, &ctx, "%s: the decision on the failed ranks (seq %llu)", fn, (unsigned long long)seq, 0, -1);
    size_t words = duet_ft_set_words(c->size);
    for (;;) {
        if (atomic_load_explicit(&a0->decided, memory_order_acquire) >= seq) {
            memcpy(set, a0->failed[seq & 1], words * sizeof *set);
            return DUET_OK;
        }
        uint64_t claim = atomic_load_explicit(&a0->claim, memory_order_acquire);
        uint64_t claim_seq = claim >> 16;
        int claimer = (int)(claim & 0xffff) - 1;
        if (claim_seq < seq || (claim_seq == seq && claimer >= 0 && duet_ft_is_dead(c, claimer))) {
            uint64_t mine = seq << 16 | (uint64_t)(c->rank + 1);
            /* what I propose: every death I can see now (a revoke or a peer may have told me of a
             * failure before my detector's thread saw it), and what an earlier agree decided */
            duet_ft_refresh(c);
            if (atomic_compare_exchange_strong_explicit(&a0->claim, &claim, mine, memory_order_acq_rel,
                                                        memory_order_acquire)) {
                uint64_t *out = a0->failed[seq & 1];
                memset(out, 0, words * sizeof *out);
                for (int r = 0; r < c->size; r++)
                    if (r != c->rank && (duet_ft_is_dead(c, r) || (c->agreed_failed && duet_ft_set_has(c->agreed_failed, r))))
                        out[r / 64] |= 1ull << (r % 64);
                atomic_store_explicit(&a0->decided, seq, memory_order_release);
            }
            continue;
        }
        duet_status_t st = duet_waiter_turn(&w);
        if (st) return st;
    }
}

void duet_comm_revoke_status_(duet_comm_t c, duet_status_t status)
{
    for (int r = 0; r < c->size; r++) {
        duet_ft_area_t *a = duet_comm_ft_of(c, r);
        if (!a) { /* a net member: its words by remote atomics (its waits poll them) */
            duet_tport_ep_t *ep = &c->heap->eps[c->heap_pe[r]];
            size_t area = DUET_HEAP_FT_OFFSET + (size_t)c->slot * DUET_FT_AREA_BYTES;
            (void)ep->ops->amo(ep, DUET_AMO_SET, area + offsetof(duet_ft_area_t, revoked_by), 4,
                               (uint32_t)(c->rank + 1), 0, NULL);
            (void)ep->ops->amo(ep, DUET_AMO_SET, area + offsetof(duet_ft_area_t, abort), 4,
                               (uint32_t)(int32_t)status, 0, NULL);
            continue;
        }
        atomic_store_explicit(&a->revoked_by, c->rank + 1, memory_order_relaxed);
        atomic_store_explicit(&a->abort, status, memory_order_release);
        duet_doorbell_ring(&duet_heap_ctrl(c->heap->peer_base[c->heap_pe[r]])->doorbell);
    }
    duet_comm_mods_abort(c, status);
    DUET_LOG(INFO, INIT, "rank %d revoked its communicator of %d ranks (%s)", c->rank, c->size,
             duet_status_str(status));
}

static duet_status_t revoke_(duet_comm_t c)
{
    duet_status_t st = duet_comm_check(c, "duet_comm_revoke");
    if (st) return st;
    duet_comm_revoke_status_(c, DUET_ERR_REVOKED);
    return DUET_OK;
}
duet_status_t duet_comm_revoke(duet_comm_t c) { DUET_COMM_CALL(c, "duet_comm_revoke", revoke_(c)); }

/* ---------------------------------------------------------------- agree */

/* Waits until rank r has posted seq (1, *flag gets its flag) or is dead without having
 * posted it (0). On one host a post outlives its poster, so every survivor sees the same. */
static duet_status_t await_post(duet_comm_t c, int r, uint64_t seq, int *posted, uint64_t *flag, const char *fn)
{
    duet_status_t st = duet_ft_await(c, r, offsetof(duet_ft_area_t, posted), seq, posted, "flag", fn);
    if (st == DUET_OK && *posted)
        st = duet_ft_read(c, r, offsetof(duet_ft_area_t, flag) + ((seq >> 8) & 1) * sizeof *flag, flag, sizeof *flag);
    return st;
}

static duet_status_t agree(duet_comm_t c, int *flag)
{
    const char *fn = "duet_comm_agree";
    uint64_t call = ++c->ft_calls;
    size_t words = duet_ft_set_words(c->size);
    uint64_t *set = calloc(words, sizeof *set);
    if (!set) return DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "%s: out of host memory", fn);
    if (c->net_peers) { /* members on other hosts: duet_comm_ft_net.c */
        uint64_t f = (uint64_t)(uint32_t)*flag;
        duet_status_t st = duet_ft_consensus_net(c, call, &f, set, fn);
        if (st) {
            free(set);
            return st;
        }
        free(c->agreed_failed);
        c->agreed_failed = set;
        *flag = (int)(uint32_t)f;
        return DUET_OK;
    }
    duet_ft_area_t *mine = duet_comm_ft(c);
    duet_status_t st = DUET_OK;
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
        uint64_t seq = duet_ft_seq(call, attempt);
        if ((st = decide(c, seq, set, fn))) break;
        mine->flag[call & 1] = (uint64_t)(uint32_t)*flag;
        atomic_store_explicit(&mine->posted, seq, memory_order_release);
        uint64_t result = (uint64_t)(uint32_t)*flag;
        int complete = 1;
        for (int r = 0; r < c->size && st == DUET_OK; r++) {
            if (r == c->rank || duet_ft_set_has(set, r)) continue;
            int posted;
            uint64_t f;
            if ((st = await_post(c, r, seq, &posted, &f, fn))) break;
            if (posted) result &= f;
            else complete = 0; /* died before posting: every survivor sees it so, and tries again */
        }
        if (st) break;
        if (complete) {
            free(c->agreed_failed);
            c->agreed_failed = set;
            *flag = (int)(uint32_t)result;
            return DUET_OK;
        }
    }
    free(set);
    if (st == DUET_OK)
        st = DUET_FAIL(DUET_ERR_PEER_FAILED, INIT, "%s: %d attempts, each ended by a death", fn, ATTEMPTS);
    return st;
}

static duet_status_t duet_comm_agree_(duet_comm_t c, int *flag)
{
    duet_status_t st = duet_comm_check(c, "duet_comm_agree");
    if (st) return st;
    if (!flag) return DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "duet_comm_agree: flag is NULL");
    st = agree(c, flag);
    return st ? duet_error_wrap(st, "duet_comm_agree") : DUET_OK;
}
duet_status_t duet_comm_agree(duet_comm_t c, int *flag)
{
    DUET_COMM_CALL(c, "duet_comm_agree", duet_comm_agree_(c, flag));
}

/* ---------------------------------------------------------------- shrink */

/* The new communicator's bootstrap id, from its rank 0 (`lead`, a rank of c), by the parity
 * of the call (nobody is a call ahead of the lead while it has not published). Only the
 * listener's address goes through the FT area (a net get across hosts): every survivor derives
 * the secret from c's and the shrink's sequence number. */
static duet_status_t lead_id(duet_comm_t c, int lead, uint64_t seq, const int *heap_pe, int count,
                             duet_unique_id_t *id, const char *fn)
{
    _Static_assert(sizeof(duet_boot_addr_t) <= sizeof(((duet_ft_area_t *)0)->new_id[0]), "the address fits");
    size_t slot = (seq >> 8) & 1;
    uint8_t secret[DUET_SECRET_BYTES];
    duet_boot_derive_secret(c->boot.secret, "shrink", seq, 0, secret);
    duet_boot_addr_t addr;
    duet_status_t st = DUET_OK;
    if (lead == c->rank) {
        duet_ft_area_t *a = duet_comm_ft(c);
        st = duet_boot_id_create_secret(id, secret, duet_comm_boot_scope_(c, heap_pe, count));
        memset(secret, 0, sizeof secret);
        if (st) return st;
        duet_boot_id_addr(id, &addr);
        memcpy(a->new_id[slot], &addr, sizeof addr);
        atomic_store_explicit(&a->id_ready, seq, memory_order_release);
        return DUET_OK;
    }
    int ready;
    st = duet_ft_await(c, lead, offsetof(duet_ft_area_t, id_ready), seq, &ready, "new communicator's bootstrap id", fn);
    if (st == DUET_OK && !ready)
        st = DUET_FAIL(DUET_ERR_PEER_FAILED, INIT, "%s: %s, the new communicator's rank 0, died during "
                       "the shrink; shrink again", fn, duet_comm_rank_name(c, lead, (char[96]){0}, 96));
    if (st == DUET_OK)
        st = duet_ft_read(c, lead, offsetof(duet_ft_area_t, new_id) + slot * sizeof(((duet_ft_area_t *)0)->new_id[0]),
                          &addr, sizeof addr);
    if (st == DUET_OK) duet_boot_id_rebuild(id, &addr, secret);
    memset(secret, 0, sizeof secret);
    return st;
}

/* For the new bootstrap's root: is new rank r (old rank old_of[r] of c) dead? */
typedef struct {
    duet_comm_t c;
    const int *old_of;
} join_watch_t;

static int joiner_gone(void *arg, int r)
{
    const join_watch_t *w = arg;
    return duet_ft_is_dead(w->c, w->old_of[r]);
}

static duet_status_t shrink(duet_comm_t c, duet_comm_t *newcomm)
{
    const char *fn = "duet_comm_shrink";
    uint64_t seq = duet_ft_seq(++c->ft_calls, 0);
    size_t words = duet_ft_set_words(c->size);
    uint64_t *set = calloc(words, sizeof *set);
    int *heap_pe = malloc(sizeof(int) * (size_t)c->size), *old_of = malloc(sizeof(int) * (size_t)c->size);
    duet_status_t st = set && heap_pe && old_of ? DUET_OK
                                                : DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "%s: out of host memory", fn);
    if (st == DUET_OK && c->net_peers) { /* members on other hosts: duet_comm_ft_net.c */
        uint64_t ignored = ~0ull;
        st = duet_ft_consensus_net(c, c->ft_calls, &ignored, set, fn);
    } else if (st == DUET_OK) {
        st = decide(c, seq, set, fn);
    }
    int count = 0, my_rank = -1, lead = -1;
    for (int r = 0; st == DUET_OK && r < c->size; r++) {
        if (duet_ft_set_has(set, r)) continue;
        if (lead < 0) lead = r;
        if (r == c->rank) my_rank = count;
        old_of[count] = r;
        heap_pe[count++] = c->heap_pe[r];
    }
    duet_unique_id_t id;
    if (st == DUET_OK) st = lead_id(c, lead, seq, heap_pe, count, &id, fn);
    duet_boot_t boot;
    int joined = 0;
    join_watch_t watch = {c, old_of}; /* a survivor that dies now is not waited for */
    if (st == DUET_OK && (st = duet_boot_join_watched(&boot, &id, my_rank, count, duet_cfg()->bootstrap_timeout,
                                                      joiner_gone, &watch)) == DUET_OK)
        joined = 1;
    /* a team slot free on every survivor */
    duet_comm_t root = duet_ft_root(c);
    duet_heap_t *h = root->heap;
    uint64_t *used = st == DUET_OK ? malloc(sizeof *used * (size_t)count) : NULL;
    if (st == DUET_OK && !used) st = DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "%s: out of host memory", fn);
    if (st == DUET_OK) st = duet_boot_allgather(&boot, &h->slots_used, used, sizeof *used);
    int slot = -1;
    if (st == DUET_OK) {
        uint64_t all = 1; /* slot 0 is the root communicator's */
        for (int i = 0; i < count; i++) all |= used[i];
        for (int s = 1; s < DUET_TEAM_SLOTS && slot < 0; s++)
            if (!(all & (1ull << s))) slot = s;
        if (slot < 0)
            st = DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "%s: all %d team sync slots are in use by teams of the "
                           "survivors; destroy some first", fn, DUET_TEAM_SLOTS - 1);
    }
    free(used);
    if (st == DUET_OK) { /* my words of the slot start from zero before any member may use them */
        st = duet_heap_slot_reset(h, slot);
    }
    if (st == DUET_OK) st = duet_boot_barrier(&boot);
    if (st == DUET_OK) {
        h->slots_used |= 1ull << slot;
        st = duet_comm_build_(newcomm, &boot, root, heap_pe, slot, 0, root->tag, -1);
        heap_pe = NULL; /* the communicator's now (or freed on failure) */
        joined = 0;     /* so is the bootstrap */
        if (st != DUET_OK) h->slots_used &= ~(1ull << slot);
    }
    if (joined) duet_boot_close(&boot);
    if (st != DUET_OK && my_rank >= 0 && lead >= 0) { /* the new bootstrap's messages number its own ranks */
        char map[256];
        int at = 0;
        for (int i = 0; i < count && at < (int)sizeof map - 24; i++)
            at += snprintf(map + at, sizeof map - (size_t)at, "%s%d=%d", i ? " " : "", i, old_of[i]);
        if (at >= (int)sizeof map - 24) snprintf(map + at, sizeof map - (size_t)at, " ...");
        char where[320];
        snprintf(where, sizeof where, "on the new communicator (its rank=rank here: %s)", map);
        duet_error_wrap(st, where);
    }
    if (st == DUET_OK)
        DUET_LOG(INFO, INIT, "%s: %d of %d ranks go on (%s here is rank %d of the new one)", fn, count, c->size,
                 duet_comm_rank_name(c, c->rank, (char[96]){0}, 96), my_rank);
    free(set);
    free(heap_pe);
    free(old_of);
    return st;
}

static duet_status_t duet_comm_shrink_(duet_comm_t c, duet_comm_t *newcomm)
{
    duet_status_t st = duet_comm_check(c, "duet_comm_shrink");
    if (st) return st;
    if (!newcomm) return DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "duet_comm_shrink: newcomm is NULL");
    *newcomm = NULL;
    st = shrink(c, newcomm);
    return st ? duet_error_wrap(st, "duet_comm_shrink") : DUET_OK;
}
duet_status_t duet_comm_shrink(duet_comm_t c, duet_comm_t *newcomm)
{
    DUET_COMM_CALL(c, "duet_comm_shrink", duet_comm_shrink_(c, newcomm));
}

/* ---------------------------------------------------------------- state */

static duet_status_t comm_status_(duet_comm_t c)
{
    duet_status_t st = duet_comm_check(c, "duet_comm_status");
    if (st) return st;
    duet_ft_net_refresh(c); /* an operation may have seen a net peer's failure first */
    if (c->async_failure && (st = c->async_failure(c, "duet_comm_status"))) return st; /* a kernel's finding */
    int a = atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_acquire);
    if (a) return duet_comm_unusable_(c, "duet_comm_status", a);
    char name[96];
    for (int m = 0; m < c->size; m++) /* the detector marks the dead before it raises the word */
        if (duet_ft_is_dead(c, m))
            return duet_error_set(DUET_ERR_PEER_FAILED, "duet_comm_status: %s died; duet_comm_shrink gives "
                                  "a communicator of the survivors", duet_comm_rank_name(c, m, name, sizeof name));
    return DUET_OK;
}
duet_status_t duet_comm_status(duet_comm_t c) { DUET_COMM_CALL(c, "duet_comm_status", comm_status_(c)); }

duet_status_t duet_comm_unusable_(duet_comm_t c, const char *fn, int status)
{
    char name[96];
    if (status == DUET_ERR_REVOKED)
        return duet_error_set(DUET_ERR_REVOKED, "%s: the communicator was revoked by %s (duet_comm_shrink "
                              "gives a new one)", fn,
                              duet_comm_rank_name(c, atomic_load_explicit(&duet_comm_ft(c)->revoked_by,
                                                                          memory_order_relaxed) - 1,
                                                  name, sizeof name));
    if (status == DUET_ERR_INVALID_ARG) /* the collectives' word for mismatched calls (coll/duet_coll_sig.h) */
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: the communicator was revoked by %s, which found that "
                              "the ranks made different collective calls (duet_comm_shrink gives a new one)", fn,
                              duet_comm_rank_name(c, atomic_load_explicit(&duet_comm_ft(c)->revoked_by,
                                                                          memory_order_relaxed) - 1,
                                                  name, sizeof name));
    return duet_error_set(status < 0 ? (duet_status_t)status : DUET_ERR_PEER_FAILED,
                          "%s: the communicator has lost a member (%s); duet_comm_shrink gives one of the "
                          "survivors", fn, c->abort_why[0] ? c->abort_why : "a rank died");
}

static duet_status_t duet_comm_get_failed_(duet_comm_t c, int *ranks, int max, int *nfailed)
{
    duet_status_t st = duet_comm_check(c, "duet_comm_get_failed");
    if (st) return st;
    if (!nfailed || (max > 0 && !ranks))
        return duet_error_set(DUET_ERR_INVALID_ARG, "duet_comm_get_failed: %s is NULL", nfailed ? "ranks" : "nfailed");
    int n = 0;
    for (int m = 0; m < c->size; m++) {
        int failed = c->agreed_failed ? duet_ft_set_has(c->agreed_failed, m) : duet_ft_is_dead(c, m);
        if (!failed) continue;
        if (n < max) ranks[n] = m;
        n++;
    }
    *nfailed = n;
    return DUET_OK;
}
duet_status_t duet_comm_get_failed(duet_comm_t c, int *ranks, int max, int *nfailed)
{
    DUET_COMM_CALL(c, "duet_comm_get_failed", duet_comm_get_failed_(c, ranks, max, nfailed));
}

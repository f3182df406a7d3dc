/*
 * Teams: splitting a communicator by color/key or by stride.
 *
 * A split is collective over the parent. Two out-of-band exchanges over the parent:
 *   1. everyone's (color, key, sync slots in use) -> each rank finds its group, its new
 *      rank, and a sync slot free on every member;
 *   2. each group's leader (its first member) makes a listener for the group's own
 *      bootstrap; only its address travels over the parent: every member derives the
 *      group's secret from the parent's (HMAC over "split", the parent's exchange count and
 *      the color), so no secret crosses the wire. The members join it.
 * The new communicator shares the parent's heap (same symmetric addresses).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/duet_comm.h"
#include "duet/duet_ext.h"
#include "core/duet_ft.h"
#include "heap/duet_heap_dev.h"

typedef struct {
    int32_t color, key;
    uint64_t slots_used;
} split_info_t;

typedef struct {
    int32_t status;
    int32_t pad;
    duet_boot_addr_t addr; /* the leader's listener: no secret */
} split_id_t;

typedef struct {
    int key, parent_rank;
} member_t;

static int member_cmp(const void *a, const void *b)
{
    const member_t *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->parent_rank - y->parent_rank;
}

/* A group's first member opens the group's listener with its derived secret, bound as the
 * members' hosts allow (ranks: their parent ranks, n of them); what it tells the others. */
static split_id_t listen_for(duet_comm_t parent, const uint8_t secret[DUET_SECRET_BYTES], const int *ranks, int n,
                             duet_unique_id_t *id)
{
    split_id_t out = {DUET_ERR_NO_MEMORY, 0, {0, 0, 0, 0}};
    int *heap_pe = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!heap_pe) return out;
    for (int i = 0; i < n; i++) heap_pe[i] = parent->heap_pe[ranks[i]];
    out.status = duet_boot_id_create_secret(id, secret, duet_comm_boot_scope_(parent, heap_pe, n));
    if (out.status == DUET_OK) duet_boot_id_addr(id, &out.addr);
    free(heap_pe);
    return out;
}

static duet_status_t split(duet_comm_t parent, int color, int key, duet_comm_t *newcomm)
{
    int n = parent->size;
    split_info_t mine = {color, key, parent->heap->slots_used};
    split_info_t *all = malloc(sizeof *all * (size_t)n);
    split_id_t *ids = malloc(sizeof *ids * (size_t)n);
    member_t *members = malloc(sizeof *members * (size_t)n);
    int *heap_pe = NULL;
    duet_status_t st = all && ids && members ? DUET_OK
                                             : DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "out of host memory");
    if (st == DUET_OK) st = duet_boot_allgather(&parent->boot, &mine, all, sizeof mine);
    int count = 0, my_index = -1, slot = -1;
    if (st == DUET_OK && color != DUET_COLOR_UNDEFINED) {
        uint64_t used = 0;
        for (int r = 0; r < n; r++) {
            if (all[r].color != color) continue;
            members[count++] = (member_t){all[r].key, r};
            used |= all[r].slots_used;
        }
        qsort(members, (size_t)count, sizeof *members, member_cmp);
        for (int i = 0; i < count; i++)
            if (members[i].parent_rank == parent->rank) my_index = i;
        for (int s = 1; s < DUET_TEAM_SLOTS && slot < 0; s++)
            if (!(used & (1ull << s))) slot = s;
    }
    /* exchange 2: the leaders' addresses (every rank takes part, members or not); the count of
     * the parent's exchanges names this split alike on every rank */
    uint8_t secret[DUET_SECRET_BYTES];
    duet_boot_derive_secret(parent->boot.secret, "split", parent->boot.seq, (uint64_t)(uint32_t)color, secret);
    split_id_t my_id = {DUET_OK, 0, {0, 0, 0, 0}};
    duet_unique_id_t id;
    if (st == DUET_OK && my_index == 0) {
        int *ranks = malloc(sizeof(int) * (size_t)count);
        for (int i = 0; ranks && i < count; i++) ranks[i] = members[i].parent_rank;
        if (slot >= 0 && ranks) my_id = listen_for(parent, secret, ranks, count, &id);
        else my_id.status = DUET_ERR_NO_MEMORY;
        free(ranks);
    }
    int listening = my_index == 0 && my_id.status == DUET_OK && st == DUET_OK; /* until the join takes it */
    if (st == DUET_OK) st = duet_boot_allgather(&parent->boot, &my_id, ids, sizeof my_id);
    if (st == DUET_OK && duet_cfg()->test_split_fail)
        st = DUET_FAIL(DUET_ERR_PEER_FAILED, INIT, "split: failing after the exchange (DUET_TEST_SPLIT_FAIL)");
    if (st != DUET_OK || color == DUET_COLOR_UNDEFINED) goto out;
    const split_id_t *leader = &ids[members[0].parent_rank];
    if (slot < 0) {
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "split: all %d team sync slots are in use by teams "
                       "of these ranks; destroy some teams first", DUET_TEAM_SLOTS - 1);
        goto out;
    }
    if (leader->status != DUET_OK) {
        st = DUET_FAIL((duet_status_t)leader->status, INIT, "split: the group's leader (parent rank %d) "
                       "could not open a bootstrap listener", members[0].parent_rank);
        goto out;
    }
    heap_pe = malloc(sizeof(int) * (size_t)count);
    if (!heap_pe) {
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "out of host memory");
        goto out;
    }
    for (int i = 0; i < count; i++) heap_pe[i] = parent->heap_pe[members[i].parent_rank];
    duet_boot_t boot;
    duet_boot_id_rebuild(&id, &leader->addr, secret);
    memset(secret, 0, sizeof secret);
    st = duet_boot_join(&boot, &id, my_index, count, duet_cfg()->bootstrap_timeout);
    listening = 0; /* the join took the listener (and closes it on failure) */
    if (st != DUET_OK) goto out;
    /* my flags and fault-tolerance words of the slot start from zero before any member may
     * use them */
    st = duet_heap_slot_reset(parent->heap, slot);
    if (st == DUET_OK) st = duet_boot_barrier(&boot);
    if (st != DUET_OK) {
        duet_boot_close(&boot);
        goto out;
    }
    parent->heap->slots_used |= 1ull << slot;
    st = duet_comm_build_(newcomm, &boot, parent, heap_pe, slot, 0, parent->tag, -1);
    heap_pe = NULL; /* owned by the communicator (or freed on failure) */
    if (st != DUET_OK) parent->heap->slots_used &= ~(1ull << slot);
out:
    if (listening) duet_boot_id_forget(&id); /* the group failed before its root joined */
    free(all);
    free(ids);
    free(members);
    free(heap_pe);
    return st;
}

duet_boot_scope_t duet_comm_boot_scope_(duet_comm_t c, const int *heap_pes, int n)
{
    const int *host_of = duet_ft_root(c)->host_of;
    for (int i = 1; i < n; i++)
        if (!host_of || host_of[heap_pes[i]] != host_of[heap_pes[0]]) return DUET_BOOT_HOSTS;
    return DUET_BOOT_ONE_HOST;
}

duet_status_t duet_ext_group_unique_id(duet_comm_t parent, int color, const int *members, int nmembers,
                                       duet_unique_id_t *id)
{
    const char *fn = "duet_ext_group_unique_id";
    duet_status_t st = duet_comm_check_usable(parent, fn);
    if (st) return st;
    int n = parent->size, me = -1;
    if (!id || nmembers < 0 || nmembers > n || (nmembers && !members))
        st = DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "%s: id %p, %d members at %p: not a group of %d ranks", fn,
                       (void *)id, nmembers, (const void *)members, n);
    for (int i = 0; st == DUET_OK && i < nmembers; i++) {
        if (members[i] < 0 || members[i] >= n)
            st = DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "%s: member %d is rank %d, not one of [0, %d)", fn, i,
                           members[i], n);
        if (members[i] == parent->rank) me = i;
    }
    if (st == DUET_OK && nmembers && me < 0)
        st = DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "%s: rank %d is not among the %d members it names", fn,
                       parent->rank, nmembers);
    /* the exchange itself: every rank takes part, even after a local error (nobody waits alone) */
    uint8_t secret[DUET_SECRET_BYTES];
    duet_boot_derive_secret(parent->boot.secret, "group", parent->boot.seq, (uint64_t)(uint32_t)color, secret);
    split_id_t mine = {DUET_OK, 0, {0, 0, 0, 0}}, *ids = malloc(sizeof *ids * (size_t)n);
    if (me == 0) mine = st == DUET_OK ? listen_for(parent, secret, members, nmembers, id)
                                      : (split_id_t){st, 0, {0, 0, 0, 0}}; /* the members fail at once */
    duet_status_t xst = ids ? duet_boot_allgather(&parent->boot, &mine, ids, sizeof mine)
                            : DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "%s: out of host memory", fn);
    if (st == DUET_OK) st = xst;
    if (st == DUET_OK && duet_cfg()->test_split_fail)
        st = DUET_FAIL(DUET_ERR_PEER_FAILED, INIT, "%s: failing after the exchange (DUET_TEST_SPLIT_FAIL)", fn);
    if (st == DUET_OK && nmembers && ids[members[0]].status != DUET_OK)
        st = DUET_FAIL((duet_status_t)ids[members[0]].status, INIT, "%s: the group's first member (rank %d) could "
                       "not make its id (%s)", fn, members[0], duet_status_str((duet_status_t)ids[members[0]].status));
    if (st == DUET_OK && nmembers && me > 0) duet_boot_id_rebuild(id, &ids[members[0]].addr, secret);
    if (st != DUET_OK && me == 0 && mine.status == DUET_OK) duet_boot_id_forget(id); /* nobody will join it */
    memset(secret, 0, sizeof secret);
    free(ids);
    return st;
}

static duet_status_t duet_comm_split_(duet_comm_t parent, int color, int key, duet_comm_t *newcomm)
{
    duet_status_t st = duet_comm_check(parent, "duet_comm_split");
    if (st) return st;
    if (!newcomm) return DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "duet_comm_split: newcomm is NULL");
    *newcomm = NULL;
    if (color < 0 && color != DUET_COLOR_UNDEFINED)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, INIT,
                         "duet_comm_split: color %d is negative (only DUET_COLOR_UNDEFINED may be)", color);
    st = split(parent, color, key, newcomm);
    return st ? duet_error_wrap(st, "duet_comm_split") : DUET_OK;
}
duet_status_t duet_comm_split(duet_comm_t parent, int color, int key, duet_comm_t *newcomm)
{
    DUET_COMM_CALL(parent, "duet_comm_split", duet_comm_split_(parent, color, key, newcomm));
}

static duet_status_t duet_comm_split_strided_(duet_comm_t parent, int start, int stride, int size,
                                              duet_comm_t *newcomm)
{
    duet_status_t st = duet_comm_check(parent, "duet_comm_split_strided");
    if (st) return st;
    if (!newcomm) return DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "duet_comm_split_strided: newcomm is NULL");
    *newcomm = NULL;
    long last = (long)start + (long)stride * (long)(size - 1);
    if (size < 1 || start < 0 || start >= parent->size || last < 0 || last >= parent->size ||
        (stride == 0 && size > 1))
        return DUET_FAIL(DUET_ERR_INVALID_ARG, INIT,
                         "duet_comm_split_strided: start %d, stride %d, size %d do not fit in %d ranks",
                         start, stride, size, parent->size);
    /* my position in the sequence, if any, is my key; members share one color */
    int color = DUET_COLOR_UNDEFINED, key = 0;
    for (int i = 0; i < size; i++)
        if (start + stride * i == parent->rank) {
            color = 0;
            key = i;
            break;
        }
    st = split(parent, color, key, newcomm);
    return st ? duet_error_wrap(st, "duet_comm_split_strided") : DUET_OK;
}
duet_status_t duet_comm_split_strided(duet_comm_t parent, int start, int stride, int size, duet_comm_t *newcomm)
{
    DUET_COMM_CALL(parent, "duet_comm_split_strided", duet_comm_split_strided_(parent, start, stride, size, newcomm));
}

int duet_comm_translate_rank(duet_comm_t src, int rank, duet_comm_t dest)
{
    if (duet_comm_check(src, "duet_comm_translate_rank") || duet_comm_check(dest, "duet_comm_translate_rank") ||
        rank < 0 || rank >= src->size || src->heap != dest->heap)
        return -1;
    int pe = src->heap_pe[rank];
    for (int r = 0; r < dest->size; r++)
        if (dest->heap_pe[r] == pe) return r;
    return -1;
}

const char *duet_comm_rank_name(duet_comm_t c, int r, char *buf, size_t len)
{
    int pe = r >= 0 && r < c->size ? c->heap_pe[r] : r;
    if (!c->parent || pe == r) snprintf(buf, len, "rank %d", r);
    else if (duet_ft_root(c) == duet_comm_world()) snprintf(buf, len, "rank %d (world rank %d)", r, pe);
    else snprintf(buf, len, "rank %d (rank %d of the communicator it was split or shrunk from)", r, pe);
    return buf;
}

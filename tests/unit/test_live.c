/*
 * test_live.c — the table of live communicator handles (src/core/duet_comm_live.c), driven
 * with addresses only (the table never follows one), in a process that has no communicator.
 *
 *   1. Four addresses of one chain (the same hash) are added: they take four slots in a row,
 *      and each is found.
 *   2. Removing one inside the chain leaves a tombstone: the ones after it are still found.
 *   3. Removing the chain's last turns its slot and the tombstones just before it back into
 *      empty slots (nothing lies beyond them); the entry before them is still found.
 *   4. A tombstone is reused by the next insertion on its chain.
 *   5. Removing every entry leaves the whole chain empty, and 100,000 add/remove cycles of
 *      colliding addresses leave no tombstone behind: a lookup of a stale handle stops at once.
 */
#include "duet_test.h"

#include "core/duet_comm.h"

#define CHAIN 5

static duet_comm_t slot_at(size_t i) { return atomic_load(&duet_comm_live_[i & (DUET_COMM_LIVE_SLOTS - 1)]); }

/* CHAIN addresses with the same hash, 16-byte aligned as malloc's are. */
static void colliding(duet_comm_t *out, size_t *hash)
{
    int n = 0;
    size_t want = 0;
    for (uintptr_t a = 0x100000; n < CHAIN; a += 16) {
        size_t h = duet_comm_live_hash((const void *)a);
        if (n == 0) want = h;
        if (h == want) out[n++] = (duet_comm_t)a;
    }
    *hash = want;
}

static int tombs(void)
{
    int t = 0;
    for (size_t i = 0; i < DUET_COMM_LIVE_SLOTS; i++) t += slot_at(i) == DUET_COMM_LIVE_TOMB;
    return t;
}

int main(void)
{
    duet_comm_t c[CHAIN];
    size_t h;
    colliding(c, &h);
    /* 1. */
    for (int i = 0; i < 4; i++) CHECK_OK(duet_comm_live_add(c[i]));
    for (int i = 0; i < 4; i++) {
        EXPECT(slot_at(h + (size_t)i) == c[i], "entry %d is not in slot hash + %d", i, i);
        EXPECT(duet_comm_is_live(c[i]), "entry %d is not found", i);
    }
    EXPECT(!duet_comm_is_live(c[4]), "an address never added is found");
    /* 2. */
    duet_comm_live_remove(c[1]);
    EXPECT(slot_at(h + 1) == DUET_COMM_LIVE_TOMB, "a removal inside the chain left no tombstone");
    EXPECT(!duet_comm_is_live(c[1]), "a removed entry is found");
    EXPECT(duet_comm_is_live(c[2]) && duet_comm_is_live(c[3]), "the entries after a tombstone are lost");
    duet_comm_live_remove(c[2]);
    EXPECT(slot_at(h + 2) == DUET_COMM_LIVE_TOMB, "the second removal inside the chain left no tombstone");
    EXPECT(duet_comm_is_live(c[3]), "the chain's last entry is lost behind two tombstones");
    /* 3. */
    duet_comm_live_remove(c[3]);
    EXPECT(slot_at(h + 3) == NULL && slot_at(h + 2) == NULL && slot_at(h + 1) == NULL,
           "removing the chain's last left slots %p %p %p, want all empty", (void *)slot_at(h + 1),
           (void *)slot_at(h + 2), (void *)slot_at(h + 3));
    EXPECT(slot_at(h) == c[0] && duet_comm_is_live(c[0]), "the chain's first entry is lost");
    /* 4. */
    CHECK_OK(duet_comm_live_add(c[1]));
    CHECK_OK(duet_comm_live_add(c[2]));
    duet_comm_live_remove(c[0]);
    EXPECT(slot_at(h) == DUET_COMM_LIVE_TOMB, "removing the chain's first left no tombstone");
    CHECK_OK(duet_comm_live_add(c[4]));
    EXPECT(slot_at(h) == c[4], "the tombstone was not reused by the next insertion");
    EXPECT(duet_comm_is_live(c[1]) && duet_comm_is_live(c[2]) && duet_comm_is_live(c[4]), "entries lost");
    /* 5. */
    duet_comm_live_remove(c[4]);
    duet_comm_live_remove(c[1]);
    duet_comm_live_remove(c[2]);
    for (int i = 0; i < CHAIN; i++) EXPECT(slot_at(h + (size_t)i) == NULL, "slot hash + %d is not empty", i);
    for (int k = 0; k < 100000; k++) {
        int a = k % CHAIN, b = (k + 2) % CHAIN;
        CHECK_OK(duet_comm_live_add(c[a]));
        CHECK_OK(duet_comm_live_add(c[b]));
        duet_comm_live_remove(c[a]);
        duet_comm_live_remove(c[b]);
    }
    EXPECT(tombs() == 0, "%d tombstones are left after add/remove cycles", tombs());
    for (int i = 0; i < CHAIN; i++) EXPECT(!duet_comm_is_live(c[i]), "entry %d is found after the cycles", i);
    int rc = dt_finish();
    if (rc == 0) printf("test_live: passed\n");
    return rc;
}

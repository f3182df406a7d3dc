/*
 * test_group_id.c — duet_ext_group_unique_id (include/duet/duet_ext.h): a unique id for a group
 * of a communicator's ranks whose secret every member derives (ncclCommSplit's way to its new
 * communicators), run by every rank under duetrun.
 *
 * Covers:
 *   - two groups (odd and even ranks, in reverse rank order, so the first member is not the
 *     lowest rank) and, from 3 ranks, one rank in no group: duet_comm_init_rank on each
 *     member's id gives a communicator of the group's size whose allreduce of the members'
 *     world ranks is right (a member whose derived secret differed could not join);
 *   - the same twice in a row: the second call's ids differ from the first's (a fresh listener;
 *     its secret derives from a later exchange count) and work as well;
 *   - a list that leaves the caller out, or names a rank out of range: DUET_ERR_INVALID_ARG on
 *     that rank, and the others' call still ends (they take part in the exchange).
 */
#include "duet_test.h"
#include "duet/duet_ext.h"

static int me, np;

static uint64_t id_hash(const duet_unique_id_t *id)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof id->internal; i++) h = (h ^ (uint8_t)id->internal[i]) * 1099511628211ull;
    return h;
}

/* My group: odd or even world ranks, highest first; the last rank is in none from 3 ranks on. */
static int group_of(int r) { return np >= 3 && r == np - 1 ? -1 : r % 2; }

static int members_of(int color, int *out)
{
    int n = 0;
    for (int r = np - 1; r >= 0; r--)
        if (group_of(r) == color) out[n++] = r;
    return n;
}

static uint64_t make_and_use(duet_comm_t W)
{
    int color = group_of(me), members[64] = {0};
    int n = color < 0 ? 0 : members_of(color, members);
    duet_unique_id_t id;
    memset(&id, 0, sizeof id);
    CHECK_OK(duet_ext_group_unique_id(W, color, color < 0 ? NULL : members, n, &id));
    uint64_t h = color < 0 ? 0 : id_hash(&id);
    if (color >= 0) {
        int newrank = -1;
        for (int i = 0; i < n; i++)
            if (members[i] == me) newrank = i;
        duet_comm_t g = NULL;
        CHECK_OK(duet_comm_init_rank(&g, n, id, newrank, NULL));
        EXPECT(duet_comm_size(g) == n && duet_comm_rank(g) == newrank, "the group's communicator: rank %d of %d, "
               "want %d of %d", duet_comm_rank(g), duet_comm_size(g), newrank, n);
        int64_t x = me, sum = 0, want = 0;
        for (int i = 0; i < n; i++) want += members[i];
        EXPECT_OK(duet_allreduce(&x, &sum, 1, DUET_INT64, DUET_SUM, g, NULL));
        EXPECT(sum == want, "the group's allreduce of world ranks gave %lld, want %lld", (long long)sum,
               (long long)want);
        CHECK_OK(duet_comm_destroy(g));
    }
    memset(&id, 0, sizeof id);
    return h;
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    CHECK_OK(duet_init());
    duet_comm_t W = dt_world(&me, &np);
    CHECK(np <= 64, "at most 64 ranks");
    uint64_t h1 = make_and_use(W), h2 = make_and_use(W);
    if (group_of(me) >= 0) EXPECT(h1 != h2, "two calls gave my group the same id");

    /* bad lists: refused on the rank they concern; every rank's call still ends */
    int bad[2] = {(me + 1) % np, np}, n = np >= 2 ? 1 : 0;
    duet_unique_id_t id;
    duet_status_t st = duet_ext_group_unique_id(W, 3, n ? bad : NULL, n, &id);
    if (n) EXPECT(st == DUET_ERR_INVALID_ARG && strstr(duet_last_error(), "not among"),
                  "a list without me: %s (%s)", duet_status_str(st), duet_last_error());
    st = duet_ext_group_unique_id(W, 4, bad + 1, 1, &id);
    EXPECT(st == DUET_ERR_INVALID_ARG && strstr(duet_last_error(), "not one of"), "a rank out of range: %s (%s)",
           duet_status_str(st), duet_last_error());
    EXPECT_BARRIER_ALL("end");
    if (me == 0) printf("test_group_id: %d ranks: done\n", np);
    CHECK_OK(duet_finalize());
    return dt_finish();
}

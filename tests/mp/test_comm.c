/*
 * test_comm.c — communicators and teams.
 *
 * Run under duetrun at any rank count. Covers:
 *   - duet_init twice / duet_finalize twice (a reference count), finalize refused while a
 *     team of the world is alive, a third finalize refused;
 *   - duet_comm_split by color/key: several colorings, reversed keys, ties (parent order),
 *     DUET_COLOR_UNDEFINED -> NULL, negative colors refused; each new team's size, rank and
 *     duet_comm_translate_rank both ways are checked against a reference ordering;
 *   - team barrier and one-sided calls through a team (pe numbers are team ranks; the
 *     symmetric addresses of the world heap are valid in the team; duet_ptr agrees);
 *   - a split of a split; a team destroyed before the teams split from it (they stay usable,
 *     split again, translate; the rest destroyed in any order; a parent and its child
 *     destroyed at once by two threads, 20 times); a root communicator with a live team -> error;
 *   - duet_comm_split_strided: start/stride/size variants (stride 2, negative, size 1,
 *     stride 0 with size 1) and invalid arguments -> DUET_ERR_INVALID_ARG on every rank;
 *   - 100 split/destroy cycles (team sync slots are recycled); all 63 team slots held at
 *     once, the 64th split refused with DUET_ERR_NO_MEMORY;
 *   - independent communicators: a unique id from one rank handed to the others with puts
 *     on the world, duet_comm_init_rank with a reversed rank order; its own heap (its malloc
 *     is independent of the world's); two of them alive at once; split of one; destroy.
 */
#include "duet_test.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1, npes;
static duet_comm_t W;
static uint64_t *g_buf;   /* symmetric, npes + 8 entries: team data       */
static uint64_t *g_count; /* symmetric: one counter for team atomics       */

/* The parent ranks of my group in order (key, then parent rank); returns the count. */
static int reference_members(const int *color, const int *key, int n, int mine, int *out)
{
    int cnt = 0;
    if (mine == DUET_COLOR_UNDEFINED) return 0;
    for (int r = 0; r < n; r++)
        if (color[r] == mine) out[cnt++] = r;
    for (int i = 1; i < cnt; i++) /* insertion sort: stable, so ties keep parent order */
        for (int j = i; j > 0 && key[out[j - 1]] > key[out[j]]; j--) {
            int t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return cnt;
}

/* Checks team t against the expected parent ranks `members` (of parent p). */
static void check_team(duet_comm_t p, duet_comm_t t, const int *members, int cnt, const char *what)
{
    int my_parent_rank = duet_comm_rank(p), idx = -1;
    for (int i = 0; i < cnt; i++)
        if (members[i] == my_parent_rank) idx = i;
    if (idx < 0) {
        CHECK(t == NULL, "%s: not a member but got a team", what);
        return;
    }
    CHECK(t != NULL, "%s: a member but got NULL", what);
    CHECK(duet_comm_size(t) == cnt, "%s: size %d, want %d", what, duet_comm_size(t), cnt);
    CHECK(duet_comm_rank(t) == idx, "%s: rank %d, want %d", what, duet_comm_rank(t), idx);
    for (int i = 0; i < cnt; i++)
        CHECK(duet_comm_translate_rank(t, i, p) == members[i], "%s: team rank %d -> parent %d, want %d",
              what, i, duet_comm_translate_rank(t, i, p), members[i]);
    for (int r = 0; r < duet_comm_size(p); r++) {
        int want = -1;
        for (int i = 0; i < cnt; i++)
            if (members[i] == r) want = i;
        CHECK(duet_comm_translate_rank(p, r, t) == want, "%s: parent %d -> team %d, want %d", what, r,
              duet_comm_translate_rank(p, r, t), want);
    }
    CHECK(duet_comm_translate_rank(t, -1, p) == -1 && duet_comm_translate_rank(t, cnt, p) == -1,
          "%s: translate of an out-of-range rank", what);
}

/* One-sided calls through team t (collective over W: every world rank calls it). */
static void use_team(duet_comm_t t, const char *what)
{
    *g_count = 0;
    for (int i = 0; i < npes + 8; i++) g_buf[i] = 0;
    CHECK_OK(duet_barrier(W));
    if (t) {
        int tr = duet_comm_rank(t), ts = duet_comm_size(t);
        uint64_t v = 1000u + (uint64_t)me;
        /* pe numbers are team ranks: the right neighbour in the team */
        CHECK_OK(duet_put(t, &g_buf[tr], &v, sizeof v, (tr + 1) % ts));
        CHECK_OK(duet_atomic_inc_uint64(t, g_count, 0));
        CHECK_OK(duet_barrier(t));
        int left = (tr - 1 + ts) % ts;
        uint64_t want = 1000u + (uint64_t)duet_comm_translate_rank(t, left, W);
        CHECK(g_buf[left] == want, "%s: buf[%d] = %" PRIu64 ", want %" PRIu64, what, left, g_buf[left], want);
        if (tr == 0) CHECK(*g_count == (uint64_t)ts, "%s: counter %" PRIu64 ", want %d", what, *g_count, ts);
        for (int i = 0; i < ts; i++) {
            int wr = duet_comm_translate_rank(t, i, W);
            CHECK(duet_ptr(t, g_buf, i) == duet_ptr(W, g_buf, wr), "%s: duet_ptr differs for team rank %d", what, i);
            uint64_t got = 0;
            CHECK_OK(duet_get(t, &got, &g_buf[(i - 1 + ts) % ts], sizeof got, i));
            CHECK(got == 1000u + (uint64_t)duet_comm_translate_rank(t, (i - 1 + ts) % ts, W),
                  "%s: get from team rank %d: %" PRIu64, what, i, got);
        }
        CHECK_FAILS(duet_put(t, g_buf, &v, sizeof v, ts), DUET_ERR_INVALID_ARG); /* a world pe, not a team one */
        CHECK_OK(duet_sync(t));
    }
    CHECK_OK(duet_barrier(W));
}

static void split_case(int *color, int *key, const char *what)
{
    duet_comm_t t = (duet_comm_t)(uintptr_t)1; /* must be overwritten */
    CHECK_OK(duet_comm_split(W, color[me], key[me], &t));
    int members[64] = {0};
    int cnt = reference_members(color, key, npes, color[me], members);
    check_team(W, t, members, cnt, what);
    use_team(t, what);
    if (t) CHECK_OK(duet_comm_destroy(t));
}

static void test_split(void)
{
    int color[64], key[64];
    for (int r = 0; r < npes; r++) color[r] = r % 2, key[r] = r;
    split_case(color, key, "odd/even");
    for (int r = 0; r < npes; r++) color[r] = r % 3, key[r] = -r;
    split_case(color, key, "mod 3, reversed keys");
    for (int r = 0; r < npes; r++) color[r] = 7, key[r] = 0;
    split_case(color, key, "one color, equal keys");
    for (int r = 0; r < npes; r++) color[r] = r < npes / 2, key[r] = (r * 7) % 5;
    split_case(color, key, "halves, keys with ties");
    for (int r = 0; r < npes; r++) color[r] = r % 3 == 2 ? DUET_COLOR_UNDEFINED : 1000000 + r % 3, key[r] = npes - r;
    split_case(color, key, "some undefined");
    for (int r = 0; r < npes; r++) color[r] = DUET_COLOR_UNDEFINED, key[r] = 0;
    split_case(color, key, "all undefined");
    for (int r = 0; r < npes; r++) color[r] = r, key[r] = 0;
    split_case(color, key, "singletons");

    duet_comm_t t;
    CHECK_FAILS(duet_comm_split(W, -5, 0, &t), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_comm_split(NULL, 0, 0, &t), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_comm_split(W, 0, 0, NULL), DUET_ERR_INVALID_ARG);
    CHECK_OK(duet_barrier(W)); /* the refusals left the world in step */
}

static void test_split_of_split(void)
{
    duet_comm_t t1, t2;
    CHECK_OK(duet_comm_split(W, me % 2, me, &t1));
    int r1 = duet_comm_rank(t1), s1 = duet_comm_size(t1);
    CHECK_OK(duet_comm_split(t1, r1 < s1 / 2 ? 0 : 1, -r1, &t2));
    /* reference: t2 members are t1 ranks of my half, in reverse t1 order */
    int members[64] = {0}, cnt = 0;
    for (int i = s1 - 1; i >= 0; i--)
        if ((i < s1 / 2) == (r1 < s1 / 2)) members[cnt++] = i;
    check_team(t1, t2, members, cnt, "split of a split");
    for (int i = 0; i < cnt; i++)
        CHECK(duet_comm_translate_rank(t2, i, W) == duet_comm_translate_rank(t1, members[i], W),
              "t2 -> world translation of %d", i);
    use_team(t2, "split of a split");

    CHECK_OK(duet_comm_destroy(t2));
    use_team(t1, "parent after its child is gone");
    CHECK_OK(duet_comm_destroy(t1));
}

/* A team destroyed while teams split from it live (OpenSHMEM sets no order): they stay
 * usable, split again, translate to the world; and the order of the rest does not matter. */
static void test_parent_first(void)
{
    duet_comm_t t1, t2, t3, t4;
    CHECK_OK(duet_comm_split(W, 0, npes - 1 - me, &t1)); /* everyone, reversed */
    CHECK_OK(duet_comm_split(t1, 0, 0, &t2));             /* t1's order */
    CHECK_OK(duet_comm_split(t2, 0, 0, &t3));
    CHECK_OK(duet_comm_split(t1, duet_comm_rank(t1) % 2, 0, &t4));
    CHECK_OK(duet_comm_destroy(t1)); /* t2, t3 and t4 alive */
    use_team(t2, "child of a destroyed parent");
    for (int i = 0; i < npes; i++)
        CHECK(duet_comm_translate_rank(t2, i, W) == npes - 1 - i, "t2 rank %d -> world %d", i,
              duet_comm_translate_rank(t2, i, W));
    CHECK_OK(duet_comm_destroy(t2)); /* the middle of t1 -> t2 -> t3 */
    CHECK(duet_comm_size(t3) == npes && duet_comm_rank(t3) == npes - 1 - me, "t3: rank %d of %d",
          duet_comm_rank(t3), duet_comm_size(t3));
    use_team(t3, "grandchild of two destroyed teams");
    duet_comm_t t5;
    CHECK_OK(duet_comm_split(t3, 0, me, &t5)); /* a split of an orphan */
    CHECK(duet_comm_size(t5) == npes && duet_comm_translate_rank(t5, me, W) == me, "t5 of the orphan t3");
    CHECK_OK(duet_comm_destroy(t3));
    use_team(t5, "great-grandchild");
    use_team(t4, "the other child");
    CHECK_OK(duet_comm_destroy(t4));
    CHECK_OK(duet_comm_destroy(t5)); /* the last: t1, t2 and t3 go with it */
    /* every team gone: the world has no child left (finalize would refuse otherwise) */
    duet_comm_t probe;
    CHECK_OK(duet_comm_split(W, 0, 0, &probe));
    CHECK_OK(duet_comm_destroy(probe));
    CHECK_OK(duet_barrier(W));
}

/* A parent and its child destroyed at once by two threads (each pairs with the same thread on
 * the other ranks): whichever goes first, both go, and the world is left with no child. */
static void *destroy_in_thread(void *c)
{
    return (void *)(intptr_t)duet_comm_destroy((duet_comm_t)c);
}

static void test_parent_child_threads(void)
{
    for (int round = 0; round < 20; round++) {
        duet_comm_t parent, child;
        CHECK_OK(duet_comm_split(W, 0, me, &parent));
        CHECK_OK(duet_comm_split(parent, 0, me, &child));
        pthread_t th;
        CHECK(pthread_create(&th, NULL, destroy_in_thread, child) == 0, "pthread_create");
        duet_status_t mine = duet_comm_destroy(parent);
        void *theirs = NULL;
        pthread_join(th, &theirs);
        CHECK(mine == DUET_OK && (duet_status_t)(intptr_t)theirs == DUET_OK,
              "round %d: parent destroy %s, child destroy (other thread) %s", round, duet_status_str(mine),
              duet_status_str((duet_status_t)(intptr_t)theirs));
    }
    duet_comm_t probe; /* nothing of them is left counted as the world's child */
    CHECK_OK(duet_comm_split(W, 0, 0, &probe));
    CHECK_OK(duet_comm_destroy(probe));
    CHECK_OK(duet_barrier(W));
}

static void strided_case(int start, int stride, int size)
{
    char what[96];
    snprintf(what, sizeof what, "strided(start %d, stride %d, size %d)", start, stride, size);
    duet_comm_t t = (duet_comm_t)(uintptr_t)1;
    CHECK_OK(duet_comm_split_strided(W, start, stride, size, &t));
    int members[64] = {0};
    for (int i = 0; i < size; i++) members[i] = start + i * stride;
    check_team(W, t, members, size, what);
    use_team(t, what);
    if (t) CHECK_OK(duet_comm_destroy(t));
}

static void test_strided(void)
{
    strided_case(0, 1, npes);
    strided_case(0, 2, (npes + 1) / 2);
    if (npes >= 2) strided_case(1, 2, npes / 2);
    strided_case(npes - 1, -1, npes);
    strided_case(npes - 1, 0, 1);
    strided_case(0, 1, 1);
    if (npes >= 3) strided_case(npes - 1, -2, (npes + 1) / 2);
    if (npes >= 4) strided_case(1, 3, (npes - 2) / 3 + 1);

    duet_comm_t t;
    if (npes >= 2) CHECK_FAILS(duet_comm_split_strided(W, 0, 0, 2, &t), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_comm_split_strided(W, npes, 1, 1, &t), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_comm_split_strided(W, -1, 1, 1, &t), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_comm_split_strided(W, 0, 1, npes + 1, &t), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_comm_split_strided(W, 0, 1, 0, &t), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_comm_split_strided(W, 0, -1, 2, &t), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_comm_split_strided(W, 0, 0x40000000, 3, &t), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_comm_split_strided(NULL, 0, 1, 1, &t), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_comm_split_strided(W, 0, 1, 1, NULL), DUET_ERR_INVALID_ARG);
    CHECK_OK(duet_barrier(W));
    strided_case(0, 1, npes); /* the bootstrap is still in step after the refusals */
}

static void test_recycle(void)
{
    for (int i = 0; i < 100; i++) {
        duet_comm_t t;
        CHECK_OK(duet_comm_split(W, i % 3 == 0 ? 0 : me % 2, i % 2 ? me : -me, &t));
        CHECK(t, "cycle %d", i);
        CHECK_OK(duet_barrier(t));
        CHECK_OK(duet_comm_destroy(t));
    }
    /* every slot at once: slot 0 is the world's, 63 are left for teams */
    enum { TEAMS = 63 };
    duet_comm_t *teams = calloc(TEAMS, sizeof *teams);
    for (int i = 0; i < TEAMS; i++) {
        CHECK_OK(duet_comm_split(W, 0, me, &teams[i]));
        CHECK_OK(duet_sync(teams[i]));
    }
    duet_comm_t extra = NULL;
    CHECK_FAILS(duet_comm_split(W, 0, me, &extra), DUET_ERR_NO_MEMORY);
    CHECK(extra == NULL, "refused split returned a team");
    for (int i = 0; i < TEAMS; i += 2) CHECK_OK(duet_barrier(teams[i])); /* each has its own slot */
    for (int i = TEAMS - 1; i >= 0; i--) CHECK_OK(duet_comm_destroy(teams[i]));
    free(teams);
    use_team(NULL, "after slots were freed");
}

/* A unique id made by world rank `root`, distributed with puts on the world. */
static duet_unique_id_t share_id(int root, duet_unique_id_t *sym)
{
    duet_unique_id_t id;
    if (me == root) CHECK_OK(duet_get_unique_id(&id));
    CHECK_OK(dt_bcast(W, sym, &id, sizeof id, root));
    CHECK_OK(duet_barrier(W)); /* nobody overwrites sym before everyone has read it */
    return id;
}

static void test_independent(void)
{
    duet_unique_id_t *sym = duet_malloc(W, sizeof(duet_unique_id_t));
    CHECK(sym, "malloc");
    /* reversed order: new rank 0 (the id's creator) is the last world rank */
    duet_unique_id_t id1 = share_id(npes - 1, sym), id2 = share_id(0, sym);
    duet_config_t cfg = DUET_CONFIG_INIT;
    cfg.symmetric_size = 2u << 20;
    cfg.bootstrap_timeout_s = 20;
    duet_comm_t c1 = NULL, c2 = NULL;
    CHECK_OK(duet_comm_init_rank(&c1, npes, id1, npes - 1 - me, &cfg));
    CHECK_OK(duet_comm_init_rank(&c2, npes, id2, me, NULL));
    CHECK(duet_comm_rank(c1) == npes - 1 - me && duet_comm_size(c1) == npes, "c1 rank/size");
    CHECK(duet_comm_rank(c2) == me && duet_comm_size(c2) == npes, "c2 rank/size");
    CHECK(duet_comm_translate_rank(c1, 0, W) == -1 && duet_comm_translate_rank(W, 0, c1) == -1 &&
          duet_comm_translate_rank(c1, 0, c2) == -1, "independent heaps translate to -1");

    /* its own heap: its first block is at its heap's start, whatever the world holds */
    uint64_t *p1 = duet_malloc(c1, sizeof(uint64_t) * (size_t)(npes + 1));
    uint64_t *p2 = duet_malloc(c2, sizeof(uint64_t) * (size_t)(npes + 1));
    CHECK(p1 && p2, "malloc on the new communicators");
    CHECK(duet_addr_accessible(c1, p1, 0) && !duet_addr_accessible(c1, (char *)p1 - 1, 0),
          "c1's first block is not at its heap's start");
    CHECK(!duet_addr_accessible(W, p1, 0) && !duet_addr_accessible(c2, p1, 0), "c1 block in another heap");
    CHECK(!duet_addr_accessible(c1, g_buf, 0) && !duet_addr_accessible(c1, p2, 0), "foreign block in c1");
    CHECK_FAILS(duet_put(c1, g_buf, &me, sizeof me, 0), DUET_ERR_INVALID_ARG);
    void *q1 = duet_malloc(c1, 1000), *q2 = duet_malloc(c2, 1000);
    CHECK(q1 && q2 && q1 != q2, "two heaps gave one address");

    /* use them interleaved: c1 ranks are reversed */
    int r1 = duet_comm_rank(c1);
    for (int pe = 0; pe < npes; pe++) {
        uint64_t v1 = 100u + (uint64_t)r1, v2 = 200u + (uint64_t)me;
        CHECK_OK(duet_put(c1, &p1[r1], &v1, sizeof v1, pe));
        CHECK_OK(duet_put(c2, &p2[me], &v2, sizeof v2, pe));
        CHECK_OK(duet_atomic_add_uint64(c1, &p1[npes], 1, pe));
    }
    CHECK_OK(duet_barrier(c2));
    CHECK_OK(duet_barrier(c1));
    for (int r = 0; r < npes; r++) {
        CHECK(p1[r] == 100u + (uint64_t)r, "c1 slot %d = %" PRIu64, r, p1[r]);
        CHECK(p2[r] == 200u + (uint64_t)r, "c2 slot %d = %" PRIu64, r, p2[r]);
    }
    CHECK(p1[npes] == (uint64_t)npes, "c1 counter %" PRIu64, p1[npes]);

    /* a team of an independent communicator */
    duet_comm_t t;
    CHECK_OK(duet_comm_split(c1, r1 % 2, 0, &t));
    CHECK(duet_comm_translate_rank(t, 0, c1) == r1 % 2 && duet_comm_translate_rank(t, 0, W) == -1,
          "team of c1 translation");
    CHECK_OK(duet_barrier(t));
    CHECK_FAILS(duet_comm_destroy(c1), DUET_ERR_INVALID_ARG);
    CHECK_OK(duet_comm_destroy(t));

    CHECK_OK(duet_free(c1, q1));
    CHECK_OK(duet_free(c2, q2));
    CHECK_OK(duet_comm_destroy(c1)); /* not in creation order */
    CHECK_OK(duet_barrier(c2));
    CHECK_OK(duet_comm_destroy(c2));
    CHECK_OK(duet_barrier(W));
    CHECK_OK(duet_free(W, sym));
}

int main(void)
{
    setenv("DUET_SYMMETRIC_SIZE", "4M", 1);
    CHECK(duet_comm_world() == NULL && duet_my_pe() == -1 && duet_n_pes() == 0, "state before init");
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    CHECK_OK(duet_init());
    CHECK(duet_comm_world() == W, "a second duet_init made another world");
    CHECK(npes <= 64, "this test handles at most 64 ranks");
    CHECK(duet_comm_rank(W) == me && duet_comm_size(W) == npes, "world rank/size");
    if (me == 0) printf("test_comm: %d ranks\n", npes);
    g_buf = duet_calloc(W, (size_t)npes + 8, sizeof(uint64_t));
    g_count = duet_calloc(W, 1, sizeof(uint64_t));
    CHECK(g_buf && g_count, "calloc");

    test_split();
    test_split_of_split();
    test_parent_first();
    test_parent_child_threads();
    test_strided();
    test_recycle();
    test_independent();

    CHECK_OK(duet_free(W, g_count));
    CHECK_OK(duet_free(W, g_buf));
    CHECK_FAILS(duet_comm_destroy(W), DUET_ERR_INVALID_ARG);
    duet_comm_t t;
    CHECK_OK(duet_comm_split(W, 0, 0, &t));
    CHECK_OK(duet_finalize()); /* drops the second reference only */
    CHECK(duet_comm_world() == W && duet_my_pe() == me, "the world went away after one finalize");
    CHECK_FAILS(duet_finalize(), DUET_ERR_INVALID_ARG); /* last reference, a team is alive */
    CHECK(duet_comm_world() == W, "a refused finalize destroyed the world");
    CHECK_OK(duet_comm_destroy(t));
    CHECK_OK(duet_finalize());
    CHECK(duet_comm_world() == NULL && duet_my_pe() == -1 && duet_n_pes() == 0, "state after finalize");
    CHECK_FAILS(duet_finalize(), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_barrier_all(), DUET_ERR_INVALID_ARG);
    if (me == 0) printf("test_comm: passed\n");
    return 0;
}

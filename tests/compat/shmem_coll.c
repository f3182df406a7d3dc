/*
 * shmem_coll.c — teams (world, shared, split_strided, split_2d, translate, config, destroy,
 * team contexts) and the team collectives: barrier_all, sync_all, team_sync, broadcast,
 * collect, fcollect, alltoall, alltoalls, and every reduction of the 1.5 tables, on the world
 * and on a split team, with heap and static buffers; checked against locally computed results.
 * Also split_strided called with a different triplet on each PE (1.5 asks for one; SOS-era
 * programs pass each PE its own): each group of PEs that passed one triplet gets its own team;
 * and a parent team destroyed before its child, which keeps working.
 */
#include "shmem_test.h"

#define NR 5
static int me, npes;
static long s_dst[64], s_src[64];

/* input i of PE p: small values so sums and products stay exact in every type */
#define IN(T, p, i) ((T)(((p) + (i)) % 3 + 1))

#define ST_RED_ONE_(T, N, OP, INIT, STEP)                                                          \
    {                                                                                              \
        T rin[NR], rout[NR], want;                                                                  \
        for (int i = 0; i < NR; i++) rin[i] = IN(T, tme, i);                                       \
        ST_EXPECT(shmem_##N##_##OP##_reduce(team, rout, rin, NR) == 0, #N "_" #OP "_reduce");       \
        for (int i = 0; i < NR; i++) {                                                             \
            want = INIT;                                                                           \
            for (int p = 0; p < tn; p++) { T x = IN(T, p, i); want = STEP; }                       \
            ST_EXPECT(rout[i] == want, #N "_" #OP "_reduce [%d] on %d PEs", i, tn);                 \
        }                                                                                          \
    }
#define ST_RED_BIT_(T, N)                                                                          \
    ST_RED_ONE_(T, N, and, (T)~(T)0, (T)(want & x)) ST_RED_ONE_(T, N, or, (T)0, (T)(want | x))     \
    ST_RED_ONE_(T, N, xor, (T)0, (T)(want ^ x))
#define ST_RED_MINMAX_(T, N)                                                                       \
    ST_RED_ONE_(T, N, max, (T)0, (x > want ? x : want)) ST_RED_ONE_(T, N, min, (T)100, (x < want ? x : want)) \
    ST_RED_ONE_(T, N, sum, (T)0, (T)(want + x)) ST_RED_ONE_(T, N, prod, (T)1, (T)(want * x))
#define ST_RED_COMPLEX_(T, N) ST_RED_ONE_(T, N, sum, (T)0, want + x) ST_RED_ONE_(T, N, prod, (T)1, want * x)

static void collectives(shmem_team_t team, long *dst, long *src, const char *where)
{
    int tme = shmem_team_my_pe(team), tn = shmem_team_n_pes(team);
    for (int i = 0; i < 64; i++) src[i] = tme * 1000 + i, dst[i] = -1;
    shmem_team_sync(team);
    for (int root = 0; root < tn; root++) {
        ST_EXPECT(shmem_long_broadcast(team, dst, src, 7, root) == 0, "broadcast");
        for (int i = 0; i < 7; i++) ST_EXPECT(dst[i] == root * 1000 + i, "broadcast root %d [%d] (%s)", root, i, where);
    }
    ST_EXPECT(shmem_broadcast(team, dst, src, 0, 0) == 0, "zero-length broadcast");
    ST_EXPECT(shmem_long_fcollect(team, dst, src, 3) == 0, "fcollect");
    for (int p = 0; p < tn; p++)
        for (int i = 0; i < 3; i++) ST_EXPECT(dst[p * 3 + i] == p * 1000 + i, "fcollect (%s)", where);
    ST_EXPECT(shmem_long_collect(team, dst, src, (size_t)tme % 3) == 0, "collect");
    for (int p = 0, at = 0; p < tn; p++)
        for (int i = 0; i < p % 3; i++, at++) ST_EXPECT(dst[at] == p * 1000 + i, "collect [%d] (%s)", at, where);
    ST_EXPECT(shmem_long_alltoall(team, dst, src, 2) == 0, "alltoall");
    for (int p = 0; p < tn; p++)
        for (int i = 0; i < 2; i++) ST_EXPECT(dst[p * 2 + i] == p * 1000 + tme * 2 + i, "alltoall (%s)", where);
    for (int i = 0; i < 64; i++) dst[i] = -1;
    ST_EXPECT(shmem_long_alltoalls(team, dst, src, 2, 3, 2) == 0, "alltoalls");
    for (int p = 0; p < tn; p++)
        for (int j = 0; j < 2; j++) {
            ST_EXPECT(dst[(p * 2 + j) * 2] == p * 1000 + (tme * 2 + j) * 3, "alltoalls (%s)", where);
            ST_EXPECT(dst[(p * 2 + j) * 2 + 1] == -1, "alltoalls gap (%s)", where);
        }
    shmem_team_sync(team);
    SHMEM_X_BIT_REDUCE_TYPES(ST_RED_BIT_)
    SHMEM_X_MINMAX_REDUCE_TYPES(ST_RED_MINMAX_)
    SHMEM_X_COMPLEX_TYPES(ST_RED_COMPLEX_)
    int gi[2] = {tme, tme}, go[2];
    shmem_sum_reduce(team, go, gi, 2);
    ST_EXPECT(go[0] == tn * (tn - 1) / 2, "generic sum_reduce (%s)", where);
    shmem_team_sync(team);
    /* the generic bitwise reductions on int8_t .. int64_t (1.5 rows): every PE's bit, or'ed,
     * and'ed (each PE clears its own) and xor'ed */
#define ST_GEN_BIT_(T, BITS)                                                                      \
    do {                                                                                           \
        T *in = (T *)(void *)src, *out = (T *)(void *)dst, bit = (T)((T)1 << (tme % (BITS - 1)));   \
        T all = 0;                                                                                 \
        for (int p = 0; p < tn; p++) all = (T)(all | (T)((T)1 << (p % (BITS - 1))));               \
        *in = bit;                                                                                 \
        ST_EXPECT(shmem_or_reduce(team, out, in, 1) == 0 && *out == all, "generic or_reduce of " #T \
                  " (%s)", where);                                                                 \
        *in = (T)~bit;                                                                             \
        ST_EXPECT(shmem_and_reduce(team, out, in, 1) == 0 && *out == (T)~all, "generic and_reduce of " #T \
                  " (%s)", where);                                                                 \
        *in = bit;                                                                                 \
        T x = 0;                                                                                   \
        for (int p = 0; p < tn; p++) x = (T)(x ^ (T)((T)1 << (p % (BITS - 1))));                   \
        ST_EXPECT(shmem_xor_reduce(team, out, in, 1) == 0 && *out == x, "generic xor_reduce of " #T \
                  " (%s)", where);                                                                 \
        shmem_team_sync(team);                                                                     \
    } while (0)
    ST_GEN_BIT_(int8_t, 8);
    ST_GEN_BIT_(int16_t, 16);
    ST_GEN_BIT_(int32_t, 32);
    ST_GEN_BIT_(int64_t, 64);
#undef ST_GEN_BIT_
    /* OpenSHMEM 1.5's one-argument shmem_sync: a put to the right neighbour, quiet, sync, and
     * each PE finds its left neighbour's value */
    dst[0] = -1;
    shmem_team_sync(team);
    long mine = 7000 + tme;
    int right = shmem_team_translate_pe(team, (tme + 1) % tn, SHMEM_TEAM_WORLD);
    shmem_long_put(dst, &mine, 1, right);
    shmem_quiet();
    ST_EXPECT(shmem_sync(team) == 0, "shmem_sync(team) (%s)", where);
    ST_EXPECT(dst[0] == 7000 + (tme + tn - 1) % tn, "after shmem_sync(team): %ld, want the left neighbour's %d (%s)",
              dst[0], 7000 + (tme + tn - 1) % tn, where);
    shmem_team_sync(team);
}

int main(int argc, char **argv)
{
    shmem_init();
    st_seed(argc, argv);
    me = shmem_my_pe(), npes = shmem_n_pes();
    ST_EXPECT(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes, "world");
    ST_EXPECT(shmem_team_translate_pe(SHMEM_TEAM_SHARED, me, SHMEM_TEAM_WORLD) == me, "shared");
    ST_EXPECT(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1, "invalid team");
    long *dst = shmem_malloc(64 * sizeof(long)), *src = shmem_malloc(64 * sizeof(long));
    collectives(SHMEM_TEAM_WORLD, dst, src, "world, heap");
    collectives(SHMEM_TEAM_WORLD, s_dst, s_src, "world, static");

    /* odd PEs, in reverse order */
    shmem_team_t odd = SHMEM_TEAM_INVALID;
    shmem_team_config_t conf = {.num_contexts = 2}, got = {0};
    int nodd = npes / 2, last_odd = npes % 2 ? npes - 2 : npes - 1;
    if (nodd > 0) {
        ST_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, last_odd, -2, nodd, &conf, SHMEM_TEAM_NUM_CONTEXTS, &odd) == 0, "split");
        ST_EXPECT((odd != SHMEM_TEAM_INVALID) == (me % 2 == 1), "membership");
    }
    if (odd != SHMEM_TEAM_INVALID) {
        int tme = shmem_team_my_pe(odd);
        ST_EXPECT(tme == (last_odd - me) / 2 && shmem_team_n_pes(odd) == nodd, "odd team pe %d", tme);
        ST_EXPECT(shmem_team_translate_pe(odd, tme, SHMEM_TEAM_WORLD) == me, "translate");
        ST_EXPECT(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, odd) == -1, "PE 0 is not odd");
        ST_EXPECT(shmem_team_get_config(odd, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 2, "config");
        shmem_ctx_t ctx;
        ST_CHECK(shmem_team_create_ctx(odd, 0, &ctx) == 0, "team ctx");
        shmem_team_t back;
        ST_EXPECT(shmem_ctx_get_team(ctx, &back) == 0 && back == odd, "ctx_get_team");
        /* team PE numbers in RMA: put to team pe (tme+1) % nodd */
        int tright = (tme + 1) % nodd, wright = shmem_team_translate_pe(odd, tright, SHMEM_TEAM_WORLD);
        shmem_ctx_long_p(ctx, &s_dst[63], 7000 + me, tright);
        shmem_ctx_long_p(ctx, &dst[63], 8000 + me, tright);
        shmem_ctx_quiet(ctx);
        shmem_team_sync(odd);
        int wleft = shmem_team_translate_pe(odd, (tme + nodd - 1) % nodd, SHMEM_TEAM_WORLD);
        ST_EXPECT(s_dst[63] == 7000 + wleft && dst[63] == 8000 + wleft, "team ctx put: %ld %ld (from %d, to %d)",
                  s_dst[63], dst[63], wleft, wright);
        shmem_ctx_destroy(ctx);
        collectives(odd, dst, src, "odd team");
        shmem_team_destroy(odd);
    }
    shmem_barrier_all();

    /* a triplet per PE: pairs (0,1), (2,3), ... and a lone last PE when npes is odd; then a
     * team of myself alone. Each team must hold exactly its triplet's PEs. */
    shmem_team_t pair = SHMEM_TEAM_INVALID, self = SHMEM_TEAM_INVALID;
    int pstart = me - me % 2, psize = pstart + 1 < npes ? 2 : 1;
    ST_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, pstart, 1, psize, NULL, 0, &pair) == 0, "per-PE pair split");
    ST_CHECK(pair != SHMEM_TEAM_INVALID, "pair team");
    ST_EXPECT(shmem_team_n_pes(pair) == psize && shmem_team_my_pe(pair) == me % 2, "pair team: %d of %d",
              shmem_team_my_pe(pair), shmem_team_n_pes(pair));
    static long s_pin[2], s_pout[4];
    s_pin[0] = s_pin[1] = 100 + me;
    s_pout[0] = s_pout[1] = s_pout[2] = s_pout[3] = -1;
    ST_EXPECT(shmem_long_fcollect(pair, s_pout, s_pin, 2) == 0, "pair fcollect");
    for (int i = 0; i < 2 * psize; i++)
        ST_EXPECT(s_pout[i] == 100 + pstart + i / 2, "pair fcollect [%d] = %ld", i, s_pout[i]);
    ST_EXPECT(psize == 2 || s_pout[2] == -1, "pair fcollect wrote past its team");
    ST_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, me, 1, 1, NULL, 0, &self) == 0, "per-PE self split");
    ST_EXPECT(shmem_team_n_pes(self) == 1 && shmem_team_translate_pe(self, 0, SHMEM_TEAM_WORLD) == me, "self team");
    s_pout[1] = -1;
    ST_EXPECT(shmem_long_alltoall(self, s_pout, s_pin, 1) == 0 && s_pout[0] == 100 + me && s_pout[1] == -1,
              "self alltoall %ld %ld", s_pout[0], s_pout[1]);
    shmem_team_destroy(self);
    shmem_team_destroy(pair);
    /* triplets that disagree about a PE (each PE names itself and its right neighbour): no
     * team, a non-zero return, on every PE */
    if (npes > 2) {
        shmem_team_t bad = SHMEM_TEAM_INVALID;
        int r = shmem_team_split_strided(SHMEM_TEAM_WORLD, me, 1, me + 1 < npes ? 2 : 1, NULL, 0, &bad);
        ST_EXPECT((r != 0 && bad == SHMEM_TEAM_INVALID) || me == npes - 1, "disagreeing triplets: %d", r);
        if (bad != SHMEM_TEAM_INVALID) shmem_team_destroy(bad);
    }
    shmem_barrier_all();

    /* 2-D split: rows of 2 */
    shmem_team_t xt, yt;
    ST_CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &xt, NULL, 0, &yt) == 0, "split_2d");
    ST_EXPECT(shmem_team_my_pe(xt) == me % 2 && shmem_team_my_pe(yt) == me / 2, "2d pes %d %d", shmem_team_my_pe(xt),
              shmem_team_my_pe(yt));
    ST_EXPECT(shmem_team_n_pes(yt) == (npes - me % 2 + 1) / 2, "column size");
    shmem_team_sync(xt);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);

    /* a parent team destroyed before the team split from it (1.5 sets no order): the child
     * keeps working, collectives included */
    shmem_team_t parent, child;
    ST_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &parent) == 0, "parent split");
    ST_CHECK(shmem_team_split_strided(parent, 0, 1, npes, NULL, 0, &child) == 0, "child split");
    shmem_team_destroy(parent);
    ST_EXPECT(shmem_team_my_pe(child) == me && shmem_team_n_pes(child) == npes, "child of a destroyed team: pe %d of %d",
              shmem_team_my_pe(child), shmem_team_n_pes(child));
    ST_EXPECT(shmem_team_translate_pe(child, npes - 1, SHMEM_TEAM_WORLD) == npes - 1, "child translate");
    collectives(child, dst, src, "a team whose parent was destroyed");
    shmem_team_destroy(child);

    shmem_sync_all();
    shmem_free(dst);
    shmem_free(src);
    int rc = st_finish();
    shmem_finalize();
    return rc;
}

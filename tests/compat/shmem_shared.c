/*
 * shmem_shared.c — SHMEM_TEAM_SHARED is the PEs whose memory this PE maps: for every world PE,
 * shmem_ptr of a symmetric object reaches it exactly when it is a member of my shared team
 * (translated with shmem_team_translate_pe); its numbering follows the world's order; a sum
 * reduction over it of the members' world numbers is checked against those numbers; and
 * shmem_team_sync on it returns 0. On one host it is the world (compat.shmem_shared.*); with
 * DUET_NET=force, where every other PE is reached over the network (net.force.shmem_shared.*),
 * it is a proper part of it.
 */
#include "shmem_test.h"

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *obj = shmem_malloc(2 * sizeof(long));
    ST_CHECK(obj != NULL, "shmem_malloc");
    int sn = shmem_team_n_pes(SHMEM_TEAM_SHARED), sme = shmem_team_my_pe(SHMEM_TEAM_SHARED);
    ST_EXPECT(sn >= 1 && sn <= n && sme >= 0 && sme < sn, "shared team: PE %d of %d (world %d)", sme, sn, n);
    long want = 0;
    int members = 0, prev = -1;
    for (int pe = 0; pe < n; pe++) {
        int t = shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, SHMEM_TEAM_SHARED);
        int mapped = shmem_ptr(obj, pe) != NULL;
        ST_EXPECT((t >= 0) == mapped, "world PE %d: shared-team number %d, shmem_ptr %s", pe, t,
                  mapped ? "reaches it" : "does not");
        if (t >= 0) {
            ST_EXPECT(t == members, "world PE %d is shared-team PE %d, want %d (the world's order)", pe, t, members);
            ST_EXPECT(pe > prev, "order");
            prev = pe;
            members++;
            want += pe;
        }
    }
    ST_EXPECT(members == sn, "%d PEs reachable, the shared team has %d", members, sn);
    ST_EXPECT(shmem_team_translate_pe(SHMEM_TEAM_SHARED, sme, SHMEM_TEAM_WORLD) == me, "my own translation");
    obj[0] = me;
    ST_EXPECT(shmem_team_sync(SHMEM_TEAM_SHARED) == 0, "shmem_team_sync(SHMEM_TEAM_SHARED)");
    ST_EXPECT(shmem_long_sum_reduce(SHMEM_TEAM_SHARED, &obj[1], &obj[0], 1) == 0 && obj[1] == want,
              "sum over the shared team: %ld, want %ld", obj[1], want);
    if (me == 0) printf("shmem_shared: %d PEs, PE 0's shared team has %d\n", n, sn);
    shmem_barrier_all();
    shmem_free(obj);
    return st_finish();
}

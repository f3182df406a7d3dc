/*
 * shmem_coll.c — collectives on teams: barrier_all, sync_all, team_sync, and broadcast,
 * collect, fcollect, alltoall, alltoalls (mem and every TYPENAME).
 *
 * Each is Duet's NCCL-style collective on the team's communicator over bytes (DUET_UINT8):
 * it returns when this PE's part is complete, which is all OpenSHMEM asks of a team
 * collective. collect (sizes differ per PE) first allgathers the sizes, then allgathers
 * blocks padded to the largest and packs them; alltoalls packs the strided elements into a
 * contiguous buffer, runs alltoall, and unpacks. Bad arguments return non-zero, as the
 * specification asks of these int-returning calls.
 */
#include <stdlib.h>
#include <string.h>

#include "shmem_internal.h"

void shmem_barrier_all(void)
{
    shm_require_init("shmem_barrier_all");
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* static-data stores: complete before the barrier */
    shm_check(duet_barrier_all(), "shmem_barrier_all");
}

void shmem_sync_all(void)
{
    shm_require_init("shmem_sync_all");
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    shm_check(duet_sync(shm_g.world), "shmem_sync_all");
}

int shmem_team_sync(shmem_team_t team)
{
    shm_require_init("shmem_team_sync");
    if (!shm_team_valid(team)) return 1;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    shm_check(duet_sync(team->comm), "shmem_team_sync");
    return 0;
}

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int root)
{
    shm_require_init("shmem_broadcast");
    if (!shm_team_valid(team) || root < 0 || root >= team->n_pes) return 1;
    if (nelems == 0) return 0;
    shm_check(duet_broadcast(source, dest, nelems, DUET_UINT8, root, team->comm, NULL), "shmem_broadcast");
    return 0;
}

int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    shm_require_init("shmem_fcollect");
    if (!shm_team_valid(team)) return 1;
    if (nelems == 0) return 0;
    shm_check(duet_allgather(source, dest, nelems, DUET_UINT8, team->comm, NULL), "shmem_fcollect");
    return 0;
}

int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    const char *fn = "shmem_collect";
    shm_require_init(fn);
    if (!shm_team_valid(team)) return 1;
    int n = team->n_pes;
    uint64_t mine = nelems, *sizes = malloc((size_t)n * sizeof *sizes);
    if (!sizes) shm_die(fn, "out of host memory");
    shm_check(duet_allgather(&mine, sizes, 1, DUET_UINT64, team->comm, NULL), fn);
    size_t most = 0;
    for (int i = 0; i < n; i++) most = sizes[i] > most ? sizes[i] : most;
    if (most > 0) {
        char *pad = calloc(1, most), *all = malloc(shm_bytes((size_t)n, most, fn));
        if (!pad || !all) shm_die(fn, "out of host memory");
        memcpy(pad, source, nelems);
        shm_check(duet_allgather(pad, all, most, DUET_UINT8, team->comm, NULL), fn);
        size_t at = 0;
        for (int i = 0; i < n; i++) {
            memcpy((char *)dest + at, all + (size_t)i * most, sizes[i]);
            at += sizes[i];
        }
        free(pad);
        free(all);
    }
    free(sizes);
    return 0;
}

int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    shm_require_init("shmem_alltoall");
    if (!shm_team_valid(team)) return 1;
    if (nelems == 0) return 0;
    shm_check(duet_alltoall(source, dest, nelems, DUET_UINT8, team->comm, NULL), "shmem_alltoall");
    return 0;
}

/* Element j of the block for PE i is source[(i * nelems + j) * sst]; it lands in
 * dest[(k * nelems + j) * dst] on PE i, where k is the sender. es: bytes per element. */
static int alltoalls(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                     size_t nelems, size_t es)
{
    const char *fn = "shmem_alltoalls";
    shm_require_init(fn);
    if (!shm_team_valid(team) || dst < 1 || sst < 1) return 1;
    if (nelems == 0) return 0;
    size_t total = shm_bytes(shm_bytes((size_t)team->n_pes, nelems, fn), es, fn);
    char *in = shm_scratch(0, total, fn), *out = shm_scratch(1, total, fn);
    size_t count = total / es;
    for (size_t e = 0; e < count; e++) memcpy(in + e * es, (const char *)source + e * (size_t)sst * es, es);
    shm_check(duet_alltoall(in, out, nelems * es, DUET_UINT8, team->comm, NULL), fn);
    for (size_t e = 0; e < count; e++) memcpy((char *)dest + e * (size_t)dst * es, out + e * es, es);
    return 0;
}

int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems)
{
    return alltoalls(team, dest, source, dst, sst, nelems, 1);
}

#define SHM_COLL_TYPED_(T, N)                                                                      \
    int shmem_##N##_broadcast(shmem_team_t team, T *d, const T *s, size_t n, int root)             \
    { return shmem_broadcastmem(team, d, s, shm_bytes(n, sizeof(T), "shmem_broadcast"), root); }   \
    int shmem_##N##_collect(shmem_team_t team, T *d, const T *s, size_t n)                         \
    { return shmem_collectmem(team, d, s, shm_bytes(n, sizeof(T), "shmem_collect")); }             \
    int shmem_##N##_fcollect(shmem_team_t team, T *d, const T *s, size_t n)                        \
    { return shmem_fcollectmem(team, d, s, shm_bytes(n, sizeof(T), "shmem_fcollect")); }           \
    int shmem_##N##_alltoall(shmem_team_t team, T *d, const T *s, size_t n)                        \
    { return shmem_alltoallmem(team, d, s, shm_bytes(n, sizeof(T), "shmem_alltoall")); }           \
    int shmem_##N##_alltoalls(shmem_team_t team, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n) \
    { return alltoalls(team, d, s, dst, sst, n, sizeof(T)); }
SHMEM_X_RMA_TYPES(SHM_COLL_TYPED_)

/*
 * ncclCommSplit, ncclCommShrink, ncclCommRevoke.
 *
 * Split makes independent communicators, not Duet teams: the parent allgathers colors and
 * keys; each color's members, ordered by key then parent rank, get their group's unique id
 * from duet_ext_group_unique_id (the first member listens; the others derive the secret, so
 * none travels) and run duet_comm_init_rank. The new communicator has its own heap (and GPU
 * heap, so GPU collectives work on it, which Duet refuses on teams) and outlives its parent,
 * as NCCL's do.
 *
 * Shrink maps onto duet_comm_shrink, which removes the ranks that FAILED (the survivors agree
 * on the set): NCCL's excludeRanksList must therefore name ranks Duet has seen die. A live
 * excluded rank is refused (ncclInvalidUsage, naming it): Duet's shrink would wait for it,
 * and NCCL's excluded ranks do not call shrink. A dead rank missing from the list is left out
 * all the same (logged). The new communicator shares the parent's heap, so the parent is
 * freed only after it (ncclCommDestroy of the parent is deferred, nccl_init.c).
 *
 * Revoke is duet_comm_revoke: unlike NCCL's local revoke it reaches every member.
 */
#include <stdlib.h>
#include <string.h>
#include "nccl_compat.h"
#include "duet/duet_ext.h"

typedef struct {
    int32_t color, key, rank, pad;
} split_entry_t;

static int by_key(const void *a, const void *b)
{
    const split_entry_t *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static ncclResult_t duet_failed(duet_status_t st, const char *fn)
{
    return nccl_fail(nccl_from_duet(st), "%s: %s", fn, duet_last_error());
}

static ncclResult_t split_now(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    const char *fn = "ncclCommSplit";
    ncclResult_t r = nccl_comm_check(comm, fn);
    if (r) return r;
    if (!newcomm) return nccl_fail(ncclInvalidArgument, "%s: newcomm is NULL", fn);
    *newcomm = NULL;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
        return nccl_fail(ncclInvalidArgument, "%s: color %d: must be >= 0 or NCCL_SPLIT_NOCOLOR", fn, color);
    if ((r = nccl_config_check(config, fn))) return r;
    int n = comm->nranks, me = comm->rank;
    split_entry_t mine = {color, key, me, 0}, *all = calloc((size_t)n, sizeof *all);
    int *ranks = calloc((size_t)n, sizeof *ranks);
    duet_unique_id_t id;
    memset(&id, 0, sizeof id);
    if (!all || !ranks) {
        free(all), free(ranks);
        return nccl_fail(ncclSystemError, "%s: out of host memory", fn);
    }
    duet_status_t st = duet_allgather(&mine, all, sizeof mine, DUET_UINT8, comm->dc, NULL);
    /* my color's members, ordered; the first makes the id */
    int members = 0, newrank = -1;
    split_entry_t *mem = NULL;
    if (st == DUET_OK && color != NCCL_SPLIT_NOCOLOR) {
        mem = calloc((size_t)n, sizeof *mem);
        for (int i = 0; mem && i < n; i++)
            if (all[i].color == color) mem[members++] = all[i];
        if (mem) qsort(mem, (size_t)members, sizeof *mem, by_key);
        for (int i = 0; mem && i < members; i++)
            if (mem[i].rank == me) newrank = i;
    }
    for (int i = 0; mem && i < members; i++) ranks[i] = mem[i].rank;
    /* everyone takes part in the id exchange, even after a local failure (no one is left waiting) */
    if (st == DUET_OK) {
        int grouped = color != NCCL_SPLIT_NOCOLOR && mem;
        st = duet_ext_group_unique_id(comm->dc, grouped ? color : -1, grouped ? ranks : NULL, grouped ? members : 0,
                                      &id);
    }
    if (st == DUET_OK && color != NCCL_SPLIT_NOCOLOR && !mem)
        st = duet_ext_error_set(DUET_ERR_NO_MEMORY, "out of host memory");
    if (st == DUET_OK && color != NCCL_SPLIT_NOCOLOR) {
        duet_comm_t dc = NULL;
        duet_config_t dconf = DUET_CONFIG_INIT;
        dconf.cuda_device_current = comm->cuda_dev >= 0; /* on the parent's GPU, as NCCL's split */
        nccl_cuda_set_device(comm->cuda_dev);
        st = duet_comm_init_rank(&dc, members, id, newrank, &dconf);
        if (st == DUET_OK) {
            struct ncclComm *c = nccl_comm_wrap(dc, config, fn);
            if (!c) r = ncclSystemError;
            else {
                if (!config) c->blocking = comm->blocking, memcpy(c->name, comm->name, sizeof c->name);
                *newcomm = c;
            }
        }
    }
    memset(&id, 0, sizeof id);
    free(all), free(ranks), free(mem);
    if (st) return duet_failed(st, fn);
    return r;
}
/* A split runs at once, even inside a group: its own exchange and warm-up are not the group's
 * calls (Duet's group queue is set aside meanwhile). */
NCCL_API ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    duet_ext_group_saved_t saved;
    duet_ext_group_suspend(&saved);
    ncclResult_t r = split_now(comm, color, key, newcomm, config);
    duet_ext_group_resume(&saved);
    return r;
}
NCCL_ALIAS(ncclCommSplit)

static int contains(const int *list, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (list[i] == x) return 1;
    return 0;
}

static ncclResult_t shrink_now(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,
                               ncclConfig_t *config, int shrinkFlags)
{
    const char *fn = "ncclCommShrink";
    ncclResult_t r = nccl_comm_check(comm, fn);
    if (r) return r;
    if (!newcomm) return nccl_fail(ncclInvalidArgument, "%s: newcomm is NULL", fn);
    *newcomm = NULL;
    if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT)
        return nccl_fail(ncclInvalidArgument, "%s: shrinkFlags 0x%x: NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT", fn,
                         (unsigned)shrinkFlags);
    if (excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList))
        return nccl_fail(ncclInvalidArgument, "%s: excludeRanksCount %d with list %p", fn, excludeRanksCount,
                         (void *)excludeRanksList);
    if ((r = nccl_config_check(config, fn))) return r;
    int n = comm->nranks;
    for (int i = 0; i < excludeRanksCount; i++) {
        int x = excludeRanksList[i];
        if (x < 0 || x >= n) return nccl_fail(ncclInvalidArgument, "%s: excluded rank %d is out of range [0, %d)", fn, x, n);
        if (contains(excludeRanksList, i, x)) return nccl_fail(ncclInvalidArgument, "%s: rank %d is excluded twice", fn, x);
        if (x == comm->rank)
            return nccl_fail(ncclInvalidUsage, "%s: this rank (%d) is in excludeRanksList: excluded ranks do not call "
                             "ncclCommShrink", fn, x);
    }
    int *failed = malloc(sizeof(int) * (size_t)n), nfailed = 0;
    if (!failed) return nccl_fail(ncclSystemError, "%s: out of host memory", fn);
    duet_status_t st = duet_comm_get_failed(comm->dc, failed, n, &nfailed);
    for (int i = 0; st == DUET_OK && i < excludeRanksCount; i++)
        if (!contains(failed, nfailed, excludeRanksList[i])) {
            free(failed);
            return nccl_fail(ncclInvalidUsage, "%s: rank %d is excluded but has not failed: Duet's shrink removes the "
                             "ranks that died (every other rank takes part); to leave live ranks out, use "
                             "ncclCommSplit with NCCL_SPLIT_NOCOLOR on them", fn, excludeRanksList[i]);
        }
    for (int i = 0; st == DUET_OK && i < nfailed; i++)
        if (!contains(excludeRanksList, excludeRanksCount, failed[i]))
            duet_ext_log(DUET_EXT_LOG_WARN, "FT", "NCCL: %s: rank %d died but is not in excludeRanksList: left out all the same", fn,
                     failed[i]);
    free(failed);
    if (st) return duet_failed(st, fn);
    if (shrinkFlags == NCCL_SHRINK_ABORT) duet_comm_revoke(comm->dc), comm->revoked_here = 1;
    duet_comm_t dc = NULL;
    if ((st = duet_comm_shrink(comm->dc, &dc))) return duet_failed(st, fn);
    struct ncclComm *c = nccl_comm_wrap(dc, config, fn);
    if (!c) return ncclSystemError;
    if (!config) c->blocking = comm->blocking, memcpy(c->name, comm->name, sizeof c->name);
    c->parent = comm;
    comm->children++;
    *newcomm = c;
    return ncclSuccess;
}
/* As a split: at once, even inside a group. */
NCCL_API ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                      ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
    duet_ext_group_saved_t saved;
    duet_ext_group_suspend(&saved);
    ncclResult_t r = shrink_now(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
    duet_ext_group_resume(&saved);
    return r;
}
NCCL_ALIAS(ncclCommShrink)

NCCL_API ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
    ncclResult_t r = nccl_comm_check(comm, "ncclCommRevoke");
    if (r) return r;
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
        return nccl_fail(ncclInvalidArgument, "ncclCommRevoke: revokeFlags must be NCCL_REVOKE_DEFAULT (0), not %d",
                         revokeFlags);
    duet_status_t st = duet_comm_revoke(comm->dc);
    if (st) return duet_failed(st, "ncclCommRevoke");
    comm->revoked_here = 1;
    return ncclSuccess;
}
NCCL_ALIAS(ncclCommRevoke)

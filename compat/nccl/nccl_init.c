/*
 * Communicators: the version, unique ids, ncclCommInitRank and its config / scalable forms,
 * finalize / destroy / abort, the queries and the asynchronous error.
 *
 * An ncclComm wraps one Duet communicator. ncclUniqueId is Duet's duet_unique_id_t (both are
 * 128 bytes: the rendezvous address, port and secret), so the id an application broadcasts
 * is Duet's own. Destroying is collective in Duet (its ranks leave together, so no one
 * unmaps memory a peer still reads): ncclCommDestroy waits for the other ranks' destroy.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl_compat.h"
#include "duet/duet_ext.h"

_Static_assert(sizeof(ncclUniqueId) == sizeof(duet_unique_id_t), "ncclUniqueId carries duet_unique_id_t");

ncclResult_t nccl_comm_check(const struct ncclComm *comm, const char *fn)
{
    if (!comm) return nccl_fail(ncclInvalidArgument, "%s: comm is NULL", fn);
    if (comm->magic != NCCL_COMPAT_MAGIC)
        return nccl_fail(ncclInvalidArgument, "%s: comm is not a live communicator (destroyed?)", fn);
    if (comm->destroy_pending)
        return nccl_fail(ncclInvalidUsage, "%s: comm was destroyed", fn);
    return ncclSuccess;
}

ncclResult_t nccl_comm_enter(struct ncclComm *comm, const char *fn)
{
    if (!comm) return nccl_comm_check(comm, fn);
    duet_ext_inflight_enter(comm); /* before the first read of comm */
    ncclResult_t r = nccl_comm_check(comm, fn);
    if (r == ncclSuccess && atomic_load_explicit(&comm->closing, memory_order_relaxed))
        r = nccl_fail(ncclInvalidUsage, "%s: comm is being destroyed or aborted (by another thread)", fn);
    if (r) duet_ext_inflight_leave();
    return r;
}

/* Until no other thread is inside a call on comm (nccl_comm_enter). */
static ncclResult_t drain_calls(struct ncclComm *comm, const char *fn)
{
    int left = 0;
    if (duet_ext_inflight_drain(comm, 300, &left) == DUET_OK) return ncclSuccess;
    return nccl_fail(ncclInternalError, "%s: %d call(s) on comm from other threads are still running after 300 s",
                     fn, left);
}

ncclResult_t nccl_config_check(const ncclConfig_t *config, const char *fn)
{
    if (!config) return ncclSuccess;
    if (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, blocking) ||
        config->version < 21400)
        return nccl_fail(ncclInvalidArgument, "%s: config was not initialised with NCCL_CONFIG_INITIALIZER "
                         "(size %zu, magic 0x%x, version %u)", fn, config->size, config->magic, config->version);
    return ncclSuccess;
}

/* A field of a config that may be older (smaller) than ours; NCCL_CONFIG_UNDEF_INT if absent. */
#define CONFIG_INT(cfg, field)                                                                      \
    ((cfg) && (cfg)->size >= offsetof(ncclConfig_t, field) + sizeof(int) ? (cfg)->field : NCCL_CONFIG_UNDEF_INT)

/* The first collective on a Duet communicator fetches the tuner's model from rank 0 over the
 * bootstrap links, a wait that a revoke does not interrupt: a member revoked before its first
 * collective would sit there until DUET_WAIT_TIMEOUT. NCCL tunes at init; so does this layer,
 * with one 4-byte allreduce while every rank is still in its init. */
static void warm_up(duet_comm_t dc)
{
    int32_t one = 1, sum = 0;
    if (duet_allreduce(&one, &sum, 1, DUET_INT32, DUET_SUM, dc, NULL) != DUET_OK)
        duet_ext_log(DUET_EXT_LOG_INFO, "INIT", "NCCL: the warm-up allreduce of a new communicator failed: %s", duet_last_error());
}

struct ncclComm *nccl_comm_wrap(duet_comm_t dc, const ncclConfig_t *config, const char *fn)
{
    warm_up(dc);
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c) {
        duet_comm_destroy(dc);
        nccl_fail(ncclSystemError, "%s: out of host memory", fn);
        return NULL;
    }
    c->magic = NCCL_COMPAT_MAGIC;
    c->dc = dc;
    c->rank = duet_comm_rank(dc);
    c->nranks = duet_comm_size(dc);
    c->cuda_dev = duet_cuda_device(dc);
    int blocking = CONFIG_INT(config, blocking);
    c->blocking = blocking == NCCL_CONFIG_UNDEF_INT ? 1 : blocking;
    if (config && config->size >= offsetof(ncclConfig_t, commName) + sizeof(char *) && config->commName)
        snprintf(c->name, sizeof c->name, "%s", config->commName);
    return c;
}

ncclResult_t nccl_comm_free(struct ncclComm *comm, const char *fn)
{
    if (comm->children > 0) { /* a shrunk communicator shares our heap: Duet frees us after it */
        comm->destroy_pending = 1;
        return ncclSuccess;
    }
    atomic_store(&comm->closing, 1); /* calls from other threads: new ones leave at entry */
    ncclResult_t busy = drain_calls(comm, fn);
    if (busy) {
        atomic_store(&comm->closing, 0);
        return busy;
    }
    duet_status_t st = duet_comm_destroy(comm->dc);
    struct ncclComm *parent = comm->parent;
    comm->magic = 0;
    if (drain_calls(comm, fn) == ncclSuccess) free(comm);
    else /* left allocated rather than freed under a reader */
        duet_ext_log(DUET_EXT_LOG_WARN, "INIT", "%s: a call from another thread still reads the communicator; "
                     "its %zu bytes are not freed", fn, sizeof *comm);
    ncclResult_t r = st ? nccl_fail(nccl_from_duet(st), "%s: %s", fn, duet_last_error()) : ncclSuccess;
    if (parent && --parent->children == 0 && parent->destroy_pending) {
        parent->destroy_pending = 0;
        ncclResult_t pr = nccl_comm_free(parent, fn);
        if (r == ncclSuccess) r = pr;
    }
    return r;
}

NCCL_API ncclResult_t pncclGetVersion(int *version)
{
    if (!version) return nccl_fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}
NCCL_ALIAS(ncclGetVersion)

NCCL_API ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId)
{
    nccl_env_apply();
    if (!uniqueId) return nccl_fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    duet_unique_id_t id;
    duet_status_t st = duet_get_unique_id(&id);
    if (st) return nccl_fail(nccl_from_duet(st), "ncclGetUniqueId: %s", duet_last_error());
    memcpy(uniqueId->internal, id.internal, sizeof uniqueId->internal);
    return ncclSuccess;
}
NCCL_ALIAS(ncclGetUniqueId)

static void print_version_once(void)
{
    static _Atomic int done;
    if (nccl_env_wants_version() && !atomic_exchange(&done, 1))
        duet_ext_log(DUET_EXT_LOG_ALWAYS, "INIT", "NCCL version %d.%d.%d (Duet %s, NCCL API layer)", NCCL_MAJOR,
                       NCCL_MINOR, NCCL_PATCH, duet_version_string());
}

ncclResult_t nccl_init_run(const nccl_init_call_t *init)
{
    const char *fn = "ncclCommInitRank";
    const ncclConfig_t *config = init->has_config ? &init->config : NULL;
    print_version_once();
    nccl_cuda_set_device(init->device); /* a queued init runs on another thread */
    duet_unique_id_t id;
    memcpy(id.internal, init->id.internal, sizeof id.internal);
    duet_comm_t dc = NULL;
    duet_config_t dconf = DUET_CONFIG_INIT;
    dconf.cuda_device_current = init->device >= 0; /* NCCL: the GPU current at the init */
    duet_status_t st = duet_comm_init_rank(&dc, init->nranks, id, init->rank, &dconf);
    if (st) return nccl_fail(nccl_from_duet(st), "%s: rank %d of %d: %s", fn, init->rank, init->nranks, duet_last_error());
    struct ncclComm *c = nccl_comm_wrap(dc, config, fn);
    if (!c) return ncclSystemError;
    if (init->device >= 0 && c->cuda_dev >= 0 && init->device != c->cuda_dev)
        duet_ext_log(DUET_EXT_LOG_WARN, "INIT", "NCCL: rank %d: the current CUDA device is %d but Duet placed this rank's GPU heap "
                 "on device %d", init->rank, init->device, c->cuda_dev);
    duet_ext_log(DUET_EXT_LOG_INFO, "INIT", "NCCL: communicator %s%srank %d of %d ready (%s backend)", c->name, c->name[0] ? " " : "",
             c->rank, c->nranks, c->cuda_dev >= 0 ? "CPU + CUDA" : "CPU");
    *init->out = c;
    return ncclSuccess;
}

/* Checks the arguments and runs the init now, or queues it in the open group. */
static ncclResult_t init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank,
                              const ncclConfig_t *config, const char *fn)
{
    nccl_env_apply();
    if (!comm) return nccl_fail(ncclInvalidArgument, "%s: comm is NULL", fn);
    *comm = NULL;
    if (nranks < 1) return nccl_fail(ncclInvalidArgument, "%s: nranks %d < 1", fn, nranks);
    if (rank < 0 || rank >= nranks)
        return nccl_fail(ncclInvalidArgument, "%s: rank %d is out of range [0, %d)", fn, rank, nranks);
    ncclResult_t r = nccl_config_check(config, fn);
    if (r) return r;
    nccl_init_call_t init = {.out = comm, .nranks = nranks, .rank = rank, .id = *id,
                             .device = nccl_cuda_current_device()};
    if (config) {
        init.has_config = 1;
        memcpy(&init.config, config, config->size < sizeof init.config ? config->size : sizeof init.config);
    }
    if (nccl_group_depth() > 0) return nccl_group_add_init(&init);
    return nccl_init_run(&init);
}

NCCL_API ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return init_rank(comm, nranks, &commId, rank, NULL, "ncclCommInitRank");
}
NCCL_ALIAS(ncclCommInitRank)

NCCL_API ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                              ncclConfig_t *config)
{
    return init_rank(comm, nranks, &commId, rank, config, "ncclCommInitRankConfig");
}
NCCL_ALIAS(ncclCommInitRankConfig)

/* NCCL spreads its bootstrap over nId roots; Duet's star needs one: commIds[0], which NCCL
 * also has rank 0 make. The other ids' listeners stay unused in their makers. */
NCCL_API ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                                ncclUniqueId *commIds, ncclConfig_t *config)
{
    if (nId < 1 || !commIds)
        return nccl_fail(ncclInvalidArgument, "ncclCommInitRankScalable: nId %d, commIds %p: need at least one id",
                         nId, (void *)commIds);
    return init_rank(newcomm, nranks, &commIds[0], myrank, config, "ncclCommInitRankScalable");
}
NCCL_ALIAS(ncclCommInitRankScalable)

/* NCCL's finalize flushes outstanding work so destroy need not wait. Duet's host calls are
 * complete when they return and its GPU calls are ordered on their streams; what remains is
 * the collective teardown, done by ncclCommDestroy. */
NCCL_API ncclResult_t pncclCommFinalize(ncclComm_t comm)
{
    ncclResult_t r = nccl_comm_check(comm, "ncclCommFinalize");
    if (r) return r;
    if (comm->finalized) return nccl_fail(ncclInvalidUsage, "ncclCommFinalize: comm was finalized already");
    comm->finalized = 1;
    return ncclSuccess;
}
NCCL_ALIAS(ncclCommFinalize)

NCCL_API ncclResult_t pncclCommDestroy(ncclComm_t comm)
{
    if (!comm) return ncclSuccess; /* NCCL accepts NULL */
    ncclResult_t r = nccl_comm_check(comm, "ncclCommDestroy");
    if (r) return r;
    return nccl_clique_free(comm, "ncclCommDestroy");
}
NCCL_ALIAS(ncclCommDestroy)

/* NCCL's abort is local; Duet's revoke stops every member's work on comm (their calls return
 * ncclRemoteError), then the collective teardown meets theirs (a rank that died counts as
 * gone: nobody waits for it). */
NCCL_API ncclResult_t pncclCommAbort(ncclComm_t comm)
{
    if (!comm) return ncclSuccess;
    ncclResult_t r = nccl_comm_check(comm, "ncclCommAbort");
    if (r) return r;
    duet_comm_revoke(comm->dc);
    comm->revoked_here = 1;
    return nccl_clique_free(comm, "ncclCommAbort");
}
NCCL_ALIAS(ncclCommAbort)

NCCL_API ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    ncclResult_t r = nccl_comm_enter(comm, "ncclCommGetAsyncError"); /* a watchdog thread's call */
    if (r) return r;
    if (!asyncError) {
        duet_ext_inflight_leave();
        return nccl_fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
    }
    duet_status_t st = duet_comm_status(comm->dc);
    /* after its own revoke a rank's communicator is quiet, as NCCL's is: ready for shrink */
    if (st == DUET_ERR_REVOKED && comm->revoked_here) st = DUET_OK;
    *asyncError = nccl_from_duet(st);
    duet_ext_inflight_leave();
    return ncclSuccess;
}
NCCL_ALIAS(ncclCommGetAsyncError)

NCCL_API ncclResult_t pncclCommCount(const ncclComm_t comm, int *count)
{
    ncclResult_t r = nccl_comm_check(comm, "ncclCommCount");
    if (r) return r;
    if (!count) return nccl_fail(ncclInvalidArgument, "ncclCommCount: count is NULL");
    *count = comm->nranks;
    return ncclSuccess;
}
NCCL_ALIAS(ncclCommCount)

NCCL_API ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device)
{
    ncclResult_t r = nccl_comm_check(comm, "ncclCommCuDevice");
    if (r) return r;
    if (!device) return nccl_fail(ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
    *device = comm->cuda_dev;
    return ncclSuccess;
}
NCCL_ALIAS(ncclCommCuDevice)

NCCL_API ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank)
{
    ncclResult_t r = nccl_comm_check(comm, "ncclCommUserRank");
    if (r) return r;
    if (!rank) return nccl_fail(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
    *rank = comm->rank;
    return ncclSuccess;
}
NCCL_ALIAS(ncclCommUserRank)

/*
 * NCCL 2.28's device API (nccl_device.h): the host calls that set up NCCL's own GPU kernels'
 * view of a communicator. Duet's kernels have their own (include/duet/duet_device.cuh), so
 * these exist only so that programs linked against them (PyTorch needs ncclDevCommCreate /
 * ncclDevCommDestroy) load; each one that returns a result returns ncclInvalidUsage with a
 * message. The team queries answer for Duet's one kind of team (every rank on one host is
 * reachable by load / store, so the LSA team is the world team).
 *
 * Declared here with Duet's own prototypes: nccl.h does not carry them.
 */
#include "nccl_compat.h"

/* NCCL's team triple, by value (the layout nccl_device/core.h gives it). */
typedef struct {
    int nRanks, rank, stride;
} nccl_team_t;

#define UNSUPPORTED(name)                                                                               \
    nccl_fail(ncclInvalidUsage, "%s: NCCL's device API is not provided by Duet (use Duet's device API, " \
              "include/duet/duet_device.cuh)", name)

NCCL_API ncclResult_t pncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm);
NCCL_API ncclResult_t pncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm)
{
    (void)comm, (void)reqs, (void)outDevComm;
    return UNSUPPORTED("ncclDevCommCreate");
}
NCCL_ALIAS(ncclDevCommCreate)

NCCL_API ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const void *devComm);
NCCL_API ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const void *devComm)
{
    (void)comm, (void)devComm;
    return UNSUPPORTED("ncclDevCommDestroy");
}
NCCL_ALIAS(ncclDevCommDestroy)

NCCL_API ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, nccl_team_t team, int nBarriers,
                                                       void *outHandle, void *outReq);
NCCL_API ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, nccl_team_t team, int nBarriers,
                                                       void *outHandle, void *outReq)
{
    (void)comm, (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
    return UNSUPPORTED("ncclGinBarrierCreateRequirement");
}
NCCL_ALIAS(ncclGinBarrierCreateRequirement)

NCCL_API ncclResult_t pncclLsaBarrierCreateRequirement(nccl_team_t team, int nBarriers, void *outHandle,
                                                       void *outReq);
NCCL_API ncclResult_t pncclLsaBarrierCreateRequirement(nccl_team_t team, int nBarriers, void *outHandle,
                                                       void *outReq)
{
    (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
    return UNSUPPORTED("ncclLsaBarrierCreateRequirement");
}
NCCL_ALIAS(ncclLsaBarrierCreateRequirement)

NCCL_API ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, void *outHandle, void *outReq);
NCCL_API ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, void *outHandle, void *outReq)
{
    (void)nBlocks, (void)nSlots, (void)outHandle, (void)outReq;
    return UNSUPPORTED("ncclLLA2ACreateRequirement");
}
NCCL_ALIAS(ncclLLA2ACreateRequirement)

/* A size calculation for NCCL's LL all-to-all buffers: -1 (and the message), nothing to size. */
NCCL_API int pncclLLA2ACalcSlots(int maxElts, int maxEltSize);
NCCL_API int pncclLLA2ACalcSlots(int maxElts, int maxEltSize)
{
    (void)maxElts, (void)maxEltSize;
    UNSUPPORTED("ncclLLA2ACalcSlots");
    return -1;
}
NCCL_ALIAS(ncclLLA2ACalcSlots)

static nccl_team_t world_team(ncclComm_t comm, const char *fn)
{
    if (nccl_comm_check(comm, fn)) return (nccl_team_t){0, -1, 0};
    return (nccl_team_t){comm->nranks, comm->rank, 1};
}

NCCL_API nccl_team_t pncclTeamWorld(ncclComm_t comm);
NCCL_API nccl_team_t pncclTeamWorld(ncclComm_t comm) { return world_team(comm, "ncclTeamWorld"); }
NCCL_ALIAS(ncclTeamWorld)

NCCL_API nccl_team_t pncclTeamLsa(ncclComm_t comm);
NCCL_API nccl_team_t pncclTeamLsa(ncclComm_t comm) { return world_team(comm, "ncclTeamLsa"); }
NCCL_ALIAS(ncclTeamLsa)

/* One host: the rail (same local index on every host) is this rank alone. */
NCCL_API nccl_team_t pncclTeamRail(ncclComm_t comm);
NCCL_API nccl_team_t pncclTeamRail(ncclComm_t comm)
{
    if (nccl_comm_check(comm, "ncclTeamRail")) return (nccl_team_t){0, -1, 0};
    return (nccl_team_t){1, 0, 1};
}
NCCL_ALIAS(ncclTeamRail)

/* A team rank as a rank of comm: team ranks are strided from this rank's position. */
static int team_to_world(ncclComm_t comm, nccl_team_t team, int rank, const char *fn)
{
    if (nccl_comm_check(comm, fn)) return -1;
    if (rank < 0 || rank >= team.nRanks) return -1;
    return comm->rank + (rank - team.rank) * team.stride;
}

NCCL_API int pncclTeamRankToWorld(ncclComm_t comm, nccl_team_t team, int rank);
NCCL_API int pncclTeamRankToWorld(ncclComm_t comm, nccl_team_t team, int rank)
{
    return team_to_world(comm, team, rank, "ncclTeamRankToWorld");
}
NCCL_ALIAS(ncclTeamRankToWorld)

/* The LSA team is the world team here. */
NCCL_API int pncclTeamRankToLsa(ncclComm_t comm, nccl_team_t team, int rank);
NCCL_API int pncclTeamRankToLsa(ncclComm_t comm, nccl_team_t team, int rank)
{
    return team_to_world(comm, team, rank, "ncclTeamRankToLsa");
}
NCCL_ALIAS(ncclTeamRankToLsa)

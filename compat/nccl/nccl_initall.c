/*
 * ncclCommInitAll: ndev ranks of one communicator in this process. Duet lets one process
 * hold several ranks (each rank's communicator is its own object with its own heap; the
 * bootstrap, the failure detector and the collectives are per communicator), so this makes
 * one unique id and runs ncclCommInitRank for ranks 0..ndev-1 on a thread each (an init
 * returns only when every rank has joined). Rank i uses devlist[i] (or device i) where Duet
 * has GPUs; Duet places a rank's GPU heap on (local rank mod GPUs) unless DUET_CUDA_DEVICE
 * says otherwise, and warns when that differs. Afterwards drive the ranks as NCCL programs
 * do: one thread per rank, or one thread with each round of calls inside ncclGroupStart /
 * ncclGroupEnd (which runs each communicator's calls on a thread of its own).
 */
#include <stdlib.h>
#include <string.h>
#include "nccl_compat.h"

NCCL_API ncclResult_t pncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
    const char *fn = "ncclCommInitAll";
    nccl_env_apply();
    if (!comm) return nccl_fail(ncclInvalidArgument, "%s: comm is NULL", fn);
    if (ndev < 1) return nccl_fail(ncclInvalidArgument, "%s: ndev %d < 1", fn, ndev);
    for (int i = 0; i < ndev; i++) comm[i] = NULL;
    if (nccl_group_depth() > 0)
        return nccl_fail(ncclInvalidUsage, "%s: inside a group (call it outside ncclGroupStart / ncclGroupEnd)", fn);
    ncclUniqueId id;
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r) return r;
    /* a group of ndev inits runs them on a thread each (nccl_group.c) */
    ncclGroupStart();
    for (int i = 0; i < ndev; i++) {
        int dev = devlist ? devlist[i] : (duet_cuda_available() ? i : -1);
        nccl_init_call_t init = {.out = &comm[i], .nranks = ndev, .rank = i, .id = id, .device = dev};
        ncclResult_t a = nccl_group_add_init(&init);
        if (r == ncclSuccess) r = a;
    }
    ncclResult_t e = ncclGroupEnd();
    if (r == ncclSuccess) r = e;
    if (r != ncclSuccess) /* the ranks that did join leave together (destroy is collective) */
        for (int i = 0; i < ndev; i++) comm[i] = NULL;
    return r;
}
NCCL_ALIAS(ncclCommInitAll)

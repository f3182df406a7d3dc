/*
 * nccl_layout_test.c — the facts of NCCL 2.28's ABI, checked at compile time and run time:
 * built once against NVIDIA's nccl.h and once against Duet's, and both must pass, so the two
 * headers agree on every size, offset, enum value and initializer.
 */
#include <nccl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define SAME(a, b) _Static_assert((a) == (b), #a " == " #b)

SAME(sizeof(ncclUniqueId), 128);
SAME(NCCL_UNIQUE_ID_BYTES, 128);
SAME(sizeof(ncclConfig_t), 80);
SAME(offsetof(ncclConfig_t, magic), 8);
SAME(offsetof(ncclConfig_t, version), 12);
SAME(offsetof(ncclConfig_t, blocking), 16);
SAME(offsetof(ncclConfig_t, netName), 32);
SAME(offsetof(ncclConfig_t, splitShare), 40);
SAME(offsetof(ncclConfig_t, commName), 48);
SAME(offsetof(ncclConfig_t, collnetEnable), 56);
SAME(offsetof(ncclConfig_t, nvlinkCentricSched), 76);
SAME(sizeof(ncclSimInfo_t), 24);
SAME(offsetof(ncclSimInfo_t, estimatedTime), 16);
SAME(sizeof(ncclResult_t), 4);
SAME(sizeof(ncclRedOp_t), 4);
SAME(sizeof(ncclDataType_t), 4);
SAME(ncclSuccess, 0); SAME(ncclUnhandledCudaError, 1); SAME(ncclSystemError, 2); SAME(ncclInternalError, 3);
SAME(ncclInvalidArgument, 4); SAME(ncclInvalidUsage, 5); SAME(ncclRemoteError, 6); SAME(ncclInProgress, 7);
SAME(ncclNumResults, 8);
SAME(ncclSum, 0); SAME(ncclProd, 1); SAME(ncclMax, 2); SAME(ncclMin, 3); SAME(ncclAvg, 4); SAME(ncclNumOps, 5);
SAME(ncclMaxRedOp, 0x7fffffff);
SAME(ncclInt8, 0); SAME(ncclChar, 0); SAME(ncclUint8, 1); SAME(ncclInt32, 2); SAME(ncclInt, 2);
SAME(ncclUint32, 3); SAME(ncclInt64, 4); SAME(ncclUint64, 5); SAME(ncclFloat16, 6); SAME(ncclHalf, 6);
SAME(ncclFloat32, 7); SAME(ncclFloat, 7); SAME(ncclFloat64, 8); SAME(ncclDouble, 8); SAME(ncclBfloat16, 9);
SAME(ncclFloat8e4m3, 10); SAME(ncclFloat8e5m2, 11); SAME(ncclNumTypes, 12);
SAME(ncclScalarDevice, 0); SAME(ncclScalarHostImmediate, 1);
SAME(NCCL_VERSION_CODE, 22809); SAME(NCCL_VERSION(2, 28, 9), 22809); SAME(NCCL_VERSION(2, 8, 4), 2804);
SAME(NCCL_SPLIT_NOCOLOR, -1); SAME(NCCL_CONFIG_UNDEF_INT, -2147483647 - 1);
SAME(NCCL_WIN_DEFAULT, 0); SAME(NCCL_WIN_COLL_SYMMETRIC, 1); SAME(NCCL_WIN_REQUIRED_ALIGNMENT, 4096);
SAME(NCCL_CTA_POLICY_DEFAULT, 0); SAME(NCCL_CTA_POLICY_EFFICIENCY, 1); SAME(NCCL_CTA_POLICY_ZERO, 2);
SAME(NCCL_SHRINK_DEFAULT, 0); SAME(NCCL_SHRINK_ABORT, 1); SAME(NCCL_REVOKE_DEFAULT, 0);

int main(void)
{
    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;
    int ok = c.size == 80 && c.magic == 0xcafebeef && c.version == 22809 && c.blocking == NCCL_CONFIG_UNDEF_INT &&
             c.netName == NULL && c.commName == NULL && c.nvlinkCentricSched == NCCL_CONFIG_UNDEF_INT &&
             c.CTAPolicy == NCCL_CONFIG_UNDEF_INT && s.size == sizeof s && s.magic == 0x74685283 &&
             s.version == 22809 && s.estimatedTime == -1.0f;
    if (!ok) fprintf(stderr, "nccl_layout_test: FAIL an initializer differs from NCCL 2.28.9's\n");
    return ok ? 0 : 1;
}

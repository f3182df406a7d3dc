/*
 * nccl.h — Duet's NCCL 2.28 interface (compat/nccl, library libnccl.so.2).
 *
 * Duet's own text of the NCCL 2.28 C API: every type, enumeration value, structure layout
 * and function signature is binary compatible with NCCL 2.28.9, so a program built against
 * this header (or against NVIDIA's) runs on Duet's libnccl.so.2, and the other way round.
 * docs/MIGRATING_NCCL.md says what differs and what each unsupported call returns.
 *
 * Differences from NCCL worth knowing before reading the declarations:
 *   - host buffers are accepted (Duet's CPU backend runs the call; it returns when done);
 *     device buffers go to Duet's CUDA backend, ordered on the stream given;
 *   - several ranks may share one GPU, and one process may hold several ranks;
 *   - the rank that makes the ncclUniqueId (ncclGetUniqueId) must be rank 0 of the
 *     communicator built from it;
 *   - calls Duet cannot honour exist and return ncclInvalidUsage, with ncclGetLastError()
 *     saying why.
 *
 * The CUDA runtime headers are included when the compiler can find them (as NVIDIA's header
 * does); without them cudaStream_t is declared here, so host-only programs build without CUDA.
 */
#ifndef NCCL_H_
#define NCCL_H_
#define DUET_NCCL_H 1 /* this is Duet's header, not NVIDIA's */

#if defined(__has_include)
#if __has_include(<cuda_runtime.h>) && !defined(DUET_NCCL_NO_CUDA)
#define DUET_NCCL_HAVE_CUDA_HEADERS_ 1
#endif
#endif

#ifdef DUET_NCCL_HAVE_CUDA_HEADERS_
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#else
/* the CUDA runtime's stream handle, declared the way cuda_runtime.h declares it */
typedef struct CUstream_st *cudaStream_t;
#endif

#include <limits.h>
#include <stddef.h>

/* The NCCL release whose interface this is. */
#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 22809
/* Versions up to 2.8 were coded X*1000 + Y*100 + Z, later ones X*10000 + Y*100 + Z. */
#define NCCL_VERSION(X, Y, Z) \
    (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

/* ---- handles and identifiers ----------------------------------------------------------- */
typedef struct ncclComm *ncclComm_t;                  /* a communicator                       */
typedef struct ncclWindow_vidmem *ncclWindow_t;       /* a registered memory window           */
#define NCCL_COMM_NULL NULL

/* Made by ncclGetUniqueId on the future rank 0, handed to every rank by the application.
 * Duet keeps its rendezvous (address, port, secret) inside. */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* ---- results --------------------------------------------------------------------------- */
typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1, /* a CUDA call failed                                        */
    ncclSystemError = 2,        /* an operating-system call failed, or memory ran out          */
    ncclInternalError = 3,      /* a bug                                                       */
    ncclInvalidArgument = 4,    /* a bad argument                                              */
    ncclInvalidUsage = 5,       /* a call out of place, or one Duet does not provide           */
    ncclRemoteError = 6,        /* a peer failed, or revoked the communicator                  */
    ncclInProgress = 7,         /* a non-blocking call still running (Duet never returns it)   */
    ncclNumResults = 8
} ncclResult_t;

/* ---- configuration --------------------------------------------------------------------- */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* ncclCommWindowRegister flags and the alignment it asks for */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy values */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* ncclCommShrink flags */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* ncclCommRevoke flags (must be NCCL_REVOKE_DEFAULT) */
#define NCCL_REVOKE_DEFAULT 0x00

/* Options of a new communicator. Initialise with NCCL_CONFIG_INITIALIZER (size, magic and
 * version are checked), then set what you need. Duet reads `blocking` (accepted either way:
 * Duet's calls always complete before they return) and `commName` (in its logs); the other
 * fields tune NCCL's GPU kernels and are accepted and ignored. */
typedef struct ncclConfig_v22800 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
    int trafficClass;
    const char *commName;
    int collnetEnable;
    int CTAPolicy;
    int shrinkShare;
    int nvlsCTAs;
    int nChannelsPerNetPeer;
    int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                               \
    {                                                                                         \
        sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,              \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,              \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,              \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,              \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT                                      \
    }

/* What ncclGroupSimulateEnd would report (Duet: unsupported, see below). */
typedef struct ncclSimInfo_v22200 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER \
    { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_UNDEF_FLOAT }

/* ---- reduction operations and datatypes ------------------------------------------------- */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5,          /* built-in operations; ncclRedOpCreatePreMulSum hands out
                              * values from here up                                          */
    ncclMaxRedOp = 0x7fffffff /* largest value an ncclRedOp_t may hold (a 4-byte enum)       */
} ncclRedOp_t;

typedef enum {
    ncclInt8 = 0, ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2, ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6, ncclHalf = 6,
    ncclFloat32 = 7, ncclFloat = 7,
    ncclFloat64 = 8, ncclDouble = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10, /* Duet: refused with ncclInvalidArgument */
    ncclFloat8e5m2 = 11, /* Duet: refused with ncclInvalidArgument */
    ncclNumTypes = 12
} ncclDataType_t;

/* Where the scalar of ncclRedOpCreatePreMulSum lives and when it is read. */
typedef enum {
    ncclScalarDevice = 0,        /* read by each collective that uses the operation        */
    ncclScalarHostImmediate = 1  /* read once, by ncclRedOpCreatePreMulSum                   */
} ncclScalarResidence_t;

/* Every function below exists twice: ncclX, and pncclX (the same function, for profiling
 * layers that interpose ncclX). */

/* ---- memory ------------------------------------------------------------------------------ */
/* Device memory (cudaMalloc) for buffers; without a GPU, host memory (Duet's CPU backend). */
ncclResult_t ncclMemAlloc(void **ptr, size_t size);
ncclResult_t pncclMemAlloc(void **ptr, size_t size);
ncclResult_t ncclMemFree(void *ptr);
ncclResult_t pncclMemFree(void *ptr);

/* ---- versions, ids, communicators --------------------------------------------------------- */
/* NCCL_VERSION_CODE of the interface this library implements (22809). */
ncclResult_t ncclGetVersion(int *version);
ncclResult_t pncclGetVersion(int *version);

/* Makes an id. The calling process must become rank 0 of the communicator built from it. */
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId);

/* Collective over nranks ranks (threads or processes): returns when all have joined. */
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t *config);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);

/* ndev ranks in this process at once (comm[0..ndev) gets them). */
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist);
ncclResult_t pncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist);

/* Completes the communicator's work; afterwards only ncclCommDestroy. */
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm);

/* Frees the communicator. Duet: collective over its ranks (they leave together). */
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);

/* Stops the communicator's work, on every member (Duet revokes it), and frees it. */
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);

/* Stops the communicator's work; Duet carries the revoke to every member. Then shrink or
 * destroy. revokeFlags must be NCCL_REVOKE_DEFAULT. */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);

/* Collective over comm: ranks of one color form a communicator, ordered by key then rank;
 * NCCL_SPLIT_NOCOLOR gives NULL. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config);

/* Collective over the ranks not excluded: a communicator without excludeRanksList's ranks.
 * Duet: the excluded ranks must be ranks that died (see docs/MIGRATING_NCCL.md). */
ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,
                            ncclConfig_t *config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,
                             ncclConfig_t *config, int shrinkFlags);

/* As ncclCommInitRankConfig, with nId ids (Duet uses commIds[0], made by rank 0). */
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId *commIds, ncclConfig_t *config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId *commIds, ncclConfig_t *config);

/* ---- errors -------------------------------------------------------------------------------- */
/* A fixed text for each result (never NULL). */
const char *ncclGetErrorString(ncclResult_t result);
const char *pncclGetErrorString(ncclResult_t result);
/* The message of the calling thread's last failed call ("" when none); comm is unused. */
const char *ncclGetLastError(ncclComm_t comm);
const char *pncclGetLastError(ncclComm_t comm);

/* Re-reads the logging settings (Duet: reads them once; this does nothing). */
__attribute__((deprecated("ncclResetDebugInit is not part of the NCCL API"))) void ncclResetDebugInit(void);
__attribute__((deprecated("pncclResetDebugInit is not part of the NCCL API"))) void pncclResetDebugInit(void);

/* ncclSuccess, or the error that stopped the communicator (a peer died: ncclRemoteError). */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);

/* ---- queries --------------------------------------------------------------------------------- */
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int *count);
/* The CUDA device the rank uses, or -1 for a communicator on the CPU backend only. */
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank);

/* ---- registration ------------------------------------------------------------------------------ */
/* Buffer registration: accepted (a handle comes back), nothing is pinned or mapped. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle);

/* Windows: collective; recorded, collectives on them run as on any buffer. */
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);

/* ---- user reduction operations --------------------------------------------------------------- */
/* An operation that multiplies each input by *scalar (of `datatype`) and sums: for comm and
 * datatype only. Duet: host buffers only (device buffers: ncclInvalidUsage). */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* ---- collectives ----------------------------------------------------------------------------
 * Every rank of comm calls the same one, in the same order. Device buffers: enqueued on
 * `stream`. Host buffers: done when the call returns (stream work before it is waited for). */

/* recvbuff on root = op over ranks of sendbuff (recvbuff unused elsewhere). */
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream);
/* In-place broadcast of buff from root (older form). */
ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream);
/* recvbuff = root's sendbuff on every rank. */
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream);
/* recvbuff = op over ranks of sendbuff, on every rank. */
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
/* recvbuff (recvcount) on rank i = op over ranks of block i of sendbuff.
 * In place: recvbuff == sendbuff + rank * recvcount. */
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
/* Block i of recvbuff = rank i's sendbuff. In place: sendbuff == recvbuff + rank * sendcount. */
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream);
/* Block j of recvbuff on rank i = block i of rank j's sendbuff (count elements each). */
ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
/* Block i of recvbuff on root = rank i's sendbuff. In place: sendbuff == recvbuff + root * count. */
ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);
/* recvbuff on rank i = block i of root's sendbuff. In place: recvbuff == sendbuff + root * count. */
ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream);

/* ---- point to point ----------------------------------------------------------------------------
 * A send to peer matches that peer's receive from this rank (same count and datatype). Pairs
 * that must progress together go inside one ncclGroupStart / ncclGroupEnd. */
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream);

/* ---- groups ------------------------------------------------------------------------------------
 * Calls between ncclGroupStart and ncclGroupEnd (per thread, nestable) are queued and run
 * together at the outermost ncclGroupEnd; so are ncclCommInitRank calls (one thread may then
 * initialise several ranks). */
ncclResult_t ncclGroupStart(void);
ncclResult_t pncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t pncclGroupEnd(void);
/* Duet: unsupported: ends the group without running its calls, returns ncclInvalidUsage. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo);

#ifdef __cplusplus
}
#endif

#endif /* NCCL_H_ */

/*
 * nccl_compat.h — the insides of Duet's NCCL layer (compat/nccl): the communicator wrapper,
 * the queued call every collective becomes, and the helpers the files share.
 *
 * The layer only translates: every call checks its NCCL arguments, maps types and
 * operations onto Duet's, and calls the public Duet API (include/duet/duet.h). Errors are
 * raised with nccl_fail(), which logs through Duet's logger and records the message that
 * ncclGetLastError() returns.
 */
#ifndef NCCL_COMPAT_H
#define NCCL_COMPAT_H

#include <stdatomic.h>
#include <stdint.h>
#include "nccl.h"
#include "duet/duet.h"
#include "duet/duet_cuda.h"
#include "duet/duet_ext.h"

/* Defines pnccl<name> as the implementation and exports ncclX as a weak alias of it (as
 * NCCL does, so that a profiling layer can define ncclX and call pncclX). Use after the
 * function's definition. */
#define NCCL_ALIAS(name) \
    extern __typeof__(p##name) name __attribute__((weak, alias("p" #name), visibility("default")));
#define NCCL_API __attribute__((visibility("default")))

/* ---- communicators --------------------------------------------------------------------- */
#define NCCL_COMPAT_MAGIC 0x4e43434c44554554ull /* "NCCLDUET" */
#define NCCL_COMPAT_MAX_REDOPS 64              /* PreMulSum operations alive per communicator */

typedef struct {
    int used;
    ncclDataType_t dt;
    ncclScalarResidence_t residence;
    const void *ptr;        /* ncclScalarDevice: read by each call                 */
    unsigned char value[8]; /* ncclScalarHostImmediate: the scalar, read at creation */
} nccl_redop_t;

struct ncclComm {
    uint64_t magic;
    duet_comm_t dc;
    int rank, nranks;
    int cuda_dev;           /* the GPU of Duet's GPU heap, or -1 (CPU backend only)        */
    int blocking;
    int finalized;
    int revoked_here;       /* this rank called ncclCommRevoke                            */
    struct ncclComm *parent; /* a shrunk communicator's parent (shares its heap), or NULL */
    int children;           /* live shrunk communicators made from this one               */
    int destroy_pending;    /* destroyed by the program while children live               */
    _Atomic int closing;    /* being freed: a call from another thread leaves at entry
                             * (calls in flight: duet_ext_inflight_*, nccl_comm_enter) */
    char name[64];          /* ncclConfig_t.commName                                       */
    struct nccl_clique *clique; /* ranks this process initialised together (InitAll), or NULL */
    nccl_redop_t redops[NCCL_COMPAT_MAX_REDOPS];
};

/* Ranks of one communicator that one process initialised together (ncclCommInitAll, or
 * several ncclCommInitRank in one group): Duet's destroy is collective, and NCCL programs
 * destroy such ranks one after the other from one thread, so the clique's ranks are destroyed
 * together, on a thread each, when the last of them is (nccl_group.c). */
struct nccl_clique {
    int n, pending;
    struct ncclComm *comms[];
};
/* Destroys comm now, or (clique) once all its clique's ranks were destroyed by the program. */
ncclResult_t nccl_clique_free(struct ncclComm *comm, const char *fn);

/* ncclSuccess when comm is a live wrapper; else an error raised for fn. */
ncclResult_t nccl_comm_check(const struct ncclComm *comm, const char *fn);
/* A call on comm from another thread than the one that may free it (ncclCommAbort from a
 * watchdog): inside it from nccl_comm_enter (which checks comm as nccl_comm_check does, and
 * refuses one being freed) until duet_ext_inflight_leave(), which follows a successful enter
 * only. nccl_comm_free waits for such calls before it frees. */
ncclResult_t nccl_comm_enter(struct ncclComm *comm, const char *fn);
/* Wraps a Duet communicator (takes it); NULL and an error raised when out of memory (the
 * Duet communicator is then destroyed). */
struct ncclComm *nccl_comm_wrap(duet_comm_t dc, const ncclConfig_t *config, const char *fn);
/* Destroys the Duet communicator and frees the wrapper (and a parent waiting for it). */
ncclResult_t nccl_comm_free(struct ncclComm *comm, const char *fn);
/* Checks a config (NULL is fine): size, magic and version as NCCL_CONFIG_INITIALIZER sets. */
ncclResult_t nccl_config_check(const ncclConfig_t *config, const char *fn);

/* ---- errors (nccl_error.c) --------------------------------------------------------------- */
/* Logs at WARN, records "fn: message" as the last error, returns r. */
ncclResult_t nccl_fail(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The NCCL result for a Duet status (the Duet call already recorded its message). */
ncclResult_t nccl_from_duet(duet_status_t st);

/* ---- types (nccl_coll.c) --------------------------------------------------------------------- */
/* ncclSuccess and *out, or ncclInvalidArgument raised for fn (fp8 and unknown types). */
ncclResult_t nccl_map_datatype(ncclDataType_t dt, duet_datatype_t *out, const char *fn);
size_t nccl_datatype_size(ncclDataType_t dt);

/* ---- calls: every collective, send and receive is one nccl_call_t ------------------------- */
typedef enum {
    NCCL_CALL_ALLREDUCE, NCCL_CALL_BROADCAST, NCCL_CALL_REDUCE, NCCL_CALL_ALLGATHER,
    NCCL_CALL_REDUCE_SCATTER, NCCL_CALL_ALLTOALL, NCCL_CALL_GATHER, NCCL_CALL_SCATTER,
    NCCL_CALL_SEND, NCCL_CALL_RECV
} nccl_call_kind_t;

typedef struct {
    nccl_call_kind_t kind;
    const char *fn;          /* the NCCL function's name, for messages */
    struct ncclComm *comm;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t nccl_dt;
    duet_datatype_t dt;
    ncclRedOp_t nccl_op;
    duet_op_t op;
    int root;                /* root, or the peer of a send / receive */
    cudaStream_t stream;
    int device;              /* 1: device buffers (Duet's CUDA backend); 0: host buffers */
    void *temp;              /* a copy of the input this layer made (PreMulSum scaling,
                              * in-place all-to-all): the send buffer then; freed after     */
    int temp_kind;           /* what temp is: NCCL_TEMP_HOST (malloc), NCCL_TEMP_DEVICE_ASYNC
                              * (cudaMallocAsync on stream), NCCL_TEMP_DEVICE (cudaMalloc)  */
    int mate;                /* a send to self on device buffers: 1 + the index of its receive
                              * in the batch being run (nccl_run.c issues the two together),
                              * -1 when it sends a buffer onto itself (nothing to do)       */
} nccl_call_t;

enum { NCCL_TEMP_HOST, NCCL_TEMP_DEVICE_ASYNC, NCCL_TEMP_DEVICE };
/* Frees call->temp as it was made (a device one in stream order, after the work enqueued on
 * call->stream so far) and clears it. */
void nccl_call_free_temp(nccl_call_t *call);

/* Checks a call's arguments and completes it (types, operation, where the buffers lie):
 * ncclSuccess or the error raised. Then nccl_call_submit runs it now, or queues it in the
 * calling thread's open group. */
ncclResult_t nccl_call_prepare(nccl_call_t *call);
ncclResult_t nccl_call_submit(nccl_call_t *call);

/* Runs calls of ONE communicator, in order, in this thread: collectives one by one, sends and
 * receives (and gather / scatter, made of them) together in one Duet group. */
ncclResult_t nccl_calls_run(nccl_call_t *calls, int n);
/* Issues one call into Duet (inside or outside a Duet group): nccl_coll.c. */
duet_status_t nccl_call_issue(nccl_call_t *call);
/* The parts of a gather / scatter done locally (the root's own block), nccl_gather.c. */
duet_status_t nccl_gather_issue(nccl_call_t *call);
/* PreMulSum (nccl_redop.c): for a call with a created op, the scaled copy of its input in
 * call->temp (host buffers: made now; device buffers: a scratch buffer and the scaling kernel
 * enqueued on call->stream) and call->op = DUET_SUM; ncclSuccess for other calls. */
ncclResult_t nccl_redop_apply(nccl_call_t *call);
/* 1 when op is a built-in operation (sum, prod, max, min, avg). */
static inline int nccl_op_builtin(ncclRedOp_t op) { return (int)op >= 0 && (int)op < (int)ncclNumOps; }

/* ---- groups (nccl_group.c) ---------------------------------------------------------------------- */
int nccl_group_depth(void);
/* Queues an init (ncclCommInitRank inside a group): run at the outermost ncclGroupEnd. */
typedef struct {
    ncclComm_t *out;
    int nranks, rank;
    ncclUniqueId id;
    ncclConfig_t config;
    int has_config;
    int device;              /* the CUDA device current at the call, or -1 */
} nccl_init_call_t;
ncclResult_t nccl_group_add_init(const nccl_init_call_t *init);
ncclResult_t nccl_group_add_call(const nccl_call_t *call);
/* Runs one init (nccl_init.c). */
ncclResult_t nccl_init_run(const nccl_init_call_t *init);

/* ---- CUDA (nccl_cuda.c; stand-ins without the CUDA backend) -------------------------------- */
/* 1 when p is device (or managed) memory. */
int nccl_cuda_is_device_ptr(const void *p);
/* The calling thread's current device, or -1. */
int nccl_cuda_current_device(void);
/* Makes dev current on the calling thread (no-op for dev < 0). */
void nccl_cuda_set_device(int dev);
/* Waits for the stream's work so far (host buffers it may write); NULL stream: nothing. */
ncclResult_t nccl_cuda_stream_sync(cudaStream_t stream, const char *fn);
/* cudaMalloc / cudaFree; ncclInvalidUsage raised without CUDA. */
ncclResult_t nccl_cuda_malloc(void **ptr, size_t size);
ncclResult_t nccl_cuda_free(void *ptr);
/* Copies bytes from device memory to host memory (the PreMulSum scalar). */
ncclResult_t nccl_cuda_copy_to_host(void *dst, const void *src, size_t bytes);
/* 1 when the GPU can read p (device, managed, or registered / pinned host memory), with the
 * address the GPU reads it at in *devptr; 0 for pageable host memory. */
int nccl_cuda_device_readable(const void *p, const void **devptr);
/* A device scratch buffer of bytes in stream order (cudaMallocAsync; cudaMalloc where the
 * device has no memory pools): *kind says which (NCCL_TEMP_DEVICE_ASYNC / NCCL_TEMP_DEVICE). */
ncclResult_t nccl_cuda_scratch_alloc(void **ptr, size_t bytes, cudaStream_t stream, int *kind, const char *fn);
/* Frees such a buffer after the work enqueued on stream so far (cudaFreeAsync), or (cudaMalloc'd)
 * with cudaFree, which waits for the device. */
void nccl_cuda_scratch_free(void *ptr, cudaStream_t stream, int kind);
/* Enqueues a device-to-device copy of bytes on stream. */
ncclResult_t nccl_cuda_copy_async(void *dst, const void *src, size_t bytes, cudaStream_t stream, const char *fn);
/* Enqueues dst[i] = src[i] * scalar (i < n, Duet datatype dt) on stream (nccl_scale.cu): the
 * scalar is *scalar_dev read by the GPU when the kernel runs, or, with scalar_dev NULL, the
 * bytes of scalar_imm. */
ncclResult_t nccl_cuda_scale(duet_datatype_t dt, void *dst, const void *src, size_t n, const void *scalar_dev,
                             const unsigned char scalar_imm[8], cudaStream_t stream, const char *fn);

/* ---- environment (nccl_env.c) --------------------------------------------------------------- */
/* Logs, once, what Duet's settings could not carry over from NCCL_* (and NCCL_PROTO). */
void nccl_env_apply(void);
/* 1 when NCCL_DEBUG asks for the version line (VERSION, INFO, TRACE). */
int nccl_env_wants_version(void);

#endif

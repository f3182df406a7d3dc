/*
 * duet_nvshmem/nvshmem_state.h — where the NVSHMEM layer keeps its state (internal; include
 * <nvshmem.h>).
 *
 * NVSHMEM's calls name no communicator, so the layer keeps one:
 *   - on the host, nvshmemi_duet_host: one object per process (a C++17 inline variable, so
 *     every translation unit that includes the headers shares it; plain data, zero before
 *     nvshmem_init, so it is ready before any constructor runs);
 *   - on the device, nvshmemi_duet_d: a __constant__ copy of the kernel handles (the world's
 *     and each team's duet_device_comm_t). Without -rdc every .cu file has its own device
 *     code, so each file that includes the headers gets its own static copy, and a
 *     registration that runs when the program starts adds that copy to the host object's list;
 *     nvshmem_init and every team change write all of them (cudaMemcpyToSymbol). Nothing to
 *     define, no macro, and it works the same with -rdc (each file's copy is still its own).
 *     Files loaded later (dlopen) register when their constructors run and get the current
 *     state at once.
 */
#ifndef DUET_NVSHMEM_STATE_H
#define DUET_NVSHMEM_STATE_H

#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include <duet/duet.h>
#include <duet/duet_cuda.h>
#include "duet_nvshmem/nvshmem_types.h"

#ifndef __cplusplus
#error "the NVSHMEM headers of Duet are C++ (a .cu file, or a C++ file for host calls)"
#endif

/* What kernels see: handle t of team t (team[0] is the world; n_pes == 0: no such team). */
typedef struct {
    duet_device_comm_t team[NVSHMEM_DUET_MAX_TEAMS];
} nvshmemi_duet_dev_state_t;

typedef int (*nvshmemi_duet_upload_t)(const nvshmemi_duet_dev_state_t *);

#ifndef NVSHMEM_DUET_MAX_UNITS
#define NVSHMEM_DUET_MAX_UNITS 256 /* translation units with device code per process */
#endif
#define NVSHMEM_DUET_MAX_ALIGNED 64 /* live nvshmem_align blocks aligned beyond 256 bytes */

typedef struct {
    int status;        /* NVSHMEM_STATUS_NOT_INITIALIZED / _IS_INITIALIZED */
    int by_duet_init;  /* world came from duet_init() (nvshmem_init), else from a unique id */
    int refs;          /* nvshmem_init calls not yet finalized                             */
    duet_comm_t team[NVSHMEM_DUET_MAX_TEAMS]; /* team[0]: the world; [1], [2]: this host's
                                                * ranks (NVSHMEM_TEAM_SHARED, NVSHMEMX_TEAM_NODE:
                                                * the world on one host); NULL: free handle   */
    duet_comm_t node;  /* the host's ranks when they are not the world (destroyed at finalize) */
    nvshmemi_duet_dev_state_t dev;
    nvshmemi_duet_upload_t upload[NVSHMEM_DUET_MAX_UNITS];
    int n_upload;
    struct {
        void *user, *base;
    } aligned[NVSHMEM_DUET_MAX_ALIGNED];
    cudaStream_t coll_stream; /* the host collectives' stream (created by the first one) */
} nvshmemi_duet_host_t;

inline nvshmemi_duet_host_t nvshmemi_duet_host;

/* A host call that cannot report (it returns void) failed: NVSHMEM exits in that case too. */
[[noreturn]] static inline void nvshmemi_duet_die(const char *call, const char *why)
{
    fprintf(stderr, "nvshmem (Duet) pe %d: %s: %s\n", duet_my_pe(), call, why);
    fflush(stderr);
    abort();
}
static inline void nvshmemi_duet_check(duet_status_t st, const char *call)
{
    if (st != DUET_OK) nvshmemi_duet_die(call, duet_last_error());
}
static inline int nvshmemi_duet_status(duet_status_t st, const char *call)
{
    if (st == DUET_OK) return NVSHMEMX_SUCCESS;
    fprintf(stderr, "nvshmem (Duet): %s: %s\n", call, duet_last_error());
    switch (st) {
    case DUET_ERR_INVALID_ARG: return NVSHMEMX_ERROR_INVALID_VALUE;
    case DUET_ERR_NO_MEMORY: return NVSHMEMX_ERROR_OUT_OF_MEMORY;
    case DUET_ERR_UNSUPPORTED: return NVSHMEMX_ERROR_NOT_SUPPORTED;
    default: return NVSHMEMX_ERROR_INTERNAL;
    }
}
static inline duet_comm_t nvshmemi_duet_world(const char *call)
{
    duet_comm_t w = nvshmemi_duet_host.team[0];
    if (!w) nvshmemi_duet_die(call, "called before nvshmem_init / nvshmemx_init_attr");
    return w;
}
/* The communicator of a team handle, or NULL. */
static inline duet_comm_t nvshmemi_duet_team(nvshmem_team_t t)
{
    return t >= 0 && t < NVSHMEM_DUET_MAX_TEAMS ? nvshmemi_duet_host.team[t] : NULL;
}

/* Writes the device state into every registered translation unit's copy. */
static inline int nvshmemi_duet_upload_all(void)
{
    nvshmemi_duet_host_t *s = &nvshmemi_duet_host;
    for (int i = 0; i < s->n_upload; i++) {
        int err = s->upload[i](&s->dev);
        if (err) {
            fprintf(stderr, "nvshmem (Duet): setting the device state: %s\n",
                    cudaGetErrorString((cudaError_t)err));
            return NVSHMEMX_ERROR_INTERNAL;
        }
    }
    return NVSHMEMX_SUCCESS;
}
static inline int nvshmemi_duet_register(nvshmemi_duet_upload_t up)
{
    nvshmemi_duet_host_t *s = &nvshmemi_duet_host;
    if (s->n_upload == NVSHMEM_DUET_MAX_UNITS) {
        fprintf(stderr, "nvshmem (Duet): more than %d translation units include nvshmem.h; "
                        "define NVSHMEM_DUET_MAX_UNITS larger\n", NVSHMEM_DUET_MAX_UNITS);
        abort();
    }
    s->upload[s->n_upload++] = up;
    if (s->status == NVSHMEM_STATUS_IS_INITIALIZED && up(&s->dev))
        nvshmemi_duet_die("loading a module after nvshmem_init", "cannot set its device state");
    return 1;
}

#ifdef __CUDACC__
#include <duet/duet_device.cuh>

/* This translation unit's copy of the kernel handles, and its registration. */
static __constant__ nvshmemi_duet_dev_state_t nvshmemi_duet_d;
static int nvshmemi_duet_upload_unit(const nvshmemi_duet_dev_state_t *s)
{
    return (int)cudaMemcpyToSymbol(nvshmemi_duet_d, s, sizeof *s);
}
[[maybe_unused]] static const int nvshmemi_duet_registered = nvshmemi_duet_register(nvshmemi_duet_upload_unit);

#define NVSHMEMI_DUET_W (nvshmemi_duet_d.team[0])

/* A device call that cannot report failed (an abort of the communicator, a bad operator):
 * say so and stop the kernel. */
static __device__ __noinline__ void nvshmemi_duet_trap(const char *call, int what)
{
    printf("nvshmem (Duet) pe %d: %s failed (%d)\n", NVSHMEMI_DUET_W.my_pe, call, what);
    __trap();
}
#endif /* __CUDACC__ */

/* NVSHMEM's operators to Duet's; -1 for an unknown one. */
static __host__ __device__ __forceinline__ int nvshmemi_duet_cmp(int cmp)
{
    switch (cmp) {
    case NVSHMEM_CMP_EQ: return DUET_CMP_EQ;
    case NVSHMEM_CMP_NE: return DUET_CMP_NE;
    case NVSHMEM_CMP_GT: return DUET_CMP_GT;
    case NVSHMEM_CMP_LE: return DUET_CMP_LE;
    case NVSHMEM_CMP_LT: return DUET_CMP_LT;
    case NVSHMEM_CMP_GE: return DUET_CMP_GE;
    default: return -1;
    }
}
static __host__ __device__ __forceinline__ int nvshmemi_duet_sig_op(int op)
{
    return op == NVSHMEM_SIGNAL_SET ? DUET_SIGNAL_SET : op == NVSHMEM_SIGNAL_ADD ? DUET_SIGNAL_ADD : -1;
}

#endif /* DUET_NVSHMEM_STATE_H */

/*
 * duet_nvshmem/nvshmem_unsupported.h — NVSHMEM calls this layer declares but cannot honour
 * (internal; include <nvshmem.h>). Each one says so on stderr and returns an error (or, where
 * NVSHMEM gives no way to report, stops the program), so a port fails loudly, never silently.
 * The full list of what is missing is in docs/MIGRATING_NVSHMEM.md.
 */
#ifndef DUET_NVSHMEM_UNSUPPORTED_H
#define DUET_NVSHMEM_UNSUPPORTED_H

#include "duet_nvshmem/nvshmem_state.h"

static inline int nvshmemi_duet_unsupported(const char *call, const char *instead)
{
    fprintf(stderr, "nvshmem (Duet): %s is not supported%s%s\n", call, instead[0] ? "; " : "", instead);
    return NVSHMEMX_ERROR_NOT_SUPPORTED;
}

/* Registering memory outside the heap: Duet's one-sided calls take heap addresses only. */
static inline int nvshmemx_buffer_register(void *addr, size_t length)
{
    (void)addr, (void)length;
    return nvshmemi_duet_unsupported("nvshmemx_buffer_register", "allocate with nvshmem_malloc");
}
static inline int nvshmemx_buffer_unregister(void *addr)
{
    (void)addr;
    return nvshmemi_duet_unsupported("nvshmemx_buffer_unregister", "");
}

/* Communication contexts. */
typedef struct nvshmemi_duet_ctx *nvshmem_ctx_t;
static inline int nvshmem_ctx_create(long options, nvshmem_ctx_t *ctx)
{
    (void)options;
    if (ctx) *ctx = NULL;
    return nvshmemi_duet_unsupported("nvshmem_ctx_create", "use the default context (the plain calls)");
}
static inline int nvshmem_team_create_ctx(nvshmem_team_t team, long options, nvshmem_ctx_t *ctx)
{
    (void)team, (void)options;
    if (ctx) *ctx = NULL;
    return nvshmemi_duet_unsupported("nvshmem_team_create_ctx", "use the default context (the plain calls)");
}

/* Splits other than strided. */
static inline int nvshmem_team_split_2d(nvshmem_team_t parent, int xrange, const nvshmem_team_config_t *xconfig,
                                        long xmask, nvshmem_team_t *xteam, const nvshmem_team_config_t *yconfig,
                                        long ymask, nvshmem_team_t *yteam)
{
    (void)parent, (void)xrange, (void)xconfig, (void)xmask, (void)yconfig, (void)ymask;
    if (xteam) *xteam = NVSHMEM_TEAM_INVALID;
    if (yteam) *yteam = NVSHMEM_TEAM_INVALID;
    return nvshmemi_duet_unsupported("nvshmem_team_split_2d", "use nvshmem_team_split_strided");
}

/* The byte collectives in a file not compiled by nvcc (nvshmem_coll.h has them, and every typed
 * collective, in .cu files: their host forms launch a kernel). */
#ifndef __CUDACC__
static inline int nvshmem_alltoallmem(nvshmem_team_t team, void *dest, const void *src, size_t bytes)
{
    (void)team, (void)dest, (void)src, (void)bytes;
    return nvshmemi_duet_unsupported("nvshmem_alltoallmem", "call it from a .cu file (nvcc)");
}
static inline int nvshmem_broadcastmem(nvshmem_team_t team, void *dest, const void *src, size_t bytes, int root)
{
    (void)team, (void)dest, (void)src, (void)bytes, (void)root;
    return nvshmemi_duet_unsupported("nvshmem_broadcastmem", "call it from a .cu file (nvcc)");
}
static inline int nvshmem_fcollectmem(nvshmem_team_t team, void *dest, const void *src, size_t bytes)
{
    (void)team, (void)dest, (void)src, (void)bytes;
    return nvshmemi_duet_unsupported("nvshmem_fcollectmem", "call it from a .cu file (nvcc)");
}
#endif /* __CUDACC__ */

#endif /* DUET_NVSHMEM_UNSUPPORTED_H */

/*
 * Memory: ncclMemAlloc / ncclMemFree, buffer registration and windows.
 *
 * ncclMemAlloc gives device memory (cudaMalloc) where Duet has a GPU, else page-aligned host
 * memory, which Duet's CPU backend takes like any buffer. Registration and windows exist in
 * NCCL to pin and map buffers for its zero-copy kernels; Duet's collectives need neither (its
 * own symmetric heap is what gives single-copy transfers), so both hand back a handle that
 * records the range and are otherwise no-ops — collectives on the buffers run as on any.
 */
#include <pthread.h>
#include <stdlib.h>
#include "nccl_compat.h"

/* What a registration handle or a window points to; the live ones are on a list, so a
 * handle is checked by looking it up (a stale one is never read). */
struct ncclWindow_vidmem {
    struct ncclComm *comm;
    void *buff;
    size_t size;
    struct ncclWindow_vidmem *next;
};

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ncclWindow_vidmem *live;

NCCL_API ncclResult_t pncclMemAlloc(void **ptr, size_t size)
{
    if (!ptr) return nccl_fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
    *ptr = NULL;
    if (size == 0) return ncclSuccess;
    if (duet_cuda_available()) return nccl_cuda_malloc(ptr, size);
    if (posix_memalign(ptr, 4096, size) != 0)
        return nccl_fail(ncclSystemError, "ncclMemAlloc: out of host memory (%zu bytes)", size);
    return ncclSuccess;
}
NCCL_ALIAS(ncclMemAlloc)

NCCL_API ncclResult_t pncclMemFree(void *ptr)
{
    if (!ptr) return ncclSuccess;
    if (nccl_cuda_is_device_ptr(ptr)) return nccl_cuda_free(ptr);
    free(ptr);
    return ncclSuccess;
}
NCCL_ALIAS(ncclMemFree)

static ncclResult_t record(struct ncclComm *comm, void *buff, size_t size, struct ncclWindow_vidmem **out,
                           const char *fn)
{
    ncclResult_t r = nccl_comm_check(comm, fn);
    if (r) return r;
    if (!out) return nccl_fail(ncclInvalidArgument, "%s: the handle pointer is NULL", fn);
    if (!buff && size) return nccl_fail(ncclInvalidArgument, "%s: buff is NULL with size %zu", fn, size);
    struct ncclWindow_vidmem *w = malloc(sizeof *w);
    if (!w) return nccl_fail(ncclSystemError, "%s: out of host memory", fn);
    pthread_mutex_lock(&live_lock);
    *w = (struct ncclWindow_vidmem){comm, buff, size, live};
    live = w;
    pthread_mutex_unlock(&live_lock);
    *out = w;
    return ncclSuccess;
}

static ncclResult_t drop(struct ncclComm *comm, struct ncclWindow_vidmem *w, const char *fn)
{
    ncclResult_t r = nccl_comm_check(comm, fn);
    if (r) return r;
    pthread_mutex_lock(&live_lock);
    struct ncclWindow_vidmem **at = &live;
    while (*at && (*at != w || w->comm != comm)) at = &(*at)->next;
    int found = *at != NULL;
    if (found) *at = w->next;
    pthread_mutex_unlock(&live_lock);
    if (!found)
        return nccl_fail(ncclInvalidArgument, "%s: not a handle registered on this communicator", fn);
    free(w);
    return ncclSuccess;
}

NCCL_API ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    if (!handle) return nccl_fail(ncclInvalidArgument, "ncclCommRegister: handle is NULL");
    struct ncclWindow_vidmem *w = NULL;
    ncclResult_t r = record(comm, buff, size, &w, "ncclCommRegister");
    if (r == ncclSuccess) *handle = w;
    return r;
}
NCCL_ALIAS(ncclCommRegister)

NCCL_API ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle)
{
    return drop(comm, handle, "ncclCommDeregister");
}
NCCL_ALIAS(ncclCommDeregister)

NCCL_API ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
                                              int winFlags)
{
    if (winFlags & ~NCCL_WIN_COLL_SYMMETRIC)
        return nccl_fail(ncclInvalidArgument, "ncclCommWindowRegister: unknown flags 0x%x", (unsigned)winFlags);
    return record(comm, buff, size, win, "ncclCommWindowRegister");
}
NCCL_ALIAS(ncclCommWindowRegister)

NCCL_API ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    return drop(comm, win, "ncclCommWindowDeregister");
}
NCCL_ALIAS(ncclCommWindowDeregister)

/*
 * duet_cuda_heap.h — the GPU symmetric heap, as the CUDA backend's files see it (no CUDA
 * headers here; the generic layers reach it only through heap/duet_heap_dev.h).
 *
 * One per root communicator (the host heap's device part, h->dev), shared by its teams. Each
 * world pe owns one part; every part starts with the sync area, DUET_TEAM_SLOTS slots of
 * DUET_CUDA_SYNC_SLOT_BYTES, one per communicator sync slot (the root uses slot 0, a team the
 * slot it got at split time):
 *
 *   part of pe p:  0          64 KiB                                  part_bytes
 *                  | sync area | user heap (duet_malloc_device) ...    |
 *
 * VMM (the normal case): every part's range is reserved whole, part p at va + p * stride, and
 * backed on demand by cuMemCreate segments (the first DUET_CUDA_HEAP_FIRST bytes at once,
 * more as blocks need it: duet_cuda_heap_grow.c), each mapped by every rank of the host. Fallback (no VMM / POSIX-fd handles):
 * cudaMalloc + cudaIpc handles; parts lie anywhere (stride 0), peer[] says where.
 *
 * Without the CUDA backend in the build only duet_cuda_describe below exists
 * (src/duet_backends.c), and a heap's `dev` is always NULL.
 */
#ifndef DUET_CUDA_HEAP_H
#define DUET_CUDA_HEAP_H

#include "core/duet_comm.h"
#include "heap/duet_heap_dev.h"

#define DUET_CUDA_SYNC_BYTES      ((size_t)64 << 10)
#define DUET_CUDA_SYNC_SLOT_BYTES (DUET_CUDA_SYNC_BYTES / DUET_TEAM_SLOTS)

typedef struct duet_cuda_heap duet_cuda_heap_t;
typedef struct duet_cuda_comm duet_cuda_comm_t;

/* The GPU heap of a heap (its device part, heap/duet_heap_dev.h), or NULL. */
static inline duet_cuda_heap_t *duet_cuda_heap_of(const duet_heap_t *h)
{
    return (duet_cuda_heap_t *)h->dev;
}

#ifdef DUET_HAVE_CUDA
/* The GPU heap as the heap layer's device part: every slot of heap/duet_heap_dev.h. */
extern const duet_heap_dev_ops_t duet_cuda_heap_ops;
/* Collective over the root communicator's bootstrap: creates h->dev, or leaves it NULL (and
 * returns DUET_OK) when some rank has no GPU or DUET_CUDA=off. device >= 0: this rank's GPU;
 * DUET_HEAP_DEV_CURRENT: the thread's current one; else DUET_CUDA_DEVICE, or the local rank
 * mod the GPU count. */
duet_status_t duet_cuda_heap_create(duet_heap_t *h, duet_boot_t *b, const char *tag, int device);
/* The calling thread's current CUDA device, or -1 (no GPU, no CUDA backend). */
int duet_cuda_current_device(void);
/* Unmaps and frees everything (after the communicator's closing barrier). NULL is a no-op. */
void duet_cuda_heap_destroy(duet_cuda_heap_t *g);
/* 1 when p lies in my part's user heap (its backed bytes). */
int duet_cuda_heap_owns(const duet_cuda_heap_t *g, const void *p);
/* Collective over b (the allocating communicator's bootstrap; heap_pe: its ranks' pes, NULL
 * for the identity): takes `size` bytes (> 0) from the user heap, backing more of every
 * member's part first when the block ends past what is mapped; DUET_ERR_NO_MEMORY with a
 * message when full. */
duet_status_t duet_cuda_heap_alloc(duet_cuda_heap_t *g, duet_boot_t *b, const int *heap_pe, size_t size,
                                   void **out, const char *fn);
duet_status_t duet_cuda_heap_free(duet_cuda_heap_t *g, void *p, const char *fn);
/* Offset of an owned pointer in the part. */
size_t duet_cuda_heap_offset(const duet_cuda_heap_t *g, const void *p);
/* Where my part's `p` lies in pe's part, in my mapping (NULL: not mapped here). */
void *duet_cuda_heap_peer(const duet_cuda_heap_t *g, const void *p, int heap_pe);
/* Zeroes my sync words of `slot` (a new team's, before any member uses them). */
duet_status_t duet_cuda_heap_slot_reset(duet_cuda_heap_t *g, int slot);
/* Frees a communicator's device handle state (duet_device_comm_get). NULL is a no-op. */
void duet_cuda_comm_release(duet_cuda_comm_t *cc);
#endif

/* For duet-info: what the CUDA backend finds here, in `buf`. Returns 1 when a GPU can be
 * used, 0 when not, -1 when this build has no CUDA backend. */
int duet_cuda_describe(char *buf, size_t len);

/* Sets the abort word kernels of this communicator poll (0 clears it); a no-op when the
 * communicator has no device handle yet. The backend's abort slot (duet_cuda_mod.c: a revoke,
 * a death), and its proxy's. CUDA builds only, like the module below. */
void duet_cuda_set_abort(duet_comm_t c, duet_status_t status);

/* The backend's module of a communicator's life (core/duet_comm_mod.h, duet_cuda_mod.c). */
extern const struct duet_comm_mod duet_cuda_comm_mod;

#endif

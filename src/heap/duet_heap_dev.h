/*
 * duet_heap_dev.h — the device part of a symmetric heap: memory on a device (a GPU), given by
 * a backend from above (src/cuda) through this table. The heap layer, and everything that
 * uses it, reaches device memory only through these calls: none of them includes the backend.
 *
 * A root communicator's heap has at most one device part (h->dev, NULL when none), shared by
 * its teams like the host segments; h->dev_ops is the backend's table. Which backend there is
 * is known at link time: duet_heap_dev_builtin (src/duet_backends.c, NULL in a build without
 * one). Every slot is set: a backend implements them all.
 */
#ifndef DUET_HEAP_DEV_H
#define DUET_HEAP_DEV_H

#include <stddef.h>
#include "boot/duet_boot.h"
#include "heap/duet_heap.h"

typedef struct duet_heap_dev_ops {
    size_t size; /* sizeof(duet_heap_dev_ops_t) of the table's author */
    const char *name;
    /* Collective over `b`: sets h->dev (and h->dev_ops), or leaves it NULL and returns DUET_OK
     * when some rank has no device or the user switched it off. device >= 0: this rank's
     * device; DUET_HEAP_DEV_DEFAULT: the backend's choice; DUET_HEAP_DEV_CURRENT: the calling
     * thread's current device. `tag` names what others can list (no secret in it). */
    duet_status_t (*create)(duet_heap_t *h, duet_boot_t *b, const char *tag, int device);
    /* Unmaps and frees h->dev (after the root communicator's closing barrier). */
    void (*destroy)(duet_heap_t *h);
    /* 1 when [p, p + n) lies in my part's user heap. */
    int (*owns)(const duet_heap_t *h, const void *p, size_t n);
    /* Collective over `b`, the allocating communicator's bootstrap (every live pe of the heap;
     * heap_pe[r]: rank r's pe, NULL for the identity): takes `size` bytes (> 0) of my part's
     * user heap, backing more memory on every member first if the block needs it
     * (DUET_ERR_NO_MEMORY with a message when full). `free` gives a block back, locally (an
     * error when p is not a live block). */
    duet_status_t (*alloc)(duet_heap_t *h, duet_boot_t *b, const int *heap_pe, size_t size, void **out,
                           const char *fn);
    duet_status_t (*free)(duet_heap_t *h, void *p, const char *fn);
    /* The offset of an owned pointer in my part. */
    size_t (*offset)(const duet_heap_t *h, const void *p);
    /* Where my part's `p` lies in heap pe's part, in my mapping (NULL: not mapped here). */
    void *(*peer)(const duet_heap_t *h, const void *p, int heap_pe);
    /* Zeroes my sync words of team slot `slot` (a new team's, before any member uses them). */
    duet_status_t (*slot_reset)(duet_heap_t *h, int slot);
    /* Whether a device can be used by this process (for messages). */
    int (*available)(void);
} duet_heap_dev_ops_t;

#define DUET_HEAP_DEV_DEFAULT (-1)
#define DUET_HEAP_DEV_CURRENT (-2)

/* The device backend linked in, or NULL (src/duet_backends.c). */
extern const duet_heap_dev_ops_t *const duet_heap_dev_builtin;

/* Collective over `b`, after duet_heap_create: the device part of root heap h, made by the
 * linked backend (ops->create), or none (DUET_OK, h->dev NULL) in a build without one. */
duet_status_t duet_heap_dev_create(duet_heap_t *h, duet_boot_t *b, const char *tag, int device);
/* Frees h's device part (after the closing barrier); none is a no-op. */
void duet_heap_dev_destroy(duet_heap_t *h);

/* 1 when [p, p + n) lies in my part of h's device heap (0 without one). */
static inline int duet_heap_dev_owns(const duet_heap_t *h, const void *p, size_t n)
{
    return h->dev && h->dev_ops->owns(h, p, n);
}

/* Zeroes my words of team slot `slot`, host and device (before any member of the new team
 * uses them; the caller then meets the members in a barrier). */
duet_status_t duet_heap_slot_reset(duet_heap_t *h, int slot);

#endif

/*
 * duet_heap.h — the symmetric heap: one shared-memory segment per rank, every peer's
 * segment mapped into every process.
 *
 * Segment layout (the same on every rank, so an offset names the same object everywhere):
 *
 *   0          4 KiB                                             1 MiB                  user_end        seg_size
 *   | control   | team sync slots: 64 teams x 32 rounds | FT areas | user heap            | collective   |
 *   | (doorbell)| x 64 B flags                          | 64 x 4K  | (duet_malloc)        | zone         |
 *
 * The user heap is symmetric (one deterministic allocator, same offsets everywhere). The
 * collective zone is private: each rank carves its communicators' channels from it with a
 * local allocator and tells the peers the offsets.
 *
 * The heap belongs to a root communicator (duet_init / duet_comm_init_rank) and is shared
 * by the teams split from it; its ranks ("heap pes") are the root communicator's ranks.
 */
#ifndef DUET_HEAP_H
#define DUET_HEAP_H

#include <pthread.h>
#include <stdint.h>
#include "boot/duet_boot.h"
#include "heap/duet_heap_alloc.h"
#include "tport/duet_tport.h"

#define DUET_TEAM_SLOTS   64
#define DUET_SYNC_ROUNDS  32
#define DUET_HEAP_CTRL_BYTES 4096
#define DUET_HEAP_USER_OFFSET (1u << 20)

typedef struct {
    duet_doorbell_t doorbell;
    char pad[DUET_CACHELINE - sizeof(duet_doorbell_t)];
    _Atomic uint32_t opened; /* set-up: processes that have mapped this segment (duet_heap_shm.c) */
    char pad1[DUET_CACHELINE - sizeof(uint32_t)];
} duet_heap_ctrl_t;
_Static_assert(sizeof(duet_heap_ctrl_t) <= DUET_HEAP_CTRL_BYTES, "the control area overflows");

/* One flag per cache line: written by one peer, read by its owner. */
typedef struct {
    _Atomic uint64_t value;
    char pad[DUET_CACHELINE - sizeof(uint64_t)];
} duet_sync_flag_t;

typedef struct {
    duet_sync_flag_t round[DUET_SYNC_ROUNDS];
} duet_team_slot_t;

/* A communicator's fault-tolerance words, one area per team slot in every member's segment
 * (src/core/duet_ft.c, duet_comm_ft.c). A dead rank's segment stays mapped in the survivors,
 * so its words can still be read (and the consensus in rank 0's segment still used). */
#define DUET_FT_MAX_RANKS 4096
#define DUET_FT_AREA_BYTES 4096
typedef struct {
    _Atomic int32_t abort;      /* 0, or the status every wait on the communicator returns
                                 * here (my failure detector, or a peer's revoke)          */
    _Atomic int32_t revoked_by; /* the revoking rank (of the communicator) + 1               */
    char pad0[DUET_CACHELINE - 8];
    /* consensus on one host (used in the segment of the communicator's rank 0) */
    _Atomic uint64_t claim;     /* (seq << 16) | (rank + 1): who decides seq                 */
    _Atomic uint64_t decided;   /* the last seq decided                                      */
    char pad1[DUET_CACHELINE - 16];
    uint64_t failed[2][DUET_FT_MAX_RANKS / 64]; /* the decided failed set, by seq parity      */
    /* my own posts (in my segment) */
    _Atomic uint64_t posted;    /* the last seq whose flag I posted                           */
    uint64_t flag[2];           /* agree: my flag, by the parity of the call (seq >> 8)       */
    _Atomic uint64_t id_ready;  /* shrink, as the new rank 0: the seq whose id is in new_id   */
    char new_id[2][128];        /* shrink: the new root's address (no secret), by parity      */
    /* consensus across hosts (duet_comm_ft_net.c): my estimate, published in my segment when
     * my turn as coordinator comes; the others read it (a get where it is not mapped) */
    _Atomic uint64_t est_seq;   /* the last seq whose estimate I published                    */
    uint64_t est_flag[2];       /* its flag, by the parity of the call                        */
    uint64_t est_failed[2][DUET_FT_MAX_RANKS / 64]; /* its failed set, by the parity of the call */
} duet_ft_area_t;

#define DUET_HEAP_FT_OFFSET (DUET_HEAP_CTRL_BYTES + DUET_TEAM_SLOTS * sizeof(duet_team_slot_t))

_Static_assert(sizeof(duet_ft_area_t) <= DUET_FT_AREA_BYTES, "a fault-tolerance area overflows");
_Static_assert(DUET_HEAP_FT_OFFSET + DUET_TEAM_SLOTS * DUET_FT_AREA_BYTES <= DUET_HEAP_USER_OFFSET,
               "internal heap area overflows");

typedef struct duet_heap {
    int refcount;         /* the root communicator and its teams */
    int my_pe, npes;
    size_t seg_size;      /* bytes per rank, internal area and zone included */
    size_t user_end;      /* end of the user heap = start of the collective zone */
    char *local_base;     /* my segment */
    char **peer_base;     /* every pe's segment as mapped here (peer_base[my_pe] == local_base);
                           * NULL for a pe reached by the net transport: go through eps[pe] */
    duet_tport_ep_t *eps; /* an endpoint per pe */
    duet_alloc_t *alloc;  /* segment offsets; [0, DUET_HEAP_USER_OFFSET) is taken for good */
    duet_alloc_t *zone;   /* offsets inside the collective zone (add user_end) */
    pthread_mutex_t lock; /* malloc / free / team slots */
    uint64_t slots_used;  /* team sync slots in use by teams this rank belongs to */
    void *dev;            /* the device part beside it, or NULL (duet_heap_dev.h: a backend's) */
    const struct duet_heap_dev_ops *dev_ops; /* its backend's table, when dev is set */
    duet_tport_ep_t *dev_eps; /* with dev: an endpoint per pe into its part of the device
                               * heap, bound to the backend's transport; else NULL */
    struct duet_net *net; /* the UCP context, worker, registration (duet_tport_net.c), or NULL */
    int net_pes;          /* how many pes eps[] reaches by the net transport */
    _Atomic int deaths;   /* heap pes seen dead (src/core/duet_ft.c): one-sided calls look at
                           * their target's fate only once this is non-zero */
} duet_heap_t;

/* Creates my segment, maps every shm peer's (shm[pe] != 0; NULL: every pe), names mine only
 * while peers must open it (the last to open it unlinks it), and binds each endpoint: shm
 * for mapped peers, net (UCP, only with DUET_HAVE_UCX) for the others. Collective over the
 * bootstrap `b`; `tag` names the segments (keyed hashes: no secret in it). */
duet_status_t duet_heap_create(duet_heap_t **heap, duet_boot_t *b, size_t user_size, const char *tag,
                               const unsigned char *shm);
void duet_heap_release(duet_heap_t *heap); /* drops a reference; the last unmaps */
/* Stale names (duet_heap_reclaim.c): removes from `dir` (/dev/shm) every segment name
 * (duet_heap_is_segment_name) of this user whose creator is gone, as the creator's lock
 * proves: held from before the name exists until after it is unlinked, and dropped by the
 * kernel when the process dies. Names of live jobs, of other users, empty names (one being
 * made without O_TMPFILE) and anything else stay. Returns how many it removed.
 * duet_heap_reclaim_once does it for /dev/shm once per process (duet_heap_create calls it). */
int duet_heap_reclaim(const char *dir);
void duet_heap_reclaim_once(void);
/* 1 for "duet-<24 hex>-<12 hex>-<pe>", the form of segment names (no leading slash). */
int duet_heap_is_segment_name(const char *name);
/* Every segment is mapped at a multiple of this (a power of two >= 2 MiB). */
size_t duet_heap_base_align(size_t seg_size);

static inline duet_heap_ctrl_t *duet_heap_ctrl(char *base) { return (duet_heap_ctrl_t *)(void *)base; }
static inline duet_team_slot_t *duet_heap_slot(char *base, int slot)
{
    return (duet_team_slot_t *)(void *)(base + DUET_HEAP_CTRL_BYTES) + slot;
}
static inline duet_ft_area_t *duet_heap_ft(char *base, int slot)
{
    return (duet_ft_area_t *)(void *)(base + DUET_HEAP_FT_OFFSET + (size_t)slot * DUET_FT_AREA_BYTES);
}
static inline size_t duet_heap_user_size(const duet_heap_t *h) { return h->seg_size - DUET_HEAP_USER_OFFSET; }

#endif

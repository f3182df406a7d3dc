/*
 * shmem_mem.c — the symmetric heap: shmem_malloc / calloc / align / realloc / free /
 * malloc_with_hints, and the address queries shmem_ptr / shmem_addr_accessible.
 *
 * Allocation is Duet's (duet_malloc on the world communicator: collective, deterministic, a
 * barrier at the end). Duet has no realloc, so this file remembers each block's size (a small
 * open-addressed table, under a mutex) and shmem_realloc is malloc + local copy + free, which
 * every PE does alike, so the result is symmetric too.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_internal.h"

typedef struct {
    void *ptr;
    size_t size;
} block_t;

static pthread_mutex_t lock_ = PTHREAD_MUTEX_INITIALIZER;
static block_t *table_;          /* open addressing, linear probing; ptr NULL = empty */
static size_t cap_, used_;
#define TOMBSTONE ((void *)1)

static size_t slot_of(const void *p, size_t cap) { return ((uintptr_t)p >> 6) * 0x9E3779B97F4A7C15ull & (cap - 1); }

static void remember(void *p, size_t size)
{
    pthread_mutex_lock(&lock_);
    if ((used_ + 1) * 2 > cap_) { /* grow (tombstones are dropped) */
        size_t ncap = cap_ ? cap_ * 2 : 64;
        block_t *nt = calloc(ncap, sizeof *nt);
        if (!nt) shm_die("shmem_malloc", "out of host memory");
        used_ = 0;
        for (size_t i = 0; i < cap_; i++)
            if (table_[i].ptr && table_[i].ptr != TOMBSTONE) {
                size_t j = slot_of(table_[i].ptr, ncap);
                while (nt[j].ptr) j = (j + 1) & (ncap - 1);
                nt[j] = table_[i];
                used_++;
            }
        free(table_);
        table_ = nt, cap_ = ncap;
    }
    size_t j = slot_of(p, cap_);
    while (table_[j].ptr && table_[j].ptr != TOMBSTONE) j = (j + 1) & (cap_ - 1);
    table_[j].ptr = p, table_[j].size = size;
    used_++;
    pthread_mutex_unlock(&lock_);
}

/* The size of block p (forgetting it when `forget`), or 0 if unknown. */
static size_t recall(void *p, int forget)
{
    size_t size = 0;
    pthread_mutex_lock(&lock_);
    for (size_t j = cap_ ? slot_of(p, cap_) : 0, n = 0; cap_ && table_[j].ptr && n < cap_;
         j = (j + 1) & (cap_ - 1), n++)
        if (table_[j].ptr == p) {
            size = table_[j].size;
            if (forget) table_[j].ptr = TOMBSTONE;
            break;
        }
    pthread_mutex_unlock(&lock_);
    return size;
}

void shm_mem_forget_all(void)
{
    pthread_mutex_lock(&lock_);
    free(table_);
    table_ = NULL, cap_ = used_ = 0;
    pthread_mutex_unlock(&lock_);
}

/* A NULL from Duet with a status is an error the caller sees as NULL (as the spec says); a
 * NULL without one is the size 0 case. */
static void *track(void *p, size_t size)
{
    if (p) remember(p, size);
    return p;
}

void *shmem_malloc(size_t size)
{
    shm_require_init("shmem_malloc");
    return track(duet_malloc(shm_g.world, size), size);
}

void *shmem_malloc_with_hints(size_t size, long hints)
{
    (void)hints; /* every block of Duet's heap serves atomics and signals alike */
    return shmem_malloc(size);
}

void *shmem_calloc(size_t count, size_t size)
{
    shm_require_init("shmem_calloc");
    if (count == 0 || size == 0) return NULL;
    return track(duet_calloc(shm_g.world, count, size), count * size);
}

void *shmem_align(size_t alignment, size_t size)
{
    shm_require_init("shmem_align");
    if (size == 0 || alignment == 0 || (alignment & (alignment - 1))) return NULL;
    return track(duet_align(shm_g.world, alignment, size), size);
}

void shmem_free(void *ptr)
{
    shm_require_init("shmem_free");
    if (ptr) recall(ptr, 1);
    shm_check(duet_free(shm_g.world, ptr), "shmem_free"); /* NULL still synchronizes */
}

void *shmem_realloc(void *ptr, size_t size)
{
    shm_require_init("shmem_realloc");
    if (!ptr) return shmem_malloc(size);
    if (size == 0) {
        shmem_free(ptr);
        return NULL;
    }
    size_t old = recall(ptr, 0);
    if (old == 0) shm_die("shmem_realloc", "%p is not a block of the symmetric heap", ptr);
    void *p = shmem_malloc(size);
    if (!p) return NULL; /* the old block stays valid, as with realloc(3) */
    memcpy(p, ptr, old < size ? old : size);
    shmem_free(ptr);
    return p;
}

void *shmem_ptr(const void *dest, int pe)
{
    shm_require_init("shmem_ptr");
    if (pe < 0 || pe >= shm_g.npes) return NULL;
    int range;
    size_t off;
    int found = shm_static_lookup(dest, 1, &range, &off);
    if (found) {
        char *base = found > 0 ? shm_static_base(range, pe) : NULL; /* NULL: another host */
        return base ? base + off : NULL;
    }
    return duet_ptr(shm_g.world, dest, pe);
}

void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)
{
    shm_require_init("shmem_team_ptr");
    if (!shm_team_valid(team) || pe < 0 || pe >= team->n_pes) return NULL;
    return shmem_ptr(dest, team->world_pe ? team->world_pe[pe] : pe);
}

int shmem_addr_accessible(const void *addr, int pe)
{
    shm_require_init("shmem_addr_accessible");
    if (pe < 0 || pe >= shm_g.npes) return 0;
    int range;
    size_t off;
    int found = shm_static_lookup(addr, 1, &range, &off);
    if (found) return found > 0 && shm_static_base(range, pe) != NULL; /* not from another host */
    return duet_addr_accessible(shm_g.world, addr, pe);
}

/*
 * shmem_lock.c — distributed locks: shmem_set_lock, shmem_clear_lock, shmem_test_lock.
 *
 * A lock is a symmetric long (heap or static data), 0 before first use. Only PE 0's copy is
 * used, as a ticket lock:
 *
 *      63            32 31             0
 *     |  next ticket   |  now serving   |      free when the two halves are equal
 *
 * set: take a ticket (fetch-add 1 << 32), poll until "now serving" reaches it. clear: quiet
 * (what was done under the lock is complete), then advance "now serving" by one with a
 * compare-and-swap, so it never carries into the ticket half. test: take the next ticket only
 * if the lock is free (compare-and-swap). Tickets make it fair and correct for any mix of PEs
 * and threads: each thread holds its own ticket.
 */
#include "shmem_internal.h"

#define SERVING 0xffffffffUL
#define TICKET (1UL << 32)

void shmem_set_lock(long *lock)
{
    shm_require_init("shmem_set_lock");
    unsigned long *l = (unsigned long *)lock;
    unsigned long mine = (shmem_ulong_atomic_fetch_add(l, TICKET, 0) >> 32) & SERVING;
    duet_ext_waiter_t w;
    shm_poll_t p = {.fn = "shmem_set_lock", .addr = lock, .kind = SHM_WAIT_LOCK, .value = mine, .w = &w};
    while ((shmem_ulong_atomic_fetch(l, 0) & SERVING) != mine) shm_poll_turn(&p);
}

void shmem_clear_lock(long *lock)
{
    shm_require_init("shmem_clear_lock");
    unsigned long *l = (unsigned long *)lock;
    shmem_quiet();
    unsigned long old = shmem_ulong_atomic_fetch(l, 0), seen;
    for (;;) {
        unsigned long next = (old & ~SERVING) | ((old + 1) & SERVING);
        if ((seen = shmem_ulong_atomic_compare_swap(l, old, next, 0)) == old) return;
        old = seen;
    }
}

int shmem_test_lock(long *lock)
{
    shm_require_init("shmem_test_lock");
    unsigned long *l = (unsigned long *)lock;
    unsigned long old = shmem_ulong_atomic_fetch(l, 0);
    if (((old >> 32) & SERVING) != (old & SERVING)) return 1; /* held */
    return shmem_ulong_atomic_compare_swap(l, old, old + TICKET, 0) == old ? 0 : 1;
}

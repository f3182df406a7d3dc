/*
 * duet_comm_live.c — the process's table of live communicator handles.
 *
 * A handle used after duet_comm_destroy / duet_finalize points at freed memory: reading its
 * magic word to find out is itself a use after free. So every call looks the handle up here,
 * by its address only, before it touches the object (duet_comm_check, duet_comm.h).
 *
 * The table: open addressing over a fixed array of pointers, linear probing from a hash of
 * the address. Lookups take no lock (acquire loads; they compare addresses and never follow
 * one); insertions and removals hold a mutex. A removed entry becomes a tombstone, which keeps
 * the probe chains of the others intact and is reused by the next insertion on its chain;
 * one at the end of its chain (an empty slot next) becomes empty instead, and so do the
 * tombstones just before it: no live entry lies beyond them, so no chain needs them, and a
 * lookup of a stale handle stops there rather than probing a table worn to tombstones.
 *
 *   slot:  0     1      2      3     ...   4095
 *          NULL  c7     TOMB   c2          NULL      lookup(c2): hash -> 1, 2, 3: found
 *
 * What it cannot catch: a handle whose address the C library has given to a newer
 * communicator (that handle then names the newer one).
 */
#include <pthread.h>
#include "core/duet_comm.h"

_Atomic(struct duet_comm *) duet_comm_live_[DUET_COMM_LIVE_SLOTS];
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

duet_status_t duet_comm_live_add(duet_comm_t c)
{
    pthread_mutex_lock(&live_lock);
    size_t i = duet_comm_live_hash(c);
    for (size_t n = 0; n < DUET_COMM_LIVE_SLOTS; n++, i = (i + 1) & (DUET_COMM_LIVE_SLOTS - 1)) {
        duet_comm_t e = atomic_load_explicit(&duet_comm_live_[i], memory_order_relaxed);
        if (e == NULL || e == DUET_COMM_LIVE_TOMB) {
            atomic_store_explicit(&duet_comm_live_[i], c, memory_order_release);
            pthread_mutex_unlock(&live_lock);
            return DUET_OK;
        }
    }
    pthread_mutex_unlock(&live_lock);
    return DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "%d communicators are alive in this process, the most there "
                     "can be; destroy some first", DUET_COMM_LIVE_SLOTS);
}

void duet_comm_live_remove(duet_comm_t c)
{
    pthread_mutex_lock(&live_lock);
    size_t i = duet_comm_live_hash(c);
    for (size_t n = 0; n < DUET_COMM_LIVE_SLOTS; n++, i = (i + 1) & (DUET_COMM_LIVE_SLOTS - 1)) {
        duet_comm_t e = atomic_load_explicit(&duet_comm_live_[i], memory_order_relaxed);
        if (e == NULL) break;
        if (e != c) continue;
        const size_t mask = DUET_COMM_LIVE_SLOTS - 1;
        if (atomic_load_explicit(&duet_comm_live_[(i + 1) & mask], memory_order_relaxed) != NULL) {
            atomic_store_explicit(&duet_comm_live_[i], DUET_COMM_LIVE_TOMB, memory_order_release);
            break;
        }
        for (size_t k = 0; k < DUET_COMM_LIVE_SLOTS; k++, i = (i - 1) & mask) { /* the chain's end */
            atomic_store_explicit(&duet_comm_live_[i], NULL, memory_order_release);
            if (atomic_load_explicit(&duet_comm_live_[(i - 1) & mask], memory_order_relaxed) != DUET_COMM_LIVE_TOMB)
                break;
        }
        break;
    }
    pthread_mutex_unlock(&live_lock);
}

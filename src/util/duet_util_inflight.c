/*
 * duet_util_inflight.c — calls in flight on an object, so that another thread may take the
 * object down while a call is running on it (duet_util.h: duet_inflight_*).
 *
 * Every thread that makes a call has a record of its own: a short stack of the objects it is
 * inside a call on (calls nest: a collective may make a barrier on its communicator). Records
 * live in one list that only grows; a thread that ends gives its record back for the next
 * thread to take (so the list holds at most as many records as threads ever ran at once), and
 * no record is ever freed, so a scan may read any of them at any time.
 *
 * Entering costs two stores to the thread's own record and, where the kernel offers
 * membarrier(2), no fence: the thread that takes an object down pays instead. Its order is
 * that of an asymmetric Dekker exchange:
 *
 *   caller (enter)                         closer (duet_inflight_drain)
 *   obj[n] = o; n = n + 1                  the object's own closing word = 1 (its owner's)
 *   (compiler barrier)                     membarrier: a full fence on every running thread
 *   reads the closing word                 scans every record for o
 *
 * Either the closer's scan sees the entry, or the caller sees the closing word and leaves at
 * once. Without membarrier the caller makes a full fence instead (about 10 ns).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "duet_util.h"

#if defined(__linux__) && defined(SYS_membarrier)
#include <linux/membarrier.h>
#endif

_Thread_local duet_inflight_rec_t *duet_inflight_mine_;
int duet_inflight_fence_;           /* 1: callers fence themselves (no membarrier) */

static duet_inflight_rec_t *_Atomic records;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;

static void give_back(void *rec)
{
    duet_inflight_rec_t *r = rec;
    atomic_store_explicit(&r->n, 0, memory_order_release);
    r->over = 0;
    atomic_store_explicit(&r->taken, 0, memory_order_release);
}

static int membarrier_(int cmd)
{
#if defined(__linux__) && defined(SYS_membarrier)
    return (int)syscall(SYS_membarrier, cmd, 0, 0);
#else
    (void)cmd;
    errno = ENOSYS;
    return -1;
#endif
}

static void init_once(void)
{
    (void)pthread_key_create(&key, give_back);
#if defined(__linux__) && defined(SYS_membarrier) /* (the commands are enum values, not macros) */
    duet_inflight_fence_ = membarrier_(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0;
#else
    duet_inflight_fence_ = 1;
#endif
}

duet_inflight_rec_t *duet_inflight_rec_(void)
{
    (void)pthread_once(&once, init_once);
    duet_inflight_rec_t *r;
    for (r = atomic_load_explicit(&records, memory_order_acquire); r; r = r->next) {
        int free_ = 0;
        if (atomic_compare_exchange_strong(&r->taken, &free_, 1)) break;
    }
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r) return NULL; /* the caller goes on uncounted */
        atomic_store_explicit(&r->taken, 1, memory_order_relaxed);
        r->next = atomic_load_explicit(&records, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&records, &r->next, r, memory_order_release,
                                                      memory_order_relaxed)) {
        }
    }
    (void)pthread_setspecific(key, r); /* given back when the thread ends */
    duet_inflight_mine_ = r;
    return r;
}

/* A full fence on every thread of the process that is running (membarrier), or on mine. */
static void fence_all(void)
{
#if defined(__linux__) && defined(SYS_membarrier) /* (the commands are enum values, not macros) */
    if (!duet_inflight_fence_ && membarrier_(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
#endif
    atomic_thread_fence(memory_order_seq_cst);
}

int duet_inflight_count(const void *obj)
{
    (void)pthread_once(&once, init_once);
    fence_all();
    int count = 0;
    for (duet_inflight_rec_t *r = atomic_load_explicit(&records, memory_order_acquire); r; r = r->next) {
        if (r == duet_inflight_mine_) continue; /* the closer's own calls are its business */
        int n = atomic_load_explicit(&r->n, memory_order_acquire);
        for (int i = 0; i < n && i < DUET_INFLIGHT_DEPTH; i++)
            count += atomic_load_explicit(&r->obj[i], memory_order_relaxed) == obj;
    }
    return count;
}

duet_status_t duet_inflight_drain(const void *obj, double timeout_s, int *left)
{
    uint64_t start = duet_time_ns();
    int n;
    while ((n = duet_inflight_count(obj)) > 0) {
        if ((double)(duet_time_ns() - start) >= timeout_s * 1e9) break; /* (0: one look) */
        struct timespec ts = {0, 1000000}; /* 1 ms: a call that was told to stop takes about that */
        nanosleep(&ts, NULL);
    }
    if (left) *left = n;
    return n ? DUET_ERR_TIMEOUT : DUET_OK;
}

/*
 * shmem_scratch.c — private working memory of the collectives that need some (the *_to_all
 * reductions, the fallback team reductions, alltoalls): per thread, a few slots that only
 * grow, so a call of a size seen before allocates nothing. Freed at the thread's exit, and
 * the calling thread's at shmem_finalize. Per thread, since collectives on different teams
 * or active sets may run at once in different threads (SHMEM_THREAD_MULTIPLE): one shared
 * buffer would need a lock held across a collective's waits, and two PEs each holding it for
 * a different set would wait for each other.
 */
#include <pthread.h>
#include <stdlib.h>

#include "shmem_internal.h"

typedef struct {
    void *p[SHM_SCRATCH_SLOTS];
    size_t bytes[SHM_SCRATCH_SLOTS];
} scratch_t;

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int key_made;

static void release(void *v)
{
    scratch_t *s = v;
    if (!s) return;
    for (int i = 0; i < SHM_SCRATCH_SLOTS; i++) free(s->p[i]);
    free(s);
}

static void make_key(void) { key_made = pthread_key_create(&key, release) == 0; }

void *shm_scratch(int slot, size_t bytes, const char *fn)
{
    pthread_once(&once, make_key);
    if (!key_made) shm_die(fn, "cannot make the thread's scratch key");
    scratch_t *s = pthread_getspecific(key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(key, s) != 0) shm_die(fn, "out of host memory");
    }
    if (s->bytes[slot] < bytes) {
        free(s->p[slot]);
        s->p[slot] = NULL, s->bytes[slot] = 0;
        void *p = malloc(bytes ? bytes : 1);
        if (!p) shm_die(fn, "out of host memory (%zu bytes of scratch)", bytes);
        s->p[slot] = p, s->bytes[slot] = bytes;
    }
    return s->p[slot];
}

void shm_scratch_release(void)
{
    if (!key_made) return;
    release(pthread_getspecific(key));
    pthread_setspecific(key, NULL);
}

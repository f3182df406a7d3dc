/*
 * Symmetric heap segments in POSIX shared memory.
 *
 * Life of a segment, whose name /duet-<tag>-<pe> (the tag a keyed hash: duet_comm_init.c)
 * lives only while peers still have to open it:
 *
 *   rank r: open an unnamed file in /dev/shm (O_TMPFILE), flock it (shared), size it, map
 *           it, count itself in its `opened` word; then, if a peer must map it, link the
 *           name: it appears locked and complete, never half made
 *   allgather: whether everyone created one
 *   every rank maps every shm peer's segment and counts itself in that segment's `opened`:
 *           the one that brings the count to the number of ranks that map it unlinks the
 *           name (nobody needs it any more), without waiting for a barrier
 *   barrier; each rank unlinks its own name if it is still there (a peer that failed) and
 *           only then closes the locked descriptor
 *
 * From then on nothing is left in /dev/shm: the memory lives as long as some process maps
 * it. Peers that cannot map it (another host, DUET_NET=force) reach it through the net
 * transport (duet_tport_net.c: registered with UCP). A name left by a process killed inside
 * that window is unlocked as soon as the process is gone: duetrun removes its job's names
 * when the job ends, and the next job of the user removes the names of dead jobs at its
 * start (duet_heap_reclaim.c). Without O_TMPFILE (an old kernel, a /dev/shm that is not
 * tmpfs) the name is made by shm_open and locked before it is sized; a reaper leaves an
 * empty name alone until it is seconds old, so it never removes one being made.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "heap/duet_heap.h"
#include "tport/duet_tport_net.h"

static void seg_name(char *out, size_t len, const char *tag, int pe)
{
    snprintf(out, len, "/duet-%s-%d", tag, pe);
}

/* Maps `fd` at an address aligned to `align` (a power of two): reserve align extra bytes
 * of address space, place the mapping on the aligned point inside, return the slack. With
 * the segment base aligned, an aligned offset is an aligned address on every rank. */
static void *map_aligned(int fd, size_t size, size_t align)
{
    char *r = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) return MAP_FAILED;
    char *base = (char *)(((uintptr_t)r + align - 1) & ~(uintptr_t)(align - 1));
    void *p = mmap(base, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        munmap(r, size + align);
        return MAP_FAILED;
    }
    if (base > r) munmap(r, (size_t)(base - r));
    size_t tail = (size_t)((r + size + align) - (base + size));
    if (tail) munmap(base + size, tail);
    return base;
}

/* The alignment of every segment base: enough for any block the heap can hold (up to
 * 1 GiB), and at least 2 MiB (huge pages, GPU mapping granularity). */
size_t duet_heap_base_align(size_t seg_size)
{
    size_t a = 2u << 20;
    while (a < seg_size && a < (1u << 30)) a <<= 1;
    return a;
}

/* Maps a peer's segment by name and counts me among those that opened it; whoever counts
 * the last of `mappers` unlinks the name. */
static duet_status_t open_peer(const char *name, size_t size, int mappers, char **base)
{
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return DUET_FAIL(DUET_ERR_SYSTEM, HEAP, "heap: shm_open(%s): %s", name, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != size) {
        close(fd);
        return DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "heap: peer segment %s has %lld bytes, expected %zu", name,
                         (long long)st.st_size, size);
    }
    void *p = map_aligned(fd, size, duet_heap_base_align(size));
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "heap: mmap of %s (%zu bytes): %s", name, size, strerror(e));
    *base = p;
    if (atomic_fetch_add_explicit(&duet_heap_ctrl(p)->opened, 1, memory_order_acq_rel) + 1 == (uint32_t)mappers)
        shm_unlink(name);
    return DUET_OK;
}

/* A locked, sized segment without a name (O_TMPFILE), else one named by shm_open (*named;
 * DUET_TEST_SHM_NAMED=1 takes this way, for its tests). */
static int create_locked(const char *name, size_t size, int *named)
{
    int fd = duet_cfg()->test_shm_named ? -1 : open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    *named = fd < 0;
    if (fd < 0) fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_SH) != 0 || ftruncate(fd, (off_t)size) != 0) {
        int e = errno;
        if (*named) shm_unlink(name);
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Creates and maps my segment; it is named (*named) only if other ranks must open it
 * (mappers > 1). *lock_fd holds the lock until the caller has unlinked the name. */
static duet_status_t create_segment(const char *name, size_t size, int mappers, int *lock_fd, int *named,
                                    char **base)
{
    int fd = create_locked(name, size, named);
    if (fd < 0)
        return DUET_FAIL(errno == ENOSPC || errno == EFBIG ? DUET_ERR_NO_MEMORY : DUET_ERR_SYSTEM, HEAP,
                         "heap: cannot create a segment of %zu bytes for %s in /dev/shm: %s", size, name,
                         strerror(errno));
    duet_status_t st = DUET_OK;
    void *p = map_aligned(fd, size, duet_heap_base_align(size));
    if (p == MAP_FAILED) {
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "heap: mmap of %s (%zu bytes): %s", name, size, strerror(errno));
    } else {
        atomic_store_explicit(&duet_heap_ctrl(p)->opened, 1, memory_order_release); /* me */
        if (!*named && mappers > 1) {
            char proc[64], path[160];
            snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
            snprintf(path, sizeof path, "/dev/shm%s", name);
            if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0) *named = 1;
            else st = DUET_FAIL(DUET_ERR_SYSTEM, HEAP, "heap: cannot name my segment %s: %s", path, strerror(errno));
        }
        if (st != DUET_OK) munmap(p, size);
    }
    if (*named && (st != DUET_OK || mappers <= 1)) {
        shm_unlink(name);
        *named = 0;
    }
    if (st != DUET_OK) {
        close(fd);
        return st;
    }
    *lock_fd = fd;
    *base = p;
    return DUET_OK;
}

static void heap_free(duet_heap_t *h)
{
    duet_tport_net_destroy(h->net, h->eps, h->npes); /* before the unmaps: UCX registered mine */
    h->net = NULL;
    if (h->peer_base)
        for (int pe = 0; pe < h->npes; pe++)
            if (h->peer_base[pe]) munmap(h->peer_base[pe], h->seg_size);
    if (h->alloc) duet_alloc_destroy(h->alloc);
    if (h->zone) duet_alloc_destroy(h->zone);
    pthread_mutex_destroy(&h->lock);
    free(h->peer_base);
    free(h->eps);
    free(h);
}

duet_status_t duet_heap_create(duet_heap_t **out, duet_boot_t *b, size_t user_size, const char *tag,
                               const unsigned char *shm)
{
    const size_t page = 2u << 20; /* round to 2 MiB: huge-page friendly, and GPU granularity */
    if (user_size > SIZE_MAX / 2)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "heap: symmetric size %zu is too large", user_size);
    size_t user_end = (DUET_HEAP_USER_OFFSET + user_size + page - 1) / page * page;
    size_t zone_size = (duet_cfg()->coll_zone_size + page - 1) / page * page;
    size_t seg_size = user_end + zone_size;
    duet_heap_t *h = calloc(1, sizeof *h);
    if (!h) return DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "heap: out of host memory");
    pthread_mutex_init(&h->lock, NULL);
    h->refcount = 1;
    h->my_pe = b->rank;
    h->npes = b->nranks;
    h->seg_size = seg_size;
    h->user_end = user_end;
    h->peer_base = calloc((size_t)h->npes, sizeof *h->peer_base);
    h->eps = calloc((size_t)h->npes, sizeof *h->eps);
    /* the allocator hands out segment offsets; the internal area is its first block, for good */
    h->alloc = duet_alloc_create(user_end);
    h->zone = duet_alloc_create(zone_size);
    size_t internal_off = 1;
    if (!h->peer_base || !h->eps || !h->alloc || !h->zone ||
        duet_alloc_take(h->alloc, DUET_HEAP_USER_OFFSET, 64, &internal_off) || internal_off != 0) {
        heap_free(h);
        return DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "heap: out of host memory");
    }
    /* how many processes map each segment: the shm peers' set is the same from each of them */
    int mappers = 0;
    for (int pe = 0; pe < h->npes; pe++) mappers += !shm || shm[pe];
    int first_local = 1; /* the first rank of this /dev/shm reclaims what dead jobs left */
    for (int pe = 0; pe < h->my_pe; pe++) first_local &= shm && !shm[pe];
    if (first_local) duet_heap_reclaim_once();
    char name[128];
    int lock_fd = -1, named = 0;
    seg_name(name, sizeof name, tag, h->my_pe);
    duet_status_t st = create_segment(name, seg_size, mappers, &lock_fd, &named, &h->peer_base[h->my_pe]);
    /* everyone learns whether everyone created a segment: no one waits for a failed peer */
    int ok = st == DUET_OK, *oks = malloc(sizeof(int) * (size_t)h->npes);
    duet_status_t st2 = oks ? duet_boot_allgather(b, &ok, oks, sizeof ok) : DUET_ERR_NO_MEMORY;
    int failed_pe = -1;
    for (int pe = 0; st2 == DUET_OK && pe < h->npes; pe++)
        if (!oks[pe]) failed_pe = pe;
    free(oks);
    if (st == DUET_OK && st2 != DUET_OK) st = st2;
    if (st == DUET_OK && failed_pe >= 0)
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "heap: rank %d could not create its segment", failed_pe);
    for (int pe = 0; st == DUET_OK && pe < h->npes; pe++) {
        if (pe == h->my_pe || (shm && !shm[pe])) continue; /* a net peer: not mapped */
        seg_name(name, sizeof name, tag, pe);
        st = open_peer(name, seg_size, mappers, &h->peer_base[pe]);
    }
    /* all mapped (or failed): a barrier; my name is gone unless a peer failed to count itself
     * in, and only once it is gone may the lock go */
    duet_status_t st3 = duet_boot_barrier(b);
    seg_name(name, sizeof name, tag, h->my_pe);
    if (named) shm_unlink(name);
    if (lock_fd >= 0) close(lock_fd);
    if (st == DUET_OK) st = st3;
    if (st != DUET_OK) {
        heap_free(h);
        return st;
    }
    h->local_base = h->peer_base[h->my_pe];
    unsigned char *net_pe = calloc((size_t)h->npes, 1);
    int any_net = 0;
    for (int pe = 0; net_pe && pe < h->npes; pe++) {
        duet_tport_ep_t *ep = &h->eps[pe];
        ep->ops = &duet_tport_shm_ops;
        ep->pe = pe;
        ep->base = h->peer_base[pe];
        ep->seg_size = seg_size;
        ep->doorbell = ep->base ? &duet_heap_ctrl(ep->base)->doorbell : NULL;
        net_pe[pe] = ep->base == NULL;
        any_net |= net_pe[pe];
    }
    /* the net transport is set up by every rank or by none: whether any rank has a net peer
     * is agreed first (a rank whose peers are all local still serves the others) */
    int job_net = 0, *nets = malloc(sizeof(int) * (size_t)h->npes);
    st = nets && net_pe ? duet_boot_allgather(b, &any_net, nets, sizeof any_net)
                        : DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "heap: out of host memory");
    for (int pe = 0; st == DUET_OK && pe < h->npes; pe++) job_net |= nets[pe];
    free(nets);
    if (st == DUET_OK && job_net) {
        st = duet_tport_net_create(&h->net, b, h->local_base, seg_size, h->eps, net_pe); /* the zone too: net channels */
        for (int pe = 0; st == DUET_OK && pe < h->npes; pe++) h->net_pes += net_pe[pe];
    }
    free(net_pe);
    if (st != DUET_OK) {
        heap_free(h);
        return st;
    }
    h->slots_used = 1; /* slot 0: the root communicator */
    DUET_LOG(INFO, HEAP, "heap: %d segments of %zu MiB mapped, %d peer(s) over the net transport (user heap "
             "%zu MiB, collective zone %zu MiB)", h->npes - h->net_pes, seg_size >> 20, h->net_pes, (user_end - DUET_HEAP_USER_OFFSET) >> 20, zone_size >> 20);
    *out = h;
    return DUET_OK;
}

void duet_heap_release(duet_heap_t *h)
{
    if (h && --h->refcount == 0) heap_free(h);
}

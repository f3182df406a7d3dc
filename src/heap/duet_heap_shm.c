/*
 * Symmetric heap segments in POSIX shared memory.
 *
 * Life of a segment: rank r creates /duet-<tag>-<r> (mode 0600, O_EXCL), sizes it, maps
 * it; a bootstrap barrier; every rank maps every shm peer's segment; a second barrier; each
 * rank unlinks its own name. Peers that cannot map it (another host, DUET_NET=force) reach
 * it through the net transport instead (duet_tport_net.c: registered with UCP). From then on nothing is left in /dev/shm: the memory lives
 * as long as some process maps it. If a rank is killed inside that short window, duetrun
 * removes the job's names (they start with duet-<job secret>).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static duet_status_t map_segment(const char *name, size_t size, int create, char **base)
{
    int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0);
    int fd = shm_open(name, flags, 0600);
    if (fd < 0)
        return DUET_FAIL(DUET_ERR_SYSTEM, HEAP, "heap: shm_open(%s): %s", name, strerror(errno));
    if (create && ftruncate(fd, (off_t)size) != 0) {
        int e = errno;
        close(fd);
        shm_unlink(name);
        return DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "heap: cannot size %s to %zu bytes: %s", name,
                         size, strerror(e));
    }
    if (!create) {
        struct stat st;
        if (fstat(fd, &st) != 0 || (size_t)st.st_size != size) {
            close(fd);
            return DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP,
                             "heap: peer segment %s has %lld bytes, expected %zu", name,
                             (long long)st.st_size, size);
        }
    }
    void *p = map_aligned(fd, size, duet_heap_base_align(size));
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        if (create) shm_unlink(name);
        return DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "heap: mmap of %s (%zu bytes): %s", name, size,
                         strerror(e));
    }
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
    char name[128];
    seg_name(name, sizeof name, tag, h->my_pe);
    duet_status_t st = map_segment(name, seg_size, 1, &h->peer_base[h->my_pe]);
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
        st = map_segment(name, seg_size, 0, &h->peer_base[pe]);
    }
    /* all mapped (or failed): a barrier, then the names go */
    duet_status_t st3 = duet_boot_barrier(b);
    seg_name(name, sizeof name, tag, h->my_pe);
    if (h->peer_base[h->my_pe]) shm_unlink(name);
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

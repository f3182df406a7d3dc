/*
 * shmem_static.c — global and static variables as symmetric objects.
 *
 * OpenSHMEM says a global or static variable is symmetric: a put to &x on PE k lands in PE
 * k's x. Every PE runs the same executable, but with ASLR it is loaded at a different address
 * in each process; the offset of x inside the executable's writable data segment is the same
 * everywhere. So:
 *
 *   shmem_init, before duet_init (no thread of Duet runs yet):
 *     find the main program's writable PT_LOAD segments (dl_iterate_phdr, first entry) minus
 *     the RELRO pages glibc makes read-only after relocation:
 *
 *        | RELRO (.got, .init_array ...) | .data | .bss (file part) | .bss (anonymous) |
 *        ^ read-only, left alone         ^ lo (page aligned)                   hi ^ (page up)
 *
 *     copy [lo, hi) into a memfd, and map the memfd over it with MAP_FIXED|MAP_SHARED: same
 *     address, same bytes, now shared memory. The whole .bss, anonymous pages included,
 *     becomes memfd pages (tmpfs: only the pages touched take memory). brk starts above hi.
 *   after duet_init:
 *     allgather {pid, fd, ranges}; every PE maps every peer's memfd (/proc/<pid>/fd/<fd>)
 *     read-write anywhere; a barrier; then the memfd is closed (the mappings keep it).
 *   an access to [addr, addr+n) with lo <= addr < hi on team pe p:
 *     peer_base[world pe][range] + (addr - lo).
 *
 * If any step fails (no memfd, /proc not readable, the PEs run different executables) static
 * data is simply not symmetric: shmem_init goes on, and an RMA on a static address fails
 * loudly with the reason recorded here. Known limits (docs/MIGRATING_OPENSHMEM.md): other
 * threads must not write globals during shmem_init; after fork() parent and child share their
 * globals; shared libraries' globals are not symmetric (only the executable's).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shmem_internal.h"

#define SHM_MAX_RANGES 4

typedef struct {
    uintptr_t lo, len;  /* my range */
    size_t file_off;    /* where it lies in the memfd */
} static_range_t;

static struct {
    int nranges;
    static_range_t range[SHM_MAX_RANGES];
    int fd;             /* my memfd until the peers mapped it */
    size_t file_len;
    char **peer_base;   /* [world pe * SHM_MAX_RANGES + range] */
    int ready;          /* every peer mapped */
    char why[256];      /* why static data is not symmetric */
} st_ = {.fd = -1};

uintptr_t shm_static_lo_, shm_static_span_; /* every range lies in [lo, lo + span) */

static uintptr_t page_down(uintptr_t a, uintptr_t pg) { return a & ~(pg - 1); }
static uintptr_t page_up(uintptr_t a, uintptr_t pg) { return (a + pg - 1) & ~(pg - 1); }

/* The main program is the first object dl_iterate_phdr reports. */
static int find_ranges(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), relro_end = 0;
    (void)size, (void)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_RELRO) /* glibc protects [start, end rounded down) */
            relro_end = page_down(info->dlpi_addr + ph->p_vaddr + ph->p_memsz, pg);
    }
    for (int i = 0; i < info->dlpi_phnum && st_.nranges < SHM_MAX_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || ph->p_memsz == 0) continue;
        uintptr_t lo = page_down(info->dlpi_addr + ph->p_vaddr, pg);
        uintptr_t hi = page_up(info->dlpi_addr + ph->p_vaddr + ph->p_memsz, pg);
        if (relro_end > lo && relro_end <= hi) lo = relro_end;
        if (lo >= hi) continue;
        st_.range[st_.nranges].lo = lo;
        st_.range[st_.nranges].len = hi - lo;
        st_.range[st_.nranges].file_off = st_.file_len;
        st_.file_len += hi - lo;
        st_.nranges++;
        uintptr_t end = shm_static_span_ ? shm_static_lo_ + shm_static_span_ : 0;
        if (!shm_static_span_ || lo < shm_static_lo_) shm_static_lo_ = lo;
        shm_static_span_ = (hi > end ? hi : end) - shm_static_lo_;
    }
    return 1; /* the main program only */
}

/* Copies the whole segment, redzones of sanitizer builds included: a word loop that
 * AddressSanitizer does not check (its memcpy interceptor would refuse the redzones), through
 * volatile so the compiler cannot turn it back into a memcpy call. Both ends are page aligned. */
__attribute__((no_sanitize("address"))) static void copy_segment(char *to, const char *from, size_t len)
{
    volatile uint64_t *d = (volatile uint64_t *)(void *)to;
    const volatile uint64_t *s = (const volatile uint64_t *)(const void *)from;
    for (size_t i = 0; i < len / sizeof(uint64_t); i++) d[i] = s[i];
}

static void give_up(const char *fmt, const char *detail)
{
    snprintf(st_.why, sizeof st_.why, fmt, detail);
    st_.nranges = 0;
    shm_static_lo_ = shm_static_span_ = 0;
}

void shm_static_prepare(void)
{
    st_.nranges = 0;
    shm_static_lo_ = shm_static_span_ = 0;
    st_.file_len = 0;
    st_.ready = 0;
    dl_iterate_phdr(find_ranges, NULL);
    if (st_.nranges == 0) {
        give_up("the executable has no writable data segment%s", "");
        return;
    }
    int fd = memfd_create("duet-shmem-static", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)st_.file_len) != 0) {
        give_up("memfd_create / ftruncate failed: %s", strerror(errno));
        if (fd >= 0) close(fd);
        return;
    }
    /* Copy first, through a temporary mapping, then swap the pages in place. Nothing else
     * runs in this process's data between the copy and the MAP_FIXED (see the file comment). */
    char *tmp = mmap(NULL, st_.file_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (tmp == MAP_FAILED) {
        give_up("mmap of the memfd failed: %s", strerror(errno));
        close(fd);
        return;
    }
    for (int r = 0; r < st_.nranges; r++)
        copy_segment(tmp + st_.range[r].file_off, (const char *)st_.range[r].lo, st_.range[r].len);
    for (int r = 0; r < st_.nranges; r++) {
        void *at = mmap((void *)st_.range[r].lo, st_.range[r].len, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_FIXED, fd, (off_t)st_.range[r].file_off);
        if (at == MAP_FAILED) /* MAP_FIXED failing leaves the old pages: nothing was lost */
            shm_die("shmem_init", "cannot map the data segment into shared memory: %s", strerror(errno));
    }
    munmap(tmp, st_.file_len);
    st_.fd = fd;
}

/* What each PE tells the others: pid, fd, number of ranges, then {lo, len} per range. */
#define SHM_DESC_WORDS (3 + 2 * SHM_MAX_RANGES)

void shm_static_exchange(const void *probe)
{
    int n = shm_g.npes;
    uint64_t mine[SHM_DESC_WORDS] = {(uint64_t)getpid(), (uint64_t)(int64_t)st_.fd, (uint64_t)st_.nranges};
    for (int r = 0; r < st_.nranges; r++) {
        mine[3 + 2 * r] = st_.range[r].lo;
        mine[4 + 2 * r] = st_.range[r].len;
    }
    uint64_t *all = calloc((size_t)n, sizeof mine);
    st_.peer_base = calloc((size_t)n * SHM_MAX_RANGES, sizeof(char *));
    if (!all || !st_.peer_base) shm_die("shmem_init", "out of memory");
    shm_check(duet_allgather(mine, all, SHM_DESC_WORDS, DUET_UINT64, shm_g.world, NULL), "shmem_init");
    /* Same executable everywhere: the same ranges, lengths and count (decided alike on all). */
    int ok = 1;
    for (int pe = 0; pe < n && ok; pe++) {
        const uint64_t *d = all + (size_t)pe * SHM_DESC_WORDS;
        if ((int)d[2] != st_.nranges || (int64_t)d[1] < 0) ok = 0;
        for (int r = 0; ok && r < st_.nranges; r++)
            if (d[4 + 2 * r] != st_.range[r].len) ok = 0;
    }
    if (!ok && !st_.why[0])
        snprintf(st_.why, sizeof st_.why, "a PE could not share its data segment, or the PEs' segments "
                 "differ (not the same executable?)");
    int mapped = ok;
    for (int pe = 0; pe < n && mapped; pe++) {
        const uint64_t *d = all + (size_t)pe * SHM_DESC_WORDS;
        /* a PE whose heap this PE does not map is on another host (or DUET_NET=force): its pid
         * means nothing here, so its segment is not opened (its base stays NULL: a call on static
         * data aimed at it is refused, shm_static_peer) */
        if (pe != shm_g.me && !duet_ptr(shm_g.world, probe, pe)) continue;
        for (int r = 0; r < st_.nranges; r++) {
            if (pe == shm_g.me) {
                st_.peer_base[(size_t)pe * SHM_MAX_RANGES + r] = (char *)st_.range[r].lo;
                continue;
            }
            char path[64];
            snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)d[0], (int)d[1]);
            int fd = open(path, O_RDWR | O_CLOEXEC);
            void *at = fd < 0 ? MAP_FAILED
                              : mmap(NULL, st_.range[r].len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                                     (off_t)st_.range[r].file_off);
            if (fd >= 0) close(fd);
            if (at == MAP_FAILED) {
                snprintf(st_.why, sizeof st_.why, "cannot map PE %d's data segment (%s): %s", pe, path,
                         strerror(errno));
                mapped = 0;
                break;
            }
            st_.peer_base[(size_t)pe * SHM_MAX_RANGES + r] = at;
        }
    }
    /* Everyone must agree: static data is symmetric only if every PE mapped every peer. */
    int32_t flag = mapped, all_ok = 0;
    shm_check(duet_allreduce(&flag, &all_ok, 1, DUET_INT32, DUET_MIN, shm_g.world, NULL), "shmem_init");
    if (st_.fd >= 0) close(st_.fd); /* the allreduce was the barrier: every peer has opened it */
    st_.fd = -1;
    free(all);
    if (all_ok) {
        st_.ready = 1;
        return;
    }
    if (!st_.why[0]) snprintf(st_.why, sizeof st_.why, "another PE could not map a peer's data segment");
    for (int pe = 0; pe < n; pe++)
        for (int r = 0; r < st_.nranges; r++) {
            char *b = st_.peer_base[(size_t)pe * SHM_MAX_RANGES + r];
            if (b && pe != shm_g.me) munmap(b, st_.range[r].len);
        }
    /* Keep nranges: addresses in the segment must still be recognised, and refused. */
}

void shm_static_release(void)
{
    if (!st_.peer_base) return;
    for (int pe = 0; st_.ready && pe < shm_g.npes; pe++)
        for (int r = 0; r < st_.nranges; r++)
            if (pe != shm_g.me) munmap(st_.peer_base[(size_t)pe * SHM_MAX_RANGES + r], st_.range[r].len);
    free(st_.peer_base);
    st_.peer_base = NULL;
    st_.ready = 0;
    /* My own segment stays shared memory at its address: the program's globals live there. */
}

int shm_static_lookup(const void *addr, size_t bytes, int *range, size_t *off)
{
    uintptr_t a = (uintptr_t)addr;
    for (int r = 0; r < st_.nranges; r++) {
        uintptr_t lo = st_.range[r].lo, len = st_.range[r].len;
        if (a < lo || a - lo >= len) continue;
        if (bytes > len - (a - lo) || !st_.ready) return -1;
        *range = r;
        *off = a - lo;
        return 1;
    }
    return 0;
}

int shm_static_find(const void *addr, size_t bytes, const char *fn, int *range, size_t *off)
{
    int found = shm_static_lookup(addr, bytes, range, off);
    if (found >= 0) return found;
    if (st_.ready)
        shm_die(fn, "%p (+%zu bytes) runs past the end of the static data segment", addr, bytes);
    shm_die(fn, "%p is a global/static variable, but static data is not symmetric here: %s", addr, st_.why);
}

char *shm_static_base(int range, int world_pe)
{
    return st_.peer_base ? st_.peer_base[(size_t)world_pe * SHM_MAX_RANGES + range] : NULL;
}

/*
 * Growing the GPU heap: physical memory behind a part only as far as blocks reach.
 *
 * With VMM every part's address range is reserved whole at creation (part_bytes, from
 * DUET_CUDA_HEAP_SIZE), but only its first DUET_CUDA_HEAP_FIRST bytes are backed: an idle
 * communicator costs that much GPU memory per rank, not the whole part. When a block would
 * end past what is mapped, the allocating communicator (which holds every live pe of the
 * heap, core/duet_comm_heap.c) grows every member's part together, by one segment:
 *
 *   part:  | seg 0: sync + first blocks | seg 1 | seg 2 ....... |      (reserved, unbacked)
 *          0                         4 MiB    8 MiB          16 MiB               part_bytes
 *
 *   1. allgather (need, mapped): the new end E is the largest need, rounded to the
 *      granularity, at least twice what is mapped, at most part_bytes;
 *   2. each member makes [mapped, E) of its part (cuMemCreate), maps it, exports a POSIX fd;
 *   3. the fds go to the members on this host (duet_cuda_fdpass.c), each imported and mapped
 *      at its place in the owner's part;
 *   4. allgather of the outcome: all grew, or the segment is unmapped everywhere.
 *
 * So the parts of the live pes always have the same mapped length, and a symmetric address
 * that one member may use is backed on every member. The mapped length only grows (a freed
 * block's memory stays for the next one) and is read without a lock by the pointer checks.
 * The cudaIpc fallback has no growth: its parts are whole cudaMalloc allocations. Growths are
 * collective calls of the heap's communicators: one thread at a time, like the rest of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "cuda/duet_cuda_fdpass.h"
#include "cuda/duet_cuda_state.h"

duet_status_t duet_cuda_heap_map(duet_cuda_heap_t *g, CUmemGenericAllocationHandle hd, int pe, size_t off,
                                 size_t len)
{
    const duet_cu_t *cu = duet_cu();
    CUdeviceptr at = (CUdeviceptr)(g->va + (uintptr_t)pe * g->stride + off);
    CUresult r = cu->MemMap(at, len, 0, hd, 0);
    if (r != CUDA_SUCCESS)
        return duet_cuda_fail_cu_(r, "GPU heap: rank %d cannot map [%zu, +%zu) of rank %d's part (cuMemMap)",
                                  g->my_pe, off, len, pe);
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, g->device}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    r = cu->MemSetAccess(at, len, &acc, 1);
    if (r != CUDA_SUCCESS) {
        cu->MemUnmap(at, len);
        return duet_cuda_fail_cu_(r, "GPU heap: rank %d (device %d) cannot access rank %d's part "
                                  "(cuMemSetAccess)", g->my_pe, g->device, pe);
    }
    return DUET_OK;
}

/* Step 2: my own new segment, mapped, and its fd (or -1 and the error). */
static duet_status_t make_mine(duet_cuda_heap_t *g, size_t off, size_t len, int *fd)
{
    const duet_cu_t *cu = duet_cu();
    CUmemAllocationProp prop = duet_cuda_heap_prop(g->device);
    CUmemGenericAllocationHandle hd;
    *fd = -1;
    CUresult r = cu->MemCreate(&hd, len, &prop, 0);
    if (r != CUDA_SUCCESS)
        return duet_cuda_fail_cu_(r, "GPU heap: rank %d cannot back %zu more bytes of its part on device %d "
                                  "(cuMemCreate)", g->my_pe, len, g->device);
    duet_status_t st = duet_cuda_heap_map(g, hd, g->my_pe, off, len);
    if (!st && (r = cu->MemExportToShareableHandle(fd, hd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)) !=
                   CUDA_SUCCESS) {
        *fd = -1;
        st = duet_cuda_fail_cu_(r, "GPU heap: rank %d cannot export its new segment", g->my_pe);
        cu->MemUnmap((CUdeviceptr)(g->va + (uintptr_t)g->my_pe * g->stride + off), len);
    }
    cu->MemRelease(hd); /* the mapping (and the fd) hold the memory from now on */
    return st;
}

typedef struct {
    uint64_t need, mapped;
} grow_ask_t;

/* Step 1: the new end, the same on every member (0: nothing to do). */
static duet_status_t new_end(duet_cuda_heap_t *g, duet_boot_t *b, size_t need, size_t *end, const char *fn)
{
    int n = b->nranks;
    size_t have = duet_cuda_heap_mapped(g);
    grow_ask_t mine = {need, have}, *all = malloc(sizeof *all * (size_t)n);
    if (!all) return DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "%s: out of host memory", fn);
    duet_status_t st = duet_boot_allgather(b, &mine, all, sizeof mine);
    size_t want = 0;
    for (int r = 0; !st && r < n; r++) {
        if (all[r].mapped != have)
            st = DUET_FAIL(DUET_ERR_INTERNAL, CUDA, "%s: rank %d has %llu bytes of its GPU heap part mapped, "
                           "rank %d %zu", fn, r, (unsigned long long)all[r].mapped, b->rank, have);
        if (all[r].need > want) want = all[r].need;
    }
    free(all);
    *end = 0;
    if (st || want <= have) return st;
    if (want > g->part_bytes)
        return DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "%s: %zu bytes of GPU heap asked for, %zu reserved per rank "
                         "(DUET_CUDA_HEAP_SIZE)", fn, want, g->part_bytes);
    if (g->nseg >= DUET_CUDA_HEAP_SEGS)
        return DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "%s: the GPU heap has %d segments, the most it holds", fn,
                         g->nseg);
    size_t e = duet_cuda_round_up(want, g->gran);
    if (e < 2 * have) e = 2 * have;
    *end = e < g->part_bytes ? e : g->part_bytes;
    return DUET_OK;
}

duet_status_t duet_cuda_heap_grow(duet_cuda_heap_t *g, duet_boot_t *b, const int *heap_pe, size_t need,
                                  const char *fn)
{
    if (!g->vmm) return DUET_OK; /* the fallback's parts are whole (every member is in it, or none) */
    size_t end = 0, off = duet_cuda_heap_mapped(g);
    duet_status_t st = new_end(g, b, need, &end, fn);
    if (st || !end) return st;
    size_t len = end - off;
    int n = b->nranks, me = b->rank;
    uint8_t *local = calloc((size_t)n, 1), *done = calloc((size_t)g->npes, 1);
    int32_t *pids = calloc((size_t)n, sizeof *pids);
    int *fds = malloc(sizeof *fds * (size_t)n), fd = -1;
    duet_status_t mst = local && done && pids && fds ? DUET_OK : DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "out of host memory");
    for (int r = 0; !mst && r < n; r++) {
        int pe = heap_pe ? heap_pe[r] : r;
        local[r] = r != me && g->local[pe];
        pids[r] = g->pids[pe];
    }
    if (!mst) mst = make_mine(g, off, len, &fd);
    if (!mst) done[heap_pe ? heap_pe[me] : me] = 1;
    char name[112];
    snprintf(name, sizeof name, "%s-g%u", g->tag, g->grows++);
    /* every member takes part in the exchange, even after a local failure: its status
     * allgathers carry the failure to the others */
    st = fds ? duet_cuda_fd_exchange(b, name, local, pids, mst ? -1 : fd, fds, duet_cfg()->bootstrap_timeout)
             : DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "out of host memory");
    if (!st) st = mst;
    if (fd >= 0) close(fd);
    const duet_cu_t *cu = duet_cu();
    for (int r = 0; fds && r < n; r++) {
        if (fds[r] < 0) continue;
        int pe = heap_pe ? heap_pe[r] : r;
        CUmemGenericAllocationHandle hd;
        if (!st) {
            CUresult cr = cu->MemImportFromShareableHandle(&hd, (void *)(uintptr_t)fds[r],
                                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
            if (cr != CUDA_SUCCESS)
                st = duet_cuda_fail_cu_(cr, "GPU heap: rank %d cannot import rank %d's new segment", me, r);
            else {
                st = duet_cuda_heap_map(g, hd, pe, off, len);
                if (!st) done[pe] = 1;
                cu->MemRelease(hd);
            }
        }
        close(fds[r]);
    }
    /* all or nothing */
    int32_t ok = st, *oks = malloc(sizeof *oks * (size_t)n);
    duet_status_t xst = oks ? duet_boot_allgather(b, &ok, oks, sizeof ok)
                            : DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "out of host memory");
    if (!st) st = xst;
    for (int r = 0; !st && r < n; r++)
        if (oks[r]) st = DUET_FAIL(DUET_ERR_CUDA, CUDA, "%s: rank %d could not grow its GPU heap part", fn, r);
    pthread_mutex_lock(g->lock);
    for (int pe = 0; done && pe < g->npes; pe++) {
        if (!done[pe]) continue;
        if (st)
            cu->MemUnmap((CUdeviceptr)(g->va + (uintptr_t)pe * g->stride + off), len);
        else
            g->pe_segs[pe]++;
    }
    if (!st) {
        g->seg_end[g->nseg++] = end;
        __atomic_store_n(&g->mapped, end, __ATOMIC_RELEASE);
        DUET_LOG(INFO, CUDA, "%s: GPU heap part of rank %d backed to %zu bytes (segment %d, +%zu)", fn, me, end,
                 g->nseg - 1, len);
    }
    pthread_mutex_unlock(g->lock);
    free(oks);
    free(local);
    free(done);
    free(pids);
    free(fds);
    return st;
}

/*
 * Creating and destroying the GPU symmetric heap (layout: duet_cuda_heap.h).
 *
 * Collective over the root communicator's bootstrap, in three exchanges:
 *   1. host keys (core/duet_host.h) and pids: which ranks share this host's memory, and my
 *      local rank among them (-> my GPU);
 *   2. what each rank could do alone: no GPU (then nobody gets a GPU heap, DUET_OK), a
 *      failure (everyone fails, naming the rank), its part size (must match), and whether it
 *      made its part with cuMemCreate + a POSIX-fd handle (VMM);
 *   3. if every rank has VMM: descriptors over Unix sockets (duet_cuda_fdpass.c), each part
 *      imported and mapped at va + pe * stride; else cudaMalloc + cudaIpc handles through
 *      the bootstrap allgather, parts wherever cudaIpcOpenMemHandle puts them;
 * and a last allgather of the outcome, so the heap exists on all ranks or on none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "cuda/duet_cuda_coll_kern.h"
#include "cuda/duet_cuda_driver.h"
#include "cuda/duet_cuda_exec_kern.h"
#include "cuda/duet_cuda_fdpass.h"
#include "cuda/duet_cuda_proxy.h"
#include "cuda/duet_cuda_rma.h"
#include "cuda/duet_cuda_rma_kern.h"
#include "cuda/duet_cuda_state.h"
#include "core/duet_host.h"

typedef struct {
    duet_host_key_t key;
    int32_t pid;
} who_t;

typedef struct {
    int32_t status;  /* DUET_OK, or the error that stopped this rank */
    int32_t gpu;     /* 1: has a GPU to use (and DUET_CUDA is not off) */
    int32_t vmm;     /* 1: its part is a cuMemCreate allocation with an fd handle */
    int32_t device;
    uint64_t part_bytes; /* reserved (VMM) or allocated (the fallback) */
    uint64_t first_bytes; /* VMM: backed at first (DUET_CUDA_HEAP_FIRST, in granules) */
    uint64_t gran;
    char why[96];    /* gpu == 0: why not */
} gpu_info_t;

typedef struct {
    int32_t status;
    int32_t pad;
    cudaIpcMemHandle_t handle;
} ipc_info_t;

/* What this rank set up on its own, before talking to the others. */
typedef struct {
    CUmemGenericAllocationHandle handle; /* VMM: my part */
    int have_handle;
    int fd;                              /* VMM: its exported descriptor */
} local_t;

/* Loads every kernel of Duet's on the current device now, while nothing of ours runs. CUDA
 * loads a kernel at its first launch by default (lazy loading, CUDA 12.2 on), and loading may
 * wait for all work on the device: a first launch behind a kernel that spins for a peer (a
 * collective, a signal wait) would wait for that peer from the host, a call that should only
 * queue (gpu.test_gpu_queue found the executor's first launch waiting so). A failure here is
 * left to the launch to report (a kernel built for no architecture of this GPU). */
static void kernels_load(int dev)
{
    int errs[4] = {duet_cuda_coll_load(), duet_cuda_direct_load(), duet_cuda_exec_load(), duet_cuda_k_load()};
    for (int i = 0; i < 4; i++)
        if (errs[i] != (int)cudaSuccess) {
            DUET_LOG(WARN, CUDA, "loading Duet's GPU kernels on device %d: %s (a launch will fail)", dev,
                     cudaGetErrorString((cudaError_t)errs[i]));
            (void)cudaGetLastError();
            return;
        }
}

static int cuda_off(void)
{
    const char *v = duet_cfg()->cuda;
    if (strcasecmp(v, "off") == 0 || strcmp(v, "0") == 0) return 1;
    if (strcasecmp(v, "auto") != 0 && strcasecmp(v, "ipc") != 0)
        DUET_LOG(WARN, CUDA, "DUET_CUDA=%s is not auto, ipc or off: taken as auto", v);
    return 0;
}

/* Picks and sets up my device; tries the VMM allocation. Fills mine->gpu/why/status. */
static void probe(gpu_info_t *mine, local_t *loc, int local_rank, int device)
{
    int count = 0;
    if (cuda_off()) {
        snprintf(mine->why, sizeof mine->why, "DUET_CUDA=off");
        return;
    }
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count <= 0) {
        (void)cudaGetLastError();
        snprintf(mine->why, sizeof mine->why, "%s", err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device");
        return;
    }
    long want = device >= 0 ? device : duet_cfg()->cuda_device;
    int dev = want >= 0 ? (int)want : local_rank % count;
    if (want >= count) {
        mine->status = DUET_FAIL(DUET_ERR_INVALID_ARG, CUDA, "GPU heap: device %ld asked for (%s) but only %d "
                                 "device(s) are visible", want, device >= 0 ? "the communicator's config" :
                                 "DUET_CUDA_DEVICE", count);
        return;
    }
    mine->gpu = 1;
    mine->device = dev;
    if ((err = cudaSetDevice(dev)) != cudaSuccess || (err = cudaFree(NULL)) != cudaSuccess) {
        mine->status = DUET_CUDA_FAIL_RT(err, "GPU heap: cannot use CUDA device %d", dev);
        return;
    }
    kernels_load(dev);
    size_t want_bytes = DUET_CUDA_SYNC_BYTES + duet_cfg()->cuda_heap_size;
    size_t gran = 2u << 20;
    mine->part_bytes = duet_cuda_round_up(want_bytes, gran);
    if (strcasecmp(duet_cfg()->cuda, "ipc") == 0) {
        DUET_LOG(INFO, CUDA, "DUET_CUDA=ipc: the GPU heap uses cudaMalloc + cudaIpc");
        return;
    }
    const duet_cu_t *cu = duet_cu();
    CUdevice cdev;
    int vmm = 0, fdok = 0;
    if (!cu || cu->DeviceGet(&cdev, dev) != CUDA_SUCCESS ||
        cu->DeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, cdev) != CUDA_SUCCESS ||
        cu->DeviceGetAttribute(&fdok, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, cdev) !=
            CUDA_SUCCESS || !vmm || !fdok) {
        DUET_LOG(INFO, CUDA, "device %d: no VMM with POSIX-fd handles; the GPU heap uses cudaIpc", dev);
        return;
    }
    CUmemAllocationProp prop = duet_cuda_heap_prop(dev);
    size_t g = 0;
    CUresult r = cu->MemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (r == CUDA_SUCCESS && g > gran) gran = g;
    mine->gran = gran;
    mine->part_bytes = duet_cuda_round_up(want_bytes, gran);
    mine->first_bytes = duet_cuda_round_up(DUET_CUDA_HEAP_FIRST, gran);
    if (mine->first_bytes > mine->part_bytes) mine->first_bytes = mine->part_bytes;
    if (r == CUDA_SUCCESS) r = cu->MemCreate(&loc->handle, mine->first_bytes, &prop, 0);
    if (r != CUDA_SUCCESS) {
        DUET_LOG(INFO, CUDA, "device %d: cuMemCreate(%zu bytes): %s; the GPU heap uses cudaIpc", dev,
                 (size_t)mine->first_bytes, duet_cu_error_str(r));
        return;
    }
    loc->have_handle = 1;
    r = cu->MemExportToShareableHandle(&loc->fd, loc->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r != CUDA_SUCCESS) {
        DUET_LOG(INFO, CUDA, "device %d: cuMemExportToShareableHandle: %s; the GPU heap uses cudaIpc", dev,
                 duet_cu_error_str(r));
        loc->fd = -1;
        cu->MemRelease(loc->handle);
        loc->have_handle = 0;
        return;
    }
    mine->vmm = 1;
}

static void local_release(local_t *loc)
{
    if (loc->fd >= 0) close(loc->fd);
    if (loc->have_handle) duet_cu()->MemRelease(loc->handle);
    loc->fd = -1;
    loc->have_handle = 0;
}

/* Maps the first segment of one part (mine or an imported one) at its place in the range. */
static duet_status_t map_part(duet_cuda_heap_t *g, CUmemGenericAllocationHandle hd, int pe)
{
    duet_status_t st = duet_cuda_heap_map(g, hd, pe, 0, g->seg_end[0]);
    if (st) return st;
    g->peer[pe] = (char *)(g->va + (uintptr_t)pe * g->stride);
    g->pe_segs[pe] = 1;
    return DUET_OK;
}

static duet_status_t setup_vmm(duet_cuda_heap_t *g, duet_boot_t *b, local_t *loc, const char *tag,
                               const uint8_t *local, const int32_t *pids, size_t first, size_t gran)
{
    const duet_cu_t *cu = duet_cu();
    g->vmm = 1;
    g->gran = gran;
    g->nseg = 1;
    g->seg_end[0] = g->mapped = first;
    g->stride = g->part_bytes;
    g->va_bytes = g->stride * (size_t)g->npes;
    CUdeviceptr va = 0;
    CUresult r = cu->MemAddressReserve(&va, g->va_bytes, 2u << 20, 0, 0);
    duet_status_t st = DUET_OK;
    if (r != CUDA_SUCCESS)
        st = duet_cuda_fail_cu_(r, "GPU heap: cannot reserve %zu bytes of GPU address space", g->va_bytes);
    else
        g->va = (uintptr_t)va;
    if (!st) st = map_part(g, loc->handle, g->my_pe);
    int *fds = malloc(sizeof(int) * (size_t)g->npes);
    if (!fds && !st) st = DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "out of host memory");
    /* every rank takes part in the exchange, even after a local failure (its peers then
     * hear of it from the exchange's own status allgather) */
    char name[96];
    snprintf(name, sizeof name, "%s", tag);
    if (fds) {
        duet_status_t xst = duet_cuda_fd_exchange(b, name, local, pids, st ? -1 : loc->fd, fds,
                                                  duet_cfg()->bootstrap_timeout);
        if (!st) st = xst;
    }
    for (int pe = 0; fds && pe < g->npes; pe++) {
        if (fds[pe] < 0) continue;
        CUmemGenericAllocationHandle hd;
        if (!st) {
            r = cu->MemImportFromShareableHandle(&hd, (void *)(uintptr_t)fds[pe],
                                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
            if (r != CUDA_SUCCESS)
                st = duet_cuda_fail_cu_(r, "GPU heap: rank %d cannot import rank %d's part", g->my_pe, pe);
            else {
                st = map_part(g, hd, pe);
                cu->MemRelease(hd); /* the mapping holds the memory from now on */
            }
        }
        close(fds[pe]);
    }
    free(fds);
    return st;
}

static duet_status_t setup_ipc(duet_cuda_heap_t *g, duet_boot_t *b, const uint8_t *local)
{
    g->vmm = 0;
    g->stride = 0;
    g->mapped = g->part_bytes;
    ipc_info_t mine = {0}, *all = malloc(sizeof *all * (size_t)g->npes);
    if (!all) return DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "out of host memory");
    cudaError_t err = cudaMalloc((void **)&g->own, g->part_bytes);
    if (err != cudaSuccess) {
        g->own = NULL;
        mine.status = DUET_CUDA_FAIL_RT(err, "GPU heap: cudaMalloc(%zu) on device %d", g->part_bytes, g->device);
    } else if ((err = cudaIpcGetMemHandle(&mine.handle, g->own)) != cudaSuccess) {
        mine.status = DUET_CUDA_FAIL_RT(err, "GPU heap: cudaIpcGetMemHandle");
    }
    g->peer[g->my_pe] = g->own;
    duet_status_t st = duet_boot_allgather(b, &mine, all, sizeof mine);
    if (!st) st = mine.status;
    for (int r = 0; !st && r < g->npes; r++)
        if (all[r].status)
            st = DUET_FAIL(DUET_ERR_CUDA, CUDA, "GPU heap: rank %d could not make its part", r);
    for (int r = 0; !st && r < g->npes; r++) {
        if (r == g->my_pe || !local[r]) continue;
        void *p = NULL;
        err = cudaIpcOpenMemHandle(&p, all[r].handle, cudaIpcMemLazyEnablePeerAccess);
        if (err != cudaSuccess)
            st = DUET_CUDA_FAIL_RT(err, "GPU heap: rank %d cannot open rank %d's part (cudaIpcOpenMemHandle)",
                                   g->my_pe, r);
        else
            g->peer[r] = p;
    }
    free(all);
    return st;
}

void duet_cuda_heap_destroy(duet_cuda_heap_t *g)
{
    if (!g) return;
    duet_cuda_proxy_stop(g); /* its thread copies into my part */
    cudaSetDevice(g->device);
    cudaDeviceSynchronize(); /* no copy of ours still touches a peer's part */
    const duet_cu_t *cu = duet_cu();
    for (int pe = 0; g->peer && pe < g->npes; pe++) {
        if (!g->peer[pe]) continue;
        if (g->vmm) {
            for (int k = 0; g->pe_segs && k < g->pe_segs[pe]; k++) {
                size_t lo = k ? g->seg_end[k - 1] : 0;
                CUresult r = cu->MemUnmap((CUdeviceptr)(uintptr_t)(g->peer[pe] + lo), g->seg_end[k] - lo);
                if (r != CUDA_SUCCESS)
                    DUET_LOG(WARN, CUDA, "GPU heap: cuMemUnmap of segment %d of rank %d's part: %s", k, pe,
                             duet_cu_error_str(r));
            }
        } else if (pe != g->my_pe) {
            cudaIpcCloseMemHandle(g->peer[pe]);
        }
    }
    if (g->va) cu->MemAddressFree((CUdeviceptr)g->va, g->va_bytes);
    if (g->own) cudaFree(g->own);
    if (g->peer_dev) cudaFree(g->peer_dev);
    if (g->remote_dev) cudaFree(g->remote_dev);
    (void)cudaGetLastError();
    duet_alloc_destroy(g->alloc);
    free(g->peer);
    free(g->remote);
    free(g->pe_segs);
    free(g->local);
    free(g->pids);
    free(g);
}

/* Steps 2 and 3 above, once the local ranks are known. */
static duet_status_t build(duet_heap_t *h, duet_boot_t *b, const char *tag, const uint8_t *local,
                           const int32_t *pids, int local_rank, int fdpass, int device)
{
    int n = b->nranks, me = b->rank;
    gpu_info_t mine = {0}, *all = malloc(sizeof *all * (size_t)n);
    if (!all) return DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "out of host memory");
    local_t loc = {0, 0, -1};
    probe(&mine, &loc, local_rank, device);
    if (mine.vmm && fdpass >= 0) { /* VMM would need fds from a peer my sockets cannot reach */
        DUET_LOG(INFO, CUDA, "GPU heap: rank %d is in another network or pid namespace (no fd passing "
                 "with it); every rank uses cudaIpc", fdpass);
        local_release(&loc);
        mine.vmm = 0;
    }
    duet_status_t st = duet_boot_allgather(b, &mine, all, sizeof mine);
    int gpus = 0, vmms = 0;
    for (int r = 0; !st && r < n; r++) {
        if (all[r].status)
            st = r == me ? (duet_status_t)all[r].status
                         : DUET_FAIL(DUET_ERR_CUDA, CUDA, "GPU heap: rank %d could not set up its GPU", r);
        gpus += all[r].gpu != 0;
        vmms += all[r].vmm != 0;
    }
    if (!st && gpus < n) {
        int r0 = 0;
        while (r0 < n && all[r0].gpu) r0++;
        if (gpus) DUET_LOG(WARN, CUDA, "no GPU heap: rank %d has no GPU (%s) while %d rank(s) do", r0,
                           all[r0].why, gpus);
        else DUET_LOG(INFO, CUDA, "no GPU heap: %s", all[me].why);
        local_release(&loc);
        free(all);
        return DUET_OK;
    }
    for (int r = 0; !st && r < n; r++)
        if (all[r].part_bytes != mine.part_bytes || (vmms == n && all[r].first_bytes != mine.first_bytes))
            st = DUET_FAIL(DUET_ERR_INVALID_ARG, CUDA, "GPU heap: rank %d's part is %llu bytes, rank %d's %zu "
                           "(DUET_CUDA_HEAP_SIZE must match on every rank, and the devices' granularity)", r,
                           (unsigned long long)all[r].part_bytes, me, (size_t)mine.part_bytes);
    duet_cuda_heap_t *g = NULL;
    if (!st && !(g = calloc(1, sizeof *g))) st = DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "out of host memory");
    if (g) {
        g->device = mine.device;
        g->my_pe = me;
        g->npes = n;
        g->part_bytes = mine.part_bytes;
        g->lock = &h->lock;
        snprintf(g->tag, sizeof g->tag, "%s", tag);
        g->peer = calloc((size_t)n, sizeof *g->peer);
        g->remote = calloc((size_t)n, sizeof *g->remote); /* set by duet_cuda_proxy_start */
        g->pe_segs = calloc((size_t)n, 1);
        g->local = malloc((size_t)n);
        g->pids = malloc(sizeof *g->pids * (size_t)n);
        if (g->local) memcpy(g->local, local, (size_t)n);
        if (g->pids) memcpy(g->pids, pids, sizeof *g->pids * (size_t)n);
        g->alloc = duet_alloc_create(g->part_bytes);
        size_t off;
        if (!g->peer || !g->remote || !g->pe_segs || !g->local || !g->pids || !g->alloc || duet_alloc_take(g->alloc, DUET_CUDA_SYNC_BYTES, 1, &off) || off != 0)
            st = DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "out of host memory");
    }
    /* the collective steps run on every rank whatever happened locally, so nobody is left
     * waiting in an exchange; their status allgathers carry the failure */
    if (vmms == n) {
        if (g) st = setup_vmm(g, b, &loc, tag, local, pids, mine.first_bytes, mine.gran) ?: st;
    } else {
        if (vmms) DUET_LOG(INFO, CUDA, "GPU heap: %d of %d ranks lack VMM; every rank uses cudaIpc", n - vmms, n);
        local_release(&loc);
        if (g) st = setup_ipc(g, b, local) ?: st;
    }
    local_release(&loc);
    cudaError_t err = cudaSuccess;
    if (!st) {
        size_t bytes = sizeof(char *) * (size_t)n;
        if ((err = cudaMemset(g->peer[me], 0, DUET_CUDA_SYNC_BYTES)) != cudaSuccess ||
            (err = cudaMalloc((void **)&g->peer_dev, bytes)) != cudaSuccess ||
            (err = cudaMemcpy(g->peer_dev, g->peer, bytes, cudaMemcpyHostToDevice)) != cudaSuccess ||
            (err = cudaDeviceSynchronize()) != cudaSuccess)
            st = DUET_CUDA_FAIL_RT(err, "GPU heap: initialising rank %d's part", me);
    }
    if (!st) st = duet_cuda_rma_eps_make(h, g); /* its transport's endpoints */
    /* all or nothing */
    int32_t ok = st, *oks = (int32_t *)all; /* all[] is larger than n int32s */
    duet_status_t xst = duet_boot_allgather(b, &ok, oks, sizeof ok);
    if (!st) st = xst;
    for (int r = 0; !st && r < n; r++)
        if (oks[r]) st = DUET_FAIL(DUET_ERR_CUDA, CUDA, "GPU heap: rank %d failed to set it up", r);
    free(all);
    if (st) {
        duet_cuda_rma_eps_free(h);
        duet_cuda_heap_destroy(g);
        return st;
    }
    h->dev = g;
    h->dev_ops = &duet_cuda_heap_ops;
    DUET_LOG(INFO, CUDA, "GPU heap: device %d, %zu bytes per rank, %zu of them backed%s", g->device,
             g->part_bytes, g->mapped, g->vmm ? " (VMM: one range, fixed stride; grows on demand)"
                                              : " (the cudaIpc fallback)");
    return DUET_OK;
}

int duet_cuda_current_device(void)
{
    int count = 0, dev = -1;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0 || cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return dev;
}

duet_status_t duet_cuda_heap_create(duet_heap_t *h, duet_boot_t *b, const char *tag, int device)
{
    h->dev = NULL;
    h->dev_eps = NULL;
    if (device == DUET_HEAP_DEV_CURRENT) device = duet_cuda_current_device();
    int n = b->nranks;
    who_t mine = {.pid = (int32_t)getpid()}, *all = malloc(sizeof *all * (size_t)n);
    uint8_t *local = malloc((size_t)n);
    int32_t *pids = malloc(sizeof *pids * (size_t)n);
    duet_host_key_get(&mine.key);
    duet_status_t st = all && local && pids ? DUET_OK : DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "out of host memory");
    if (!st) st = duet_boot_allgather(b, &mine, all, sizeof mine);
    /* local: the ranks whose memory maps here (the same rule as the host heap's); fd passing
     * (VMM) also needs their abstract sockets (network namespace) and their pids (the
     * SO_PEERCRED check), else the first such rank is named and everyone takes cudaIpc */
    int local_rank = 0, fdpass = -1;
    for (int r = 0; !st && r < n; r++) {
        unsigned reach = duet_host_reach(&mine.key, &all[r].key);
        local[r] = (reach & DUET_HOST_SHM) != 0;
        pids[r] = all[r].pid;
        if (r < b->rank && local[r]) local_rank++;
        if (local[r] && (reach & (DUET_HOST_FD | DUET_HOST_PID)) != (DUET_HOST_FD | DUET_HOST_PID) && fdpass < 0)
            fdpass = r;
    }
    if (!st) st = build(h, b, tag, local, pids, local_rank, fdpass, device);
    free(all);
    free(local);
    free(pids);
    return st ? duet_error_wrap(st, "GPU heap") : DUET_OK;
}

/* ---- the heap layer's table (heap/duet_heap_dev.h) */
static void ops_destroy(duet_heap_t *h)
{
    duet_cuda_heap_destroy(duet_cuda_heap_of(h)); /* waits for the device first */
    duet_cuda_rma_eps_free(h);
}
static int ops_owns(const duet_heap_t *h, const void *p, size_t n)
{
    return duet_cuda_rma_owns(duet_cuda_heap_of(h), p, n ? n : 1);
}
static duet_status_t ops_alloc(duet_heap_t *h, duet_boot_t *b, const int *heap_pe, size_t size, void **out,
                               const char *fn)
{
    return duet_cuda_heap_alloc(duet_cuda_heap_of(h), b, heap_pe, size, out, fn);
}
static duet_status_t ops_free(duet_heap_t *h, void *p, const char *fn)
{
    return duet_cuda_heap_free(duet_cuda_heap_of(h), p, fn);
}
static size_t ops_offset(const duet_heap_t *h, const void *p) { return duet_cuda_heap_offset(duet_cuda_heap_of(h), p); }
static void *ops_peer(const duet_heap_t *h, const void *p, int heap_pe)
{
    return duet_cuda_heap_peer(duet_cuda_heap_of(h), p, heap_pe);
}
static duet_status_t ops_slot_reset(duet_heap_t *h, int slot)
{
    return duet_cuda_heap_slot_reset(duet_cuda_heap_of(h), slot);
}

const duet_heap_dev_ops_t duet_cuda_heap_ops = {
    .size = sizeof(duet_heap_dev_ops_t), .name = "cuda", .create = duet_cuda_heap_create, .destroy = ops_destroy,
    .owns = ops_owns, .alloc = ops_alloc, .free = ops_free, .offset = ops_offset, .peer = ops_peer,
    .slot_reset = ops_slot_reset, .available = duet_cuda_available};

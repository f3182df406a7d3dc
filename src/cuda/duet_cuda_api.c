/*
 * The GPU heap's allocator and lookups, and the public CUDA calls of duet_cuda.h:
 * duet_cuda_available, duet_cuda_device, duet_device_comm_get (duet_malloc_device and the GPU
 * half of duet_free / duet_ptr live beside their host twins in src/core and src/rma).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include "core/duet_ft.h"
#include "cuda/duet_cuda_coll.h"
#include "cuda/duet_cuda_driver.h"
#include "cuda/duet_cuda_state.h"

static char *my_part(const duet_cuda_heap_t *g) { return g->peer[g->my_pe]; }

int duet_cuda_heap_owns(const duet_cuda_heap_t *g, const void *p)
{
    if (!g) return 0;
    uintptr_t base = (uintptr_t)my_part(g), a = (uintptr_t)p;
    return a >= base + DUET_CUDA_SYNC_BYTES && a < base + duet_cuda_heap_mapped(g);
}

size_t duet_cuda_heap_offset(const duet_cuda_heap_t *g, const void *p)
{
    return (size_t)((uintptr_t)p - (uintptr_t)my_part(g));
}

void *duet_cuda_heap_peer(const duet_cuda_heap_t *g, const void *p, int heap_pe)
{
    char *part = g->peer[heap_pe];
    return part ? part + duet_cuda_heap_offset(g, p) : NULL;
}

duet_status_t duet_cuda_heap_alloc(duet_cuda_heap_t *g, duet_boot_t *b, const int *heap_pe, size_t size,
                                   void **out, const char *fn)
{
    size_t off = 0;
    pthread_mutex_lock(g->lock);
    int rc = duet_alloc_take(g->alloc, size, 256, &off);
    duet_alloc_stats_t s;
    if (rc) duet_alloc_stats(g->alloc, &s);
    pthread_mutex_unlock(g->lock);
    /* every member grows with the others, whether or not its own block fits */
    duet_status_t st = duet_cuda_heap_grow(g, b, heap_pe, rc ? 0 : off + size, fn);
    if (st && !rc) {
        pthread_mutex_lock(g->lock);
        duet_alloc_give(g->alloc, off);
        pthread_mutex_unlock(g->lock);
    }
    if (st) {
        *out = NULL;
        return st;
    }
    if (rc) {
        *out = NULL;
        return DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "%s: the GPU heap cannot fit %zu bytes: %zu of %zu bytes "
                         "free, largest free range %zu; raise DUET_CUDA_HEAP_SIZE", fn, size, s.free,
                         s.total - DUET_CUDA_SYNC_BYTES, s.largest_free);
    }
    DUET_LOG(TRACE, CUDA, "%s(%zu) -> offset %zu", fn, size, off);
    *out = my_part(g) + off;
    return DUET_OK;
}

duet_status_t duet_cuda_heap_free(duet_cuda_heap_t *g, void *p, const char *fn)
{
    pthread_mutex_lock(g->lock);
    int rc = duet_alloc_give(g->alloc, duet_cuda_heap_offset(g, p));
    pthread_mutex_unlock(g->lock);
    if (rc) return DUET_FAIL(DUET_ERR_INVALID_ARG, CUDA, "%s: %p is not a live GPU heap block (double free?)", fn, p);
    return DUET_OK;
}

duet_status_t duet_cuda_heap_slot_reset(duet_cuda_heap_t *g, int slot)
{
    if (!g) return DUET_OK;
    cudaError_t err = cudaSetDevice(g->device);
    if (err == cudaSuccess)
        err = cudaMemset(my_part(g) + (size_t)slot * DUET_CUDA_SYNC_SLOT_BYTES, 0, DUET_CUDA_SYNC_SLOT_BYTES);
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    return err == cudaSuccess ? DUET_OK : DUET_CUDA_FAIL_RT(err, "GPU heap: clearing sync slot %d", slot);
}

/* ---------------------------------------------------------------- per-communicator handle */

void duet_cuda_comm_release(duet_cuda_comm_t *cc)
{
    if (!cc) return;
    duet_cuda_coll_release(cc->coll);
    if (cc->heap_pe_dev) cudaFree(cc->heap_pe_dev);
    if (cc->abort_host) cudaFreeHost((void *)cc->abort_host);
    (void)cudaGetLastError();
    free(cc);
}

static duet_status_t comm_state(duet_comm_t c, duet_cuda_heap_t *g, duet_cuda_comm_t **out)
{
    if (c->cuda) {
        *out = c->cuda;
        return DUET_OK;
    }
    duet_cuda_comm_t *cc = calloc(1, sizeof *cc);
    if (!cc) return DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "out of host memory");
    size_t bytes = sizeof(int) * (size_t)c->size;
    void *host = NULL, *dev = NULL;
    cudaError_t err;
    if ((err = cudaSetDevice(g->device)) != cudaSuccess ||
        (err = cudaMalloc((void **)&cc->heap_pe_dev, bytes)) != cudaSuccess ||
        (err = cudaMemcpy(cc->heap_pe_dev, c->heap_pe, bytes, cudaMemcpyHostToDevice)) != cudaSuccess ||
        (err = cudaHostAlloc(&host, DUET_CACHELINE, cudaHostAllocMapped | cudaHostAllocPortable)) != cudaSuccess ||
        (cc->abort_host = host, (err = cudaHostGetDevicePointer(&dev, host, 0)) != cudaSuccess)) {
        duet_status_t st = DUET_CUDA_FAIL_RT(err, "duet_device_comm_get: device state of rank %d", c->rank);
        duet_cuda_comm_release(cc);
        return st;
    }
    /* a communicator that already lost a rank (duet_ft.c) hands its kernels the failure */
    *cc->abort_host = atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_acquire);
    cc->abort_dev = dev;
    duet_ft_attach_device(c, cc);
    *out = cc;
    return DUET_OK;
}

static duet_status_t device_comm_get_(duet_comm_t c, duet_device_comm_t *out)
{
    static const char fn[] = "duet_device_comm_get";
    duet_status_t st = duet_comm_check(c, fn);
    if (st) return st;
    if (!out) return DUET_FAIL(DUET_ERR_INVALID_ARG, CUDA, "%s: out is NULL", fn);
    duet_cuda_heap_t *g = duet_cuda_heap_of(c->heap);
    if (!g)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, CUDA, "%s: this communicator has no GPU heap (no GPU on some "
                         "rank, or DUET_CUDA=off)", fn);
    duet_cuda_comm_t *cc = NULL;
    pthread_mutex_lock(g->lock);
    st = comm_state(c, g, &cc);
    pthread_mutex_unlock(g->lock);
    if (st) return st;
    int hp = c->heap_pe[c->rank];
    memset(out, 0, sizeof *out);
    out->heap = g->peer[hp];
    out->stride = g->stride;
    out->heap_bytes = g->part_bytes;
    out->my_pe = c->rank;
    out->n_pes = c->size;
    out->my_heap_pe = hp;
    out->heap_pe = cc->heap_pe_dev;
    out->abort = cc->abort_dev;
    out->sync = (uint64_t *)(void *)(g->peer[hp] + (size_t)c->slot * DUET_CUDA_SYNC_SLOT_BYTES);
    out->sync_epoch = cc->sync_epoch;
    out->peer_heap = g->peer_dev;
    duet_cuda_proxy_handle(g, out);
    return DUET_OK;
}
duet_status_t duet_device_comm_get(duet_comm_t c, duet_device_comm_t *out)
{
    DUET_COMM_CALL(c, "duet_device_comm_get", device_comm_get_(c, out));
}

void duet_cuda_set_abort(duet_comm_t c, duet_status_t status)
{
    if (!c || !c->cuda) return;
    __atomic_store_n(c->cuda->abort_host, (int32_t)status, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- devices */

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int device_count;
static char count_why[128];

static void count_devices(void)
{
    cudaError_t err = cudaGetDeviceCount(&device_count);
    if (err != cudaSuccess) {
        device_count = 0;
        snprintf(count_why, sizeof count_why, "%s", cudaGetErrorString(err));
        (void)cudaGetLastError();
    } else if (device_count == 0) {
        snprintf(count_why, sizeof count_why, "no CUDA device");
    }
}

int duet_cuda_available(void)
{
    pthread_once(&count_once, count_devices);
    const char *v = duet_cfg()->cuda;
    return device_count > 0 && strcasecmp(v, "off") != 0 && strcmp(v, "0") != 0;
}

int duet_cuda_device(duet_comm_t c)
{
    if (duet_comm_check(c, "duet_cuda_device") || !duet_cuda_heap_of(c->heap)) return -1;
    return duet_cuda_heap_of(c->heap)->device;
}

int duet_cuda_describe(char *buf, size_t len)
{
    pthread_once(&count_once, count_devices);
    if (device_count <= 0) {
        snprintf(buf, len, "built (CUDA runtime %d.%d), no GPU here: %s", CUDART_VERSION / 1000,
                 CUDART_VERSION % 1000 / 10, count_why);
        return 0;
    }
    int drv = 0;
    cudaDriverGetVersion(&drv);
    size_t at = (size_t)snprintf(buf, len, "driver %d.%d, %d device(s)%s", drv / 1000, drv % 1000 / 10,
                                 device_count, duet_cuda_available() ? "" : " (DUET_CUDA=off)");
    for (int d = 0; d < device_count && at < len; d++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
        at += (size_t)snprintf(buf + at, len - at, "\n           %d: %s, sm_%d%d, %.1f GiB", d, p.name, p.major,
                               p.minor, (double)p.totalGlobalMem / (1 << 30));
    }
    (void)cudaGetLastError();
    return duet_cuda_available();
}

/*
 * duet_nvshmem/nvshmem_setup.h — NVSHMEM's setup, memory and team calls over Duet (internal;
 * include <nvshmem.h>). Host calls are static inline functions over Duet's C API; the queries
 * that NVSHMEM also offers in kernels (my_pe, n_pes, team_my_pe, ...) work on both sides.
 *
 * Init: nvshmem_init() is duet_init() (ranks from duetrun, mpirun, srun or torchrun);
 * nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, ...) is duet_comm_init_rank() with the id
 * from nvshmemx_get_uniqueid(). Either way the world must get a GPU heap (every rank has a
 * GPU); the calling thread's current device becomes the rank's Duet device.
 */
#ifndef DUET_NVSHMEM_SETUP_H
#define DUET_NVSHMEM_SETUP_H

#include <string.h>
#include "duet_nvshmem/nvshmem_state.h"

/* ---- init and finalize ------------------------------------------------------------------ */

/* The ranks of this host (those whose memory this rank maps), in world order: *node = world
 * when every rank is on this host (then every rank finds the same), else a split by the
 * lowest world rank of each host (collective). */
static inline int nvshmemi_duet_node_team(duet_comm_t world, duet_comm_t *node, const char *call)
{
    void *probe = duet_malloc(world, 8);
    if (!probe) return nvshmemi_duet_status(duet_last_status(), call);
    int n = duet_comm_size(world), first = -1, mapped = 0;
    for (int pe = 0; pe < n; pe++)
        if (duet_ptr(world, probe, pe)) {
            mapped++;
            if (first < 0) first = pe;
        }
    int rc = nvshmemi_duet_status(duet_free(world, probe), call);
    if (rc) return rc;
    if (mapped == n) {
        *node = world;
        return 0;
    }
    return nvshmemi_duet_status(duet_comm_split(world, first, duet_comm_rank(world), node), call);
}

/* Common part of every init: the device, the kernel handles, the predefined teams. */
static inline int nvshmemi_duet_start(duet_comm_t world, const char *call)
{
    nvshmemi_duet_host_t *s = &nvshmemi_duet_host;
    int dev = duet_cuda_device(world);
    if (!duet_cuda_available() || dev < 0) {
        fprintf(stderr, "nvshmem (Duet): %s: no GPU heap (every rank needs a GPU, and DUET_CUDA not off): %s\n",
                call, duet_last_error());
        return NVSHMEMX_ERROR_GPU_NOT_SELECTED;
    }
    if (cudaSetDevice(dev) != cudaSuccess) {
        fprintf(stderr, "nvshmem (Duet): %s: cudaSetDevice(%d) failed\n", call, dev);
        return NVSHMEMX_ERROR_GPU_NOT_SELECTED;
    }
    memset(&s->dev, 0, sizeof s->dev);
    int rc = nvshmemi_duet_status(duet_device_comm_get(world, &s->dev.team[0]), call);
    if (rc) return rc;
    duet_comm_t node = world;
    if ((rc = nvshmemi_duet_node_team(world, &node, call))) return rc;
    s->team[NVSHMEM_TEAM_WORLD] = world;
    s->node = node != world ? node : NULL;
    if (node != world && (rc = nvshmemi_duet_status(duet_device_comm_get(node, &s->dev.team[NVSHMEM_TEAM_SHARED]), call)))
        return rc;
    if (node == world) s->dev.team[NVSHMEM_TEAM_SHARED] = s->dev.team[NVSHMEM_TEAM_WORLD];
    s->team[NVSHMEM_TEAM_SHARED] = s->team[NVSHMEMX_TEAM_NODE] = node;
    s->dev.team[NVSHMEMX_TEAM_NODE] = s->dev.team[NVSHMEM_TEAM_SHARED];
    s->status = NVSHMEM_STATUS_IS_INITIALIZED;
    s->refs = 1;
    return nvshmemi_duet_upload_all();
}

/* Collective over the launcher's ranks. Exits the program when it fails, as NVSHMEM does.
 * A second call only counts a reference (one nvshmem_finalize each). */
static inline void nvshmem_init(void)
{
    nvshmemi_duet_host_t *s = &nvshmemi_duet_host;
    if (s->status == NVSHMEM_STATUS_IS_INITIALIZED) {
        s->refs++;
        return;
    }
    nvshmemi_duet_check(duet_init(), "nvshmem_init");
    s->by_duet_init = 1;
    if (nvshmemi_duet_start(duet_comm_world(), "nvshmem_init")) {
        fprintf(stderr, "nvshmem (Duet): nvshmem_init failed\n");
        exit(1);
    }
}
static inline int nvshmem_init_thread(int requested, int *provided)
{
    (void)requested;
    nvshmem_init();
    if (provided) *provided = NVSHMEM_THREAD_MULTIPLE;
    return 0;
}

/* Rank 0 (of the job to be) makes the id and hands it to the others by any means. */
static inline int nvshmemx_get_uniqueid(nvshmemx_uniqueid_t *uid)
{
    if (!uid) return NVSHMEMX_ERROR_INVALID_VALUE;
    duet_unique_id_t id;
    int rc = nvshmemi_duet_status(duet_get_unique_id(&id), "nvshmemx_get_uniqueid");
    if (rc) return rc;
    for (size_t i = NVSHMEM_DUET_UNIQUEID_BYTES; i < sizeof id.internal; i++)
        if (id.internal[i]) {
            fprintf(stderr, "nvshmem (Duet): nvshmemx_get_uniqueid: Duet's id does not fit in %d bytes\n",
                    NVSHMEM_DUET_UNIQUEID_BYTES);
            return NVSHMEMX_ERROR_INTERNAL;
        }
    uid->version = NVSHMEMX_UNIQUEID_VERSION;
    memcpy(uid->internal, id.internal, NVSHMEM_DUET_UNIQUEID_BYTES);
    return NVSHMEMX_SUCCESS;
}
static inline int nvshmemx_set_attr_uniqueid_args(const int myrank, const int nranks,
                                                  const nvshmemx_uniqueid_t *uid, nvshmemx_init_attr_t *attr)
{
    if (!uid || !attr || nranks < 1 || myrank < 0 || myrank >= nranks) return NVSHMEMX_ERROR_INVALID_VALUE;
    attr->args.uid_args.id = (nvshmemx_uniqueid_t *)uid;
    attr->args.uid_args.myrank = myrank;
    attr->args.uid_args.nranks = nranks;
    return NVSHMEMX_SUCCESS;
}

/* flags 0: as nvshmem_init. NVSHMEMX_INIT_WITH_UNIQUEID: the ranks of attr's uid args.
 * Other flags (MPI communicator, OpenSHMEM job): NVSHMEMX_ERROR_NOT_SUPPORTED. */
static inline int nvshmemx_init_attr(unsigned int flags, nvshmemx_init_attr_t *attr)
{
    nvshmemi_duet_host_t *s = &nvshmemi_duet_host;
    if (flags == 0) {
        nvshmem_init();
        return NVSHMEMX_SUCCESS;
    }
    if (flags != NVSHMEMX_INIT_WITH_UNIQUEID) {
        fprintf(stderr, "nvshmem (Duet): nvshmemx_init_attr: flags 0x%x not supported (only "
                        "NVSHMEMX_INIT_WITH_UNIQUEID; for MPI jobs use nvshmem_init under mpirun)\n", flags);
        return NVSHMEMX_ERROR_NOT_SUPPORTED;
    }
    if (s->status == NVSHMEM_STATUS_IS_INITIALIZED) {
        fprintf(stderr, "nvshmem (Duet): nvshmemx_init_attr: already initialized\n");
        return NVSHMEMX_ERROR_INVALID_VALUE;
    }
    const nvshmemx_uniqueid_args_t *a = attr ? &attr->args.uid_args : NULL;
    if (!a || !a->id || a->nranks < 1 || a->myrank < 0 || a->myrank >= a->nranks) {
        fprintf(stderr, "nvshmem (Duet): nvshmemx_init_attr: no unique id args (nvshmemx_set_attr_uniqueid_args)\n");
        return NVSHMEMX_ERROR_INVALID_VALUE;
    }
    duet_unique_id_t id;
    memset(&id, 0, sizeof id);
    memcpy(id.internal, a->id->internal, NVSHMEM_DUET_UNIQUEID_BYTES);
    duet_comm_t w = NULL;
    int rc = nvshmemi_duet_status(duet_comm_init_rank(&w, a->nranks, id, a->myrank, NULL), "nvshmemx_init_attr");
    if (rc) return rc;
    s->by_duet_init = 0;
    rc = nvshmemi_duet_start(w, "nvshmemx_init_attr");
    if (rc) {
        (void)duet_comm_destroy(w);
        memset(s->team, 0, sizeof s->team);
        s->status = NVSHMEM_STATUS_NOT_INITIALIZED;
    }
    return rc;
}

static inline int nvshmemx_init_status(void) { return nvshmemi_duet_host.status; }

/* Collective. Destroys the teams still alive, then the world (the last of several inits). */
static inline void nvshmem_finalize(void)
{
    nvshmemi_duet_host_t *s = &nvshmemi_duet_host;
    if (s->status != NVSHMEM_STATUS_IS_INITIALIZED || --s->refs > 0) return;
    duet_comm_t w = s->team[0];
    for (int t = NVSHMEM_DUET_FIRST_TEAM; t < NVSHMEM_DUET_MAX_TEAMS; t++)
        if (s->team[t]) nvshmemi_duet_check(duet_comm_destroy(s->team[t]), "nvshmem_finalize (a team)");
    if (s->node) nvshmemi_duet_check(duet_comm_destroy(s->node), "nvshmem_finalize (the host's team)");
    s->node = NULL;
    nvshmemi_duet_check(duet_barrier(w), "nvshmem_finalize");
    if (s->coll_stream) (void)cudaStreamDestroy(s->coll_stream);
    s->coll_stream = NULL;
    memset(s->team, 0, sizeof s->team);
    memset(&s->dev, 0, sizeof s->dev);
    s->status = NVSHMEM_STATUS_NOT_INITIALIZED;
    (void)nvshmemi_duet_upload_all();
    nvshmemi_duet_check(s->by_duet_init ? duet_finalize() : duet_comm_destroy(w), "nvshmem_finalize");
}

static inline void nvshmem_info_get_version(int *major, int *minor)
{
    *major = NVSHMEM_MAJOR_VERSION, *minor = NVSHMEM_MINOR_VERSION;
}
static inline void nvshmem_info_get_name(char *name)
{
    strncpy(name, NVSHMEM_VENDOR_STRING, NVSHMEM_MAX_NAME_LEN - 1);
    name[NVSHMEM_MAX_NAME_LEN - 1] = '\0';
}
static inline void nvshmemx_vendor_get_version_info(int *major, int *minor, int *patch)
{
    *major = NVSHMEM_VENDOR_MAJOR_VERSION, *minor = NVSHMEM_VENDOR_MINOR_VERSION;
    *patch = NVSHMEM_VENDOR_PATCH_VERSION;
}

/* ---- pes and teams (host and device) ---------------------------------------------------- */

/* team_my_pe / team_n_pes: -1 for NVSHMEM_TEAM_INVALID (as NVSHMEM; it is what a split leaves on
 * the pes outside the new team) and for any handle that names no team of this pe. */

static __host__ __device__ __forceinline__ int nvshmem_team_my_pe(nvshmem_team_t team)
{
#ifdef __CUDA_ARCH__
    return team >= 0 && team < NVSHMEM_DUET_MAX_TEAMS && nvshmemi_duet_d.team[team].n_pes
               ? nvshmemi_duet_d.team[team].my_pe : -1;
#else
    duet_comm_t c = nvshmemi_duet_team(team);
    return c ? duet_comm_rank(c) : -1;
#endif
}
static __host__ __device__ __forceinline__ int nvshmem_team_n_pes(nvshmem_team_t team)
{
#ifdef __CUDA_ARCH__
    return team >= 0 && team < NVSHMEM_DUET_MAX_TEAMS && nvshmemi_duet_d.team[team].n_pes
               ? nvshmemi_duet_d.team[team].n_pes : -1;
#else
    duet_comm_t c = nvshmemi_duet_team(team);
    return c ? duet_comm_size(c) : -1;
#endif
}
static __host__ __device__ __forceinline__ int nvshmem_my_pe(void) { return nvshmem_team_my_pe(NVSHMEM_TEAM_WORLD); }
static __host__ __device__ __forceinline__ int nvshmem_n_pes(void) { return nvshmem_team_n_pes(NVSHMEM_TEAM_WORLD); }

/* pe src_pe of src in team dest, or -1 when it is not a member. */
static __host__ __device__ __forceinline__ int nvshmem_team_translate_pe(nvshmem_team_t src, int src_pe,
                                                                         nvshmem_team_t dest)
{
#ifdef __CUDA_ARCH__
    if (src < 0 || src >= NVSHMEM_DUET_MAX_TEAMS || dest < 0 || dest >= NVSHMEM_DUET_MAX_TEAMS) return -1;
    const duet_device_comm_t &a = nvshmemi_duet_d.team[src], &b = nvshmemi_duet_d.team[dest];
    if (src_pe < 0 || src_pe >= a.n_pes || !b.n_pes) return -1;
    int w = a.heap_pe[src_pe]; /* the world's pe (the world owns the heap) */
    for (int q = 0; q < b.n_pes; q++)
        if (b.heap_pe[q] == w) return q;
    return -1;
#else
    duet_comm_t a = nvshmemi_duet_team(src), b = nvshmemi_duet_team(dest);
    return a && b ? duet_comm_translate_rank(a, src_pe, b) : -1;
#endif
}

/* Collective over parent: its pes start, start + stride, ... (size of them) form a new team;
 * the others get NVSHMEM_TEAM_INVALID. config is ignored. Returns 0, or nonzero on error. */
static inline int nvshmem_team_split_strided(nvshmem_team_t parent, int start, int stride, int size,
                                             const nvshmem_team_config_t *config, long config_mask,
                                             nvshmem_team_t *new_team)
{
    (void)config, (void)config_mask;
    nvshmemi_duet_host_t *s = &nvshmemi_duet_host;
    duet_comm_t p = nvshmemi_duet_team(parent), c = NULL;
    if (new_team) *new_team = NVSHMEM_TEAM_INVALID;
    if (!p || !new_team) {
        fprintf(stderr, "nvshmem (Duet): nvshmem_team_split_strided: bad parent team %d\n", (int)parent);
        return NVSHMEMX_ERROR_INVALID_VALUE;
    }
    int t = NVSHMEM_DUET_FIRST_TEAM;
    while (t < NVSHMEM_DUET_MAX_TEAMS && s->team[t]) t++;
    /* every member takes part even with no free handle, so the others do not hang */
    int rc = nvshmemi_duet_status(duet_comm_split_strided(p, start, stride, size, &c), "nvshmem_team_split_strided");
    if (rc || !c) return rc;
    if (t == NVSHMEM_DUET_MAX_TEAMS) {
        (void)duet_comm_destroy(c);
        fprintf(stderr, "nvshmem (Duet): nvshmem_team_split_strided: more than %d teams (NVSHMEM_DUET_MAX_TEAMS)\n",
                NVSHMEM_DUET_MAX_TEAMS);
        return NVSHMEMX_ERROR_OUT_OF_MEMORY;
    }
    rc = nvshmemi_duet_status(duet_device_comm_get(c, &s->dev.team[t]), "nvshmem_team_split_strided");
    if (rc) {
        (void)duet_comm_destroy(c);
        return rc;
    }
    s->team[t] = c;
    *new_team = t;
    return nvshmemi_duet_upload_all();
}

/* Collective over the team's members. The predefined teams cannot be destroyed. */
static inline void nvshmem_team_destroy(nvshmem_team_t team)
{
    nvshmemi_duet_host_t *s = &nvshmemi_duet_host;
    if (team < NVSHMEM_DUET_FIRST_TEAM || !nvshmemi_duet_team(team)) return;
    nvshmemi_duet_check(duet_comm_destroy(s->team[team]), "nvshmem_team_destroy");
    s->team[team] = NULL;
    memset(&s->dev.team[team], 0, sizeof s->dev.team[team]);
    if (nvshmemi_duet_upload_all()) nvshmemi_duet_die("nvshmem_team_destroy", "cannot update the device state");
}

/* ---- symmetric memory: Duet's GPU heap -------------------------------------------------- */

/* Collective over the world, same size everywhere; 256-byte aligned; NULL for 0 bytes or
 * when the heap (DUET_CUDA_HEAP_SIZE, default 1 GiB per pe) is full. */
static inline void *nvshmem_malloc(size_t size)
{
    duet_comm_t w = nvshmemi_duet_world("nvshmem_malloc");
    if (size == 0) return NULL;
    void *p = duet_malloc_device(w, size);
    if (!p) fprintf(stderr, "nvshmem (Duet): nvshmem_malloc(%zu): %s\n", size, duet_last_error());
    return p;
}
/* alignment: a power of two; beyond 256 bytes the block is over-allocated (at most
 * NVSHMEM_DUET_MAX_ALIGNED such blocks live at once). */
static inline void *nvshmem_align(size_t alignment, size_t size)
{
    nvshmemi_duet_host_t *s = &nvshmemi_duet_host;
    if (alignment == 0 || (alignment & (alignment - 1))) {
        fprintf(stderr, "nvshmem (Duet): nvshmem_align: alignment %zu is not a power of two\n", alignment);
        return NULL;
    }
    if (alignment <= 256) return nvshmem_malloc(size);
    int i = 0;
    while (i < NVSHMEM_DUET_MAX_ALIGNED && s->aligned[i].base) i++;
    if (i == NVSHMEM_DUET_MAX_ALIGNED || size == 0) {
        if (size) fprintf(stderr, "nvshmem (Duet): nvshmem_align: too many blocks aligned beyond 256 bytes\n");
        return NULL;
    }
    char *base = (char *)nvshmem_malloc(size + alignment - 256);
    if (!base) return NULL;
    char *user = (char *)(((uintptr_t)base + alignment - 1) & ~(uintptr_t)(alignment - 1));
    s->aligned[i].base = base, s->aligned[i].user = user;
    return user;
}
static inline void nvshmem_free(void *ptr)
{
    nvshmemi_duet_host_t *s = &nvshmemi_duet_host;
    duet_comm_t w = nvshmemi_duet_world("nvshmem_free");
    for (int i = 0; ptr && i < NVSHMEM_DUET_MAX_ALIGNED; i++)
        if (s->aligned[i].user == ptr) {
            ptr = s->aligned[i].base;
            s->aligned[i].base = s->aligned[i].user = NULL;
            break;
        }
    nvshmemi_duet_check(duet_free(w, ptr), "nvshmem_free");
}
/* Zeroed on every pe before it returns (a memset, then a barrier). */
static inline void *nvshmem_calloc(size_t count, size_t size)
{
    duet_comm_t w = nvshmemi_duet_world("nvshmem_calloc");
    if (size && count > SIZE_MAX / size) return NULL;
    void *p = nvshmem_malloc(count * size);
    if (!p) return NULL;
    if (cudaMemset(p, 0, count * size) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
        nvshmemi_duet_die("nvshmem_calloc", "cudaMemset failed");
    nvshmemi_duet_check(duet_barrier(w), "nvshmem_calloc");
    return p;
}

/* Where this process (host: a device pointer; device: this kernel) reaches dest on pe, or
 * NULL when pe's memory is not mapped here or dest is not in the heap. */
static __host__ __device__ __forceinline__ void *nvshmem_ptr(const void *dest, int pe)
{
#ifdef __CUDA_ARCH__
    const duet_device_comm_t &h = NVSHMEMI_DUET_W;
    const char *d = (const char *)dest;
    if (pe < 0 || pe >= h.n_pes || d < h.heap || d >= h.heap + h.heap_bytes) return NULL;
    if (!h.peer_heap[h.heap_pe[pe]]) return NULL;
    return (void *)duet_dev_ptr(h, d, pe);
#else
    return duet_ptr(nvshmemi_duet_world("nvshmem_ptr"), dest, pe);
#endif
}

/* ---- kernel launch ---------------------------------------------------------------------- */

/* Collective: launches func with the whole grid resident at once (checked: it fails with
 * NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED when it cannot be), cooperatively where the device
 * accepts it. Done here, with the program's CUDA runtime, which knows the program's kernels. */
static inline int nvshmemx_collective_launch(const void *func, dim3 grid, dim3 block, void **args,
                                             size_t shmem, cudaStream_t stream)
{
    (void)nvshmemi_duet_world("nvshmemx_collective_launch");
    unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    int dev = 0, per_sm = 0, sms = 0, coop = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, func, (int)threads, shmem);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev);
    if (err != cudaSuccess || !blocks || blocks > (unsigned long long)per_sm * (unsigned long long)sms) {
        fprintf(stderr, "nvshmem (Duet): nvshmemx_collective_launch: %llu blocks of %llu threads cannot all be "
                        "resident (%d per SM x %d SMs)%s%s\n", blocks, threads, per_sm, sms,
                err != cudaSuccess ? ": " : "", err != cudaSuccess ? cudaGetErrorString(err) : "");
        return NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED;
    }
    if (blocks > 1 && coop) {
        if (cudaLaunchCooperativeKernel(func, grid, block, args, shmem, stream) == cudaSuccess) return 0;
        (void)cudaGetLastError(); /* refused (e.g. under MPS): all resident anyway, launch normally */
    }
    err = cudaLaunchKernel(func, grid, block, args, shmem, stream);
    if (err != cudaSuccess) {
        fprintf(stderr, "nvshmem (Duet): nvshmemx_collective_launch: %s\n", cudaGetErrorString(err));
        return NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED;
    }
    return 0;
}
/* Blocks of (block threads, shmem bytes) that may run at once on this GPU: the largest grid
 * nvshmemx_collective_launch accepts. */
static inline int nvshmemx_collective_launch_query_gridsize(const void *func, dim3 block, void **args,
                                                            size_t shmem, int *gridsize)
{
    (void)args;
    int dev = 0, per_sm = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, func, (int)(block.x * block.y * block.z), shmem) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return NVSHMEMX_ERROR_INTERNAL;
    *gridsize = per_sm * sms;
    return 0;
}

#endif /* DUET_NVSHMEM_SETUP_H */

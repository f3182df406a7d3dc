/*
 * The GPU schedule executor, host side: the executor's symmetric scratch (allocated by the
 * first call that needs it: collective), device copies of schedules (cached by call shape),
 * the step counters (their own memory: zero between calls), the local work memory (fp32
 * copies of fp16 / bf16 operands, the schedule's scratch), and the launches: widen, execute,
 * finish. The kernel and the protocol are in
 * duet_cuda_exec.cu, the layout in duet_cuda_exec_kern.h.
 *
 * CUDA graphs: the executor's kernel takes nothing from the host that changes from call to
 * call (its counters live in device memory), so a captured call replays as it ran. What it
 * points to must then outlive the graph: once any call was captured, a schedule evicted from
 * the cache and outgrown counters or work space are kept (retired) until the state goes.
 * Set-up during a capture (a new shape's schedule, more work space) allocates in relaxed
 * capture mode and copies on the state's own stream, which is never captured.
 *
 * Queuing only: set-up outside a capture waits for nothing on the GPU (new_memory, drop; the
 * executor's own pool, pool_of).
 */
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_dtype.h"
#include "cuda/duet_cuda_coll_kern.h"
#include "cuda/duet_cuda_coll_state.h"
#include "cuda/duet_cuda_driver.h"

#define CHANNEL_BYTES ((size_t)256 << 10) /* a call gets one channel per this many bytes */

static int max_channels(int n)
{
    size_t per = (size_t)n * DUET_CUDA_EXEC_SLOTS * DUET_CUDA_EXEC_SLOT;
    size_t mc = DUET_CUDA_EXEC_INBOX_BUDGET / per;
    return mc < 1 ? 1 : mc > DUET_CUDA_EXEC_MAX_CHAN ? DUET_CUDA_EXEC_MAX_CHAN : (int)mc;
}

int duet_cuda_exec_channels_for(int nranks, size_t bytes)
{
    size_t want = (bytes + CHANNEL_BYTES - 1) / CHANNEL_BYTES;
    int mc = max_channels(nranks);
    return want < 1 ? 1 : want > (size_t)mc ? mc : (int)want;
}

int duet_cuda_exec_channels(duet_comm_t c, size_t bytes) { return duet_cuda_exec_channels_for(c->size, bytes); }

void duet_cuda_exec_release(duet_cuda_coll_state_t *s)
{
    for (int i = 0; i < DUET_CUDA_SCHED_CACHE; i++)
        if (s->sched[i].steps) cudaFree(s->sched[i].steps);
    if (s->work) cudaFree(s->work);
    if (s->stepdone) cudaFree(s->stepdone);
    for (int i = 0; i < s->nretired; i++) cudaFree(s->retired[i]);
    free(s->retired);
    if (s->pool) cudaMemPoolDestroy(s->pool); /* (deferred by CUDA while a free is still queued) */
    (void)cudaGetLastError();
}

/* The executor's pool, made at its first eager allocation: memory freed in stream order on a
 * call's stream is reused only once that free has run (CUDA's default pools may instead make
 * the allocating stream wait for the freeing one; the state's own stream must wait for no
 * call's, since a set-up copy from pageable memory waits for it, and with it the host). 1
 * when there is one; 0 when the device has none (then s->no_pool, for good). */
static int pool_of(duet_cuda_coll_state_t *s)
{
    if (s->pool) return 1;
    if (s->no_pool) return 0;
    int dev = 0, supported = 0;
    struct cudaMemPoolProps props = {0};
    cudaMemPool_t pool = NULL;
    int zero = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, dev) != cudaSuccess || !supported) {
        (void)cudaGetLastError();
        s->no_pool = 1;
        return 0;
    }
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    if (cudaMemPoolCreate(&pool, &props) != cudaSuccess ||
        cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &zero) != cudaSuccess) {
        if (pool) cudaMemPoolDestroy(pool);
        (void)cudaGetLastError();
        s->no_pool = 1;
        return 0;
    }
    s->pool = pool;
    return 1;
}

/* Gives up device memory p that a call used. A graph may use it once any call was captured:
 * kept until the state goes. Else freed in stream order on cs, the stream of the call being
 * queued, which is behind every earlier call (duet_cuda_coll_begin): no host wait. Without a
 * stream-ordered allocator, freed once the last call is done (a host wait). */
static duet_status_t drop(duet_cuda_coll_state_t *s, void *p, cudaStream_t cs, const char *fn)
{
    if (!p) return DUET_OK;
    if (s->graphs) {
        if (s->nretired == s->retired_cap) {
            int cap = s->retired_cap ? 2 * s->retired_cap : 16;
            void **r = realloc(s->retired, sizeof *r * (size_t)cap);
            if (!r) return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory", fn);
            s->retired = r;
            s->retired_cap = cap;
        }
        s->retired[s->nretired++] = p;
        return DUET_OK;
    }
    cudaError_t err;
    if (s->pool) { /* (every eager allocation came from it; a captured call's are retired) */
        if ((err = cudaFreeAsync(p, cs)) != cudaSuccess)
            return DUET_CUDA_FAIL_RT(err, "%s: freeing the executor's old memory in stream order", fn);
        return DUET_OK;
    }
    if (s->have_last && (err = cudaEventSynchronize(s->last)) != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: waiting for the last GPU collective", fn);
    cudaFree(p);
    return DUET_OK;
}

/* bytes of new device memory, filled from `host` (NULL: zeroed), for a call about to be queued
 * on cs. Eagerly: from the executor's pool (pool_of), filled on the state's own stream, and cs
 * waits for that (the host waits for nothing on the GPU: a pageable copy waits for the state's
 * stream alone, which waits for nothing of the calls', and returns once staged). While
 * the call is being captured, or without a pool: cudaMalloc (relaxed capture mode), filled on
 * the state's own stream, and the host waits for that fill alone. */
static cudaError_t new_memory(duet_cuda_coll_state_t *s, size_t bytes, const void *host, cudaStream_t cs, void **out)
{
    void *p = NULL;
    cudaError_t err;
    *out = NULL;
    if (!s->capturing && pool_of(s)) {
        err = cudaMallocFromPoolAsync(&p, bytes ? bytes : 1, s->pool, s->aux);
        if (err == cudaSuccess)
            err = host ? cudaMemcpyAsync(p, host, bytes, cudaMemcpyHostToDevice, s->aux) : cudaMemsetAsync(p, 0, bytes, s->aux);
        if (err == cudaSuccess) err = cudaEventRecord(s->aux_done, s->aux);
        if (err == cudaSuccess) err = cudaStreamWaitEvent(cs, s->aux_done, 0);
        if (err != cudaSuccess) {
            if (p) (void)cudaFreeAsync(p, s->aux);
            return err;
        }
        *out = p;
        return cudaSuccess;
    }
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (s->capturing) (void)cudaThreadExchangeStreamCaptureMode(&mode);
    err = cudaMalloc(&p, bytes ? bytes : 1);
    if (err == cudaSuccess)
        err = host ? cudaMemcpyAsync(p, host, bytes, cudaMemcpyHostToDevice, s->aux) : cudaMemsetAsync(p, 0, bytes, s->aux);
    if (err == cudaSuccess) err = cudaStreamSynchronize(s->aux);
    if (s->capturing) (void)cudaThreadExchangeStreamCaptureMode(&mode);
    if (err != cudaSuccess && p) cudaFree(p);
    *out = err == cudaSuccess ? p : NULL;
    return err;
}

duet_status_t duet_cuda_exec_prepare(duet_comm_t c, duet_cuda_coll_state_t *s, const char *fn)
{
    if (s->exec_scratch) return DUET_OK;
    int mc = max_channels(c->size);
    size_t counters = duet_cuda_exec_counter_bytes(c->size, mc);
    char *p = duet_malloc_device(c, duet_cuda_exec_scratch_bytes(c->size, mc));
    if (!p) return duet_error_wrap(DUET_ERR_NO_MEMORY, "the GPU executor's inboxes"); /* message set */
    cudaError_t err;
    if ((err = cudaMemset(p, 0, counters)) != cudaSuccess || (err = cudaDeviceSynchronize()) != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: zeroing the GPU executor's counters", fn);
    duet_status_t st = duet_barrier(c); /* every rank's counters are zero before anyone posts */
    if (st) return st;
    s->exec_scratch = p;
    s->exec_maxchan = mc;
    return DUET_OK;
}

/* Device memory `*mem` of at least `bytes` (*cap now), zeroed when new; the old memory is
 * dropped (drop). */
static duet_status_t grow(duet_cuda_coll_state_t *s, char **mem, size_t *cap, size_t bytes, const char *what,
                          cudaStream_t cs, const char *fn)
{
    if (bytes <= *cap) return DUET_OK;
    duet_status_t st = drop(s, *mem, cs, fn);
    if (st) return st;
    *mem = NULL;
    *cap = 0;
    size_t want = bytes + bytes / 4;
    void *p = NULL;
    cudaError_t err = new_memory(s, want, NULL, cs, &p);
    if (err != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "%s: %zu bytes of zeroed GPU memory for the executor's %s", fn, want, what);
    *mem = p;
    *cap = want;
    return DUET_OK;
}

/* The device copy of x->plan: from the cache when the shape was run before. */
static duet_status_t sched_get(duet_comm_t c, duet_cuda_coll_state_t *s, const duet_cuda_exec_call_t *x,
                               cudaStream_t cs, duet_cuda_sched_entry_t **out, const char *fn)
{
    uint64_t h = (x->key[0] * 0x9e3779b97f4a7c15ull) ^ (x->key[1] * 0xc2b2ae3d27d4eb4full) ^ x->key[2];
    duet_cuda_sched_entry_t *e = &s->sched[h % DUET_CUDA_SCHED_CACHE];
    if (e->steps && !memcmp(e->key, x->key, sizeof e->key)) {
        *out = e;
        return DUET_OK;
    }
    const duet_sched_t *p = x->plan;
    int n = c->size, ns = p->nsteps, nlocal = 0;
    size_t bytes = sizeof(duet_cuda_step_t) * (size_t)ns + sizeof(int32_t) * (2 * (size_t)n + (size_t)ns);
    duet_cuda_step_t *host = malloc(bytes ? bytes : 1);
    if (!host) return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory", fn);
    int32_t *heads = (int32_t *)(host + ns), *locals = heads + 2 * n;
    int32_t *tails = malloc(sizeof(int32_t) * 2 * (size_t)n);
    if (!tails) {
        free(host);
        return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory", fn);
    }
    for (int q = 0; q < 2 * n; q++) heads[q] = tails[q] = -1;
    for (int i = 0; i < ns; i++) {
        const duet_step_t *st = &p->steps[i];
        host[i] = (duet_cuda_step_t){st->kind, st->src_buf, st->dst_buf, 0, st->peer, st->dep, -1,
                                     st->src_off, st->dst_off, st->bytes};
        if (st->kind < DUET_STEP_SEND) {
            locals[nlocal++] = i;
            continue;
        }
        int q = 2 * st->peer + (st->kind != DUET_STEP_SEND);
        if (tails[q] >= 0) host[tails[q]].next = i;
        else heads[q] = i;
        tails[q] = i;
    }
    free(tails);
    if (e->steps) { /* the slot's old schedule (kernels may still read it: drop) */
        duet_status_t st = drop(s, e->steps, cs, fn);
        e->steps = NULL;
        memset(e->key, 0, sizeof e->key);
        if (st) {
            free(host);
            return st;
        }
    }
    void *dev = NULL;
    cudaError_t err = new_memory(s, bytes, host, cs, &dev);
    free(host);
    if (err != cudaSuccess) return DUET_CUDA_FAIL_RT(err, "%s: copying a schedule of %d steps to the GPU", fn, ns);
    memcpy(e->key, x->key, sizeof e->key);
    e->steps = dev;
    e->nsteps = ns;
    e->nlocal = nlocal;
    *out = e;
    return DUET_OK;
}

static size_t round256(size_t b) { return (b + 255) & ~(size_t)255; }

duet_status_t duet_cuda_exec_run(duet_comm_t c, duet_cuda_coll_state_t *s, const duet_cuda_exec_call_t *x,
                                 cudaStream_t cs, const char *fn)
{
    const duet_sched_t *p = x->plan;
    if (p->nsteps == 0) return DUET_OK;
    if (!s->exec_scratch) /* made by duet_cuda_coll_prepare */
        return DUET_FAIL(DUET_ERR_INTERNAL, COLL, "%s: the GPU executor's scratch is missing", fn);
    duet_status_t st;
    duet_cuda_sched_entry_t *e = NULL;
    if ((st = sched_get(c, s, x, cs, &e, fn))) return st;
    int n = c->size;
    size_t shared = duet_cuda_exec_shared_bytes(n, e->nsteps, e->nlocal);
    if (shared > DUET_CUDA_EXEC_SHARED_MAX)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "%s: a schedule of %d steps (%d ranks) is too long for the GPU "
                         "executor's shared memory; force an algorithm with fewer steps (DUET_ALGO)", fn,
                         e->nsteps, n);
    int wide = x->cdt != x->dt;
    size_t ce = duet_datatype_size(x->cdt);
    /* the step counters and the leaving counter: zero between calls (each call leaves them so),
     * in memory of their own — never where another call's data went */
    if ((st = grow(s, &s->stepdone, &s->stepdone_bytes, sizeof(uint32_t) * ((size_t)e->nsteps + 1), "step counters",
                   cs, fn)))
        return st;
    /* work: wide send | wide recv | the schedule's scratch */
    size_t wsend = wide ? round256(x->send_count * ce) : 0, wrecv = wide ? round256(x->recv_count * ce) : 0;
    if ((st = grow(s, &s->work, &s->work_bytes, wsend + wrecv + round256(p->tmp_bytes) + 256, "work space", cs, fn)))
        return st;
    char *wide_send = s->work, *wide_recv = wide_send + wsend, *tmp = wide_recv + wrecv;
    int err;
    if (wide && x->send && x->send_count) {
        duet_cuda_conv_args_t w = {x->send, wide_send, x->send_count, (int)x->dt, 0};
        if ((err = duet_cuda_widen_launch(&w, cs)) != cudaSuccess)
            return DUET_CUDA_FAIL_RT((cudaError_t)err, "%s: launching the fp32 widening", fn);
    }
    double tmo = duet_cfg()->wait_timeout;
    duet_cuda_exec_args_t a = {
        .h = s->h, .scratch = s->exec_scratch, .steps = e->steps, .heads = (const int32_t *)(e->steps + e->nsteps),
        .locals = (const int32_t *)(e->steps + e->nsteps) + 2 * n, .stepdone = (uint32_t *)(void *)s->stepdone,
        .leaving = (uint32_t *)(void *)s->stepdone + e->nsteps, .nsteps = e->nsteps, .nlocal = e->nlocal,
        .buf = {wide ? wide_send : (char *)(uintptr_t)x->send, wide ? wide_recv : (char *)x->recv, tmp},
        .dt = (int)x->cdt, .op = x->op == DUET_AVG ? DUET_SUM : (int)x->op, .elem = (int)ce, .nchan = x->nchan,
        .maxchan = s->exec_maxchan, .timeout_ns = tmo > 0 ? (int64_t)(tmo * 1e9) : 0, .sig = x->sig,
        .sigline = (uint64_t *)(void *)(s->scratch + duet_cuda_coll_sig_off(n)), .fail = s->fail_dev};
    if ((err = duet_cuda_exec_launch(&a, shared, cs)) != cudaSuccess)
        return DUET_CUDA_FAIL_RT((cudaError_t)err, "%s: launching the schedule executor (%d channels, %d steps)", fn,
                                 x->nchan, e->nsteps);
    if (x->writes_recv && x->recv_count && (wide || x->op == DUET_AVG)) {
        duet_cuda_conv_args_t f = {wide ? wide_recv : x->recv, x->recv, x->recv_count, (int)x->dt,
                                   x->op == DUET_AVG ? n : 0};
        if ((err = duet_cuda_finish_launch(&f, cs)) != cudaSuccess)
            return DUET_CUDA_FAIL_RT((cudaError_t)err, "%s: launching the result's rounding / division", fn);
    }
    return DUET_OK;
}

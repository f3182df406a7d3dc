/*
 * duet_cuda_proxy.c — the GPU proxy thread (docs/NETWORK.md 2.9; the ring:
 * include/duet/duet_proxy_ring.h; the message boxes: src/proxy/duet_proxy_inbox.h).
 *
 * One thread per process and GPU heap. Each sweep it
 *   1. serves its inbox: messages of every origin, in order, applied to my GPU part on the
 *      proxy's stream and answered after the stream has completed them;
 *   2. harvests the answers to its own messages (acks): a get's data goes to the device,
 *      blocking gets and atomics are completed;
 *   3. advances the ring command in progress, then takes the next one (tickets in order):
 *        PUT     chunks: device -> pinned stage (cudaMemcpyAsync on the staging stream), then
 *                one message per chunk; while a chunk is sent the next one is staged into the
 *                other of two stage frames (after the last chunk: the first of the next
 *                command, when it is a put already published). A put of at most 8 bytes
 *                carries them in the command (DUET_PROXY_INLINE): no staging. The signal of a
 *                put_signal is one more message after the data. Complete (source reusable) once
 *                the last chunk is staged and sent.
 *        GET     one request per chunk; complete when the last chunk's reply is copied in.
 *        AMO     one request; complete when its reply (the old value) is back.
 *        SIGNAL  one message.
 *        QUIET   noted with the number of messages sent so far, and the next command taken at
 *                once (a quiet does not drain the pipeline: with one quiet per block, as device
 *                code writes, draining made every quiet a round trip); complete when every
 *                message it counted is answered (applied at its target) and harvested. Returns
 *                the first failure of an operation it covers that no earlier quiet reported.
 *      A message needs room in the target's box (flow control): the command waits, the sweeps
 *      go on serving the inbox, so two proxies never wait on each other.
 *
 * Order (the device API's fence): commands leave the ring in ticket order, a thread's commands
 * get increasing tickets in program order, the proxy sends them in that order, and the target
 * applies one origin's messages in arrival order, each on one stream, synchronized before the
 * next: so per (origin, target) everything is applied in issue order, a put_signal's signal
 * after its data, and a fence needs no command at all. Against the kernel's own stores: a
 * producer publishes a command with st.release.sys after its stores, and the proxy reads the
 * source only after it saw the command (acquire), so a put carries what the thread wrote.
 *
 * Signals and atomics at the target are one-thread kernels on the proxy's stream
 * (duet_cuda_k_amo): atomicAdd_system / atomicExch_system after __threadfence_system, so an
 * ADD is atomic against concurrent device-side atomics of local pes (a copy-engine write could
 * not be), and a SET is a single-copy-atomic exchange ordered after the data copies that the
 * stream ran before it. They need one free SM slot.
 *
 * Failures: the root communicator's abort word, a dead target (duet_ft_is_dead), an endpoint
 * error, or no progress for DUET_WAIT_TIMEOUT: the commands concerned complete with the status
 * (blocking device calls that return int return it; quiet returns it), and on a timeout or an
 * endpoint error the root's GPU abort word is set too, so every waiting kernel returns.
 *
 * GPUDirect: where UCX can reach GPU memory (ucp_mem_map of the GPU part accepted, a CUDA-aware
 * UCX with GPUDirect RDMA), a PUT could be one ucp_put_nbx from laddr straight into the
 * target's part and a signal a remote atomic, with no target-side work: see put_chunk's
 * GPUDIRECT note (duet_cuda_proxy_origin.c). Not built: Debian's UCX and the device machine's
 * have no CUDA support.
 *
 * This file: the thread's sweep, start and stop, the host quiet. Step 1 (the target side):
 * duet_cuda_proxy_target.c; steps 2 and 3 (the origin side): duet_cuda_proxy_origin.c; the
 * state they share: duet_cuda_proxy_state.h.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/duet_cpus.h"
#include "core/duet_ft.h"
#include "cuda/duet_cuda_driver.h"
#include "cuda/duet_cuda_proxy.h"
#include "cuda/duet_cuda_proxy_state.h"
#include "cuda/duet_cuda_rma_kern.h"
#include "cuda/duet_cuda_state.h"
#include "proxy/duet_proxy_inbox.h"
#include "tport/duet_tport.h"
#include "duet/duet_proxy_ring.h"

_Static_assert((int)DUET_PROXY_AMO_FETCH == (int)DUET_AMO_FETCH && (int)DUET_PROXY_AMO_SET == (int)DUET_AMO_SET &&
                   (int)DUET_PROXY_AMO_SWAP == (int)DUET_AMO_SWAP && (int)DUET_PROXY_AMO_CSWAP == (int)DUET_AMO_CSWAP &&
                   (int)DUET_PROXY_AMO_ADD == (int)DUET_AMO_ADD && (int)DUET_CUDA_K_ADD == (int)DUET_AMO_ADD,
               "the ring's atomic ops follow duet_amo_op_t (and the kernels' DUET_CUDA_K_*)");

/* ---------------------------------------------------------------- the thread */
static void *proxy_main(void *arg)
{
    duet_cuda_proxy_t *px = arg;
    duet_log_set_rank(px->g->my_pe);
    duet_cpus_place_helper(&px->root->helper_cpus, px->g->my_pe, "the GPU proxy"); /* off the rank's core */
    if (cudaSetDevice(px->g->device) != cudaSuccess) {
        DUET_LOG(WARN, CUDA, "GPU proxy of rank %d: cannot use device %d: device calls to remote pes will time out",
                 px->g->my_pe, px->g->device);
        return NULL;
    }
    duet_wait_ctx_t ctx = px->root->wait_ctx; /* its doorbell (sleep), net progress */
    ctx.abort_flag = NULL;                   /* the abort is handled command by command */
    duet_waiter_t w;
    int waiting = 0, was_outstanding = 0;
    while (!atomic_load_explicit(&px->stop, memory_order_acquire)) {
        int moved = 0;
        if (ctx.progress) ctx.progress(ctx.progress_arg);
        for (int pe = 0; pe < px->ib->npes; pe++) {
            if (pe == px->g->my_pe) continue;
            moved |= duet_cuda_proxy_serve(px, pe);
            moved |= duet_cuda_proxy_harvest(px, pe);
            if (!px->failed[pe] && px->harvested[pe] != px->ib->sent[pe] && duet_ft_is_dead(px->root, pe))
                duet_cuda_proxy_fail_pe(px, pe,
                                        DUET_FAIL(DUET_ERR_PEER_FAILED, CUDA, "GPU proxy of rank %d: rank %d died with "
                                                  "device operations outstanding", px->g->my_pe, pe)), moved = 1;
        }
        for (int k = 0; k < 64; k++) { /* a burst of commands, then the inbox again */
            if (px->busy && !duet_cuda_proxy_advance(px)) break;
            if (!px->busy && !duet_cuda_proxy_take(px)) break;
            moved = 1;
        }
        moved |= duet_cuda_proxy_complete_quiets(px);
        int out = duet_cuda_proxy_outstanding(px);
        if (!out) atomic_store_explicit(&px->settled, px->next, memory_order_release);
        if (moved || out != was_outstanding) {
            waiting = 0;
            was_outstanding = out;
            continue;
        }
        if (!waiting) { /* a deadline only while something is outstanding */
            ctx.timeout_s = out ? duet_cfg()->wait_timeout : 0;
            duet_waiter_init(&w, &ctx, "%s", out ? "GPU proxy: answers of remote pes" : "GPU proxy: idle", 0, 0, -1);
            waiting = 1;
        }
        if (duet_waiter_turn(&w) == DUET_ERR_TIMEOUT && out) {
            duet_cuda_proxy_time_out(px);
            waiting = 0;
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- start / stop */

static void proxy_free(duet_cuda_proxy_t *px)
{
    if (!px) return;
    if (px->stream) cudaStreamDestroy(px->stream);
    if (px->qstream) cudaStreamDestroy(px->qstream);
    if (px->sstream) cudaStreamDestroy(px->sstream);
    for (int f = 0; f < 2; f++)
        if (px->staged[f]) cudaEventDestroy(px->staged[f]);
    if (px->ring) cudaFreeHost(px->ring);
    if (px->stage) cudaFreeHost(px->stage);
    if (px->rstage) cudaFreeHost(px->rstage);
    if (px->amo_host) cudaFreeHost(px->amo_host);
    if (px->block_pinned) cudaHostUnregister(px->ib->block);
    if (px->head_dev) cudaFree(px->head_dev);
    (void)cudaGetLastError();
    duet_proxy_inbox_destroy(px->ib);
    free(px->pend);
    free(px->harvested);
    free(px->cmd_err);
    free(px->failed);
    free(px);
}

void duet_cuda_proxy_stop(duet_cuda_heap_t *g)
{
    if (!g || !g->proxy) return;
    duet_cuda_proxy_t *px = g->proxy;
    if (px->running) {
        atomic_store_explicit(&px->stop, 1, memory_order_release);
        pthread_join(px->thread, NULL);
    }
    g->proxy = NULL;
    proxy_free(px);
}

static duet_status_t proxy_make(duet_comm_t root, duet_cuda_proxy_t *px)
{
    duet_cuda_heap_t *g = px->g;
    int n = g->npes;
    px->pend = calloc((size_t)n * PROXY_BOX_SLOTS, sizeof *px->pend);
    px->harvested = calloc((size_t)n, sizeof *px->harvested);
    px->cmd_err = calloc((size_t)n, sizeof *px->cmd_err);
    px->failed = calloc((size_t)n, sizeof *px->failed);
    if (!px->pend || !px->harvested || !px->cmd_err || !px->failed)
        return DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "GPU proxy: out of host memory");
    void *ring = NULL, *stage = NULL, *rstage = NULL, *amo = NULL, *dev = NULL;
    size_t frame = DUET_PROXY_HDR + px->ib->chunk;
    cudaError_t err;
    if ((err = cudaSetDevice(g->device)) != cudaSuccess ||
        (err = cudaStreamCreateWithFlags(&px->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (err = cudaStreamCreateWithFlags(&px->qstream, cudaStreamNonBlocking)) != cudaSuccess ||
        (err = cudaStreamCreateWithFlags(&px->sstream, cudaStreamNonBlocking)) != cudaSuccess ||
        (err = cudaEventCreateWithFlags(&px->staged[0], cudaEventDisableTiming)) != cudaSuccess ||
        (err = cudaEventCreateWithFlags(&px->staged[1], cudaEventDisableTiming)) != cudaSuccess ||
        (err = cudaHostAlloc(&ring, sizeof(duet_proxy_ring_t), cudaHostAllocMapped | cudaHostAllocPortable)) !=
            cudaSuccess ||
        (px->ring = ring, (err = cudaHostGetDevicePointer(&dev, ring, 0)) != cudaSuccess) ||
        (px->ring_dev = dev, (err = cudaHostAlloc(&stage, 2 * frame, cudaHostAllocPortable)) != cudaSuccess) ||
        (px->stage = stage, (err = cudaHostAlloc(&rstage, frame, cudaHostAllocPortable)) != cudaSuccess) ||
        (px->rstage = rstage,
         (err = cudaHostAlloc(&amo, DUET_CACHELINE, cudaHostAllocMapped | cudaHostAllocPortable)) != cudaSuccess) ||
        (px->amo_host = amo, (err = cudaHostGetDevicePointer(&dev, amo, 0)) != cudaSuccess) ||
        (px->amo_dev = dev, (err = cudaMalloc((void **)&px->head_dev, sizeof *px->head_dev)) != cudaSuccess) ||
        (err = cudaMemset(px->head_dev, 0, sizeof *px->head_dev)) != cudaSuccess ||
        (err = cudaDeviceSynchronize()) != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "GPU proxy of rank %d: ring and staging buffers", g->my_pe);
    /* The atomics kernel, loaded now: under CUDA's lazy module loading its first launch loads
     * the module, which waits for the kernels running on the device, which may be the very
     * kernels waiting for this atomic (the proxy thread hung in cuLaunchKernel while its
     * process's kernel waited for a remote p: gpu.test_gpu_proxy.api on an H200). */
    if ((err = (cudaError_t)duet_cuda_k_amo(px->head_dev, 8, DUET_AMO_FETCH, 0, 0, NULL, px->stream)) != cudaSuccess ||
        (err = cudaStreamSynchronize(px->stream)) != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "GPU proxy of rank %d: loading the atomics kernel", g->my_pe);
    /* My inbox block (messages in, replies in) pinned: the copies from it to the GPU run as DMA
     * rather than through the driver's pageable staging (on the H200 machine a proxy put's
     * bandwidth was 2.8 GB/s with the block pageable). Optional: without it copies still work. */
    if (px->ib->block) {
        if ((err = cudaHostRegister(px->ib->block, px->ib->block_bytes, cudaHostRegisterPortable)) == cudaSuccess)
            px->block_pinned = 1;
        else
            DUET_LOG(INFO, CUDA, "GPU proxy of rank %d: its %zu-byte inbox stays pageable (%s): slower copies",
                     g->my_pe, px->ib->block_bytes, cudaGetErrorString(err));
        (void)cudaGetLastError();
    }
    memset(px->ring, 0, sizeof *px->ring);
    for (unsigned s = 0; s < DUET_PROXY_SLOTS; s++) px->ring->done[s].free = s;
    px->root = root;
    int rc = pthread_create(&px->thread, NULL, proxy_main, px);
    if (rc) return DUET_FAIL(DUET_ERR_SYSTEM, CUDA, "GPU proxy of rank %d: pthread_create: %s", g->my_pe, strerror(rc));
    px->running = 1;
    return DUET_OK;
}

duet_status_t duet_cuda_proxy_start(duet_comm_t root)
{
    duet_cuda_heap_t *g = duet_cuda_heap_of(root->heap);
    if (!g) return DUET_OK;
    int forced = strcasecmp(duet_cfg()->cuda_peers, "proxy") == 0;
    if (!forced && strcasecmp(duet_cfg()->cuda_peers, "auto") != 0)
        DUET_LOG(WARN, CUDA, "DUET_CUDA_PEERS=%s is not auto or proxy: taken as auto", duet_cfg()->cuda_peers);
    int any = 0;
    for (int pe = 0; pe < g->npes; pe++) {
        g->remote[pe] = pe != g->my_pe && (forced || !g->peer[pe]);
        any |= g->remote[pe];
    }
    duet_proxy_inbox_t *ib = NULL;
    duet_status_t st = duet_proxy_inbox_create(root->heap, &root->boot, any, PROXY_CHUNK, PROXY_BOX_SLOTS, &ib);
    if (st || !ib) {
        memset(g->remote, 0, (size_t)g->npes);
        return st ? duet_error_wrap(st, "the GPU proxy") : DUET_OK;
    }
    duet_cuda_proxy_t *px = calloc(1, sizeof *px);
    if (!px) {
        duet_proxy_inbox_destroy(ib);
        return DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "GPU proxy: out of host memory");
    }
    px->g = g;
    px->h = root->heap;
    px->ib = ib;
    st = proxy_make(root, px);
    cudaError_t err = cudaSuccess;
    if (!st && any) {
        if ((err = cudaMalloc((void **)&g->remote_dev, (size_t)g->npes)) != cudaSuccess ||
            (err = cudaMemcpy(g->remote_dev, g->remote, (size_t)g->npes, cudaMemcpyHostToDevice)) != cudaSuccess)
            st = DUET_CUDA_FAIL_RT(err, "GPU proxy of rank %d: the remote-pe table", g->my_pe);
    }
    if (st) {
        g->proxy = px;
        duet_cuda_proxy_stop(g);
        if (g->remote_dev) cudaFree(g->remote_dev);
        g->remote_dev = NULL;
        memset(g->remote, 0, (size_t)g->npes);
        return st;
    }
    g->proxy = px;
    int nremote = 0;
    for (int pe = 0; pe < g->npes; pe++) nremote += g->remote[pe];
    DUET_LOG(INFO, CUDA, "GPU proxy of rank %d: %d remote pe(s)%s; device calls to them go through the proxy thread",
             g->my_pe, nremote, forced ? " (DUET_CUDA_PEERS=proxy)" : "");
    return DUET_OK;
}

/* The handle's proxy fields (duet_device_comm_get). */
void duet_cuda_proxy_handle(const duet_cuda_heap_t *g, duet_device_comm_t *out)
{
    if (!g->proxy || !g->remote_dev) return;
    out->remote = g->remote_dev;
    out->proxy_ring = g->proxy->ring_dev;
    out->proxy_head = g->proxy->head_dev;
}

duet_status_t duet_cuda_proxy_quiet(duet_comm_t c)
{
    duet_cuda_proxy_t *px = duet_cuda_heap_of(c->heap)->proxy;
    unsigned long long head = 0;
    cudaError_t err = cudaSetDevice(px->g->device);
    if (err == cudaSuccess) err = cudaMemcpyAsync(&head, px->head_dev, sizeof head, cudaMemcpyDeviceToHost, px->qstream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(px->qstream);
    if (err != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "duet_quiet: rank %d cannot read its GPU proxy's ticket counter", c->rank);
    if (atomic_load_explicit(&px->settled, memory_order_acquire) >= head) return DUET_OK;
    duet_waiter_t w;
    duet_waiter_init(&w, &c->wait_ctx, "%s (%llu device operations posted)", "duet_quiet: the GPU proxy's remote "
                     "device operations", head, 0, -1);
    while (atomic_load_explicit(&px->settled, memory_order_acquire) < head) {
        duet_status_t st = duet_waiter_turn(&w);
        if (st) return st;
    }
    return DUET_OK;
}

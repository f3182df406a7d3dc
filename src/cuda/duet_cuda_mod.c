/* The CUDA backend's part of a communicator's life (core/duet_comm_mod.h): the GPU proxy of a
 * root communicator with a GPU heap (started once the failure detector watches, stopped
 * after the closing barrier), the device handle's state, and the kernels' abort word. The
 * GPU heap itself is the heap's device part (duet_cuda_heap_ops). */
#include "core/duet_comm_mod.h"
#include "cuda/duet_cuda_heap.h"
#include "cuda/duet_cuda_proxy.h"
#include "cuda/duet_cuda_state.h"

static duet_status_t cuda_open(duet_comm_t c)
{
    (void)c;
    return DUET_OK;
}

/* collective (every rank has a GPU heap or none). Without a proxy everything else works;
 * device calls to remote pes do not */
static void cuda_started(duet_comm_t c)
{
    if (!c->parent && c->heap->dev && duet_cuda_proxy_start(c) != DUET_OK)
        DUET_LOG(WARN, CUDA, "rank %d: no GPU proxy (%s): device calls to remote pes are unavailable", c->rank,
                 duet_last_error());
}

static void cuda_stopping(duet_comm_t c)
{
    if (!c->parent) duet_cuda_proxy_stop(duet_cuda_heap_of(c->heap));
}

/* the kernels' remote calls the proxy took: settled before a host quiet returns */
static duet_status_t cuda_quiet(duet_comm_t c)
{
    return c->heap->dev && duet_cuda_heap_of(c->heap)->proxy ? duet_cuda_proxy_quiet(c) : DUET_OK;
}

static void cuda_close(duet_comm_t c)
{
    duet_cuda_comm_release(c->cuda);
    c->cuda = NULL;
}

const duet_comm_mod_t duet_cuda_comm_mod = {
    .size = sizeof(duet_comm_mod_t), .name = "cuda", .open = cuda_open, .started = cuda_started,
    .stopping = cuda_stopping, .close = cuda_close, .abort = duet_cuda_set_abort, .quiet = cuda_quiet};

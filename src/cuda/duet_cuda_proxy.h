/*
 * duet_cuda_proxy.h — the host proxy that carries device calls to remote pes (docs/NETWORK.md
 * 2.9), as src/core sees it (no CUDA headers: core includes this in every build).
 *
 * A pe is remote for the device API when its GPU heap part is not mapped here (another host),
 * or, with DUET_CUDA_PEERS=proxy, when it is any other pe (so the whole path runs on one
 * host). Kernels post such calls into a command ring (include/duet/duet_proxy_ring.h); one
 * proxy thread per process and GPU heap consumes it, stages GPU data through pinned host
 * buffers and moves it through the host heap's endpoints (src/proxy/duet_proxy_inbox.h) into
 * the target's proxy, which applies it to its GPU part. The target side runs on every rank of
 * a heap that has remote pes anywhere, whether or not it issues device calls itself.
 */
#ifndef DUET_CUDA_PROXY_H
#define DUET_CUDA_PROXY_H

#include "core/duet_comm.h"

struct duet_cuda_heap;

#ifdef DUET_HAVE_CUDA
/* Collective over the root communicator (every rank, after its GPU heap exists; a no-op
 * returning DUET_OK where there is no GPU heap). Marks the remote pes, and when any rank has
 * one makes the inbox, the ring and the thread. A failure leaves the heap without a proxy
 * (device calls to remote pes then fail: see duet_device_comm_get) and is returned. */
duet_status_t duet_cuda_proxy_start(duet_comm_t root);
/* Stops and frees the proxy of g (after the communicator's closing barrier: no peer sends any
 * more). Idempotent; NULL is a no-op. */
void duet_cuda_proxy_stop(struct duet_cuda_heap *g);
/* duet_quiet's share (through the CUDA module's quiet, core/duet_comm_mod.h): waits until
 * every device call that kernels of this process posted to the proxy so far is complete at its target, so a host
 * barrier after a kernel also completes the kernel's remote operations. Only with a proxy. */
duet_status_t duet_cuda_proxy_quiet(duet_comm_t c);
#else
static inline duet_status_t duet_cuda_proxy_start(duet_comm_t root)
{
    (void)root;
    return DUET_OK;
}
static inline void duet_cuda_proxy_stop(struct duet_cuda_heap *g) { (void)g; }
#endif

#endif

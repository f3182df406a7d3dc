/*
 * duet_cuda_proxy_target.c — the GPU proxy's target side (step 1 of its sweep, see
 * duet_cuda_proxy.c): the messages of other ranks' proxies, applied to my GPU part on the
 * proxy's stream and answered once the stream has completed them.
 */
#include "cuda/duet_cuda_proxy_state.h"
#include "cuda/duet_cuda_rma_kern.h"

/* ---------------------------------------------------------------- the target side */

/* Puts msg's work on the proxy's stream (not waited for). Errors found before any CUDA call
 * (a reach outside my part) come back at once. */
static duet_status_t issue(duet_cuda_proxy_t *px, int origin, const duet_proxy_msg_t *msg, size_t *reply_len)
{
    duet_cuda_heap_t *g = px->g;
    char *part = g->peer[g->my_pe];
    size_t need = msg->kind == MSG_PUT ? msg->len : msg->kind == MSG_GET ? msg->value : 8;
    size_t mapped = duet_cuda_heap_mapped(g);
    if (msg->off > mapped || need > mapped - msg->off || (msg->kind == MSG_GET && need > px->ib->chunk))
        return DUET_FAIL(DUET_ERR_INVALID_ARG, CUDA, "GPU proxy of rank %d: rank %d's device call reaches [%llu, +%zu), "
                         "outside the %zu backed bytes of its GPU heap part", g->my_pe, origin,
                         (unsigned long long)msg->off, need, mapped);
    char *at = part + msg->off;
    cudaError_t err = cudaSuccess;
    switch (msg->kind) {
    case MSG_PUT:
        err = cudaMemcpyAsync(at, (const char *)msg + DUET_PROXY_HDR, msg->len, cudaMemcpyDefault, px->stream);
        break;
    case MSG_GET:
        err = cudaMemcpyAsync(px->rstage + DUET_PROXY_HDR, at, need, cudaMemcpyDefault, px->stream);
        *reply_len = need;
        break;
    case MSG_SIGNAL:
        err = (cudaError_t)duet_cuda_k_amo(at, 8, msg->arg == DUET_SIGNAL_ADD ? DUET_CUDA_K_ADD : DUET_CUDA_K_SET,
                                           msg->value, 0, NULL, px->stream);
        break;
    case MSG_AMO: {
        int op = (int)(msg->arg & 0xff), width = (int)(msg->arg >> 8);
        if ((width != 4 && width != 8) || ((uintptr_t)at & (uintptr_t)(width - 1)))
            return DUET_FAIL(DUET_ERR_INVALID_ARG, CUDA, "GPU proxy of rank %d: rank %d's atomic of width %d at "
                             "offset %llu", g->my_pe, origin, width, (unsigned long long)msg->off);
        *(volatile uint64_t *)px->amo_host = 0;
        err = (cudaError_t)duet_cuda_k_amo(at, width, op, msg->value, msg->cond, px->amo_dev, px->stream);
        break;
    }
    default:
        return DUET_FAIL(DUET_ERR_INTERNAL, CUDA, "GPU proxy of rank %d: message of unknown kind %u from rank %d",
                         g->my_pe, msg->kind, origin);
    }
    if (err != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "GPU proxy of rank %d: applying rank %d's device call (kind %u, %zu bytes)",
                                 g->my_pe, origin, msg->kind, need);
    return DUET_OK;
}

/* Applies one batch of the messages of origin that have arrived (the sweep comes back for the
 * next, after its other duties, so one busy origin starves nobody): puts and signals are
 * issued back to back and the stream synchronized once for all of them (a synchronize costs
 * ~6 us on the H200 machine, more than a 64 KiB copy); a get or an atomic goes alone, since
 * its reply reads what the stream produced (rstage, amo_host: one of each). Every message is
 * answered after the synchronize: the ack means "applied", and the answer releases the inbox
 * slot the copy reads from. Per origin the stream applies them in arrival order. Returns 1
 * when it applied any. */
int duet_cuda_proxy_serve(duet_cuda_proxy_t *px, int origin)
{
    duet_status_t st[PROXY_BOX_SLOTS];
    const duet_proxy_msg_t *msg;
    int n = 0;
    unsigned kind = 0;
    size_t rlen = 0;
    while (n < PROXY_BOX_SLOTS && (msg = duet_proxy_inbox_peek_at(px->ib, origin, n)) != NULL) {
        int alone = msg->kind == MSG_GET || msg->kind == MSG_AMO;
        if (alone && n > 0) break; /* the next batch */
        kind = msg->kind;
        st[n++] = issue(px, origin, msg, &rlen);
        if (alone) break;
    }
    if (!n) return 0;
    cudaError_t err = cudaStreamSynchronize(px->stream);
    for (int i = 0; i < n && err != cudaSuccess; i++)
        if (!st[i])
            st[i] = DUET_CUDA_FAIL_RT(err, "GPU proxy of rank %d: applying rank %d's device call(s)", px->g->my_pe,
                                      origin);
    uint64_t result = n == 1 && kind == MSG_AMO && !st[0] ? *(volatile uint64_t *)px->amo_host : 0;
    int reply = n == 1 && kind == MSG_GET && !st[0];
    for (int i = 0; i < n; i++) {
        duet_status_t ast = duet_proxy_inbox_answer(px->ib, origin, st[i], result, reply ? px->rstage : NULL,
                                                    reply ? rlen : 0);
        if (ast) DUET_LOG(WARN, CUDA, "GPU proxy of rank %d: cannot answer rank %d: %s", px->g->my_pe, origin,
                          duet_last_error());
    }
    return 1;
}

/*
 * Running a batch of calls of one communicator (one call outside a group, a group's calls at
 * ncclGroupEnd), in the calling thread.
 *
 *   1. host buffers: wait for each distinct stream's earlier work (it may write them);
 *   2. copies this layer needs made now: PreMulSum's scaled input (host buffers: here; device
 *      buffers: the scaling kernel enqueued on the call's stream), an in-place all-to-all's
 *      input (Duet's all-to-all is out of place only; device buffers: a stream-ordered scratch
 *      copy, cudaMallocAsync + cudaMemcpyAsync), a rank's host sends to itself matched
 *      with its receives from itself, in order (Duet's CPU backend has no self-messages; NCCL
 *      allows them). Self-sends on device buffers are checked for their pair here and go to
 *      Duet's GPU group, which pairs them (k-th with k-th) and copies on the GPU;
 *   3. without sends and receives each collective goes to Duet alone, in order, so small
 *      allreduces keep Duet's latency lane; with them, the batch is one Duet group (Duet
 *      runs the sends and receives together with the first collective, then the others in
 *      order, so pairs that would deadlock one by one complete; on device buffers all the
 *      group's sends and receives as one schedule, then its collectives).
 * Inputs are copied (2) when the batch starts: inside one group, a call's input must not be
 * what an earlier call of the same group writes, for these cases only.
 *
 * A send to the rank itself must meet its receive in the same group (in NCCL a lone self-send
 * is a GPU-blocking operation waiting for a receive enqueued after it: it never completes);
 * Duet refuses it with ncclInvalidUsage instead of hanging.
 */
#include <stdlib.h>
#include <string.h>
#include "nccl_compat.h"
#include "duet/duet_ext.h"

static int is_p2p(const nccl_call_t *c)
{
    return c->kind == NCCL_CALL_SEND || c->kind == NCCL_CALL_RECV || c->kind == NCCL_CALL_GATHER ||
           c->kind == NCCL_CALL_SCATTER;
}
static int is_self(const nccl_call_t *c)
{
    return (c->kind == NCCL_CALL_SEND || c->kind == NCCL_CALL_RECV) && c->root == c->comm->rank;
}
/* a send or receive of nothing: not issued at all (both sides of a pair skip it alike). Its
 * pointer may be anything, NULL included (PyTorch's empty tensors), so it must not decide whether
 * the group's calls on the communicator are host or GPU ones. */
static int is_empty_message(const nccl_call_t *c)
{
    return (c->kind == NCCL_CALL_SEND || c->kind == NCCL_CALL_RECV) && c->count == 0;
}
/* a self-message this layer copies itself (host buffers); device ones go to Duet */
static int is_host_self(const nccl_call_t *c) { return is_self(c) && !c->device; }

void nccl_call_free_temp(nccl_call_t *c)
{
    if (!c->temp) return;
    if (c->temp_kind == NCCL_TEMP_HOST) free(c->temp);
    else nccl_cuda_scratch_free(c->temp, c->stream, c->temp_kind);
    c->temp = NULL;
}

/* Matches the k-th self-send with the k-th self-receive and copies. */
static ncclResult_t self_messages(nccl_call_t *calls, int n)
{
    int s = 0, r = 0;
    for (;;) {
        while (s < n && !(is_self(&calls[s]) && calls[s].kind == NCCL_CALL_SEND)) s++;
        while (r < n && !(is_self(&calls[r]) && calls[r].kind == NCCL_CALL_RECV)) r++;
        if (s == n && r == n) return ncclSuccess;
        if (s == n || r == n)
            return nccl_fail(ncclInvalidUsage, "%s to this rank itself has no matching %s in the same group (a rank's "
                             "send to itself must be paired with its receive from itself inside one ncclGroupStart / "
                             "ncclGroupEnd; alone it would wait for itself forever)",
                             calls[s < n ? s : r].fn, s < n ? "ncclRecv" : "ncclSend");
        nccl_call_t *a = &calls[s], *b = &calls[r];
        if (a->count != b->count || a->nccl_dt != b->nccl_dt)
            return nccl_fail(ncclInvalidArgument, "ncclSend to self of %zu elements of type %d met ncclRecv of %zu "
                             "of type %d", a->count, (int)a->nccl_dt, b->count, (int)b->nccl_dt);
        if (a->count && a->device != b->device)
            return nccl_fail(ncclInvalidArgument, "ncclSend to self from %s memory met ncclRecv into %s memory: "
                             "Duet needs both on the host or both on the device", a->device ? "device" : "host",
                             b->device ? "device" : "host");
        /* device: Duet's GPU group pairs and copies them; nccl_calls_run issues the two one after
         * the other, so that a gather's or scatter's own block (a self pair too) cannot sit
         * between them and take the wrong partner */
        a->mate = !a->device ? 0 : a->send == b->recv ? -1 /* onto itself: nothing to do */ : r + 1;
        if (!a->device && a->count && a->send != b->recv)
            memmove(b->recv, a->send, a->count * duet_datatype_size(a->dt));
        s++, r++;
    }
}

/* Issues call i of the batch into Duet, a device self-send with its receive (which is then
 * skipped at its own place). */
static duet_status_t issue(nccl_call_t *calls, int i)
{
    nccl_call_t *c = &calls[i];
    if (is_empty_message(c)) return DUET_OK;
    if (is_self(c) && (!c->device || !c->count || c->kind == NCCL_CALL_RECV || c->mate < 0)) return DUET_OK;
    duet_status_t st = nccl_call_issue(c);
    if (st == DUET_OK && is_self(c) && c->mate > 0) st = nccl_call_issue(&calls[c->mate - 1]);
    return st;
}

static ncclResult_t prepare_inputs(nccl_call_t *calls, int n)
{
    for (int i = 0; i < n; i++) {
        nccl_call_t *c = &calls[i];
        if (!c->device && !is_empty_message(c)) {
            int seen = 0;
            for (int j = 0; j < i && !seen; j++) seen = !calls[j].device && calls[j].stream == c->stream;
            ncclResult_t r = seen ? ncclSuccess : nccl_cuda_stream_sync(c->stream, c->fn);
            if (r) return r;
        }
        ncclResult_t r = nccl_redop_apply(c);
        if (r) return r;
        if (c->kind == NCCL_CALL_ALLTOALL && c->device && c->count && c->send == c->recv) {
            size_t bytes = c->count * (size_t)c->comm->nranks * duet_datatype_size(c->dt);
            if ((r = nccl_cuda_scratch_alloc(&c->temp, bytes, c->stream, &c->temp_kind, c->fn))) {
                c->temp = NULL;
                return r;
            }
            if ((r = nccl_cuda_copy_async(c->temp, c->send, bytes, c->stream, c->fn))) return r;
        } else if (c->kind == NCCL_CALL_ALLTOALL && c->count && c->send == c->recv) {
            size_t bytes = c->count * (size_t)c->comm->nranks * duet_datatype_size(c->dt);
            c->temp_kind = NCCL_TEMP_HOST;
            if (!(c->temp = malloc(bytes)))
                return nccl_fail(ncclSystemError, "%s: in place: out of host memory for a %zu-byte copy", c->fn, bytes);
            memcpy(c->temp, c->send, bytes);
        }
    }
    return self_messages(calls, n);
}

ncclResult_t nccl_calls_run(nccl_call_t *calls, int n)
{
    ncclResult_t r = prepare_inputs(calls, n);
    int p2p = 0;
    for (int i = 0; i < n; i++) p2p |= is_p2p(&calls[i]) && !is_host_self(&calls[i]) && !is_empty_message(&calls[i]);
    duet_status_t st = DUET_OK;
    const char *failed = NULL;
    if (r == ncclSuccess && !p2p) {
        for (int i = 0; i < n && st == DUET_OK; i++)
            if ((st = issue(calls, i))) failed = calls[i].fn;
    } else if (r == ncclSuccess) {
        duet_group_start();
        for (int i = 0; i < n && st == DUET_OK; i++)
            if ((st = issue(calls, i))) failed = calls[i].fn;
        duet_status_t end = duet_group_end(); /* always: the group must close */
        if (st == DUET_OK && end) st = end, failed = n == 1 ? calls[0].fn : "ncclGroupEnd";
    }
    /* after the work is enqueued: device scratch is freed in its stream's order (every stream a
     * Duet group names waits for the group's end, so this comes after the calls that read it) */
    for (int i = 0; i < n; i++) nccl_call_free_temp(&calls[i]);
    if (r == ncclSuccess && st) r = nccl_fail(nccl_from_duet(st), "%s: %s", failed, duet_last_error());
    return r;
}

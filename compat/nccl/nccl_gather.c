/*
 * ncclGather and ncclScatter: Duet has neither, so each is its sends and receives, issued
 * into the Duet group nccl_calls_run opened. The root's own block is a local copy, skipped
 * when the call is in place: on host buffers a memmove here, on device buffers a send to the
 * root itself and its receive from itself, which Duet's GPU group pairs and runs as a device
 * copy on the group's stream (so nothing leaves stream order).
 *
 *   gather, root r:   recv[i] <- send of rank i  (i != r: a receive; i == r: a copy)
 *   scatter, root r:  recv of rank i <- send[i]  (i != r: a send;    i == r: a copy)
 */
#include <string.h>
#include "nccl_compat.h"

/* The root's own block: src -> dst (distinct). */
static duet_status_t own_block(const nccl_call_t *c, void *dst, const void *src, size_t block)
{
    if (!c->device) {
        memmove(dst, src, block);
        return DUET_OK;
    }
    duet_comm_t dc = c->comm->dc;
    duet_stream_t s = (duet_stream_t)c->stream;
    duet_status_t st = duet_send(src, c->count, c->dt, c->comm->rank, dc, s);
    return st ? st : duet_recv(dst, c->count, c->dt, c->comm->rank, dc, s);
}

duet_status_t nccl_gather_issue(nccl_call_t *c)
{
    duet_comm_t dc = c->comm->dc;
    duet_stream_t s = c->device ? (duet_stream_t)c->stream : NULL;
    int me = c->comm->rank, n = c->comm->nranks;
    size_t block = c->count * duet_datatype_size(c->dt);
    duet_status_t st = DUET_OK;
    if (c->count == 0) return DUET_OK;
    if (c->kind == NCCL_CALL_GATHER) {
        if (me != c->root) return duet_send(c->send, c->count, c->dt, c->root, dc, s);
        char *own = (char *)c->recv + (size_t)me * block;
        if (c->send != own) st = own_block(c, own, c->send, block);
        for (int i = 0; i < n && st == DUET_OK; i++)
            if (i != me) st = duet_recv((char *)c->recv + (size_t)i * block, c->count, c->dt, i, dc, s);
        return st;
    }
    if (me != c->root) return duet_recv(c->recv, c->count, c->dt, c->root, dc, s);
    const char *own = (const char *)c->send + (size_t)me * block;
    if (c->recv != own) st = own_block(c, c->recv, own, block);
    for (int i = 0; i < n && st == DUET_OK; i++)
        if (i != me) st = duet_send((const char *)c->send + (size_t)i * block, c->count, c->dt, i, dc, s);
    return st;
}

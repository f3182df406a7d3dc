/*
 * ncclGather and ncclScatter: Duet has neither, so each is its sends and receives, issued
 * into the Duet group nccl_calls_run opened (host buffers only; the root's own block is a
 * local copy, skipped when the call is in place).
 *
 *   gather, root r:   recv[i] <- send of rank i  (i != r: a receive; i == r: a copy)
 *   scatter, root r:  recv of rank i <- send[i]  (i != r: a send;    i == r: a copy)
 */
#include <string.h>
#include "nccl_compat.h"

duet_status_t nccl_gather_issue(nccl_call_t *c)
{
    duet_comm_t dc = c->comm->dc;
    int me = c->comm->rank, n = c->comm->nranks;
    size_t block = c->count * duet_datatype_size(c->dt);
    duet_status_t st = DUET_OK;
    if (c->count == 0) return DUET_OK;
    if (c->kind == NCCL_CALL_GATHER) {
        if (me != c->root) return duet_send(c->send, c->count, c->dt, c->root, dc, NULL);
        char *own = (char *)c->recv + (size_t)me * block;
        if (c->send != own) memmove(own, c->send, block);
        for (int i = 0; i < n && st == DUET_OK; i++)
            if (i != me) st = duet_recv((char *)c->recv + (size_t)i * block, c->count, c->dt, i, dc, NULL);
        return st;
    }
    if (me != c->root) return duet_recv(c->recv, c->count, c->dt, c->root, dc, NULL);
    const char *own = (const char *)c->send + (size_t)me * block;
    if (c->recv != own) memmove(c->recv, own, block);
    for (int i = 0; i < n && st == DUET_OK; i++)
        if (i != me) st = duet_send((const char *)c->send + (size_t)i * block, c->count, c->dt, i, dc, NULL);
    return st;
}

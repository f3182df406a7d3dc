/*
 * duet_cuda_proxy_origin.c — the GPU proxy's origin side (steps 2 and 3 of its sweep, see
 * duet_cuda_proxy.c): the ring's commands taken in ticket order, carried as messages to the
 * targets' proxies (a put's chunks staged through pinned frames), their answers harvested, the
 * commands and quiets completed, failures and timeouts handed to the commands they concern.
 */
#include <stdio.h>
#include <string.h>
#include "core/duet_ft.h"
#include "cuda/duet_cuda_proxy_state.h"

static int slot_of(const duet_cuda_proxy_t *px, uint64_t t)
{
    (void)px;
    return (int)(t % DUET_PROXY_SLOTS);
}

/* ---------------------------------------------------------------- completions */

static void complete_ticket(duet_cuda_proxy_t *px, uint64_t t, duet_status_t st, uint64_t result)
{
    duet_proxy_done_t *d = &px->ring->done[slot_of(px, t)];
    d->status = st;
    d->result = result;
    __atomic_store_n(&d->done, t + 1, __ATOMIC_RELEASE); /* the waiter frees the slot */
}

/* A failure goes to the oldest pending quiet that covers it (message gseq; 0: a command that
 * failed before sending, which no pending quiet covers), else to the next quiet taken. */
static void note_failure(duet_cuda_proxy_t *px, duet_status_t st, uint64_t gseq)
{
    if (!st) return;
    for (unsigned i = px->q_head; gseq && i != px->q_tail; i++) {
        quiet_t *q = &px->quiets[i % DUET_PROXY_SLOTS];
        if (gseq <= q->upto) {
            if (!q->st) q->st = st;
            return;
        }
    }
    if (!px->sticky) px->sticky = st;
}

/* Every message to pe that is not answered yet fails with st (pe is gone). */
void duet_cuda_proxy_fail_pe(duet_cuda_proxy_t *px, int pe, duet_status_t st)
{
    duet_proxy_inbox_t *ib = px->ib;
    if (!px->failed[pe])
        DUET_LOG(WARN, CUDA, "GPU proxy of rank %d: rank %d failed (%s): its %llu unanswered device operation(s) "
                 "complete with that status", px->g->my_pe, pe, duet_status_str(st),
                 (unsigned long long)(ib->sent[pe] - px->harvested[pe]));
    px->failed[pe] = 1;
    for (uint64_t m = px->harvested[pe] + 1; m <= ib->sent[pe]; m++) {
        pend_t *p = &px->pend[(size_t)pe * PROXY_BOX_SLOTS + (size_t)((m - 1) % PROXY_BOX_SLOTS)];
        if ((p->kind == PEND_GET || p->kind == PEND_AMO) && p->blocking && p->last) complete_ticket(px, p->ticket, st, 0);
        note_failure(px, st, p->gseq);
        p->kind = PEND_NONE;
    }
    px->harvested[pe] = ib->sent[pe];
}

/* The answers pe has given since the last look. Returns 1 when any. */
int duet_cuda_proxy_harvest(duet_cuda_proxy_t *px, int pe)
{
    duet_proxy_inbox_t *ib = px->ib;
    if (px->failed[pe]) return 0;
    uint64_t acked = duet_proxy_inbox_acked(ib, pe);
    int moved = 0;
    while (px->harvested[pe] < acked) {
        uint64_t m = px->harvested[pe] + 1;
        pend_t *p = &px->pend[(size_t)pe * PROXY_BOX_SLOTS + (size_t)((m - 1) % PROXY_BOX_SLOTS)];
        const duet_proxy_reply_t *r = duet_proxy_inbox_reply(ib, pe, m);
        duet_status_t st = (duet_status_t)r->status;
        if (st == DUET_OK && p->kind == PEND_GET) {
            cudaError_t err = cudaMemcpyAsync(p->dst, (const char *)r + DUET_PROXY_HDR, p->len, cudaMemcpyDefault,
                                              px->stream);
            if (err == cudaSuccess) err = cudaStreamSynchronize(px->stream);
            if (err != cudaSuccess)
                st = DUET_CUDA_FAIL_RT(err, "GPU proxy of rank %d: delivering %zu bytes got from rank %d", px->g->my_pe,
                                       p->len, pe);
        }
        if (st && !px->cmd_err[pe]) px->cmd_err[pe] = st;
        note_failure(px, st, p->gseq);
        if ((p->kind == PEND_GET || p->kind == PEND_AMO) && p->last) {
            if (p->blocking) complete_ticket(px, p->ticket, px->cmd_err[pe], r->result);
            px->cmd_err[pe] = DUET_OK;
        }
        p->kind = PEND_NONE;
        px->harvested[pe] = m;
        moved = 1;
    }
    return moved;
}

/* ---------------------------------------------------------------- the origin side */

/* Sends one message of the current command to pe, when there is room. 1 sent, 0 no room. */
/* Room for one more message to pe counts from the messages *harvested*, not those acked: the
 * answers of acked but unharvested messages still sit in pend[] and in pe's reply slots, which
 * the next messages' would overwrite (lost completions: gpu.test_gpu_proxy.api's 1,024
 * concurrent fetch_adds hung with blocking atomics never completed). */
static int send_msg(duet_cuda_proxy_t *px, int pe, const duet_proxy_msg_t *msg, pend_t pend, void *frame,
                    duet_status_t *st)
{
    duet_proxy_inbox_t *ib = px->ib;
    if (!duet_proxy_inbox_room(ib, pe, px->harvested[pe])) return 0; /* see above */
    uint64_t m;
    *st = duet_proxy_inbox_send(ib, pe, msg, frame ? frame : px->hdr, &m);
    if (*st) return 1;
    pend.gseq = ++px->gsent;
    px->pend[(size_t)pe * PROXY_BOX_SLOTS + (size_t)((m - 1) % PROXY_BOX_SLOTS)] = pend;
    return 1;
}

static char *stage_frame(duet_cuda_proxy_t *px, int f) { return px->stage + (size_t)f * (DUET_PROXY_HDR + px->ib->chunk); }

/* Issues the copy of n device bytes at src into stage frame f. */
static cudaError_t stage_issue(duet_cuda_proxy_t *px, int f, uint64_t src, size_t n)
{
    cudaError_t err = cudaMemcpyAsync(stage_frame(px, f) + DUET_PROXY_HDR, (const void *)(uintptr_t)src, n,
                                      cudaMemcpyDefault, px->sstream);
    return err == cudaSuccess ? cudaEventRecord(px->staged[f], px->sstream) : err;
}

/* While the current put's last chunk is sent: when the next command in the ring is published
 * and is a put, its first chunk is staged into frame f (duet_cuda_proxy_take() hands it over),
 * so a many-block put's commands, one chunk each, also overlap staging and sending. The command
 * stays in its slot until taken; its source was written before it was published (acquire). */
static cudaError_t stage_next_command(duet_cuda_proxy_t *px, int f)
{
    const duet_proxy_cmd_t *c = &px->ring->cmd[slot_of(px, px->next)];
    if (__atomic_load_n(&c->ready, __ATOMIC_ACQUIRE) != px->next + 1) return cudaSuccess;
    if ((c->op & DUET_PROXY_OP_MASK) != DUET_PROXY_PUT || (c->op & DUET_PROXY_INLINE) || !c->bytes) return cudaSuccess;
    size_t n = c->bytes < px->ib->chunk ? (size_t)c->bytes : px->ib->chunk;
    cudaError_t err = stage_issue(px, f, c->laddr, n);
    if (err == cudaSuccess) {
        px->pf_ticket = px->next;
        px->pf_frame = f;
        px->pf_len = n;
    }
    return err;
}

/* Sends the current put's next chunk when pe has room: waits for its staging copy (issued
 * now if it was not), issues the copy of the chunk after it into the other frame, then sends
 * (so the device -> host copy of one chunk runs while the previous one crosses to the target:
 * on the H200 machine each took 15-32 us per 256 KiB chunk). 1 when it did something.
 * GPUDIRECT: with a UCX that maps GPU memory, a chunk would be one put from laddr into the
 * target's registered GPU part (no staging, no target-side copy). */
static int put_chunk(duet_cuda_proxy_t *px, duet_status_t *st)
{
    duet_proxy_cmd_t *c = &px->cur;
    if (!duet_proxy_inbox_room(px->ib, c->pe, px->harvested[c->pe])) return 0;
    if (c->op & DUET_PROXY_INLINE) { /* the bytes came in the command */
        if (c->bytes > DUET_PROXY_INLINE_MAX) {
            *st = DUET_FAIL(DUET_ERR_INTERNAL, CUDA, "GPU proxy of rank %d: an inline put of %llu bytes", px->g->my_pe,
                            (unsigned long long)c->bytes);
            return 1;
        }
        memcpy(px->hdr + DUET_PROXY_HDR, &c->cond, (size_t)c->bytes);
        duet_proxy_msg_t msg = {.kind = MSG_PUT, .off = c->roff, .len = c->bytes};
        send_msg(px, c->pe, &msg, (pend_t){.kind = PEND_PLAIN}, px->hdr, st);
        if (!*st) px->cur_done = c->bytes;
        return 1;
    }
    size_t n = c->bytes - px->cur_done, chunk = px->ib->chunk;
    if (n > chunk) n = chunk;
    int f = px->st_frame;
    cudaError_t err = px->st_len == n ? cudaSuccess : stage_issue(px, f, c->laddr + px->cur_done, n);
    if (err == cudaSuccess) err = cudaEventSynchronize(px->staged[f]);
    size_t next = px->cur_done + n, next_n = c->bytes - next < chunk ? c->bytes - next : chunk;
    px->st_len = 0;
    if (err == cudaSuccess && next_n && (err = stage_issue(px, 1 - f, c->laddr + next, next_n)) == cudaSuccess)
        px->st_len = next_n;
    if (err == cudaSuccess && !next_n) err = stage_next_command(px, 1 - f);
    if (err != cudaSuccess) {
        *st = DUET_CUDA_FAIL_RT(err, "GPU proxy of rank %d: staging %zu bytes of a device put to rank %d (source %p)",
                                px->g->my_pe, n, c->pe, (void *)(uintptr_t)c->laddr);
        return 1;
    }
    duet_proxy_msg_t msg = {.kind = MSG_PUT, .off = c->roff + px->cur_done, .len = n};
    pend_t p = {.kind = PEND_PLAIN};
    send_msg(px, c->pe, &msg, p, stage_frame(px, f), st); /* room was checked: sent, or *st */
    if (!*st) {
        px->cur_done = next;
        px->st_frame = 1 - f;
    }
    return 1;
}

static void finish_cur(duet_cuda_proxy_t *px, duet_status_t st)
{
    note_failure(px, st, 0);
    px->st_len = 0; /* a copy still in flight into a frame is waited for before the frame is read */
    if ((px->cur.op & DUET_PROXY_BLOCKING) &&
        (st || (px->cur.op & DUET_PROXY_OP_MASK) == DUET_PROXY_PUT ||
         (px->cur.op & DUET_PROXY_OP_MASK) == DUET_PROXY_SIGNAL || (px->cur.op & DUET_PROXY_OP_MASK) == DUET_PROXY_QUIET))
        complete_ticket(px, px->cur_ticket, st, 0);
    px->busy = 0;
}

static int all_answered(duet_cuda_proxy_t *px)
{
    for (int pe = 0; pe < px->ib->npes; pe++)
        if (px->harvested[pe] != px->ib->sent[pe]) return 0;
    return 1;
}

/* The number (gseq) of the oldest message not answered yet; UINT64_MAX when none. Answers come
 * in order per pe, so it is the oldest unharvested message of some pe. */
static uint64_t oldest_unanswered(duet_cuda_proxy_t *px)
{
    uint64_t oldest = UINT64_MAX;
    for (int pe = 0; pe < px->ib->npes; pe++) {
        if (px->harvested[pe] == px->ib->sent[pe]) continue;
        const pend_t *p = &px->pend[(size_t)pe * PROXY_BOX_SLOTS + (size_t)(px->harvested[pe] % PROXY_BOX_SLOTS)];
        if (p->gseq < oldest) oldest = p->gseq;
    }
    return oldest;
}

/* Completes the pending quiets whose messages are all answered (all of them, with the abort
 * status, when the communicator is aborted). Returns 1 when any completed. */
int duet_cuda_proxy_complete_quiets(duet_cuda_proxy_t *px)
{
    if (px->q_head == px->q_tail) return 0;
    int abort = atomic_load_explicit(&duet_comm_ft(px->root)->abort, memory_order_acquire);
    uint64_t oldest = abort ? UINT64_MAX : oldest_unanswered(px);
    int moved = 0;
    while (px->q_head != px->q_tail) {
        quiet_t *q = &px->quiets[px->q_head % DUET_PROXY_SLOTS];
        if (q->upto >= oldest) break;
        duet_status_t st = abort ? (abort < 0 ? (duet_status_t)abort : DUET_ERR_REVOKED) : q->st;
        if (q->blocking) complete_ticket(px, q->ticket, st, 0);
        px->q_head++;
        moved = 1;
    }
    return moved;
}

/* Moves the current command on. Returns 1 when it did something. */
int duet_cuda_proxy_advance(duet_cuda_proxy_t *px)
{
    duet_proxy_cmd_t *c = &px->cur;
    int op = c->op & DUET_PROXY_OP_MASK, moved = 0;
    duet_status_t st = DUET_OK;
    int abort = atomic_load_explicit(&duet_comm_ft(px->root)->abort, memory_order_acquire);
    if (abort) {
        finish_cur(px, abort < 0 ? (duet_status_t)abort : DUET_ERR_REVOKED);
        return 1;
    }
    if (op == DUET_PROXY_QUIET) { /* pending until its messages are answered: complete_quiets */
        if (px->q_tail - px->q_head == DUET_PROXY_SLOTS) return 0; /* cannot happen: each holds its ring slot */
        quiet_t *q = &px->quiets[px->q_tail % DUET_PROXY_SLOTS];
        *q = (quiet_t){.ticket = px->cur_ticket, .upto = px->gsent, .st = px->sticky,
                       .blocking = (c->op & DUET_PROXY_BLOCKING) != 0};
        px->q_tail++;
        px->sticky = DUET_OK;
        px->busy = 0;
        return 1;
    }
    if (c->pe < 0 || c->pe >= px->ib->npes || c->pe == px->g->my_pe) {
        finish_cur(px, DUET_FAIL(DUET_ERR_INVALID_ARG, CUDA, "GPU proxy of rank %d: a device call names pe %d",
                                 px->g->my_pe, c->pe));
        return 1;
    }
    if (px->failed[c->pe] || duet_ft_is_dead(px->root, c->pe)) {
        finish_cur(px, DUET_FAIL(DUET_ERR_PEER_FAILED, CUDA, "GPU proxy of rank %d: a device call to rank %d, which "
                                 "has failed", px->g->my_pe, c->pe));
        return 1;
    }
    switch (op) {
    case DUET_PROXY_PUT:
        while (px->cur_done < c->bytes && !st) {
            if (!put_chunk(px, &st)) return moved;
            moved = 1;
        }
        if (!st && c->sig_off != DUET_PROXY_NO_SIGNAL && !px->cur_sig_sent) {
            duet_proxy_msg_t msg = {.kind = MSG_SIGNAL, .arg = c->sig_op, .off = c->sig_off, .value = c->value};
            if (!send_msg(px, c->pe, &msg, (pend_t){.kind = PEND_PLAIN}, NULL, &st)) return moved;
            px->cur_sig_sent = 1;
        }
        break;
    case DUET_PROXY_SIGNAL: {
        duet_proxy_msg_t msg = {.kind = MSG_SIGNAL, .arg = c->sig_op, .off = c->sig_off, .value = c->value};
        if (!send_msg(px, c->pe, &msg, (pend_t){.kind = PEND_PLAIN}, NULL, &st)) return 0;
        break;
    }
    case DUET_PROXY_GET:
        while (px->cur_done < c->bytes && !st) {
            size_t n = c->bytes - px->cur_done;
            if (n > px->ib->chunk) n = px->ib->chunk;
            duet_proxy_msg_t msg = {.kind = MSG_GET, .off = c->roff + px->cur_done, .value = n};
            pend_t p = {.kind = PEND_GET, .blocking = (c->op & DUET_PROXY_BLOCKING) != 0,
                        .last = px->cur_done + n == c->bytes, .ticket = px->cur_ticket,
                        .dst = (char *)(uintptr_t)c->laddr + px->cur_done, .len = n};
            if (!send_msg(px, c->pe, &msg, p, NULL, &st)) return moved;
            if (!st) px->cur_done += n;
            moved = 1;
        }
        if (!st) { /* completes when the last reply is in */
            px->busy = 0;
            return 1;
        }
        break;
    case DUET_PROXY_AMO: {
        duet_proxy_msg_t msg = {.kind = MSG_AMO, .arg = (uint32_t)c->amo_op | (uint32_t)c->width << 8,
                                .off = c->roff, .value = c->value, .cond = c->cond};
        pend_t p = {.kind = PEND_AMO, .blocking = (c->op & DUET_PROXY_BLOCKING) != 0, .last = 1,
                    .ticket = px->cur_ticket};
        if (!send_msg(px, c->pe, &msg, p, NULL, &st)) return 0;
        if (!st) {
            px->busy = 0;
            return 1;
        }
        break;
    }
    default:
        st = DUET_FAIL(DUET_ERR_INTERNAL, CUDA, "GPU proxy of rank %d: command of unknown op %d (ticket %llu)",
                       px->g->my_pe, c->op, (unsigned long long)px->cur_ticket);
    }
    if (st && st != DUET_ERR_CUDA) { /* the endpoint broke: the peer is unreachable */
        duet_cuda_proxy_fail_pe(px, c->pe, st);
        duet_cuda_set_abort(px->root, DUET_ERR_PEER_FAILED);
    }
    finish_cur(px, st);
    return 1;
}

/* Takes the next command when its producer has published it. */
int duet_cuda_proxy_take(duet_cuda_proxy_t *px)
{
    uint64_t t = px->next;
    int s = slot_of(px, t);
    duet_proxy_cmd_t *c = &px->ring->cmd[s];
    if (__atomic_load_n(&c->ready, __ATOMIC_ACQUIRE) != t + 1) return 0;
    px->cur = *c;
    px->cur_ticket = t;
    px->cur_done = 0;
    px->cur_sig_sent = 0;
    px->st_len = 0;
    if (px->pf_len && px->pf_ticket == t) { /* its first chunk is staged already */
        px->st_frame = px->pf_frame;
        px->st_len = px->pf_len;
    }
    px->pf_len = 0;
    px->busy = 1;
    px->next = t + 1;
    if (!(px->cur.op & DUET_PROXY_BLOCKING)) /* copied out: the slot is free for ticket t + SLOTS */
        __atomic_store_n(&px->ring->done[s].free, t + DUET_PROXY_SLOTS, __ATOMIC_RELEASE);
    return 1;
}

int duet_cuda_proxy_outstanding(duet_cuda_proxy_t *px)
{
    return px->busy || px->q_head != px->q_tail || !all_answered(px);
}

/* No progress for DUET_WAIT_TIMEOUT: everything outstanding fails, kernels are told. */
void duet_cuda_proxy_time_out(duet_cuda_proxy_t *px)
{
    char who[96] = "";
    size_t at = 0;
    for (int pe = 0; pe < px->ib->npes && at < sizeof who - 16; pe++)
        if (px->harvested[pe] != px->ib->sent[pe] || (px->busy && px->cur.pe == pe))
            at += (size_t)snprintf(who + at, sizeof who - at, "%s%d", at ? ", " : "", pe);
    duet_status_t st = DUET_FAIL(DUET_ERR_TIMEOUT, CUDA, "GPU proxy of rank %d: no progress in %.0f s on device "
                                 "operations to rank(s) %s (DUET_WAIT_TIMEOUT); the kernels' abort word is set",
                                 px->g->my_pe, duet_cfg()->wait_timeout, at ? who : "(none: a command never published)");
    for (int pe = 0; pe < px->ib->npes; pe++)
        if (px->harvested[pe] != px->ib->sent[pe]) duet_cuda_proxy_fail_pe(px, pe, st);
    if (px->busy) finish_cur(px, st);
    duet_cuda_set_abort(px->root, DUET_ERR_TIMEOUT);
}

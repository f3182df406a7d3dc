/*
 * The GPU proxy thread (docs/NETWORK.md 2.9; the ring: include/duet/duet_proxy_ring.h; the
 * message boxes: src/proxy/duet_proxy_inbox.h).
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
 * GPUDIRECT note. Not built: Debian's UCX and the device machine's have no CUDA support.
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
#include "cuda/duet_cuda_rma_kern.h"
#include "cuda/duet_cuda_state.h"
#include "proxy/duet_proxy_inbox.h"
#include "tport/duet_tport.h"
#include "duet/duet_proxy_ring.h"

_Static_assert((int)DUET_PROXY_AMO_FETCH == (int)DUET_AMO_FETCH && (int)DUET_PROXY_AMO_SET == (int)DUET_AMO_SET &&
                   (int)DUET_PROXY_AMO_SWAP == (int)DUET_AMO_SWAP && (int)DUET_PROXY_AMO_CSWAP == (int)DUET_AMO_CSWAP &&
                   (int)DUET_PROXY_AMO_ADD == (int)DUET_AMO_ADD && (int)DUET_CUDA_K_ADD == (int)DUET_AMO_ADD,
               "the ring's atomic ops follow duet_amo_op_t (and the kernels' DUET_CUDA_K_*)");

#define PROXY_CHUNK ((size_t)256 << 10) /* payload bytes of one message */
#define PROXY_BOX_SLOTS 4              /* messages in flight per origin and target */

enum { MSG_PUT = 1, MSG_GET, MSG_AMO, MSG_SIGNAL };
enum { PEND_NONE, PEND_PLAIN, PEND_GET, PEND_AMO };

typedef struct { /* a QUIET command taken, not complete yet */
    uint64_t ticket;
    uint64_t upto;       /* it waits for the answers of messages 1 .. upto (gseq) */
    duet_status_t st;    /* the first failure it reports */
    int blocking;
} quiet_t;

typedef struct { /* what the answer to one message completes */
    int kind;
    int blocking, last;
    uint64_t ticket;
    uint64_t gseq;   /* the message's number among all the proxy sent (1, 2, ...) */
    char *dst; /* PEND_GET: where the reply's payload goes */
    size_t len;
} pend_t;

struct duet_cuda_proxy {
    duet_cuda_heap_t *g;
    duet_heap_t *h;
    duet_comm_t root;
    duet_proxy_inbox_t *ib;
    duet_proxy_ring_t *ring;      /* mapped pinned host memory: the host's view */
    duet_proxy_ring_t *ring_dev;  /* the same, as kernels see it */
    unsigned long long *head_dev; /* the producers' ticket counter, in GPU memory */
    cudaStream_t stream;
    char *stage;                  /* pinned, two frames of DUET_PROXY_HDR + chunk: a put's chunks */
    cudaStream_t sstream;         /* the staging copies (device -> stage) */
    cudaEvent_t staged[2];        /* recorded after the copy into each frame */
    int st_frame;                 /* the frame that holds (or receives) the chunk at cur_done */
    size_t st_len;                /* its bytes, 0 when no copy into it was issued */
    uint64_t pf_ticket;           /* a command not taken yet whose first chunk is staged ... */
    int pf_frame;                 /* ... into this frame ... */
    size_t pf_len;                /* ... this many bytes (0: none) */
    char hdr[DUET_PROXY_HDR + DUET_PROXY_INLINE_MAX]; /* the frame of messages without payload, or
                                                       * with an inline put's few bytes */
    char *rstage;                 /* pinned, DUET_PROXY_HDR + chunk: replies with data */
    uint64_t *amo_host, *amo_dev; /* mapped word: an atomic's old value */
    int block_pinned;             /* the inbox's block is registered with CUDA (see proxy_make) */
    pthread_t thread;
    int running;
    _Atomic int stop;
    uint64_t next;                /* the next ticket to take */
    int busy;                     /* cur is in progress */
    duet_proxy_cmd_t cur;
    uint64_t cur_ticket;
    size_t cur_done;              /* bytes sent (PUT) or requested (GET) */
    int cur_sig_sent;
    pend_t *pend;                 /* npes x slots */
    uint64_t *harvested;          /* per pe: answers handled */
    duet_status_t *cmd_err;       /* per pe: first failure among the chunks of the command */
    uint8_t *failed;              /* per pe: declared failed (dead, or its endpoint broke) */
    duet_status_t sticky;         /* first failure no quiet taken so far covers */
    uint64_t gsent;               /* messages sent, to every pe (pend_t.gseq) */
    quiet_t quiets[DUET_PROXY_SLOTS]; /* pending quiets, oldest first (each holds a ring slot) */
    unsigned q_head, q_tail;
    _Atomic uint64_t settled;     /* every ticket below it is complete at its target */
    cudaStream_t qstream;         /* the host quiet's reads of the ticket counter */
};

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
static void fail_pe(duet_cuda_proxy_t *px, int pe, duet_status_t st)
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
static int harvest(duet_cuda_proxy_t *px, int pe)
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

/* ---------------------------------------------------------------- the target side */

/* Puts msg's work on the proxy's stream (not waited for). Errors found before any CUDA call
 * (a reach outside my part) come back at once. */
static duet_status_t issue(duet_cuda_proxy_t *px, int origin, const duet_proxy_msg_t *msg, size_t *reply_len)
{
    duet_cuda_heap_t *g = px->g;
    char *part = g->peer[g->my_pe];
    size_t need = msg->kind == MSG_PUT ? msg->len : msg->kind == MSG_GET ? msg->value : 8;
    if (msg->off > g->part_bytes || need > g->part_bytes - msg->off || (msg->kind == MSG_GET && need > px->ib->chunk))
        return DUET_FAIL(DUET_ERR_INVALID_ARG, CUDA, "GPU proxy of rank %d: rank %d's device call reaches [%llu, +%zu), "
                         "outside the %zu-byte GPU heap part", g->my_pe, origin, (unsigned long long)msg->off, need,
                         g->part_bytes);
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
static int serve(duet_cuda_proxy_t *px, int origin)
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
 * and is a put, its first chunk is staged into frame f (take() hands it over), so a
 * many-block put's commands, one chunk each, also overlap staging and sending. The command
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
static int complete_quiets(duet_cuda_proxy_t *px)
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
static int advance(duet_cuda_proxy_t *px)
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
        fail_pe(px, c->pe, st);
        duet_cuda_set_abort(px->root, DUET_ERR_PEER_FAILED);
    }
    finish_cur(px, st);
    return 1;
}

/* Takes the next command when its producer has published it. */
static int take(duet_cuda_proxy_t *px)
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

static int outstanding(duet_cuda_proxy_t *px) { return px->busy || px->q_head != px->q_tail || !all_answered(px); }

/* No progress for DUET_WAIT_TIMEOUT: everything outstanding fails, kernels are told. */
static void time_out(duet_cuda_proxy_t *px)
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
        if (px->harvested[pe] != px->ib->sent[pe]) fail_pe(px, pe, st);
    if (px->busy) finish_cur(px, st);
    duet_cuda_set_abort(px->root, DUET_ERR_TIMEOUT);
}

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
            moved |= serve(px, pe);
            moved |= harvest(px, pe);
            if (!px->failed[pe] && px->harvested[pe] != px->ib->sent[pe] && duet_ft_is_dead(px->root, pe))
                fail_pe(px, pe, DUET_FAIL(DUET_ERR_PEER_FAILED, CUDA, "GPU proxy of rank %d: rank %d died with device "
                                          "operations outstanding", px->g->my_pe, pe)), moved = 1;
        }
        for (int k = 0; k < 64; k++) { /* a burst of commands, then the inbox again */
            if (px->busy && !advance(px)) break;
            if (!px->busy && !take(px)) break;
            moved = 1;
        }
        moved |= complete_quiets(px);
        int out = outstanding(px);
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
            time_out(px);
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
    duet_cuda_heap_t *g = root->heap->gpu;
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
    duet_cuda_proxy_t *px = c->heap->gpu->proxy;
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

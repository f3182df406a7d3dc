/*
 * Groups on GPU buffers: the calls of duet_group_start/end that the GPU backend routes (device
 * buffers, or a stream) are checked at the call and wait in coll's one group queue
 * (src/coll/duet_coll_group.c); the outermost duet_group_end hands them here, in call order.
 *
 *   start; send(a, 1, s1); recv(b, 2, s2); allreduce(x, y, s1); send(c, 1, s1); end
 *
 *   s2:  ..work..  (event) ------------------------------------------------- wait -> ..later..
 *                    |                                                        |
 *   s1:  ..work..  wait -> [self copies] [ ONE executor kernel:      ] [allreduce] (event)
 *                                        [ send a | recv b | send c  ]
 *
 * Streams: everything runs on the lead stream, the stream of the group's first GPU call. It
 * first waits for every other stream the group's calls name (their earlier work, which may
 * produce a send buffer, is done first), and at the end every such stream waits for the lead
 * (their later work sees the results): all streams of a group are ordered together, as in NCCL.
 *
 * Per communicator (in the order of first appearance, as the host path): every send and
 * receive of the group to other ranks becomes one schedule run by one executor kernel
 * (duet_cuda_exec.c), so pairs that would deadlock one by one (a ring exchange larger than the
 * inboxes) progress together; the k-th send to a peer matches that peer's k-th receive from
 * this rank. The executor has one set of buffers per launch, so the steps address the calls'
 * buffers by their distance from the lowest of them (the base): every buffer is device memory
 * of one address space. A send to this rank itself pairs with its receive from itself (the k-th
 * with the k-th, the same bytes) and is a device copy on the lead stream before the kernel.
 * Then the group's collectives run one after another, in call order, on the lead stream: a
 * later one sees the results of an earlier one and of the sends and receives.
 *
 * Sends and receives use duet_cuda_coll_p2p_channels() channels whatever their size, in a group
 * or not, so both sides of a pair cut a message into the same pieces on the same channels.
 */
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include "coll/duet_coll.h"
#include "cuda/duet_cuda_coll.h"
#include "cuda/duet_cuda_coll_state.h"
#include "cuda/duet_cuda_driver.h"
#include "cuda/duet_cuda_state.h"

#define P2P_CHANNELS 8 /* channels of a send / receive (fewer when the communicator has fewer) */

/* The group's GPU calls, in call order, as coll's group queue hands them over. */
typedef struct {
    const duet_coll_group_call_t *ops;
    int n;
} group_t;

int duet_cuda_coll_p2p_channels(duet_comm_t c)
{
    int most = duet_cuda_exec_channels(c, SIZE_MAX / 2); /* as many as the inboxes allow */
    return most < P2P_CHANNELS ? most : P2P_CHANNELS;
}

static int is_p2p(const duet_cuda_coll_call_t *k) { return k->kind == DUET_COLL_SEND || k->kind == DUET_COLL_RECV; }

static char *op_buffer(const duet_cuda_coll_call_t *k)
{
    return k->kind == DUET_COLL_SEND ? (char *)(uintptr_t)k->send : (char *)k->recv;
}

static size_t op_bytes(const duet_cuda_coll_call_t *k) { return k->count * duet_datatype_size(k->dt); }

/* The k-th send of c to this rank itself is copied into its k-th receive from itself. */
static duet_status_t self_copies(const group_t *g, duet_comm_t c, cudaStream_t cs)
{
    int r = 0;
    for (int i = 0; i <= g->n; i++) {
        const duet_cuda_coll_call_t *k = i < g->n ? &g->ops[i].call : NULL;
        if (k && (g->ops[i].comm != c || k->kind != DUET_COLL_SEND || k->root != c->rank)) continue;
        while (r < g->n && (g->ops[r].comm != c || g->ops[r].call.kind != DUET_COLL_RECV ||
                            g->ops[r].call.root != c->rank))
            r++;
        if (!k && r == g->n) return DUET_OK;
        if (!k || r == g->n)
            return DUET_FAIL(DUET_ERR_INVALID_ARG, COLL, "duet_group_end: a %s rank %d itself has no matching %s in "
                             "the group", k ? "send to" : "receive from", c->rank, k ? "receive" : "send");
        const duet_cuda_coll_call_t *m = &g->ops[r++].call;
        if (op_bytes(k) != op_bytes(m))
            return DUET_FAIL(DUET_ERR_INVALID_ARG, COLL, "duet_group_end: a send of %zu bytes to rank %d itself "
                             "meets a receive of %zu bytes", op_bytes(k), c->rank, op_bytes(m));
        cudaError_t err = cudaMemcpyAsync(m->recv, k->send, op_bytes(k), cudaMemcpyDeviceToDevice, cs);
        if (err != cudaSuccess) return DUET_CUDA_FAIL_RT(err, "duet_group_end: a copy from rank %d to itself", c->rank);
    }
    return DUET_OK;
}

/* Appends one send or receive of c to another rank, its offsets taken from base. */
static duet_status_t add_message(duet_comm_t c, const duet_cuda_coll_call_t *k, const char *base, int nchan,
                                 duet_sched_t *all)
{
    size_t es = duet_datatype_size(k->dt), at = (size_t)(op_buffer(k) - base);
    /* the same arguments as a send / recv outside a group (duet_cuda_coll.c, plan_call) */
    duet_coll_args_t a = {(duet_coll_kind_t)k->kind, c->rank, c->size, k->root, k->count, es,
                          duet_cuda_exec_chunk(nchan), 0, 1, NULL, 0, 0};
    duet_sched_t one;
    duet_sched_init(&one, c->rank, c->size, es);
    duet_status_t st = duet_coll_p2p(&a, &one);
    for (int i = 0; st == DUET_OK && i < one.nsteps; i++) {
        if (one.steps[i].kind == DUET_STEP_SEND) one.steps[i].src_off += at;
        else one.steps[i].dst_off += at;
    }
    if (st == DUET_OK) st = duet_sched_append(all, &one, 0);
    duet_sched_free(&one);
    return st;
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The executor caches device schedules by key: a group's is its steps' hash (two of 64 bits),
 * so a loop that repeats a group on the same buffers uploads its schedule once. Bit 63 keeps
 * it apart from the keys of single calls. */
static void group_key(const duet_sched_t *s, int nchan, uint64_t key[3])
{
    uint64_t h1 = 0x243f6a8885a308d3ull, h2 = 0x13198a2e03707344ull;
    for (int i = 0; i < s->nsteps; i++) {
        const duet_step_t *t = &s->steps[i];
        uint64_t w[5] = {t->kind | (uint64_t)t->src_buf << 8 | (uint64_t)t->dst_buf << 16 |
                             (uint64_t)(uint32_t)t->peer << 32,
                         (uint64_t)(uint32_t)t->dep, t->src_off, t->dst_off, t->bytes};
        for (int j = 0; j < 5; j++) {
            h1 = mix64(h1 ^ w[j]);
            h2 = mix64(h2 + w[j] * 0x9e3779b97f4a7c15ull + (uint64_t)j);
        }
    }
    key[0] = 1ull << 63 | (uint64_t)nchan << 32 | (uint32_t)s->nsteps;
    key[1] = h1;
    key[2] = h2;
}

/* Runs the schedule of c's sends and receives to other ranks on cs (nothing when there are
 * none: the executor's first use is collective). */
static duet_status_t run_messages(duet_comm_t c, const duet_sched_t *all, const char *base, int nchan,
                                  cudaStream_t cs)
{
    const char *fn = "duet_group_end";
    duet_cuda_coll_state_t *s = NULL;
    duet_status_t st = duet_cuda_coll_capture_guard(c, cs, fn);
    if (st == DUET_OK) st = duet_cuda_coll_prepare(c, fn);
    if (st == DUET_OK) st = duet_cuda_coll_state(c, &s, fn);
    if (st == DUET_OK) st = duet_cuda_coll_begin(c, s, cs, fn);
    if (st) return st;
    duet_cuda_exec_call_t x = {.kind = DUET_COLL_SEND, .send = base, .recv = (char *)(uintptr_t)base,
                               .dt = DUET_UINT8, .cdt = DUET_UINT8, .op = DUET_SUM, .nchan = nchan, .plan = all};
    group_key(all, nchan, x.key);
    if ((st = duet_cuda_exec_run(c, s, &x, cs, fn))) return st;
    return duet_cuda_coll_end(s, cs, fn);
}

/* Every send and receive of c in the group: self copies, then one executor kernel. */
static duet_status_t run_p2p(const group_t *g, duet_comm_t c, cudaStream_t cs)
{
    duet_status_t st = self_copies(g, c, cs);
    const char *base = NULL;
    for (int i = 0; i < g->n; i++) {
        const duet_cuda_coll_call_t *k = &g->ops[i].call;
        if (g->ops[i].comm == c && is_p2p(k) && k->root != c->rank && (!base || op_buffer(k) < base))
            base = op_buffer(k);
    }
    if (st || !base) return st;
    int nchan = duet_cuda_coll_p2p_channels(c);
    duet_sched_t all;
    duet_sched_init(&all, c->rank, c->size, 1);
    for (int i = 0; st == DUET_OK && i < g->n; i++) {
        const duet_cuda_coll_call_t *k = &g->ops[i].call;
        if (g->ops[i].comm == c && is_p2p(k) && k->root != c->rank) st = add_message(c, k, base, nchan, &all);
    }
    if (st == DUET_OK) st = run_messages(c, &all, base, nchan, cs);
    duet_sched_free(&all);
    return st;
}

/* c's part of the group: sends and receives, then the collectives in call order. */
static duet_status_t run_comm(const group_t *g, duet_comm_t c, cudaStream_t cs)
{
    duet_status_t st = run_p2p(g, c, cs);
    if (st) return duet_error_wrap(st, "duet_group_end: the group's sends and receives");
    for (int i = 0; st == DUET_OK && i < g->n; i++) {
        if (g->ops[i].comm != c || is_p2p(&g->ops[i].call)) continue;
        duet_cuda_coll_call_t k = g->ops[i].call;
        k.stream = cs;
        if ((st = duet_cuda_coll_run(c, &k))) duet_error_wrap(st, k.fn);
    }
    return st;
}

/* Whether op i names a stream no earlier op named. */
static int first_of_stream(const group_t *g, int i)
{
    for (int j = 0; j < i; j++)
        if (g->ops[j].call.stream == g->ops[i].call.stream) return 0;
    return 1;
}

/* Orders the group's other streams with the lead: before (lead waits for each of them) or
 * after (each waits for the lead). One event serves: a wait takes its latest record. */
static duet_status_t join_streams(const group_t *g, cudaEvent_t ev, cudaStream_t lead, int after)
{
    cudaError_t err = cudaSuccess;
    if (after) err = cudaEventRecord(ev, lead);
    for (int i = 1; err == cudaSuccess && i < g->n; i++) {
        cudaStream_t s = (cudaStream_t)g->ops[i].call.stream;
        if (s == lead || !first_of_stream(g, i)) continue;
        if (after) err = cudaStreamWaitEvent(s, ev, 0);
        else if ((err = cudaEventRecord(ev, s)) == cudaSuccess) err = cudaStreamWaitEvent(lead, ev, 0);
    }
    if (err != cudaSuccess)
        return DUET_CUDA_FAIL_RT(err, "duet_group_end: ordering the group's streams %s the lead stream %p",
                                 after ? "after" : "before", (void *)lead);
    return DUET_OK;
}

static duet_status_t run_all(const group_t *g)
{
    cudaStream_t lead = (cudaStream_t)g->ops[0].call.stream;
    int several = 0;
    for (int i = 1; i < g->n; i++) several |= g->ops[i].call.stream != g->ops[0].call.stream;
    cudaEvent_t ev = NULL;
    cudaError_t err = cudaSetDevice(duet_cuda_heap_of(g->ops[0].comm->heap)->device);
    if (err == cudaSuccess && several) err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (err != cudaSuccess) return DUET_CUDA_FAIL_RT(err, "duet_group_end: preparing the group's streams");
    duet_status_t st = several ? join_streams(g, ev, lead, 0) : DUET_OK;
    for (int i = 0; st == DUET_OK && i < g->n; i++) {
        int first = 1; /* communicators in the order they first appear */
        for (int j = 0; first && j < i; j++) first = g->ops[j].comm != g->ops[i].comm;
        if (first) st = run_comm(g, g->ops[i].comm, lead);
    }
    if (several) { /* even after an error: later work on the other streams stays behind the lead */
        duet_status_t after = join_streams(g, ev, lead, 1);
        if (st == DUET_OK) st = after;
        cudaEventDestroy(ev); /* released once the recorded work is done */
    }
    return st;
}

duet_status_t duet_cuda_group_run(const duet_coll_group_call_t *calls, int n)
{
    group_t g = {calls, n};
    return n ? run_all(&g) : DUET_OK;
}

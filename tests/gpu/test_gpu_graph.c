/*
 * test_gpu_graph.c — GPU collectives captured into a CUDA graph and replayed (label gpu;
 * every rank needs a GPU; ranks may share one under MPS).
 *
 * Usage: test_gpu_graph [replay | timeout | revoke] [seed]
 *   replay (default): after one warm-up call, 100 mixed calls are captured on a stream: ten
 *     kinds, ten of each, every kernel path (the one-shot kernel, the direct kernels on
 *     buffers in the GPU heap, the schedule executor on cudaMalloc'd buffers; allreduce in
 *     and out of place, broadcast, reduce, allgather, reduce-scatter, all-to-all; int8,
 *     uint8, int32, int64; sum and max), each into its own output. The inputs are set on the
 *     stream before each launch to bytes that depend on the replay and the rank (every byte
 *     of a rank's input alike: what is checked here is that each replay runs every call
 *     anew; where data lands is test_gpu_colls' part), so a call that did not run leaves the
 *     last replay's value. The same 100 calls run once eagerly,
 *     then the graph is replayed 1,000 times; after the first 3 replays, every 50th and the
 *     last, every element of every output is checked against the reference computed here.
 *     Then an eager call after the replays, checked (the numbering goes on). Then the
 *     stream-ordered one-sided calls (put, signal, signal wait, get, barrier) in a ring,
 *     captured and replayed 1,000 times, the source set per replay by updating the graph's
 *     memset node; sampled replays checked (duet_quiet_on_stream is refused while captured,
 *     DUET_ERR_UNSUPPORTED, leaving the capture intact). And on a new
 *     communicator with no GPU call yet, a captured call is refused (DUET_ERR_UNSUPPORTED)
 *     on every rank, with nothing queued;
 *   timeout: rank 0 replays a captured allreduce the others never replay; its kernel gives up
 *     after DUET_WAIT_TIMEOUT (set short by the test's registration) and the stream completes
 *     within that bound plus 10 s; the communicator's next GPU call returns DUET_ERR_TIMEOUT;
 *   revoke: rank 0 replays a captured allreduce the others never replay; rank 1 revokes the
 *     communicator after 0.5 s; rank 0's stream completes within 10 s (DUET_WAIT_TIMEOUT is
 *     long), and its next GPU call fails.
 * Rank 0 prints "test_gpu_graph: passed".
 */
#include "duet_test.h"
#include "gpu/gpu_check.h"

#include <duet/duet_cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int me, npes;
static duet_comm_t W;
static uint64_t *g_slots; /* host symmetric: a unique id to pass around, then a done word */
#define DONE_WORD (g_slots + sizeof(duet_unique_id_t) / sizeof(uint64_t))

enum { KINDS = 10, EACH = 10, CALLS = KINDS * EACH, REPLAYS = 1000 };
typedef enum { AR, BC, RD, AG, RS, A2A } coll_t;

typedef struct {
    const char *name;
    coll_t coll;
    duet_datatype_t dt;
    duet_op_t op;
    size_t count; /* elements (allgather, reduce-scatter, all-to-all: per rank) */
    int heap;     /* buffers in the GPU heap (direct kernels), else cudaMalloc'd */
    int in_place;
} spec_t;

static const spec_t specs[KINDS] = {
    {"allreduce int32 sum 1000 (oneshot)", AR, DUET_INT32, DUET_SUM, 1000, 0, 0},
    {"allreduce uint8 sum 7 (oneshot)", AR, DUET_UINT8, DUET_SUM, 7, 0, 0},
    {"allreduce int32 sum 300000, heap (direct)", AR, DUET_INT32, DUET_SUM, 300000, 1, 0},
    {"allreduce int64 max 160000 in place, heap (direct)", AR, DUET_INT64, DUET_MAX, 160000, 1, 1},
    {"allreduce int32 sum 1 Mi (executor)", AR, DUET_INT32, DUET_SUM, 1 << 20, 0, 0},
    {"broadcast int8 100003, heap (direct)", BC, DUET_INT8, DUET_SUM, 100003, 1, 0},
    {"reduce int64 max 777, heap (direct)", RD, DUET_INT64, DUET_MAX, 777, 1, 0},
    {"allgather int32 5000, heap (direct)", AG, DUET_INT32, DUET_SUM, 5000, 1, 0},
    {"reduce-scatter int32 sum 4096 (executor)", RS, DUET_INT32, DUET_SUM, 4096, 0, 0},
    {"all-to-all int32 1000, heap (direct)", A2A, DUET_INT32, DUET_SUM, 1000, 1, 0},
};

typedef struct {
    const spec_t *sp;
    int root;
    void *in, *out; /* in place: the same */
    size_t in_bytes, out_bytes;
} call_t;

static call_t calls[CALLS];
static void *inputs[CALLS]; /* every distinct input buffer, and its bytes */
static size_t input_bytes[CALLS];
static int ninputs;
static char *host_out;
static size_t host_out_bytes;

static size_t es(duet_datatype_t dt) { return duet_datatype_size(dt); }
static size_t in_elems(const spec_t *s) { return s->coll == RS || s->coll == A2A ? s->count * (size_t)npes : s->count; }
static size_t out_elems(const spec_t *s) { return s->coll == AG || s->coll == A2A ? s->count * (size_t)npes : s->count; }

/* The byte every input byte of rank r holds in replay `rep` (-1: the eager run). */
static uint8_t byte_of(int rep, int r) { return (uint8_t)(((unsigned)(rep + 2) * 7u + (unsigned)r * 13u + 1u) & 0x7f); }

/* The element of type dt whose bytes are all b (b < 0x80: positive in every width). */
static int64_t elem_of(duet_datatype_t dt, uint8_t b)
{
    uint64_t v = 0;
    for (size_t i = 0; i < es(dt); i++) v |= (uint64_t)b << (8 * i);
    return (int64_t)v;
}

/* A value in dt's width, wrapped as the library's integer sums wrap. */
static int64_t wrap(duet_datatype_t dt, int64_t v)
{
    switch (dt) {
    case DUET_INT8: return (int8_t)v;
    case DUET_UINT8: return (uint8_t)v;
    case DUET_INT32: return (int32_t)v;
    default: return v;
    }
}

static int64_t load(duet_datatype_t dt, const char *p)
{
    int8_t a;
    uint8_t b;
    int32_t c;
    int64_t d;
    switch (dt) {
    case DUET_INT8: memcpy(&a, p, 1); return a;
    case DUET_UINT8: memcpy(&b, p, 1); return b;
    case DUET_INT32: memcpy(&c, p, 4); return c;
    default: memcpy(&d, p, 8); return d;
    }
}

/* The reduction over every rank's element of replay rep, in rank order. */
static int64_t reduced(const spec_t *s, int rep)
{
    int64_t acc = 0;
    for (int r = 0; r < npes; r++) {
        int64_t v = elem_of(s->dt, byte_of(rep, r));
        acc = r == 0 ? v : s->op == DUET_MAX ? (v > acc ? v : acc) : wrap(s->dt, acc + v);
    }
    return acc;
}

/* Element i of call k's output after replay rep; 0 in *checked where this rank's output is
 * not written (a reduce on a non-root). */
static int64_t expected(const call_t *k, size_t i, int rep, int *checked)
{
    const spec_t *s = k->sp;
    *checked = 1;
    switch (s->coll) {
    case AR: case RS: return reduced(s, rep);
    case BC: return elem_of(s->dt, byte_of(rep, k->root));
    case RD: *checked = me == k->root; return reduced(s, rep);
    default: return elem_of(s->dt, byte_of(rep, (int)(i / s->count))); /* AG, A2A: block q from rank q */
    }
}

static void *device_buffer(duet_comm_t c, const spec_t *s, size_t bytes)
{
    void *p = NULL;
    if (s->heap) {
        p = duet_malloc_device(c, bytes);
        CHECK(p != NULL, "duet_malloc_device(%zu): %s", bytes, duet_last_error());
    } else {
        CU(cudaMalloc(&p, bytes));
    }
    return p;
}

static void make_calls(void)
{
    void *shared[KINDS] = {0};
    for (int rep = 0; rep < EACH; rep++)
        for (int i = 0; i < KINDS; i++) {
            call_t *k = &calls[rep * KINDS + i];
            const spec_t *s = &specs[i];
            k->sp = s;
            k->root = (rep + i) % npes;
            k->in_bytes = in_elems(s) * es(s->dt);
            k->out_bytes = out_elems(s) * es(s->dt);
            if (k->out_bytes > host_out_bytes) host_out_bytes = k->out_bytes;
            if (s->in_place) {
                k->in = k->out = device_buffer(W, s, k->out_bytes);
                inputs[ninputs] = k->in, input_bytes[ninputs++] = k->in_bytes;
                continue;
            }
            if (!shared[i]) {
                shared[i] = device_buffer(W, s, k->in_bytes);
                inputs[ninputs] = shared[i], input_bytes[ninputs++] = k->in_bytes;
            }
            k->in = shared[i];
            k->out = device_buffer(W, s, k->out_bytes);
        }
    host_out = malloc(host_out_bytes);
    CHECK(host_out != NULL, "host memory");
}

static duet_status_t issue(const call_t *k, duet_comm_t c, cudaStream_t s)
{
    const spec_t *p = k->sp;
    switch (p->coll) {
    case AR: return duet_allreduce(k->in, k->out, p->count, p->dt, p->op, c, s);
    case BC: return duet_broadcast(k->in, k->out, p->count, p->dt, k->root, c, s);
    case RD: return duet_reduce(k->in, k->out, p->count, p->dt, p->op, k->root, c, s);
    case AG: return duet_allgather(k->in, k->out, p->count, p->dt, c, s);
    case RS: return duet_reduce_scatter(k->in, k->out, p->count, p->dt, p->op, c, s);
    default: return duet_alltoall(k->in, k->out, p->count, p->dt, c, s);
    }
}

/* On the stream: every input to replay rep's bytes. */
static void set_inputs(int rep, cudaStream_t s)
{
    for (int i = 0; i < ninputs; i++) CU(cudaMemsetAsync(inputs[i], byte_of(rep, me), input_bytes[i], s));
}

static void check_outputs(int rep, const char *when)
{
    for (int c = 0; c < CALLS; c++) {
        const call_t *k = &calls[c];
        const spec_t *s = k->sp;
        CU(cudaMemcpy(host_out, k->out, k->out_bytes, cudaMemcpyDeviceToHost));
        size_t n = out_elems(s);
        for (size_t i = 0; i < n; i++) {
            int checked;
            int64_t want = expected(k, i, rep, &checked), got = load(s->dt, host_out + i * es(s->dt));
            if (!checked) break;
            if (got != want) {
                FAIL("%s, replay %d: call %d (%s, root %d): element %zu of %zu is %lld, want %lld", when, rep, c,
                     s->name, k->root, i, n, (long long)got, (long long)want);
                break;
            }
        }
    }
}

static void test_replay(void)
{
    make_calls();
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    /* the eager run: sets up the communicator's GPU state, and checks the references */
    set_inputs(-1, s);
    for (int c = 0; c < CALLS; c++) CHECK_OK(issue(&calls[c], W, s));
    CU(cudaStreamSynchronize(s));
    check_outputs(-1, "eager");
    CHECK(dt_failures() == 0, "the eager run failed: %s", "no replay");

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int c = 0; c < CALLS; c++) {
        duet_status_t st = issue(&calls[c], W, s);
        if (st) {
            FAIL("capturing call %d (%s): %s", c, calls[c].sp->name, duet_last_error());
            break;
        }
    }
    CU(cudaStreamEndCapture(s, &graph));
    CHECK(dt_failures() == 0, "the capture failed: %s", "no replay");
    CU(cudaGraphInstantiate(&exec, graph, 0));
    size_t nodes = 0;
    CU(cudaGraphGetNodes(graph, NULL, &nodes));
    if (me == 0) printf("test_gpu_graph: %d calls captured into a graph of %zu nodes\n", CALLS, nodes);
    double t0 = now_s();
    for (int rep = 0; rep < REPLAYS && dt_failures() == 0; rep++) {
        set_inputs(rep, s);
        CU(cudaGraphLaunch(exec, s));
        if (rep < 3 || rep % 50 == 0 || rep == REPLAYS - 1) {
            CU(cudaStreamSynchronize(s));
            check_outputs(rep, "graph");
        }
    }
    CU(cudaStreamSynchronize(s));
    double t = now_s() - t0;
    if (me == 0)
        printf("test_gpu_graph: %d replays of %d calls in %.2f s (%.1f us per call, checks included)\n", REPLAYS,
               CALLS, t, t / REPLAYS / CALLS * 1e6);
    CHECK_OK(duet_comm_status(W));
    /* eager again: the numbering and the kernels' epochs go on */
    set_inputs(REPLAYS, s);
    for (int c = 0; c < CALLS; c++) CHECK_OK(issue(&calls[c], W, s));
    CU(cudaStreamSynchronize(s));
    check_outputs(REPLAYS, "eager after the replays");
    CU(cudaGraphExecDestroy(exec));
    CU(cudaGraphDestroy(graph));
    CU(cudaStreamDestroy(s));
}

/* The stream-ordered one-sided calls in a graph: per replay, a ring where every rank sets its
 * source block, puts it into its right neighbour's block, signals it (SET 1), waits for its
 * own signal, clears it, meets the others in a barrier, gets its right neighbour's source
 * block, and meets them again; both received blocks checked on sampled replays. */
enum { RMA_BYTES = 100003, RMA_REPLAYS = 1000 };
static void rma_sequence(char *src, char *dst, char *got, uint64_t *sig, int rep, cudaStream_t s)
{
    int right = (me + 1) % npes;
    CU(cudaMemsetAsync(src, byte_of(rep, me), RMA_BYTES, s));
    CHECK_OK(duet_barrier_on_stream(W, s)); /* every source is set before anyone reads it */
    CHECK_OK(duet_put_on_stream(W, dst, src, RMA_BYTES, right, s));
    CHECK_OK(duet_signal_op_on_stream(W, sig, 1, DUET_SIGNAL_SET, right, s));
    CHECK_OK(duet_signal_wait_until_on_stream(W, sig, DUET_CMP_EQ, 1, s));
    CU(cudaMemsetAsync(sig, 0, sizeof *sig, s));
    CHECK_OK(duet_get_on_stream(W, got, src, RMA_BYTES, right, s));
    CHECK_OK(duet_barrier_on_stream(W, s)); /* nobody sets its source again while it is read */
}

/* Every byte of the block `dev` is rank from's byte of replay rep (`how`: put by / got from). */
static void check_block(const char *dev, int rep, int from, const char *how, char *host, const char *when)
{
    CU(cudaMemcpy(host, dev, RMA_BYTES, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < RMA_BYTES; i++)
        if ((uint8_t)host[i] != byte_of(rep, from)) {
            FAIL("%s, replay %d: byte %zu %s rank %d is %u, want %u", when, rep, i, how, from, (uint8_t)host[i],
                 byte_of(rep, from));
            break;
        }
}

static void check_rma(const char *dst, const char *got, int rep, char *host, const char *when)
{
    check_block(dst, rep, (me + npes - 1) % npes, "put by", host, when);
    check_block(got, rep, (me + 1) % npes, "got from", host, when);
}

static void test_rma_replay(void)
{
    char *src = duet_malloc_device(W, RMA_BYTES), *dst = duet_malloc_device(W, RMA_BYTES);
    uint64_t *sig = duet_malloc_device(W, sizeof *sig);
    CHECK(src && dst && sig, "GPU heap blocks: %s", duet_last_error());
    char *got, *host = malloc(RMA_BYTES);
    CU(cudaMalloc((void **)&got, RMA_BYTES));
    CU(cudaMemset(sig, 0, sizeof *sig));
    CHECK_OK(duet_barrier(W));
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    rma_sequence(src, dst, got, sig, -1, s); /* eager first */
    CU(cudaStreamSynchronize(s));
    check_rma(dst, got, -1, host, "eager");
    /* captured with the source byte of replay 0: each replay then sets its own */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    rma_sequence(src, dst, got, sig, 0, s);
    duet_status_t qst = duet_quiet_on_stream(W, s); /* refused while captured, nothing queued */
    EXPECT(qst == DUET_ERR_UNSUPPORTED, "duet_quiet_on_stream while captured returned %s, want "
           "DUET_ERR_UNSUPPORTED: %s", duet_status_str(qst), duet_last_error());
    CU(cudaStreamEndCapture(s, &graph));
    CU(cudaGraphInstantiate(&exec, graph, 0));
    cudaGraphNode_t first = NULL;
    size_t nnodes = 0;
    CU(cudaGraphGetNodes(graph, NULL, &nnodes));
    cudaGraphNode_t *nodes = malloc(sizeof *nodes * nnodes);
    CU(cudaGraphGetNodes(graph, nodes, &nnodes));
    for (size_t i = 0; i < nnodes && !first; i++) { /* the source's memset: the root node */
        size_t deps = 0;
        enum cudaGraphNodeType t;
        CU(cudaGraphNodeGetType(nodes[i], &t));
        CU(cudaGraphNodeGetDependencies(nodes[i], NULL, NULL, &deps));
        if (t == cudaGraphNodeTypeMemset && deps == 0) first = nodes[i];
    }
    CHECK(first != NULL, "no memset root among the graph's %zu nodes", nnodes);
    double t0 = now_s();
    for (int rep = 0; rep < RMA_REPLAYS && dt_failures() == 0; rep++) {
        struct cudaMemsetParams mp;
        CU(cudaGraphMemsetNodeGetParams(first, &mp));
        mp.value = byte_of(rep, me);
        CU(cudaGraphExecMemsetNodeSetParams(exec, first, &mp));
        CU(cudaGraphLaunch(exec, s));
        if (rep < 3 || rep % 50 == 0 || rep == RMA_REPLAYS - 1) {
            CU(cudaStreamSynchronize(s));
            check_rma(dst, got, rep, host, "graph");
        }
    }
    CU(cudaStreamSynchronize(s));
    if (me == 0)
        printf("test_gpu_graph: %d replays of put, signal, wait, get and two barriers in %.2f s\n", RMA_REPLAYS,
               now_s() - t0);
    free(nodes);
    CU(cudaGraphExecDestroy(exec));
    CU(cudaGraphDestroy(graph));
    CU(cudaStreamDestroy(s));
    CU(cudaFree(got));
    free(host);
    CHECK_OK(duet_free(W, sig));
    CHECK_OK(duet_free(W, dst));
    CHECK_OK(duet_free(W, src));
}

/* A new communicator over the same ranks (its own GPU state). */
static duet_comm_t new_comm(void)
{
    duet_unique_id_t id;
    memset(&id, 0, sizeof id);
    if (me == 0) CHECK_OK(duet_get_unique_id(&id));
    CHECK_OK(dt_bcast(W, g_slots, &id, sizeof id, 0));
    duet_comm_t c = NULL;
    CHECK_OK(duet_comm_init_rank(&c, npes, id, me, NULL));
    return c;
}

/* A captured call on a communicator without GPU state yet is refused, and queues nothing. */
static void test_first_call_refused(void)
{
    duet_comm_t c = new_comm();
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int32_t *buf;
    CU(cudaMalloc((void **)&buf, 64 * sizeof *buf));
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    duet_status_t st = duet_allreduce(buf, buf, 64, DUET_INT32, DUET_SUM, c, s);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", duet_last_error());
    cudaGraph_t graph = NULL;
    CU(cudaStreamEndCapture(s, &graph));
    EXPECT(st == DUET_ERR_UNSUPPORTED && strstr(msg, "cudaStreamBeginCapture"),
           "a captured first call returned %s, want DUET_ERR_UNSUPPORTED naming the way out: %s", duet_status_str(st),
           msg);
    size_t nodes = 99;
    CU(cudaGraphGetNodes(graph, NULL, &nodes));
    EXPECT(nodes == 0, "the refused call left %zu nodes in the graph", nodes);
    CU(cudaGraphDestroy(graph));
    /* the communicator still works: an eager call, checked */
    int32_t h[64];
    for (int i = 0; i < 64; i++) h[i] = me + i;
    CU(cudaMemcpy(buf, h, sizeof h, cudaMemcpyHostToDevice));
    CHECK_OK(duet_allreduce(buf, buf, 64, DUET_INT32, DUET_SUM, c, s));
    CU(cudaStreamSynchronize(s));
    CU(cudaMemcpy(h, buf, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; i++)
        EXPECT(h[i] == npes * (npes - 1) / 2 + npes * i, "element %d is %d after the refusal", i, h[i]);
    CU(cudaFree(buf));
    CU(cudaStreamDestroy(s));
    CHECK_OK(duet_comm_destroy(c));
}

/* Rank 0 replays a captured allreduce that no one else runs: its stream must complete
 * within the bound (the wait timeout, or the revoke that rank 1 makes). */
static void test_fault(int revoke)
{
    CHECK(npes >= 2, "%s", "needs 2 ranks");
    duet_comm_t c = new_comm();
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int32_t *buf;
    CU(cudaMalloc((void **)&buf, 256 * sizeof *buf));
    CU(cudaMemset(buf, 0, 256 * sizeof *buf));
    CHECK_OK(duet_allreduce(buf, buf, 256, DUET_INT32, DUET_SUM, c, s)); /* the warm-up, on every rank */
    CU(cudaStreamSynchronize(s));
    CHECK_OK(duet_barrier(W));
    const char *wt = getenv("DUET_WAIT_TIMEOUT");
    double bound = revoke ? 10.0 : wt ? atof(wt) : 300.0;
    if (me == 0) {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        CHECK_OK(duet_allreduce(buf, buf, 256, DUET_INT32, DUET_SUM, c, s));
        CU(cudaStreamEndCapture(s, &graph));
        CU(cudaGraphInstantiate(&exec, graph, 0));
        double t0 = now_s();
        CU(cudaGraphLaunch(exec, s));
        CU(cudaStreamSynchronize(s));
        double t = now_s() - t0;
        printf("test_gpu_graph: %s: the replay alone ended after %.2f s\n", revoke ? "revoke" : "timeout", t);
        EXPECT(t <= bound + 10.0, "the replay waited %.2f s, the bound is %.1f s (+10)", t, bound);
        if (!revoke) EXPECT(t >= bound * 0.5, "the replay ended after %.2f s, before the wait timeout %.1f s", t, bound);
        duet_status_t st = duet_allreduce(buf, buf, 256, DUET_INT32, DUET_SUM, c, s);
        EXPECT(st == (revoke ? DUET_ERR_REVOKED : DUET_ERR_TIMEOUT), "the next GPU call returned %s, want %s: %s",
               duet_status_str(st), revoke ? "DUET_ERR_REVOKED" : "DUET_ERR_TIMEOUT", duet_last_error());
        CU(cudaGraphExecDestroy(exec));
        CU(cudaGraphDestroy(graph));
        /* the others wait for this outside Duet: a host barrier would time out as the kernel did */
        uint64_t one = 1;
        for (int pe = 1; pe < npes; pe++) CHECK_OK(duet_put(W, DONE_WORD, &one, sizeof one, pe));
        CHECK_OK(duet_quiet(W));
    } else {
        if (me == 1 && revoke) {
            usleep(500000);
            CHECK_OK(duet_comm_revoke(c));
        }
        double t0 = now_s();
        while (!__atomic_load_n(DONE_WORD, __ATOMIC_ACQUIRE) && now_s() - t0 < bound + 60) usleep(1000);
        CHECK(__atomic_load_n(DONE_WORD, __ATOMIC_ACQUIRE) == 1, "rank 0 did not finish within %.0f s", bound + 60);
    }
    CHECK_OK(duet_barrier(W));
    EXPECT_OK(duet_comm_destroy(c));
    CU(cudaFree(buf));
    CU(cudaStreamDestroy(s));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 && argv[1][0] >= 'a' ? argv[1] : "replay";
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    g_slots = duet_calloc(W, 1, sizeof(duet_unique_id_t) + sizeof(uint64_t));
    CHECK(g_slots != NULL, "host slots");
    CHECK(duet_cuda_available(), "no GPU here: %s", "this test needs one");
    CU(cudaSetDevice(duet_cuda_device(W)));
    if (strcmp(mode, "replay") == 0) {
        test_replay();
        test_rma_replay();
        test_first_call_refused();
    } else if (strcmp(mode, "timeout") == 0 || strcmp(mode, "revoke") == 0) {
        test_fault(mode[0] == 'r');
    } else {
        FATAL("unknown mode %s", mode);
    }
    CHECK_OK(duet_barrier(W));
    CHECK_OK(duet_free(W, g_slots));
    CHECK_OK(duet_finalize());
    int rc = dt_finish();
    if (me == 0 && rc == 0) printf("test_gpu_graph: %s: passed\n", mode);
    return rc;
}

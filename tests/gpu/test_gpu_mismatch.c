/*
 * test_gpu_mismatch.c — ranks that make different collective calls on GPU buffers are caught
 * (src/cuda/duet_cuda_sig_kern.h, src/coll/duet_coll_sig.h), run by every rank under duetrun.
 *
 * For every collective (allreduce, broadcast, reduce, allgather, reduce-scatter, all-to-all)
 * and every field it has (count, datatype, op, root), at a small size (2 elements: an allreduce
 * runs the one-shot kernel) and a large one (300,000 int32: the executor, or with
 * TEST_MISMATCH_HEAP=1 buffers in the GPU heap, the direct kernels), one rank (a different one
 * each case) makes the call on stream s1 with that field changed:
 *   count     n elements against 2n ("path": 2 against 100,000, an allreduce that takes the
 *             one-shot kernel on one side and the host agreement and the executor on the other),
 *   datatype  int32 against float32 (the same size: only the signature tells them apart),
 *   op        sum against max,   root  0 against 1,
 *   placement (TEST_MISMATCH_HEAP=1, large) the odd rank's buffers from cudaMalloc, the others'
 *             in the GPU heap: each rank decides on the direct kernel from its own buffers,
 *             asking no one, so the ranks run different kernels; the message must say so.
 * Every rank must get DUET_ERR_INVALID_ARG naming the odd rank and the field ("with count", ...)
 * by the time it has done all of these, in order, each only while the ones before returned
 * DUET_OK: the call itself; cudaStreamSynchronize and duet_comm_status; a host allreduce; then a
 * matched GPU call of the same collective (a message the mismatched call left behind must be
 * caught, never read as this call's) with cudaStreamSynchronize and duet_comm_status; and a
 * second host allreduce. A GPU call runs asynchronously, so its kernel's finding comes back at
 * the next call or duet_comm_status, as NCCL's asynchronous errors do. No rank may time out. The
 * communicator is then revoked (a matched host allreduce fails with DUET_ERR_INVALID_ARG), and
 * duet_comm_shrink gives the next case's communicator, whose first call (a GPU allreduce of
 * random integers) is checked element by element against the reference.
 *
 * Variants (tests/gpu/mismatch.cmake): DUET_TEST_SIG_POST=0 turns off the host's comparison
 * at queue time, so that the kernels (and the host agreement a call makes) must find it;
 * DUET_ALGO naming an executor algorithm for every collective as well keeps every call in the executor without a host agreement, so that
 * the executor's kernel alone finds it.
 *
 * Usage: test_gpu_mismatch [seed]
 */
#include "duet_test.h"
#include "gpu_check.h"
#include <duet/duet_cuda.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LARGE 300000

enum { AR, BC, RD, AG, RS, A2A, NCOLL };
static const char *coll_name[NCOLL] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter", "alltoall"};
enum { F_COUNT, F_PATH, F_DTYPE, F_OP, F_ROOT, F_PLACE, NFIELD };
static const char *field_name[NFIELD] = {"count", "path", "datatype", "op", "root", "placement"};
static const char *field_word[NFIELD] = {"with count", "with count", "with datatype", "with op", "with root",
                                         "the GPU heap"};

static int me, np, use_heap;
static long ncases, npassed;
static char ctx[200];
static cudaStream_t s1;
static char *dsend, *drecv; /* device buffers for every case (the largest size) */
static char *csend, *crecv; /* with TEST_MISMATCH_HEAP: the same from cudaMalloc (placement) */
static char *call_send, *call_recv; /* what the next gpu_call passes */
static size_t sbytes, rbytes;

static int reduces(int coll) { return coll == AR || coll == RD || coll == RS; }
static int rooted(int coll) { return coll == BC || coll == RD; }
static size_t send_elems(int coll, size_t n) { return coll == RS || coll == A2A ? n * (size_t)np : n; }
static size_t recv_elems(int coll, size_t n) { return coll == AG || coll == A2A ? n * (size_t)np : n; }

static void bufs_make(duet_comm_t w)
{
    sbytes = (size_t)2 * LARGE * (size_t)np * 4 + 64;
    rbytes = sbytes;
    if (use_heap) {
        dsend = duet_malloc_device(w, sbytes);
        drecv = duet_malloc_device(w, rbytes);
        CU(cudaMalloc((void **)&csend, sbytes));
        CU(cudaMalloc((void **)&crecv, rbytes));
    } else {
        CU(cudaMalloc((void **)&dsend, sbytes));
        CU(cudaMalloc((void **)&drecv, rbytes));
    }
    CHECK(dsend && drecv, "out of GPU memory for %zu + %zu bytes: %s", sbytes, rbytes, duet_last_error());
}

/* A matched GPU allreduce of random integers on c, checked against the reference. */
static void matched_gpu_allreduce(duet_comm_t c, uint64_t key, const char *what)
{
    enum { N = 4099 };
    static int64_t in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = (int64_t)(mix(key * 1000003u + (uint64_t)me * N + (uint64_t)i) % 1000000);
    CU(cudaMemcpy(dsend, in, sizeof in, cudaMemcpyHostToDevice));
    CU(cudaMemset(drecv, 0x5a, sizeof out));
    duet_status_t st = duet_allreduce(dsend, drecv, N, DUET_INT64, DUET_SUM, c, s1);
    CU(cudaStreamSynchronize(s1));
    if (st == DUET_OK) st = duet_comm_status(c);
    if (st != DUET_OK) {
        FAIL("%s: the matched GPU allreduce returned %s: %s", what, duet_status_str(st), duet_last_error());
        return;
    }
    CU(cudaMemcpy(out, drecv, sizeof out, cudaMemcpyDeviceToHost));
    long bad = 0;
    for (int i = 0; i < N; i++) {
        int64_t want = 0;
        for (int r = 0; r < np; r++) want += (int64_t)(mix(key * 1000003u + (uint64_t)r * N + (uint64_t)i) % 1000000);
        bad += out[i] != want;
    }
    EXPECT(bad == 0, "%s: %ld of %d elements of the matched GPU allreduce are wrong", what, bad, N);
}

static duet_status_t gpu_call(duet_comm_t c, int coll, size_t n, duet_datatype_t dt, duet_op_t op, int root)
{
    char *snd = call_send ? call_send : dsend, *rcv = call_recv ? call_recv : drecv;
    call_send = call_recv = NULL; /* the next call: the usual buffers */
    switch (coll) {
    case AR: return duet_allreduce(snd, rcv, n, dt, op, c, s1);
    case BC: return duet_broadcast(snd, rcv, n, dt, root, c, s1);
    case RD: return duet_reduce(snd, rcv, n, dt, op, root, c, s1);
    case AG: return duet_allgather(snd, rcv, n, dt, c, s1);
    case RS: return duet_reduce_scatter(snd, rcv, n, dt, op, c, s1);
    default: return duet_alltoall(snd, rcv, n, dt, c, s1);
    }
}

static duet_status_t host_allreduce(duet_comm_t c)
{
    int64_t x = me, y = 0;
    return duet_allreduce(&x, &y, 1, DUET_INT64, DUET_SUM, c, NULL);
}

/* The first of the steps (see the top) that does not return DUET_OK, and its message. */
static duet_status_t until_found(duet_comm_t c, int coll, size_t n, duet_datatype_t dt, duet_op_t op, int root,
                                 size_t base_n, char *msg, size_t len, const char **where)
{
    duet_status_t st = gpu_call(c, coll, n, dt, op, root);
    *where = "the call";
    if (st == DUET_OK) {
        CU(cudaStreamSynchronize(s1));
        st = duet_comm_status(c);
        *where = "duet_comm_status after it";
    }
    if (st == DUET_OK) st = host_allreduce(c), *where = "a host allreduce after it";
    if (st == DUET_OK) {
        st = gpu_call(c, coll, base_n, DUET_INT32, DUET_SUM, 0);
        *where = "the matched GPU call after it";
        if (st == DUET_OK) {
            CU(cudaStreamSynchronize(s1));
            st = duet_comm_status(c);
            *where = "duet_comm_status after the matched GPU call";
        }
    }
    if (st == DUET_OK) st = host_allreduce(c), *where = "the second host allreduce";
    snprintf(msg, len, "%s", duet_last_error());
    CU(cudaStreamSynchronize(s1));
    return st;
}

static duet_comm_t run_case(duet_comm_t c, int coll, int field, int large, int odd, uint64_t key)
{
    snprintf(ctx, sizeof ctx, "%s, %s differs on rank %d, %s%s", coll_name[coll], field_name[field], odd,
             large ? "large" : "small", use_heap ? ", in the GPU heap" : "");
    dt_set_context(ctx);
    ncases++;
    long before = dt_failures();
    matched_gpu_allreduce(c, key, "before the mismatch");
    size_t base_n = large ? LARGE : 2, n = base_n;
    duet_datatype_t dt = DUET_INT32;
    duet_op_t op = DUET_SUM;
    int root = 0;
    if (me == odd) {
        if (field == F_COUNT) n *= 2;
        if (field == F_PATH) n = 100000;
        if (field == F_DTYPE) dt = DUET_FLOAT32;
        if (field == F_OP) op = DUET_MAX;
        if (field == F_ROOT) root = 1;
    }
    char *snd = me == odd && field == F_PLACE ? csend : dsend, *rcv = me == odd && field == F_PLACE ? crecv : drecv;
    CU(cudaMemset(snd, me + 1, send_elems(coll, n) * 4));
    CU(cudaMemset(rcv, 0x5a, recv_elems(coll, n) * 4));
    call_send = snd, call_recv = rcv; /* the mismatched call's buffers */
    CU(cudaDeviceSynchronize());
    char msg[512];
    const char *where = "";
    double t0 = now_s();
    duet_status_t st = until_found(c, coll, n, dt, op, root, base_n, msg, sizeof msg, &where);
    double took = now_s() - t0;
    EXPECT(st == DUET_ERR_INVALID_ARG, "%s returned %s after %.2f s, want DUET_ERR_INVALID_ARG: %s", where,
           duet_status_str(st), took, msg);
    if (st == DUET_ERR_INVALID_ARG)
        EXPECT(dt_names_rank(msg, odd, field_word[field]), "%s: the message does not name rank %d and \"%s\": %s",
               where, odd, field_word[field], msg);
    st = host_allreduce(c); /* revoked: every rank fails at entry */
    EXPECT(st == DUET_ERR_INVALID_ARG, "a matched host allreduce after the mismatch returned %s, want "
           "DUET_ERR_INVALID_ARG (revoked): %s", duet_status_str(st), duet_last_error());
    duet_comm_t next = dt_shrink_whole(c);
    if (dt_failures() == before) npassed++;
    dt_set_context(NULL);
    return next;
}

int main(int argc, char **argv)
{
    CHECK_OK(duet_init());
    duet_comm_t W = dt_world(&me, &np);
    CHECK(duet_cuda_available() && duet_cuda_device(W) >= 0, "no GPU heap: this test needs a GPU on every rank");
    CU(cudaSetDevice(duet_cuda_device(W)));
    CU(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    uint64_t *sym = duet_malloc(W, sizeof *sym);
    CHECK(sym, "duet_malloc: %s", duet_last_error());
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL));
    CHECK_OK(dt_share_seed(W, sym, &seed));
    use_heap = getenv("TEST_MISMATCH_HEAP") && atoi(getenv("TEST_MISMATCH_HEAP"));
    const char *algo = getenv("DUET_ALGO"), *post = getenv("DUET_TEST_SIG_POST");
    if (me == 0)
        printf("test_gpu_mismatch: %d ranks, DUET_ALGO=%s, DUET_TEST_SIG_POST=%s%s\n", np,
               algo && algo[0] ? algo : "(tuner)", post ? post : "1", use_heap ? ", buffers in the GPU heap" : "");
    CHECK(np >= 2, "2 ranks at least: nobody to disagree with");
    bufs_make(W);
    double t0 = now_s();
    duet_comm_t c = W;
    uint64_t k = 0;
    for (int coll = 0; coll < NCOLL; coll++)
        for (int field = 0; field < NFIELD; field++) {
            if ((field == F_OP && !reduces(coll)) || (field == F_ROOT && !rooted(coll))) continue;
            if (field == F_PATH && coll != AR) continue;
            if (field == F_PLACE && !use_heap) continue;
            for (int large = 0; large < 2; large++) {
                if (field == F_PATH && large) continue;
                if (field == F_PLACE && !large) continue; /* a small allreduce takes no direct kernel */
                int odd = (int)((uint64_t)(coll * 7 + field * 3 + large) % (uint64_t)np);
                if (field == F_ROOT) odd = (coll + large) % 2 ? 0 : 1; /* the root itself, or its replacement */
                c = run_case(c, coll, field, large, odd, seed + ++k);
            }
        }
    dt_set_context("after every case");
    matched_gpu_allreduce(c, seed + 999, "the last communicator");
    if (c != W) EXPECT_OK(duet_comm_destroy(c));
    if (!use_heap) cudaFree(dsend), cudaFree(drecv);
    else cudaFree(csend), cudaFree(crecv);
    cudaStreamDestroy(s1);
    if (me == 0) printf("test_gpu_mismatch: %ld of %ld cases passed (%.2f s)\n", npassed, ncases, now_s() - t0);
    CHECK_OK(duet_finalize());
    return dt_finish();
}

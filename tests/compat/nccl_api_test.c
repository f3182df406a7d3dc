/*
 * nccl_api_test.c — a program written only against NCCL's API, run on Duet's libnccl.so.2:
 * every collective, datatype and operation (PreMulSum included), in and out of place, at
 * sizes 0, 1, odd and large; groups of sends and receives (to self too); split; errors and
 * their messages; registration, windows, ncclMemAlloc; async error, finalize, destroy.
 * On GPU buffers (NCCL_TEST_DEVICE) the same, with the PreMulSum scalar by pointer in device
 * memory (written in stream order just before the call, overwritten just after: the value the
 * stream holds at the call counts) and in pinned host memory; gather, scatter and self
 * sends / receives as GPU groups.
 * Every result is checked element by element against a reference computed from the seeded
 * inputs of all ranks; outputs are poisoned before each call.
 *
 * usage: nccl_api_test NRANKS [seed=N] — forks NRANKS ranks (rank 0 makes the id and hands
 * it to the others, NCCL's pattern). Built against NVIDIA's nccl.h (nccl_api_test_real) and
 * Duet's (nccl_api_test_ours); with NCCL_TEST_DEVICE on GPU buffers (label gpu).
 */
#include <math.h>
#include "nccl_test_util.h"

static const int nt_types[] = {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64,
                               ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
#define NT_NTYPES ((int)(sizeof nt_types / sizeof nt_types[0]))

enum { K_ALLREDUCE, K_REDUCE, K_BROADCAST, K_BCAST, K_ALLGATHER, K_REDUCESCATTER, K_ALLTOALL, K_GATHER, K_SCATTER,
       K_COUNT };
static const char *kind_names[K_COUNT] = {"allreduce", "reduce", "broadcast", "bcast", "allgather",
                                          "reducescatter", "alltoall", "gather", "scatter"};
static int reduces(int k) { return k == K_ALLREDUCE || k == K_REDUCE || k == K_REDUCESCATTER; }

/* An operation of a case: a built-in one, or PreMulSum with its scalar and residence. */
typedef struct {
    int builtin;   /* ncclSum.. ncclAvg, or -1: PreMulSum */
    int residence; /* PreMulSum */
    const char *name;
    int pinned;    /* ncclScalarDevice: the scalar in pinned host memory (device variant) */
} op_case_t;
static const op_case_t op_cases[] = {{ncclSum, 0, "sum", 0}, {ncclProd, 0, "prod", 0}, {ncclMax, 0, "max", 0},
                                     {ncclMin, 0, "min", 0}, {ncclAvg, 0, "avg", 0},
                                     {-1, ncclScalarHostImmediate, "premulsum(host)", 0},
                                     {-1, ncclScalarDevice, "premulsum(by pointer)", 0},
                                     {-1, ncclScalarDevice, "premulsum(pinned host pointer)", 1}};
/* the operations run per reducing case: the pinned-host scalar only on the GPU */
#define NT_NOPS (NT_DEVICE ? 8 : 7)

static uint64_t call_no; /* the same sequence on every rank */
static char ctx[256];

/* Elements of the send / receive buffers for count. */
static void counts(int k, size_t count, int n, size_t *sc, size_t *rc)
{
    *sc = *rc = count;
    if (k == K_ALLGATHER || k == K_GATHER) *rc = count * (size_t)n;
    if (k == K_REDUCESCATTER || k == K_SCATTER) *sc = count * (size_t)n;
    if (k == K_ALLTOALL) *sc = *rc = count * (size_t)n;
}

/* Rank q's input element i for this call. */
static double input(uint64_t call, int q, size_t i, int prod)
{
    return prod ? nt_value(call, q, i, 1, 3) : nt_value(call, q, i, 0, 7);
}

static double reduce_ref(int op, uint64_t call, int n, size_t i, double scalar)
{
    double acc = 0;
    for (int q = 0; q < n; q++) {
        double v = input(call, q, i, op == ncclProd);
        if (q == 0) acc = op == -1 ? v * scalar : v;
        else if (op == ncclSum || op == ncclAvg) acc += v;
        else if (op == -1) acc += v * scalar;
        else if (op == ncclProd) acc *= v;
        else if (op == ncclMax) acc = v > acc ? v : acc;
        else if (op == ncclMin) acc = v < acc ? v : acc;
    }
    return acc;
}

/* One call of kind k; returns 0, or 1 after a failed NCCL call (reported). */
static int run_case(ncclComm_t comm, int me, int n, int k, int dt, const op_case_t *oc, size_t count, int in_place,
                    int root)
{
    uint64_t call = ++call_no;
    size_t elem = nt_size(dt), sc, rc;
    counts(k, count, n, &sc, &rc);
    snprintf(ctx, sizeof ctx, "%s %s %s count %zu %s root %d call %" PRIu64, kind_names[k], nt_type_name(dt),
             oc ? oc->name : "-", count, in_place ? "in place" : "out of place", root, call);
    nt_context = ctx;
    int op = oc ? oc->builtin : ncclSum, prod = op == ncclProd;
    /* host images: my input, the receive buffer (poisoned, input in place where it belongs) */
    unsigned char *send_h = malloc(sc * elem + 1), *recv_h = malloc(rc * elem + 1), *want = malloc(rc * elem + 1);
    for (size_t i = 0; i < sc; i++) nt_store(dt, send_h, i, input(call, me, i, prod));
    memset(recv_h, 0x5a, rc * elem);
    void *recv_d = nt_alloc(rc * elem), *send_d = NULL;
    size_t in_off = 0; /* where the input sits inside recv when in place (elements) */
    int use_in_place = in_place && !(k == K_GATHER && me != root) && !(k == K_SCATTER && me != root);
    if (k == K_ALLGATHER) in_off = (size_t)me * count;
    if (k == K_GATHER) in_off = (size_t)root * count;
    if (use_in_place && (k == K_REDUCESCATTER || k == K_SCATTER)) {
        /* recv lies inside send: send is the big buffer, recv = send + rank * count */
        send_d = nt_alloc(sc * elem);
        nt_put(send_d, send_h, sc * elem);
        nt_free(recv_d);
        recv_d = (char *)send_d + (size_t)(k == K_SCATTER ? root : me) * count * elem;
    } else if (use_in_place) {
        memcpy(recv_h + in_off * elem, send_h, sc * elem);
        nt_put(recv_d, recv_h, rc * elem);
        send_d = (char *)recv_d + in_off * elem;
    } else {
        send_d = nt_alloc(sc * elem);
        nt_put(send_d, send_h, sc * elem);
        nt_put(recv_d, recv_h, rc * elem);
    }
    /* the operation */
    ncclRedOp_t rop = (ncclRedOp_t)op;
    unsigned char scalar[8], *scalar_p = scalar, later[8];
    double scalar_v = 0;
    if (oc && op == -1) {
        nt_store(dt, scalar, 0, 2);
        /* by pointer: the value at the call counts; immediate: the value at creation */
        scalar_v = oc->residence == ncclScalarDevice ? 3 : 2;
        nt_store(dt, later, 0, 7);
#ifdef NCCL_TEST_DEVICE
        if (oc->residence == ncclScalarDevice) { /* device (or pinned host) memory, read by the GPU */
            if (oc->pinned ? cudaMallocHost((void **)&scalar_p, 8) != cudaSuccess
                           : (scalar_p = nt_alloc(8)) == NULL)
                return FAIL("no memory for the scalar"), 1;
            nt_put(scalar_p, scalar, 8);
        }
#endif
        NCCL_OK(ncclRedOpCreatePreMulSum(&rop, scalar_p, (ncclDataType_t)dt, (ncclScalarResidence_t)oc->residence,
                                         comm));
        nt_store(dt, scalar, 0, oc->residence == ncclScalarDevice ? 3 : 5);
#ifdef NCCL_TEST_DEVICE
        /* on the GPU the scalar is written in the call's stream order: 3 just before, 7 after */
        if (oc->residence == ncclScalarDevice && !oc->pinned)
            cudaMemcpyAsync(scalar_p, scalar, 8, cudaMemcpyHostToDevice, nt_stream);
        else if (oc->residence == ncclScalarDevice)
            memcpy(scalar_p, scalar, 8); /* pinned: the host writes it; read when the kernel runs */
#else
        (void)later;
#endif
    }
    ncclDataType_t t = (ncclDataType_t)dt;
    ncclResult_t r = ncclInternalError;
    switch (k) {
    case K_ALLREDUCE: r = ncclAllReduce(send_d, recv_d, count, t, rop, comm, nt_stream); break;
    case K_REDUCE: r = ncclReduce(send_d, recv_d, count, t, rop, root, comm, nt_stream); break;
    case K_BROADCAST: r = ncclBroadcast(send_d, recv_d, count, t, root, comm, nt_stream); break;
    case K_BCAST: r = ncclBcast(recv_d, count, t, root, comm, nt_stream); break;
    case K_ALLGATHER: r = ncclAllGather(send_d, recv_d, count, t, comm, nt_stream); break;
    case K_REDUCESCATTER: r = ncclReduceScatter(send_d, recv_d, count, t, rop, comm, nt_stream); break;
    case K_ALLTOALL: r = ncclAlltoAll(send_d, recv_d, count, t, comm, nt_stream); break;
    case K_GATHER: r = ncclGather(send_d, recv_d, count, t, root, comm, nt_stream); break;
    case K_SCATTER: r = ncclScatter(send_d, recv_d, count, t, root, comm, nt_stream); break;
    }
    if (r != ncclSuccess) FAIL("the call returned %d (%s): %s", (int)r, ncclGetErrorString(r), ncclGetLastError(NULL));
#ifdef NCCL_TEST_DEVICE
    if (oc && op == -1 && oc->residence == ncclScalarDevice && !oc->pinned) /* too late for the call */
        cudaMemcpyAsync(scalar_p, later, 8, cudaMemcpyHostToDevice, nt_stream);
#endif
    if (nt_sync()) FAIL("stream synchronize failed");
    if (oc && op == -1) NCCL_OK(ncclRedOpDestroy(rop, comm));
#ifdef NCCL_TEST_DEVICE
    if (scalar_p != scalar) {
        if (oc->pinned) cudaFreeHost(scalar_p);
        else nt_free(scalar_p);
    }
#endif
    nt_get(recv_h, recv_d, rc * elem);
    /* the reference */
    int check = r == ncclSuccess && !((k == K_REDUCE || k == K_GATHER) && me != root);
    size_t region = rc;
    for (size_t j = 0; check && j < region; j++) {
        size_t b = count ? j / count : 0, i = count ? j % count : 0;
        double e = 0;
        switch (k) {
        case K_ALLREDUCE:
        case K_REDUCE: e = reduce_ref(op, call, n, j, scalar_v); break;
        case K_REDUCESCATTER: e = reduce_ref(op, call, n, (size_t)me * count + j, scalar_v); break;
        case K_BROADCAST:
        case K_BCAST: e = input(call, root, j, 0); break;
        case K_ALLGATHER:
        case K_GATHER: e = input(call, (int)b, i, 0); break;
        case K_ALLTOALL: e = input(call, (int)b, (size_t)me * count + i, 0); break;
        case K_SCATTER: e = input(call, root, (size_t)me * count + j, 0); break;
        }
        int avg = reduces(k) && op == ncclAvg;
        if (avg) e = nt_is_float(dt) ? e / n : (double)((int64_t)e / n);
        nt_store(dt, want, j, e);
        double got = nt_load(dt, recv_h, j), w = nt_load(dt, want, j);
        double tol = !avg || !nt_is_float(dt) ? 0 : dt == ncclFloat16 ? 1e-3 : dt == ncclBfloat16 ? 8e-3 : 1e-6;
        int ok = tol ? fabs(got - w) <= tol * fabs(w) + 1e-12 : memcmp(recv_h + j * elem, want + j * elem, elem) == 0;
        if (!ok) {
            FAIL("element %zu is %g, want %g", j, got, w);
            break;
        }
    }
    if (!(use_in_place && (k == K_REDUCESCATTER || k == K_SCATTER))) nt_free(recv_d);
    if (!use_in_place || k == K_REDUCESCATTER || k == K_SCATTER) nt_free(send_d);
    free(send_h), free(recv_h), free(want);
    nt_context = "";
    return r == ncclSuccess ? 0 : 1;
}

static int collectives(ncclComm_t comm, int me, int n)
{
    static const size_t sizes[] = {0, 1, 13, 1237};
    for (int k = 0; k < K_COUNT; k++) {
        for (int ti = 0; ti < NT_NTYPES; ti++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
                for (int ip = 0; ip < 2; ip++) {
                    if (k == K_BCAST && !ip) continue; /* in place only */
                    int root = (int)((call_no * 7) % (uint64_t)n);
                    int nops = reduces(k) ? NT_NOPS : 1;
                    for (int o = 0; o < nops; o++)
                        run_case(comm, me, n, k, nt_types[ti], reduces(k) ? &op_cases[o] : NULL, sizes[si], ip,
                                 root);
                }
    }
    /* large-ish, a few shapes */
    const size_t big = 100003;
    run_case(comm, me, n, K_ALLREDUCE, ncclFloat32, &op_cases[0], big, 0, 0);
    run_case(comm, me, n, K_ALLREDUCE, ncclInt8, &op_cases[2], big, 1, 0);
    run_case(comm, me, n, K_ALLREDUCE, ncclBfloat16, &op_cases[0], big, 0, 0);
    run_case(comm, me, n, K_BROADCAST, ncclFloat64, NULL, big, 0, n - 1);
    run_case(comm, me, n, K_REDUCE, ncclFloat16, &op_cases[0], big, 0, n / 2);
    run_case(comm, me, n, K_ALLGATHER, ncclInt32, NULL, big, 1, 0);
    run_case(comm, me, n, K_REDUCESCATTER, ncclFloat32, &op_cases[4], big, 0, 0);
    run_case(comm, me, n, K_ALLTOALL, ncclUint64, NULL, big / 8, 0, 0);
    run_case(comm, me, n, K_ALLREDUCE, ncclFloat32, &op_cases[5], big, 1, 0);
    run_case(comm, me, n, K_REDUCESCATTER, ncclBfloat16, &op_cases[6], big / 4, 0, 0);
    run_case(comm, me, n, K_REDUCE, ncclFloat16, &op_cases[NT_NOPS - 1], big, 1, n - 1);
    run_case(comm, me, n, K_GATHER, ncclUint8, NULL, big, 0, n - 1);
    run_case(comm, me, n, K_GATHER, ncclFloat64, NULL, big / 8, 1, 0);
    run_case(comm, me, n, K_SCATTER, ncclInt64, NULL, big / 8, 1, 0);
    run_case(comm, me, n, K_SCATTER, ncclFloat16, NULL, big, 0, n / 2);
    run_case(comm, me, n, K_ALLTOALL, ncclFloat32, NULL, big / 8, 1, 0);
    return 0;
}

/* Send / receive in groups: every pair (self included), a ring mixed with a collective, a
 * gather inside a group between a self send and its receive; on host or (NCCL_TEST_DEVICE) GPU
 * buffers. Outside a group a send to self is refused (it could never complete). */
static int point_to_point(ncclComm_t comm, int me, int n)
{
    static const size_t sizes[] = {0, 1, 1237, 100003};
    nt_context = "send/recv";
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t c = sizes[si], bytes = sizeof(float) * (c + 1) * (size_t)n;
        uint64_t call = ++call_no;
        float *out = malloc(bytes), *in = malloc(bytes);
        float *out_d = nt_alloc(bytes), *in_d = nt_alloc(bytes);
        for (int q = 0; q < n; q++)
            for (size_t i = 0; i < c; i++) out[(size_t)q * c + i] = (float)nt_value(call, me * 64 + q, i, 0, 1000);
        memset(in, 0xff, bytes);
        nt_put(out_d, out, bytes);
        nt_put(in_d, in, bytes);
        /* every pair, self included: block q of out goes to rank q, block q of in comes from q */
        NCCL_OK(ncclGroupStart());
        for (int q = 0; q < n; q++) {
            NCCL_OK(ncclSend(out_d + (size_t)q * c, c, ncclFloat32, q, comm, nt_stream));
            NCCL_OK(ncclRecv(in_d + (size_t)q * c, c, ncclFloat32, q, comm, nt_stream));
        }
        NCCL_OK(ncclGroupEnd());
        if (nt_sync()) FAIL("stream synchronize failed");
        nt_get(in, in_d, bytes);
        for (int q = 0; q < n; q++)
            for (size_t i = 0; i < c; i++)
                if (in[(size_t)q * c + i] != (float)nt_value(call, q * 64 + me, i, 0, 1000)) {
                    FAIL("pairs, %zu elements: from rank %d element %zu is %g", c, q, i, in[(size_t)q * c + i]);
                    q = n;
                    break;
                }
        /* empty messages with NULL buffers (an empty tensor's, as in PyTorch's uneven all-to-all)
         * in a group with real ones: to the right c elements, to the left nothing */
        if (n > 1) {
            int right = (me + 1) % n, left = (me + n - 1) % n;
            memset(in, 0xff, bytes);
            nt_put(in_d, in, bytes);
            NCCL_OK(ncclGroupStart());
            NCCL_OK(ncclSend(NULL, 0, ncclFloat32, left, comm, nt_stream));
            NCCL_OK(ncclSend(out_d + (size_t)right * c, c, ncclFloat32, right, comm, nt_stream));
            NCCL_OK(ncclRecv(NULL, 0, ncclFloat32, right, comm, nt_stream));
            NCCL_OK(ncclRecv(in_d, c, ncclFloat32, left, comm, nt_stream));
            NCCL_OK(ncclGroupEnd());
            if (nt_sync()) FAIL("stream synchronize failed");
            nt_get(in, in_d, bytes);
            for (size_t i = 0; i < c; i++)
                if (in[i] != (float)nt_value(call, left * 64 + me, i, 0, 1000)) {
                    FAIL("with empty NULL messages, %zu elements: element %zu is %g", c, i, in[i]);
                    break;
                }
        }
        /* a ring, as a group of one send and one receive, mixed with a collective */
        if (n > 1) {
            int32_t red_in = me + 1, red_out = -1;
            int32_t *red_d = nt_alloc(2 * sizeof(int32_t));
            nt_put(red_d, &red_in, sizeof red_in);
            NCCL_OK(ncclGroupStart());
            NCCL_OK(ncclSend(out_d, c, ncclFloat32, (me + 1) % n, comm, nt_stream));
            NCCL_OK(ncclAllReduce(red_d, red_d + 1, 1, ncclInt32, ncclSum, comm, nt_stream));
            NCCL_OK(ncclRecv(in_d, c, ncclFloat32, (me + n - 1) % n, comm, nt_stream));
            NCCL_OK(ncclGroupEnd());
            if (nt_sync()) FAIL("stream synchronize failed");
            nt_get(&red_out, red_d + 1, sizeof red_out);
            nt_get(in, in_d, bytes);
            nt_free(red_d);
            EXPECT(red_out == n * (n + 1) / 2, "allreduce in a group with send/recv: %d", red_out);
            int from = (me + n - 1) % n;
            for (size_t i = 0; i < c; i++)
                if (in[i] != (float)nt_value(call, from * 64, i, 0, 1000)) {
                    FAIL("ring, %zu elements: element %zu is %g", c, i, in[i]);
                    break;
                }
        }
        /* a self send, a gather (whose root copies its own block), the self receive: one group */
        int root = (int)(call % (uint64_t)n);
        float *g_d = nt_alloc(sizeof(float) * (c + 1) * (size_t)n), *self_d = nt_alloc(sizeof(float) * (c + 1));
        NCCL_OK(ncclGroupStart());
        size_t sb = n > 1 ? c : 0; /* out block 1 (0 when n == 1) */
        NCCL_OK(ncclSend(out_d + sb, c, ncclFloat32, me, comm, nt_stream));
        NCCL_OK(ncclGather(out_d, g_d, c, ncclFloat32, root, comm, nt_stream));
        NCCL_OK(ncclRecv(self_d, c, ncclFloat32, me, comm, nt_stream));
        NCCL_OK(ncclGroupEnd());
        if (nt_sync()) FAIL("stream synchronize failed");
        nt_get(in, self_d, sizeof(float) * c);
        for (size_t i = 0; i < c; i++)
            if (in[i] != out[sb + i]) {
                FAIL("self send around a gather, %zu elements: element %zu is %g, want %g", c, i, in[i], out[sb + i]);
                break;
            }
        if (me == root) {
            nt_get(in, g_d, sizeof(float) * c * (size_t)n);
            for (int q = 0; q < n; q++)
                for (size_t i = 0; i < c; i++)
                    if (in[(size_t)q * c + i] != (float)nt_value(call, q * 64, i, 0, 1000)) {
                        FAIL("gather in a group, %zu elements: from rank %d element %zu is %g", c, q, i,
                             in[(size_t)q * c + i]);
                        q = n;
                        break;
                    }
        }
        nt_free(g_d), nt_free(self_d);
        /* outside a group a send to self is refused (NCCL's would wait for itself forever) */
        if (c) NCCL_FAILS(ncclSend(out_d, c, ncclFloat32, me, comm, nt_stream), ncclInvalidUsage);
        nt_free(out_d), nt_free(in_d);
        free(out), free(in);
    }
    nt_context = "";
    return 0;
}

/* Every error a program can provoke: the result and a message. */
static int errors(ncclComm_t comm, int me, int n)
{
    nt_context = "errors";
    int x = 0;
    float f = 0;
    NCCL_FAILS(ncclAllReduce(&f, &f, 1, ncclFloat8e4m3, ncclSum, comm, nt_stream), ncclInvalidArgument);
    NCCL_FAILS(ncclAllReduce(&f, &f, 1, ncclFloat8e5m2, ncclSum, comm, nt_stream), ncclInvalidArgument);
    NCCL_FAILS(ncclAllReduce(&f, &f, 1, (ncclDataType_t)77, ncclSum, comm, nt_stream), ncclInvalidArgument);
    NCCL_FAILS(ncclAllReduce(&f, &f, 1, ncclFloat32, (ncclRedOp_t)(ncclNumOps + 40), comm, nt_stream),
               ncclInvalidArgument);
    NCCL_FAILS(ncclBroadcast(&f, &f, 1, ncclFloat32, n, comm, nt_stream), ncclInvalidArgument);
    NCCL_FAILS(ncclReduce(&f, &f, 1, ncclFloat32, ncclSum, -1, comm, nt_stream), ncclInvalidArgument);
    NCCL_FAILS(ncclSend(&f, 1, ncclFloat32, n + 3, comm, nt_stream), ncclInvalidArgument);
    NCCL_FAILS(ncclAllReduce(&f, &f, 1, ncclFloat32, ncclSum, NULL, nt_stream), ncclInvalidArgument);
    NCCL_FAILS(ncclCommCount(NULL, &x), ncclInvalidArgument);
    NCCL_FAILS(ncclCommCount(comm, NULL), ncclInvalidArgument);
    NCCL_FAILS(ncclGroupEnd(), ncclInvalidUsage);
    NCCL_FAILS(ncclCommRevoke(comm, 5), ncclInvalidArgument);
    NCCL_FAILS(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument);
    NCCL_FAILS(ncclRedOpCreatePreMulSum(NULL, &f, ncclFloat32, ncclScalarHostImmediate, comm), ncclInvalidArgument);
    ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
    bad.magic = 0;
    ncclComm_t nc = NULL;
    NCCL_FAILS(ncclCommSplit(comm, 0, 0, &nc, &bad), ncclInvalidArgument);
    NCCL_FAILS(ncclCommSplit(comm, -7, 0, &nc, NULL), ncclInvalidArgument);
    if (n > 1) {
        int excl[1] = {(me + 1) % n}; /* alive: Duet's shrink removes failed ranks only */
        NCCL_FAILS(ncclCommShrink(comm, excl, 1, &nc, NULL, NCCL_SHRINK_DEFAULT), ncclInvalidUsage);
    }
    /* simulate: unsupported, closes the group without running it */
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclAllReduce(&f, &f, 1, ncclFloat32, ncclSum, comm, nt_stream));
    NCCL_FAILS(ncclGroupSimulateEnd(&sim), ncclInvalidUsage);
    NCCL_FAILS(ncclGroupEnd(), ncclInvalidUsage); /* the group is closed */
    /* error strings: each result has its own, never NULL */
    for (int r = 0; r <= (int)ncclNumResults; r++) {
        const char *s = ncclGetErrorString((ncclResult_t)r);
        EXPECT(s && s[0], "ncclGetErrorString(%d) is empty", r);
        for (int q = 0; q < r && s; q++)
            EXPECT(strcmp(s, ncclGetErrorString((ncclResult_t)q)) != 0, "results %d and %d share a string", q, r);
    }
    ncclResult_t async = ncclInternalError;
    NCCL_OK(ncclCommGetAsyncError(comm, &async));
    EXPECT(async == ncclSuccess, "async error %d on a sound communicator", (int)async);
    nt_context = "";
    return 0;
}

/* Split (colors, keys, NOCOLOR), a child that outlives nothing yet; registration, windows, memory. */
static int split_and_memory(ncclComm_t comm, int me, int n)
{
    nt_context = "split";
    int color = n >= 3 && me == n - 1 ? NCCL_SPLIT_NOCOLOR : me % 2;
    ncclComm_t sub = NULL;
    NCCL_OK(ncclCommSplit(comm, color, -me, &sub, NULL)); /* key -me: reversed order */
    if (color == NCCL_SPLIT_NOCOLOR) {
        EXPECT(sub == NULL, "NOCOLOR gave a communicator");
    } else {
        int members = 0, pos = 0;
        for (int q = 0; q < n; q++)
            if (!(n >= 3 && q == n - 1) && q % 2 == color) members++, pos += q > me;
        int cnt = -1, rk = -1;
        NCCL_OK(ncclCommCount(sub, &cnt));
        NCCL_OK(ncclCommUserRank(sub, &rk));
        EXPECT(cnt == members && rk == pos, "split: count %d rank %d, want %d %d", cnt, rk, members, pos);
        int64_t v = me, sum = -1, want = 0;
        for (int q = 0; q < n; q++)
            if (!(n >= 3 && q == n - 1) && q % 2 == color) want += q;
        NCCL_OK(ncclAllReduce(&v, &sum, 1, ncclInt64, ncclSum, sub, nt_stream));
        EXPECT(sum == want, "allreduce on the split: %" PRId64 ", want %" PRId64, sum, want);
        NCCL_OK(ncclCommDestroy(sub));
    }
    nt_context = "memory";
    void *mem = NULL, *h = NULL;
    NCCL_OK(ncclMemAlloc(&mem, 4096 * 4));
    EXPECT(mem != NULL, "ncclMemAlloc gave NULL");
    NCCL_OK(ncclCommRegister(comm, mem, 4096 * 4, &h));
    ncclWindow_t win = NULL;
    NCCL_OK(ncclCommWindowRegister(comm, mem, 4096 * 4, &win, NCCL_WIN_COLL_SYMMETRIC));
    if (!NT_DEVICE) { /* ncclMemAlloc gives host memory on a machine without GPU */
        int32_t *p = mem;
        for (int i = 0; i < 4096; i++) p[i] = me + i;
        NCCL_OK(ncclAllReduce(p, p, 4096, ncclInt32, ncclMax, comm, nt_stream));
        for (int i = 0; i < 4096; i++)
            if (p[i] != n - 1 + i) {
                FAIL("allreduce on ncclMemAlloc memory: element %d is %d", i, p[i]);
                break;
            }
    }
    NCCL_OK(ncclCommWindowDeregister(comm, win));
    NCCL_OK(ncclCommDeregister(comm, h));
    NCCL_FAILS(ncclCommDeregister(comm, h), ncclInvalidArgument);
    NCCL_OK(ncclMemFree(mem));
    nt_context = "";
    return 0;
}

static int rank_main(int me, int n, ncclUniqueId id, void *arg)
{
    (void)arg;
    int want_dev = -1;
#ifdef NCCL_TEST_DEVICE
    int ndev = 0; /* as NCCL programs do: a GPU per rank, chosen before the init */
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) return FAIL("no CUDA device"), 1;
    want_dev = me % ndev;
    if (cudaSetDevice(want_dev) != cudaSuccess) return FAIL("cudaSetDevice(%d)", want_dev), 1;
    if (cudaStreamCreate(&nt_stream) != cudaSuccess) return FAIL("cudaStreamCreate"), 1;
#endif
    int version = 0;
    NCCL_OK(ncclGetVersion(&version));
    EXPECT(version >= 22800, "ncclGetVersion: %d", version);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.commName = "nccl_api_test";
    config.blocking = 1;
    ncclComm_t comm = NULL;
    NCCL_OK(ncclCommInitRankConfig(&comm, n, id, me, &config));
    int cnt = -1, rk = -1, dev = -2;
    NCCL_OK(ncclCommCount(comm, &cnt));
    NCCL_OK(ncclCommUserRank(comm, &rk));
    NCCL_OK(ncclCommCuDevice(comm, &dev));
    EXPECT(cnt == n && rk == me, "count %d rank %d", cnt, rk);
    EXPECT(NT_DEVICE ? dev == want_dev : dev >= -1, "ncclCommCuDevice: %d, want %d (the device current at the init)",
           dev, want_dev);
    if (collectives(comm, me, n)) return 1;
    if (point_to_point(comm, me, n)) return 1;
    if (errors(comm, me, n)) return 1;
    if (split_and_memory(comm, me, n)) return 1;
    /* two children: one aborted, one that outlives its parent */
    ncclComm_t child = NULL, child2 = NULL;
    NCCL_OK(ncclCommSplit(comm, 0, me, &child, NULL));
    /* a split inside a group runs at once (its own exchange is not the group's); the group's
     * allreduce, queued before it, runs at the group's end */
    double gv = me, gs = -1;
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclAllReduce(&gv, &gs, 1, ncclFloat64, ncclSum, comm, nt_stream));
    NCCL_OK(ncclCommSplit(comm, 5, -me, &child2, NULL));
    EXPECT(child2 != NULL, "a split inside a group gave no communicator");
    NCCL_OK(ncclGroupEnd());
    if (nt_sync()) FAIL("stream synchronize failed");
    EXPECT(gs == n * (n - 1) / 2.0, "the group's allreduce beside a split: %g", gs);
    double d = me, s = 0;
    NCCL_OK(ncclAllReduce(&d, &s, 1, ncclFloat64, ncclSum, child, nt_stream));
    EXPECT(s == n * (n - 1) / 2.0, "allreduce on a split: %g", s);
    /* every rank is past the child's allreduce once this one completes anywhere: Duet's abort
     * revokes the child on every member, which must not cut a call still running */
    NCCL_OK(ncclAllReduce(&d, &s, 1, ncclFloat64, ncclSum, comm, nt_stream));
    NCCL_OK(ncclCommAbort(child));
    NCCL_OK(ncclCommFinalize(comm));
    NCCL_FAILS(ncclAllReduce(&cnt, &cnt, 1, ncclInt32, ncclSum, comm, nt_stream), ncclInvalidUsage);
    NCCL_OK(ncclCommDestroy(comm));
    d = me, s = 0;
    NCCL_OK(ncclAllReduce(&d, &s, 1, ncclFloat64, ncclSum, child2, nt_stream));
    EXPECT(s == n * (n - 1) / 2.0, "allreduce on a split whose parent is gone: %g", s);
    NCCL_OK(ncclCommDestroy(child2));
    if (me == 0) printf("nccl_api_test: %d ranks: %" PRIu64 " checked calls\n", n, call_no);
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0;
    if (n < 1) {
        fprintf(stderr, "usage: %s NRANKS [seed=N]\n", argv[0]);
        return 2;
    }
    nt_pick_seed(argc, argv);
    return nt_run_ranks(n, 150, -1, rank_main, NULL);
}

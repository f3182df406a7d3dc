/* moe.c — mixture-of-experts dispatch and combine over ranks, two ways.
 *
 *   duetrun -n 4 moe [-t "128 512"] [-h HIDDEN] [-k TOPK] [-x EXPERTS_PER_RANK] [-i ITERS]
 *
 * Each rank holds T tokens of HIDDEN float32 values; each token is routed (pseudo-randomly,
 * from the token's index) to TOPK distinct experts with weights; EXPERTS_PER_RANK experts live
 * on every rank. Dispatch sends a copy of the token to each of its experts' ranks, the expert
 * transforms it (y = x * scale_e + bias_e), and combine brings the TOPK results home and sums
 * them, weighted, in expert-slot order. Two ways:
 *   (a) alltoall  the token copies packed by destination into buffers padded to the largest
 *                 count of any pair (a collective needs one size), one duet_alltoall there
 *                 and one back;
 *   (b) put       every copy put straight into its slot on the expert's rank (duet_put_nbi of
 *                 the values, a fence, duet_put_signal of a 16-byte header adding 1 to the
 *                 receiver's counter), and the results put straight back the same way.
 * Both need the pairs' counts first (one duet_allgather of a row of n ints), included in their
 * times. The two outputs must be identical to the bit. Prints, per T: the time of dispatch (the
 * counts, packing, moving the copies) and of combine (the experts, moving the results back, the
 * weighted sums: in (b) each result leaves as soon as its expert is done), the bytes each way
 * moved (padding included), and how many times faster (b) is in all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <duet/duet.h>

typedef struct {
    int32_t src, token, k, expert;
} hdr_t; /* a copy's header: where it came from and which expert it is for */

typedef struct {
    duet_comm_t comm;
    int me, n, hidden, topk, per_rank, T;
    size_t rec;            /* bytes of a record: header + hidden floats */
    int *route;            /* [T][topk]: expert of each copy */
    float *weight;         /* [T][topk] */
    float *x;              /* [T][hidden] my tokens */
    int *count;            /* [n][n]: copies from src to dst (allgathered) */
} moe_t;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + 1e-3 * (double)ts.tv_nsec;
}

static void fail(const char *what)
{
    fprintf(stderr, "moe: rank %d: %s: %s\n", duet_my_pe(), what, duet_last_error());
    exit(1);
}

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Routing of my tokens: TOPK distinct experts each, weights (k + 1) / sum. */
static void make_tokens(moe_t *m)
{
    int experts = m->n * m->per_rank;
    float wsum = (float)(m->topk * (m->topk + 1) / 2);
    for (int t = 0; t < m->T; t++) {
        for (int k = 0; k < m->topk; k++) {
            int e;
            for (uint64_t s = 0;; s++) { /* the next expert not already taken */
                e = (int)(mix(((uint64_t)m->me << 40) ^ ((uint64_t)t << 8) ^ (uint64_t)k ^ (s << 52)) % (uint64_t)experts);
                int dup = 0;
                for (int j = 0; j < k; j++) dup |= m->route[t * m->topk + j] == e;
                if (!dup) break;
            }
            m->route[t * m->topk + k] = e;
            m->weight[t * m->topk + k] = (float)(k + 1) / wsum;
        }
        for (int i = 0; i < m->hidden; i++)
            m->x[(size_t)t * m->hidden + i] = (float)((m->me * 131 + t * 17 + i) % 251) / 251.0f;
    }
}

static void expert(const moe_t *m, int e, const float *in, float *out)
{
    float scale = 1.0f + (float)e / 64.0f, bias = (float)e / 128.0f;
    for (int i = 0; i < m->hidden; i++) out[i] = in[i] * scale + bias;
}

/* The pairs' counts: my row (copies to each rank), allgathered. */
static void exchange_counts(moe_t *m)
{
    int *row = calloc((size_t)m->n, sizeof *row);
    if (!row) fail("calloc");
    for (int c = 0; c < m->T * m->topk; c++) row[m->route[c] / m->per_rank]++;
    if (duet_allgather(row, m->count, (size_t)m->n, DUET_INT32, m->comm, NULL)) fail("allgather counts");
    free(row);
}

static void combine_into(const moe_t *m, const float *results /* [T][topk][hidden] */, float *out)
{
    for (int t = 0; t < m->T; t++)
        for (int i = 0; i < m->hidden; i++) {
            float acc = 0;
            for (int k = 0; k < m->topk; k++)
                acc += m->weight[t * m->topk + k] * results[((size_t)t * m->topk + k) * m->hidden + i];
            out[(size_t)t * m->hidden + i] = acc;
        }
}

/* ---- (a) alltoall over padded buffers */
typedef struct {
    char *send, *recv;     /* symmetric: [n][cap] records each way */
    int cap;
} a2a_t;

static void way_alltoall(moe_t *m, a2a_t *a, float *results, float *out, double *t_disp, double *t_comb)
{
    double t0 = now_us();
    exchange_counts(m);
    int *fill = calloc((size_t)m->n, sizeof *fill);
    if (!fill) fail("calloc");
    for (int c = 0; c < m->T * m->topk; c++) { /* pack by destination */
        int e = m->route[c], dst = e / m->per_rank;
        char *r = a->send + ((size_t)dst * a->cap + (size_t)fill[dst]++) * m->rec;
        hdr_t h = {m->me, c / m->topk, c % m->topk, e};
        memcpy(r, &h, sizeof h);
        memcpy(r + sizeof h, m->x + (size_t)(c / m->topk) * m->hidden, (size_t)m->hidden * sizeof(float));
    }
    if (duet_alltoall(a->send, a->recv, (size_t)a->cap * m->rec, DUET_UINT8, m->comm, NULL)) fail("alltoall");
    double t1 = now_us(), t2 = t1; /* combine: the experts, the way back, the weighted sums */
    /* the experts, in place, into the send buffer's layout going back */
    for (int src = 0; src < m->n; src++)
        for (int j = 0; j < m->count[src * m->n + m->me]; j++) {
            char *in = a->recv + ((size_t)src * a->cap + (size_t)j) * m->rec, *back = a->send + ((size_t)src * a->cap + (size_t)j) * m->rec;
            hdr_t h;
            memcpy(&h, in, sizeof h);
            memcpy(back, &h, sizeof h);
            expert(m, h.expert, (const float *)(const void *)(in + sizeof h), (float *)(void *)(back + sizeof h));
        }
    if (duet_alltoall(a->send, a->recv, (size_t)a->cap * m->rec, DUET_UINT8, m->comm, NULL)) fail("alltoall back");
    for (int dst = 0; dst < m->n; dst++)
        for (int j = 0; j < m->count[m->me * m->n + dst]; j++) {
            const char *r = a->recv + ((size_t)dst * a->cap + (size_t)j) * m->rec;
            hdr_t h;
            memcpy(&h, r, sizeof h);
            memcpy(results + ((size_t)h.token * m->topk + (size_t)h.k) * m->hidden, r + sizeof h,
                   (size_t)m->hidden * sizeof(float));
        }
    combine_into(m, results, out);
    double t3 = now_us();
    *t_disp += t1 - t0, *t_comb += t3 - t2;
    free(fill);
}

/* ---- (b) put + signal, straight into the slots */
typedef struct {
    char *inbox;           /* symmetric: the copies sent to me, by source, in order */
    float *back;           /* symmetric: [T][topk][hidden] results coming home */
    uint64_t *sig;         /* symmetric: [0] copies arrived, [1] results arrived (cumulative) */
    uint64_t want[2];
} put_t;

static void way_put(moe_t *m, put_t *p, float *results, float *out, double *t_disp, double *t_comb)
{
    double t0 = now_us();
    exchange_counts(m);
    /* my first slot in each destination's inbox: the copies of the ranks before me go first */
    int *slot = calloc((size_t)m->n, sizeof *slot), arrive = 0;
    if (!slot) fail("calloc");
    for (int dst = 0; dst < m->n; dst++)
        for (int src = 0; src < m->me; src++) slot[dst] += m->count[src * m->n + dst];
    for (int src = 0; src < m->n; src++) arrive += m->count[src * m->n + m->me];
    for (int c = 0; c < m->T * m->topk; c++) {
        int e = m->route[c], dst = e / m->per_rank;
        char *r = p->inbox + (size_t)slot[dst]++ * m->rec;
        hdr_t h = {m->me, c / m->topk, c % m->topk, e};
        if (duet_put_nbi(m->comm, r + sizeof h, m->x + (size_t)(c / m->topk) * m->hidden,
                         (size_t)m->hidden * sizeof(float), dst) ||
            duet_fence(m->comm) || duet_put_signal(m->comm, r, &h, sizeof h, &p->sig[0], 1, DUET_SIGNAL_ADD, dst))
            fail("dispatch put");
    }
    p->want[0] += (uint64_t)arrive;
    if (duet_signal_wait_until(m->comm, &p->sig[0], DUET_CMP_GE, p->want[0], NULL)) fail("dispatch wait");
    double t1 = now_us();
    float *y = malloc((size_t)m->hidden * sizeof *y);
    if (!y) fail("malloc");
    double t2 = now_us();
    for (int j = 0; j < arrive; j++) { /* the experts, and each result straight home */
        const char *in = p->inbox + (size_t)j * m->rec;
        hdr_t h;
        memcpy(&h, in, sizeof h);
        expert(m, h.expert, (const float *)(const void *)(in + sizeof h), y);
        if (duet_put_signal(m->comm, p->back + ((size_t)h.token * m->topk + (size_t)h.k) * m->hidden, y,
                            (size_t)m->hidden * sizeof(float), &p->sig[1], 1, DUET_SIGNAL_ADD, h.src))
            fail("combine put");
    }
    p->want[1] += (uint64_t)m->T * (uint64_t)m->topk;
    if (duet_signal_wait_until(m->comm, &p->sig[1], DUET_CMP_GE, p->want[1], NULL)) fail("combine wait");
    memcpy(results, p->back, (size_t)m->T * m->topk * m->hidden * sizeof(float));
    combine_into(m, results, out);
    double t3 = now_us();
    /* before the next round refills the inboxes, everyone has read its own */
    if (duet_barrier(m->comm)) fail("barrier");
    *t_disp += t1 - t0, *t_comb += t3 - t2;
    free(y);
    free(slot);
}

int main(int argc, char **argv)
{
    const char *tokens = "128 512";
    moe_t m = {.hidden = 7168, .topk = 8, .per_rank = 8};
    int iters = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) tokens = argv[++i];
        else if (!strcmp(argv[i], "-h") && i + 1 < argc) m.hidden = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-k") && i + 1 < argc) m.topk = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-x") && i + 1 < argc) m.per_rank = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: duetrun -n P moe [-t \"128 512\"] [-h HIDDEN] [-k TOPK] [-x EXPERTS_PER_RANK] "
                            "[-i ITERS]\n");
            return 2;
        }
    }
    if (duet_init()) fail("duet_init");
    m.comm = duet_comm_world(), m.me = duet_my_pe(), m.n = duet_n_pes();
    if (m.hidden < 1 || m.topk < 1 || m.per_rank < 1 || m.topk > m.n * m.per_rank || iters < 1) {
        if (m.me == 0) fprintf(stderr, "moe: need HIDDEN, TOPK, EXPERTS_PER_RANK, ITERS >= 1 and TOPK <= experts\n");
        duet_finalize();
        return 2;
    }
    m.rec = sizeof(hdr_t) + (size_t)m.hidden * sizeof(float);
    m.count = malloc(sizeof(int) * (size_t)m.n * (size_t)m.n);
    if (!m.count) fail("malloc");
    if (m.me == 0) {
        printf("moe: %d ranks, %d experts each, top-%d, hidden %d (float32), %d rounds per size\n", m.n, m.per_rank,
               m.topk, m.hidden, iters);
        printf("%7s %-9s %12s %12s %12s %10s  %s\n", "tokens", "way", "dispatch us", "combine us", "MB moved", "x faster",
               "same output");
    }
    int ok = 1;
    for (const char *s = tokens; *s;) {
        char *end;
        long T = strtol(s, &end, 10);
        if (end == s) break;
        s = end;
        while (*s == ' ' || *s == ',') s++;
        m.T = (int)T;
        m.route = malloc(sizeof(int) * (size_t)m.T * m.topk);
        m.weight = malloc(sizeof(float) * (size_t)m.T * m.topk);
        m.x = malloc(sizeof(float) * (size_t)m.T * m.hidden);
        float *results = malloc(sizeof(float) * (size_t)m.T * m.topk * m.hidden);
        float *out[2] = {malloc(sizeof(float) * (size_t)m.T * m.hidden), malloc(sizeof(float) * (size_t)m.T * m.hidden)};
        if (!m.route || !m.weight || !m.x || !results || !out[0] || !out[1]) fail("malloc");
        make_tokens(&m);
        /* sizes every rank agrees on: the largest pair count (the padding) and the largest inbox */
        exchange_counts(&m);
        int cap = 0, inbox = 0;
        for (int d = 0; d < m.n; d++) {
            int in = 0;
            for (int s2 = 0; s2 < m.n; s2++) {
                int c = m.count[s2 * m.n + d];
                cap = c > cap ? c : cap;
                in += c;
            }
            inbox = in > inbox ? in : inbox;
        }
        a2a_t a = {duet_malloc(m.comm, (size_t)m.n * (size_t)cap * m.rec), duet_malloc(m.comm, (size_t)m.n * (size_t)cap * m.rec), cap};
        put_t p = {duet_malloc(m.comm, (size_t)inbox * m.rec), duet_malloc(m.comm, sizeof(float) * (size_t)m.T * m.topk * m.hidden),
                   duet_calloc(m.comm, 2, sizeof(uint64_t)), {0, 0}};
        if (!a.send || !a.recv || !p.inbox || !p.back || !p.sig)
            fail("duet_malloc (raise DUET_SYMMETRIC_SIZE: these sizes need more symmetric heap)");
        double t[2][2] = {{0, 0}, {0, 0}};
        for (int it = 0; it <= iters; it++) { /* round 0 warms up */
            double d[2][2] = {{0, 0}, {0, 0}};
            if (duet_barrier(m.comm)) fail("barrier");
            way_alltoall(&m, &a, results, out[0], &d[0][0], &d[0][1]);
            if (duet_barrier(m.comm)) fail("barrier");
            way_put(&m, &p, results, out[1], &d[1][0], &d[1][1]);
            if (it > 0)
                for (int w = 0; w < 2; w++) t[w][0] += d[w][0], t[w][1] += d[w][1];
        }
        double slowest[4], mine[4] = {t[0][0] / iters, t[0][1] / iters, t[1][0] / iters, t[1][1] / iters};
        int same = memcmp(out[0], out[1], sizeof(float) * (size_t)m.T * m.hidden) == 0, all_same;
        if (duet_allreduce(mine, slowest, 4, DUET_FLOAT64, DUET_MAX, m.comm, NULL) ||
            duet_allreduce(&same, &all_same, 1, DUET_INT32, DUET_MIN, m.comm, NULL))
            fail("allreduce");
        ok &= all_same;
        if (m.me == 0) {
            double mb_a = 2.0 * m.n * cap * (double)m.rec / 1e6, mb_b = 2.0 * m.T * m.topk * (double)m.rec / 1e6;
            printf("%7d %-9s %12.1f %12.1f %12.1f %10s  %s\n", m.T, "alltoall", slowest[0], slowest[1], mb_a, "",
                   all_same ? "yes" : "NO");
            char ratio[32];
            snprintf(ratio, sizeof ratio, "%.2f", (slowest[0] + slowest[1]) / (slowest[2] + slowest[3]));
            printf("%7d %-9s %12.1f %12.1f %12.1f %10s  %s\n", m.T, "put", slowest[2], slowest[3], mb_b, ratio,
                   all_same ? "yes" : "NO");
        }
        duet_free(m.comm, p.sig), duet_free(m.comm, p.back), duet_free(m.comm, p.inbox);
        duet_free(m.comm, a.recv), duet_free(m.comm, a.send);
        free(m.route), free(m.weight), free(m.x), free(results), free(out[0]), free(out[1]);
    }
    free(m.count);
    duet_finalize();
    return ok ? 0 : 1;
}

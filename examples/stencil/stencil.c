/* stencil.c — a 2-D star stencil (Jacobi iterations) over ranks, with the halos moved two
 * ways on the host: send/recv in a group, and one-sided put + signal into the neighbour's halo.
 *
 *   duetrun -n 4 stencil [-n N] [-r R] [-i ITERS] [-m sendrecv|put|all] [--no-verify]
 *
 * The N x N grid (float64) is cut into blocks of whole rows, one per rank; each rank keeps R
 * halo rows above and below its block. An iteration: the halos (R rows to each neighbour), then
 * every interior point becomes w times the sum of its 4R star neighbours (w = 1 / 4R; the
 * outer frame of R rows and columns stays fixed). Two grids alternate, so a neighbour's put for
 * the next iteration never lands in a halo this iteration still reads. Rank 0 checks the
 * result, bit for bit, against the same iterations run on one rank.
 * Prints, per method: time per iteration (the slowest rank's), split into compute and halo
 * exchange, and MFLOP/s (4R + 1 flops per interior point: 4R additions and one scaling). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <duet/duet.h>

typedef struct {
    int n, r, iters, verify;
    int me, np, row0, rows; /* my block: global rows [row0, row0 + rows) */
    size_t pitch;           /* elements per row (n) */
    duet_comm_t comm;
} grid_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fail(const char *what)
{
    fprintf(stderr, "stencil: rank %d: %s: %s\n", duet_my_pe(), what, duet_last_error());
    exit(1);
}

static double initial(int i, int j) { return (double)((i * 31 + j * 17) % 101) / 101.0; }

/* One iteration on rows [lo, hi) of the local array (row index = global row - row0 + R):
 * dst = w x (the 4R star neighbours of src), in one fixed order (the serial run uses it too). */
static void sweep(const grid_t *g, const double *src, double *dst, int glo, int ghi)
{
    const int R = g->r, n = g->n;
    const double w = 1.0 / (4.0 * R);
    const size_t p = g->pitch;
    for (int gi = glo; gi < ghi; gi++) {
        size_t i = (size_t)(gi - g->row0 + R);
        if (gi < R || gi >= n - R) { /* the fixed frame */
            memcpy(dst + i * p, src + i * p, p * sizeof *dst);
            continue;
        }
        for (int j = 0; j < R; j++) dst[i * p + (size_t)j] = src[i * p + (size_t)j];
        for (int j = n - R; j < n; j++) dst[i * p + (size_t)j] = src[i * p + (size_t)j];
        for (int j = R; j < n - R; j++) {
            double acc = 0;
            for (int k = 1; k <= R; k++) {
                acc += src[(i - (size_t)k) * p + (size_t)j];
                acc += src[(i + (size_t)k) * p + (size_t)j];
                acc += src[i * p + (size_t)(j - k)];
                acc += src[i * p + (size_t)(j + k)];
            }
            dst[i * p + (size_t)j] = acc * w;
        }
    }
}

/* ---- halo exchange, two ways. Local layout: R halo rows, my rows, R halo rows. */
static double *top_rows(const grid_t *g, double *a) { return a + (size_t)g->r * g->pitch; }
static double *bottom_rows(const grid_t *g, double *a) { return a + (size_t)g->rows * g->pitch; }
static double *top_halo(const grid_t *g, double *a) { (void)g; return a; }
static double *bottom_halo(const grid_t *g, double *a) { return a + (size_t)(g->rows + g->r) * g->pitch; }
/* rank r's row count (blocks differ by one row at most) */
static int rows_of(const grid_t *g, int r) { return (int)((long)g->n * (r + 1) / g->np - (long)g->n * r / g->np); }

static void halo_sendrecv(const grid_t *g, double *a)
{
    size_t count = (size_t)g->r * g->pitch;
    int up = g->me - 1, down = g->me + 1;
    if (duet_group_start()) fail("duet_group_start");
    if (up >= 0 && (duet_send(top_rows(g, a), count, DUET_FLOAT64, up, g->comm, NULL) ||
                    duet_recv(top_halo(g, a), count, DUET_FLOAT64, up, g->comm, NULL)))
        fail("send/recv up");
    if (down < g->np && (duet_send(bottom_rows(g, a), count, DUET_FLOAT64, down, g->comm, NULL) ||
                         duet_recv(bottom_halo(g, a), count, DUET_FLOAT64, down, g->comm, NULL)))
        fail("send/recv down");
    if (duet_group_end()) fail("duet_group_end");
}

/* sig[0]: iterations whose top halo has arrived (from above), sig[1]: bottom (from below) */
static void halo_put(const grid_t *g, double *a, uint64_t *sig, uint64_t it)
{
    size_t bytes = (size_t)g->r * g->pitch * sizeof(double);
    int up = g->me - 1, down = g->me + 1;
    /* my top rows are my upper neighbour's bottom halo (after its own rows: its count, not
     * mine), and my bottom rows its lower neighbour's top halo */
    if (up >= 0 && duet_put_signal(g->comm, a + (size_t)(rows_of(g, up) + g->r) * g->pitch, top_rows(g, a), bytes,
                                   &sig[1], it, DUET_SIGNAL_SET, up))
        fail("put up");
    if (down < g->np && duet_put_signal(g->comm, top_halo(g, a), bottom_rows(g, a), bytes, &sig[0], it,
                                        DUET_SIGNAL_SET, down))
        fail("put down");
    if (up >= 0 && duet_signal_wait_until(g->comm, &sig[0], DUET_CMP_GE, it, NULL)) fail("wait for the top halo");
    if (down < g->np && duet_signal_wait_until(g->comm, &sig[1], DUET_CMP_GE, it, NULL)) fail("wait for the bottom halo");
}

/* ---- one run: the seconds of compute and of halo exchange, summed over iterations; returns
 * the grid that holds the result (a or b) */
static double *run(const grid_t *g, const char *method, double *a, double *b, uint64_t *sig, double *t_comp,
                   double *t_comm)
{
    size_t local = (size_t)(g->rows + 2 * g->r) * g->pitch;
    for (size_t k = 0; k < local; k++) a[k] = b[k] = 0;
    for (int gi = g->row0; gi < g->row0 + g->rows; gi++)
        for (int j = 0; j < g->n; j++) a[(size_t)(gi - g->row0 + g->r) * g->pitch + (size_t)j] = initial(gi, j);
    sig[0] = sig[1] = 0;
    if (duet_barrier(g->comm)) fail("barrier");
    *t_comp = *t_comm = 0;
    int put = !strcmp(method, "put");
    for (int it = 1; it <= g->iters; it++) {
        double t0 = now_s();
        if (put) halo_put(g, a, sig, (uint64_t)it);
        else halo_sendrecv(g, a);
        double t1 = now_s();
        sweep(g, a, b, g->row0, g->row0 + g->rows);
        double t2 = now_s();
        *t_comm += t1 - t0, *t_comp += t2 - t1;
        double *t = a;
        a = b, b = t;
    }
    if (duet_barrier(g->comm)) fail("barrier");
    return a; /* (after the last swap) */
}

/* Rank 0: every rank's block (put into `whole` by its owner) against the iterations run
 * here on one rank. Returns the number of points that differ in any bit. */
static long verify(const grid_t *g, const double *whole)
{
    grid_t one = *g;
    one.np = 1, one.me = 0, one.row0 = 0, one.rows = g->n;
    size_t local = (size_t)(g->n + 2 * g->r) * g->pitch;
    double *a = calloc(local, sizeof *a), *b = calloc(local, sizeof *b);
    if (!a || !b) fail("out of memory for the check");
    for (int i = 0; i < g->n; i++)
        for (int j = 0; j < g->n; j++) a[(size_t)(i + g->r) * g->pitch + (size_t)j] = initial(i, j);
    for (int it = 0; it < g->iters; it++) {
        sweep(&one, a, b, 0, g->n);
        double *t = a;
        a = b, b = t;
    }
    long bad = 0;
    for (size_t k = 0; k < (size_t)g->n * g->pitch; k++)
        bad += memcmp(&a[(size_t)g->r * g->pitch + k], &whole[k], sizeof(double)) != 0;
    free(a);
    free(b);
    return bad;
}

int main(int argc, char **argv)
{
    grid_t g = {.n = 1024, .r = 2, .iters = 100, .verify = 1};
    const char *method = "all";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) g.n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) g.r = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) g.iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) method = argv[++i];
        else if (!strcmp(argv[i], "--no-verify")) g.verify = 0;
        else {
            fprintf(stderr, "usage: duetrun -n P stencil [-n N] [-r R] [-i ITERS] [-m sendrecv|put|all] "
                            "[--no-verify]\n");
            return 2;
        }
    }
    if (duet_init()) fail("duet_init");
    g.comm = duet_comm_world();
    g.me = duet_my_pe(), g.np = duet_n_pes();
    g.pitch = (size_t)g.n;
    if (g.r < 1 || g.iters < 1 || g.n < 2 * g.r + 1 || g.n / g.np < g.r) {
        if (g.me == 0) fprintf(stderr, "stencil: need R >= 1, ITERS >= 1, N > 2R and at least R rows per rank\n");
        duet_finalize();
        return 2;
    }
    g.row0 = (int)((long)g.n * g.me / g.np);
    g.rows = (int)((long)g.n * (g.me + 1) / g.np) - g.row0;
    /* symmetric: both grids (the neighbours put into their halos), the signals, the whole grid */
    size_t most = (size_t)(g.n / g.np + 1 + 2 * g.r) * g.pitch; /* the largest block, halos included */
    double *a = duet_malloc(g.comm, most * sizeof(double)), *b = duet_malloc(g.comm, most * sizeof(double));
    uint64_t *sig = duet_calloc(g.comm, 2, sizeof(uint64_t));
    double *whole = g.verify ? duet_malloc(g.comm, (size_t)g.n * g.pitch * sizeof(double)) : NULL;
    if (!a || !b || !sig || (g.verify && !whole)) fail("duet_malloc (raise DUET_SYMMETRIC_SIZE for large N)");

    if (g.me == 0) {
        printf("stencil: %d x %d float64, star radius %d, %d iterations, %d rank(s)\n", g.n, g.n, g.r, g.iters, g.np);
        printf("%-9s %12s %12s %12s %10s %s\n", "method", "us/iter", "compute", "halo", "MFLOP/s", "check");
    }
    static const char *methods[] = {"sendrecv", "put"};
    int failed = 0;
    for (int k = 0; k < 2; k++) {
        if (strcmp(method, "all") && strcmp(method, methods[k])) continue;
        double comp, comm;
        double *result = run(&g, methods[k], a, b, sig, &comp, &comm);
        long bad = -1;
        if (g.verify) { /* my rows into rank 0's whole grid; rank 0 compares */
            if (duet_put(g.comm, whole + (size_t)g.row0 * g.pitch, result + (size_t)g.r * g.pitch,
                         (size_t)g.rows * g.pitch * sizeof(double), 0) ||
                duet_barrier(g.comm))
                fail("gather");
            if (g.me == 0) bad = verify(&g, whole);
        }
        double t[2] = {comp, comm}, slowest[2];
        if (duet_allreduce(t, slowest, 2, DUET_FLOAT64, DUET_MAX, g.comm, NULL)) fail("allreduce");
        if (g.me == 0) {
            double per = (slowest[0] + slowest[1]) / g.iters;
            double points = (double)(g.n - 2 * g.r) * (double)(g.n - 2 * g.r);
            double flops = points * (4.0 * g.r + 1) * g.iters / (slowest[0] + slowest[1]);
            printf("%-9s %12.1f %12.1f %12.1f %10.1f %s\n", methods[k], per * 1e6, slowest[0] / g.iters * 1e6,
                   slowest[1] / g.iters * 1e6, flops / 1e6,
                   !g.verify ? "not checked" : bad == 0 ? "same bits as 1 rank" : "WRONG");
            if (bad) printf("stencil: %s: %ld point(s) differ from the one-rank run\n", methods[k], bad);
            failed |= bad > 0;
        }
        if (duet_barrier(g.comm)) fail("barrier");
    }
    duet_free(g.comm, whole);
    duet_free(g.comm, sig);
    duet_free(g.comm, b);
    duet_free(g.comm, a);
    int flag = !failed;
    if (duet_allreduce(&flag, &flag, 1, DUET_INT32, DUET_MIN, g.comm, NULL)) fail("allreduce");
    duet_finalize();
    return flag ? 0 : 1;
}

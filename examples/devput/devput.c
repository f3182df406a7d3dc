/* devput.c — a host-initiated put + signal, timed against duet_allreduce of the same bytes, and
 * the cost model that says where each wins. The CPU half of devput.cu (devput_gpu).
 *
 *   duetrun -n 2 devput [-b MIN] [-e MAX] [-f FACTOR] [-i ITERS] [--plot FILE.png]
 *
 * Put. The ranks form a ring; a message of S bytes goes around it ITERS times (after a warm-up).
 * Rank 0 puts S bytes into rank 1's receive buffer and adds 1 to rank 1's counter in the same
 * call (duet_put_signal: the data lands before the signal); rank 1 waits for the counter
 * (duet_signal_wait_until: when it sees the count, it sees the bytes), puts its own S bytes to
 * rank 2, ... and rank n-1's put comes back to rank 0, which then starts the next lap. With 2
 * ranks this is a ping-pong. Rank 0 reads the clock around the timed laps: one hop = lap time / n,
 * a put of S bytes from one process until the next one has seen all of it.
 *
 *     rank 0 --put+signal--> rank 1 --put+signal--> ... rank n-1 --put+signal--> rank 0
 *
 * The counter only grows: every rank knows how many messages it has received so far (the same
 * number on every rank), so a wait is "counter >= received + 1" and nothing is ever reset. A
 * rank writes its neighbour's buffer again only in the next lap, which cannot reach it before the
 * neighbour has put its own message of this lap on, i.e. after it has read (checked) what it
 * received.
 *
 * Allreduce: duet_allreduce (float32 sum of S / 4 elements, host buffers from malloc), ITERS
 * calls back to back, on the host clock; a host call returns with the result, so there is one
 * column, where the GPU half has two.
 *
 * Then T(S) = alpha + S / bandwidth is fitted to both columns (least squares on the relative
 * error, so small and large sizes weigh alike) and the crossover of the two fits is printed, with
 * the measured one: the smallest size from which the allreduce is at least as fast at every
 * larger size.
 *
 * Checks (exit status 1 on any failure, on any rank): per size, a separate run of the ring with
 * a different pattern in every lap (sender, lap and offset in every byte), each receiver comparing
 * every byte right after its wait; and the allreduce's output against the exact sum (small
 * integers as floats): of one call into a poisoned buffer, and of the last timed call.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <duet/duet.h>

#define PROG "devput"
#include "../common/fit_plot.h"

enum { PUT, AR, COLS }; /* the table's time columns */
static const char *const col_name[COLS] = {"host put (one hop)", "allreduce"};

enum {
    CHECK_LAPS = 4,     /* laps of the checking run */
    WARMUP_LAPS = 2000, /* laps (and allreduces) of the warm-up before the sweep */
    MAX_ROWS = 64,
    POISON = 0xa5
};

/* ------------------------------------------------------------------------------------
 * Errors: one line, then exit 1 (the other ranks' waits then end on the launcher's kill)
 * ------------------------------------------------------------------------------------ */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: rank %d: ", PROG, duet_my_pe());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}
#define DU(call)                                                                           \
    do {                                                                                   \
        duet_status_t s_ = (call);                                                         \
        if (s_ != DUET_OK) die("%s: %s", #call, duet_last_error());                        \
    } while (0)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A size: digits with an optional K, M or G (powers of 1024). Exits 2 on anything else. */
static size_t parse_size(const char *s, const char *flag)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10, end++;
    else if (*end == 'M' || *end == 'm') shift = 20, end++;
    else if (*end == 'G' || *end == 'g') shift = 30, end++;
    if (end == s || *end || *s == '-' || v > (~0ull >> shift)) {
        fprintf(stderr, "%s: %s: not a size: '%s'\n", PROG, flag, s);
        exit(2);
    }
    return (size_t)(v << shift);
}

/* ------------------------------------------------------------------------------------
 * The ring
 * ------------------------------------------------------------------------------------ */
typedef struct {
    duet_comm_t comm;
    int me, n, iters, warmup;
    char *recv;          /* symmetric: my left neighbour's message lands here */
    uint64_t *arrived;   /* symmetric: messages received so far, added to by my left neighbour */
    uint64_t received;   /* the messages every rank has received so far (the same everywhere) */
    char *src;           /* mine: what I put to my right neighbour */
    float *ar_in, *ar_out; /* the allreduce's host buffers */
} devput_t;

/* Byte i of the message that `rank` sends in lap `lap` of a checking run. */
static inline uint8_t pattern(int rank, int lap, size_t i)
{
    uint32_t x = (uint32_t)i * 2654435761u ^ ((uint32_t)rank * 40503u + (uint32_t)lap * 2246822519u);
    return (uint8_t)(x >> 24);
}

/* Puts my message of `bytes` to my right neighbour and adds 1 to its counter. Checking: the
 * message is made first, different in every lap. */
static void send_message(devput_t *d, size_t bytes, int lap, int check)
{
    if (check)
        for (size_t i = 0; i < bytes; i++) d->src[i] = (char)pattern(d->me, lap, i);
    DU(duet_put_signal(d->comm, d->recv, d->src, bytes, d->arrived, 1, DUET_SIGNAL_ADD, (d->me + 1) % d->n));
}

/* Waits for my left neighbour's message of this lap. Checking: returns the bytes that differ
 * from the sender's pattern. */
static long long receive_message(devput_t *d, size_t bytes, int lap, int check)
{
    DU(duet_signal_wait_until(d->comm, d->arrived, DUET_CMP_GE, ++d->received, NULL));
    long long bad = 0;
    if (check) {
        int left = (d->me + d->n - 1) % d->n;
        for (size_t i = 0; i < bytes; i++) bad += (uint8_t)d->recv[i] != pattern(left, lap, i);
    }
    return bad;
}

/* `laps` laps of the ring (after `warmup` more). Returns rank 0's ns for the timed laps (0
 * elsewhere) and adds the bytes that failed the check to *bad. */
static uint64_t run_ring(devput_t *d, size_t bytes, int warmup, int laps, int check, long long *bad)
{
    uint64_t t0 = 0;
    DU(duet_barrier(d->comm));
    for (int lap = 0; lap < warmup + laps; lap++) {
        if (d->me == 0) {
            if (lap == warmup) t0 = now_ns();
            send_message(d, bytes, lap, check);
            *bad += receive_message(d, bytes, lap, check);
        } else {
            *bad += receive_message(d, bytes, lap, check);
            send_message(d, bytes, lap, check);
        }
    }
    return d->me == 0 ? now_ns() - t0 : 0;
}

/* The put: microseconds per hop (rank 0's measurement; 0 on the other ranks). */
static double time_put(devput_t *d, size_t bytes, long long *bad)
{
    run_ring(d, bytes, 0, CHECK_LAPS, 1, bad);
    uint64_t ns = run_ring(d, bytes, d->warmup, d->iters, 0, bad);
    return 1e-3 * (double)ns / ((double)d->iters * d->n);
}

/* ------------------------------------------------------------------------------------
 * The allreduce
 * ------------------------------------------------------------------------------------ */
/* Rank r's input: small integers, so every sum is exact in any order. */
static inline float input_value(int rank, size_t i)
{
    return (float)(((size_t)rank * 7 + i) % 13);
}

static void allreduce(devput_t *d, size_t count)
{
    DU(duet_allreduce(d->ar_in, d->ar_out, count, DUET_FLOAT32, DUET_SUM, d->comm, NULL));
}

/* The wrong elements of the allreduce's output against the exact sum. */
static long long compare_allreduce(const devput_t *d, size_t count)
{
    long long wrong = 0;
    for (size_t i = 0; i < count; i++) {
        float want = 0;
        for (int r = 0; r < d->n; r++) want += input_value(r, i);
        wrong += memcmp(&d->ar_out[i], &want, sizeof want) != 0;
    }
    return wrong;
}

/* This size's input, then one allreduce into a poisoned output, checked. */
static long long check_allreduce(devput_t *d, size_t count)
{
    for (size_t i = 0; i < count; i++) d->ar_in[i] = input_value(d->me, i);
    memset(d->ar_out, POISON, count * sizeof(float));
    allreduce(d, count);
    return compare_allreduce(d, count);
}

/* Microseconds per allreduce, back to back. */
static double time_allreduce(devput_t *d, size_t count)
{
    uint64_t t0 = 0;
    DU(duet_barrier(d->comm));
    for (int it = -d->warmup; it < d->iters; it++) {
        if (it == 0) t0 = now_ns();
        allreduce(d, count);
    }
    return 1e-3 * (double)(now_ns() - t0) / d->iters;
}

/* Untimed, once before the sweep, so that the first size does not pay for the cold start (the
 * pages of the buffers, the library's first calls, idle cores): the ring at the largest size,
 * then many laps of the smallest message and many small allreduces. */
static void warm_up(devput_t *d, size_t minb, size_t maxb)
{
    long long ignored = 0;
    run_ring(d, maxb, 0, CHECK_LAPS, 0, &ignored);
    run_ring(d, minb, 0, WARMUP_LAPS, 0, &ignored);
    for (size_t i = 0; i < maxb / sizeof(float); i++) d->ar_in[i] = input_value(d->me, i);
    allreduce(d, maxb / sizeof(float));
    for (int it = 0; it < WARMUP_LAPS; it++) allreduce(d, minb / sizeof(float));
}

/* ------------------------------------------------------------------------------------
 * The model: T(S) = alpha + beta * S
 * ------------------------------------------------------------------------------------ */
static void plot(const char *file, int n, const double *S, double (*t)[COLS], int m, const fit_t *f)
{
    static const char *const title[COLS] = {"host put + signal (one hop)", "duet_allreduce"};
    static const char *const color[COLS] = {"#9400d3", "#0060ad"}; /* as devput_gpu: put violet, heap blue */
    int piped;
    FILE *gp = plot_open(file, &piped);
    if (!gp) return;
    fprintf(gp, "set terminal png size 900,600 noenhanced\nset output '%s'\nset logscale xy 2\n"
                "set xlabel 'bytes'\nset ylabel 'us'\nset key below\nset format x '%%.0b %%BB'\n"
                "set title 'host put + signal (one hop) vs duet_allreduce (float32 sum), %d ranks, CPU'\n",
            file, n);
    for (int k = 0; k < COLS; k++) fprintf(gp, "f%d(x) = %.9g + %.9g * x\n", k, f[k].alpha, f[k].beta);
    fprintf(gp, "plot [%g:%g]", S[0], S[m - 1]);
    for (int k = 0; k < COLS; k++)
        fprintf(gp, " '-' using 1:2 with linespoints lc rgb '%s' title '%s',", color[k], title[k]);
    for (int k = 0; k < COLS; k++)
        fprintf(gp, " f%d(x) dt 2 lc rgb '%s' %s%s", k, color[k], k == 0 ? "title 'fits'" : "notitle",
                k + 1 < COLS ? "," : "\n");
    for (int k = 0; k < COLS; k++) {
        for (int i = 0; i < m; i++) fprintf(gp, "%.0f %g\n", S[i], t[i][k]);
        fputs("e\n", gp);
    }
    plot_close(gp, piped, file);
}

/* Fits, crossovers and the plot, from rank 0's rows. */
static void report(int n, const double *S, double (*t)[COLS], int m, const char *plot_file)
{
    double col[COLS][MAX_ROWS];
    fit_t f[COLS];
    for (int k = 0; k < COLS; k++) {
        for (int i = 0; i < m; i++) col[k][i] = t[i][k];
        f[k] = fit_line(S, col[k], m);
    }
    printf("fit T(S) = alpha + beta * S (least squares on the relative error):\n");
    for (int k = 0; k < COLS; k++) print_fit(col_name[k], f[k], 3);
    printf("crossover predicted by the fits:\n");
    print_model_crossover(col_name[AR], "host put", f[PUT], f[AR], S[m - 1]);
    printf("crossover measured:\n");
    print_measured_crossover(col_name[AR], "host put", S, col[PUT], col[AR], m);
    fflush(stdout);
    if (plot_file && m > 0) plot(plot_file, n, S, t, m, f);
}

/* ------------------------------------------------------------------------------------
 * Setup and the sweep
 * ------------------------------------------------------------------------------------ */
static void setup(devput_t *d, size_t maxb)
{
    d->comm = duet_comm_world();
    d->me = duet_my_pe();
    d->n = duet_n_pes();
    if (d->n < 2) die("needs at least 2 ranks, not %d", d->n);
    /* the counter starts at 0 on every rank: duet_calloc zeroes it and ends with a barrier */
    d->recv = duet_malloc(d->comm, maxb);
    d->arrived = duet_calloc(d->comm, 1, sizeof(uint64_t));
    if (!d->recv || !d->arrived)
        die("duet_malloc: %s (raise DUET_SYMMETRIC_SIZE for a large -e)", duet_last_error());
    d->src = malloc(maxb);
    d->ar_in = malloc(maxb);
    d->ar_out = malloc(maxb);
    if (!d->src || !d->ar_in || !d->ar_out) die("out of host memory");
    memset(d->src, POISON, maxb);
    if (d->me == 0) {
        printf("%s: %d ranks on the CPU (host memory), %d iterations per size\n", PROG, d->n, d->iters);
        printf("  put: duet_put_signal around a ring of the ranks, the next rank waiting with"
               " duet_signal_wait_until; one hop\n");
        printf("  allreduce: duet_allreduce, float32 sum, host buffers, back to back\n");
        printf("%10s %10s %14s %8s  %s\n", "bytes", "put us", "allreduce us", "ratio", "checked");
        fflush(stdout);
    }
}

static void teardown(devput_t *d)
{
    free(d->ar_out);
    free(d->ar_in);
    free(d->src);
    DU(duet_free(d->comm, d->arrived));
    DU(duet_free(d->comm, d->recv));
}

static void usage(void)
{
    fprintf(stderr, "usage: duetrun -n P %s [-b MIN] [-e MAX] [-f FACTOR] [-i ITERS] [--plot FILE.png]\n", PROG);
    exit(2);
}

int main(int argc, char **argv)
{
    size_t minb = 8, maxb = 1 << 20, factor = 2, iters = 500;
    const char *plot_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-b") && i + 1 < argc) minb = parse_size(argv[++i], "-b");
        else if (!strcmp(argv[i], "-e") && i + 1 < argc) maxb = parse_size(argv[++i], "-e");
        else if (!strcmp(argv[i], "-f") && i + 1 < argc) factor = parse_size(argv[++i], "-f");
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) iters = parse_size(argv[++i], "-i");
        else if (!strcmp(argv[i], "--plot") && i + 1 < argc) plot_file = argv[++i];
        else usage();
    }
    if (minb < 4) minb = 4;
    if (maxb < minb || factor < 2 || iters < 1 || iters > 100000000) usage();
    devput_t d;
    memset(&d, 0, sizeof d);
    d.iters = (int)iters;
    d.warmup = d.iters / 10 + 5;

    DU(duet_init());
    setup(&d, maxb);
    warm_up(&d, minb, maxb);
    double sizes[MAX_ROWS], times[MAX_ROWS][COLS];
    int rows = 0, all_ok = 1;
    for (size_t bytes = minb; bytes <= maxb && rows < MAX_ROWS; bytes *= factor) {
        size_t count = bytes / sizeof(float), S = count * sizeof(float); /* both move S bytes */
        long long wrong = 0, wrong_all = 0;
        double t[COLS], slowest[COLS];
        t[PUT] = time_put(&d, S, &wrong);
        wrong += check_allreduce(&d, count);
        t[AR] = time_allreduce(&d, count);
        wrong += compare_allreduce(&d, count); /* the last timed call's output */
        DU(duet_allreduce(&wrong, &wrong_all, 1, DUET_INT64, DUET_SUM, d.comm, NULL));
        DU(duet_allreduce(t, slowest, COLS, DUET_FLOAT64, DUET_MAX, d.comm, NULL)); /* put: rank 0's */
        all_ok &= wrong_all == 0;
        sizes[rows] = (double)S;
        for (int k = 0; k < COLS; k++) times[rows][k] = slowest[k];
        rows++;
        if (d.me == 0) {
            printf("%10zu %10.3f %14.3f %8.2f  ", S, slowest[PUT], slowest[AR], slowest[AR] / slowest[PUT]);
            if (wrong_all) printf("WRONG (%lld bytes or elements over the ranks)\n", wrong_all);
            else printf("yes\n");
            fflush(stdout);
        }
        if (bytes > maxb / factor) break; /* the next step would pass -e (or overflow) */
    }
    if (d.me == 0) {
        report(d.n, sizes, times, rows, plot_file);
        if (!all_ok) fprintf(stderr, "%s: a received message or an allreduce result was wrong\n", PROG);
    }

    teardown(&d);
    DU(duet_finalize());
    return all_ok ? 0 : 1;
}

/* oneshot.c — an allreduce written by hand with one-sided calls, against the library's.
 *
 *   duetrun -n 4 oneshot [-b MIN] [-e MAX] [-i ITERS] [--plot FILE.png]
 *
 * The hand-written one: every rank puts its whole vector into a slot of its own on every peer
 * (duet_put_signal: the data, then a signal saying "call k is there"), waits until every
 * peer's signal says k, and adds the n vectors in rank order. One round, n - 1 messages of the
 * whole vector from each rank: the least latency there is, and the most bytes (n x S per
 * rank). Two slot sets alternate by call parity: a rank can be one call ahead of a peer but not
 * two (it needs the peer's data of the call in between), so it never overwrites what the peer
 * is still adding. duet_allreduce picks among its algorithms by size (its tuner): at small
 * sizes a one-shot of its own, at large ones ring-like algorithms that move 2(n-1)/n x S.
 * For each size (float32, integer values so every order gives the same bits) both run ITERS
 * times; the table gives microseconds per call and whether the two results are identical. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <duet/duet.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + 1e-3 * (double)ts.tv_nsec;
}

static void fail(const char *what)
{
    fprintf(stderr, "oneshot: rank %d: %s: %s\n", duet_my_pe(), what, duet_last_error());
    exit(1);
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k') v *= 1024;
    else if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
    return (size_t)v;
}

typedef struct {
    duet_comm_t comm;
    int me, n;
    float *slots;   /* symmetric: 2 parities x n ranks x max elements */
    uint64_t *sig;  /* symmetric: 2 parities x n ranks: the last call whose data is in the slot */
    size_t max;     /* elements per slot */
    uint64_t calls;
} oneshot_t;

/* The hand-written allreduce (sum) of `count` floats: in -> out. */
static void my_allreduce(oneshot_t *o, const float *in, float *out, size_t count)
{
    uint64_t k = ++o->calls;
    int par = (int)(k & 1);
    float *mine = o->slots + ((size_t)par * o->n + (size_t)o->me) * o->max; /* my slot, on every rank */
    uint64_t *my_sig = &o->sig[par * o->n + o->me];
    for (int d = 1; d < o->n; d++) { /* the peers after me first: spreads the traffic */
        int pe = (o->me + d) % o->n;
        if (duet_put_signal(o->comm, mine, in, count * sizeof *in, my_sig, k, DUET_SIGNAL_SET, pe))
            fail("put_signal");
    }
    memcpy(mine, in, count * sizeof *in); /* my own contribution, where the loop below reads it */
    for (int pe = 0; pe < o->n; pe++)
        if (pe != o->me && duet_signal_wait_until(o->comm, &o->sig[par * o->n + pe], DUET_CMP_GE, k, NULL))
            fail("signal_wait_until");
    for (size_t i = 0; i < count; i++) {
        float acc = 0;
        for (int pe = 0; pe < o->n; pe++) acc += o->slots[((size_t)par * o->n + (size_t)pe) * o->max + i];
        out[i] = acc;
    }
}

int main(int argc, char **argv)
{
    size_t minb = 8, maxb = 1 << 20;
    int iters = 200;
    const char *plot = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-b") && i + 1 < argc) minb = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-e") && i + 1 < argc) maxb = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--plot") && i + 1 < argc) plot = argv[++i];
        else {
            fprintf(stderr, "usage: duetrun -n P oneshot [-b MIN] [-e MAX] [-i ITERS] [--plot FILE.png]\n");
            return 2;
        }
    }
    if (minb < 4) minb = 4;
    if (duet_init()) fail("duet_init");
    oneshot_t o = {.comm = duet_comm_world(), .me = duet_my_pe(), .n = duet_n_pes(), .max = maxb / 4};
    o.slots = duet_malloc(o.comm, 2 * (size_t)o.n * o.max * sizeof(float));
    o.sig = duet_calloc(o.comm, 2 * (size_t)o.n, sizeof(uint64_t));
    float *in = malloc(maxb), *a = malloc(maxb), *b = malloc(maxb);
    if (!o.slots || !o.sig || !in || !a || !b) fail("memory (raise DUET_SYMMETRIC_SIZE for a large -e)");
    for (size_t i = 0; i < o.max; i++) in[i] = (float)((o.me * 7 + (int)i) % 13);
    FILE *dat = NULL;
    if (o.me == 0) {
        printf("oneshot: %d ranks, float32 sum, %d calls per size\n", o.n, iters);
        printf("%10s %14s %14s %8s  %s\n", "bytes", "by hand us", "duet us", "ratio", "same result");
        if (plot && !(dat = tmpfile())) fail("tmpfile");
    }
    int ok = 1;
    for (size_t bytes = minb; bytes <= maxb; bytes *= 4) {
        size_t count = bytes / 4;
        double t[2];
        for (int which = 0; which < 2; which++) {
            if (duet_barrier(o.comm)) fail("barrier");
            double t0 = 0;
            for (int it = -(iters / 10 + 5); it < iters; it++) { /* untimed warm-up first */
                if (it == 0) t0 = now_us();
                if (which == 0) my_allreduce(&o, in, a, count);
                else if (duet_allreduce(in, b, count, DUET_FLOAT32, DUET_SUM, o.comm, NULL)) fail("duet_allreduce");
            }
            t[which] = (now_us() - t0) / iters;
        }
        int same = memcmp(a, b, count * sizeof(float)) == 0, all_same;
        if (duet_allreduce(&same, &all_same, 1, DUET_INT32, DUET_MIN, o.comm, NULL)) fail("allreduce");
        double slowest[2];
        if (duet_allreduce(t, slowest, 2, DUET_FLOAT64, DUET_MAX, o.comm, NULL)) fail("allreduce");
        ok &= all_same;
        if (o.me == 0) {
            printf("%10zu %14.2f %14.2f %8.2f  %s\n", bytes, slowest[0], slowest[1], slowest[0] / slowest[1],
                   all_same ? "yes" : "NO");
            if (dat) fprintf(dat, "%zu %g %g\n", bytes, slowest[0], slowest[1]);
        }
    }
    if (dat) { /* the picture: both latencies against size, log-log */
        fflush(dat);
        rewind(dat);
        FILE *gp = popen("gnuplot", "w");
        if (!gp) {
            fprintf(stderr, "oneshot: no gnuplot: no plot\n");
        } else {
            fprintf(gp, "set terminal png size 800,500 noenhanced\nset output '%s'\nset logscale xy 2\n"
                        "set xlabel 'bytes per rank'\nset ylabel 'us per call'\nset key left top\n"
                        "set title 'allreduce, %d ranks: one-shot by hand vs duet_allreduce'\n"
                        "plot '-' using 1:2 with linespoints title 'by hand (put + signal)', "
                        "'-' using 1:3 with linespoints title 'duet_allreduce'\n", plot, o.n);
            char line[128];
            for (int pass = 0; pass < 2; pass++) {
                rewind(dat);
                while (fgets(line, sizeof line, dat)) fputs(line, gp);
                fputs("e\n", gp);
            }
            if (pclose(gp) == 0) printf("oneshot: plot written to %s\n", plot);
        }
        fclose(dat);
    }
    duet_free(o.comm, o.sig);
    duet_free(o.comm, o.slots);
    free(in), free(a), free(b);
    duet_finalize();
    return ok ? 0 : 1;
}

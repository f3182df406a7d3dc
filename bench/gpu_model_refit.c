/*
 * gpu_model_refit.c — the GPU model fitted again to measurements already made, on any machine
 * (no GPU needed): the forced-algorithm rows of a `duet-perf --validate --device` output, its
 * printed table or its --csv, as the GPU path would cost each call (duet_cuda_coll_shape),
 * under the model that costs a call alone and under the stream model (duet_coll_predict.h).
 * For each it prints the fit, the median |error| per collective and the picks within 10 % of
 * the fastest forced algorithm. With --held-out the terms are fitted to every other size
 * (8 B, 128 B, 2 KiB, ...) and judged on the others (32 B, 512 B, 8 KiB, ...), so the picks
 * and errors are of sizes the fit did not see.
 *
 *   build/bin/gpu_model_refit [--held-out] [--buffers heap|host] N FILE
 *
 * N: the rank count of FILE's run; --buffers: which of the file's tables (the --validate
 * header says "GPU heap" or "cudaMalloc"; default host, i.e. cudaMalloc). Left out, as
 * --calibrate --device leaves them out: the "auto" rows and the forced rows that run kernels
 * the model does not cost (allreduce's oneshot and twoshot up to 1 MiB, twoshot on heap
 * buffers at any size). The tables of 2026-12-04 on one H200 are under bench/data/ (docs/PERF.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_fit.h"
#include "coll/duet_coll_sim.h"
#include "cuda/duet_cuda_coll.h"
#include "cuda/duet_cuda_exec_kern.h"

typedef struct {
    int kind;
    size_t bytes;
    char algo[16];
    double us;
} row_t;

static const char *const kinds[] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter", "alltoall"};

static int kind_of(const char *op)
{
    for (int i = 0; i < 6; i++)
        if (strcmp(op, kinds[i]) == 0) return i;
    return -1;
}

/* duet-perf --device's call of a row of `bytes` (tools/perf/perf_device_coll.c: the block
 * collectives' count is per rank, bytes / 4 / n floats), as the GPU path costs it. */
static duet_coll_args_t shape_of(int kind, size_t bytes, int n)
{
    size_t total = bytes / 4, count = kind >= DUET_COLL_ALLGATHER ? total / (size_t)n : total;
    return duet_cuda_coll_shape((duet_coll_kind_t)kind, 0, n, 0, count, 4, bytes, 0, NULL);
}

/* The size's place in 8 B, 32 B, 128 B, ... */
static int size_index(size_t bytes)
{
    int i = 0;
    for (size_t b = bytes; b > 8; b /= 4) i++;
    return i;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int read_rows(const char *path, int heap, int n, row_t **out)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[512];
    int cap = 1024, nr = 0, on = 0, csv = 0;
    row_t *rows = malloc(sizeof *rows * (size_t)cap);
    while (rows && fgets(line, sizeof line, f)) {
        if (strncmp(line, "op,bytes,algo", 13) == 0) { /* --csv: one table, its buffers not named */
            csv = on = 1;
            continue;
        }
        if (strncmp(line, "# duet-perf --validate", 22) == 0) {
            on = strstr(line, heap ? "GPU heap" : "cudaMalloc") != NULL;
            continue;
        }
        if (!on || line[0] == '#') continue;
        char op[32], algo[16], pred[32];
        row_t r;
        int got = csv ? sscanf(line, "%31[^,],%zu,%15[^,],%31[^,],%lf", op, &r.bytes, algo, pred, &r.us)
                      : sscanf(line, "%31s %zu %15s %31s %lf", op, &r.bytes, algo, pred, &r.us);
        if (got != 5 || (r.kind = kind_of(op)) < 0 || strcmp(algo, "auto") == 0 || !(r.us > 0)) continue;
        if (duet_cuda_coll_forced_kernel((duet_coll_kind_t)r.kind, algo, r.bytes, heap) || (r.kind >= DUET_COLL_ALLGATHER && r.bytes / 4 / (size_t)n == 0))
            continue;
        snprintf(r.algo, sizeof r.algo, "%s", algo);
        if (nr == cap) {
            row_t *p = realloc(rows, sizeof *rows * (size_t)(cap *= 2));
            if (!p) break;
            rows = p;
        }
        rows[nr++] = r;
    }
    fclose(f);
    *out = rows;
    return rows ? nr : -1;
}

static int run(const row_t *rows, int nr, int n, int stream, int held)
{
    duet_fit_sample_t *s = calloc((size_t)nr, sizeof *s);
    if (!s) return 1;
    int ns = 0;
    for (int i = 0; i < nr; i++) {
        if (held && size_index(rows[i].bytes) % 2) continue;
        s[ns] = (duet_fit_sample_t){duet_sim_find_algo((duet_coll_kind_t)rows[i].kind, rows[i].algo),
                                    shape_of(rows[i].kind, rows[i].bytes, n), rows[i].us, NULL};
        if (s[ns].algo) ns++;
    }
    /* the GPU model's start (a ping-pong's pair on the H200), alpha free as --calibrate --device */
    duet_coll_model_t m = {.alpha_us = 17, .beta_gbps = 110, .stream = stream, .slots = DUET_CUDA_EXEC_SLOTS};
    duet_fit_report_t rep;
    if (duet_coll_fit_fixed(s, ns, 0, 0, &m, &rep) != DUET_OK) {
        fprintf(stderr, "gpu_model_refit: the fit failed: %s\n", duet_last_error());
        free(s);
        return 1;
    }
    printf("%s model, %d samples: fit median %.1f %%, worst %.0f %%; step %.3g us, beta %.3g GB/s, copy %.3g, mem "
           "%.3g past %.0f MiB, reduce %.3g; call us ar %.3g bc %.3g red %.3g ag %.3g rs %.3g a2a %.3g\n",
           stream ? "stream" : "call-alone", ns, 100 * rep.err_median, 100 * rep.err_max, m.step_us, m.beta_gbps,
           m.copy_gbps, m.mem_gbps, m.knee_bytes / 1048576.0, m.reduce_gbps, m.call_kind_us[0], m.call_kind_us[1],
           m.call_kind_us[2], m.call_kind_us[3], m.call_kind_us[4], m.call_kind_us[5]);
    double *err = malloc(sizeof *err * (size_t)nr);
    int cells = 0, close = 0;
    double worst = 1;
    char worst_at[64] = "-";
    printf("  %s: median |error| %%", held ? "held-out sizes" : "every size");
    for (int k = 0; k < 6 && err; k++) {
        int ne = 0;
        for (int i = 0; i < nr;) { /* a cell: the rows of one collective and size, together in the file */
            int j = i;
            while (j < nr && rows[j].kind == rows[i].kind && rows[j].bytes == rows[i].bytes) j++;
            if (rows[i].kind != k || (held && size_index(rows[i].bytes) % 2 == 0)) {
                i = j;
                continue;
            }
            duet_coll_args_t a = shape_of(k, rows[i].bytes, n);
            double best = INFINITY, pick = 0, fastest = INFINITY;
            for (int q = i; q < j; q++) {
                duet_predict_t p;
                if (duet_coll_predict_all(&a, &m, rows[q].algo, &p) == DUET_OK && p.n && p.e[0].status == DUET_OK) {
                    err[ne++] = fabs(p.e[0].us - rows[q].us) / rows[q].us;
                    if (p.e[0].us < best) best = p.e[0].us, pick = rows[q].us;
                }
                if (rows[q].us < fastest) fastest = rows[q].us;
            }
            if (pick > 0) {
                double r = pick / fastest;
                cells++, close += r <= 1.10;
                if (r > worst) worst = r, snprintf(worst_at, sizeof worst_at, "%s %zu B", kinds[k], rows[i].bytes);
            }
            i = j;
        }
        qsort(err, (size_t)ne, sizeof *err, cmp_double);
        printf(" %s %.0f", kinds[k], ne ? 100 * err[ne / 2] : NAN);
    }
    printf("; picks within 10 %%: %d of %d, worst %.2fx (%s)\n", close, cells, worst, worst_at);
    free(err);
    free(s);
    return 0;
}

int main(int argc, char **argv)
{
    int held = 0, heap = 0, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--held-out") == 0) held = 1;
        else if (strcmp(argv[i], "--buffers") == 0 && i + 1 < argc) heap = strcmp(argv[++i], "heap") == 0;
        else break;
    }
    if (argc - i != 2 || atoi(argv[i]) < 2) {
        fprintf(stderr, "usage: gpu_model_refit [--held-out] [--buffers heap|host] N FILE\n");
        return 2;
    }
    int n = atoi(argv[i]);
    row_t *rows = NULL;
    int nr = read_rows(argv[i + 1], heap, n, &rows);
    if (nr <= 0) {
        fprintf(stderr, "gpu_model_refit: no forced-algorithm rows in %s (%s buffers)\n", argv[i + 1],
                heap ? "GPU heap" : "cudaMalloc");
        free(rows);
        return 1;
    }
    printf("# %s: %d ranks, %s buffers, %d forced-algorithm rows\n", argv[i + 1], n, heap ? "GPU heap" : "cudaMalloc",
           nr);
    int rc = run(rows, nr, n, 0, held) || run(rows, nr, n, 1, held);
    free(rows);
    return rc;
}

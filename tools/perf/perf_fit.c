/*
 * duet-perf --fit and --plot: what a sweep says about the cost model T(n) = alpha + n / beta.
 *
 * Rows come from the sweep just run or from CSV files (duet-perf --fit a.csv b.csv ...), so
 * runs of one algorithm each (tools/duet-perf-algos.sh) can be compared. Rows group into
 * series: one per (op, dtype, redop, algorithm); "auto:NAME" rows (the tuner's choices) form
 * one series "auto". A series found in several files is split per file (NAME@file).
 *
 * Fit. time_us = alpha_us + bytes / (beta_GBps * 1e3), least squares on the relative error
 * sum(((alpha + bytes/beta) / t - 1)^2): every size weighs the same whether it takes 2 us or
 * 20 ms (a plain fit would be decided by the largest sizes alone, leaving alpha noise).
 * alpha and 1/beta are kept >= 0 (a negative one is set to 0 and the other refitted).
 *
 * Crossovers, per pair of series of the same op/dtype/redop: where the fitted lines meet,
 * n* = (alpha_b - alpha_a) / (1/beta_a - 1/beta_b), and where the measured times change
 * order: the split "a faster below, b from there" that the most sizes agree with (the first
 * size where the order flips, when the data are clean). Then the fastest series
 * per size, measured and by fit, and how far the tuner's choices ("auto") are from the
 * fastest forced algorithm.
 *
 * Plot (gnuplot, pngcairo): left, time against size, log-log, points per series and its fit
 * dashed; right, busbw against size, with the fit's busbw dashed.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "perf.h"

#define MAX_FILES 256
static const char *files[MAX_FILES];
static int nfiles;
static int *row_file; /* the file index of each row read (parallel to the rows) */
static size_t row_file_cap;

static int set_row_file(size_t i, int file)
{
    if (i >= row_file_cap) {
        size_t cap = row_file_cap ? 2 * row_file_cap : 256;
        while (cap <= i) cap *= 2;
        int *n = realloc(row_file, cap * sizeof *n);
        if (!n) return -1;
        for (size_t k = row_file_cap; k < cap; k++) n[k] = -1;
        row_file = n, row_file_cap = cap;
    }
    row_file[i] = file;
    return 0;
}

/* ------------------------------------------------------------------------ CSV */
static int field(char **cursor, char *out, size_t len)
{
    char *s = *cursor;
    if (!s) return -1;
    char *comma = strchr(s, ',');
    size_t n = comma ? (size_t)(comma - s) : strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
    if (n >= len) return -1;
    memcpy(out, s, n);
    out[n] = '\0';
    *cursor = comma ? comma + 1 : NULL;
    return 0;
}

int perf_read_csv(const char *path, perf_row_t **rows, size_t *nrows)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "duet-perf: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (nfiles == MAX_FILES) {
        fprintf(stderr, "duet-perf: more than %d CSV files\n", MAX_FILES);
        fclose(f);
        return -1;
    }
    int file = nfiles;
    files[nfiles++] = path;
    char line[1024];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '\n' || line[0] == '#') continue;
        if (strncmp(line, "op,", 3) == 0) { /* a header: the first line, or one per joined file */
            if (strncmp(line, PERF_CSV_HEADER, strlen(PERF_CSV_HEADER)) != 0) {
                fprintf(stderr, "duet-perf: %s:%d: not duet-perf's CSV header (%s)\n", path, lineno,
                        PERF_CSV_HEADER);
                rc = -1;
                break;
            }
            continue;
        }
        perf_row_t r = {0};
        char num[7][40], *c = line;
        int ok = field(&c, r.op, sizeof r.op) == 0 && field(&c, num[0], sizeof num[0]) == 0 &&
                 field(&c, num[1], sizeof num[1]) == 0 && field(&c, r.dtype, sizeof r.dtype) == 0 &&
                 field(&c, r.redop, sizeof r.redop) == 0 && field(&c, r.algo, sizeof r.algo) == 0;
        for (int k = 2; ok && k < 6; k++) ok = field(&c, num[k], sizeof num[k]) == 0;
        char *end;
        if (ok) {
            r.bytes = strtoull(num[0], &end, 10), ok = *end == '\0';
            r.count = strtoull(num[1], &end, 10), ok = ok && *end == '\0';
            r.time_us = strtod(num[2], &end), ok = ok && *end == '\0';
            r.algbw = strtod(num[3], &end), ok = ok && *end == '\0';
            r.busbw = strtod(num[4], &end), ok = ok && *end == '\0';
            r.wrong = strtoll(num[5], &end, 10), ok = ok && *end == '\0';
        }
        if (!ok) {
            fprintf(stderr, "duet-perf: %s:%d: not a row of %s\n", path, lineno, PERF_CSV_HEADER);
            rc = -1;
            break;
        }
        perf_row_t *n = realloc(*rows, (*nrows + 1) * sizeof *n);
        if (n) *rows = n;
        if (!n || set_row_file(*nrows, file) != 0) {
            fprintf(stderr, "duet-perf: out of memory reading %s\n", path);
            rc = -1;
            break;
        }
        (*rows)[(*nrows)++] = r;
    }
    fclose(f);
    return rc;
}

/* ------------------------------------------------------------------------ series */
typedef struct {
    char op[32], dtype[16], redop[16], family[48];
    int file;      /* -1: rows from the sweep just run */
    char label[128];
    int group;     /* series of one group (op, dtype, redop) are compared */
    int is_auto;
    /* points, by size */
    size_t n, *x;
    double *t, *bus;
    double busfactor; /* busbw / algbw of the rows */
    /* the fit */
    int fitted;
    double alpha, b, rms, maxerr; /* b: us per byte (1 / (beta * 1e3)) */
} series_t;

static void family_of(const char *algo, char *out, size_t len)
{
    snprintf(out, len, "%s", algo);
    char *colon = strchr(out, ':');
    if (colon && strncmp(out, "auto", 4) == 0) *colon = '\0';
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static int same_group(const series_t *a, const series_t *b)
{
    return strcmp(a->op, b->op) == 0 && strcmp(a->dtype, b->dtype) == 0 && strcmp(a->redop, b->redop) == 0;
}

/* Groups rows into series (in order of first appearance). Returns the count, -1 on no memory. */
static int build_series(perf_row_t *rows, size_t nrows, series_t **out)
{
    series_t *s = calloc(nrows ? nrows : 1, sizeof *s);
    int ns = 0;
    if (!s) return -1;
    for (size_t i = 0; i < nrows; i++) {
        perf_row_t *r = &rows[i];
        char fam[48];
        family_of(r->algo, fam, sizeof fam);
        int file = row_file && i < row_file_cap ? row_file[i] : -1, k;
        for (k = 0; k < ns; k++)
            if (strcmp(s[k].op, r->op) == 0 && strcmp(s[k].dtype, r->dtype) == 0 &&
                strcmp(s[k].redop, r->redop) == 0 && strcmp(s[k].family, fam) == 0 && s[k].file == file)
                break;
        if (k == ns) {
            series_t *n = &s[ns++];
            snprintf(n->op, sizeof n->op, "%s", r->op);
            snprintf(n->dtype, sizeof n->dtype, "%s", r->dtype);
            snprintf(n->redop, sizeof n->redop, "%s", r->redop);
            snprintf(n->family, sizeof n->family, "%s", fam);
            n->file = file;
            n->is_auto = strcmp(fam, "auto") == 0;
        }
        r->series = k;
        s[k].n++;
    }
    /* points, sorted by size */
    for (int k = 0; k < ns; k++) {
        s[k].x = calloc(s[k].n, sizeof *s[k].x);
        s[k].t = calloc(s[k].n, sizeof *s[k].t);
        s[k].bus = calloc(s[k].n, sizeof *s[k].bus);
        if (!s[k].x || !s[k].t || !s[k].bus) return -1;
        s[k].n = 0;
    }
    /* sort the rows' indices by size per series: collect (size, row) pairs */
    for (int k = 0; k < ns; k++) {
        size_t m = 0;
        size_t (*pairs)[2] = malloc(sizeof *pairs * (nrows ? nrows : 1));
        if (!pairs) return -1;
        for (size_t i = 0; i < nrows; i++)
            if (rows[i].series == k) pairs[m][0] = rows[i].bytes, pairs[m][1] = i, m++;
        qsort(pairs, m, sizeof *pairs, cmp_size);
        for (size_t j = 0; j < m; j++) {
            const perf_row_t *r = &rows[pairs[j][1]];
            if (r->time_us <= 0) continue;
            s[k].x[s[k].n] = r->bytes, s[k].t[s[k].n] = r->time_us, s[k].bus[s[k].n] = r->busbw;
            s[k].n++;
            if (r->algbw > 0) s[k].busfactor = r->busbw / r->algbw;
        }
        free(pairs);
    }
    /* labels: the algorithm, plus whatever else differs between series */
    int ops = 0, types = 0, files_seen = 0;
    for (int k = 1; k < ns; k++) {
        ops |= strcmp(s[k].op, s[0].op) != 0;
        types |= strcmp(s[k].dtype, s[0].dtype) != 0 || strcmp(s[k].redop, s[0].redop) != 0;
        for (int j = 0; j < k; j++)
            files_seen |= same_group(&s[j], &s[k]) && strcmp(s[j].family, s[k].family) == 0;
    }
    for (int k = 0; k < ns; k++) {
        char *l = s[k].label;
        size_t len = sizeof s[k].label;
        int used = 0;
        if (ops) used += snprintf(l + used, len - (size_t)used, "%s ", s[k].op);
        used += snprintf(l + used, len - (size_t)used, "%s", s[k].family);
        if (types && strcmp(s[k].redop, "none") != 0)
            used += snprintf(l + used, len - (size_t)used, " %s %s", s[k].dtype, s[k].redop);
        else if (types)
            used += snprintf(l + used, len - (size_t)used, " %s", s[k].dtype);
        if (files_seen && s[k].file >= 0)
            snprintf(l + used, len - (size_t)used, "@%s", base_name(files[s[k].file]));
        s[k].group = k;
        for (int j = 0; j < k; j++)
            if (same_group(&s[j], &s[k])) {
                s[k].group = s[j].group;
                break;
            }
    }
    *out = s;
    return ns;
}

static void free_series(series_t *s, int ns)
{
    for (int k = 0; s && k < ns; k++) free(s[k].x), free(s[k].t), free(s[k].bus);
    free(s);
}

/* ------------------------------------------------------------------------ the fit */
static double model(const series_t *s, double x) { return s->alpha + s->b * x; }

static void fit(series_t *s)
{
    double uu = 0, uv = 0, vv = 0, su = 0, sv = 0;
    for (size_t i = 0; i < s->n; i++) {
        double u = 1 / s->t[i], v = (double)s->x[i] / s->t[i];
        uu += u * u, uv += u * v, vv += v * v, su += u, sv += v;
    }
    s->fitted = 0;
    if (s->n == 0) return;
    double det = uu * vv - uv * uv;
    s->alpha = -1, s->b = -1;
    if (s->n >= 2 && det > 1e-12 * uu * vv) {
        s->alpha = (su * vv - sv * uv) / det;
        s->b = (uu * sv - uv * su) / det;
    }
    if (s->alpha < 0 && s->b >= 0 && vv > 0) s->alpha = 0, s->b = sv / vv;
    if (s->b < 0 || s->alpha < 0) s->b = 0, s->alpha = su / uu; /* no size dependence */
    double sq = 0;
    s->maxerr = 0;
    for (size_t i = 0; i < s->n; i++) {
        double e = model(s, (double)s->x[i]) / s->t[i] - 1;
        sq += e * e;
        if (fabs(e) > s->maxerr) s->maxerr = fabs(e);
    }
    s->rms = sqrt(sq / (double)s->n);
    s->fitted = 1;
}

static void human(char *out, size_t len, double bytes)
{
    static const char *unit[] = {"", "K", "M", "G", "T"};
    int u = 0;
    while (u < 4 && bytes >= 1024) bytes /= 1024, u++;
    if (bytes == floor(bytes)) snprintf(out, len, "%.0f%s", bytes, unit[u]);
    else snprintf(out, len, "%.3g%s", bytes, unit[u]);
}

static double time_at(const series_t *s, size_t x, int *found)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->x[i] == x) return *found = 1, s->t[i];
    return *found = 0, 0;
}

/* Where the fitted lines of a and b cross, and where the measured order first flips. */
static void crossover(FILE *out, const series_t *a, const series_t *b)
{
    char h1[32], h2[32];
    fprintf(out, "crossover %s / %s: fit: ", a->label, b->label);
    double db = a->b - b->b, x = db != 0 ? (b->alpha - a->alpha) / db : -1;
    size_t lo = a->x[0] > b->x[0] ? a->x[0] : b->x[0];
    size_t hi = a->x[a->n - 1] < b->x[b->n - 1] ? a->x[a->n - 1] : b->x[b->n - 1];
    if (x > 0 && isfinite(x)) {
        const series_t *small = a->alpha < b->alpha ? a : b, *large = small == a ? b : a;
        human(h1, sizeof h1, x);
        fprintf(out, "%s = %s at %.0f B (%sB): %s faster below, %s above%s", a->label, b->label, x, h1,
                small->label, large->label, x < (double)lo || x > (double)hi ? " (outside the measured sizes)" : "");
    } else {
        const series_t *f = model(a, (double)lo) <= model(b, (double)lo) ? a : b;
        fprintf(out, "no crossing, %s faster at every size", f->label);
    }
    /* measured: the sign of t_a - t_b over the common sizes (ascending) */
    size_t m = 0, xs[4096];
    int sign[4096];
    for (size_t i = 0; i < a->n && m < 4096; i++) {
        int found;
        double tb = time_at(b, a->x[i], &found);
        if (found) xs[m] = a->x[i], sign[m++] = a->t[i] < tb ? -1 : a->t[i] > tb ? 1 : 0;
    }
    if (!m) {
        fprintf(out, "; measured: no common sizes\n");
        return;
    }
    /* The split "one faster below, the other from xs[k]" that the most sizes agree with;
     * k = 0 or m: no crossing, preferred on a tie (noise is no crossover). Among crossings,
     * ties go to the smallest k: the first flip, on clean data. */
    size_t best_k = 0, best_err = SIZE_MAX;
    int best_o = -1;
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = 0; k <= m; k++) {
            if ((k > 0 && k < m) != pass) continue; /* pass 0: no crossing; 1: crossings */
            for (int o = -1; o <= 1; o += 2) { /* o = -1: a faster below xs[k] */
                size_t err = 0;
                for (size_t i = 0; i < m; i++) err += sign[i] == (i < k ? -o : o);
                if (err < best_err) best_k = k, best_o = o, best_err = err;
            }
        }
    const series_t *below = best_o < 0 ? a : b, *above = best_o < 0 ? b : a;
    if (best_k == 0 || best_k == m) {
        const series_t *f = best_k == 0 ? above : below;
        fprintf(out, "; measured: %s faster at %zu of %zu sizes\n", f->label, m - best_err, m);
        return;
    }
    human(h1, sizeof h1, (double)xs[best_k - 1]), human(h2, sizeof h2, (double)xs[best_k]);
    fprintf(out, "; measured: %s faster up to %sB, %s from %sB", below->label, h1, above->label, h2);
    if (best_err) fprintf(out, " (%zu of %zu sizes disagree: noise)", best_err, m);
    fprintf(out, "\n");
}

/* The fastest series of a group at each size (measured or by fit), as runs of sizes. */
static void fastest(FILE *out, series_t *s, int ns, int group, int by_fit)
{
    size_t xs[4096], nx = 0;
    for (int k = 0; k < ns; k++) {
        if (s[k].group != group || s[k].is_auto) continue;
        for (size_t i = 0; i < s[k].n && nx < 4096; i++) {
            size_t j;
            for (j = 0; j < nx && xs[j] != s[k].x[i]; j++) {}
            if (j == nx) xs[nx++] = s[k].x[i];
        }
    }
    qsort(xs, nx, sizeof *xs, cmp_size);
    int run = -1;
    size_t run_from = 0, run_to = 0;
    char h1[32], h2[32];
    fprintf(out, "fastest %s:", by_fit ? "by fit " : "measured");
    for (size_t j = 0; j <= nx; j++) {
        int best = -1;
        double bt = 0;
        for (int k = 0; j < nx && k < ns; k++) {
            if (s[k].group != group || s[k].is_auto) continue;
            int found = 1;
            double t = by_fit ? model(&s[k], (double)xs[j]) : time_at(&s[k], xs[j], &found);
            if (found && (best < 0 || t < bt)) best = k, bt = t;
        }
        if (j < nx && best == run) {
            run_to = xs[j];
            continue;
        }
        if (run >= 0) {
            human(h1, sizeof h1, (double)run_from), human(h2, sizeof h2, (double)run_to);
            fprintf(out, " %s %sB..%sB", s[run].label, h1, h2);
        }
        if (j < nx) run = best, run_from = run_to = xs[j];
    }
    fprintf(out, "\n");
}

/* How the tuner's choices compare with the fastest forced algorithm, size by size. */
static void tuner_quality(FILE *out, series_t *s, int ns, int au)
{
    double worst = 0, sum_log = 0;
    size_t n = 0, worst_x = 0;
    int worst_k = -1;
    for (size_t i = 0; i < s[au].n; i++) {
        int best = -1;
        double bt = 0;
        for (int k = 0; k < ns; k++) {
            int found;
            if (k == au || s[k].group != s[au].group || s[k].is_auto) continue;
            double t = time_at(&s[k], s[au].x[i], &found);
            if (found && (best < 0 || t < bt)) best = k, bt = t;
        }
        if (best < 0 || bt <= 0) continue;
        double ratio = s[au].t[i] / bt;
        sum_log += log(ratio), n++;
        if (ratio > worst) worst = ratio, worst_x = s[au].x[i], worst_k = best;
    }
    if (!n) return;
    char h[32];
    human(h, sizeof h, (double)worst_x);
    fprintf(out, "tuner: %s takes %.2fx the fastest forced algorithm's time (geometric mean over %zu sizes); "
            "worst %.2fx at %sB (fastest there: %s)\n", s[au].label, exp(sum_log / (double)n), n, worst, h,
            s[worst_k].label);
}

int perf_fit_report(FILE *out, perf_row_t *rows, size_t nrows)
{
    series_t *s = NULL;
    int ns = build_series(rows, nrows, &s);
    if (ns < 0) {
        fprintf(stderr, "duet-perf: out of memory\n");
        return -1;
    }
    if (ns == 0) {
        fprintf(stderr, "duet-perf: --fit: no rows\n");
        free(s);
        return -1;
    }
    fprintf(out, "# fit: time_us = alpha_us + bytes / (beta_GBps * 1e3), least squares on the relative "
                 "error (every size weighs the same)\n");
    for (int k = 0; k < ns; k++) {
        fit(&s[k]);
        if (!s[k].fitted) {
            fprintf(out, "fit: %s: no row with a time\n", s[k].label);
            continue;
        }
        char lo[32], hi[32], beta[32];
        human(lo, sizeof lo, (double)s[k].x[0]), human(hi, sizeof hi, (double)s[k].x[s[k].n - 1]);
        if (s[k].b > 0) snprintf(beta, sizeof beta, "%.4g", 1e-3 / s[k].b);
        else snprintf(beta, sizeof beta, "inf");
        fprintf(out, "fit: alpha = %.4g us, beta = %s GB/s  %-10s (%s %s %s; %zu sizes %sB..%sB; rms error %.1f%%, "
                "max %.1f%%)\n", s[k].alpha, beta, s[k].label, s[k].op, s[k].dtype, s[k].redop, s[k].n, lo, hi,
                100 * s[k].rms, 100 * s[k].maxerr);
    }
    for (int g = 0; g < ns; g++) {
        if (s[g].group != g) continue;
        int members = 0;
        for (int k = 0; k < ns; k++) members += s[k].group == g && s[k].fitted && !s[k].is_auto;
        for (int a = 0; a < ns; a++)
            for (int b = a + 1; b < ns; b++)
                if (s[a].group == g && s[b].group == g && s[a].fitted && s[b].fitted && !s[a].is_auto &&
                    !s[b].is_auto)
                    crossover(out, &s[a], &s[b]);
        if (members >= 2) {
            fastest(out, s, ns, g, 0);
            fastest(out, s, ns, g, 1);
        }
        for (int k = 0; k < ns; k++)
            if (s[k].group == g && s[k].is_auto && members >= 1) tuner_quality(out, s, ns, k);
    }
    fflush(out);
    free_series(s, ns);
    return 0;
}

/* ------------------------------------------------------------------------ the plot */
static void gp_quote(FILE *f, const char *text)
{
    fputc('\'', f);
    for (const char *c = text; *c; c++) {
        if (*c == '\'') fputc('\'', f); /* gnuplot: '' inside single quotes */
        fputc(*c, f);
    }
    fputc('\'', f);
}

int perf_plot(const char *png, perf_row_t *rows, size_t nrows)
{
    series_t *s = NULL;
    int ns = build_series(rows, nrows, &s);
    if (ns <= 0) {
        fprintf(stderr, "duet-perf: --plot: no rows\n");
        free(s);
        return -1;
    }
    size_t lo = SIZE_MAX, hi = 0;
    for (int k = 0; k < ns; k++) {
        fit(&s[k]);
        for (size_t i = 0; i < s[k].n; i++)
            if (s[k].x[i] > 0) lo = s[k].x[i] < lo ? s[k].x[i] : lo, hi = s[k].x[i] > hi ? s[k].x[i] : hi;
    }
    if (hi == 0) {
        fprintf(stderr, "duet-perf: --plot: no row with a size and a time\n");
        free_series(s, ns);
        return -1;
    }
    FILE *gp = popen("gnuplot", "w");
    if (!gp) {
        fprintf(stderr, "duet-perf: --plot: cannot start gnuplot: %s\n", strerror(errno));
        free_series(s, ns);
        return -1;
    }
    char title[256];
    snprintf(title, sizeof title, "duet-perf: %s%s%s %s", s[0].op, strcmp(s[0].redop, "none") ? " " : "",
             strcmp(s[0].redop, "none") ? s[0].redop : "", s[0].dtype);
    fprintf(gp, "set terminal pngcairo size 1600,650 noenhanced font ',10'\nset output ");
    gp_quote(gp, png);
    fprintf(gp, "\nset multiplot layout 1,2 title ");
    gp_quote(gp, title);
    fprintf(gp, "\nset logscale x 2\nset format x '%%.0b%%B'\nset xtics 8\nset grid\nset key left top\n"
                "set samples 400\nset xrange [%zu:%zu]\nset xlabel 'bytes'\n", lo, hi);
    for (int k = 0; k < ns; k++) {
        fprintf(gp, "$d%d << EOD\n", k);
        for (size_t i = 0; i < s[k].n; i++)
            if (s[k].x[i] > 0) fprintf(gp, "%zu %.6g %.6g\n", s[k].x[i], s[k].t[i], s[k].bus[i]);
        fprintf(gp, "EOD\n");
        fprintf(gp, "a%d = %.9g\nb%d = %.9g\nf%d = %.9g\n", k, s[k].alpha, k, s[k].b, k, s[k].busfactor);
    }
    /* left: time, log-log */
    fprintf(gp, "set logscale y 10\nset format y '%%g'\nset ylabel 'time per call (us)'\nset key right bottom\n"
                "set title 'time (points) and fit alpha + n/beta (dashed)'\nplot ");
    for (int k = 0; k < ns; k++) {
        char fitlabel[256];
        snprintf(fitlabel, sizeof fitlabel, "%s fit: %.3g us + n / %.3g GB/s", s[k].label, s[k].alpha,
                 s[k].b > 0 ? 1e-3 / s[k].b : INFINITY);
        fprintf(gp, "%s$d%d using 1:2 with linespoints lc %d pt 7 ps 0.6 title ", k ? ", " : "", k, k + 1);
        gp_quote(gp, s[k].label);
        fprintf(gp, ", a%d + b%d * x with lines lc %d dt 2 title ", k, k, k + 1);
        gp_quote(gp, fitlabel);
    }
    /* right: busbw */
    fprintf(gp, "\nunset logscale y\nset key left top\nset ylabel 'busbw (GB/s)'\nset title 'bus bandwidth (points) and the fit''s (dashed)'\n"
                "plot ");
    for (int k = 0; k < ns; k++) {
        fprintf(gp, "%s$d%d using 1:3 with linespoints lc %d pt 7 ps 0.6 title ", k ? ", " : "", k, k + 1);
        gp_quote(gp, s[k].label);
        fprintf(gp, ", f%d * x / (a%d + b%d * x) / 1e3 with lines lc %d dt 2 notitle", k, k, k, k + 1);
    }
    fprintf(gp, "\nunset multiplot\nset output\n");
    int st = pclose(gp);
    free_series(s, ns);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
            fprintf(stderr, "duet-perf: --plot needs gnuplot (Debian: apt-get install gnuplot-nox)\n");
        else fprintf(stderr, "duet-perf: --plot: gnuplot failed (status %d)\n", st);
        return -1;
    }
    printf("plot: wrote %s\n", png);
    return 0;
}

/*
 * examples/common/fit_plot.h — what the latency examples share: the alpha-beta fit of a
 * measured column, the crossover of a put's line with an allreduce's (fitted and measured), and
 * gnuplot's input. Header-only; PROG (the program's name) must be defined before including it.
 */
#ifndef DUET_EXAMPLES_FIT_PLOT_H
#define DUET_EXAMPLES_FIT_PLOT_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

/* T(S) = alpha + beta * S */
typedef struct {
    double alpha; /* us */
    double beta;  /* us per byte */
} fit_t;

/* Least squares on the relative error, sum(((alpha + beta S) / t - 1)^2), i.e. weights 1 / t^2;
 * a negative alpha or beta is set to 0 and the other refitted. */
static inline fit_t fit_line(const double *S, const double *t, int m)
{
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < m; i++) {
        double w = 1.0 / (t[i] * t[i]);
        sw += w, sx += w * S[i], sy += w * t[i], sxx += w * S[i] * S[i], sxy += w * S[i] * t[i];
    }
    fit_t f = {m > 0 ? sy / sw : 0.0, 0.0};
    double det = sw * sxx - sx * sx;
    if (m < 2 || det <= 0) return f;
    f.alpha = (sxx * sy - sx * sxy) / det;
    f.beta = (sw * sxy - sx * sy) / det;
    if (f.alpha < 0) f.alpha = 0, f.beta = sxy / sxx;
    else if (f.beta < 0) f.beta = 0, f.alpha = sy / sw;
    return f;
}

static inline const char *human(double bytes, char *buf, size_t len)
{
    if (bytes >= 1024.0 * 1024 * 1024) snprintf(buf, len, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    else if (bytes >= 1024.0 * 1024) snprintf(buf, len, "%.1f MiB", bytes / (1024.0 * 1024));
    else if (bytes >= 1024.0) snprintf(buf, len, "%.1f KiB", bytes / 1024.0);
    else snprintf(buf, len, "%.0f B", bytes);
    return buf;
}

/* One fit's line; alpha with `digits` decimals. */
static inline void print_fit(const char *name, fit_t f, int digits)
{
    printf("  %-26s alpha %8.*f us   beta %9.5f us/KiB", name, digits, f.alpha, f.beta * 1024);
    if (f.beta > 0) printf(" (%.1f GB/s)\n", 1e-3 / f.beta);
    else printf(" (no slope)\n");
}

/* Where the fitted lines of the put (p; `put` names it: "host put", "device put") and an
 * allreduce (a) meet, said in words; `largest`: the largest size measured (a crossover past it
 * is the lines' extrapolation). */
static inline void print_model_crossover(const char *name, const char *put, fit_t p, fit_t a, double largest)
{
    double da = a.alpha - p.alpha, db = p.beta - a.beta; /* the put's lead in alpha, its lag in beta */
    char s[32];
    printf("  vs %-26s ", name);
    if (da >= 0 && db <= 0) printf("no crossover: the %s is faster at every size\n", put);
    else if (da <= 0 && db >= 0) printf("no crossover: the allreduce is faster at every size\n");
    else {
        if (da > 0) printf("the %s is faster below %s, the allreduce above", put, human(da / db, s, sizeof s));
        else printf("the allreduce is faster below %s, the %s above", human(da / db, s, sizeof s), put);
        printf("%s\n", da / db > largest ? " (past the largest size measured)" : "");
    }
}

/* The smallest size from which the allreduce is at least as fast at every larger size. */
static inline void print_measured_crossover(const char *name, const char *put, const double *S,
                                            const double *put_us, const double *ar_us, int m)
{
    int from = m;
    while (from > 0 && ar_us[from - 1] <= put_us[from - 1]) from--;
    char s[32];
    printf("  vs %-26s ", name);
    if (from == m) printf("the %s is faster up to the largest size\n", put);
    else if (from == 0) printf("the allreduce is as fast or faster at every size\n");
    else printf("the allreduce is as fast or faster from %s on\n", human(S[from], s, sizeof s));
}

/* gnuplot's input: a pipe to gnuplot, or, where there is none, FILE.gp, a script that makes the
 * same picture elsewhere (gnuplot FILE.gp). *piped says which. */
static inline FILE *plot_open(const char *file, int *piped)
{
    *piped = system("command -v gnuplot >/dev/null 2>&1") == 0;
    if (*piped) {
        signal(SIGPIPE, SIG_IGN); /* a gnuplot that dies early must not take the program with it */
        return popen("gnuplot", "w");
    }
    char script[1024];
    snprintf(script, sizeof script, "%s.gp", file);
    FILE *f = fopen(script, "w");
    if (f) fprintf(stderr, "%s: no gnuplot here: `gnuplot %s` makes %s elsewhere\n", PROG, script, file);
    else fprintf(stderr, "%s: no gnuplot, and cannot write %s: no plot\n", PROG, script);
    return f;
}

static inline void plot_close(FILE *gp, int piped, const char *file)
{
    if (!piped) fclose(gp);
    else if (pclose(gp) == 0) printf("%s: plot written to %s\n", PROG, file);
    else fprintf(stderr, "%s: gnuplot failed: no plot\n", PROG);
}

#endif

/*
 * The tune files: what the tuner measured, kept for the next run — and only for a run the
 * numbers are valid for.
 *
 * One file per kind of link ("" the CPU channels' shared memory, "net", "gpu"), by default
 * under $XDG_CACHE_HOME/duet or ~/.cache/duet (else /tmp), named after the host; DUET_TUNE_FILE
 * names it instead ("-net", "-gpu" appended). A file holds one line per key, fields name=value
 * separated by spaces:
 *
 *   cpu=AMD_EPYC_7B13 cores=2 duet=0.1.0 ranks=2 hosts=1 alpha_us=0.1096 beta_gbps=4.128
 *       alpha_spread=0.120 beta_spread=0.080      (one line: the repeats' (max - min) / median)
 *       call_us=0.4 step_us=0.05 copy_gbps=20 mem_gbps=3 knee_bytes=4194304 reduce_gbps=20 fit_err=0.12
 *
 * (the last seven, the fitted terms of duet-perf --calibrate, only in a line it wrote; the GPU
 * executor's add stream=1: terms fitted to calls costed as one of a stream, duet_coll_predict.h,
 * used only by a reader that costs them so — the GPU model's — and the other way round).
 *
 * The key is what makes the numbers valid: the CPU model (/proc/cpuinfo's "model name", spaces
 * as _), the cores online, Duet's version and the layout of the communicator that measured
 * (ranks on rank 0's host, hosts): two ranks on two cores do not behave as four. A line is used
 * only when every key field it has equals this run's; a field it lacks matches anything (a line
 * written by hand, "alpha_us=0.3 beta_gbps=6", holds on every machine), and a reader that does
 * not know the layout (duet-sim) takes the first line of this machine and version. Lines of
 * another form (an older Duet's "alpha_us 0.3 beta_gbps 6") are not used, so numbers measured
 * by an earlier version are measured again rather than trusted for good. Writing keeps the
 * other keys' lines and replaces this key's (a new file, renamed into place).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "coll/duet_coll_tune.h"

#define LINE_MAX_ 512
#define LINES_MAX 64

/* The tune file of `kind`. */
static void tune_path(const char *kind, char *out, size_t len)
{
    const char *set = duet_cfg()->tune_file, *dash = kind[0] ? "-" : "";
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    if (set[0]) {
        snprintf(out, len, "%s%s%s", set, dash, kind);
        return;
    }
    const char *xdg = duet_foreign(XDG_CACHE_HOME), *home = duet_foreign(HOME);
    if (xdg && xdg[0]) snprintf(out, len, "%s/duet/tune-%s%s%s.txt", xdg, host, dash, kind);
    else if (home && home[0]) snprintf(out, len, "%s/.cache/duet/tune-%s%s%s.txt", home, host, dash, kind);
    else snprintf(out, len, "/tmp/duet-tune-%d-%s%s%s.txt", (int)getuid(), host, dash, kind);
}

/* The CPU model, as a word: /proc/cpuinfo's first "model name" (x86) or "Model" / "CPU part"
 * (Arm), its spaces and '=' as '_'; "unknown" without one. */
static void cpu_model(char *out, size_t len)
{
    snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[LINE_MAX_];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) && strncmp(line, "Model", 5) && strncmp(line, "CPU part", 8)) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = '\0';
        if (v[0]) {
            snprintf(out, len, "%s", v);
            break;
        }
    }
    if (f) fclose(f);
    for (char *p = out; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '=') *p = '_';
}

void duet_coll_tune_key(const duet_coll_layout_t *layout, char *out, size_t len)
{
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int used = snprintf(out, len, "cpu=%s cores=%ld duet=%d.%d.%d", cpu, cores, DUET_VERSION_MAJOR, DUET_VERSION_MINOR,
                        DUET_VERSION_PATCH);
    if (layout && used > 0 && (size_t)used < len)
        snprintf(out + used, len - (size_t)used, " ranks=%d hosts=%d", layout->ranks, layout->hosts);
}

/* Field `name` of a line of name=value fields into out (len bytes): 1 when the line has it. */
static int field(const char *line, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *p = line; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        size_t w = strcspn(p, " \t\n\r");
        if (w > n && strncmp(p, name, n) == 0 && p[n] == '=') {
            size_t v = w - n - 1 < len - 1 ? w - n - 1 : len - 1;
            memcpy(out, p + n + 1, v);
            out[v] = '\0';
            return 1;
        }
        p += w;
    }
    return 0;
}

static const char *const key_fields[] = {"cpu", "cores", "duet", "ranks", "hosts"};

/* Whether a line's key fields equal key's. Not exact (reading): a field the line lacks
 * matches, and so do ranks and hosts when key has none. Exact (the line to replace on
 * writing): both have the same fields, with the same values. */
static int key_matches(const char *line, const char *key, int exact)
{
    for (size_t i = 0; i < DUET_ARRAY_LEN(key_fields); i++) {
        char mine[128], theirs[128];
        int a = field(line, key_fields[i], theirs, sizeof theirs), b = field(key, key_fields[i], mine, sizeof mine);
        if (a && b ? strcmp(mine, theirs) != 0 : exact && a != b) return 0;
    }
    return 1;
}

/* The fitted terms (duet_coll_fit.h), each optional: a line without them is the plain
 * alpha-beta model. A value that is not a number >= 0 leaves the whole set out. */
static const struct {
    const char *name;
    size_t at;
} terms[] = {
    {"call_us", offsetof(duet_coll_model_t, call_us)},       {"step_us", offsetof(duet_coll_model_t, step_us)},
    {"copy_gbps", offsetof(duet_coll_model_t, copy_gbps)},   {"mem_gbps", offsetof(duet_coll_model_t, mem_gbps)},     {"knee_bytes", offsetof(duet_coll_model_t, knee_bytes)},
    {"reduce_gbps", offsetof(duet_coll_model_t, reduce_gbps)}, {"fit_err", offsetof(duet_coll_model_t, fit_err)},
    {"call_allreduce_us", offsetof(duet_coll_model_t, call_kind_us[0])},
    {"call_broadcast_us", offsetof(duet_coll_model_t, call_kind_us[1])},
    {"call_reduce_us", offsetof(duet_coll_model_t, call_kind_us[2])},
    {"call_allgather_us", offsetof(duet_coll_model_t, call_kind_us[3])},
    {"call_reducescatter_us", offsetof(duet_coll_model_t, call_kind_us[4])},
    {"call_alltoall_us", offsetof(duet_coll_model_t, call_kind_us[5])},
};

static void read_terms(const char *line, duet_coll_model_t *m)
{
    char how[16];
    if ((field(line, "stream", how, sizeof how) ? atoi(how) != 0 : 0) != (m->stream != 0))
        return; /* fitted under the other costing (one call alone, or one of a stream) */
    double v[DUET_ARRAY_LEN(terms)];
    for (size_t i = 0; i < DUET_ARRAY_LEN(terms); i++) {
        char text[64], *end;
        v[i] = field(line, terms[i].name, text, sizeof text) ? strtod(text, &end) : 0;
        if (v[i] != 0 && (*end || !(v[i] >= 0) || v[i] > 1e12)) return;
    }
    for (size_t i = 0; i < DUET_ARRAY_LEN(terms); i++) *(double *)(void *)((char *)m + terms[i].at) = v[i];
}

int duet_coll_tune_file_read(const char *kind, const duet_coll_layout_t *layout, duet_coll_model_t *m, char *path,
                             size_t len)
{
    tune_path(kind, path, len);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char key[320], line[LINE_MAX_], a[64], b[64];
    duet_coll_tune_key(layout, key, sizeof key);
    int found = -1, lines = 0;
    while (found < 0 && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || !strchr(line, '=')) continue;
        lines++;
        if (!key_matches(line, key, 0) || !field(line, "alpha_us", a, sizeof a) || !field(line, "beta_gbps", b, sizeof b))
            continue;
        char *ea, *eb;
        double alpha = strtod(a, &ea), beta = strtod(b, &eb);
        if (*ea || *eb || !(alpha > 0) || !(beta > 0)) continue;
        m->alpha_us = alpha, m->beta_gbps = beta;
        m->alpha_spread = field(line, "alpha_spread", a, sizeof a) ? strtod(a, NULL) : 0;
        m->beta_spread = field(line, "beta_spread", b, sizeof b) ? strtod(b, NULL) : 0;
        read_terms(line, m);
        found = 0;
    }
    fclose(f);
    if (found < 0)
        DUET_LOG(INFO, TUNE, "%s: %s for %s (measured elsewhere, by another version or for another layout)", path,
                 lines ? "no line" : "no usable line", key);
    return found;
}

static void mkdirs_for(const char *path)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
}

void duet_coll_tune_file_write(const char *kind, const duet_coll_layout_t *layout, const duet_coll_model_t *m)
{
    char path[512], tmp[600], key[320];
    tune_path(kind, path, sizeof path);
    duet_coll_tune_key(layout, key, sizeof key);
    /* the other keys' lines stay */
    char (*keep)[LINE_MAX_] = calloc(LINES_MAX, LINE_MAX_);
    int nkeep = 0;
    FILE *old = keep ? fopen(path, "r") : NULL;
    while (old && nkeep < LINES_MAX && fgets(keep[nkeep], LINE_MAX_, old))
        if (keep[nkeep][0] != '#' && strchr(keep[nkeep], '=') && !key_matches(keep[nkeep], key, 1)) nkeep++;
    if (old) fclose(old);
    mkdirs_for(path);
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) { /* a cache only: without it, the next run measures again */
        free(keep);
        return;
    }
    fprintf(f, "# duet's tune file (%s): one line per machine, version and rank layout; delete to measure again\n",
            !kind[0] ? "shm transport" : strcmp(kind, "net") == 0 ? "net transport" : "GPU executor");
    for (int i = 0; i < nkeep; i++) fprintf(f, "%s%s", keep[i], strchr(keep[i], '\n') ? "" : "\n");
    fprintf(f, "%s alpha_us=%.4f beta_gbps=%.4f alpha_spread=%.3f beta_spread=%.3f", key, m->alpha_us, m->beta_gbps,
            m->alpha_spread, m->beta_spread);
    for (size_t i = 0; m->fit_err > 0 && i < DUET_ARRAY_LEN(terms); i++)
        fprintf(f, " %s=%.6g", terms[i].name, *(const double *)(const void *)((const char *)m + terms[i].at));
    if (m->fit_err > 0 && m->stream) fputs(" stream=1", f);
    fputc('\n', f);
    free(keep);
    if (fclose(f) == 0 && rename(tmp, path) == 0)
        DUET_LOG(INFO, TUNE, "wrote %s: %s: alpha %.3f us, beta %.2f GB/s", path, key, m->alpha_us, m->beta_gbps);
    else
        unlink(tmp);
}

/*
 * nccl_symbols_test.c — every function NVIDIA's nccl.h declares (its names read from the
 * header itself, comments stripped), and those PyTorch needs besides (nccl_device.h's
 * ncclDevCommCreate / Destroy), must be exported by Duet's libnccl.so.2 — never a missing
 * symbol. The unsupported ones, called through dlsym, must answer ncclInvalidUsage (5) with a
 * message in ncclGetLastError.
 *
 * usage: nccl_symbols_test LIBNCCL NCCL_H
 */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *extra[] = {"ncclDevCommCreate", "ncclDevCommDestroy", NULL};

/* The header's text without comments (string literals in nccl.h hold no comment markers). */
static char *read_stripped(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *in = malloc((size_t)n + 1), *out = malloc((size_t)n + 1);
    size_t got = fread(in, 1, (size_t)n, f);
    fclose(f);
    in[got] = '\0';
    size_t o = 0;
    for (size_t i = 0; i < got; i++) {
        if (in[i] == '/' && in[i + 1] == '*') {
            char *e = strstr(in + i + 2, "*/");
            i = e ? (size_t)(e - in) + 1 : got;
        } else if (in[i] == '/' && in[i + 1] == '/') {
            while (i < got && in[i] != '\n') i++;
            out[o++] = '\n';
        } else if (in[i] == '#') { /* a preprocessor line (with its continuations) declares nothing */
            while (i < got && !(in[i] == '\n' && in[i - 1] != '\\')) i++;
            out[o++] = '\n';
        } else {
            out[o++] = in[i];
        }
    }
    out[o] = '\0';
    free(in);
    return out;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s LIBNCCL NCCL_H\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "nccl_symbols_test: FAIL dlopen(%s): %s\n", argv[1], dlerror());
        return 1;
    }
    char *text = read_stripped(argv[2]);
    if (!text) {
        fprintf(stderr, "nccl_symbols_test: FAIL cannot read %s\n", argv[2]);
        return 1;
    }
    int names = 0, missing = 0;
    /* every identifier p?nccl... followed by '(' is a declared function */
    for (char *p = text; *p; p++) {
        if (!(p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_'))) continue;
        if (strncmp(p, "nccl", 4) && strncmp(p, "pnccl", 5)) continue;
        char name[128];
        size_t k = 0;
        while ((isalnum((unsigned char)p[k]) || p[k] == '_') && k < sizeof name - 1) name[k] = p[k], k++;
        name[k] = '\0';
        char *q = p + k;
        while (isspace((unsigned char)*q)) q++;
        p += k - 1;
        if (*q != '(') continue;
        names++;
        void *sym = dlsym(lib, name);
        Dl_info info;
        if (!sym) {
            fprintf(stderr, "nccl_symbols_test: FAIL %s is declared in %s but not exported\n", name, argv[2]);
            missing++;
        } else if (!dladdr(sym, &info) || !info.dli_fname || !strstr(info.dli_fname, "libnccl")) {
            fprintf(stderr, "nccl_symbols_test: FAIL %s resolves outside libnccl (%s)\n", name,
                    info.dli_fname ? info.dli_fname : "?");
            missing++;
        }
    }
    for (int i = 0; extra[i]; i++) {
        char p[128];
        snprintf(p, sizeof p, "p%s", extra[i]);
        if (!dlsym(lib, extra[i]) || !dlsym(lib, p)) {
            fprintf(stderr, "nccl_symbols_test: FAIL %s (needed by PyTorch) is not exported\n", extra[i]);
            missing++;
        }
    }
    if (names < 70) {
        fprintf(stderr, "nccl_symbols_test: FAIL only %d function names found in %s: the parser is broken\n", names,
                argv[2]);
        return 1;
    }
    /* the unsupported ones answer ncclInvalidUsage with a message */
    typedef int (*dev_create_t)(void *, const void *, void *);
    typedef int (*sim_t)(void *);
    typedef int (*group_t)(void);
    typedef const char *(*last_t)(void *);
    dev_create_t dc = (dev_create_t)dlsym(lib, "ncclDevCommCreate");
    sim_t sim = (sim_t)dlsym(lib, "ncclGroupSimulateEnd");
    group_t start = (group_t)dlsym(lib, "ncclGroupStart");
    last_t last = (last_t)dlsym(lib, "ncclGetLastError");
    int bad = 0;
    if (dc && last) {
        int r = dc(NULL, NULL, NULL);
        if (r != 5 || !last(NULL)[0]) fprintf(stderr, "nccl_symbols_test: FAIL ncclDevCommCreate -> %d\n", r), bad++;
    }
    if (sim && start && last) {
        start();
        int r = sim(NULL);
        if (r != 5 || !strstr(last(NULL), "ncclGroupSimulateEnd"))
            fprintf(stderr, "nccl_symbols_test: FAIL ncclGroupSimulateEnd -> %d (%s)\n", r, last(NULL)), bad++;
    }
    printf("nccl_symbols_test: %d declared functions checked, %d missing\n", names, missing);
    free(text);
    return missing || bad ? 1 : 0;
}

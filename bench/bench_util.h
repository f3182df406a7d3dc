/*
 * bench_util.h — what the standalone anchor programs in bench/ (nccl_perf.cu, nvshmem_perf.cu,
 * shmem_perf.c, mpi_coll_perf.c) have in common: the clock, size arguments and the sweep flags,
 * the error line, rank variables, the unique-id file, and the rows that bench/vs_*.sh compare.
 *
 * Header-only (static inline), for C11 and for nvcc's C++: each program is built alone from its
 * one file (oshcc, mpicc, nvcc; CMake does not build them) and finds this header beside it. It
 * uses POSIX (clock_gettime, getppid, usleep): the including file builds in the compilers' GNU
 * dialect or defines _GNU_SOURCE first, as the programs do.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* duet-perf's CSV, the one every anchor writes */
#define BENCH_CSV_HEADER "op,bytes,count,dtype,redop,algo,time_us,algbw_GBps,busbw_GBps,wrong"

static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- command line */
/* A size argument: a number, then K, M or G (powers of 1024) and B, each optional. Anything
 * else exits 2 with "prog: bad value 'text' for flag" (before the job starts: on every rank). */
static inline size_t bench_parse_size(const char *prog, const char *text, const char *flag)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end), mult = 1;
    if (end == text || errno || v < 0) goto bad;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0' || v * mult > 1.8e19) goto bad;
    return (size_t)(v * mult);
bad:
    fprintf(stderr, "%s: bad value '%s' for %s\n", prog, text, flag);
    exit(2);
}

/* The sweep flags every anchor takes (duet-perf's): -b minbytes, -e maxbytes, -f stepfactor,
 * -n iters, -w warmup_iters, each a size argument. Returns 1 when getopt's c was one of them
 * (stored), 0 for any other. */
static inline int bench_sweep_flag(const char *prog, int c, const char *arg, size_t *minb, size_t *maxb,
                                   size_t *factor, long *iters, long *warmup)
{
    switch (c) {
    case 'b': *minb = bench_parse_size(prog, arg, "-b"); return 1;
    case 'e': *maxb = bench_parse_size(prog, arg, "-e"); return 1;
    case 'f': *factor = bench_parse_size(prog, arg, "-f"); return 1;
    case 'n': *iters = (long)bench_parse_size(prog, arg, "-n"); return 1;
    case 'w': *warmup = (long)bench_parse_size(prog, arg, "-w"); return 1;
    default: return 0;
    }
}

/* -w's default: 10% of -n, at least 5. */
static inline long bench_default_warmup(long iters) { return iters / 10 < 5 ? 5 : iters / 10; }

/* ---------------------------------------------------------------- errors, environment */
/* "prog: who id: message" (who NULL: "prog: message") to stderr in one write: the ranks share
 * the terminal. The caller exits. */
static inline void bench_vreport(const char *prog, const char *who, int id, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
static inline void bench_vreport(const char *prog, const char *who, int id, const char *fmt, va_list ap)
{
    char msg[1024];
    int len = who ? snprintf(msg, sizeof msg, "%s: %s %d: ", prog, who, id) : snprintf(msg, sizeof msg, "%s: ", prog);
    vsnprintf(msg + len, sizeof msg - (size_t)len, fmt, ap);
    fprintf(stderr, "%s\n", msg);
}

/* The GPU anchors' die: "prog: rank R: message" (rank < 0, before the ranks are known:
 * "prog: message"), then exit(1). */
static inline void bench_die_rank(const char *prog, int rank, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
static inline void bench_die_rank(const char *prog, int rank, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bench_vreport(prog, rank >= 0 ? "rank" : NULL, rank, fmt, ap);
    va_end(ap);
    exit(1);
}

/* The integer in environment variable name, else in alt (NULL: none), else dflt. */
static inline int bench_env_int(const char *name, const char *alt, int dflt)
{
    const char *s = getenv(name);
    if ((!s || !*s) && alt) s = getenv(alt);
    return s && *s ? atoi(s) : dflt;
}

#ifdef __CUDACC__
/* The GPU anchors' check of a CUDA call: on an error, die_fn("<call> failed: <CUDA's reason>"),
 * die_fn being the program's printf-like die (which does not return). */
#define BENCH_CUDA_CHECK(die_fn, call)                                                  \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) die_fn("%s failed: %s", #call, cudaGetErrorString(e_)); \
    } while (0)
#endif

/* ---------------------------------------------------------------- unique-id file */
/* Where rank 0 leaves a library's unique id (NCCL's, NVSHMEM's) for the other ranks: $env_var
 * when set, else /tmp/<tag>-uid-<uid>-<job>. <job> is mpirun's PMIX_NAMESPACE or
 * OMPI_MCA_ess_base_jobid when use_job and one is set (without a '/'), else
 * <parent pid>-<process group>: duetrun's ranks share its pid and their process group. */
static inline void bench_uid_path(char *path, size_t len, const char *env_var, const char *tag, int use_job)
{
    const char *env = getenv(env_var), *job = use_job ? getenv("PMIX_NAMESPACE") : NULL;
    if (use_job && (!job || !*job)) job = getenv("OMPI_MCA_ess_base_jobid");
    if (env && *env) snprintf(path, len, "%s", env);
    else if (job && *job && !strchr(job, '/'))
        snprintf(path, len, "/tmp/%s-uid-%u-%s", tag, (unsigned)getuid(), job);
    else
        snprintf(path, len, "/tmp/%s-uid-%u-%ld-%ld", tag, (unsigned)getuid(), (long)getppid(), (long)getpgrp());
}

/* Rank 0's id (size bytes, made before the call) to every rank through the file at path:
 * rank 0 writes it whole to <path>.<pid>.tmp (mode 0600) and renames that into place; the
 * others poll path for it, 60 s at most. Returns 0, or -1 with the reason in err. Removing
 * the file is the caller's: rank 0, once every rank has joined. */
static inline int bench_share_uid(int rank, void *id, size_t size, const char *path, char *err, size_t errlen)
{
    if (rank == 0) {
        char tmp[600];
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0) {
            snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
            return -1;
        }
        if (write(fd, id, size) != (ssize_t)size || close(fd) != 0) {
            snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
            return -1;
        }
        if (rename(tmp, path) != 0) {
            snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
            return -1;
        }
        return 0;
    }
    for (uint64_t t0 = bench_now_ns();;) {
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            ssize_t got = read(fd, id, size);
            close(fd);
            if (got == (ssize_t)size) return 0;
        }
        if (bench_now_ns() - t0 > 60ull * 1000000000ull) {
            snprintf(err, errlen, "no unique id in %s after 60 s (is rank 0 up?)", path);
            return -1;
        }
        usleep(2000);
    }
}

/* ---------------------------------------------------------------- rows */
/* One CSV row (nothing when csv is NULL); wrong -1: not checked. */
static inline void bench_csv_row(FILE *csv, const char *op, size_t bytes, size_t count, const char *dtype,
                                 const char *redop, const char *algo, double time_us, double algbw, double busbw,
                                 long long wrong)
{
    if (csv)
        fprintf(csv, "%s,%zu,%zu,%s,%s,%s,%.4f,%.4f,%.4f,%lld\n", op, bytes, count, dtype, redop, algo, time_us,
                algbw, busbw, wrong);
}

/* The table of the GPU anchors (duet-perf --device's columns): the header line, then a row
 * per size, printed and flushed, and written to csv as well; wrong -1 prints N/A. */
static inline void bench_table_header(void)
{
    printf("# %12s %12s %12s %8s %6s %14s %12s %12s %12s %8s\n", "op", "bytes", "count", "dtype", "redop", "algo",
           "time_us", "algbw_GBps", "busbw_GBps", "wrong");
}

static inline void bench_table_row(FILE *csv, const char *op, size_t bytes, size_t count, const char *dtype,
                                   const char *redop, const char *algo, double time_us, double algbw, double busbw,
                                   long long wrong)
{
    char ws[32];
    if (wrong < 0) snprintf(ws, sizeof ws, "N/A");
    else snprintf(ws, sizeof ws, "%lld", wrong);
    printf("  %12s %12zu %12zu %8s %6s %14s %12.3f %12.3f %12.3f %8s\n", op, bytes, count, dtype, redop, algo, time_us,
           algbw, busbw, ws);
    fflush(stdout);
    bench_csv_row(csv, op, bytes, count, dtype, redop, algo, time_us, algbw, busbw, wrong);
}

#endif /* BENCH_UTIL_H */

/*
 * nccl_test_util.h — what the NCCL API tests (tests/compat/nccl_*.c) share: failure reports,
 * a seeded stream of small integer values, element access for every NCCL datatype, buffers
 * on the host or (NCCL_TEST_DEVICE) on the GPU, and the forked ranks with the unique id
 * handed from rank 0 to the others through pipes (NCCL's pattern: rank 0 makes the id, the
 * application broadcasts it).
 *
 * Written only against NCCL's API: the same source builds against NVIDIA's nccl.h and
 * Duet's compat/nccl/include/nccl.h.
 */
#ifndef NCCL_TEST_UTIL_H
#define NCCL_TEST_UTIL_H

#include <nccl.h>
#if defined(NCCL_TEST_REAL_HEADER) && defined(DUET_NCCL_H)
#error "built against Duet's nccl.h, but this variant must use NVIDIA's"
#endif
#if defined(NCCL_TEST_OUR_HEADER) && !defined(DUET_NCCL_H)
#error "built against NVIDIA's nccl.h, but this variant must use Duet's"
#endif

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef NCCL_TEST_DEVICE
#include <cuda_runtime.h>
#endif

/* ---- reports: one line per failure, written at once (ranks share stderr) ------------------ */
static int nt_rank = -1, nt_nranks = 0;
static uint64_t nt_seed;
static long nt_failures;
static const char *nt_context = "";

__attribute__((format(printf, 3, 4))) static void nt_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%s: rank %d/%d seed %" PRIu64 ": FAIL %s:%d [%s]: ", "nccl_test", nt_rank,
                     nt_nranks, nt_seed, file, line, nt_context);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && n < (int)sizeof msg) n += vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof msg - 2) n = (int)sizeof msg - 2;
    msg[n++] = '\n';
    if (nt_failures++ < 30) (void)!write(2, msg, (size_t)n);
}
#define FAIL(...) nt_fail(__FILE__, __LINE__, __VA_ARGS__)
#define EXPECT(cond, ...)             \
    do {                              \
        if (!(cond)) FAIL(__VA_ARGS__); \
    } while (0)
/* an NCCL call that must succeed; returns from the calling function (int) when it does not */
#define NCCL_OK(call)                                                                                     \
    do {                                                                                                  \
        ncclResult_t r_ = (call);                                                                         \
        if (r_ != ncclSuccess) {                                                                          \
            FAIL("%s -> %d (%s): %s", #call, (int)r_, ncclGetErrorString(r_), ncclGetLastError(NULL));   \
            return 1;                                                                                     \
        }                                                                                                 \
    } while (0)
/* an NCCL call that must fail with `want` and leave a message in ncclGetLastError */
#define NCCL_FAILS(call, want)                                                                            \
    do {                                                                                                  \
        ncclResult_t r_ = (call);                                                                         \
        const char *m_ = ncclGetLastError(NULL);                                                          \
        if (r_ != (want)) FAIL("%s -> %d (%s), want %d", #call, (int)r_, ncclGetErrorString(r_), (int)(want)); \
        else if (!m_ || !m_[0]) FAIL("%s failed as it should but ncclGetLastError is empty", #call);     \
    } while (0)

/* ---- values: a splitmix64 stream ---------------------------------------------------------- */
static inline uint64_t nt_mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* a small integer in [lo, hi] for (seed, call, rank, i): exact in every type, fp16 included */
static inline int nt_value(uint64_t call, int rank, size_t i, int lo, int hi)
{
    uint64_t z = nt_mix(nt_seed ^ nt_mix(call * 1000003u + (uint64_t)rank * 7919u) ^ nt_mix((uint64_t)i));
    return lo + (int)(z % (uint64_t)(hi - lo + 1));
}

/* ---- elements of every datatype ------------------------------------------------------------- */
static inline const char *nt_type_name(int dt)
{
    static const char *names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                  "half", "float", "double", "bfloat16"};
    return dt >= 0 && dt < 10 ? names[dt] : "?";
}
static inline size_t nt_size(int dt)
{
    static const size_t sz[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    return dt >= 0 && dt < 10 ? sz[dt] : 0;
}
static inline float nt_bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint32_t nt_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float nt_half_to_float(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023;
    if (e == 0 && m == 0) return nt_bits_float(s);
    if (e == 0) return (s ? -1.f : 1.f) * (float)m / 16777216.f; /* subnormal: m * 2^-24 */
    if (e == 31) return nt_bits_float(s | 0x7f800000u | (m << 13));
    return nt_bits_float(s | ((e + 112) << 23) | (m << 13));
}
static inline uint16_t nt_float_to_half(float f) /* round to nearest even; normal range */
{
    uint32_t u = nt_float_bits(f), s = (u >> 16) & 0x8000u;
    int e = (int)((u >> 23) & 255) - 127 + 15;
    uint32_t m = u & 0x7fffffu;
    if ((u & 0x7fffffffu) == 0) return (uint16_t)s;
    if (e <= 0 || e >= 31) return (uint16_t)(s | (e >= 31 ? 0x7c00u : 0)); /* not needed by the tests */
    uint32_t h = s | ((uint32_t)e << 10) | (m >> 13), rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
    return (uint16_t)h;
}
static inline float nt_bf16_to_float(uint16_t b) { return nt_bits_float((uint32_t)b << 16); }
static inline uint16_t nt_float_to_bf16(float f)
{
    uint32_t u = nt_float_bits(f);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
/* element i of a buffer of dt as a double, and a double stored into it (integers wrap) */
static inline double nt_load(int dt, const void *buf, size_t i)
{
    switch (dt) {
    case ncclInt8: return ((const int8_t *)buf)[i];
    case ncclUint8: return ((const uint8_t *)buf)[i];
    case ncclInt32: return ((const int32_t *)buf)[i];
    case ncclUint32: return ((const uint32_t *)buf)[i];
    case ncclInt64: return (double)((const int64_t *)buf)[i];
    case ncclUint64: return (double)((const uint64_t *)buf)[i];
    case ncclFloat16: return nt_half_to_float(((const uint16_t *)buf)[i]);
    case ncclFloat32: return ((const float *)buf)[i];
    case ncclFloat64: return ((const double *)buf)[i];
    case ncclBfloat16: return nt_bf16_to_float(((const uint16_t *)buf)[i]);
    }
    return 0;
}
static inline void nt_store(int dt, void *buf, size_t i, double v)
{
    int64_t w = (int64_t)v; /* integers: exact small values, wrapped by the casts below */
    switch (dt) {
    case ncclInt8: ((int8_t *)buf)[i] = (int8_t)(uint8_t)(uint64_t)w; break;
    case ncclUint8: ((uint8_t *)buf)[i] = (uint8_t)(uint64_t)w; break;
    case ncclInt32: ((int32_t *)buf)[i] = (int32_t)(uint32_t)(uint64_t)w; break;
    case ncclUint32: ((uint32_t *)buf)[i] = (uint32_t)(uint64_t)w; break;
    case ncclInt64: ((int64_t *)buf)[i] = w; break;
    case ncclUint64: ((uint64_t *)buf)[i] = (uint64_t)w; break;
    case ncclFloat16: ((uint16_t *)buf)[i] = nt_float_to_half((float)v); break;
    case ncclFloat32: ((float *)buf)[i] = (float)v; break;
    case ncclFloat64: ((double *)buf)[i] = v; break;
    case ncclBfloat16: ((uint16_t *)buf)[i] = nt_float_to_bf16((float)v); break;
    }
}
static inline int nt_is_float(int dt) { return dt >= ncclFloat16; }

/* ---- buffers: host memory, or device memory with NCCL_TEST_DEVICE ----------------------------- */
#ifdef NCCL_TEST_DEVICE
static cudaStream_t nt_stream;
static inline void *nt_alloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) return NULL;
    return p;
}
static inline void nt_free(void *p) { cudaFree(p); }
static inline void nt_put(void *dev, const void *host, size_t bytes) { cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice); }
static inline void nt_get(void *host, const void *dev, size_t bytes) { cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost); }
static inline int nt_sync(void) { return cudaStreamSynchronize(nt_stream) == cudaSuccess ? 0 : -1; }
#define NT_DEVICE 1
#else
#define nt_stream ((cudaStream_t)0)
static inline void *nt_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
static inline void nt_free(void *p) { free(p); }
static inline void nt_put(void *dev, const void *host, size_t bytes) { memcpy(dev, host, bytes); }
static inline void nt_get(void *host, const void *dev, size_t bytes) { memcpy(host, dev, bytes); }
static inline int nt_sync(void) { return 0; }
#define NT_DEVICE 0
#endif

/* ---- ranks: forked processes; rank 0 makes the id and writes it into every other's pipe ------ */
typedef int (*nt_rank_main_t)(int rank, int nranks, ncclUniqueId id, void *arg);

/* Reads exactly n bytes (a blocking read: no polling). */
static inline int nt_read_all(int fd, void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t k = read(fd, (char *)buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        got += (size_t)k;
    }
    return 0;
}

static pid_t *nt_children;
static int nt_nchildren;
static inline void nt_on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "nccl_test: timed out: killing the ranks\n";
    (void)!write(2, msg, sizeof msg - 1);
    for (int i = 0; i < nt_nchildren; i++)
        if (nt_children[i] > 0) kill(nt_children[i], SIGKILL);
    _exit(124);
}

/* Runs main in nranks forked ranks (timeout_s bounds the whole run). Returns the exit code:
 * 0 when every rank exited 0 — except `victim` (-1: none), which must die of SIGKILL. */
static inline int nt_run_ranks(int nranks, int timeout_s, int victim, nt_rank_main_t fn, void *arg)
{
    int (*pipes)[2] = calloc((size_t)nranks, sizeof *pipes);
    nt_children = calloc((size_t)nranks, sizeof *nt_children);
    nt_nchildren = nranks;
    for (int r = 1; r < nranks; r++)
        if (pipe(pipes[r]) != 0) return perror("pipe"), 1;
    fflush(NULL);
    for (int r = 0; r < nranks; r++) {
        pid_t pid = fork();
        if (pid < 0) return perror("fork"), 1;
        if (pid == 0) {
            nt_rank = r, nt_nranks = nranks;
            ncclUniqueId id;
            memset(&id, 0, sizeof id);
            if (r == 0) {
                ncclResult_t res = ncclGetUniqueId(&id);
                if (res != ncclSuccess) {
                    FAIL("ncclGetUniqueId -> %d: %s", (int)res, ncclGetLastError(NULL));
                    _exit(1);
                }
                for (int q = 1; q < nranks; q++)
                    if (write(pipes[q][1], &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
            } else if (nt_read_all(pipes[r][0], &id, sizeof id) != 0) {
                FAIL("no id from rank 0 (it died?)");
                _exit(1);
            }
            for (int q = 1; q < nranks; q++) close(pipes[q][0]), close(pipes[q][1]);
            int rc = fn(r, nranks, id, arg);
            if (nt_failures) fprintf(stderr, "nccl_test: rank %d: %ld failure(s), seed %" PRIu64 "\n", r,
                                     nt_failures, nt_seed);
            fflush(NULL);
            _exit(rc || nt_failures ? 1 : 0);
        }
        nt_children[r] = pid;
    }
    for (int q = 1; q < nranks; q++) close(pipes[q][0]), close(pipes[q][1]);
    signal(SIGALRM, nt_on_alarm);
    alarm((unsigned)timeout_s);
    int rc = 0;
    for (int done = 0; done < nranks;) {
        int status;
        pid_t pid = wait(&status);
        if (pid < 0 && errno == EINTR) continue;
        if (pid < 0) break;
        int r = 0;
        while (r < nranks && nt_children[r] != pid) r++;
        if (r == nranks) continue;
        nt_children[r] = 0;
        done++;
        int ok = r == victim ? WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL
                             : WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok) {
            fprintf(stderr, "nccl_test: rank %d %s %d\n", r, WIFSIGNALED(status) ? "killed by signal" : "exited",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            rc = 1;
        }
    }
    alarm(0);
    free(pipes);
    return rc;
}

/* The seed: argv's "seed=N", else $NCCL_TEST_SEED, else the time; printed. */
static inline void nt_pick_seed(int argc, char **argv)
{
    const char *text = getenv("NCCL_TEST_SEED");
    for (int i = 1; i < argc; i++)
        if (!strncmp(argv[i], "seed=", 5)) text = argv[i] + 5;
    nt_seed = text ? strtoull(text, NULL, 0) : (uint64_t)time(NULL);
    printf("nccl_test: seed %" PRIu64 "\n", nt_seed);
}

#endif

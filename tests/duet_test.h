/*
 * duet_test.h — what every Duet test program shares (tests/mp, tests/unit, tests/launcher).
 *
 * Include it as "duet_test.h" (tests/ is on every test target's include path). Everything
 * here is a macro or a static inline function: there is no library to link but Duet's own.
 *
 * ---- Reports
 * Every failure is reported as ONE line written with one write(2) (the ranks of a job share
 * stderr, so lines of different ranks never interleave):
 *
 *     test_rma: rank 1/4 seed 1234: FAIL /path/test_rma.c:210 [context]: what: message [last error: ...]
 *
 *   - "test_rma" is the base name of the source file that made the report;
 *   - "rank R/N" once dt_set_rank() was called (dt_world() calls it), "seed S" once a seed
 *     was chosen (dt_pick_seed(), dt_share_seed(), dt_set_seed());
 *   - [context] while dt_set_context() names one (a case, a group of checks);
 *   - what: the failed condition or call as written, with the status it returned;
 *   - message: the printf-style text the check was given (left out when empty);
 *   - [last error: ...]: duet_last_error() when it is not empty (it may be left over from
 *     an earlier call: read it together with the `what`).
 *
 * Two families of checks; a test may use both:
 *   CHECK*   report and exit(1) at once (for checks after which nothing makes sense);
 *   EXPECT*, FAIL   report, count and go on. Only the first DT_MAX_REPORTS counted
 *            failures of a process are printed; dt_finish() at the end prints a summary line
 *            when any were counted and returns the exit code (0 or 1).
 *
 *   CHECK(cond, fmt, ...)        EXPECT(cond, fmt, ...)       cond must hold
 *   FATAL(fmt, ...)              FAIL(fmt, ...)               unconditional failure
 *   CHECK_OK(call)               EXPECT_OK(call)              call must return DUET_OK
 *                                EXPECT_OK_MSG(call, fmt, ...) the same, with a message
 *   CHECK_STATUS(call, want)                                  call must return `want`
 *   CHECK_FAILS(call, want)                                   ... and set duet_last_error()
 *                                EXPECT_INVALID(call, what)   DUET_ERR_INVALID_ARG and a
 *                                                             duet_last_error() message
 *                                EXPECT_BARRIER_ALL(where)    duet_barrier_all() succeeds
 *
 * ---- Seeds and reproducible data
 *   dt_seed_text(argc, argv)     argv[1], else $DUET_TEST_SEED, else NULL
 *   dt_pick_seed(text, fallback) the number in `text` (strtoull, any base), else fallback
 *                                (the time, usually); recorded for reports
 *   dt_share_seed(c, sym, &seed) collective: rank 0's seed, through the symmetric word
 *                                `sym`, becomes every rank's seed; recorded for reports
 *   rng_next(&s), rng_below(&s, n)  splitmix64 stream of state s; a number in [0, n)
 *   mix(z)                       the splitmix64 finalizer of z + golden ratio
 *   key3(a, b, c)                a key derived from the recorded seed and a, b, c
 *   stream_byte(K, j), stream_fill(buf, n, K), stream_diff(buf, n, K)
 *                                byte j of the random stream K; fill n bytes with it; the
 *                                first byte of buf that differs from it (SIZE_MAX: none)
 *
 * ---- Multi-process helpers
 *   dt_world(&me, &npes)         after duet_init(): the world communicator; stores and
 *                                records this rank and the size
 *   dt_bcast(c, sym, buf, len, root)     root's buf -> every rank's buf, through sym
 *   dt_allgather(c, slots, mine, len)    every rank's len bytes -> slots[rank] everywhere
 *   dt_share_seed(c, sym, &seed)         (above)
 *   dt_shrink_whole(c)           collective: duet_comm_shrink of c, which must keep every rank
 *                                (nobody died), then c destroyed unless it is the world: the
 *                                next communicator after a revoke
 *   dt_names_rank(msg, r, word)  1 when an error message says "rank r" and `word` (a mismatch's
 *                                report names the odd rank and the differing field)
 *       The first three are collective; each returns the first failing status but still runs
 *       every step after a failure (no rank is left alone in a barrier): wrap the call in
 *       CHECK_OK or EXPECT_OK.
 *   dt_prime_error(), dt_error_primed()  a sentinel duet_last_error(), to tell whether a
 *                                later call set a message of its own
 *
 * ---- State
 *   dt_set_rank(r, n), dt_set_seed(s), dt_seed(), dt_set_context(text), dt_failures(),
 *   dt_finish()                  (see Reports)
 *
 * ---- Odds and ends
 *   now_s()                      CLOCK_MONOTONIC in seconds
 *   dt_temp_dir(template)        mkdtemp, removed with its contents when this process
 *                                (not a forked child) exits
 *   dt_job_shm_prefix(secret, out, len)  "duet-<job part>-", how the names in /dev/shm of
 *                                the job with that secret begin (a keyed hash of it)
 *   dt_count_shm(secret, first, len)  names in /dev/shm of the job with that secret
 */
#ifndef DUET_TEST_H
#define DUET_TEST_H

#include <duet/duet.h>
#include "util/duet_util.h" /* duet_name_job_part: the job's /dev/shm names */

#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define DT_MAX_REPORTS 20

/* ------------------------------------------------------------------------------------
 * State of this process's test: who it is, its seed, what it is checking, its failures.
 * ------------------------------------------------------------------------------------ */
typedef struct {
    char name[64];        /* base name of the reporting source file, from the first report */
    int rank, nranks;     /* -1 / 0 until dt_set_rank()                                      */
    int have_seed;
    uint64_t seed;
    const char *context;  /* dt_set_context(); NULL: none                                    */
    long failures;        /* counted (EXPECT*, FAIL) failures                                */
    char temp_dir[256];   /* dt_temp_dir(), removed at exit by temp_owner                    */
    pid_t temp_owner;
} dt_state_t;

static inline dt_state_t *dt_state(void)
{
    static dt_state_t state = {"", -1, 0, 0, 0, NULL, 0, "", 0};
    return &state;
}

static inline void dt_set_rank(int rank, int nranks) { dt_state()->rank = rank, dt_state()->nranks = nranks; }
static inline void dt_set_seed(uint64_t seed) { dt_state()->seed = seed, dt_state()->have_seed = 1; }
static inline uint64_t dt_seed(void) { return dt_state()->seed; }
/* Names what is being checked in every report until the next call (NULL: nothing). The
 * string must outlive its use (a literal, usually). */
static inline void dt_set_context(const char *context) { dt_state()->context = context; }
static inline long dt_failures(void) { return dt_state()->failures; }

/* ------------------------------------------------------------------------------------
 * Reports
 * ------------------------------------------------------------------------------------ */
/* Appends to buf[cap] at n; returns the new length (at most cap - 1). */
__attribute__((format(printf, 4, 5))) static inline size_t dt_cat_(char *buf, size_t cap, size_t n,
                                                                     const char *fmt, ...)
{
    if (n >= cap - 1) return n;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
    if (k < 0) return n;
    n += (size_t)k;
    return n < cap - 1 ? n : cap - 1;
}

/* "name: rank R/N seed S: " (the parts that are known) */
static inline size_t dt_prefix_(char *buf, size_t cap)
{
    const dt_state_t *s = dt_state();
    size_t n = dt_cat_(buf, cap, 0, "%s: ", s->name[0] ? s->name : "test");
    if (s->rank >= 0) n = dt_cat_(buf, cap, n, "rank %d", s->rank);
    if (s->rank >= 0 && s->nranks > 0) n = dt_cat_(buf, cap, n, "/%d", s->nranks);
    if (s->have_seed) n = dt_cat_(buf, cap, n, "%sseed %" PRIu64, s->rank >= 0 ? " " : "", s->seed);
    if (s->rank >= 0 || s->have_seed) n = dt_cat_(buf, cap, n, ": ");
    return n;
}

/* Writes buf[0..n) plus a newline with one write(2). */
static inline void dt_write_line_(char *buf, size_t cap, size_t n)
{
    if (n > cap - 2) n = cap - 2;
    buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, n);
    (void)w;
}

static inline void dt_vreport_(const char *file, int line, const char *what, const char *fmt, va_list ap)
{
    dt_state_t *s = dt_state();
    if (!s->name[0]) { /* the base name of the test's source file, without its extension */
        const char *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        snprintf(s->name, sizeof s->name, "%.*s", (int)strcspn(base, "."), base);
    }
    char msg[1024], out[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = dt_prefix_(out, sizeof out);
    n = dt_cat_(out, sizeof out, n, "FAIL %s:%d", file, line);
    if (s->context && s->context[0]) n = dt_cat_(out, sizeof out, n, " [%s]", s->context);
    if (what && what[0]) n = dt_cat_(out, sizeof out, n, ": %s", what);
    if (msg[0]) n = dt_cat_(out, sizeof out, n, ": %s", msg);
    const char *err = duet_last_error();
    if (err && err[0]) n = dt_cat_(out, sizeof out, n, " [last error: %s]", err);
    dt_write_line_(out, sizeof out, n);
}

/* A counted failure: reported while fewer than DT_MAX_REPORTS came before. */
__attribute__((format(printf, 4, 5))) static inline void dt_fail_(const char *file, int line, const char *what,
                                                                    const char *fmt, ...)
{
    if (++dt_state()->failures > DT_MAX_REPORTS) return;
    va_list ap;
    va_start(ap, fmt);
    dt_vreport_(file, line, what, fmt, ap);
    va_end(ap);
}

/* A fatal failure: reported, then exit(1). */
__attribute__((format(printf, 4, 5))) static inline _Noreturn void dt_die_(const char *file, int line,
                                                                             const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dt_vreport_(file, line, what, fmt, ap);
    va_end(ap);
    exit(1);
}

/* "call -> GOT" or, when want is not DUET_OK, "call -> GOT, want WANT", in buf. */
static inline const char *dt_returned_(char *buf, size_t cap, const char *call, duet_status_t got,
                                       duet_status_t want)
{
    size_t n = dt_cat_(buf, cap, 0, "%s -> %s", call, duet_status_str(got));
    if (want != DUET_OK) dt_cat_(buf, cap, n, ", want %s", duet_status_str(want));
    return buf;
}

/* At the end of main(): 0 when no failure was counted; else a summary line and 1. */
static inline int dt_finish(void)
{
    const dt_state_t *s = dt_state();
    if (!s->failures) return 0;
    char out[512];
    size_t n = dt_prefix_(out, sizeof out);
    n = dt_cat_(out, sizeof out, n, "%ld failure(s)", s->failures);
    if (s->failures > DT_MAX_REPORTS) n = dt_cat_(out, sizeof out, n, ", the first %d reported", DT_MAX_REPORTS);
    dt_write_line_(out, sizeof out, n);
    return 1;
}

#define DT_WHAT_MAX 512

/* ---- exit at once */
#define FATAL(...) dt_die_(__FILE__, __LINE__, NULL, __VA_ARGS__)
#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) dt_die_(__FILE__, __LINE__, #cond, __VA_ARGS__);                         \
    } while (0)
#define CHECK_STATUS(call, want)                                                              \
    do {                                                                                      \
        duet_status_t st_ = (call), want_ = (want);                                           \
        if (st_ != want_) {                                                                   \
            char w_[DT_WHAT_MAX];                                                             \
            dt_die_(__FILE__, __LINE__, dt_returned_(w_, sizeof w_, #call, st_, want_), "%s", ""); \
        }                                                                                     \
    } while (0)
#define CHECK_OK(call) CHECK_STATUS(call, DUET_OK)
#define CHECK_FAILS(call, want)                                                               \
    do {                                                                                      \
        CHECK_STATUS(call, want);                                                             \
        if (!duet_last_error()[0])                                                            \
            dt_die_(__FILE__, __LINE__, #call, "failed without a duet_last_error() message"); \
    } while (0)

/* ---- count and go on */
#define FAIL(...) dt_fail_(__FILE__, __LINE__, NULL, __VA_ARGS__)
#define EXPECT(cond, ...)                                                                     \
    do {                                                                                      \
        if (!(cond)) dt_fail_(__FILE__, __LINE__, #cond, __VA_ARGS__);                        \
    } while (0)
#define EXPECT_OK_MSG(call, ...)                                                              \
    do {                                                                                      \
        duet_status_t st_ = (call);                                                           \
        if (st_ != DUET_OK) {                                                                 \
            char w_[DT_WHAT_MAX];                                                             \
            dt_fail_(__FILE__, __LINE__, dt_returned_(w_, sizeof w_, #call, st_, DUET_OK), __VA_ARGS__); \
        }                                                                                     \
    } while (0)
#define EXPECT_OK(call) EXPECT_OK_MSG(call, "%s", "")
#define EXPECT_BARRIER_ALL(where) EXPECT_OK_MSG(duet_barrier_all(), "barrier (%s)", (where))
#define EXPECT_INVALID(call, what)                                                            \
    do {                                                                                      \
        duet_status_t st_ = (call);                                                           \
        char w_[DT_WHAT_MAX];                                                                 \
        if (st_ != DUET_ERR_INVALID_ARG)                                                      \
            dt_fail_(__FILE__, __LINE__, dt_returned_(w_, sizeof w_, #call, st_, DUET_ERR_INVALID_ARG), \
                     "%s", (what));                                                           \
        else if (!duet_last_error()[0])                                                       \
            dt_fail_(__FILE__, __LINE__, #call,                                               \
                     "%s: DUET_ERR_INVALID_ARG without a duet_last_error() message", (what)); \
    } while (0)

/* ------------------------------------------------------------------------------------
 * Seeds and reproducible data
 * ------------------------------------------------------------------------------------ */
static inline const char *dt_seed_text(int argc, char **argv)
{
    return argc > 1 ? argv[1] : getenv("DUET_TEST_SEED");
}

static inline uint64_t dt_pick_seed(const char *text, uint64_t fallback)
{
    uint64_t seed = text ? strtoull(text, NULL, 0) : fallback;
    dt_set_seed(seed);
    return seed;
}

/* The splitmix64 finalizer of z + the golden ratio. */
static inline uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* splitmix64: small, good enough, and the same on every platform. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = mix(*s);
    *s += 0x9e3779b97f4a7c15ull;
    return z;
}
static inline uint64_t rng_below(uint64_t *s, uint64_t n) { return rng_next(s) % n; }

/* A key of (seed, a, b, c): the same on every rank once the seed is shared. */
static inline uint64_t key3(uint64_t a, uint64_t b, uint64_t c)
{
    return mix(dt_seed() ^ mix(a ^ mix(b ^ mix(c))));
}

/* Byte j of the random stream K. */
static inline uint8_t stream_byte(uint64_t K, size_t j)
{
    return (uint8_t)(mix(K ^ ((j >> 3) * 0xd6e8feb86659fd93ull)) >> ((j & 7) * 8));
}
static inline void stream_fill(uint8_t *buf, size_t n, uint64_t K)
{
    for (size_t j = 0; j < n; j++) buf[j] = stream_byte(K, j);
}
/* The first j < n where buf[j] is not byte j of stream K; SIZE_MAX if none. */
static inline size_t stream_diff(const uint8_t *buf, size_t n, uint64_t K)
{
    for (size_t j = 0; j < n; j++)
        if (buf[j] != stream_byte(K, j)) return j;
    return SIZE_MAX;
}

/* ------------------------------------------------------------------------------------
 * Multi-process helpers
 * ------------------------------------------------------------------------------------ */
/* The world communicator (after duet_init()); *me and *npes get this rank and the size,
 * which every later report shows. */
static inline duet_comm_t dt_world(int *rank_out, int *size_out)
{
    *rank_out = duet_my_pe();
    *size_out = duet_n_pes();
    dt_set_rank(*rank_out, *size_out);
    return duet_comm_world();
}

static inline int dt_names_rank(const char *msg, int rank, const char *word)
{
    char r[32];
    snprintf(r, sizeof r, "rank %d", rank);
    return strstr(msg, r) && strstr(msg, word);
}

static inline duet_comm_t dt_shrink_whole(duet_comm_t c)
{
    duet_comm_t next = NULL;
    int want = duet_comm_size(c);
    CHECK(want > 0, "duet_comm_size of the communicator to shrink: %s", duet_last_error());
    CHECK_OK(duet_comm_shrink(c, &next));
    int n = duet_comm_size(next);
    CHECK(n == want, "the shrunk communicator has %d ranks, want %d (nobody died)", n, want);
    if (c != duet_comm_world()) EXPECT_OK(duet_comm_destroy(c));
    return next;
}

/* Collective over c: `root` puts its `len` bytes at `buf` into the symmetric `sym` on every
 * rank; after a barrier every rank copies `sym` into its `buf`. */
static inline duet_status_t dt_bcast(duet_comm_t c, void *sym, void *buf, size_t len, int root)
{
    duet_status_t first = DUET_OK, st;
    if (duet_comm_rank(c) == root)
        for (int pe = 0; pe < duet_comm_size(c); pe++)
            if ((st = duet_put(c, sym, buf, len, pe)) && !first) first = st;
    if ((st = duet_barrier(c)) && !first) first = st;
    memcpy(buf, sym, len);
    return first;
}

/* Collective over c: rank 0's *seed becomes every rank's *seed (through the symmetric
 * word `sym`), and the seed of every later report. */
static inline duet_status_t dt_share_seed(duet_comm_t c, uint64_t *sym, uint64_t *seed)
{
    duet_status_t st = dt_bcast(c, sym, seed, sizeof *seed, 0);
    dt_set_seed(*seed);
    return st;
}

/* Collective over c: every rank puts its `len` bytes at `mine` into slot [its rank] of the
 * symmetric array `slots` (slot r at slots + r * len) on every rank; quiet; barrier. */
static inline duet_status_t dt_allgather(duet_comm_t c, void *slots, const void *mine, size_t len)
{
    duet_status_t first = DUET_OK, st;
    char *slot = (char *)slots + (size_t)duet_comm_rank(c) * len;
    for (int pe = 0; pe < duet_comm_size(c); pe++)
        if ((st = duet_put(c, slot, mine, len, pe)) && !first) first = st;
    if ((st = duet_quiet(c)) && !first) first = st;
    if ((st = duet_barrier(c)) && !first) first = st;
    return first;
}

/* A message no Duet call under test makes: prime it, make a call, and dt_error_primed()
 * tells whether that call left a message of its own. */
#define DT_PRIMED_ERROR "duet_comm_size: the communicator is NULL"
static inline void dt_prime_error(void) { (void)duet_comm_size(NULL); }
static inline int dt_error_primed(void) { return strcmp(duet_last_error(), DT_PRIMED_ERROR) == 0; }

/* ------------------------------------------------------------------------------------
 * Odds and ends
 * ------------------------------------------------------------------------------------ */
/* Writes `text` to DIR/WHAT.RANK atomically (a dot-file renamed into place), so a reader
 * polling for the name never sees it half written. */
static inline void dt_write_rank_file(const char *dir, const char *what, int rank, const char *text)
{
    char tmp[600], path[600];
    snprintf(tmp, sizeof tmp, "%s/.%s.%d", dir, what, rank);
    snprintf(path, sizeof path, "%s/%s.%d", dir, what, rank);
    FILE *f = fopen(tmp, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0 && rename(tmp, path) == 0, "cannot write %s", path);
}

/* This program's own path (a test that is its own driver runs itself under duetrun). */
static inline void dt_self_exe(char *out, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    CHECK(n > 0, "readlink /proc/self/exe");
    out[n] = '\0';
}

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void dt_remove_temp_dir_(void)
{
    const dt_state_t *s = dt_state();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->temp_dir);
    if (s->temp_dir[0] && getpid() == s->temp_owner && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", s->temp_dir);
}

/* mkdtemp(template) (it ends in XXXXXX); the directory and all it holds are removed when
 * this process exits, also after a CHECK failed, but not when a forked child exits. One
 * per process. NULL (errno set) on failure. */
static inline const char *dt_temp_dir(const char *template_)
{
    dt_state_t *s = dt_state();
    snprintf(s->temp_dir, sizeof s->temp_dir, "%s", template_);
    if (!mkdtemp(s->temp_dir)) {
        s->temp_dir[0] = '\0';
        return NULL;
    }
    s->temp_owner = getpid();
    atexit(dt_remove_temp_dir_);
    return s->temp_dir;
}

/* Names in /dev/shm that start with duet-<secret> (a job's segments); the first one found
 * goes to first[len] when first is not NULL. */
/* "duet-<job part>-": how every /dev/shm name of the job with that secret (32 hex digits)
 * begins (the library's duet_name_job_part); "" for a secret that is not 32 hex digits. */
static inline void dt_job_shm_prefix(const char *secret, char *out, size_t len)
{
    uint8_t raw[16];
    char part[DUET_NAME_JOB_HEX + 1];
    out[0] = '\0';
    if (strlen(secret) != 32) return;
    for (int i = 0; i < 16; i++) {
        unsigned v;
        if (sscanf(secret + 2 * i, "%2x", &v) != 1) return;
        raw[i] = (uint8_t)v;
    }
    duet_name_job_part(raw, sizeof raw, part);
    snprintf(out, len, "duet-%s-", part);
}

static inline int dt_count_shm(const char *secret, char *first, size_t len)
{
    char prefix[80];
    dt_job_shm_prefix(secret, prefix, sizeof prefix);
    DIR *d = prefix[0] ? opendir("/dev/shm") : NULL;
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            if (n++ == 0 && first) snprintf(first, len, "%s", e->d_name);
        }
    closedir(d);
    return n;
}

#endif /* DUET_TEST_H */

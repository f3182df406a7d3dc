/*
 * shmem_internal.h — what the files of libduet_shmem share: the library state, teams and
 * contexts as Duet communicators, the loud-failure rule, the symmetric static data ranges,
 * and the one poll loop for waits that Duet's core cannot do for us (on static data).
 *
 * Every remote address goes through one decision: an address inside the executable's shared
 * data segment (shmem_static.c) is translated here and accessed with plain loads, stores and
 * CPU atomics on the peer's mapping; anything else goes to Duet's core on the context's
 * communicator, which checks that it lies in the symmetric heap.
 */
#ifndef DUET_SHMEM_INTERNAL_H
#define DUET_SHMEM_INTERNAL_H

#include <duet/duet.h>
#include <duet/duet_ext.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "shmem.h"

#define SHM_HIDDEN __attribute__((visibility("hidden")))

struct duet_shmem_team {
    duet_comm_t comm;        /* the world communicator, or a split of it */
    int my_pe, n_pes;
    int *world_pe;           /* team pe -> world pe (NULL for the world itself) */
    shmem_team_config_t config;
    long config_mask;
    int predefined;          /* SHMEM_TEAM_WORLD / SHARED: never destroyed by the user */
    struct duet_shmem_team *next; /* the list of live teams (shmem_team.c) */
};

struct duet_shmem_ctx {
    struct duet_shmem_team *team;
    long options;
};

typedef struct {
    int initialized;         /* shmem_init calls not yet finalized */
    duet_comm_t world;
    int me, npes;
    int thread_level;        /* what shmem_init_thread provided (shmem_init: MULTIPLE) */
    int thread_asked;        /* 1 once shmem_init_thread set thread_level */
    _Atomic uint64_t *exit_word; /* symmetric: shmem_global_exit's status + 1, or 0 */
    long *scratch;           /* symmetric, npes longs: counts of the active-set collect */
} shm_state_t;

SHM_HIDDEN extern shm_state_t shm_g;
SHM_HIDDEN extern struct duet_shmem_team shm_team_world, shm_team_shared;
SHM_HIDDEN extern struct duet_shmem_ctx shm_ctx_default;

/* ---- failures: print one line naming the call and Duet's message, end the process (1). A
 * peer's shmem_global_exit turns into that status instead. */
SHM_HIDDEN __attribute__((noreturn, format(printf, 2, 3))) void shm_die(const char *fn, const char *fmt, ...);
SHM_HIDDEN __attribute__((noreturn)) void shm_fail(const char *fn, duet_status_t st);
static inline void shm_check(duet_status_t st, const char *fn)
{
    if (__builtin_expect(st != DUET_OK, 0)) shm_fail(fn, st);
}
SHM_HIDDEN void shm_require_init(const char *fn);
SHM_HIDDEN void shm_exit_if_asked(void); /* a peer called shmem_global_exit: _exit with its status */

/* the team of a context (SHMEM_CTX_DEFAULT: world); fails on SHMEM_CTX_INVALID */
static inline struct duet_shmem_team *shm_ctx_team(shmem_ctx_t ctx, const char *fn)
{
    if (__builtin_expect(!ctx || !ctx->team || !ctx->team->comm, 0)) shm_require_init(fn);
    if (__builtin_expect(!ctx, 0)) shm_die(fn, "the context is SHMEM_CTX_INVALID");
    return ctx->team;
}
SHM_HIDDEN int shm_team_valid(shmem_team_t team);

/* team pe -> world pe; fails when pe is out of the team's range */
static inline int shm_world_pe(const struct duet_shmem_team *t, int pe, const char *fn)
{
    if (__builtin_expect((unsigned)pe >= (unsigned)t->n_pes, 0))
        shm_die(fn, "PE %d is out of range [0, %d)", pe, t->n_pes);
    return t->world_pe ? t->world_pe[pe] : pe;
}

/* ---- symmetric static data (shmem_static.c) */
SHM_HIDDEN void shm_static_prepare(void);  /* before duet_init: share my data segment */
/* after: map the segment of every PE whose heap block `probe` (symmetric) this PE maps, the
 * PEs of this host; the others' stay unmapped (shm_static_base NULL) */
SHM_HIDDEN void shm_static_exchange(const void *probe);
SHM_HIDDEN void shm_static_release(void);
/* 1 if [addr, addr+bytes) starts inside the shared data segment (it must then lie wholly in
 * it, else the call fails); *off gets its range and offset. */
SHM_HIDDEN int shm_static_find(const void *addr, size_t bytes, const char *fn, int *range, size_t *off);
SHM_HIDDEN char *shm_static_base(int range, int world_pe);
/* the same without failing: 1 static and usable, 0 not static, -1 static but unusable */
SHM_HIDDEN int shm_static_lookup(const void *addr, size_t bytes, int *range, size_t *off);
/* the static data's ranges all lie in [shm_static_lo_, + shm_static_span_) (0: none) */
SHM_HIDDEN extern uintptr_t shm_static_lo_, shm_static_span_;
/* Where [addr, addr+bytes) of team pe `pe` is mapped here, or NULL if addr is not static
 * data (then it is Duet's core's to check); an address outside every range is told at once. */
static inline void *shm_static_peer(const struct duet_shmem_team *t, const void *addr, size_t bytes,
                                    int pe, const char *fn)
{
    int range;
    size_t off;
    if ((uintptr_t)addr - shm_static_lo_ >= shm_static_span_) return NULL;
    if (!shm_static_find(addr, bytes, fn, &range, &off)) return NULL;
    int wpe = shm_world_pe(t, pe, fn);
    char *base = shm_static_base(range, wpe);
    if (!base)
        shm_die(fn, "%p is a global/static variable, and PE %d is on another host (or reached over the network: "
                "DUET_NET=force): static data is shared only between the PEs of one host; use memory from "
                "shmem_malloc", addr, wpe);
    return base + off;
}

/* elems * size, failing on overflow */
static inline size_t shm_bytes(size_t nelems, size_t size, const char *fn)
{
    size_t b;
    if (__builtin_mul_overflow(nelems, size, &b)) shm_die(fn, "%zu elements of %zu bytes overflow", nelems, size);
    return b;
}

/* ---- RMA engines (shmem_rma.c), used by the typed forms and the collectives */
SHM_HIDDEN void shm_put(shmem_ctx_t ctx, void *dest, const void *src, size_t bytes, int pe, int nbi, const char *fn);
SHM_HIDDEN void shm_get(shmem_ctx_t ctx, void *dest, const void *src, size_t bytes, int pe, int nbi, const char *fn);
SHM_HIDDEN void shm_strided(shmem_ctx_t ctx, int is_put, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                            size_t nelems, size_t es, int pe, const char *fn);

/* ---- the poll loop of waits on static data and of locks (shmem_sync.c): spin, then yield,
 * then short sleeps; every 64 turns it checks the world's health (a dead peer, a revoked
 * world, a peer's shmem_global_exit end it) and the deadline (DUET_WAIT_TIMEOUT seconds, as
 * Duet's own waits; 0: none). Either ends the process with a message naming the call, the
 * address and what it waited for. The same description names heap waits that Duet failed. */
enum { SHM_WAIT_IVARS, SHM_WAIT_SIGNAL, SHM_WAIT_LOCK };
enum { SHM_MODE_ALL, SHM_MODE_ANY, SHM_MODE_SOME };
typedef struct {
    unsigned long turns;
    const char *fn;          /* the call */
    const void *addr;        /* what it waits on */
    int kind;                /* SHM_WAIT_* */
    const char *tname;       /* C type of the ivars ("long") */
    size_t n;                /* ivars */
    int cmp, mode, vector, is_signed;
    unsigned long long value; /* compared against (ivars, signal), or the ticket (lock) */
    uint64_t start_ns;        /* when the first turn began */
    duet_ext_waiter_t *w;     /* Duet's wait loop (duet_ext.h; the caller's, uninitialized:
                               * the first turn starts it) */
} shm_poll_t;
SHM_HIDDEN void shm_poll_turn(shm_poll_t *p);
/* "the long at 0x... (static data) to become == 5" */
SHM_HIDDEN void shm_poll_describe(const shm_poll_t *p, char *buf, size_t len);
/* a wait Duet's core returned `st` from: one line naming the call and what it waited for */
SHM_HIDDEN __attribute__((noreturn)) void shm_wait_fail(const shm_poll_t *p, duet_status_t st);
/* DUET_WAIT_TIMEOUT in seconds (default 300; 0: no bound), read once */
SHM_HIDDEN double shm_wait_timeout(void);

/* ---- scratch (shmem_scratch.c): this thread's working memory slot `slot` (< SHM_SCRATCH_SLOTS)
 * of at least `bytes`, kept and grown across calls (its contents are not kept when it grows);
 * dies out of memory. shm_scratch_release frees the calling thread's (shmem_finalize). */
#define SHM_SCRATCH_SLOTS 2
SHM_HIDDEN void *shm_scratch(int slot, size_t bytes, const char *fn);
SHM_HIDDEN void shm_scratch_release(void);

/* ---- reductions (shmem_reduce.c): the combine step of each (type, op), for the fallback of
 * the team reductions and for the active-set *_to_all */
typedef void (*shm_combine_fn)(void *acc, const void *in, size_t n);
#define SHM_OP_and(a, b) ((a) & (b))
#define SHM_OP_or(a, b) ((a) | (b))
#define SHM_OP_xor(a, b) ((a) ^ (b))
#define SHM_OP_sum(a, b) ((a) + (b))
#define SHM_OP_prod(a, b) ((a) * (b))
#define SHM_OP_max(a, b) ((a) > (b) ? (a) : (b))
#define SHM_OP_min(a, b) ((a) < (b) ? (a) : (b))
/* static void combine_<N>_<OP>(acc, in, n): acc[i] = acc[i] OP in[i] */
#define SHM_DEFINE_COMBINE_(T, N, OP)                                                              \
    static void combine_##N##_##OP(void *acc, const void *in, size_t n)                            \
    {                                                                                              \
        T *a = acc;                                                                                \
        const T *b = in;                                                                           \
        for (size_t i = 0; i < n; i++) a[i] = (T)SHM_OP_##OP(a[i], b[i]);                          \
    }

/* ---- teams (shmem_team.c): destroy those still alive, newest first (shmem_finalize) */
SHM_HIDDEN void shm_team_destroy_all(void);
/* SHMEM_TEAM_SHARED at shmem_init (collective over the world, after the symmetric `probe`
 * address exists): the PEs whose memory this PE maps, the world itself when that is every PE;
 * and its release at shmem_finalize. */
SHM_HIDDEN void shm_team_setup_shared(const void *probe);
SHM_HIDDEN void shm_team_release_shared(void);

/* ---- memory (shmem_mem.c) */
SHM_HIDDEN void shm_mem_forget_all(void);

#endif

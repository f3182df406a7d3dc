/*
 * duet_comm.h — the communicator: a group of ranks, its bootstrap links, the symmetric
 * heap it shares with its teams, and its sync slot.
 */
#ifndef DUET_COMM_H
#define DUET_COMM_H

#include <pthread.h>
#include <sched.h>
#include "boot/duet_boot.h"
#include "heap/duet_heap.h"

/* The tuner's cost model of a communicator's channels: one (alpha, beta) pair per class of
 * link (docs/NETWORK.md 2.7). The first pair is shared memory (or the GPU executor's, in the
 * GPU model); the net pair prices a message between ranks on different hosts, and is 0 where
 * there is no such link (then every message costs the first pair). */
#define DUET_MODEL_CALL_KINDS 6 /* the collectives with a call term of their own */
typedef struct {
    double alpha_us;  /* per message */
    double beta_gbps; /* bytes per ns */
    double net_alpha_us, net_beta_gbps; /* between hosts; 0: as above */
    /* how far the repeats of the measurement that gave the first pair spread: (max - min) /
     * median of alpha and of beta (0: not measured, or not known) */
    double alpha_spread, beta_spread;
    /* The terms beyond alpha and beta (src/coll/duet_coll_predict.h), fitted by `duet-perf
     * --calibrate` to a sweep of forced algorithms (duet_coll_fit.h); 0 where not fitted (the
     * plain alpha-beta model). They price the first pair's link class. */
    double call_us;     /* per call of the executor: preparing it, starting and ending it   */
    double call_kind_us[DUET_MODEL_CALL_KINDS]; /* the same per collective (allreduce, broadcast,
                         * reduce, allgather, reduce-scatter, all-to-all: coll/duet_coll.h's
                         * order), as the fit finds them; 0: call_us                          */
    double step_us;     /* per step a rank runs, besides its bytes                          */
    double copy_gbps;   /* one copy: a local copy, a message by reference (0: 2 x beta)       */
    double mem_gbps;    /* beta once a call's bytes outgrow the cache (0: beta at any size)  */
    double knee_bytes;  /* the bytes of the ranks' buffers on a host that the cache holds    */
    double reduce_gbps; /* a reduction's extra cost per byte, beside its copy (0: none)      */
    double fit_err;     /* the fit's median |predicted - measured| / measured (0: no fit)    */
    /* 1: the executor's calls follow one another on a stream (the GPU executor: a rank's next
     * kernel starts when its last one ends, whatever the other ranks are doing), so a call is
     * costed as what it adds to a run of calls of its shape (src/coll/duet_coll_predict.h);
     * 0: as a call alone, from every rank's start to the last rank's end */
    int stream;
    int slots; /* messages in flight per link the executor allows (0: the host channels',
                * DUET_COLL_SLOTS): with calls back to back they bound how far calls overlap */
} duet_coll_model_t;

struct duet_comm {
    uint64_t magic;        /* DUET_COMM_MAGIC while alive: catches stale handles */
    int rank, size;
    int *heap_pe;          /* comm rank -> heap pe (root communicator rank) */
    struct duet_comm *parent; /* NULL for a root communicator (owns the heap) */
    int children;          /* teams split from this one, not yet freed (duet_comm_init.c's family lock) */
    uint8_t zombie;        /* destroyed while teams split from it lived: only this struct is
                            * left, as the parent they name, freed with the last of them */
    uint8_t lingering;     /* destroyed, but a call that entered before may still read it:
                            * never freed (a few KiB) */
    duet_heap_t *heap;
    duet_boot_t boot;
    int slot;              /* team sync slot in the heap's internal area */
    uint64_t sync_epoch;   /* barriers completed on this communicator */
    char abort_why[128];   /* why its waits stop (wait_ctx.abort_why points here; the
                            * word they watch is duet_comm_ft(c)->abort, in shared memory) */
    int32_t *pids;         /* root communicator: each rank's process id (one host) */
    _Atomic unsigned char *dead; /* root communicator: 1 for a rank seen dead (duet_ft.c) */
    int *pidfds;           /* root communicator: a pidfd per peer, -1 where none (duet_ft.c) */
    const _Atomic unsigned char *dead_pe; /* the root's `dead`, by heap pe (any communicator) */
    uint64_t ft_calls;     /* duet_comm_agree / duet_comm_shrink calls so far (duet_comm_ft.c) */
    uint64_t *agreed_failed; /* the failed set the last agree decided (a bit per rank), or NULL */
    duet_wait_ctx_t wait_ctx;
    int net_peers;         /* members reached by the net transport (no mapping here) */
    char tag[64];          /* names this communicator's shared-memory segments */
    struct duet_coll_chan *chan; /* collective channels to every member */
    struct duet_coll_chan *p2p;  /* separate channels for send / recv: they match among
                                  * themselves, whatever collectives run beside them */
    uint64_t coll_calls;   /* collectives started on this communicator */
    struct duet_coll_tune_cache *tune; /* the tuner's decisions so far */
    duet_coll_model_t model; /* the tuner's alpha and beta, once model_ready */
    int model_ready;
    int *host_of;          /* root communicator: each rank's host (shm-reachable sets, by first rank) */
    cpu_set_t helper_cpus; /* root communicator: the CPUs of this host no rank is bound to, where
                            * helper threads run (duet_cpus.h); empty: none */
    int *coll_host;        /* host of each rank for the collectives (duet_coll_hosts.c), or NULL */
    int coll_nhosts;       /* 0 until known */
    duet_coll_model_t gpu_model; /* the GPU executor's (src/cuda/duet_cuda_calib.c), once gpu_model_ready */
    int gpu_model_ready;
    struct duet_cuda_comm *cuda; /* the device handle's state (duet_device_comm_get), or NULL */
    /* set by a backend whose work fails after its call has returned (a GPU kernel's finding):
     * that failure as fn's error (reported, revoking c where it must), else DUET_OK. Asked by
     * duet_comm_status and at the entry of the collectives. NULL: none. */
    duet_status_t (*async_failure)(duet_comm_t c, const char *fn);
    int check_bounds;      /* DUET_CHECK_BOUNDS: one-sided ranges must lie in one live block */
    void *exec_mem;        /* the executor's bookkeeping, reused from call to call */
    size_t exec_mem_bytes;
    _Atomic int closing;   /* 1 once duet_comm_destroy / duet_finalize began to free it: a call
                            * from another thread fails at entry (duet_comm_enter) */
    pthread_t closer;      /* the thread freeing it (its own calls on c still run) */
};

#define DUET_COMM_MAGIC 0x4455455443304d4dull

/* My fault-tolerance words for c (in my segment), and pe's (comm rank). */
static inline duet_ft_area_t *duet_comm_ft(duet_comm_t c) { return duet_heap_ft(c->heap->local_base, c->slot); }
static inline duet_ft_area_t *duet_comm_ft_of(duet_comm_t c, int pe)
{ /* NULL for a member over the net transport (not mapped: read its words with a get) */
    char *base = c->heap->peer_base[c->heap_pe[pe]];
    return base ? duet_heap_ft(base, c->slot) : NULL;
}

/* The live handles (duet_comm_live.c): looked up by address, so a destroyed communicator's
 * handle is refused without reading the memory it points at. */
#define DUET_COMM_LIVE_SLOTS 4096 /* a power of two: the most communicators alive at once */
#define DUET_COMM_LIVE_TOMB ((duet_comm_t)(uintptr_t)1)
extern DUET_HIDDEN _Atomic(struct duet_comm *) duet_comm_live_[DUET_COMM_LIVE_SLOTS];
static inline size_t duet_comm_live_hash(const void *c)
{
    return (size_t)((((uintptr_t)c >> 4) * 0x9e3779b97f4a7c15ull) >> 52) & (DUET_COMM_LIVE_SLOTS - 1);
}
/* 1 when c is a communicator built and not yet destroyed (never dereferences c). */
static inline int duet_comm_is_live(duet_comm_t c)
{
    size_t i = duet_comm_live_hash(c);
    for (size_t n = 0; n < DUET_COMM_LIVE_SLOTS; n++, i = (i + 1) & (DUET_COMM_LIVE_SLOTS - 1)) {
        duet_comm_t e = atomic_load_explicit(&duet_comm_live_[i], memory_order_acquire);
        if (DUET_LIKELY(e == c)) return c != NULL;
        if (e == NULL) return 0;
    }
    return 0;
}
/* Enters a built communicator into the table (DUET_ERR_NO_MEMORY when it is full), and takes
 * it out again when it is freed. */
duet_status_t duet_comm_live_add(duet_comm_t c);
void duet_comm_live_remove(duet_comm_t c);

/* Validates a communicator handle (records the error and returns it if bad). It is the first
 * check of every call on a communicator: passing it also clears the calling thread's last
 * error (duet_error_clear), so a call that succeeds leaves none behind. */
static inline duet_status_t duet_comm_check(duet_comm_t c, const char *fn)
{
    if (DUET_UNLIKELY(!c))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: the communicator is NULL", fn);
    if (DUET_UNLIKELY(!duet_comm_is_live(c) || c->magic != DUET_COMM_MAGIC))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %p is not a live communicator (destroyed, or never "
                              "made by Duet)", fn, (void *)c);
    duet_error_clear();
    return DUET_OK;
}

/* Calls in flight (util: duet_inflight_*). A public call on c is inside it from
 * duet_comm_enter until duet_inflight_leave(), so that a thread freeing c (duet_comm_destroy,
 * duet_finalize: ncclCommAbort from a watchdog thread, say) waits for the call to return
 * before anything of c goes. Returns 1 (entered: leave after), 0 (c is NULL or not a live
 * communicator: nothing entered, the call's own check reports it), or DUET_ERR_REVOKED, the
 * message naming fn, when c is being freed by another thread. A few nanoseconds: two stores
 * to the thread's own record and the live-table lookup (duet_comm_live.c). */
int duet_comm_closing_(duet_comm_t c, const char *fn);
/* duet_comm_enter, the thread's record in *rec (for duet_inflight_leave_rec) when it returns 1. */
DUET_INLINE int duet_comm_enter_rec(duet_comm_t c, const char *fn, duet_inflight_rec_t **rec)
{
    if (DUET_UNLIKELY(!c)) return 0;
    duet_inflight_rec_t *r = duet_inflight_enter_rec(c);
    if (DUET_UNLIKELY(!duet_comm_is_live(c) || c->magic != DUET_COMM_MAGIC)) {
        duet_inflight_leave_rec(r);
        return 0;
    }
    if (DUET_UNLIKELY(atomic_load_explicit(&c->closing, memory_order_relaxed))) return duet_comm_closing_(c, fn);
    *rec = r;
    return 1;
}
static inline int duet_comm_enter(duet_comm_t c, const char *fn)
{
    duet_inflight_rec_t *r;
    return duet_comm_enter_rec(c, fn, &r);
}
/* A public call's body `call` (a duet_status_t expression) run inside c (duet_comm_enter). */
#define DUET_COMM_CALL(c, fn, call)                                                                 \
    do {                                                                                            \
        duet_inflight_rec_t *rec_ = NULL;                                                           \
        int in_ = duet_comm_enter_rec((c), (fn), &rec_);                                            \
        if (in_ < 0) return (duet_status_t)in_;                                                     \
        duet_status_t st_ = (call);                                                                 \
        if (in_) duet_inflight_leave_rec(rec_);                                                     \
        return st_;                                                                                 \
    } while (0)

/* The same for a call that returns a pointer (NULL when c is being freed). */
#define DUET_COMM_CALL_PTR(c, fn, call)                                                             \
    do {                                                                                            \
        duet_inflight_rec_t *rec_ = NULL;                                                           \
        int in_ = duet_comm_enter_rec((c), (fn), &rec_);                                            \
        if (in_ < 0) return NULL;                                                                   \
        void *p_ = (call);                                                                          \
        if (in_) duet_inflight_leave_rec(rec_);                                                     \
        return p_;                                                                                  \
    } while (0)

/* "rank r" of c for messages; for a team (a split or a shrunk communicator) whose rank r is
 * another rank of the root communicator, "rank r (world rank w)": after a shrink the reader
 * knows the ranks by the world's numbers (duet_comm_split.c). Returns buf. */
const char *duet_comm_rank_name(duet_comm_t c, int r, char *buf, size_t len);

/* DUET_OK when c may allocate on its heap (duet_comm_heap.c): c owns the heap, or holds every
 * live rank of the communicator that does (a shrunk one); else an error naming fn, set. */
duet_status_t duet_comm_heap_allocator(duet_comm_t c, const char *fn);

/* duet_comm_check, and c must be neither revoked nor have lost a member (what collectives
 * and barriers need); else the status in its abort word, with a message saying why. */
duet_status_t duet_comm_unusable_(duet_comm_t c, const char *fn, int status);
static inline duet_status_t duet_comm_check_usable(duet_comm_t c, const char *fn)
{
    duet_status_t st = duet_comm_check(c, fn);
    if (st) return st;
    int a = atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_acquire);
    return DUET_LIKELY(a == 0) ? DUET_OK : duet_comm_unusable_(c, fn, a);
}

/* Where the bootstrap of a new communicator of these root-communicator ranks listens:
 * loopback when they all share one host (duet_comm_split.c). */
duet_boot_scope_t duet_comm_boot_scope_(duet_comm_t c, const int *heap_pes, int n);

/* Revokes c as duet_comm_revoke does, with `status` (a negative duet_status_t) in every
 * member's abort word: their waits on c end with it, their later calls fail at entry
 * (the collectives revoke with DUET_ERR_INVALID_ARG after mismatched calls: coll/duet_coll_sig.h). */
void duet_comm_revoke_status_(duet_comm_t c, duet_status_t status);

/* Builds a communicator around a joined bootstrap (takes ownership of *boot). With
 * parent == NULL it creates a heap (its GPU part on `device`, or -1: the default choice);
 * else it shares the parent's, with heap_pe given. */
duet_status_t duet_comm_build_(duet_comm_t *out, duet_boot_t *boot, duet_comm_t parent, int *heap_pe,
                               int slot, size_t heap_size, const char *tag, int device);

#endif

/*
 * duet_coll_sim_state.h — the schedule simulator's state, shared by its files (inside src/coll
 * only; the model and the checks: duet_coll_sim.h):
 *   duet_coll_sim.c        the entry points: the call's buffers, the links, allocation, a run
 *   duet_coll_sim_check.c  the checks and their reports: before running, deadlock, results
 *   duet_coll_sim_exec.c   the executor's rules and the event loop (heaps, the clock)
 *   duet_coll_sim_data.c   with check_data: moving the data, and the races
 */
#ifndef DUET_COLL_SIM_STATE_H
#define DUET_COLL_SIM_STATE_H

#include "coll/duet_coll_sim.h"

/* ---------------------------------------------------------------- tokens
 * Element values: mix() is the splitmix64 finalizer, a bijection, so a value that was
 * never summed can be traced back to where it came from. */
#define TAG_IN 0xA5ull
#define TAG_POISON 0x5Aull

static inline uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline uint64_t unmix(uint64_t z)
{
    z = z ^ (z >> 31) ^ (z >> 62);
    z *= 0x319642b2d24d8ec3ull;
    z = z ^ (z >> 27) ^ (z >> 54);
    z *= 0x96de1b173f119089ull;
    return z ^ (z >> 30) ^ (z >> 60);
}
static inline uint64_t tag(uint64_t t, int r, size_t i)
{
    return mix(t << 56 | (uint64_t)(r & 0xffffff) << 32 | (uint64_t)(i & 0xffffffffu));
}
/* Rank r's input element i. */
static inline uint64_t key(int r, size_t i) { return tag(TAG_IN, r, i); }

/* ---------------------------------------------------------------- state */
enum { EV_DONE, EV_ARRIVE, EV_ACK };
typedef struct {
    double t;
    uint64_t order; /* ties: first pushed, first processed */
    int type, rank, gid, link;
} event_t;

typedef struct {
    int first;        /* first unfinished step */
    int busy, kicked;
    int *heap, hn;    /* steps that may run now, min-heap of global ids */
    uint64_t *mem;    /* data (check_data): one token per element */
    int32_t *lastw;   /* per element: the last step that wrote it, -1: none */
    int32_t *readers; /* per element: reads since that write (a list in the pool), 0: none */
    size_t base[DUET_BUF_COUNT], bytes[DUET_BUF_COUNT]; /* layout: element offset, size */
    size_t elems;
} rank_t;

typedef struct {
    const duet_sched_t *sc;
    const duet_coll_args_t *a;
    duet_sim_model_t m;
    int n, check, T;
    size_t msg_limit;
    duet_sim_result_t *out;
    duet_sim_rank_t *stat;
    rank_t *rk;
    /* steps, by global id gid = gbase[r] + index */
    int *gbase, *rank_of, *pos; /* pos: place in its link's send or receive list */
    uint8_t *done, *queued, *bad;
    int *child_off, *child;     /* steps whose dep is this one */
    /* links L = from * n + to: the sends and the receives of each, in order */
    int *soff, *slist, *roff, *rlist;
    int *sends_done, *recvs_done, *arrived, *acked;
    uint64_t **payload;         /* check_data: messages in flight, slot L * slots + pos % slots */
    uint64_t **free_bufs;
    int nfree, cap_free;
    size_t msg_elems;           /* largest message, in elements */
    /* events */
    event_t *ev;
    int nev, cap_ev;
    uint64_t ev_order;
    int *kick, nkick;
    /* calls back to back (model calls > 1; else NULL): a rank's steps of one call, and when
     * each call's last step completed on any rank */
    int *call_len;
    double *call_end;
    /* races */
    uint32_t *seq, seq_next;     /* the order steps started in */
    int *cand_mark;              /* the step a candidate was last collected for */
    struct { int gid, buf, chain, found; size_t el; } *cand;
    int ncand, cap_cand;
    uint32_t *vis, *tgt, stamp;  /* search marks */
    uint32_t *chain_tgt;         /* per send or receive chain (2 per link): holds a candidate */
    int *stack;
    struct { int32_t gid, next; } *pool;
    int npool, cap_pool;
    int races, oom;
} sim_t;

/* ---------------------------------------------------------------- kinds of steps */
static inline int is_send(int k) { return k == DUET_STEP_SEND; }
static inline int is_recv(int k) { return k == DUET_STEP_RECV || k == DUET_STEP_RECV_REDUCE; }
static inline int reads_src(int k) { return k != DUET_STEP_RECV; }
static inline int writes_dst(int k) { return k != DUET_STEP_SEND; }

/* ---------------------------------------------------------------- across the files */
/* duet_coll_sim_check.c: reports */
__attribute__((format(printf, 3, 4))) void duet_coll_sim_report(sim_t *s, unsigned kind, const char *fmt, ...);
const char *duet_coll_sim_buf_name(int b);
const char *duet_coll_sim_step_text(const sim_t *s, int gid, char *b, size_t cap);
/* duet_coll_sim_check.c: checks (before running, after a deadlock, of the results) */
int duet_coll_sim_check_steps(sim_t *s);
void duet_coll_sim_check_matching(sim_t *s);
void duet_coll_sim_report_deadlock(sim_t *s);
void duet_coll_sim_check_results(sim_t *s);
/* duet_coll_sim_exec.c: runs the schedules under the executor's rules until nothing can run */
void duet_coll_sim_run_events(sim_t *s);
/* duet_coll_sim_data.c: the data of step gid, moved at its start (races searched) */
void duet_coll_sim_move_data(sim_t *s, int gid, const duet_step_t *st);

#endif

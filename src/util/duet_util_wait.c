/*
 * The one wait loop. Phases, by time since the wait began:
 *
 *   0 ........ spin_us ............. +2 ms ..................... deadline
 *   (spin_us is DUET_WAIT_SPIN_US, or 0 when the host has more ranks than CPUs)
 *   | pause & re-check | sched_yield & re-check | futex sleep <= 200 us | DUET_ERR_TIMEOUT
 *
 * Spinning first keeps the round trip at cache-line speed when the peer owns a core;
 * yielding next lets an oversubscribed peer (8 ranks on 2 cores) run; sleeping last keeps
 * an idle wait cheap. The futex sleep has a short timeout, so a wake-up that is missed
 * (a peer that stores without ringing) costs latency, never a hang. A sleep that a ring ended
 * goes back to yielding for 200 us before the next: the peer is busy writing here, and a
 * sleeper that re-armed at once would cost it a wake-up system call per ring.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "duet_util.h"

#define FAST_TURNS     256u
#define YIELD_PHASE_NS 2000000ull
#define SLEEP_NS       200000ull
#define REWAKE_GRACE_NS 200000ull

void duet_waiter_init(duet_waiter_t *w, const duet_wait_ctx_t *ctx, const char *what, const char *label,
                      unsigned long long a, unsigned long long b, int peer)
{
    w->ctx = ctx;
    w->what = what;
    w->label = label;
    w->a = a;
    w->b = b;
    w->peer = peer;
    w->turns = 0;
    w->start_ns = 0; /* read lazily: a short wait never reads the clock */
    w->write_label = NULL;
}

void duet_waiter_label_later(duet_waiter_t *w, void (*write)(void *arg), void *arg)
{
    w->write_label = write;
    w->write_label_arg = arg;
}

/* The label, written now if it was left for later. */
static void label_now(duet_waiter_t *w)
{
    if (DUET_UNLIKELY(w->write_label != NULL)) {
        w->write_label(w->write_label_arg);
        w->write_label = NULL;
    }
}

/* ---- the notes of waits in progress, for duet_wait_report (one slot per thread that ever
 * waited long; slots are never given back: a process has few threads) */
#define NOTE_SLOTS 64
#define NOTE_FRESH_NS 50000000ull /* a note stamped this recently is a wait in progress */

typedef struct {
    _Atomic uint64_t seen_ns;  /* the wait's last turn; 0: no wait noted yet */
    _Atomic uint64_t start_ns; /* when it began; written last when the note changes */
    uint64_t reported;         /* start_ns of the wait last reported by age */
    const char *what;          /* a format: static text */
    char label[96];
    unsigned long long a, b;
    int peer;
} note_t;

static note_t notes[NOTE_SLOTS];
static _Atomic int notes_used;
static _Thread_local int my_note = -1;

static void note_begin(duet_waiter_t *w)
{
    label_now(w);
    if (my_note < 0) {
        int i = atomic_fetch_add_explicit(&notes_used, 1, memory_order_relaxed);
        my_note = i < NOTE_SLOTS ? i : NOTE_SLOTS; /* NOTE_SLOTS: no room, not noted */
    }
    if (my_note >= NOTE_SLOTS) return;
    note_t *n = &notes[my_note];
    atomic_store_explicit(&n->start_ns, 0, memory_order_relaxed); /* changing */
    n->what = w->what;
    snprintf(n->label, sizeof n->label, "%s", w->label ? w->label : "");
    n->a = w->a, n->b = w->b, n->peer = w->peer;
    atomic_store_explicit(&n->seen_ns, w->start_ns, memory_order_relaxed);
    atomic_store_explicit(&n->start_ns, w->start_ns, memory_order_release);
}

static inline void note_seen(uint64_t now)
{
    if (my_note >= 0 && my_note < NOTE_SLOTS) atomic_store_explicit(&notes[my_note].seen_ns, now, memory_order_relaxed);
}

int duet_wait_report(char *buf, size_t len, double older_s)
{
    uint64_t now = duet_time_ns();
    int used = 0, count = 0, n = atomic_load_explicit(&notes_used, memory_order_relaxed);
    if (n > NOTE_SLOTS) n = NOTE_SLOTS;
    if (len) buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        note_t *t = &notes[i];
        uint64_t start = atomic_load_explicit(&t->start_ns, memory_order_acquire);
        uint64_t seen = atomic_load_explicit(&t->seen_ns, memory_order_relaxed);
        if (!start || now - seen > NOTE_FRESH_NS) continue;
        double age = (double)(now - start) * 1e-9;
        if (older_s > 0 && (age < older_s || t->reported == start)) continue;
        char label[sizeof t->label], what[200];
        memcpy(label, t->label, sizeof label);
        label[sizeof label - 1] = '\0';
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(what, sizeof what, t->what, label, t->a, t->b);
#pragma GCC diagnostic pop
        if (atomic_load_explicit(&t->start_ns, memory_order_acquire) != start) continue; /* changed meanwhile */
        if (older_s > 0) t->reported = start;
        char peer[32] = "";
        if (t->peer >= 0) snprintf(peer, sizeof peer, " from rank %d", t->peer);
        if ((size_t)used < len)
            used += snprintf(buf + used, len - (size_t)used, "%s%s%s: waiting %.1f s", count ? "; " : "", what, peer,
                             age);
        count++;
    }
    if (!count && older_s <= 0 && len) snprintf(buf, len, "not waiting");
    return count;
}

static void start_clock(duet_waiter_t *w)
{
    double spin_us = w->ctx ? w->ctx->spin_us : duet_cfg()->wait_spin_us;
    w->start_ns = duet_time_ns();
    w->spin_until_ns = w->start_ns + (uint64_t)(spin_us * 1e3);
    w->sleep_after_ns = w->spin_until_ns + YIELD_PHASE_NS;
    double t = w->ctx && w->ctx->timeout_s > 0 ? w->ctx->timeout_s : 0;
    w->deadline_ns = t > 0 ? w->start_ns + (uint64_t)(t * 1e9) : UINT64_MAX;
    note_begin(w);
}

/* 1 when the sleep ended by a ring (or the doorbell had moved already), 0 at the timeout. */
static int futex_sleep(duet_doorbell_t *d, uint32_t seen)
{
    struct timespec ts = {0, (long)SLEEP_NS};
    return syscall(SYS_futex, &d->doorbell, FUTEX_WAIT, seen, &ts, NULL, 0) == 0 || errno == EAGAIN;
}

/* One wake per sleep: the ring that disarms the doorbell bumps it and wakes every sleeper;
 * rings after it, until a sleeper arms it again, do nothing (a sleeper that read the word
 * before the bump finds it moved and does not sleep). A stream of writes to a rank asleep in
 * a wait then costs it one wake, not one system call per write. */
void duet_doorbell_wake_(duet_doorbell_t *d)
{
    if (!atomic_exchange_explicit(&d->armed, 0, memory_order_seq_cst)) return;
    atomic_fetch_add_explicit(&d->doorbell, 1, memory_order_seq_cst);
    syscall(SYS_futex, &d->doorbell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static const char *describe(duet_waiter_t *w, char *buf, size_t len)
{
    label_now(w);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(buf, len, w->what, w->label, w->a, w->b);
#pragma GCC diagnostic pop
    return buf;
}

duet_status_t duet_waiter_turn(duet_waiter_t *w)
{
    const duet_wait_ctx_t *ctx = w->ctx;
    char what[160];
    int aborted;
    if (ctx && ctx->abort_flag && (aborted = atomic_load_explicit(ctx->abort_flag, memory_order_acquire)) != 0) {
        /* the word holds the status to return (a negative duet_status_t), else abort_status */
        duet_status_t status = aborted < 0 ? (duet_status_t)aborted : ctx->abort_status;
        describe(w, what, sizeof what);
        char revoker[48];
        const char *why = ctx->abort_why && status != DUET_ERR_REVOKED ? ctx->abort_why : "";
        if (status == DUET_ERR_REVOKED && ctx->revoked_by && atomic_load_explicit(ctx->revoked_by, memory_order_relaxed))
            snprintf(revoker, sizeof revoker, "revoked by rank %d",
                     atomic_load_explicit(ctx->revoked_by, memory_order_relaxed) - 1), why = revoker;
        const char *open = why[0] ? " (" : "", *close = why[0] ? ")" : "";
        if (w->peer >= 0)
            return duet_error_set(status, "%s%s%s%s while waiting for %s from rank %d", duet_status_str(status), open,
                                  why, close, what, w->peer);
        return duet_error_set(status, "%s%s%s%s while waiting for %s", duet_status_str(status), open, why, close,
                              what);
    }
    if (ctx && ctx->progress) ctx->progress(ctx->progress_arg); /* before any fast return */
    /* The first turns are a bare load loop: a peer that answers within a microsecond is
     * seen at once (a pause here costs ~10 ns of every round trip). Then the clock is read
     * every 64 turns, with a pause between reads. */
    ++w->turns;
    int spinning = !ctx || ctx->spin_us > 0; /* else: oversubscribed, yield at once */
    if (spinning && w->turns < FAST_TURNS) return DUET_OK;
    if (w->start_ns == 0) start_clock(w);
    if (spinning && (w->turns & 63) != 0) {
        duet_cpu_relax();
        return DUET_OK;
    }
    uint64_t now = duet_time_ns();
    note_seen(now);
    if (DUET_UNLIKELY(now >= w->deadline_ns)) {
        describe(w, what, sizeof what);
        if (w->peer >= 0)
            return DUET_FAIL(DUET_ERR_TIMEOUT, RMA, "timed out after %.1f s waiting for %s from rank %d",
                             (double)(now - w->start_ns) * 1e-9, what, w->peer);
        return DUET_FAIL(DUET_ERR_TIMEOUT, RMA, "timed out after %.1f s waiting for %s",
                         (double)(now - w->start_ns) * 1e-9, what);
    }
    if (now < w->spin_until_ns) {
        duet_cpu_relax();
    } else if (now < w->sleep_after_ns || !ctx || !ctx->doorbell) {
        sched_yield();
    } else {
        /* announce the sleeper, then sleep unless the doorbell moved since we looked; the
         * caller re-checks its condition after every turn */
        duet_doorbell_t *d = ctx->doorbell;
        uint32_t seen = atomic_load_explicit(&d->doorbell, memory_order_acquire);
        atomic_store_explicit(&d->armed, 1, memory_order_seq_cst); /* after `seen`: see duet_doorbell_wake_ */
        atomic_fetch_add_explicit(&d->sleepers, 1, memory_order_seq_cst);
        int rung = futex_sleep(d, seen);
        atomic_fetch_sub_explicit(&d->sleepers, 1, memory_order_relaxed);
        /* Rung, and the caller finds its condition still false: the peer is writing here, just
         * not what we wait for (an nbi stream's quiet rings once per window). Yield, not sleep,
         * for a while before arming again: a sleeper woken by every ring would cost its peer
         * a futex wake (a system call, 2-5 us on a VM) per ring. */
        if (rung) w->sleep_after_ns = duet_time_ns() + REWAKE_GRACE_NS;
    }
    return DUET_OK;
}

static void (*_Atomic background_fn)(void);

void duet_background_progress_set(void (*fn)(void)) { atomic_store(&background_fn, fn); }

int duet_background_progress(void)
{
    void (*fn)(void) = atomic_load_explicit(&background_fn, memory_order_acquire);
    if (!fn) return 0;
    fn();
    return 1;
}

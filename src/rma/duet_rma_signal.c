/* put-with-signal, signal update, fetch and wait. */
#include "rma/duet_rma.h"

/* My signal word's segment (its endpoint to heap pe hp) and offset, or an error. */
static duet_status_t check_sig(duet_comm_t c, const uint64_t *sig, int hp, const char *fn, duet_tport_ep_t **ep,
                               size_t *off)
{
    duet_status_t st = duet_rma_where(c, sig, sizeof *sig, hp, fn, "the signal", ep, off);
    if (st == DUET_OK && (uintptr_t)sig % sizeof *sig)
        st = duet_error_set(DUET_ERR_INVALID_ARG, "%s: the signal %p is not 8-byte aligned", fn, (void *)sig);
    return st;
}

static duet_status_t signal_update(duet_tport_ep_t *ep, size_t off, uint64_t signal, int sig_op)
{
    return ep->ops->amo(ep, sig_op == DUET_SIGNAL_ADD ? DUET_AMO_ADD : DUET_AMO_SET, off, 8, signal, 0, NULL);
}

/* Data and signal each go to the endpoint of the segment their address lies in. The data
 * lands before the signal either way: on one endpoint a fence orders them; on two (one in
 * the host heap, one in the device heap) the data's endpoint completes it (quiet) first. */
static duet_status_t put_signal_(duet_comm_t c, void *dest, const void *src, size_t n, uint64_t *sig,
                                 uint64_t signal, int sig_op, int pe, int nbi, const char *fn)
{
    duet_tport_ep_t *ep = NULL, *sig_ep = NULL;
    size_t off = 0, sig_off = 0;
    duet_status_t st = duet_comm_check(c, fn);
    if (st) return st;
    if (sig_op != DUET_SIGNAL_SET && sig_op != DUET_SIGNAL_ADD)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: sig_op %d is neither DUET_SIGNAL_SET nor _ADD", fn, sig_op);
    if ((st = duet_rma_pe(c, pe, fn))) return st;
    int hp = c->heap_pe[pe];
    if ((st = check_sig(c, sig, hp, fn, &sig_ep, &sig_off))) return st;
    if (n) {
        if ((st = duet_rma_where(c, dest, n, hp, fn, "the remote address", &ep, &off))) return st;
        if ((st = duet_rma_local(src, n, fn, "the source"))) return st;
        if ((st = nbi ? ep->ops->put_nbi(ep, off, src, n) : ep->ops->put(ep, off, src, n))) return st;
        /* the data lands before the signal */
        if ((st = ep == sig_ep ? ep->ops->fence(ep) : ep->ops->quiet(ep))) return st;
    }
    st = signal_update(sig_ep, sig_off, signal, sig_op);
    sig_ep->ops->notify(sig_ep);
    return st;
}

/* put_signal_ as a call in flight on c (duet_comm_enter). */
static duet_status_t put_signal(duet_comm_t c, void *dest, const void *src, size_t n, uint64_t *sig, uint64_t signal,
                                int sig_op, int pe, int nbi, const char *fn)
{
    DUET_COMM_CALL(c, fn, put_signal_(c, dest, src, n, sig, signal, sig_op, pe, nbi, fn));
}

duet_status_t duet_put_signal(duet_comm_t c, void *dest, const void *src, size_t n, uint64_t *sig,
                              uint64_t signal, int sig_op, int pe)
{
    return put_signal(c, dest, src, n, sig, signal, sig_op, pe, 0, "duet_put_signal");
}

duet_status_t duet_put_signal_nbi(duet_comm_t c, void *dest, const void *src, size_t n, uint64_t *sig,
                                  uint64_t signal, int sig_op, int pe)
{
    return put_signal(c, dest, src, n, sig, signal, sig_op, pe, 1, "duet_put_signal_nbi");
}

duet_status_t duet_signal_op(duet_comm_t c, uint64_t *sig, uint64_t signal, int sig_op, int pe)
{
    return put_signal(c, NULL, NULL, 0, sig, signal, sig_op, pe, 0, "duet_signal_op");
}

static duet_status_t duet_signal_fetch_(duet_comm_t c, const uint64_t *sig, uint64_t *value)
{
    static const char fn[] = "duet_signal_fetch";
    duet_tport_ep_t *ep = NULL;
    size_t off = 0;
    duet_status_t st = duet_comm_check(c, fn);
    if (!st) st = check_sig(c, sig, c->heap->my_pe, fn, &ep, &off);
    if (!st && !value) st = duet_rma_local(value, 1, fn, "the value pointer");
    if (st) return st;
    if (duet_rma_on_device(c->heap, ep)) return ep->ops->get(ep, value, off, sizeof *value); /* a copy */
    *value = __atomic_load_n(sig, __ATOMIC_ACQUIRE);
    return DUET_OK;
}
duet_status_t duet_signal_fetch(duet_comm_t c, const uint64_t *sig, uint64_t *value)
{
    DUET_COMM_CALL(c, "duet_signal_fetch", duet_signal_fetch_(c, sig, value));
}

static int sig_compare(uint64_t a, int cmp, uint64_t b)
{
    switch (cmp) {
    case DUET_CMP_EQ: return a == b;
    case DUET_CMP_NE: return a != b;
    case DUET_CMP_GT: return a > b;
    case DUET_CMP_GE: return a >= b;
    case DUET_CMP_LT: return a < b;
    default: return a <= b;
    }
}

/* My signal word now: a load, or on the device heap a copy. */
static duet_status_t sig_look(duet_tport_ep_t *ep, int on_device, const uint64_t *sig, size_t off, uint64_t *v)
{
    if (on_device) return ep->ops->get(ep, v, off, sizeof *v);
    *v = __atomic_load_n(sig, __ATOMIC_ACQUIRE);
    return DUET_OK;
}

static duet_status_t duet_signal_wait_until_(duet_comm_t c, uint64_t *sig, int cmp, uint64_t value,
                                             uint64_t *value_out)
{
    static const char fn[] = "duet_signal_wait_until";
    duet_tport_ep_t *ep = NULL;
    size_t off = 0;
    duet_status_t st = duet_comm_check(c, fn);
    if (!st) st = check_sig(c, sig, c->heap->my_pe, fn, &ep, &off);
    if (!st && (cmp < DUET_CMP_EQ || cmp > DUET_CMP_LE))
        st = duet_error_set(DUET_ERR_INVALID_ARG, "%s: comparison %d is not a DUET_CMP_* value", fn, cmp);
    if (st) return st;
    int on_device = duet_rma_on_device(c->heap, ep); /* a GPU word: each look is a copy */
    uint64_t v = 0;
    if ((st = sig_look(ep, on_device, sig, off, &v))) return st;
    if (!sig_compare(v, cmp, value)) {
        duet_waiter_t w;
        duet_waiter_init(&w, &c->wait_ctx, "%s at 0x%llx (its value %llu)", "the signal",
                         (uintptr_t)sig, (unsigned long long)v, -1);
        do {
            if ((st = duet_waiter_turn(&w))) return st;
            if ((st = sig_look(ep, on_device, sig, off, &v))) return st;
        } while (!sig_compare(v, cmp, value));
    }
    if (value_out) *value_out = v; /* the value that satisfied the wait */
    return DUET_OK;
}
duet_status_t duet_signal_wait_until(duet_comm_t c, uint64_t *sig, int cmp, uint64_t value, uint64_t *value_out)
{
    DUET_COMM_CALL(c, "duet_signal_wait_until", duet_signal_wait_until_(c, sig, cmp, value, value_out));
}

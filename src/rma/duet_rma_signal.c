/* put-with-signal, signal update, fetch and wait. */
#include "rma/duet_rma.h"

static duet_status_t check_sig(duet_comm_t c, const uint64_t *sig, const char *fn, size_t *off)
{
    duet_status_t st = duet_rma_offset(c, sig, sizeof *sig, fn, "the signal", off);
    if (!st && (uintptr_t)sig % sizeof *sig)
        st = duet_error_set(DUET_ERR_INVALID_ARG, "%s: the signal %p is not 8-byte aligned", fn, (void *)sig);
    return st;
}

static duet_status_t signal_update(duet_tport_ep_t *ep, size_t off, uint64_t signal, int sig_op, const char *fn)
{
    return ep->ops->amo(ep, sig_op == DUET_SIGNAL_ADD ? DUET_AMO_ADD : DUET_AMO_SET, off, 8, signal, 0, NULL);
}

static duet_status_t put_signal(duet_comm_t c, void *dest, const void *src, size_t n, uint64_t *sig,
                                uint64_t signal, int sig_op, int pe, const char *fn)
{
    duet_tport_ep_t *ep = NULL;
    size_t off = 0, sig_off;
    duet_status_t st = duet_comm_check(c, fn);
    if (st) return st;
    if (sig_op != DUET_SIGNAL_SET && sig_op != DUET_SIGNAL_ADD)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: sig_op %d is neither DUET_SIGNAL_SET nor _ADD", fn, sig_op);
    if ((st = duet_rma_pe(c, pe, fn, &ep)) || (st = check_sig(c, sig, fn, &sig_off)))
        return st;
    if (n && ((st = duet_rma_offset(c, dest, n, fn, "the remote address", &off)) ||
              (st = duet_rma_local(src, n, fn, "the source"))))
        return st;
    if (n && (st = ep->ops->put(ep, off, src, n))) return st;
    if ((st = ep->ops->fence(ep))) return st; /* the data lands before the signal */
    st = signal_update(ep, sig_off, signal, sig_op, fn);
    ep->ops->notify(ep);
    return st;
}

duet_status_t duet_put_signal(duet_comm_t c, void *dest, const void *src, size_t n, uint64_t *sig,
                              uint64_t signal, int sig_op, int pe)
{
    return put_signal(c, dest, src, n, sig, signal, sig_op, pe, "duet_put_signal");
}

duet_status_t duet_put_signal_nbi(duet_comm_t c, void *dest, const void *src, size_t n, uint64_t *sig,
                                  uint64_t signal, int sig_op, int pe)
{
    return put_signal(c, dest, src, n, sig, signal, sig_op, pe, "duet_put_signal_nbi");
}

duet_status_t duet_signal_op(duet_comm_t c, uint64_t *sig, uint64_t signal, int sig_op, int pe)
{
    return put_signal(c, NULL, NULL, 0, sig, signal, sig_op, pe, "duet_signal_op");
}

duet_status_t duet_signal_fetch(duet_comm_t c, const uint64_t *sig, uint64_t *value)
{
    size_t off;
    duet_status_t st = duet_comm_check(c, "duet_signal_fetch");
    if (!st) st = check_sig(c, sig, "duet_signal_fetch", &off);
    if (!st) st = duet_rma_local(value, 1, "duet_signal_fetch", "the value pointer");
    if (!st) *value = __atomic_load_n(sig, __ATOMIC_ACQUIRE);
    return st;
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

duet_status_t duet_signal_wait_until(duet_comm_t c, uint64_t *sig, int cmp, uint64_t value, uint64_t *value_out)
{
    static const char fn[] = "duet_signal_wait_until";
    size_t off;
    duet_status_t st = duet_comm_check(c, fn);
    if (!st) st = check_sig(c, sig, fn, &off);
    if (!st && (cmp < DUET_CMP_EQ || cmp > DUET_CMP_LE))
        st = duet_error_set(DUET_ERR_INVALID_ARG, "%s: comparison %d is not a DUET_CMP_* value", fn, cmp);
    if (st) return st;
    uint64_t v = __atomic_load_n(sig, __ATOMIC_ACQUIRE);
    if (!sig_compare(v, cmp, value)) {
        duet_waiter_t w;
        duet_waiter_init(&w, &c->wait_ctx, "%s at 0x%llx (its value %llu)", "the signal",
                         (uintptr_t)sig, (unsigned long long)v, -1);
        do {
            if ((st = duet_waiter_turn(&w))) return st;
            v = __atomic_load_n(sig, __ATOMIC_ACQUIRE);
        } while (!sig_compare(v, cmp, value));
    }
    if (value_out) *value_out = v; /* the value that satisfied the wait */
    return DUET_OK;
}

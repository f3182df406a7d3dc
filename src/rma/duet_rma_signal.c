/* put-with-signal, signal update, fetch and wait. */
#include "rma/duet_rma.h"

/* DUET_OK (host heap, *off set), DUET_RMA_GPU, or an error. */
static duet_status_t check_sig(duet_comm_t c, const uint64_t *sig, const char *fn, size_t *off)
{
    duet_status_t st = duet_rma_where(c, sig, sizeof *sig, fn, "the signal", off);
    if (st >= DUET_OK && (uintptr_t)sig % sizeof *sig)
        st = duet_error_set(DUET_ERR_INVALID_ARG, "%s: the signal %p is not 8-byte aligned", fn, (void *)sig);
    return st;
}

static duet_status_t signal_update(duet_tport_ep_t *ep, size_t off, uint64_t signal, int sig_op, const char *fn)
{
    return ep->ops->amo(ep, sig_op == DUET_SIGNAL_ADD ? DUET_AMO_ADD : DUET_AMO_SET, off, 8, signal, 0, NULL);
}

/* Data and signal each go where their address lies: the host heap's transport, or the GPU
 * heap's internal stream (duet_cuda_rma.c). The data lands before the signal either way: a
 * transport fence, the stream's order, or a stream quiet before a host signal. */
static duet_status_t put_signal(duet_comm_t c, void *dest, const void *src, size_t n, uint64_t *sig,
                                uint64_t signal, int sig_op, int pe, int nbi, const char *fn)
{
    duet_tport_ep_t *ep = NULL;
    size_t off = 0, sig_off = 0;
    duet_status_t st = duet_comm_check(c, fn), sig_where, data_where = DUET_OK;
    if (st) return st;
    if (sig_op != DUET_SIGNAL_SET && sig_op != DUET_SIGNAL_ADD)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: sig_op %d is neither DUET_SIGNAL_SET nor _ADD", fn, sig_op);
    if ((st = duet_rma_pe(c, pe, fn, &ep))) return st;
    if ((sig_where = check_sig(c, sig, fn, &sig_off)) < 0) return sig_where;
    if (n) {
        if ((data_where = duet_rma_where(c, dest, n, fn, "the remote address", &off)) < 0) return data_where;
        if ((st = duet_rma_local(src, n, fn, "the source"))) return st;
    }
    if (DUET_LIKELY(sig_where == DUET_OK && data_where == DUET_OK)) {
        if (n && (st = nbi ? ep->ops->put_nbi(ep, off, src, n) : ep->ops->put(ep, off, src, n))) return st;
        if ((st = ep->ops->fence(ep))) return st; /* the data lands before the signal */
        st = signal_update(ep, sig_off, signal, sig_op, fn);
        ep->ops->notify(ep);
        return st;
    }
    if (n && data_where == DUET_RMA_GPU) st = duet_cuda_rma_put(c, dest, src, n, pe, 1, fn);
    else if (n) st = (st = ep->ops->put(ep, off, src, n)) ? st : ep->ops->fence(ep);
    if (st) return st;
    if (sig_where == DUET_RMA_GPU) return duet_cuda_rma_signal(c, sig, signal, sig_op, pe, nbi, fn);
    if ((st = duet_cuda_rma_quiet(c))) return st; /* GPU data, host signal */
    st = signal_update(ep, sig_off, signal, sig_op, fn);
    ep->ops->notify(ep);
    return st;
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

duet_status_t duet_signal_fetch(duet_comm_t c, const uint64_t *sig, uint64_t *value)
{
    size_t off;
    duet_status_t st = duet_comm_check(c, "duet_signal_fetch");
    if (!st) st = check_sig(c, sig, "duet_signal_fetch", &off);
    if (st >= DUET_OK && !value) st = duet_rma_local(value, 1, "duet_signal_fetch", "the value pointer");
    if (st == DUET_RMA_GPU) return duet_cuda_rma_read(c, value, sig, sizeof *sig, "duet_signal_fetch");
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
    if (st >= DUET_OK && (cmp < DUET_CMP_EQ || cmp > DUET_CMP_LE))
        st = duet_error_set(DUET_ERR_INVALID_ARG, "%s: comparison %d is not a DUET_CMP_* value", fn, cmp);
    int gpu = st == DUET_RMA_GPU; /* a GPU word: each look is a copy */
    if (gpu) st = DUET_OK;
    if (st) return st;
    uint64_t v = 0;
    if (gpu && (st = duet_cuda_rma_read(c, &v, sig, sizeof v, fn))) return st;
    if (!gpu) v = __atomic_load_n(sig, __ATOMIC_ACQUIRE);
    if (!sig_compare(v, cmp, value)) {
        duet_waiter_t w;
        duet_waiter_init(&w, &c->wait_ctx, "%s at 0x%llx (its value %llu)", "the signal",
                         (uintptr_t)sig, (unsigned long long)v, -1);
        do {
            if ((st = duet_waiter_turn(&w))) return st;
            if (gpu && (st = duet_cuda_rma_read(c, &v, sig, sizeof v, fn))) return st;
            if (!gpu) v = __atomic_load_n(sig, __ATOMIC_ACQUIRE);
        } while (!sig_compare(v, cmp, value));
    }
    if (value_out) *value_out = v; /* the value that satisfied the wait */
    return DUET_OK;
}

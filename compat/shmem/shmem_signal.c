/*
 * shmem_signal.c — put-with-signal (typed, sized, mem; blocking and nbi; with and without a
 * context) and shmem_signal_fetch (shmem_signal_wait_until is in shmem_sync.c).
 *
 * When data and signal both lie in the symmetric heap this is duet_put_signal(_nbi) (data,
 * transport fence, signal). When either is static data, the same three steps are done here:
 * the data by shm_put, a full fence, then the signal update as a CPU atomic on the peer's
 * mapping (or duet_signal_op for a heap signal). A zero-length put still updates the signal.
 */
#include "shmem_internal.h"

static void put_signal(shmem_ctx_t ctx, void *dest, const void *src, size_t bytes, uint64_t *sig,
                       uint64_t signal, int sig_op, int pe, int nbi, const char *fn)
{
    struct duet_shmem_team *t = shm_ctx_team(ctx, fn);
    if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
        shm_die(fn, "sig_op %d is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD", sig_op);
    uint64_t *peer_sig = shm_static_peer(t, sig, sizeof *sig, pe, fn);
    int static_data = bytes && shm_static_peer(t, dest, bytes, pe, fn) != NULL;
    if (!peer_sig && !static_data) {
        shm_check(nbi ? duet_put_signal_nbi(t->comm, dest, src, bytes, sig, signal, sig_op, pe)
                      : duet_put_signal(t->comm, dest, src, bytes, sig, signal, sig_op, pe), fn);
        return;
    }
    shm_put(ctx, dest, src, bytes, pe, 0, fn);
    if (!peer_sig) {
        shm_check(duet_fence(t->comm), fn);
        shm_check(duet_signal_op(t->comm, sig, signal, sig_op, pe), fn);
        return;
    }
    if ((uintptr_t)sig % sizeof *sig) shm_die(fn, "the signal %p is not 8-byte aligned", (void *)sig);
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the data lands before the signal */
    if (sig_op == SHMEM_SIGNAL_SET) __atomic_store_n(peer_sig, signal, __ATOMIC_RELEASE);
    else __atomic_fetch_add(peer_sig, signal, __ATOMIC_RELEASE);
}

#define SHM_SIGNAL_FAMILY_(NAME, T, ES)                                                            \
    void shmem_ctx_##NAME##_signal(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sa,        \
                                   uint64_t sv, int so, int pe)                                    \
    { put_signal(c, d, s, shm_bytes(n, ES, "shmem_" #NAME "_signal"), sa, sv, so, pe, 0, "shmem_" #NAME "_signal"); } \
    void shmem_##NAME##_signal(T *d, const T *s, size_t n, uint64_t *sa, uint64_t sv, int so, int pe) \
    { shmem_ctx_##NAME##_signal(SHMEM_CTX_DEFAULT, d, s, n, sa, sv, so, pe); }                     \
    void shmem_ctx_##NAME##_signal_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sa,    \
                                       uint64_t sv, int so, int pe)                                \
    { put_signal(c, d, s, shm_bytes(n, ES, "shmem_" #NAME "_signal_nbi"), sa, sv, so, pe, 1, "shmem_" #NAME "_signal_nbi"); } \
    void shmem_##NAME##_signal_nbi(T *d, const T *s, size_t n, uint64_t *sa, uint64_t sv, int so, int pe) \
    { shmem_ctx_##NAME##_signal_nbi(SHMEM_CTX_DEFAULT, d, s, n, sa, sv, so, pe); }

#define SHM_SIGNAL_TYPED_(T, N) SHM_SIGNAL_FAMILY_(N##_put, T, sizeof(T))
#define SHM_SIGNAL_SIZED_(S) SHM_SIGNAL_FAMILY_(put##S, void, S / 8)
SHMEM_X_RMA_TYPES(SHM_SIGNAL_TYPED_)
SHMEM_X_SIZES(SHM_SIGNAL_SIZED_)
SHM_SIGNAL_FAMILY_(putmem, void, 1)

uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
    shm_require_init("shmem_signal_fetch");
    if (!sig_addr || (uintptr_t)sig_addr % 8) shm_die("shmem_signal_fetch", "bad signal address %p", (void *)sig_addr);
    return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

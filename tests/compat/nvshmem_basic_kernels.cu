/*
 * nvshmem_basic_kernels.cu — the kernels of nvshmem_basic, written against NVSHMEM's names only
 * (a second translation unit: its own copy of the device state, set by nvshmem_init).
 */
#include "nvshmem.h"
#include "nvshmemx.h"
#include "nvshmem_basic.h"

/* put and get at scope 0 thread / 1 warp / 2 block, blocking or nbi (+ quiet), to the next pe:
 * loc[i] = me * 100000 + tag * NB_N + i goes to sym on the next pe; then out = what I put there,
 * read back from the next pe with get (after a barrier). tag differs from round to round, so a
 * put that did nothing cannot pass on the previous round's data. */
__global__ void k_rma(int *sym, int *loc, int *out, int scope, int nbi, int tag)
{
    int me = nvshmem_my_pe(), peer = (me + 1) % nvshmem_n_pes();
    for (int i = threadIdx.x; i < NB_N; i += blockDim.x) loc[i] = me * 100000 + tag * NB_N + i;
    __syncthreads();
    if (scope == 0 && threadIdx.x == 0) {
        if (nbi) nvshmem_int_put_nbi(sym, loc, NB_N, peer);
        else nvshmem_int_put(sym, loc, NB_N, peer);
        nvshmem_quiet();
    } else if (scope == 1 && threadIdx.x < 32) {
        if (nbi) nvshmemx_int_put_nbi_warp(sym, loc, NB_N, peer);
        else nvshmemx_int_put_warp(sym, loc, NB_N, peer);
        nvshmem_quiet();
    } else if (scope == 2) {
        if (nbi) nvshmemx_putmem_nbi_block(sym, loc, NB_N * sizeof(int), peer);
        else nvshmemx_putmem_block(sym, loc, NB_N * sizeof(int), peer);
        nvshmem_quiet();
    }
    nvshmemx_barrier_all_block();
    if (scope == 0 && threadIdx.x == 0) {
        if (nbi) nvshmem_int_get_nbi(out, sym, NB_N, peer), nvshmem_quiet();
        else nvshmem_getmem(out, sym, NB_N * sizeof(int), peer);
    } else if (scope == 1 && threadIdx.x < 32) {
        if (nbi) nvshmemx_int_get_nbi_warp(out, sym, NB_N, peer), nvshmem_quiet();
        else nvshmemx_getmem_warp(out, sym, NB_N * sizeof(int), peer);
    } else if (scope == 2) {
        if (nbi) nvshmemx_int_get_nbi_block(out, sym, NB_N, peer), nvshmem_quiet(), __syncthreads();
        else nvshmemx_int_get_block(out, sym, NB_N, peer);
    }
    nvshmemx_barrier_all_block();
}
void nb_rma(int *sym, int *loc, int *out, int scope, int nbi, int tag, cudaStream_t s)
{
    k_rma<<<1, 128, 0, s>>>(sym, loc, out, scope, nbi, tag);
}

/* p / g of 8- and 2-byte types and a uint64 flag handshake with wait_until. */
__global__ void k_pg(double *symd, short *syms, uint64_t *symu, double *outd, short *outs)
{
    int me = nvshmem_my_pe(), n = nvshmem_n_pes(), peer = (me + 1) % n;
    nvshmem_double_p(symd, me + 0.5, peer);
    nvshmem_short_p(syms, (short)(me - 7), peer);
    nvshmem_fence();
    nvshmem_uint64_p(symu, 1, peer);
    nvshmem_uint64_wait_until(symu, NVSHMEM_CMP_EQ, 1);
    outd[0] = *symd; /* written by prev */
    outs[0] = *syms;
    nvshmem_barrier_all();
    outd[1] = nvshmem_double_g(symd, peer); /* what I put at peer */
    outs[1] = nvshmem_short_g(syms, peer);
    nvshmem_barrier_all();
}
void nb_pg(double *symd, short *syms, uint64_t *symu, double *outd, short *outs, cudaStream_t s)
{
    k_pg<<<1, 1, 0, s>>>(symd, syms, symu, outd, outs);
}

/* putmem_signal (SET or ADD) at a scope to the next pe; the receiver waits and checks the data
 * right after its signal: a missing release / acquire shows here. Then signal_op ADD 3 to the
 * next pe, and each pe waits for its 8. The host zeroes the signal before each round (and
 * barriers), and every signal that reaches me in a round (5 and 3, from the previous pe) is in
 * the 8 I wait for, so nothing of a round reaches the next one.
 * The barrier between the check and the ADD 3 is needed: the previous pe sends its 3 once it
 * has seen its own 5, which does not wait for me, so without it the 3 could land before (or
 * between) my wait and my signal_fetch, and I would see 8 where 5 is expected. */
__global__ void k_signal(int *sym, int *loc, uint64_t *sig, int scope, int add, int *bad)
{
    int me = nvshmem_my_pe(), n = nvshmem_n_pes(), peer = (me + 1) % n, prev = (me + n - 1) % n;
    int op = add ? NVSHMEM_SIGNAL_ADD : NVSHMEM_SIGNAL_SET;
    for (int i = threadIdx.x; i < NB_N; i += blockDim.x) loc[i] = me * 7 + i + add;
    __syncthreads();
    size_t bytes = NB_N * sizeof(int);
    if (scope == 0 && threadIdx.x == 0) nvshmem_putmem_signal_nbi(sym, loc, bytes, sig, 5, op, peer);
    else if (scope == 1 && threadIdx.x < 32) nvshmemx_putmem_signal_nbi_warp(sym, loc, bytes, sig, 5, op, peer);
    else if (scope == 2) nvshmemx_putmem_signal_nbi_block(sym, loc, bytes, sig, 5, op, peer);
    if (threadIdx.x == 0) {
        uint64_t v = nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, 5);
        if (v != 5) atomicAdd(bad, 1);
        for (int i = 0; i < NB_N; i++)
            if (sym[i] != prev * 7 + i + add) atomicAdd(bad, 1);
        if (nvshmem_signal_fetch(sig) != 5) atomicAdd(bad, 1);
    }
    nvshmemx_barrier_all_block(); /* every pe has checked its 5 before any 3 is sent */
    if (threadIdx.x == 0) {
        nvshmemx_signal_op(sig, 3, NVSHMEM_SIGNAL_ADD, peer);
        if (nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, 8) != 8) atomicAdd(bad, 1);
    }
    nvshmemx_barrier_all_block();
}
void nb_signal(int *sym, int *loc, uint64_t *sig, int scope, int add, int *bad, cudaStream_t s)
{
    k_signal<<<1, 128, 0, s>>>(sym, loc, sig, scope, add, bad);
}

__global__ void k_team(int team, int *out)
{
    out[0] = nvshmem_team_my_pe(team);
    out[1] = nvshmem_team_n_pes(team);
    out[2] = out[1] > 0 ? nvshmem_team_translate_pe(team, 0, NVSHMEM_TEAM_WORLD) : -1;
    if (out[1] > 0) nvshmemx_barrier_block(team);
}
void nb_team(int team, int *out, cudaStream_t s) { k_team<<<1, 64, 0, s>>>(team, out); }

/* MoE-style dispatch: every pe sends token t (NB_ROW ints) to pe (t + me) % n into the slot
 * [me][slot] of the target, slot from an atomic counter there, with put_signal adding 1 to the
 * target's counts[me]; each pe then waits for NB_TOK / n-ish tokens per source (it knows how
 * many) and checks every row. One block per pe, launched collectively. */
__global__ void k_moe(int *slots, uint64_t *counts, int *bad)
{
    __shared__ int row[NB_ROW];
    int me = nvshmem_my_pe(), n = nvshmem_n_pes();
    int *cursor = slots; /* slots[0..n): per-source cursors, rows after */
    int *rows = slots + 64;
    for (int t = 0; t < NB_TOK; t++) {
        int dst = (t + me) % n;
        for (int i = threadIdx.x; i < NB_ROW; i += blockDim.x) row[i] = me * 1000 + t * NB_ROW + i;
        __shared__ int slot;
        if (threadIdx.x == 0) slot = nvshmem_int_atomic_fetch_inc(cursor + me, dst);
        __syncthreads();
        nvshmemx_int_put_signal_nbi_block(rows + ((size_t)me * NB_TOK + slot) * NB_ROW, row, NB_ROW,
                                          counts + me, 1, NVSHMEM_SIGNAL_ADD, dst);
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        for (int src = 0; src < n; src++) {
            uint64_t expect = 0;
            for (int t = 0; t < NB_TOK; t++) expect += (t + src) % n == me;
            nvshmem_signal_wait_until(counts + src, NVSHMEM_CMP_EQ, expect);
            for (uint64_t k = 0; k < expect; k++) {
                const int *r = rows + ((size_t)src * NB_TOK + k) * NB_ROW;
                int t = (r[0] - src * 1000) / NB_ROW;
                if ((t + src) % n != me) atomicAdd(bad, 1);
                for (int i = 0; i < NB_ROW; i++)
                    if (r[i] != src * 1000 + t * NB_ROW + i) atomicAdd(bad, 1);
            }
        }
    }
    nvshmemx_barrier_all_block();
}
int nb_moe(int *slots, uint64_t *counts, int *bad, cudaStream_t s)
{
    void *args[] = {&slots, &counts, &bad};
    return nvshmemx_collective_launch((const void *)k_moe, dim3(1), dim3(128), args, 0, s);
}

/*
 * nvshmem_compile_host.cc — compile check: a plain C++ file (host compiler, no nvcc) that
 * includes Duet's NVSHMEM headers for the host calls, as the host part of a multi-file NVSHMEM
 * program does. Nothing here runs.
 */
#include "nvshmem.h"
#include "nvshmemx.h"

int nvshmem_compile_host_only(void *sym, const void *loc, uint64_t *sig)
{
    nvshmem_init();
    int pe = (nvshmem_my_pe() + 1) % nvshmem_n_pes();
    nvshmem_putmem(sym, loc, 8, pe);
    nvshmem_uint64_p(sig, 1, pe);
    nvshmemx_signal_op(sig, 1, NVSHMEM_SIGNAL_ADD, pe);
    nvshmem_quiet();
    nvshmem_barrier_all();
    int v = nvshmem_team_n_pes(NVSHMEM_TEAM_WORLD) + (int)nvshmem_signal_fetch(sig);
    nvshmem_finalize();
    return v;
}

/*
 * nvshmem_basic.h — what nvshmem_basic.cu (host) and nvshmem_basic_kernels.cu (kernels) share:
 * two translation units that both include nvshmem.h, so the test also proves that each file's
 * device state is set by nvshmem_init.
 */
#ifndef NVSHMEM_BASIC_H
#define NVSHMEM_BASIC_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

enum { NB_N = 1000, NB_TOK = 8, NB_ROW = 40 }; /* elements per transfer, MoE tokens per pe, row ints */

/* Each launches one kernel on the stream; see nvshmem_basic_kernels.cu. */
void nb_rma(int *sym, int *loc, int *out, int scope, int nbi, int tag, cudaStream_t s);
void nb_pg(double *symd, short *syms, uint64_t *symu, double *outd, short *outs, cudaStream_t s);
void nb_signal(int *sym, int *loc, uint64_t *sig, int scope, int add, int *bad, cudaStream_t s);
void nb_team(int team, int *out, cudaStream_t s);
int nb_moe(int *slots, uint64_t *counts, int *bad, cudaStream_t s);
#endif

/*
 * device_api_test.h — the kernels of test_device_api.cu as the host driver (device_api_main.c)
 * calls them: plain C, each launcher runs its kernel and (unless it says otherwise) waits
 * for it, returning the cudaError_t as an int (0 = success).
 */
#ifndef DEVICE_API_TEST_H
#define DEVICE_API_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <duet/duet_cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DK_SLOT    ((size_t)64 << 10) /* bytes of one pe's slot in a put / get region      */
#define DK_THREADS 128                /* threads per block of every test kernel            */
#define DK_PG      64                 /* bytes of one p/g slot: i32 u32 i64 u64 float double */

enum { DK_THREAD = 0, DK_WARP = 1, DK_BLOCK = 2 };

/* One transfer: len bytes from offset soff of the source slot to offset doff of the target's. */
typedef struct {
    size_t len, soff, doff;
} dk_case_t;

/* p of the six types into pg + my_pe * DK_PG on every pe q (values dk_pg_fill(me, q)). */
int dk_pg_put(duet_device_comm_t h, char *pg);
/* g of pe q's slot pg + my_pe * DK_PG (six values) into out + q * DK_PG, for every q. */
int dk_pg_get(duet_device_comm_t h, const char *pg, char *out);
/* The slot that pe `from` writes into pe `to`'s p/g area: the six values at their offsets. */
void dk_pg_fill(unsigned char slot[DK_PG], int from, int to);

/* Put (get = 0): for every pe q, cases[q] from src + q * DK_SLOT + soff to region + my_pe *
 * DK_SLOT + doff on q. Get (get = 1): cases[q] from region + soff on q to dst + q * DK_SLOT +
 * doff. scope DK_THREAD / DK_WARP / DK_BLOCK; nbi: the _nbi form and a quiet at the end. */
int dk_xfer(duet_device_comm_t h, int get, int scope, int nbi, char *region, char *local,
            const dk_case_t *cases_dev);

/* put_signal, sender and receiver at once (block 0 sends, block 1 receives): for every pe q,
 * cases[q] from src + q * DK_SLOT to regA + my_pe * DK_SLOT on q with signal sig[my_pe] := round
 * (SET), and the same into regB with sigadd += my_pe + 1 (ADD). Block 1 waits for sig[s] ==
 * round for each s and compares regA's slot s with expect + s * DK_SLOT, then waits for
 * sigadd >= add_total and compares regB. Mismatching bytes are added to *errors, failed waits'
 * statuses stored in *status. */
int dk_signal(duet_device_comm_t h, int scope, int nbi, char *regA, char *regB, const char *src,
              uint64_t *sig, uint64_t *sigadd, const dk_case_t *cases_dev, const char *expect,
              uint64_t round, uint64_t add_total, unsigned long long *errors, int *status);

/* fence + signal_op (see the kernel): p, fence, signal_op SET / ADD to every pe; the receiving
 * block checks the data after each signal and the ADD total exactly (duet_dev_test). */
int dk_fence(duet_device_comm_t h, uint64_t *fdata, uint64_t *fsig, uint64_t *fadd, uint64_t round,
             unsigned long long *errors, int *status);

/* Contention: every thread of 2 blocks x DK_THREADS does `iters` rounds of atomics on pe
 * target's counters ctr (see the kernel); sums[k] receives the sum of the values fetched by
 * this rank for counter k. Then every rank adds 1 to the int32 ctr[done] on pe target and the
 * target waits for it to reach n_pes (status in *status). */
int dk_atomics(duet_device_comm_t h, char *ctr, int target, int iters, unsigned long long *sums,
               int *status);
/* Single atomics of one thread on every pe q's words sw + my_pe * 16: swap / fetch / set /
 * compare_swap (fail, then succeed) on a uint64 and an int32; mismatches into *errors. */
int dk_atomic_single(duet_device_comm_t h, char *sw, unsigned long long *errors);
/* The values the single test leaves in pe `to`'s slot from pe `from`. */
uint64_t dk_single_u64(int from, int to);
int32_t dk_single_i32(int from, int to);

/* iters barriers at `scope`, each preceded by p(base + i) into ring[(base + i) & 1] on the
 * right neighbour and followed by a check of my ring word from the left one. */
int dk_barrier(duet_device_comm_t h, int scope, int iters, uint64_t base, uint64_t *ring,
               unsigned long long *errors, int *status);

/* Launches (does not wait) a kernel that sets *started_host (mapped host memory) and then
 * waits for sig == value, which never comes; its status goes to *status. */
int dk_abort_launch(duet_device_comm_t h, uint64_t *sig, uint64_t value, volatile int *started_dev,
                    int *status);

#ifdef __cplusplus
}
#endif
#endif

/*
 * shmem_deprecated.c — the 1.3/1.4-era calls, written the way published programs use them:
 * start_pes, _my_pe, _num_pes, shmalloc, pSync / pWrk arrays in globals initialised to
 * SHMEM_SYNC_VALUE, active sets (the whole world, a strided subset, and strides 4 and 8 with
 * disjoint sets sharing a pSync reused call after call), broadcast32/64,
 * collect, fcollect, alltoall(s), *_to_all reductions, barrier / sync with triplets, and the
 * old atomic names. Large *_to_all (from 16 KiB each member folds a part and fetches the
 * others': shmem_active.c): int sum in place and double max out of place, odd lengths (parts
 * of unequal size), on the world and on PEs 1, 3, 5, ..., every element checked.
 */
#include "shmem_test.h"

static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pSync2[SHMEM_BCAST_SYNC_SIZE];
static double pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long long pWrkll[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int src32[32], dst32[64];
static long src64[32], dst64[64];
static double dsrc[4], ddst[4];
static long long llsrc[3], lldst[3];
static short ssrc[2], sdst[2];
static int counter;

static int me, npes;

/* one active set: PE_start, 2^log_stride, size */
static void active(int start, int log_stride, int size)
{
    int stride = 1 << log_stride, idx = (me - start) / stride;
    if (me < start || (me - start) % stride || idx >= size) return;
    for (int i = 0; i < 32; i++) src32[i] = me * 100 + i, src64[i] = me * 1000 + i;
    for (int i = 0; i < 64; i++) dst32[i] = -1, dst64[i] = -1;
    shmem_barrier(start, log_stride, size, pSync);
    int root = size - 1;
    shmem_broadcast32(dst32, src32, 5, root, start, log_stride, size, pSync2);
    shmem_broadcast64(dst64, src64, 5, 0, start, log_stride, size, pSync);
    for (int i = 0; i < 5; i++) {
        if (idx != root) ST_EXPECT(dst32[i] == (start + root * stride) * 100 + i, "broadcast32 [%d]", i);
        else ST_EXPECT(dst32[i] == -1, "broadcast32 wrote the root's dest");
        if (idx != 0) ST_EXPECT(dst64[i] == start * 1000 + i, "broadcast64 [%d]", i);
    }
    shmem_fcollect64(dst64, src64, 2, start, log_stride, size, pSync);
    for (int p = 0; p < size; p++)
        ST_EXPECT(dst64[2 * p + 1] == (start + p * stride) * 1000 + 1, "fcollect64 [%d]", p);
    shmem_collect32(dst32, src32, (size_t)(idx % 2 + 1), start, log_stride, size, pSync2);
    for (int p = 0, at = 0; p < size; p++)
        for (int i = 0; i <= p % 2; i++, at++) ST_EXPECT(dst32[at] == (start + p * stride) * 100 + i, "collect32 [%d]", at);
    shmem_alltoall32(dst32, src32, 1, start, log_stride, size, pSync);
    for (int p = 0; p < size; p++) ST_EXPECT(dst32[p] == (start + p * stride) * 100 + idx, "alltoall32 [%d]", p);
    shmem_alltoalls64(dst64, src64, 1, 2, 1, start, log_stride, size, pSync);
    for (int p = 0; p < size; p++) ST_EXPECT(dst64[p] == (start + p * stride) * 1000 + idx * 2, "alltoalls64 [%d]", p);
    /* reductions, dest == source for the int sum */
    for (int i = 0; i < 4; i++) dsrc[i] = me * 0.5 + i, src32[i] = me + i;
    llsrc[0] = 2, llsrc[1] = me + 1, llsrc[2] = -1;
    ssrc[0] = (short)(0x0F0F | (1 << (me % 8))), ssrc[1] = 0x00FF;
    shmem_int_sum_to_all(src32, src32, 4, start, log_stride, size, (int *)pWrk, pSync);
    shmem_double_max_to_all(ddst, dsrc, 4, start, log_stride, size, pWrk, pSync2);
    shmem_longlong_prod_to_all(lldst, llsrc, 3, start, log_stride, size, pWrkll, pSync);
    shmem_short_and_to_all(sdst, ssrc, 2, start, log_stride, size, (short *)pWrk, pSync2);
    long long prod = 1;
    int sum0 = 0;
    for (int p = 0; p < size; p++) prod *= start + p * stride + 1, sum0 += start + p * stride;
    ST_EXPECT(src32[0] == sum0 && src32[3] == sum0 + 3 * size, "int_sum_to_all %d, want %d", src32[0], sum0);
    ST_EXPECT(ddst[2] == (start + (size - 1) * stride) * 0.5 + 2, "double_max_to_all %g", ddst[2]);
    ST_EXPECT(lldst[0] == (1LL << size) && lldst[1] == prod && lldst[2] == (size % 2 ? -1 : 1), "longlong_prod_to_all");
    ST_EXPECT(sdst[1] == 0x00FF && (sdst[0] & 0x0F0F) == 0x0F0F, "short_and_to_all %x", sdst[0]);
    shmem_sync(start, log_stride, size, pSync);
}

/* Active sets with stride 4 and 8 (log_PE_stride 2 and 3), several disjoint sets at once
 * sharing one pSync, reused at once across ROUNDS calls of each kind. */
#define ROUNDS 5
static long pSyncR[SHMEM_REDUCE_SYNC_SIZE];
static long rsrc[4], rdst[4 * 16];
static int isrc[2], idst[2];
static void strided_reuse(int log_stride)
{
    int stride = 1 << log_stride;
    for (int start = 0; start < stride && start < npes; start++) {
        if ((me - start) % stride != 0 || me < start) continue; /* my set: start = me % stride */
        int size = (npes - 1 - start) / stride + 1, idx = (me - start) / stride;
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < 4; i++) rsrc[i] = me * 100 + round * 10 + i;
            shmem_barrier(start, log_stride, size, pSyncR);
            shmem_broadcast64(rdst, rsrc, 4, size - 1, start, log_stride, size, pSyncR);
            if (idx != size - 1)
                for (int i = 0; i < 4; i++)
                    ST_EXPECT(rdst[i] == (start + (size - 1) * stride) * 100 + round * 10 + i,
                              "stride %d round %d broadcast64 [%d] = %ld", stride, round, i, rdst[i]);
            shmem_fcollect64(rdst, rsrc, 1, start, log_stride, size, pSyncR);
            for (int p = 0; p < size; p++)
                ST_EXPECT(rdst[p] == (start + p * stride) * 100 + round * 10, "stride %d round %d fcollect64 [%d] = %ld",
                          stride, round, p, rdst[p]);
            isrc[0] = me + round, isrc[1] = -me;
            shmem_int_sum_to_all(idst, isrc, 1, start, log_stride, size, (int *)pWrk, pSyncR);
            shmem_int_min_to_all(idst + 1, isrc + 1, 1, start, log_stride, size, (int *)pWrk, pSyncR);
            int sum = 0;
            for (int p = 0; p < size; p++) sum += start + p * stride + round;
            ST_EXPECT(idst[0] == sum && idst[1] == -(start + (size - 1) * stride), "stride %d round %d to_all %d %d, want %d",
                      stride, round, idst[0], idst[1], sum);
            shmem_sync(start, log_stride, size, pSyncR);
        }
    }
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) ST_EXPECT(pSyncR[i] == SHMEM_SYNC_VALUE, "pSyncR[%d] restored", i);
    shmem_barrier_all();
}

/* Large reductions on the set (start, log_stride, size); every member calls. */
enum { BIG = 10007 }; /* ints: 40 KB, past the split; odd, so the parts differ in size */
static long pSyncB[SHMEM_REDUCE_SYNC_SIZE];
static int bigi[BIG];
static double bigd[BIG], bigo[BIG], pWrkB[BIG / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static void big_to_all(int start, int log_stride, int size)
{
    int stride = 1 << log_stride, idx = (me - start) / stride;
    if (me < start || (me - start) % stride || idx >= size) return;
    for (int n = BIG - 6; n <= BIG; n += 3) { /* 10001, 10004, 10007 */
        for (int i = 0; i < n; i++) bigi[i] = (i * 7 + me) % 101, bigd[i] = (double)((i * 13 + me * 5) % 97), bigo[i] = -1;
        shmem_int_sum_to_all(bigi, bigi, n, start, log_stride, size, (int *)pWrkB, pSyncB);
        shmem_double_max_to_all(bigo, bigd, n, start, log_stride, size, pWrkB, pSyncB);
        int wrong_i = 0, wrong_d = 0, first_i = -1, first_d = -1;
        for (int i = 0; i < n; i++) {
            int sum = 0;
            double most = -1;
            for (int p = 0; p < size; p++) {
                int pe = start + p * stride;
                sum += (i * 7 + pe) % 101;
                double v = (double)((i * 13 + pe * 5) % 97);
                most = v > most ? v : most;
            }
            if (bigi[i] != sum && wrong_i++ == 0) first_i = i;
            if (bigo[i] != most && wrong_d++ == 0) first_d = i;
        }
        ST_EXPECT(wrong_i == 0, "set (%d, %d, %d): int_sum_to_all of %d in place: %d wrong, the first [%d]", start,
                  stride, size, n, wrong_i, first_i);
        ST_EXPECT(wrong_d == 0, "set (%d, %d, %d): double_max_to_all of %d: %d wrong, the first [%d]", start, stride,
                  size, n, wrong_d, first_d);
    }
}

int main(int argc, char **argv)
{
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSyncR[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSyncB[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) pSync2[i] = SHMEM_SYNC_VALUE;
    start_pes(0);
    st_seed(argc, argv);
    me = _my_pe(), npes = _num_pes();
    active(0, 0, npes);                         /* the world */
    shmem_barrier_all();
    if (npes >= 3) active(1, 1, (npes - 1 + 1) / 2); /* PEs 1, 3, 5, ... */
    shmem_barrier_all();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) ST_EXPECT(pSync[i] == SHMEM_SYNC_VALUE, "pSync[%d] restored", i);
    strided_reuse(2); /* 6 PEs: {0, 4} {1, 5} {2} {3}; 9 PEs: {0, 4, 8} {1, 5} ... */
    strided_reuse(3); /* 9 PEs: {0, 8} and seven of one */
    big_to_all(0, 0, npes);
    shmem_barrier_all();
    if (npes >= 3) big_to_all(1, 1, npes / 2); /* PEs 1, 3, 5, ... */
    shmem_barrier_all();

    /* the old atomic names, all on PE 0's counter */
    shmem_int_inc(&counter, 0);
    shmem_int_add(&counter, 2, 0);
    (void)shmem_int_finc(&counter, 0);
    (void)shmem_int_fadd(&counter, 4, 0);
    shmem_barrier_all();
    if (me == 0) ST_EXPECT(counter == 8 * npes, "old atomics %d", counter);
    shmem_barrier_all();
    long *l = shmalloc(sizeof(long));
    *l = 0;
    shmem_barrier_all();
    if (me == 0) {
        ST_EXPECT(shmem_long_cswap(l, 0, 5, npes - 1) == 0 && shmem_long_swap(l, 6, npes - 1) == 5, "cswap/swap");
        ST_EXPECT(shmem_swap(l, 7, npes - 1) == 6 && shmem_long_fetch(l, npes - 1) == 7, "shmem_swap");
        shmem_double_set((double *)(void *)ddst, 1.5, 0);
        ST_EXPECT(shmem_double_fetch(ddst, 0) == 1.5, "double set/fetch");
    }
    shmem_barrier_all();
    shfree(l);
    /* the 1.3 generic names pick by the target's type: a swap on a 32-bit int exchanges 32 bits
     * (its neighbour untouched), and every name works on int, long, long long (and float,
     * double for swap / fetch / set) */
    int *pair = shmalloc(2 * sizeof(int));
    long long *ll = shmalloc(sizeof(long long));
    double *dd = shmalloc(sizeof(double));
    pair[0] = 0, pair[1] = 0x5a5a5a5a, *ll = 0, *dd = 0;
    shmem_barrier_all();
    if (me == 0) {
        int tgt = npes - 1;
        ST_EXPECT(shmem_swap(&pair[0], 11, tgt) == 0 && shmem_fetch(&pair[0], tgt) == 11 &&
                      shmem_fetch(&pair[1], tgt) == 0x5a5a5a5a,
                  "generic swap on int: %d, the next int %x", shmem_int_fetch(&pair[0], tgt),
                  (unsigned)shmem_int_fetch(&pair[1], tgt));
        ST_EXPECT(shmem_cswap(&pair[0], 11, 12, tgt) == 11 && shmem_finc(&pair[0], tgt) == 12, "generic cswap/finc int");
        shmem_inc(&pair[0], tgt);
        shmem_add(&pair[0], 10, tgt);
        ST_EXPECT(shmem_fadd(&pair[0], 1, tgt) == 24 && shmem_fetch(&pair[0], tgt) == 25, "generic add/inc/fadd int");
        shmem_set(ll, 1LL << 40, tgt);
        shmem_add(ll, 3LL, tgt);
        ST_EXPECT(shmem_swap(ll, 9LL, tgt) == (1LL << 40) + 3 && shmem_fetch(ll, tgt) == 9LL, "generic long long");
        shmem_set(dd, 2.25, tgt);
        ST_EXPECT(shmem_swap(dd, 4.5, tgt) == 2.25 && shmem_fetch(dd, tgt) == 4.5, "generic double swap/set/fetch");
        ST_EXPECT(shmem_fetch(&pair[1], tgt) == 0x5a5a5a5a, "the neighbouring int changed");
    }
    shmem_barrier_all();
    shfree(dd);
    shfree(ll);
    shfree(pair);
    shmem_clear_cache_inv();
    shmem_udcflush();
    int rc = st_finish();
    shmem_finalize();
    return rc;
}

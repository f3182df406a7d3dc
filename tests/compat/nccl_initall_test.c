/*
 * nccl_initall_test.c — ncclCommInitAll: NRANKS ranks in this one process, driven from one
 * thread as NCCL programs drive several GPUs: each round of calls inside ncclGroupStart /
 * ncclGroupEnd (allreduce, a ring of sends and receives), then ncclCommDestroy one after the
 * other (Duet destroys the clique's ranks together when the last is destroyed).
 *
 * usage: nccl_initall_test NRANKS [seed=N]
 */
#include "nccl_test_util.h"

static int run(int n)
{
    ncclComm_t *comms = calloc((size_t)n, sizeof *comms);
    NCCL_OK(ncclCommInitAll(comms, n, NULL));
    for (int i = 0; i < n; i++) {
        int cnt = -1, rk = -1;
        NCCL_OK(ncclCommCount(comms[i], &cnt));
        NCCL_OK(ncclCommUserRank(comms[i], &rk));
        EXPECT(cnt == n && rk == i, "comm %d: count %d rank %d", i, cnt, rk);
    }
    size_t c = 1237;
    float *in = malloc(sizeof(float) * c * (size_t)n), *out = malloc(sizeof(float) * c * (size_t)n);
    float *ring = malloc(sizeof(float) * c * (size_t)n);
    for (int round = 0; round < 3; round++) {
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < c; i++) in[(size_t)r * c + i] = (float)nt_value((uint64_t)round, r, i, 0, 7);
        NCCL_OK(ncclGroupStart());
        for (int r = 0; r < n; r++)
            NCCL_OK(ncclAllReduce(in + (size_t)r * c, out + (size_t)r * c, c, ncclFloat32, ncclSum, comms[r], nt_stream));
        NCCL_OK(ncclGroupEnd());
        NCCL_OK(ncclGroupStart());
        for (int r = 0; r < n; r++) {
            NCCL_OK(ncclSend(in + (size_t)r * c, c, ncclFloat32, (r + 1) % n, comms[r], nt_stream));
            NCCL_OK(ncclRecv(ring + (size_t)r * c, c, ncclFloat32, (r + n - 1) % n, comms[r], nt_stream));
        }
        NCCL_OK(ncclGroupEnd());
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < c; i++) {
                float want = 0;
                for (int q = 0; q < n; q++) want += (float)nt_value((uint64_t)round, q, i, 0, 7);
                int from = (r + n - 1) % n;
                if (out[(size_t)r * c + i] != want || ring[(size_t)r * c + i] != in[(size_t)from * c + i]) {
                    FAIL("round %d rank %d element %zu: allreduce %g (want %g), ring %g", round, r, i,
                         out[(size_t)r * c + i], want, ring[(size_t)r * c + i]);
                    r = n;
                    break;
                }
            }
    }
    for (int r = 0; r < n; r++) NCCL_OK(ncclCommDestroy(comms[r]));
    free(in), free(out), free(ring), free(comms);
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0;
    if (n < 1) return fprintf(stderr, "usage: %s NRANKS [seed=N]\n", argv[0]), 2;
    nt_pick_seed(argc, argv);
    nt_rank = 0, nt_nranks = n;
    signal(SIGALRM, nt_on_alarm);
    alarm(120);
    int rc = run(n);
    return rc || nt_failures ? 1 : 0;
}

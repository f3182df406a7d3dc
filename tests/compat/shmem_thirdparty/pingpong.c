/* pingpong.c — a latency loop in the style of the classic benchmarks: PE 0 and PE 1 bounce a
 * message with shmem_long_put, each waiting on a static flag (shmem_long_wait_until) that the
 * other sets after the data (ordered by shmem_fence). Checks every message; prints the mean
 * one-way latency. */
#include <stdio.h>
#include <sys/time.h>
#include <shmem.h>

#define ITERS 2000
#define LEN 8

long msg[LEN];
long flag;

static double now_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec * 1e6 + tv.tv_usec;
}

int main(void)
{
    long buf[LEN];
    int i, j, me, npes, errors = 0;
    double t0, t1;
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (npes < 2) {
        if (me == 0) printf("pingpong: needs 2 PEs\n");
        shmem_finalize();
        return 0;
    }
    shmem_barrier_all();
    t0 = now_us();
    for (i = 1; i <= ITERS; i++) {
        if (me == 0) {
            for (j = 0; j < LEN; j++) buf[j] = i * 100 + j;
            shmem_long_put(msg, buf, LEN, 1);
            shmem_fence();
            shmem_long_p(&flag, i, 1);
            shmem_long_wait_until(&flag, SHMEM_CMP_EQ, i);
            for (j = 0; j < LEN; j++)
                if (msg[j] != -(i * 100 + j)) errors++;
        } else if (me == 1) {
            shmem_long_wait_until(&flag, SHMEM_CMP_EQ, i);
            for (j = 0; j < LEN; j++) {
                if (msg[j] != i * 100 + j) errors++;
                buf[j] = -msg[j];
            }
            shmem_long_put(msg, buf, LEN, 0);
            shmem_fence();
            shmem_long_p(&flag, i, 0);
        }
    }
    t1 = now_us();
    shmem_barrier_all();
    if (me < 2) printf("pingpong: PE %d: %d round trips, %.2f us one way, %d errors\n", me, ITERS,
                       (t1 - t0) / ITERS / 2, errors);
    shmem_finalize();
    return errors ? 1 : 0;
}

/*
 * test_cuda_absent.c — the CUDA calls where no GPU heap exists, as `make test` sees them on
 * a CPU-only machine (the CUDA backend built or not). Run under duetrun at any rank count.
 *
 *   test_cuda_absent        no GPU here (or none usable): duet_cuda_available() == 0; on a
 *                           machine with a GPU, checks the heap exists instead
 *   DUET_CUDA=off           the same checks as without a GPU, whatever the machine has
 *
 * Without a GPU heap: duet_cuda_device == -1; duet_malloc_device -> NULL with
 * DUET_ERR_UNSUPPORTED and a message naming the call; duet_device_comm_get ->
 * DUET_ERR_UNSUPPORTED; the host heap still works (duet_malloc, duet_ptr, duet_free), and
 * duet_free of a host block is not confused with the GPU heap.
 */
#include "duet_test.h"

#include <duet/duet_cuda.h>
#include <stdio.h>
#include <string.h>

static void check_absent(duet_comm_t W)
{
    EXPECT(duet_cuda_available() == 0, "duet_cuda_available() says a GPU can be used");
    EXPECT(duet_cuda_device(W) == -1, "duet_cuda_device = %d", duet_cuda_device(W));
    dt_prime_error();
    void *p = duet_malloc_device(W, 4096);
    EXPECT(p == NULL, "duet_malloc_device returned %p", p);
    EXPECT(duet_last_status() == DUET_ERR_UNSUPPORTED, "status %s", duet_status_str(duet_last_status()));
    EXPECT(strstr(duet_last_error(), "duet_malloc_device") != NULL, "message: %s", duet_last_error());
    duet_device_comm_t h;
    duet_status_t st = duet_device_comm_get(W, &h);
    EXPECT(st == DUET_ERR_UNSUPPORTED, "duet_device_comm_get -> %s", duet_status_str(st));
    EXPECT(duet_last_error()[0] != 0, "duet_device_comm_get: no message");
}

int main(void)
{
    CHECK_OK(duet_init());
    int me, npes;
    duet_comm_t W = dt_world(&me, &npes);
    if (duet_cuda_available()) {
        /* a GPU machine: the world has a GPU heap */
        EXPECT(duet_cuda_device(W) >= 0, "a GPU is available but duet_cuda_device = -1");
        void *p = duet_malloc_device(W, 4096);
        EXPECT(p != NULL, "duet_malloc_device(4096) with a GPU");
        EXPECT_OK(duet_free(W, p));
    } else {
        check_absent(W);
    }
    /* the host heap is untouched */
    long *x = duet_malloc(W, sizeof(long) * (size_t)npes);
    CHECK(x != NULL, "duet_malloc");
    x[me] = me;
    long *peer = duet_ptr(W, x, (me + 1) % npes);
    CHECK(peer != NULL, "duet_ptr to the next rank");
    EXPECT_BARRIER_ALL("after duet_ptr");
    EXPECT_OK(duet_free(W, x));
    CHECK_OK(duet_finalize());
    return dt_finish();
}

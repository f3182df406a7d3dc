/*
 * gpu_host_cost.cu — what each CUDA runtime call a GPU collective makes on the host costs
 * (issue 22: the host's time to queue one call). Times, in one process, N calls of each:
 * cudaSetDevice (to the current device), cudaGetDevice, cudaGetLastError,
 * cudaPointerGetAttributes (device memory), cudaEventRecord, cudaStreamWaitEvent, and the
 * launch of an empty kernel whose argument is 256 bytes (the size of the collectives'
 * argument blocks), on a non-blocking stream; the stream is synchronised every 256 launches so
 * that the queue never fills. Prints the median of 7 repetitions per call, in microseconds.
 *
 * Usage: gpu_host_cost [N]   (run it under scripts/with-mps.sh, alone or beside another copy,
 * to see the cost under MPS)
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct args256 {
    char b[256];
};
__global__ void empty_kernel(args256 a)
{
    if (a.b[0] == 123 && threadIdx.x == 1000) printf("never\n");
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define OK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    cudaStream_t s, s2;
    cudaEvent_t ev;
    void *d;
    OK(cudaSetDevice(0));
    OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    OK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    OK(cudaMalloc(&d, 1 << 20));
    args256 a = {};
    const char *names[] = {"cudaSetDevice", "cudaGetDevice", "cudaGetLastError", "cudaPointerGetAttributes",
                           "cudaEventRecord", "cudaStreamWaitEvent", "kernel launch (256 B args)",
                           "launch + cudaEventRecord"};
    const int ncase = sizeof names / sizeof names[0];
    for (int c = 0; c < ncase; c++) {
        double rep[7];
        for (int r = 0; r < 7; r++) {
            OK(cudaStreamSynchronize(s));
            double t0 = now_us(), synced = 0;
            for (int i = 0; i < n; i++) {
                int dev;
                cudaPointerAttributes at;
                switch (c) {
                case 0: OK(cudaSetDevice(0)); break;
                case 1: OK(cudaGetDevice(&dev)); break;
                case 2: (void)cudaGetLastError(); break;
                case 3: OK(cudaPointerGetAttributes(&at, d)); break;
                case 4: OK(cudaEventRecord(ev, s)); break;
                case 5: OK(cudaStreamWaitEvent(s2, ev, 0)); break;
                case 6: empty_kernel<<<1, 32, 0, s>>>(a); break;
                default: empty_kernel<<<1, 32, 0, s>>>(a); OK(cudaEventRecord(ev, s)); break;
                }
                if (c >= 6 && (i & 255) == 255) { /* keep the queue short; not counted */
                    double t1 = now_us();
                    OK(cudaStreamSynchronize(s));
                    synced += now_us() - t1;
                }
            }
            rep[r] = (now_us() - t0 - synced) / n;
        }
        qsort(rep, 7, sizeof rep[0], cmp);
        printf("%-28s %7.3f us (min %.3f, max %.3f)\n", names[c], rep[3], rep[0], rep[6]);
    }
    OK(cudaStreamSynchronize(s));
    return 0;
}

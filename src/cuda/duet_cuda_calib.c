/*
 * The tuner's alpha and beta for the GPU executor, measured like the CPU's
 * (src/coll/duet_coll_calib.c): from the host's GPU tune file (the CPU file's name with "-gpu"),
 * else measured once, by the first GPU collective of a communicator of two ranks or more, and
 * written there. Rank 0 reads or measures and broadcasts, so every rank picks alike.
 *
 * The measurement is what the executor does: ranks 0 and 1 bounce 8-byte messages with
 * duet_send / duet_recv on GPU buffers and one stream, PINGS round trips back to back (alpha =
 * half a round trip: a launch, a flag handshake), then rank 0 sends STREAM_BYTES STREAMS times
 * (beta = bytes / (time - alpha) per message, copy into the inbox and out included). Every rank
 * first joins a one-float broadcast, which sets up the GPU collective state collectively; while
 * measuring, the model is the defaults (the calls made then are costed with them).
 */
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include "coll/duet_coll_tune.h"
#include "cuda/duet_cuda_coll.h"
#include "cuda/duet_cuda_driver.h"
#include "cuda/duet_cuda_exec_kern.h"

#define DEFAULT_ALPHA_US 3.0    /* a launch and a handshake */
#define DEFAULT_BETA_GBPS 400.0 /* bytes per ns */
#define PINGS 200
#define STREAMS 8
#define STREAM_BYTES ((size_t)16 << 20)

static duet_status_t measure(duet_comm_t c, duet_coll_model_t *m)
{
    float *buf = NULL;
    cudaStream_t s = NULL;
    cudaError_t err = cudaMalloc((void **)&buf, STREAM_BYTES);
    if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    duet_status_t st = err ? DUET_CUDA_FAIL_RT(err, "GPU calibration: buffers") : DUET_OK;
    if (st == DUET_OK) st = duet_broadcast(buf, buf, 1, DUET_FLOAT32, 0, c, s); /* collective set-up */
    if (st == DUET_OK && (err = cudaStreamSynchronize(s))) st = DUET_CUDA_FAIL_RT(err, "GPU calibration");
    double t0 = 0, t1 = 0, t2 = 0;
    if (st == DUET_OK && c->rank <= 1) {
        int peer = 1 - c->rank;
        t0 = (double)duet_time_ns();
        for (int i = 0; i < PINGS && st == DUET_OK; i++) {
            if (c->rank == 0 && (st = duet_send(buf, 2, DUET_FLOAT32, peer, c, s))) break;
            if ((st = duet_recv(buf, 2, DUET_FLOAT32, peer, c, s))) break;
            if (c->rank == 1) st = duet_send(buf, 2, DUET_FLOAT32, peer, c, s);
        }
        if (st == DUET_OK && (err = cudaStreamSynchronize(s))) st = DUET_CUDA_FAIL_RT(err, "GPU calibration");
        t1 = (double)duet_time_ns();
        size_t count = STREAM_BYTES / sizeof(float);
        for (int i = 0; i < STREAMS && st == DUET_OK; i++)
            st = c->rank == 0 ? duet_send(buf, count, DUET_FLOAT32, 1, c, s) : duet_recv(buf, count, DUET_FLOAT32, 0, c, s);
        if (st == DUET_OK && (err = cudaStreamSynchronize(s))) st = DUET_CUDA_FAIL_RT(err, "GPU calibration");
        t2 = (double)duet_time_ns();
    }
    if (s) cudaStreamDestroy(s);
    if (buf) cudaFree(buf);
    if (st) return st;
    if (c->rank == 0) {
        m->alpha_us = (t1 - t0) * 1e-3 / PINGS / 2;
        double per = (t2 - t1) * 1e-3 / STREAMS - m->alpha_us;
        m->beta_gbps = (double)STREAM_BYTES / (per > 0 ? per : 1) * 1e-3;
    }
    return DUET_OK;
}

duet_status_t duet_cuda_coll_model(duet_comm_t c, duet_coll_model_t *out)
{
    if (c->gpu_model_ready) {
        *out = c->gpu_model;
        return DUET_OK;
    }
    /* the executor's calls run one kernel after another: costed as one of a stream
     * (duet_coll_predict.h; the tune file's terms fitted so, stream=1) */
    duet_coll_model_t m = {.alpha_us = DEFAULT_ALPHA_US, .beta_gbps = DEFAULT_BETA_GBPS, .stream = 1,
                           .slots = DUET_CUDA_EXEC_SLOTS};
    int32_t measure_it = 0;
    char path[512];
    duet_coll_layout_t lay;
    duet_status_t lst = duet_coll_layout_get(c, &lay);
    if (lst) return lst;
    if (c->rank == 0 && duet_coll_tune_file_read("gpu", &lay, &m, path, sizeof path) != 0) {
        m = (duet_coll_model_t){.alpha_us = DEFAULT_ALPHA_US, .beta_gbps = DEFAULT_BETA_GBPS, .stream = 1,
                                .slots = DUET_CUDA_EXEC_SLOTS};
        measure_it = c->size >= 2;
    }
    duet_status_t st = duet_boot_bcast(&c->boot, &measure_it, sizeof measure_it);
    if (st == DUET_OK && measure_it) {
        c->gpu_model = m; /* the defaults while measuring */
        c->gpu_model_ready = 1;
        st = measure(c, &m);
        c->gpu_model_ready = 0;
        if (st == DUET_OK && c->rank == 0) duet_coll_tune_file_write("gpu", &lay, &m);
    }
    if (st == DUET_OK) st = duet_boot_bcast(&c->boot, &m, sizeof m);
    if (st) return st;
    DUET_LOG(INFO, TUNE, "gpu model: alpha %.3f us per message, beta %.2f GB/s%s", m.alpha_us, m.beta_gbps,
             measure_it ? " (measured now)" : "");
    c->gpu_model = m;
    c->gpu_model_ready = 1;
    *out = m;
    return DUET_OK;
}

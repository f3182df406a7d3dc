/*
 * The tuner's alpha and beta: what one message and one byte cost on this host's channels.
 *
 * Where they come from, in order: DUET_TUNE_ALPHA_US / DUET_TUNE_BETA_GBPS if set; the
 * host's tune file (DUET_TUNE_FILE; by default under $XDG_CACHE_HOME/duet or ~/.cache/duet,
 * else /tmp); else a measurement, made once on the first communicator that needs it and
 * written to the file: ranks 0 and 1 bounce 8-byte messages (alpha = half a round trip)
 * and stream chunk-sized messages (beta = time per byte, copy in and out included).
 * Rank 0 decides and broadcasts, so every rank of a communicator uses the same numbers and
 * the tuner picks the same algorithm everywhere. `duet-perf --calibrate` measures anew.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "coll/duet_coll_tune.h"

#define DEFAULT_ALPHA_US 0.5
#define DEFAULT_BETA_GBPS 8.0

/* The tune file of `kind` ("" the CPU channels; "gpu" the GPU executor: "-gpu" appended). */
static void tune_path(const char *kind, char *out, size_t len)
{
    const char *set = duet_cfg()->tune_file, *dash = kind[0] ? "-" : "";
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    if (set[0]) {
        snprintf(out, len, "%s%s%s", set, dash, kind);
        return;
    }
    const char *xdg = duet_foreign_env("XDG_CACHE_HOME"), *home = duet_foreign_env("HOME");
    if (xdg && xdg[0]) snprintf(out, len, "%s/duet/tune-%s%s%s.txt", xdg, host, dash, kind);
    else if (home && home[0]) snprintf(out, len, "%s/.cache/duet/tune-%s%s%s.txt", home, host, dash, kind);
    else snprintf(out, len, "/tmp/duet-tune-%d-%s%s%s.txt", (int)getuid(), host, dash, kind);
}

int duet_coll_tune_file_read(const char *kind, duet_coll_model_t *m, char *path, size_t len)
{
    tune_path(kind, path, len);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fscanf(f, "alpha_us %lf beta_gbps %lf", &m->alpha_us, &m->beta_gbps) == 2;
    fclose(f);
    return ok && m->alpha_us > 0 && m->beta_gbps > 0 ? 0 : -1;
}

static void mkdirs_for(const char *path)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
}

void duet_coll_tune_file_write(const char *kind, const duet_coll_model_t *m)
{
    char path[512], tmp[600];
    tune_path(kind, path, sizeof path);
    mkdirs_for(path);
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return; /* a cache only: without it, the next run measures again */
    fprintf(f, "alpha_us %.4f beta_gbps %.4f\n# measured by duet on the %s; delete to measure again\n",
            m->alpha_us, m->beta_gbps, kind[0] ? "GPU executor" : "shm transport");
    if (fclose(f) == 0 && rename(tmp, path) == 0)
        DUET_LOG(INFO, TUNE, "wrote %s: alpha %.3f us, beta %.2f GB/s", path, m->alpha_us, m->beta_gbps);
    else
        unlink(tmp);
}

/* Blocking send / receive of one message on the channels, for the measurement. */
static duet_status_t send_msg(duet_comm_t c, int peer, const void *buf, size_t len)
{
    duet_waiter_t w;
    duet_waiter_init(&w, &c->wait_ctx, "%s to rank %llu", "calibration message", (unsigned long long)peer, 0, peer);
    int sent;
    while ((sent = duet_coll_chan_try_send(c, c->chan, peer, buf, len, 0)) == 0) {
        duet_status_t st = duet_waiter_turn(&w);
        if (st) return st;
    }
    return sent < 0 ? (duet_status_t)sent : DUET_OK;
}

static duet_status_t recv_msg(duet_comm_t c, int peer, void *buf, size_t len)
{
    duet_waiter_t w;
    duet_waiter_init(&w, &c->wait_ctx, "%s from rank %llu", "calibration message", (unsigned long long)peer, 0, peer);
    duet_status_t st = DUET_OK;
    const void *msg;
    while (!(msg = duet_coll_chan_peek(c, c->chan, peer, len, &st))) {
        if (st || (st = duet_waiter_turn(&w))) return st;
    }
    memcpy(buf, msg, len);
    return duet_coll_chan_release(c, c->chan, peer);
}

/* Ranks 0 and 1 measure; the others only wait for the broadcast. */
static duet_status_t measure(duet_comm_t c, duet_coll_model_t *m)
{
    enum { ROUNDS = 2000, STREAM = 64 };
    size_t chunk = c->chan->chunk;
    char *buf = calloc(1, chunk);
    if (!buf) return DUET_FAIL(DUET_ERR_NO_MEMORY, TUNE, "calibration: out of host memory");
    duet_status_t st = DUET_OK;
    int peer = 1 - c->rank;
    uint64_t t0 = duet_time_ns();
    for (int i = 0; i < ROUNDS && st == DUET_OK; i++) {
        if (c->rank == 0) {
            st = send_msg(c, peer, buf, 8);
            if (!st) st = recv_msg(c, peer, buf, 8);
        } else {
            st = recv_msg(c, peer, buf, 8);
            if (!st) st = send_msg(c, peer, buf, 8);
        }
    }
    uint64_t t1 = duet_time_ns();
    for (int i = 0; i < STREAM && st == DUET_OK; i++)
        st = c->rank == 0 ? send_msg(c, peer, buf, chunk) : recv_msg(c, peer, buf, chunk);
    if (st == DUET_OK) st = c->rank == 0 ? recv_msg(c, peer, buf, 8) : send_msg(c, peer, buf, 8); /* all consumed */
    uint64_t t2 = duet_time_ns();
    free(buf);
    if (st) return st;
    m->alpha_us = (double)(t1 - t0) * 1e-3 / ROUNDS / 2;
    double stream_us = (double)(t2 - t1) * 1e-3 - 2 * m->alpha_us;
    m->beta_gbps = (double)(chunk * STREAM) / (stream_us > 0 ? stream_us : 1) * 1e-3;
    return DUET_OK;
}

/* DUET_TUNE_ALPHA_US / DUET_TUNE_BETA_GBPS, when set, win over the file and the measurement. */
static void apply_settings(duet_coll_model_t *m, const duet_cfg_t *cfg)
{
    if (cfg->tune_alpha_us > 0) m->alpha_us = cfg->tune_alpha_us;
    if (cfg->tune_beta_gbps > 0) m->beta_gbps = cfg->tune_beta_gbps;
}

int duet_coll_model_local(duet_coll_model_t *out, char *source, size_t len)
{
    const duet_cfg_t *cfg = duet_cfg();
    char path[512];
    duet_coll_model_t m = {DEFAULT_ALPHA_US, DEFAULT_BETA_GBPS, 0, 0};
    int from_file = duet_coll_tune_file_read("", &m, path, sizeof path) == 0;
    if (!from_file) m = (duet_coll_model_t){DEFAULT_ALPHA_US, DEFAULT_BETA_GBPS, 0, 0};
    apply_settings(&m, cfg);
    int alpha_set = cfg->tune_alpha_us > 0, beta_set = cfg->tune_beta_gbps > 0;
    if (alpha_set && beta_set) snprintf(source, len, "DUET_TUNE_ALPHA_US and DUET_TUNE_BETA_GBPS");
    else if (from_file)
        snprintf(source, len, "the tune file %s%s", path,
                 alpha_set ? ", alpha from DUET_TUNE_ALPHA_US" : beta_set ? ", beta from DUET_TUNE_BETA_GBPS" : "");
    else
        snprintf(source, len, "the defaults (no tune file at %s: the library would measure)%s", path,
                 alpha_set ? ", alpha from DUET_TUNE_ALPHA_US" : beta_set ? ", beta from DUET_TUNE_BETA_GBPS" : "");
    *out = m;
    return from_file;
}

duet_status_t duet_coll_model_get(duet_comm_t c, duet_coll_model_t *out)
{
    const duet_cfg_t *cfg = duet_cfg();
    if (c->model_ready) {
        *out = c->model;
        return DUET_OK;
    }
    duet_coll_model_t m = {DEFAULT_ALPHA_US, DEFAULT_BETA_GBPS, 0, 0};
    int32_t measure_it = 0;
    char path[512];
    if (c->rank == 0 && duet_coll_tune_file_read("", &m, path, sizeof path) != 0) {
        m = (duet_coll_model_t){DEFAULT_ALPHA_US, DEFAULT_BETA_GBPS, 0, 0};
        measure_it = c->size >= 2;
    }
    /* everyone learns whether ranks 0 and 1 measure */
    duet_status_t st = duet_boot_bcast(&c->boot, &measure_it, sizeof measure_it);
    if (st == DUET_OK && measure_it && c->rank <= 1) {
        st = measure(c, &m);
        if (st == DUET_OK && c->rank == 0) duet_coll_tune_file_write("", &m);
    }
    if (st == DUET_OK) st = duet_boot_bcast(&c->boot, &m, sizeof m);
    if (st) return st;
    apply_settings(&m, cfg);
    DUET_LOG(INFO, TUNE, "model: alpha %.3f us per message, beta %.2f GB/s%s", m.alpha_us, m.beta_gbps,
             measure_it ? " (measured now)" : "");
    c->model = m;
    c->model_ready = 1;
    *out = m;
    return DUET_OK;
}

duet_status_t duet_coll_calibrate(duet_comm_t c, duet_coll_model_t *out)
{
    duet_coll_model_t m = {DEFAULT_ALPHA_US, DEFAULT_BETA_GBPS, 0, 0};
    duet_status_t st = DUET_OK;
    if (c->size >= 2 && c->rank <= 1) st = measure(c, &m);
    if (st == DUET_OK && c->rank == 0 && c->size >= 2) duet_coll_tune_file_write("", &m);
    if (st == DUET_OK) st = duet_boot_bcast(&c->boot, &m, sizeof m);
    if (st == DUET_OK) {
        c->model = m;
        c->model_ready = 1;
        if (c->tune) duet_coll_tune_free(c); /* decisions made with the old numbers */
        c->tune_epoch++;                      /* ... the lane's remembered one too */
        *out = m;
    }
    return st;
}

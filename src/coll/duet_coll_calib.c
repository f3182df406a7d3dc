/*
 * The tuner's alpha and beta: what one message and one byte cost on this host's channels, one
 * pair per class of link (docs/NETWORK.md 2.7): shared memory inside a host, the net transport
 * between hosts.
 *
 * Where each pair comes from, in order: the settings (DUET_TUNE_ALPHA_US / DUET_TUNE_BETA_GBPS;
 * DUET_TUNE_NET_ALPHA_US / DUET_TUNE_NET_BETA_GBPS); the host's tune file of that transport,
 * its line for this machine, version and layout (duet_coll_tune_file.c)
 * (DUET_TUNE_FILE; by default under $XDG_CACHE_HOME/duet or ~/.cache/duet, else /tmp; the net
 * pair's file has "-net" appended); else a measurement, made once on the first communicator
 * that needs it and written to the file: rank 0 and a rank of its host (shm), or rank 0 and
 * the first rank of another host (net, only on a communicator that spans real hosts), bounce
 * 8-byte messages (alpha = half a round trip) and stream chunk-sized messages (beta = time per
 * byte, copy in and out included); with more than two ranks on rank 0's host, the shm alpha is
 * then taken around the ring of all of them (measure_ring: what a step costs when they all
 * run; the tune file's key holds the rank layout, so each count has its own). Without a
 * measurement the net pair defaults to 20 us and
 * 0.5 GB/s: Duet's put latency (19.9 us, half a round trip) and put bandwidth (0.48-0.65 GB/s,
 * 1-16 MiB) between two namespace hosts over veth TCP, docs/PERF.md "Duet's net transport
 * against ucx_perftest". Rank 0 decides and broadcasts, so every rank of a communicator uses the
 * same numbers and the tuner picks the same algorithm everywhere. `duet-perf --calibrate`
 * measures anew, then fits the model's other terms (duet_coll_fit.h) and writes them into the
 * same line; a measurement made here leaves them out (0: the plain alpha-beta model).
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
#define DEFAULT_NET_ALPHA_US 20.0 /* docs/PERF.md, "Duet's net transport against ucx_perftest": */
#define DEFAULT_NET_BETA_GBPS 0.5 /* put latency 19.9 us, put bandwidth 0.48-0.65 GB/s (veth TCP) */
#define DEFAULT_MODEL                                                                                    \
    ((duet_coll_model_t){.alpha_us = DEFAULT_ALPHA_US, .beta_gbps = DEFAULT_BETA_GBPS,                   \
                         .net_alpha_us = DEFAULT_NET_ALPHA_US, .net_beta_gbps = DEFAULT_NET_BETA_GBPS})

/* Blocking send / receive of one message on the channels, for the measurement. Its messages
 * are signed {call 0, hash 0}: no collective call has that number. */
static duet_status_t send_msg(duet_comm_t c, int peer, const void *buf, size_t len)
{
    duet_waiter_t w;
    duet_waiter_init(&w, &c->wait_ctx, "%s to rank %llu", "calibration message", (unsigned long long)peer, 0, peer);
    int sent;
    while ((sent = duet_coll_chan_try_send(c, c->chan, peer, buf, len, 0, 0, 0)) == 0) {
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
    duet_chan_got_t got = {0, 0, 0, 0};
    while (!(msg = duet_coll_chan_peek(c, c->chan, peer, len, 0, 0, &got))) {
        if (got.bad)
            return DUET_FAIL(DUET_ERR_INVALID_ARG, TUNE, "calibration: rank %d sent a message of call #%u (%llu bytes) "
                             "where rank %d measures (%zu bytes): the ranks made different calls", peer, got.call,
                             (unsigned long long)got.len, c->rank, len);
        if ((st = duet_waiter_turn(&w))) return st;
    }
    memcpy(buf, msg, len);
    return duet_coll_chan_release(c, c->chan, peer);
}

/* Ranks x and y measure their link into m->alpha_us and m->beta_gbps (the medians of REPS
 * repeats, their spreads in m->alpha_spread and m->beta_spread: one slow moment of the
 * machine moves a median little, where it moved the single measurement this replaced by 4x);
 * the others only wait for the broadcast. */
static duet_status_t measure(duet_comm_t c, int x, int y, duet_coll_model_t *m)
{
    enum { REPS = 7, ROUNDS = 400, STREAM = 32 };
    size_t chunk = c->chan->chunk;
    char *buf = calloc(1, chunk);
    if (!buf) return DUET_FAIL(DUET_ERR_NO_MEMORY, TUNE, "calibration: out of host memory");
    duet_status_t st = DUET_OK;
    int peer = c->rank == x ? y : x, lead = c->rank == x;
    double alpha[REPS], beta[REPS];
    for (int rep = 0; rep < REPS && st == DUET_OK; rep++) {
        uint64_t t0 = duet_time_ns();
        for (int i = 0; i < ROUNDS && st == DUET_OK; i++) {
            if (lead) {
                st = send_msg(c, peer, buf, 8);
                if (!st) st = recv_msg(c, peer, buf, 8);
            } else {
                st = recv_msg(c, peer, buf, 8);
                if (!st) st = send_msg(c, peer, buf, 8);
            }
        }
        uint64_t t1 = duet_time_ns();
        for (int i = 0; i < STREAM && st == DUET_OK; i++)
            st = lead ? send_msg(c, peer, buf, chunk) : recv_msg(c, peer, buf, chunk);
        if (st == DUET_OK) st = lead ? recv_msg(c, peer, buf, 8) : send_msg(c, peer, buf, 8); /* all consumed */
        uint64_t t2 = duet_time_ns();
        alpha[rep] = (double)(t1 - t0) * 1e-3 / ROUNDS / 2;
        double stream_us = (double)(t2 - t1) * 1e-3 - 2 * alpha[rep];
        beta[rep] = (double)(chunk * STREAM) / (stream_us > 0 ? stream_us : 1) * 1e-3;
    }
    free(buf);
    if (st) return st;
    m->alpha_us = duet_median(alpha, REPS, &m->alpha_spread);
    m->beta_gbps = duet_median(beta, REPS, &m->beta_spread);
    return DUET_OK;
}

/* alpha as n ranks see it: an 8-byte token passed around the ring of the ranks of rank 0's host
 * (every one of them waiting as in a collective), the time per hop into m->alpha_us (the
 * median of REPS repeats, its spread in m->alpha_spread). With two ranks it is the ping-pong's
 * half round trip; with more, what a step of a collective waits for when all of them run
 * (issue 20: at 4-16 ranks on 16 cores a step cost 5-10x the two-rank ping-pong's alpha, and a
 * fit left free traded alpha away against the per-call term). Ranks of other hosts do nothing.
 * Collective over the ranks of host[0]. */
static duet_status_t measure_ring(duet_comm_t c, const int *host, duet_coll_model_t *m)
{
    enum { REPS = 7, HOPS = 400 }; /* hops per repeat, about the ping-pong's */
    int k = 0, pos = -1;
    for (int r = 0; r < c->size; r++)
        if (host[r] == host[0]) {
            if (r == c->rank) pos = k;
            k++;
        }
    if (pos < 0 || k < 3) return DUET_OK; /* not on rank 0's host; two ranks: the ping-pong's */
    int next = -1, prev = -1;
    for (int r = 0, i = 0; r < c->size; r++)
        if (host[r] == host[0]) {
            if (i == (pos + 1) % k) next = r;
            if (i == (pos + k - 1) % k) prev = r;
            i++;
        }
    const int rounds = HOPS / k > 10 ? HOPS / k : 10;
    char token[8] = {0};
    double hop[REPS];
    duet_status_t st = DUET_OK;
    for (int rep = 0; rep < REPS && st == DUET_OK; rep++) {
        uint64_t t0 = duet_time_ns();
        for (int i = 0; i < rounds && st == DUET_OK; i++) {
            if (pos == 0) {
                st = send_msg(c, next, token, sizeof token);
                if (!st) st = recv_msg(c, prev, token, sizeof token);
            } else {
                st = recv_msg(c, prev, token, sizeof token);
                if (!st) st = send_msg(c, next, token, sizeof token);
            }
        }
        hop[rep] = (double)(duet_time_ns() - t0) * 1e-3 / rounds / k;
    }
    if (st == DUET_OK && c->rank == 0) m->alpha_us = duet_median(hop, REPS, &m->alpha_spread);
    return st;
}

/* The settings, when set, win over the files and the measurements. */
static void apply_settings(duet_coll_model_t *m, const duet_cfg_t *cfg)
{
    if (cfg->tune_alpha_us > 0) m->alpha_us = cfg->tune_alpha_us;
    if (cfg->tune_beta_gbps > 0) m->beta_gbps = cfg->tune_beta_gbps;
    if (cfg->tune_net_alpha_us > 0) m->net_alpha_us = cfg->tune_net_alpha_us;
    if (cfg->tune_net_beta_gbps > 0) m->net_beta_gbps = cfg->tune_net_beta_gbps;
}

/* The tune file of `kind` ("" shm, "net") into m's pair of that kind (the shm pair with its
 * spreads); 1 when it was read. */
static int read_pair(const char *kind, const duet_coll_layout_t *lay, duet_coll_model_t *m, char *path, size_t len)
{
    duet_coll_model_t f = {0};
    if (duet_coll_tune_file_read(kind, lay, &f, path, len) != 0) return 0;
    if (kind[0]) {
        m->net_alpha_us = f.alpha_us, m->net_beta_gbps = f.beta_gbps;
    } else {
        double net_alpha = m->net_alpha_us, net_beta = m->net_beta_gbps;
        *m = f; /* the pair, its spreads and the fitted terms */
        m->net_alpha_us = net_alpha, m->net_beta_gbps = net_beta;
    }
    return 1;
}

int duet_coll_model_local(duet_coll_model_t *out, char *source, size_t len)
{
    const duet_cfg_t *cfg = duet_cfg();
    char path[512], net_path[512];
    duet_coll_model_t m = DEFAULT_MODEL;
    int from_file = read_pair("", NULL, &m, path, sizeof path);
    read_pair("net", NULL, &m, net_path, sizeof net_path);
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

void duet_coll_model_net_source(char *source, size_t len)
{
    const duet_cfg_t *cfg = duet_cfg();
    char path[512];
    duet_coll_model_t scratch = {0};
    int from_file = read_pair("net", NULL, &scratch, path, sizeof path);
    int alpha_set = cfg->tune_net_alpha_us > 0, beta_set = cfg->tune_net_beta_gbps > 0;
    if (alpha_set && beta_set) snprintf(source, len, "DUET_TUNE_NET_ALPHA_US and DUET_TUNE_NET_BETA_GBPS");
    else
        snprintf(source, len, "%s%s%s%s", from_file ? "the tune file " : "the defaults (docs/PERF.md's net figures over "
                 "veth TCP)", from_file ? path : "", alpha_set ? ", alpha from DUET_TUNE_NET_ALPHA_US" : "",
                 beta_set ? ", beta from DUET_TUNE_NET_BETA_GBPS" : "");
}

/* The pairs to measure: rank 0 with a rank of its host (*near, shm) and with the first rank of
 * another host (*far, net: only where the hosts are real, not DUET_COLL_RANKS_PER_HOST's). */
static void measure_pairs(duet_comm_t c, const int *host, int nhosts, int *near, int *far)
{
    *near = *far = -1;
    for (int r = 1; r < c->size; r++) {
        if (host[r] == host[0] && *near < 0) *near = r;
        if (host[r] != host[0] && *far < 0 && nhosts > 1 && duet_cfg()->coll_ranks_per_host <= 0) *far = r;
    }
}

duet_status_t duet_coll_layout_get(duet_comm_t c, duet_coll_layout_t *lay)
{
    const int *host;
    int nhosts;
    duet_status_t st = duet_coll_hosts_get(c, &host, &nhosts);
    if (st) return st;
    lay->hosts = nhosts, lay->ranks = 0;
    for (int r = 0; r < c->size; r++) lay->ranks += host[r] == host[0];
    return DUET_OK;
}

/* c's host count and map, its pairs to measure (measure_pairs) and its layout (the tune files'
 * key) */
static duet_status_t pairs_of(duet_comm_t c, int *nhosts, const int **hostp, int *near, int *far,
                              duet_coll_layout_t *lay)
{
    const int *host;
    duet_status_t st = duet_coll_hosts_get(c, &host, nhosts);
    if (st) return st;
    *hostp = host;
    measure_pairs(c, host, *nhosts, near, far);
    return duet_coll_layout_get(c, lay);
}

/* Measures the pairs asked for (x[0]: shm, x[1]: net; 0 no), rank 0 writes their tune files,
 * and every rank gets rank 0's model. */
static duet_status_t measure_and_share(duet_comm_t c, const int *host, const int32_t want[2], int near, int far,
                                       const duet_coll_layout_t *lay, duet_coll_model_t *m)
{
    duet_status_t st = DUET_OK;
    if (want[0] && (c->rank == 0 || c->rank == near)) {
        /* terms fitted with the old pair do not go with the new one (duet-perf --calibrate fits again) */
        m->call_us = m->step_us = m->copy_gbps = m->mem_gbps = m->knee_bytes = m->reduce_gbps = m->fit_err = 0;
        memset(m->call_kind_us, 0, sizeof m->call_kind_us);
        st = measure(c, 0, near, m);
    }
    if (want[0] && host[c->rank] == host[0]) { /* then alpha around the ring of the host's ranks */
        duet_status_t rst = measure_ring(c, host, m);
        if (st == DUET_OK) st = rst;
    }
    if (want[0] && st == DUET_OK && c->rank == 0) duet_coll_tune_file_write("", lay, m);
    if (st == DUET_OK && want[1] && (c->rank == 0 || c->rank == far)) {
        duet_coll_model_t net = *m;
        st = measure(c, 0, far, &net);
        m->net_alpha_us = net.alpha_us;
        m->net_beta_gbps = net.beta_gbps;
        if (st == DUET_OK && c->rank == 0) duet_coll_tune_file_write("net", lay, &net);
    }
    if (st == DUET_OK) st = duet_boot_bcast(&c->boot, m, sizeof *m);
    return st;
}

static void log_model(const duet_coll_model_t *m, int nhosts, const int32_t want[2])
{
    DUET_LOG(INFO, TUNE, "model: shm alpha %.3f us per message, beta %.2f GB/s%s; net alpha %.3f us, beta %.3f "
             "GB/s%s%s", m->alpha_us, m->beta_gbps, want[0] ? " (measured now)" : "", m->net_alpha_us,
             m->net_beta_gbps, want[1] ? " (measured now)" : "", nhosts > 1 ? "" : " (unused: one host)");
}

duet_status_t duet_coll_model_get(duet_comm_t c, duet_coll_model_t *out)
{
    if (c->model_ready) {
        *out = c->model;
        return DUET_OK;
    }
    int nhosts, near, far;
    duet_coll_layout_t lay;
    const int *host;
    duet_status_t st = pairs_of(c, &nhosts, &host, &near, &far, &lay);
    if (st) return st;
    duet_coll_model_t m = DEFAULT_MODEL;
    int32_t want[2] = {0, 0}; /* measure the shm pair, the net pair */
    char path[512];
    if (c->rank == 0) {
        if (!read_pair("", &lay, &m, path, sizeof path)) want[0] = near > 0;
        if (!read_pair("net", &lay, &m, path, sizeof path)) want[1] = far > 0;
    }
    /* everyone learns which pairs measure */
    st = duet_boot_bcast(&c->boot, want, sizeof want);
    if (st == DUET_OK) st = measure_and_share(c, host, want, near, far, &lay, &m);
    if (st) return st;
    apply_settings(&m, duet_cfg());
    log_model(&m, nhosts, want);
    c->model = m;
    c->model_ready = 1;
    *out = m;
    return DUET_OK;
}

duet_status_t duet_coll_calibrate(duet_comm_t c, duet_coll_model_t *out)
{
    int nhosts, near, far;
    duet_coll_layout_t lay;
    const int *host;
    duet_status_t st = pairs_of(c, &nhosts, &host, &near, &far, &lay);
    if (st) return st;
    duet_coll_model_t m = DEFAULT_MODEL;
    if (c->rank == 0) { /* a pair not measured now keeps its file's numbers */
        read_pair("", &lay, &m, (char[512]){0}, 512);
        read_pair("net", &lay, &m, (char[512]){0}, 512);
    }
    int32_t want[2] = {near > 0, far > 0};
    st = measure_and_share(c, host, want, near, far, &lay, &m);
    if (st == DUET_OK) {
        log_model(&m, nhosts, want);
        c->model = m;
        c->model_ready = 1;
        duet_coll_tune_forget(c); /* decisions made with the old numbers, the lane's too */
        *out = m;
    }
    return st;
}

/*
 * nvshmem_basic.cu — an NVSHMEM program (NVSHMEM's names only, besides reading its rank for
 * --uid) run on Duet's NVSHMEM headers, checked against references on the host:
 *   init (nvshmem_init, or --uid: nvshmemx_get_uniqueid on rank 0, the id passed through a
 *   file, nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID)); malloc / align / calloc / free;
 *   put / get at thread, warp and block scope, blocking and nbi; p / g of double and short and
 *   a wait_until handshake; putmem_signal_nbi SET and ADD at each scope plus signal_op,
 *   signal_fetch, signal_wait_until; host putmem / p / quiet / barrier_all; the _on_stream
 *   forms; team_split_strided (even pes) with team queries and a team barrier in a kernel;
 *   a MoE-style dispatch through nvshmemx_collective_launch. Exit code 0 on success.
 * Usage: nvshmem_basic [--uid]   (under duetrun)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nvshmem.h"
#include "nvshmemx.h"
#include "nvshmem_basic.h"

static int me = -1, fails = 0;
#define CU(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "pe %d: %s: %s\n", me, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "pe %d: FAIL %s:%d: ", me, __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); fails++; } } while (0)

/* --uid: rank 0's id reaches the others through a file named after the launcher's job. */
static void init_by_uid(void)
{
    const char *r = getenv("DUET_RANK"), *n = getenv("DUET_NRANKS");
    if (!r || !n) { fprintf(stderr, "--uid needs duetrun\n"); exit(2); }
    int rank = atoi(r), nranks = atoi(n);
    char path[256], tmp[300];
    snprintf(path, sizeof path, "/tmp/nvshmem_basic-%d-%d.uid", (int)getuid(), (int)getppid());
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0) {
        if (nvshmemx_get_uniqueid(&id)) exit(1);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) || rename(tmp, path)) exit(1);
    } else {
        for (int tries = 0;; tries++) {
            FILE *f = fopen(path, "rb");
            if (f && fread(&id, sizeof id, 1, f) == 1) { fclose(f); break; }
            if (f) fclose(f);
            if (tries > 6000) { fprintf(stderr, "no uid file\n"); exit(1); }
            usleep(10000);
        }
    }
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr) ||
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr)) exit(1);
    if (rank == 0) unlink(path);
    if (nvshmem_my_pe() != rank || nvshmem_n_pes() != nranks) { fprintf(stderr, "uid init: wrong pe\n"); exit(1); }
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--uid")) init_by_uid();
    else nvshmem_init();
    me = nvshmem_my_pe();
    int n = nvshmem_n_pes(), peer = (me + 1) % n, prev = (me + n - 1) % n;
    CHECK(nvshmemx_init_status() == NVSHMEM_STATUS_IS_INITIALIZED, "init status");
    cudaStream_t s;
    CU(cudaStreamCreate(&s));

    int *sym = (int *)nvshmem_malloc(NB_N * sizeof(int));
    int *big = (int *)nvshmem_align(4096, 64 * sizeof(int) + (size_t)64 * NB_TOK * NB_ROW * sizeof(int));
    uint64_t *sig = (uint64_t *)nvshmem_calloc(64, sizeof(uint64_t));
    double *symd = (double *)nvshmem_malloc(sizeof(double));
    short *syms = (short *)nvshmem_malloc(sizeof(short));
    CHECK(sym && big && sig && symd && syms && ((uintptr_t)big & 4095) == 0, "allocations");
    CHECK(nvshmem_malloc(0) == NULL, "malloc(0)");
    CHECK(nvshmem_ptr(sym, me) == sym && nvshmem_ptr(sym, peer) != NULL, "nvshmem_ptr");
    int *loc, *out, *bad, *hout = (int *)malloc(NB_N * sizeof(int));
    CU(cudaMalloc(&loc, NB_N * sizeof(int)));
    CU(cudaMalloc(&out, NB_N * sizeof(int)));
    CU(cudaMalloc(&bad, sizeof(int)));

    /* put / get at each scope */
    for (int scope = 0; scope < 3; scope++)
        for (int nbi = 0; nbi < 2; nbi++) {
            CU(cudaMemset(out, 0xff, NB_N * sizeof(int)));
            CU(cudaDeviceSynchronize());
            int tag = scope * 2 + nbi; /* each round puts other values than the last */
            nb_rma(sym, loc, out, scope, nbi, tag, s);
            CU(cudaStreamSynchronize(s));
            CU(cudaMemcpy(hout, out, NB_N * sizeof(int), cudaMemcpyDeviceToHost));
            int wrong = 0;
            for (int i = 0; i < NB_N; i++) wrong += hout[i] != me * 100000 + tag * NB_N + i;
            CHECK(!wrong, "put/get scope %d nbi %d: %d wrong", scope, nbi, wrong);
        }

    /* p / g and wait_until */
    uint64_t zero = 0;
    double *outd; short *outs;
    CU(cudaMalloc(&outd, 2 * sizeof(double)));
    CU(cudaMalloc(&outs, 2 * sizeof(short)));
    nb_pg(symd, syms, sig + 10, outd, outs, s);
    CU(cudaStreamSynchronize(s));
    double hd[2]; short hs[2];
    CU(cudaMemcpy(hd, outd, sizeof hd, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(hs, outs, sizeof hs, cudaMemcpyDeviceToHost));
    CHECK(hd[0] == prev + 0.5 && hs[0] == prev - 7 && hd[1] == me + 0.5 && hs[1] == me - 7,
          "p/g: %g %d %g %d", hd[0], hs[0], hd[1], hs[1]);

    /* signals at each scope, SET and ADD */
    for (int scope = 0; scope < 3; scope++)
        for (int add = 0; add < 2; add++) {
            CU(cudaMemcpy(sig, &zero, sizeof zero, cudaMemcpyHostToDevice));
            CU(cudaMemset(bad, 0, sizeof(int)));
            CU(cudaDeviceSynchronize());
            nvshmem_barrier_all();
            nb_signal(sym, loc, sig, scope, add, bad, s);
            CU(cudaStreamSynchronize(s));
            int hb = -1;
            CU(cudaMemcpy(&hb, bad, sizeof hb, cudaMemcpyDeviceToHost));
            CHECK(hb == 0 && nvshmem_signal_fetch(sig) == 8, "signal scope %d add %d: %d bad", scope, add, hb);
        }

    /* host calls: putmem, p, signal_op, quiet, barrier_all; and the _on_stream forms */
    CU(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    int v = me + 40;
    nvshmem_putmem(sym, &v, sizeof v, peer);
    nvshmem_int_p(sym + 1, me + 50, peer);
    nvshmem_quiet();
    nvshmem_barrier_all();
    int hv[2];
    CU(cudaMemcpy(hv, sym, sizeof hv, cudaMemcpyDeviceToHost));
    CHECK(hv[0] == prev + 40 && hv[1] == prev + 50, "host put/p: %d %d", hv[0], hv[1]);
    CHECK(nvshmem_int_g(sym, peer) == me + 40, "host g");
    CU(cudaMemcpy(sig + 20, &zero, sizeof zero, cudaMemcpyHostToDevice));
    nvshmem_barrier_all();
    CU(cudaMemcpy(loc, &v, sizeof v, cudaMemcpyHostToDevice));
    nvshmemx_putmem_on_stream(sym + 2, loc, sizeof v, peer, s);
    nvshmemx_signal_op_on_stream(sig + 20, 1, NVSHMEM_SIGNAL_ADD, peer, s);
    nvshmemx_signal_wait_until_on_stream(sig + 20, NVSHMEM_CMP_GE, 1, s);
    nvshmemx_quiet_on_stream(s);
    nvshmemx_barrier_all_on_stream(s);
    CU(cudaStreamSynchronize(s));
    CU(cudaMemcpy(hv, sym + 2, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(hv[0] == prev + 40, "putmem_on_stream: %d", hv[0]);

    /* teams: the even pes */
    nvshmem_team_t even = NVSHMEM_TEAM_INVALID;
    CHECK(nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even) == 0, "split");
    CHECK((me % 2 == 0) == (even != NVSHMEM_TEAM_INVALID), "split membership");
    int tout[3], *dtout;
    CU(cudaMalloc(&dtout, sizeof tout));
    nb_team(even, dtout, s);
    CU(cudaStreamSynchronize(s));
    CU(cudaMemcpy(tout, dtout, sizeof tout, cudaMemcpyDeviceToHost));
    if (me % 2 == 0)
        CHECK(tout[0] == me / 2 && tout[1] == (n + 1) / 2 && tout[2] == 0 && nvshmem_team_my_pe(even) == me / 2 &&
              nvshmem_team_n_pes(even) == (n + 1) / 2 && nvshmem_team_translate_pe(even, 1 % tout[1], NVSHMEM_TEAM_WORLD) == (1 % tout[1]) * 2,
              "team: %d %d %d", tout[0], tout[1], tout[2]);
    else /* NVSHMEM: team_my_pe and team_n_pes of NVSHMEM_TEAM_INVALID are -1, in kernels and on the host */
        CHECK(tout[0] == -1 && tout[1] == -1 && tout[2] == -1 && nvshmem_team_my_pe(even) == -1 &&
              nvshmem_team_n_pes(even) == -1,
              "not in the team: %d %d %d", tout[0], tout[1], tout[2]);
    if (even != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(even);
    CHECK(nvshmem_team_n_pes(NVSHMEM_TEAM_WORLD) == n && nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) == me, "world team");

    /* MoE dispatch */
    CU(cudaMemset(big, 0, 64 * sizeof(int)));
    CU(cudaMemset(sig, 0, 64 * sizeof(uint64_t)));
    CU(cudaMemset(bad, 0, sizeof(int)));
    CU(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    CHECK(nb_moe(big, sig, bad, s) == 0, "collective launch");
    CU(cudaStreamSynchronize(s));
    int hb = -1;
    CU(cudaMemcpy(&hb, bad, sizeof hb, cudaMemcpyDeviceToHost));
    CHECK(hb == 0, "moe: %d bad", hb);

    nvshmem_barrier_all();
    nvshmem_free(sym), nvshmem_free(big), nvshmem_free(sig), nvshmem_free(symd), nvshmem_free(syms);
    nvshmem_finalize();
    if (me == 0 || fails) printf("nvshmem_basic pe %d: %s\n", me, fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}

/*
 * perf.h — what the files of duet-perf share.
 *
 *   perf_main.c      command line, the driver (one row per size), table, CSV, progress line
 *   perf_onesided.c  modes pingpong put get atomic barrier
 *   perf_coll.c      modes allreduce broadcast reduce allgather reducescatter alltoall sendrecv
 *   perf_fit.c       --fit and --plot: alpha-beta fits, crossovers, gnuplot (reads CSV rows)
 *   perf_device.c    --device: modes pingpong put from inside a kernel (CUDA builds only;
 *                    its kernels in perf_device.cu)
 *
 * A mode is one row of a mode table (perf_onesided_modes, perf_coll_modes): how to set up a
 * size, run n iterations, and verify. The driver does the rest alike for every mode.
 */
#ifndef DUET_PERF_H
#define DUET_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "duet/duet.h"
#include "util/duet_util.h"
#include "coll/duet_coll_predict.h"
#include "coll/duet_coll_executor.h"

#define PERF_CSV_HEADER "op,bytes,count,dtype,redop,algo,time_us,algbw_GBps,busbw_GBps,wrong"

/* How a collective row is timed (--timing): the loop of back-to-back calls, each rank's time
 * per call combined by --average (calls may overlap: a broadcast's root starts the next before
 * the last rank has the last); or each call alone: a barrier, then the call, and per call the
 * span from the first rank's start to the last rank's end (one host: the ranks share
 * CLOCK_MONOTONIC), the row's time the median over the calls. */
enum { PERF_TIMING_LOOP = 0, PERF_TIMING_CALL = 1 };
/* How the per-rank times of a row become its time (nccl-tests' -a, here --average). */
enum { PERF_TIME_RANK0 = 0, PERF_TIME_MEAN = 1, PERF_TIME_MIN = 2, PERF_TIME_MAX = 3 };

typedef struct perf perf_t;

typedef struct perf_mode {
    const char *name;
    const char *dtype, *redop, *algo; /* fixed CSV columns; NULL: from -d / -o / the tuner */
    size_t elem_size;     /* bytes per element, for the count column (0: count 0)      */
    size_t fixed_bytes;   /* bytes of the single row of a mode that does not sweep     */
    int sized;            /* sweeps -b .. -e by -f                                     */
    int pair;             /* runs between ranks 0 and 1                                */
    int windowed;         /* one iteration is -W operations                            */
    long default_iters;
    int coll;             /* a collective: -d -o -r -a apply, every rank is timed      */
    /* Per size, before the warmup (may be NULL). Returns 0 to run the row, 1 to skip it
     * (the same on every rank; *why says why). */
    int (*setup)(perf_t *, size_t bytes, const char **why);
    void (*body)(perf_t *, size_t bytes, long n);     /* n iterations                    */
    /* After the timed loop: this rank's wrong results not counted by another rank. */
    uint64_t (*verify)(perf_t *, size_t bytes);
    const char *help;
    /* After the timed loop, before verify (may be NULL): e.g. names the row's algorithm. */
    void (*after)(perf_t *, size_t bytes);
    int redop_from_flags; /* a reduction: -o applies, the redop column shows it        */
    int gpu_coll;         /* a collective on GPU buffers: -V caps it, --average combines
                           * its ranks' times, as for coll                             */
} perf_mode_t;

/* One result row, as written to CSV and read back by --fit / --plot. */
typedef struct {
    char op[32], dtype[16], redop[16], algo[48];
    size_t bytes, count;
    double time_us, algbw, busbw;
    long long wrong; /* -1: not checked */
    int series;      /* perf_fit.c: which series the row belongs to */
} perf_row_t;

struct perf {
    /* options */
    size_t minb, maxb, factor, max_volume;
    long iters, warmup; /* -1: the mode's default */
    long window;
    int check, average, root;
    duet_datatype_t dtypes[DUET_DATATYPE_COUNT]; /* -d: one, or all */
    duet_op_t ops[DUET_OP_COUNT];                /* -o: one, or all */
    int ndtypes, nops;
    duet_datatype_t dtype; /* the current row's */
    duet_op_t op;
    const char *algo; /* -a: forced algorithm, NULL: the tuner's choice */
    const char *csv, *plot;
    int fit;
    int device; /* --device: the mode from perf_device_modes */
    int floor;  /* --floor: print the memory-traffic floor of each row (perf_floor.c) */
    int timing; /* PERF_TIMING_LOOP or PERF_TIMING_CALL (--timing) */
    /* job */
    const perf_mode_t *mode;
    duet_comm_t comm;
    int me, nranks;
    /* symmetric memory: origin is used on rank 0, target is the object accessed on rank 1 */
    uint64_t *flag, *counter, *result, *slot, *report;
    uint8_t *origin, *target;
    /* state carried across iterations */
    uint64_t seq, adds, bad_fetches;
    /* collectives (perf_coll.c): buffers and the current size's shape */
    void *sendbuf, *recvbuf, *refbuf;
    int host_buffers;  /* --buffers host: send / receive buffers from malloc, not the heap */
    int bufs_in_heap;  /* where they are this run */
    size_t count, send_bytes, recv_bytes, row_bytes; /* count: the call's count argument */
    double busbw_factor;
    char row_algo[48]; /* the algo column of the current row */
    /* device collectives (perf_device_coll.c): their GPU buffers, and the host's time to
     * queue one call (the last row's -n calls, before waiting for the stream) */
    void *dev_send, *dev_recv;
    double enqueue_us;
    /* --timing call: each timed call's start and end on this rank (symmetric: rank 0 reads
     * them), room for stamps_cap calls; stamping: the timed loop is running */
    uint64_t *stamps;
    long stamps_cap;
    int stamping;
};

/* perf_main.c */
void perf_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Every Duet call goes through PERF_CHECK: an error ends the run with the library's message. */
#define PERF_CHECK(call)                                                                 \
    do {                                                                                 \
        duet_status_t st_ = (call);                                                      \
        if (DUET_UNLIKELY(st_ != DUET_OK))                                               \
            perf_die("%s failed: %s: %s", #call, duet_status_str(st_), duet_last_error()); \
    } while (0)

/* The mode tables. */
extern const perf_mode_t perf_onesided_modes[];
extern const size_t perf_onesided_nmodes;
extern const perf_mode_t perf_coll_modes[];
extern const size_t perf_coll_nmodes;
#ifdef DUET_HAVE_CUDA
extern const perf_mode_t perf_device_modes[];
extern const size_t perf_device_nmodes;
/* perf_device.c: frees the device modes' buffers (collective; nothing when unused). */
void perf_device_free(perf_t *p);
/* perf_device_coll.c: the public collectives on GPU buffers (--device allreduce). */
extern const perf_mode_t perf_device_coll_modes[];
extern const size_t perf_device_coll_nmodes;
void perf_device_coll_free(perf_t *p);
/* A GPU collective mode's duet_coll_kind_t; the mode named `name`, or NULL. */
int perf_device_coll_kind(const perf_mode_t *m);
const perf_mode_t *perf_device_coll_find_mode(const char *name);
/* The current row's call as the GPU executor receives it (after the mode's setup). */
duet_coll_exec_call_t perf_device_coll_call(const perf_t *p);
/* perf_floor.c: the "# floor" line of a --device allreduce row (collective; rank 0 prints). */
void perf_floor_print(perf_t *p, size_t bytes, double measured_us);
#endif

/* perf_main.c: one row, the timed loop for one size of p->mode (collective: every rank).
 * Returns 1 when a row was produced (rank 0: *row), 0 on the other ranks, -1 on every rank
 * when the mode skips the size (*why says why). */
int perf_run_row(perf_t *p, size_t bytes, perf_row_t *row, const char **why);

/* perf_validate.c: duet-perf --validate: every algorithm of each collective mode forced in
 * turn over -b .. -e, the tuner's predictions against the medians measured (collective).
 * modes[0..nmodes) are collective modes; 0, or 1 when a result was wrong. */
int perf_validate(perf_t *p, const perf_mode_t *const *modes, int nmodes, int rounds);
/* duet-perf --calibrate: the tuner's alpha and beta measured anew, then every algorithm of
 * each collective mode forced over -b .. -e and the model's terms fitted to the medians
 * (duet_coll_fit.h), printed with their spreads and the fit's error and written to the tune
 * file (collective). 0, or 1 when a result was wrong. */
int perf_calibrate(perf_t *p, const perf_mode_t *const *modes, int nmodes, int rounds);

/* perf_coll.c: before duet_init, with the arguments parsed. Checks -a against the algorithm
 * table and sets DUET_ALGO for it (exits with a message on a bad name). */
void perf_coll_force_algo(const perf_t *p);
/* A collective mode's duet_coll_kind_t (-1: sendrecv); the mode named `name`, or NULL. */
int perf_coll_kind(const perf_mode_t *m);
const perf_mode_t *perf_coll_find_mode(const char *name);
/* The tuner's view of rank `rank`'s call of the current row (after the mode's setup). */
duet_coll_args_t perf_coll_args(const perf_t *p, int rank);
/* Prints the algorithms of a collective, one per line; 0, or -1 for an unknown one. */
int perf_coll_list_algos(FILE *f, const char *coll);
/* After duet_init: allocates the buffers for sizes up to -e (dies when it cannot). */
void perf_coll_alloc(perf_t *p);
void perf_coll_free(perf_t *p);

/* perf_fit.c: analysis of rows (from the sweep just run, or CSV files). perf_read_csv
 * appends a file's rows to *rows; perf_fit_report prints on `out`; perf_plot writes the PNG
 * with gnuplot. Each returns 0, or -1 after saying why on stderr. */
int perf_read_csv(const char *path, perf_row_t **rows, size_t *nrows);
int perf_fit_report(FILE *out, perf_row_t *rows, size_t nrows);
int perf_plot(const char *png, perf_row_t *rows, size_t nrows);

#endif

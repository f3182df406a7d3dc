/*
 * duet_cuda_proxy_state.h — the GPU proxy thread's state, shared by its files (inside src/cuda
 * only; the design: duet_cuda_proxy.c):
 *   duet_cuda_proxy.c         the thread's sweep, start and stop, the host quiet
 *   duet_cuda_proxy_target.c  the target side: applying the messages of other proxies
 *   duet_cuda_proxy_origin.c  the origin side: the ring's commands, sent, answered, completed
 */
#ifndef DUET_CUDA_PROXY_STATE_H
#define DUET_CUDA_PROXY_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include "cuda/duet_cuda_driver.h"
#include "cuda/duet_cuda_proxy.h"
#include "cuda/duet_cuda_state.h"
#include "proxy/duet_proxy_inbox.h"
#include "duet/duet_proxy_ring.h"

#define PROXY_CHUNK ((size_t)256 << 10) /* payload bytes of one message */
#define PROXY_BOX_SLOTS 4              /* messages in flight per origin and target */

enum { MSG_PUT = 1, MSG_GET, MSG_AMO, MSG_SIGNAL };
enum { PEND_NONE, PEND_PLAIN, PEND_GET, PEND_AMO };

typedef struct { /* a QUIET command taken, not complete yet */
    uint64_t ticket;
    uint64_t upto;       /* it waits for the answers of messages 1 .. upto (gseq) */
    duet_status_t st;    /* the first failure it reports */
    int blocking;
} quiet_t;

typedef struct { /* what the answer to one message completes */
    int kind;
    int blocking, last;
    uint64_t ticket;
    uint64_t gseq;   /* the message's number among all the proxy sent (1, 2, ...) */
    char *dst; /* PEND_GET: where the reply's payload goes */
    size_t len;
} pend_t;

struct duet_cuda_proxy {
    duet_cuda_heap_t *g;
    duet_heap_t *h;
    duet_comm_t root;
    duet_proxy_inbox_t *ib;
    duet_proxy_ring_t *ring;      /* mapped pinned host memory: the host's view */
    duet_proxy_ring_t *ring_dev;  /* the same, as kernels see it */
    unsigned long long *head_dev; /* the producers' ticket counter, in GPU memory */
    cudaStream_t stream;
    char *stage;                  /* pinned, two frames of DUET_PROXY_HDR + chunk: a put's chunks */
    cudaStream_t sstream;         /* the staging copies (device -> stage) */
    cudaEvent_t staged[2];        /* recorded after the copy into each frame */
    int st_frame;                 /* the frame that holds (or receives) the chunk at cur_done */
    size_t st_len;                /* its bytes, 0 when no copy into it was issued */
    uint64_t pf_ticket;           /* a command not taken yet whose first chunk is staged ... */
    int pf_frame;                 /* ... into this frame ... */
    size_t pf_len;                /* ... this many bytes (0: none) */
    char hdr[DUET_PROXY_HDR + DUET_PROXY_INLINE_MAX]; /* the frame of messages without payload, or
                                                       * with an inline put's few bytes */
    char *rstage;                 /* pinned, DUET_PROXY_HDR + chunk: replies with data */
    uint64_t *amo_host, *amo_dev; /* mapped word: an atomic's old value */
    int block_pinned;             /* the inbox's block is registered with CUDA (see proxy_make) */
    pthread_t thread;
    int running;
    _Atomic int stop;
    uint64_t next;                /* the next ticket to take */
    int busy;                     /* cur is in progress */
    duet_proxy_cmd_t cur;
    uint64_t cur_ticket;
    size_t cur_done;              /* bytes sent (PUT) or requested (GET) */
    int cur_sig_sent;
    pend_t *pend;                 /* npes x slots */
    uint64_t *harvested;          /* per pe: answers handled */
    duet_status_t *cmd_err;       /* per pe: first failure among the chunks of the command */
    uint8_t *failed;              /* per pe: declared failed (dead, or its endpoint broke) */
    duet_status_t sticky;         /* first failure no quiet taken so far covers */
    uint64_t gsent;               /* messages sent, to every pe (pend_t.gseq) */
    quiet_t quiets[DUET_PROXY_SLOTS]; /* pending quiets, oldest first (each holds a ring slot) */
    unsigned q_head, q_tail;
    _Atomic uint64_t settled;     /* every ticket below it is complete at its target */
    cudaStream_t qstream;         /* the host quiet's reads of the ticket counter */
};

/* ---- across the files */
/* duet_cuda_proxy_target.c: applies one batch of the messages of origin that have arrived and
 * answers them; 1 when it applied any */
int duet_cuda_proxy_serve(duet_cuda_proxy_t *px, int origin);

/* duet_cuda_proxy_origin.c */
/* the answers pe has given since the last look; 1 when any */
int duet_cuda_proxy_harvest(duet_cuda_proxy_t *px, int pe);
/* every message to pe that is not answered yet fails with st (pe is gone) */
void duet_cuda_proxy_fail_pe(duet_cuda_proxy_t *px, int pe, duet_status_t st);
/* moves the current command on; 1 when it did something */
int duet_cuda_proxy_advance(duet_cuda_proxy_t *px);
/* takes the next command when its producer has published it; 1 when taken */
int duet_cuda_proxy_take(duet_cuda_proxy_t *px);
/* completes the pending quiets whose messages are all answered; 1 when any completed */
int duet_cuda_proxy_complete_quiets(duet_cuda_proxy_t *px);
/* 1 while a command, a quiet or an answer is outstanding */
int duet_cuda_proxy_outstanding(duet_cuda_proxy_t *px);
/* no progress for DUET_WAIT_TIMEOUT: everything outstanding fails, kernels are told */
void duet_cuda_proxy_time_out(duet_cuda_proxy_t *px);

#endif

/*
 * duet_proxy_ring.h — the command ring between device code (duet_device.cuh) and the host
 * proxy thread (src/cuda/duet_cuda_proxy.c), for device calls whose target pe is remote (its
 * GPU heap part is not mapped here: another host, or every other pe with DUET_CUDA_PEERS=proxy).
 * Internal layout, not API: installed only because the header-only device API needs it.
 * Plain C (host and device compilers both read it).
 *
 * One ring per process and GPU heap, in pinned host memory mapped into the GPU
 * (cudaHostAlloc Mapped | Portable), DUET_PROXY_SLOTS slots of a command line and a
 * completion line; the producer counter lives in GPU memory (only this process's kernels
 * touch it, so a device-scope atomic suffices and no atomic ever crosses PCIe).
 *
 * Producer (any device thread):
 *   t = atomicAdd(head, 1)                       its ticket; slot s = t % SLOTS
 *   wait until done[s].free == t                 the slot's previous user is finished
 *   write cmd[s] (plain stores), then cmd[s].ready = t + 1 with st.release.sys
 *   blocking command: wait until done[s].done == t + 1 (ld.acquire.sys), read status /
 *   result, then done[s].free = t + SLOTS (the waiter itself frees the slot, so nobody
 *   overwrites its completion before it has read it)
 * Consumer (the proxy, one thread, tickets in order):
 *   wait until cmd[s].ready == t + 1 (acquire), copy the command out;
 *   a non-blocking command: done[s].free = t + SLOTS at once;
 *   a blocking one: status / result, then done[s].done = t + 1 (release) when complete.
 * Every device wait here also polls the communicator's abort word (as every device wait).
 */
#ifndef DUET_PROXY_RING_H
#define DUET_PROXY_RING_H

#include <stdint.h>

#define DUET_PROXY_SLOTS 512u

/* cmd.op: the operation, DUET_PROXY_BLOCKING or'ed in when the issuing thread waits */
enum {
    DUET_PROXY_PUT = 1,  /* bytes from the local device address laddr to roff on pe; with
                          * sig_off != DUET_PROXY_NO_SIGNAL, then the signal (value, sig_op) */
    DUET_PROXY_GET = 2,  /* bytes from roff on pe to the local device address laddr */
    DUET_PROXY_AMO = 3,  /* atomic amo_op (duet_amo_op_t) of `width` bytes at roff on pe;
                          * operand value, compare cond; the old value in done.result */
    DUET_PROXY_SIGNAL = 4, /* signal update (sig_op) of the uint64 at sig_off on pe by value */
    DUET_PROXY_QUIET = 5,  /* completes when every earlier command is complete at its target */
    DUET_PROXY_INLINE = 0x40, /* PUT of at most DUET_PROXY_INLINE_MAX bytes: they ride in cond
                               * (little-endian, first byte lowest), laddr unused */
    DUET_PROXY_BLOCKING = 0x80,
    DUET_PROXY_OP_MASK = 0x3f
};

#define DUET_PROXY_INLINE_MAX 8u

/* cmd.amo_op: the order of the library's duet_amo_op_t (checked where the proxy is built) */
enum {
    DUET_PROXY_AMO_FETCH, DUET_PROXY_AMO_SET, DUET_PROXY_AMO_SWAP, DUET_PROXY_AMO_CSWAP, DUET_PROXY_AMO_ADD
};

#define DUET_PROXY_NO_SIGNAL (~(uint64_t)0)

typedef struct duet_proxy_cmd {
    uint64_t ready;   /* ticket + 1, stored last (release) */
    uint8_t op;       /* DUET_PROXY_* (| DUET_PROXY_INLINE, DUET_PROXY_BLOCKING) */
    uint8_t sig_op;   /* DUET_SIGNAL_SET / _ADD */
    uint8_t amo_op;   /* duet_amo_op_t */
    uint8_t width;    /* atomics: 4 or 8 */
    int32_t pe;       /* target, as a world (heap) pe */
    uint64_t roff;    /* offset in the target's GPU heap part */
    uint64_t laddr;   /* local device address (put source, get destination) */
    uint64_t bytes;
    uint64_t value;   /* signal value, atomic operand */
    uint64_t cond;    /* compare_swap's compare value; an inline put's bytes */
    uint64_t sig_off; /* put with signal: the signal's offset, else DUET_PROXY_NO_SIGNAL */
} duet_proxy_cmd_t;

typedef struct duet_proxy_done {
    uint64_t free;    /* the ticket that may use the slot next (starts at the slot index) */
    uint64_t done;    /* ticket + 1 when a blocking command is complete (release) */
    int32_t status;   /* DUET_OK or the failure (duet_status_t) */
    int32_t pad0;
    uint64_t result;  /* an atomic's old value */
    uint64_t pad[4];
} duet_proxy_done_t;

typedef struct duet_proxy_ring {
    duet_proxy_cmd_t cmd[DUET_PROXY_SLOTS];
    duet_proxy_done_t done[DUET_PROXY_SLOTS];
} duet_proxy_ring_t;

#ifdef __cplusplus
static_assert(sizeof(duet_proxy_cmd_t) == 64 && sizeof(duet_proxy_done_t) == 64, "proxy ring lines");
#else
_Static_assert(sizeof(duet_proxy_cmd_t) == 64 && sizeof(duet_proxy_done_t) == 64, "proxy ring lines");
#endif

#endif

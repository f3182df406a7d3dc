/*
 * duet_cuda_sig_kern.h — call signatures on the GPU: what the host side of the GPU
 * collectives (C) and their kernels (CUDA C++) share. The design on the host is in
 * src/coll/duet_coll_sig.h; this is its GPU part.
 *
 * A GPU collective's signature is one word: its number on the communicator (the host's
 * numbering: host and GPU collectives count alike) in the high 32 bits, the hash of its
 * arguments (duet_coll_sig_hash) in the low 32:
 *
 *   word = (uint32_t)call << 32 | hash        0: a send / receive (they carry no signature)
 *
 * Every kernel of a collective (the one- and two-shot kernels, the direct kernels, the schedule
 * executor) first writes its word into its own line for the call, in the GPU collectives'
 * scratch, before it signals anyone:
 *
 *   sigline[call % DUET_CUDA_SIG_LINES]     (a local store: a flag released after it waits
 *                                            for nothing remote)
 *
 * and a peer reads it where it lies (a load through the mapping, off the fast path: while
 * waiting, or when a flag cannot tell). The flag kernels (shot, direct) also put a 16-bit tag
 * of the word into every ready flag they release (duet_cuda_sig_flag: the epoch above it), so
 * the load that sees a flag sees the tag. The executor writes its word into the last 8 bytes
 * of every inbox slot it fills (a slot's data never reaches them). Checks:
 *   - a flag kernel that sees peer q's ready flag of its own epoch compares the flag's tag with
 *     its own: another tag is a mismatch (q's flag came from a call with other arguments, or
 *     from another call), found with no further load. A flag of a later epoch (q ran on) sends
 *     it to q's line, written before the flag: another word there is a mismatch, unless the
 *     line is already that of a call DUET_CUDA_SIG_LINES or more later, which cannot be told
 *     from a match. Two words of one tag (one pair of differing calls in 65,536) pass this
 *     check; the wait's look at the line (below) and the host's comparison of the neighbours'
 *     published calls when a call is queued still see them;
 *   - the executor compares every message's word with its own as it takes the message (read
 *     before the data moves, judged after, before the slot is freed): a message of another call
 *     (one a peer sent in a call where I sent or received something else) fails the call, so
 *     its data is never returned as this one's;
 *   - every wait on a peer looks at its line for my call now and then (with the abort word):
 *     the same call number with another hash is a mismatch at once, whichever kernels the two
 *     sides run.
 * A kernel that finds a mismatch records it in the mapped host word of the communicator's GPU
 * collectives (duet_cuda_fail_t: the first finding) and stops with DUET_ERR_INVALID_ARG; the
 * host reports it (both ranks, the differing field, from the calls both published on the host)
 * and revokes the communicator at its next call or duet_comm_status.
 */
#ifndef DUET_CUDA_SIG_KERN_H
#define DUET_CUDA_SIG_KERN_H

#include <stdint.h>

#define DUET_CUDA_SIG_LINES 16 /* lines per writer: calls a peer may run ahead and still be checked */

/* A GPU collective's failure, in mapped pinned host memory: status first (the first failure,
 * sticky); a mismatch also says with whom (claimed 3, the rest, claimed 1, then status). */
typedef struct {
    int32_t status;
    int32_t claimed; /* 0; 3 while peer, mine, theirs are written; 1 once they are; 2 reported */
    int32_t peer;    /* the rank whose word differed */
    int32_t pad;
    uint64_t mine;   /* my word */
    uint64_t theirs; /* what I found: its line, or the message's word */
} duet_cuda_fail_t;

#ifdef __CUDACC__
#define DUET_CUDA_SIG_HD __host__ __device__
#else
#define DUET_CUDA_SIG_HD
#endif

DUET_CUDA_SIG_HD static inline uint64_t duet_cuda_sig_word(uint64_t call, uint32_t hash)
{
    return (uint64_t)(uint32_t)call << 32 | hash;
}

/* The 16-bit tag of a word that a ready flag carries (the call number and the hash folded). */
DUET_CUDA_SIG_HD static inline uint64_t duet_cuda_sig_tag(uint64_t word)
{
    uint32_t x = (uint32_t)word ^ (uint32_t)(word >> 32);
    return (x ^ x >> 16) & 0xffff;
}

/* A ready flag of epoch e for the call of `word`: e in the high 48 bits (e << 16 is the
 * least value a wait for e accepts), the word's tag in the low 16. */
DUET_CUDA_SIG_HD static inline uint64_t duet_cuda_sig_flag(uint64_t e, uint64_t word)
{
    return e << 16 | duet_cuda_sig_tag(word);
}

/* The index of the line for the call of `word`. */
DUET_CUDA_SIG_HD static inline uint64_t duet_cuda_sig_line(uint64_t word)
{
    return (word >> 32) % DUET_CUDA_SIG_LINES;
}

#endif

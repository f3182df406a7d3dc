/*
 * duet_comm_ft.h — what the fault-tolerance protocols share: duet_comm_ft.c (revoke, agree and
 * shrink; the consensus of members that all map each other's memory) and duet_comm_ft_net.c
 * (the consensus when some members are on other hosts).
 *
 * A protocol word of member r is a field of r's duet_ft_area_t (src/heap/duet_heap.h) for the
 * communicator: a load where r's segment is mapped here, a get through r's endpoint where it
 * is not. Sequence numbers: call << 8 | attempt, the call being the communicator's count of
 * agree / shrink calls (the same on every survivor, since they make the same calls).
 */
#ifndef DUET_COMM_FT_H
#define DUET_COMM_FT_H

#include "core/duet_comm.h"

static inline uint64_t duet_ft_seq(uint64_t call, int attempt) { return call << 8 | (uint64_t)attempt; }
static inline size_t duet_ft_set_words(int size) { return ((size_t)size + 63) / 64; }
static inline int duet_ft_set_has(const uint64_t *set, int r) { return (int)(set[r / 64] >> (r % 64) & 1); }
static inline void duet_ft_set_add(uint64_t *set, int r) { set[r / 64] |= 1ull << (r % 64); }

/* The wait context of the protocols: c's doorbell and deadline, not its abort word (they must
 * run on failed and revoked communicators). */
void duet_ft_protocol_ctx(duet_comm_t c, duet_wait_ctx_t *ctx);

/* Reads `len` bytes at `field` (an offset in duet_ft_area_t) of member r's area. */
duet_status_t duet_ft_read(duet_comm_t c, int r, size_t field, void *buf, size_t len);

/* Waits until the 8-byte word at `field` of member r's area is >= seq (*seen = 1; what it
 * announces may then be read), or r is dead without it (*seen = 0). `what` names the word in
 * the message of a wait that fails (deadline). A read that fails because r died counts as
 * r dead; any other failure is returned. */
duet_status_t duet_ft_await(duet_comm_t c, int r, size_t field, uint64_t seq, int *seen, const char *what,
                            const char *fn);

/* The consensus of call `call` with members on other hosts (duet_comm_ft_net.c): every
 * survivor returns the same *flag (the AND of the flags of every member outside *set; *flag
 * is mine on entry) and the same failed set `set` (duet_ft_set_words(c->size) words; dead
 * members only, and those of an earlier agree). */
duet_status_t duet_ft_consensus_net(duet_comm_t c, uint64_t call, uint64_t *flag, uint64_t *set, const char *fn);

#endif

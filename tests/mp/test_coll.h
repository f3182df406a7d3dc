/*
 * test_coll.h — what the two files of test_coll share: test_coll.c (the program: buffers, cases,
 * the matrix, send / recv, wrong usage) and coll_expect.c (what each case must produce).
 * Include after duet_test.h.
 */
#ifndef TEST_COLL_H
#define TEST_COLL_H

#include "duet_test.h"

enum { AR, BC, RD, AG, RS, A2A, NCOLL };
#define RAW DUET_OP_COUNT /* "op" of the collectives that only move data: random bits */

typedef struct {
    const char *name;
    size_t es;
    int flt, sgn, ebits, mbits;
} dtinfo_t;
extern const dtinfo_t DT[DUET_DATATYPE_COUNT]; /* coll_expect.c */

/* The run's state (test_coll.c): this rank and the size of the communicator under test, and
 * what DUET_ALGO forces for each collective ("" = the tuner chooses). */
extern int me, np;
extern char forced[NCOLL][64];

/* ------------------------------------------------------------------ element bits */
static inline uint64_t mask_of(size_t es) { return es == 8 ? ~0ull : (1ull << (8 * es)) - 1; }
static inline uint64_t load_bits(const char *p, size_t es)
{
    uint8_t a; uint16_t b; uint32_t c; uint64_t d;
    switch (es) {
    case 1: memcpy(&a, p, 1); return a;
    case 2: memcpy(&b, p, 2); return b;
    case 4: memcpy(&c, p, 4); return c;
    default: memcpy(&d, p, 8); return d;
    }
}
static inline void store_bits(char *p, size_t es, uint64_t v)
{
    uint8_t a = (uint8_t)v; uint16_t b = (uint16_t)v; uint32_t c = (uint32_t)v;
    switch (es) {
    case 1: memcpy(p, &a, 1); return;
    case 2: memcpy(p, &b, 2); return;
    case 4: memcpy(p, &c, 4); return;
    default: memcpy(p, &v, 8); return;
    }
}
static inline int64_t sext(uint64_t v, size_t es) { return es == 8 ? (int64_t)v : (int64_t)(v << (64 - 8 * es)) >> (64 - 8 * es); }

/* A reference result (tc_reference). */
typedef struct {
    int exact;         /* compare bits (integers, MIN / MAX) */
    int nan;           /* a NaN is wanted                    */
    uint64_t bits;
    long double val, tol;
} ref_t;

/* ------------------------------------------------------------------ one case */
typedef struct {
    int coll, dt, op, root, inplace, off;
    size_t count;
    uint64_t K;
    int nulls;      /* count 0: NULL buffers; broadcast / reduce: NULL on non-roots */
    int want_fail;  /* 0, or the status every rank must get */
} case_t;

enum { W_POISON, W_INPUT, W_REDUCE };
typedef struct { int kind, rank; size_t idx; } want_t;

/* ------------------------------------------------------------------ coll_expect.c */
/* Bits of element i of rank `rank`'s input in the case with key K. */
uint64_t tc_gen(int dt, int op, uint64_t K, int rank, size_t i);
/* The reduction over ranks of element i of every rank's input. */
void tc_reference(int dt, int op, uint64_t K, size_t i, ref_t *r);
/* 1 if the element at p is what r wants, else 0 and a description of both in why. */
int tc_ref_match(int dt, const ref_t *r, const char *p, char *why, size_t len);
/* What element j of buffer `which` ('S', 'R', 'B') must hold; after = 0 before the call. */
want_t tc_want_of(const case_t *c, int which, size_t j, int after);
/* The status every rank must get for this case (DUET_OK: the call must work). */
duet_status_t tc_expected_status(const case_t *c);

#endif

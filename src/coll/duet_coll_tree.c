/*
 * Tree algorithms: pipelined reduce up a tree and broadcast down it, chunk by chunk.
 *
 *   binary tree (heap order)        chain                 double binary tree, 6 ranks
 *            0                      0 -> 1 -> 2 -> ...    tree A: 0(1(3,4),2(5))   data half A
 *          /   \                                          tree B: 5(4(2,1),3(0))   data half B
 *         1     2                                         interior in A: 0 1 2; in B: 5 4 3
 *        / \   / \
 *       3   4 5   6
 *
 * Relative rank v = (rank - root) mod n. In a tree, a chunk is reduced at each interior
 * node (its own input, then each child's partial, in child order) and sent to the parent;
 * the root has the result and sends it down; every node forwards it to its children as soon
 * as it has arrived. The double binary tree runs two such trees at once, each over half of
 * the data; tree B is tree A mirrored (v -> n-1-v), so with an even rank count every rank is
 * interior in one tree and a leaf in the other, and both directions of every link carry data.
 * Floating-point order: each element is combined bottom-up as above, once, at the root of its
 * tree; every rank receives the same bits.
 */
#include "coll/duet_coll.h"

typedef struct {
    int parent;   /* -1 at the root */
    int child[2];
    int nchild;
} node_t;

typedef enum { SHAPE_BINARY, SHAPE_CHAIN } shape_t;

/* The node of relative rank v in a tree of n ranks. */
static node_t node_of(shape_t shape, int v, int n)
{
    node_t nd = {-1, {-1, -1}, 0};
    if (shape == SHAPE_CHAIN) {
        nd.parent = v > 0 ? v - 1 : -1;
        if (v + 1 < n) nd.child[nd.nchild++] = v + 1;
        return nd;
    }
    nd.parent = v > 0 ? (v - 1) / 2 : -1;
    for (int c = 2 * v + 1; c <= 2 * v + 2 && c < n; c++) nd.child[nd.nchild++] = c;
    return nd;
}

typedef struct {
    shape_t shape;
    int root, mirror; /* mirror: tree B of the double binary tree */
    int up, down;     /* reduce toward the root; broadcast from it */
    int acc_buf;      /* where interior ranks accumulate (RECV, or TMP for reduce) */
} tree_t;

/* Rank of relative rank v, and back. */
static int rank_of(const tree_t *t, int v, int n)
{
    if (t->mirror) v = n - 1 - v;
    return (v + t->root) % n;
}
static int rel_of(const tree_t *t, int r, int n)
{
    int v = (r - t->root + n) % n;
    return t->mirror ? n - 1 - v : v;
}

/* The steps of one chunk [off, off+len) of one tree, for this rank. */
static void tree_chunk(const tree_t *t, const duet_coll_args_t *a, duet_sched_t *s, size_t off, size_t len)
{
    int n = a->nranks, v = rel_of(t, a->rank, n);
    node_t nd = node_of(t->shape, v, n);
    int parent = nd.parent >= 0 ? rank_of(t, nd.parent, n) : -1;
    int have = -1;                  /* step after which this rank holds the chunk's partial/result */
    int have_buf = DUET_BUF_SEND;   /* ... and where */
    int sent_up = -1;
    if (t->up) {
        for (int i = 0; i < nd.nchild; i++) {
            int child = rank_of(t, nd.child[i], n);
            have = duet_sched_recv_reduce(s, child, have_buf, off, t->acc_buf, off, len, have);
            have_buf = t->acc_buf;
        }
        if (parent >= 0) sent_up = duet_sched_send(s, parent, have_buf, off, len, have);
        else if (have_buf != DUET_BUF_RECV) /* a root with no children: its own input */
            have = duet_sched_copy(s, have_buf, off, DUET_BUF_RECV, off, len, have);
    }
    if (!t->down) return;
    if (parent >= 0) {
        have = duet_sched_recv(s, parent, DUET_BUF_RECV, off, len, sent_up);
        have_buf = DUET_BUF_RECV;
    } else if (!t->up) { /* broadcast root: sends its input, keeps a copy */
        have_buf = DUET_BUF_SEND;
        if (!a->in_place) duet_sched_copy(s, DUET_BUF_SEND, off, DUET_BUF_RECV, off, len, -1);
    } else {
        have_buf = DUET_BUF_RECV;
    }
    for (int i = 0; i < nd.nchild; i++)
        duet_sched_send(s, rank_of(t, nd.child[i], n), have_buf, off, len, have);
}

/* Runs up to two trees, each over its own byte range, column by column (chunk by chunk),
 * so that their messages interleave in the same order on every rank. */
static duet_status_t run_trees(const duet_coll_args_t *a, duet_sched_t *s, const tree_t *trees, int ntrees,
                               const size_t *lo, const size_t *hi)
{
    size_t chunk = duet_coll_chunk(a);
    for (size_t col = 0;; col++) {
        int any = 0;
        for (int t = 0; t < ntrees; t++) {
            size_t off = lo[t] + col * chunk;
            if (off >= hi[t]) continue;
            any = 1;
            tree_chunk(&trees[t], a, s, off, hi[t] - off < chunk ? hi[t] - off : chunk);
        }
        if (!any || s->error) break; /* a builder never runs on after an error */
    }
    return s->error;
}

static duet_status_t single_tree(const duet_coll_args_t *a, duet_sched_t *s, shape_t shape, int up, int down)
{
    size_t bytes = a->count * a->elem;
    int root = a->kind == DUET_COLL_ALLREDUCE ? 0 : a->root;
    int acc = a->kind == DUET_COLL_REDUCE && a->rank != root ? DUET_BUF_TMP : DUET_BUF_RECV;
    if (acc == DUET_BUF_TMP) s->tmp_bytes = bytes;
    tree_t t = {shape, root, 0, up, down, acc};
    s->recv_stable = a->kind == DUET_COLL_BROADCAST; /* each chunk is received once, then forwarded */
    size_t lo = 0;
    if (a->nranks == 1) {
        duet_sched_copy(s, DUET_BUF_SEND, 0, DUET_BUF_RECV, 0, bytes, -1);
        return s->error;
    }
    return run_trees(a, s, &t, 1, &lo, &bytes);
}

duet_status_t duet_coll_tree_allreduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    return single_tree(a, s, SHAPE_BINARY, 1, 1);
}

duet_status_t duet_coll_dbtree_allreduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    size_t bytes = a->count * a->elem;
    if (a->nranks == 1) return single_tree(a, s, SHAPE_BINARY, 1, 1);
    tree_t trees[2] = {{SHAPE_BINARY, 0, 0, 1, 1, DUET_BUF_RECV}, {SHAPE_BINARY, 0, 1, 1, 1, DUET_BUF_RECV}};
    size_t half = a->count / 2 * a->elem;
    size_t lo[2] = {0, half}, hi[2] = {half, bytes};
    return run_trees(a, s, trees, 2, lo, hi);
}

duet_status_t duet_coll_tree_broadcast(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    return single_tree(a, s, SHAPE_BINARY, 0, 1);
}

duet_status_t duet_coll_chain_broadcast(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    return single_tree(a, s, SHAPE_CHAIN, 0, 1);
}

duet_status_t duet_coll_tree_reduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    return single_tree(a, s, SHAPE_BINARY, 1, 0);
}

duet_status_t duet_coll_chain_reduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    return single_tree(a, s, SHAPE_CHAIN, 1, 0);
}

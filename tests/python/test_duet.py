"""test_duet.py — the Python module (python/duet) under duetrun, every result checked against
numpy: init, the world, split; symmetric arrays; put / get (blocking and nbi) around the ring;
atomics (fetch_add, inc, compare_swap, swap, set, fetch, and/or/xor) from every rank on one
counter; put_signal and signal_wait_until; barrier; allreduce (sum, max, min, prod, avg; in
place; int8 .. float64), broadcast, reduce, allgather, reduce_scatter, alltoall, send/recv on
a ring; collectives on a split communicator; collectives on DLPack tensors (objects with
__dlpack__ alone: 2-D, both ends, strided and unsupported ones refused); bad input raising
DuetError / ValueError / TypeError with a message. Prints "test_duet: rank R: PASS (N checks)"; exits 1 on a failure.

    DUET_LIB=build/lib/libduet.so.0 PYTHONPATH=python duetrun -n 3 python3 tests/python/test_duet.py
"""
import sys

import numpy as np

import duet

FAILS = []
CHECKS = [0]


def check(cond, what):
    CHECKS[0] += 1
    if not cond:
        FAILS.append(what)
        print(f"test_duet: rank {duet.world().rank}: FAIL {what}", file=sys.stderr, flush=True)


def same(got, want, what):
    check(np.array_equal(np.asarray(got), np.asarray(want)), f"{what}: got {np.asarray(got).ravel()[:6]}, "
                                                            f"want {np.asarray(want).ravel()[:6]}")


def raises(kind, fn, what):
    try:
        fn()
    except kind as e:
        check(len(str(e)) > 0, f"{what}: {kind.__name__} without a message")
        return e
    except Exception as e:  # noqa: BLE001 (the wrong kind)
        check(False, f"{what}: raised {type(e).__name__} ({e}), want {kind.__name__}")
        return None
    check(False, f"{what}: no {kind.__name__}")
    return None


def one_sided(w):
    me, n = w.rank, w.size
    right, left = (me + 1) % n, (me - 1) % n
    a = w.array(1000, np.int64)
    same(a, np.zeros(1000, np.int64), "a new symmetric array is zeroed")
    w.barrier()
    w.put(a, np.arange(1000, dtype=np.int64) + 1000 * me, right)
    w.barrier()
    same(a, np.arange(1000) + 1000 * left, "put from the left")
    got = np.empty(10, np.int64)
    w.get(got, a, right)
    same(got, np.arange(10) + 1000 * me, "get of my put, from the right")
    b = w.array((4, 5), np.float32, fill=None)
    w.put(b, np.full((4, 5), me + 0.5, np.float32), left, nbi=True)
    w.quiet()
    w.barrier()
    same(b, np.full((4, 5), right + 0.5, np.float32), "put_nbi from the right, 2-d")
    view = w.ptr(a, right)
    check(view is not None, "ptr to a peer on this host")
    if view is not None:
        same(view[:3], np.arange(3) + 1000 * me, "ptr: the right peer's copy")
    # atomics: every rank on rank 0's counter
    c = w.array(8, np.int64)
    u = w.array(4, np.uint64)
    f = w.array(2, np.float64)
    w.barrier()
    old = w.atomic_fetch_add(c, 0, me + 1, 0)
    check(0 <= old <= n * (n + 1) // 2, f"fetch_add old value {old}")
    w.atomic_inc(c, 1, 0)
    w.atomic_add(c, 2, 10, 0)
    w.atomic_or(u, 0, 1 << me, 0)
    w.atomic_xor(u, 1, 1 << me, 0)
    if me == n - 1:
        w.atomic_set(c, 3, 77, 0)
        check(w.atomic_swap(c, 3, 78, 0) == 77, "swap returns the old value")
        check(w.atomic_compare_swap(c, 3, 78, 79, 0) == 78, "compare_swap succeeds")
        check(w.atomic_compare_swap(c, 3, 1, 80, 0) == 79, "compare_swap fails: the value stays")
        w.atomic_set(f, 1, 2.5, 0)
        check(w.atomic_fetch(f, 1, 0) == 2.5, "float64 set / fetch")
    w.barrier()
    if me == 0:
        same(c[:4], [n * (n + 1) // 2, n, 10 * n, 79], "counters after every rank's atomics")
        same(u[:2], [(1 << n) - 1, (1 << n) - 1], "or / xor of every rank's bit")
    check(w.atomic_fetch(c, 1, 0) == n, "fetch of rank 0's counter")
    w.barrier()
    w.atomic_and(u, 0, 1, 0)
    w.barrier()
    if me == 0:
        check(u[0] == 1, f"and: {u[0]}")
    # signals: put with a signal, wait for it
    data = w.array(64, np.int32)
    sig = w.array(1, np.uint64)
    w.barrier()
    w.put_signal(data, np.full(64, me, np.int32), sig, 0, 5, right)
    v = w.signal_wait_until(sig, 0, duet.CMP_EQ, 5)
    check(v == 5, f"signal value {v}")
    same(data, np.full(64, left, np.int32), "the data before its signal")
    w.barrier()
    for x in (a, b, c, u, f, data, sig):
        w.free(x)
    # bad input
    raises(duet.DuetError, lambda: w.put(w_probe(w), np.zeros(1), n + 3), "put to a rank out of range")
    e = raises(duet.DuetError, lambda: w.put(np.zeros(4), np.zeros(4), right), "put into non-symmetric memory")
    if e is not None:
        check(e.status == "DUET_ERR_INVALID_ARG", f"non-symmetric put: {e.status}")
    raises(ValueError, lambda: w.put(PROBE[0], np.zeros(100), right), "put larger than its destination")
    raises(TypeError, lambda: w.atomic_add(PROBE[0], 0, 1.5, right), "an atomic add on float64")
    raises(IndexError, lambda: w.atomic_inc(PROBE[1], 9, right), "an atomic past the array")


PROBE = []


def w_probe(w):
    return PROBE[0]


def collectives(w, tag):
    me, n = w.rank, w.size
    for dt in (np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64):
        for count in (1, 17, 4099):
            x = ((np.arange(count) * 3 + me) % 5).astype(dt)
            allx = np.stack([((np.arange(count) * 3 + r) % 5).astype(dt) for r in range(n)])
            same(w.allreduce(x), allx.sum(0, dtype=np.float64).astype(dt), f"{tag} allreduce sum {np.dtype(dt)} {count}")
            same(w.allreduce(x, op="max"), allx.max(0), f"{tag} allreduce max {np.dtype(dt)} {count}")
            same(w.allreduce(x, op="min"), allx.min(0), f"{tag} allreduce min {np.dtype(dt)} {count}")
            y = x.copy()
            w.allreduce(y, y)
            same(y, allx.sum(0, dtype=np.float64).astype(dt), f"{tag} allreduce in place {np.dtype(dt)} {count}")
        p = ((np.arange(9) + me) % 2 + 1).astype(dt)
        allp = np.stack([((np.arange(9) + r) % 2 + 1).astype(dt) for r in range(n)])
        same(w.allreduce(p, op="prod"), allp.prod(0, dtype=np.float64).astype(dt), f"{tag} prod {np.dtype(dt)}")
    xf = np.arange(10, dtype=np.float64) * (me + 1)
    same(w.allreduce(xf, op="avg"), np.arange(10) * (n + 1) / 2, f"{tag} avg float64")
    root = n - 1
    bc = np.arange(33, dtype=np.int32) if me == root else np.zeros(33, np.int32)
    same(w.broadcast(bc, root), np.arange(33), f"{tag} broadcast from {root}")
    r = w.reduce(np.full(7, me + 1, np.int64), op="sum", root=0)
    if me == 0:
        same(r, np.full(7, n * (n + 1) // 2), f"{tag} reduce to 0")
    g = w.allgather(np.full(3, me, np.float32))
    same(g, np.repeat(np.arange(n, dtype=np.float32), 3).reshape(n, 3), f"{tag} allgather")
    rs = w.reduce_scatter(np.arange(4 * n, dtype=np.int64) + me)
    same(rs, n * np.arange(4 * me, 4 * me + 4) + n * (n - 1) // 2, f"{tag} reduce_scatter")
    a2a = w.alltoall(np.arange(2 * n, dtype=np.int32) + 100 * me)
    same(a2a, np.concatenate([100 * q + np.arange(2 * me, 2 * me + 2) for q in range(n)]), f"{tag} alltoall")
    if n > 1:
        right, left = (me + 1) % n, (me - 1) % n
        out = np.full(5, me, np.float64)
        got = np.empty(5, np.float64)
        if me % 2 == 0:
            w.send(out, right)
            w.recv(got, left)
        else:
            w.recv(got, left)
            w.send(out, right)
        same(got, np.full(5, left), f"{tag} send / recv around the ring")
    raises(ValueError, lambda: w.allreduce(np.zeros(3), np.zeros(4)), f"{tag} allreduce of mismatched arrays")
    raises(TypeError, lambda: w.allreduce(np.zeros(3, np.complex64)), f"{tag} allreduce of complex64")
    raises(ValueError, lambda: w.allreduce(np.zeros(3), op="median"), f"{tag} an unknown op")
    if n > 1:
        raises(ValueError, lambda: w.reduce_scatter(np.zeros(n * 2 + 1)), f"{tag} reduce_scatter of unequal blocks")


class Tensor:
    """A tensor that speaks only DLPack (as a PyTorch or JAX one does): a numpy array's memory
    behind __dlpack__ / __dlpack_device__, with no buffer protocol and no numpy type."""

    def __init__(self, a, device=None):
        self.a = a
        self.device = device

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.device or self.a.__dlpack_device__()


def dlpack(w):
    n, r = w.size, w.rank
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) + r)
    y = np.zeros((2, 3), np.float32)
    w.allreduce(x, y)
    same(y, np.arange(6).reshape(2, 3) * n + n * (n - 1) / 2, "DLPack allreduce: send a tensor")
    out = Tensor(np.zeros(6, np.int64))
    w.allreduce(Tensor(np.full(6, r + 1, np.int64)), out)
    same(out.a, np.full(6, n * (n + 1) // 2), "DLPack allreduce: both tensors")
    b = Tensor(np.full(5, r, np.int32))
    w.broadcast(b, root=n - 1)
    same(b.a, np.full(5, n - 1), "DLPack broadcast")
    g = Tensor(np.zeros((n, 3), np.float64))
    w.allgather(Tensor(np.full(3, float(r))), g)
    same(g.a, np.repeat(np.arange(n, dtype=np.float64), 3).reshape(n, 3), "DLPack allgather")
    v = Tensor(np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2])  # strided: not C-contiguous
    raises(ValueError, lambda: w.allreduce(v, np.zeros(6, np.int32)), "DLPack strided tensor")
    raises(TypeError, lambda: w.allreduce(Tensor(np.zeros(3, np.complex64)), np.zeros(3, np.complex64)),
           "DLPack complex64 tensor")
    raises(TypeError, lambda: w.allreduce(Tensor(np.zeros(3, np.float32), device=(14, 0)), np.zeros(3, np.float32)),
           "DLPack tensor on an unsupported device (type 14)")


def main():
    duet.init()
    w = duet.world()
    check(w.size >= 1 and 0 <= w.rank < w.size, f"world {w.rank} of {w.size}")
    check(duet.version().startswith("0."), f"version {duet.version()}")
    PROBE.extend([w.array(4, np.float64), w.array(4, np.int64)])
    one_sided(w)
    collectives(w, "world")
    dlpack(w)
    half = w.split(w.rank % 2, key=-w.rank)  # reversed order inside each half
    members = [r for r in range(w.size) if r % 2 == w.rank % 2][::-1]
    check(half.size == len(members) and half.rank == members.index(w.rank), f"split: {half}")
    collectives(half, f"split {w.rank % 2}")
    none = w.split(-1 if w.rank == 0 else 0)
    check((none is None) == (w.rank == 0), "split with a negative color joins none")
    if none is not None:
        none.destroy()
    half.destroy()
    for x in PROBE:
        w.free(x)
    raises(duet.DuetError, lambda: w.free(PROBE[0]), "free twice")
    bad = sum(1 for _ in FAILS)
    total = w.allreduce(np.array([bad], np.int64))[0]
    print(f"test_duet: rank {w.rank}: {'PASS' if not FAILS else 'FAIL'} ({CHECKS[0]} checks)", flush=True)
    duet.finalize()
    return 1 if FAILS or total else 0


if __name__ == "__main__":
    sys.exit(main())

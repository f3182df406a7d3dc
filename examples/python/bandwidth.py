"""bandwidth.py — the first hands-on step in Python: an allreduce sweep, alpha and beta.

Like nccl-tests' all_reduce_perf -b 8 -e 1G -f 2: float32 sums from MIN to MAX bytes by a
factor, each size timed call by call (a barrier, then the call; the median over the calls;
every result checked), then T(n) = alpha + n / beta fitted by least squares on the relative
error, so small and large sizes weigh the same. Prints, per size, the time, algbw and busbw
(2(n-1)/n of algbw) and the fit's prediction, then alpha and beta.

    DUET_LIB=build/lib/libduet.so.0 PYTHONPATH=python build/bin/duetrun -n 4 \\
        python3 examples/python/bandwidth.py [-b 8] [-e 64M] [-f 2] [-n 50]
"""
import argparse
import sys
import time

import numpy as np

import duet


def size_arg(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * mult[text[-1].upper()] if text[-1].upper() in mult else int(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", type=size_arg, default=8)
    ap.add_argument("-e", type=size_arg, default=64 << 20)
    ap.add_argument("-f", type=int, default=2)
    ap.add_argument("-n", type=int, default=50, help="timed calls per size")
    args = ap.parse_args()
    duet.init()
    w = duet.world()
    n = w.size
    sizes, times = [], []
    if w.rank == 0:
        print(f"# allreduce float32 sum, {n} ranks, Duet {duet.version()}; time = median of {args.n} calls")
        print(f"# {'bytes':>10} {'time_us':>10} {'algbw_GBps':>11} {'busbw_GBps':>11}")
    bytes_ = args.b
    while bytes_ <= args.e:
        count = max(bytes_ // 4, 1)
        x = np.full(count, float(w.rank + 1), np.float32)
        y = np.empty_like(x)
        want = float(n * (n + 1) // 2)
        t = []
        for i in range(args.n + 3):
            w.barrier()
            t0 = time.perf_counter()
            w.allreduce(x, y)
            t1 = time.perf_counter()
            if i >= 3:
                t.append((t1 - t0) * 1e6)
        if not (y == want).all():
            print(f"bandwidth: rank {w.rank}: wrong result at {bytes_} bytes", file=sys.stderr)
            return 1
        # the slowest rank's median is the call's time
        us = float(w.allreduce(np.array([np.median(t)]), op="max")[0])
        sizes.append(count * 4)
        times.append(us)
        if w.rank == 0:
            algbw = count * 4 / us / 1e3
            print(f"  {count * 4:>10} {us:>10.2f} {algbw:>11.3f} {algbw * 2 * (n - 1) / n:>11.3f}")
        bytes_ *= args.f
    if w.rank == 0 and len(sizes) >= 2:
        s, t = np.array(sizes, float), np.array(times, float)
        # min sum ((alpha + s * inv_beta) / t - 1)^2 over alpha, inv_beta >= 0
        a = np.stack([1 / t, s / t], axis=1)
        alpha, inv_beta = np.linalg.lstsq(a, np.ones_like(t), rcond=None)[0]
        if alpha < 0:
            alpha, inv_beta = 0.0, float(np.sum(s / t) / np.sum((s / t) ** 2))
        if inv_beta <= 0:
            alpha, inv_beta = float(np.sum(1 / t) / np.sum(1 / t ** 2)), 0.0
        err = np.abs((alpha + s * inv_beta) - t) / t
        beta = 1 / inv_beta / 1e3 if inv_beta > 0 else float("inf")
        print(f"# fit T(n) = alpha + n / beta: alpha {alpha:.3f} us, beta {beta:.3f} GB/s "
              f"(median |error| {100 * np.median(err):.0f} %, worst {100 * err.max():.0f} %)")
    duet.finalize()
    return 0


if __name__ == "__main__":
    sys.exit(main())

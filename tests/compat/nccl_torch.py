#!/usr/bin/env python3
"""nccl_torch.py — PyTorch's torch.distributed (backend "nccl", CUDA tensors) on Duet's
libnccl.so.2: every call PyTorch makes of NCCL, each result checked.

Launch it with torchrun (tests/compat/nccl_torch.sh does, with LD_PRELOAD of Duet's library):

    LD_PRELOAD=build/lib/libnccl.so.2 torchrun --standalone --nproc_per_node=4 tests/compat/nccl_torch.py

Ranks take GPU (LOCAL_RANK mod visible GPUs), as Duet places its GPU heap, so 2 or 4 processes
run on one or two GPUs (several ranks per GPU: run under CUDA MPS, scripts/with-mps.sh).

Covers: all_reduce (sum, max, min, product, avg, PreMulSum with a float and with a device-tensor
factor through _make_nccl_premul_sum; half, float, double), async all_reduce, broadcast, reduce, all_gather,
all_gather_into_tensor, reduce_scatter, reduce_scatter_tensor, all_to_all_single (even splits
and uneven ones with empty blocks: sends to self inside NCCL groups), all_to_all, gather,
scatter, send / recv, batch_isend_irecv, barrier, new_group (collectives on subgroups), over
float32 / float16 / bfloat16 / float64 / int8 / uint8 / int32 / int64; eight more process groups
with every collective on each; torch.cuda.graph capturing all_reduce and all_gather_into_tensor
on the world and all_reduce on two subgroups, replayed 200 times, results checked.

Options: --bind-device (init_process_group(device_id=...): eager init, and new_group may use
ncclCommSplit). With DUET_NCCL_TORCH_LIB set to the library's path, each rank checks that
every NCCL call it makes resolves to this library (dladdr; PyTorch also maps its bundled
libnccl, unused).
Prints "nccl_torch: rank R: PASS (N checks)" then "nccl_torch: rank R: destroyed"; exits 1 on a
failed check.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist

FAILS = []
CHECKS = [0]


def check(cond, what):
    CHECKS[0] += 1
    if not cond:
        FAILS.append(what)
        print(f"nccl_torch: rank {dist.get_rank()}: FAIL {what}", file=sys.stderr, flush=True)


def same(got, want, what, tol=0.0):
    got = got.detach().to("cpu")
    want = want.detach().to("cpu")
    if got.shape != want.shape:
        return check(False, f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}")
    if tol == 0.0:
        ok = torch.equal(got, want)
    else:
        ok = torch.allclose(got.double(), want.double(), rtol=tol, atol=tol)
    if not ok:
        bad = (got.double() - want.double()).abs().argmax().item() if got.numel() else 0
        return check(False, f"{what}: element {bad} is {got.flatten()[bad].item()}, "
                            f"want {want.flatten()[bad].item()}")
    check(True, what)


FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
SIZES = [1, 1000, (1 << 20) + 3]


def value(rank, n, dtype, dev, salt=0, hi=7):
    """Rank `rank`'s input: small integers, exact in every type (sums of 4 ranks fit int8)."""
    i = torch.arange(n, device=dev, dtype=torch.int64)
    return ((i * 7 + rank * 3 + salt) % hi).to(dtype)


def tol_for(dtype):
    return {torch.float16: 2e-3, torch.bfloat16: 1e-2}.get(dtype, 1e-6)


def collectives(ws, me, dev):
    n_all = list(range(ws))
    for dtype in FLOATS + INTS:
        for n in SIZES:
            ins = [value(r, n, dtype, dev) for r in n_all]
            stack = torch.stack([x.double() for x in ins])
            tag = f"{dtype} n={n}"
            # all_reduce: sum, max, min, product (small values), avg (floats)
            for op, ref in ((dist.ReduceOp.SUM, stack.sum(0)), (dist.ReduceOp.MAX, stack.max(0).values),
                            (dist.ReduceOp.MIN, stack.min(0).values)):
                t = ins[me].clone()
                dist.all_reduce(t, op=op)
                same(t, ref.to(dtype), f"all_reduce {op} {tag}")
            p_ins = [value(r, n, dtype, dev, hi=2) + 1 for r in n_all]  # 1 or 2: the product fits
            t = p_ins[me].clone()
            dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)
            same(t, torch.stack([x.double() for x in p_ins]).prod(0).to(dtype), f"all_reduce product {tag}")
            if dtype in FLOATS:
                t = ins[me].clone()
                dist.all_reduce(t, op=dist.ReduceOp.AVG)
                same(t, (stack.sum(0) / ws).to(dtype), f"all_reduce avg {tag}", tol_for(dtype))
                if dtype != torch.bfloat16:  # see premul()
                    premul(ws, me, dev, dtype, n, ins, stack, tag)
            # async form
            t = ins[me].clone()
            w = dist.all_reduce(t, async_op=True)
            w.wait()
            same(t, stack.sum(0).to(dtype), f"all_reduce async {tag}")
            # broadcast, reduce from / to a root that moves
            root = (n + n_all[-1]) % ws
            t = ins[me].clone()
            dist.broadcast(t, src=root)
            same(t, ins[root], f"broadcast root {root} {tag}")
            t = ins[me].clone()
            dist.reduce(t, dst=root, op=dist.ReduceOp.SUM)
            if me == root:
                same(t, stack.sum(0).to(dtype), f"reduce root {root} {tag}")
            # all_gather (list and tensor)
            outs = [torch.empty_like(ins[me]) for _ in n_all]
            dist.all_gather(outs, ins[me])
            for r in n_all:
                same(outs[r], ins[r], f"all_gather block {r} {tag}")
            big = torch.empty(ws * n, dtype=dtype, device=dev)
            dist.all_gather_into_tensor(big, ins[me])
            same(big, torch.cat(ins), f"all_gather_into_tensor {tag}")
            # reduce_scatter (list and tensor): block b of rank r's input is value(r, salt=b)
            blocks = [[value(r, n, dtype, dev, salt=b) for b in n_all] for r in n_all]
            want = torch.stack([blocks[r][me].double() for r in n_all]).sum(0).to(dtype)
            out = torch.empty(n, dtype=dtype, device=dev)
            dist.reduce_scatter(out, [x.clone() for x in blocks[me]], op=dist.ReduceOp.SUM)
            same(out, want, f"reduce_scatter {tag}")
            out = torch.empty(n, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(out, torch.cat(blocks[me]), op=dist.ReduceOp.SUM)
            same(out, want, f"reduce_scatter_tensor {tag}")
            if dtype in FLOATS:
                out = torch.empty(n, dtype=dtype, device=dev)
                dist.reduce_scatter_tensor(out, torch.cat(blocks[me]), op=dist.ReduceOp.AVG)
                same(out, (want.double() / ws).to(dtype), f"reduce_scatter_tensor avg {tag}", tol_for(dtype))


def premul(ws, me, dev, dtype, n, ins, stack, tag):
    """PreMulSum over half, float and double. Not bfloat16: PyTorch up to 2.11 hands NCCL a 4-byte
    float factor for a bfloat16 PreMulSum (pytorch/pytorch#190745), of which NCCL reads 2 bytes —
    the low half, zero for 0.5 — and it refuses a bfloat16 device factor outright; Duet reads the
    factor as NCCL does, so the result is NCCL's (zero), which no check here should bless."""
    make = getattr(dist, "_make_nccl_premul_sum", None)
    if make is None:
        if me == 0 and n == SIZES[0] and dtype == FLOATS[0]:
            print("nccl_torch: this PyTorch has no _make_nccl_premul_sum: PreMulSum not exercised", flush=True)
        return
    # a float factor: ncclScalarHostImmediate
    t = ins[me].clone()
    dist.all_reduce(t, op=make(0.5))
    same(t, (stack * 0.5).sum(0).to(dtype), f"all_reduce premul(0.5) {tag}")
    # a device tensor factor: ncclScalarDevice, read by the GPU in stream order; written on the
    # current stream just before the call (PyTorch's NCCL stream waits for it)
    factor = torch.full((1,), 2.0, dtype=dtype, device=dev)
    factor.fill_(3.0)
    t = ins[me].clone()
    dist.all_reduce(t, op=make(factor))
    same(t, (stack * 3).sum(0).to(dtype), f"all_reduce premul(device tensor 3) {tag}")
    # reduce_scatter and reduce with PreMulSum
    blocks = [torch.cat([value(r, n, dtype, dev, salt=b) for b in range(ws)]) for r in range(ws)]
    out = torch.empty(n, dtype=dtype, device=dev)
    dist.reduce_scatter_tensor(out, blocks[me], op=make(0.5))
    want = torch.stack([b[me * n:(me + 1) * n].double() * 0.5 for b in blocks]).sum(0).to(dtype)
    same(out, want, f"reduce_scatter_tensor premul(0.5) {tag}")
    t = ins[me].clone()
    dist.reduce(t, dst=ws - 1, op=make(factor))
    if me == ws - 1:
        same(t, (stack * 3).sum(0).to(dtype), f"reduce premul(device tensor 3) root {ws - 1} {tag}")


def alltoall(ws, me, dev):
    for dtype in (torch.float32, torch.int64, torch.bfloat16):
        for per in (1, 333, 65537):
            # even splits: block j of rank r goes to rank j
            inp = torch.cat([value(me, per, dtype, dev, salt=j) for j in range(ws)])
            out = torch.empty_like(inp)
            dist.all_to_all_single(out, inp)
            same(out, torch.cat([value(r, per, dtype, dev, salt=me) for r in range(ws)]),
                 f"all_to_all_single even {dtype} per={per}")
            # uneven: rank r sends split(r, j) elements to rank j; some are empty (self included)
            def split(r, j):
                return ((r * 2 + j) % 4) * per // 2

            ins = [split(me, j) for j in range(ws)]
            outs = [split(r, me) for r in range(ws)]
            inp = torch.cat([value(me, ins[j], dtype, dev, salt=10 + j) for j in range(ws)])
            out = torch.full((sum(outs),), -1, dtype=dtype, device=dev) if sum(outs) else \
                torch.empty(0, dtype=dtype, device=dev)
            dist.all_to_all_single(out, inp, output_split_sizes=outs, input_split_sizes=ins)
            same(out, torch.cat([value(r, outs[r], dtype, dev, salt=10 + me) for r in range(ws)]),
                 f"all_to_all_single uneven {dtype} per={per} in={ins} out={outs}")
            # list form
            inl = [value(me, per + j, dtype, dev, salt=20 + j) for j in range(ws)]
            outl = [torch.empty(per + me, dtype=dtype, device=dev) for _ in range(ws)]
            dist.all_to_all(outl, inl)
            for r in range(ws):
                same(outl[r], value(r, per + me, dtype, dev, salt=20 + me), f"all_to_all from {r} {dtype} per={per}")


def gather_scatter(ws, me, dev):
    for n in (1, 4099):
        for root in range(ws):
            x = value(me, n, torch.float32, dev, salt=root)
            gl = [torch.empty_like(x) for _ in range(ws)] if me == root else None
            dist.gather(x, gl, dst=root)
            if me == root:
                for r in range(ws):
                    same(gl[r], value(r, n, torch.float32, dev, salt=root), f"gather root {root} from {r} n={n}")
            sl = [value(root, n, torch.float32, dev, salt=30 + r) for r in range(ws)] if me == root else None
            y = torch.empty(n, dtype=torch.float32, device=dev)
            dist.scatter(y, sl, src=root)
            same(y, value(root, n, torch.float32, dev, salt=30 + me), f"scatter root {root} n={n}")


def point_to_point(ws, me, dev):
    for n in (1, 1000, (1 << 20) + 1):
        # send / recv in pairs (0-1, 2-3...): even ranks send first, odd receive first
        if ws % 2 == 0:
            peer = me ^ 1
            x = value(me, n, torch.float32, dev, salt=40)
            y = torch.empty(n, dtype=torch.float32, device=dev)
            if me % 2 == 0:
                dist.send(x, dst=peer)
                dist.recv(y, src=peer)
            else:
                dist.recv(y, src=peer)
                dist.send(x, dst=peer)
            same(y, value(peer, n, torch.float32, dev, salt=40), f"send/recv with {peer} n={n}")
        # batch_isend_irecv: a ring both ways
        right, left = (me + 1) % ws, (me - 1) % ws
        a = value(me, n, torch.float16, dev, salt=50)
        b = value(me, n, torch.float16, dev, salt=51)
        from_left = torch.empty_like(a)
        from_right = torch.empty_like(b)
        ops = [dist.P2POp(dist.isend, a, right), dist.P2POp(dist.irecv, from_left, left),
               dist.P2POp(dist.isend, b, left), dist.P2POp(dist.irecv, from_right, right)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        same(from_left, value(left, n, torch.float16, dev, salt=50), f"batch_isend_irecv from left n={n}")
        same(from_right, value(right, n, torch.float16, dev, salt=51), f"batch_isend_irecv from right n={n}")


def subgroups(ws, me, dev):
    """new_group: evens and odds (every rank in one), and all ranks; collectives on them."""
    evens, odds = list(range(0, ws, 2)), list(range(1, ws, 2))
    g_even = dist.new_group(evens)
    g_odd = dist.new_group(odds) if odds else None
    g_all = dist.new_group(list(range(ws)))
    mine, members = (g_even, evens) if me % 2 == 0 else (g_odd, odds)
    for n in (7, 100003):
        x = value(me, n, torch.float32, dev, salt=60)
        t = x.clone()
        dist.all_reduce(t, group=mine)
        same(t, torch.stack([value(r, n, torch.float32, dev, salt=60).double() for r in members]).sum(0).float(),
             f"all_reduce on new_group {members} n={n}")
        t = x.clone()
        dist.broadcast(t, src=members[-1], group=mine)
        same(t, value(members[-1], n, torch.float32, dev, salt=60), f"broadcast on new_group {members} n={n}")
        outs = [torch.empty_like(x) for _ in members]
        dist.all_gather(outs, x, group=mine)
        for i, r in enumerate(members):
            same(outs[i], value(r, n, torch.float32, dev, salt=60), f"all_gather on new_group {members} n={n}")
        t = x.clone()
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=g_all)
        same(t, torch.stack([value(r, n, torch.float32, dev, salt=60).double() for r in range(ws)]).max(0)
             .values.float(), f"all_reduce max on new_group(all) n={n}")
    dist.barrier(group=g_all, device_ids=[dev.index])
    return [g for g in (g_even, g_odd, g_all) if g is not None]


def group_sets(ws):
    """Eight process groups of different membership and order, as a Megatron job makes (data,
    tensor, pipeline parallel...): every rank is in the world-sized ones, and in one of each
    partition. PyTorch orders a group's ranks (group rank j is the j-th smallest member), so each
    list is sorted; groups of the same members are still communicators of their own."""
    half = max(ws // 2, 1)
    return [list(range(ws)), list(reversed(range(ws))), list(range(0, ws, 2)), list(range(1, ws, 2)),
            list(range(half)), list(range(half, ws)), [(r + 1) % ws for r in range(ws)], list(range(ws))]


def many_groups(ws, me, dev):
    """8 process groups (new_group; ncclCommSplit with --bind-device), on each of mine:
    all_reduce, all_gather_into_tensor, reduce_scatter_tensor, broadcast and a send/recv ring,
    each checked; then the same groups stay alive for graphs()."""
    made = []
    for i, members in enumerate(group_sets(ws)):
        if not members:
            continue
        members = sorted(members)
        g = dist.new_group(members)
        made.append((i, members, g))
    mine = [(i, m, g) for i, m, g in made if me in m]
    for i, members, g in mine:
        k, gr = len(members), members.index(me)
        tag = f"group {i} {members}"
        for n in (5, 65536 + 3):
            x = value(me, n, torch.float32, dev, salt=70 + i)
            t = x.clone()
            dist.all_reduce(t, group=g)
            same(t, torch.stack([value(r, n, torch.float32, dev, salt=70 + i).double() for r in members])
                 .sum(0).float(), f"all_reduce on {tag} n={n}")
            big = torch.empty(k * n, dtype=torch.float32, device=dev)
            dist.all_gather_into_tensor(big, x, group=g)
            # blocks in group-rank order: members[j] is group rank j
            same(big, torch.cat([value(r, n, torch.float32, dev, salt=70 + i) for r in members]),
                 f"all_gather_into_tensor on {tag} n={n}")
            blocks = torch.cat([value(me, n, torch.float32, dev, salt=80 + b) for b in range(k)])
            out = torch.empty(n, dtype=torch.float32, device=dev)
            dist.reduce_scatter_tensor(out, blocks, group=g)
            same(out, torch.stack([value(r, n, torch.float32, dev, salt=80 + gr).double() for r in members])
                 .sum(0).float(), f"reduce_scatter_tensor on {tag} n={n}")
            root = members[n % k]
            t = x.clone()
            dist.broadcast(t, src=root, group=g)
            same(t, value(root, n, torch.float32, dev, salt=70 + i), f"broadcast from {root} on {tag} n={n}")
            if k > 1:
                right, left = members[(gr + 1) % k], members[(gr - 1) % k]
                y = torch.empty(n, dtype=torch.float32, device=dev)
                ops = [dist.P2POp(dist.isend, x, right, group=g), dist.P2POp(dist.irecv, y, left, group=g)]
                for w in dist.batch_isend_irecv(ops):
                    w.wait()
                same(y, value(left, n, torch.float32, dev, salt=70 + i), f"send/recv ring on {tag} n={n}")
    return made


def graphs(ws, me, dev, made):
    """torch.cuda.graph capturing collectives on the world and on two of the groups: captured
    once, replayed 200 times with new inputs each time, every replay's result checked, and an
    accumulator written inside the graph checked at the end."""
    mine = sorted([(i, m, g) for i, m, g in made if me in m and len(m) > 1], key=lambda e: len(e[1]) == ws)[:2]
    n, reps = 4099, 200
    x = torch.zeros(n, dtype=torch.float32, device=dev)
    y = torch.zeros(n, dtype=torch.float32, device=dev)
    acc = torch.zeros(n, dtype=torch.float32, device=dev)
    gath = torch.zeros(ws * n, dtype=torch.float32, device=dev)
    sub = [(torch.zeros(n, dtype=torch.float32, device=dev), g, m) for i, m, g in mine]

    def body():
        y.copy_(x)
        dist.all_reduce(y)
        acc.add_(y)
        dist.all_gather_into_tensor(gath, x)
        for t, g, m in sub:
            t.copy_(x)
            dist.all_reduce(t, group=g)

    # warm-up on a side stream, as torch.cuda.graph asks (and the communicators exist before capture)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    acc.zero_()
    total = torch.zeros(n, dtype=torch.float64)
    ok = True
    for rep in range(reps):
        x.copy_(value(me, n, torch.float32, dev, salt=rep % 13, hi=11))
        graph.replay()
        want = torch.stack([value(r, n, torch.float32, dev, salt=rep % 13, hi=11).double() for r in range(ws)])
        total += want.sum(0).cpu()
        if rep % 17 == 0 or rep == reps - 1:  # a copy of the results back costs a sync: some replays
            got = y.double().cpu()
            if not torch.equal(got, want.sum(0).cpu()):
                ok = False
                check(False, f"graph replay {rep}: all_reduce result")
            if not torch.equal(gath.cpu(), torch.cat([value(r, n, torch.float32, dev, salt=rep % 13, hi=11)
                                                         for r in range(ws)]).cpu()):
                ok = False
                check(False, f"graph replay {rep}: all_gather_into_tensor result")
            for t, g, m in sub:
                if not torch.equal(t.double().cpu(), want[m].sum(0).cpu()):
                    ok = False
                    check(False, f"graph replay {rep}: all_reduce on group {m}")
    torch.cuda.synchronize()
    same(acc, total.float(), f"graph: the sum of {reps} replays' all_reduce")
    check(ok, "graph replays")
    if me == 0:
        print(f"nccl_torch: a graph of {2 + len(sub)} collectives ({len(sub)} on subgroups) replayed {reps} times",
              flush=True)
    del graph


NCCL_CALLS = ("ncclGetVersion", "ncclCommInitRankConfig", "ncclCommInitRank", "ncclAllReduce",
              "ncclBroadcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter", "ncclSend",
              "ncclRecv", "ncclGroupStart", "ncclGroupEnd", "ncclCommSplit", "ncclCommAbort",
              "ncclCommDestroy", "ncclRedOpCreatePreMulSum", "ncclCommGetAsyncError")


def served_by():
    """Where each NCCL call a program links resolves: the file that holds the symbol the global
    lookup finds (what libtorch's references bind to). PyTorch also maps its own bundled libnccl
    (it preloads it by path); mapped is not used — this asks which one the calls reach."""
    import ctypes

    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                    ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]

    scope = ctypes.CDLL(None)  # dlopen(NULL): the global lookup scope, LD_PRELOAD first
    where = {}
    for name in NCCL_CALLS:
        info = DlInfo()
        addr = ctypes.cast(getattr(scope, name), ctypes.c_void_p).value
        if scope.dladdr(ctypes.c_void_p(addr), ctypes.byref(info)) and info.dli_fname:
            where[name] = os.path.realpath(info.dli_fname.decode())
        else:
            where[name] = "?"
    return where


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bind-device", action="store_true", help="init_process_group(device_id=...)")
    args = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    ngpu = torch.cuda.device_count()
    dev = torch.device("cuda", local % ngpu)
    torch.cuda.set_device(dev)
    kw = {"device_id": dev} if args.bind_device else {}
    dist.init_process_group("nccl", **kw)
    ws, me = dist.get_world_size(), dist.get_rank()
    if me == 0:
        print(f"nccl_torch: torch {torch.__version__}, {ws} ranks on {ngpu} GPU(s), NCCL version "
              f"{torch.cuda.nccl.version()}, bind-device {args.bind_device}", flush=True)

    # the first collective creates the communicator: then see which library serves it
    t = torch.ones(1, device=dev)
    dist.all_reduce(t)
    same(t, torch.full((1,), float(ws)), "first all_reduce")
    lib = os.environ.get("DUET_NCCL_TORCH_LIB")
    if lib:
        where = served_by()
        elsewhere = {k: v for k, v in where.items() if v != os.path.realpath(lib)}
        check(not elsewhere, f"NCCL calls not served by {os.path.realpath(lib)}: {elsewhere}")
        if me == 0:
            print(f"nccl_torch: libnccl serving this process: {sorted(set(where.values()))}", flush=True)

    collectives(ws, me, dev)
    alltoall(ws, me, dev)
    gather_scatter(ws, me, dev)
    point_to_point(ws, me, dev)
    groups = subgroups(ws, me, dev)
    made = many_groups(ws, me, dev)
    graphs(ws, me, dev, made)
    groups += [g for _, _, g in made]
    dist.barrier(device_ids=[dev.index])
    torch.cuda.synchronize()

    bad = torch.tensor([len(FAILS)], device=dev)
    dist.all_reduce(bad)
    failed_anywhere = int(bad.item())
    if FAILS:
        print(f"nccl_torch: rank {me}: {len(FAILS)} of {CHECKS[0]} checks FAILED", flush=True)
    else:
        print(f"nccl_torch: rank {me}: PASS ({CHECKS[0]} checks)", flush=True)
    # teardown as programs do it (every group, in PyTorch's order); Duet's destroy is collective
    del groups
    dist.barrier(device_ids=[dev.index])
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print(f"nccl_torch: rank {me}: destroyed", flush=True)
    return 1 if FAILS or failed_anywhere else 0


if __name__ == "__main__":
    sys.exit(main())

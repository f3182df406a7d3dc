"""duet — Duet for Python: collectives and one-sided symmetric memory on numpy arrays.

A ctypes binding of the installed libduet (no compiler at install time). Run the program under
duetrun (or mpirun, srun, torchrun: docs/LAUNCHING.md):

    import numpy as np, duet
    duet.init()
    w = duet.world()
    x = np.arange(4, dtype=np.float32) + w.rank
    print(w.allreduce(x))               # every rank: the sum over ranks
    a = w.array(4, np.int64)            # symmetric: the same object on every rank
    w.put(a, np.full(4, w.rank), pe=(w.rank + 1) % w.size)
    w.barrier()
    duet.finalize()

Symmetric arrays (Comm.array) are numpy arrays whose memory is Duet's symmetric heap: they
are the targets of put / get / atomics / signals. Collectives take any C-contiguous numpy
array, any C-contiguous tensor with __dlpack__ on the CPU (PyTorch, JAX, CuPy, ...), and,
with the CUDA backend, objects with __cuda_array_interface__ or __dlpack__ on a CUDA device (a
stream may be given; default the array's own, else CUDA's legacy default stream; GPU arrays
are not yet run on a GPU by the tests). Every failure raises
DuetError carrying Duet's status and its message (duet_last_error()).

The library: $DUET_LIB, else the libduet.so.0 of the prefix this package is installed in
(PREFIX/lib/python/duet -> PREFIX/lib), else the loader's search (ctypes.util.find_library).
"""
import atexit
import ctypes
import ctypes.util
import os

import numpy as np

__all__ = ["DuetError", "Comm", "init", "finalize", "world", "version", "OPS", "SIGNAL_SET", "SIGNAL_ADD",
           "CMP_EQ", "CMP_NE", "CMP_GT", "CMP_GE", "CMP_LT", "CMP_LE"]

STATUS = {0: "DUET_OK", -1: "DUET_ERR_INVALID_ARG", -2: "DUET_ERR_NO_MEMORY", -3: "DUET_ERR_TIMEOUT",
          -4: "DUET_ERR_PEER_FAILED", -5: "DUET_ERR_REVOKED", -6: "DUET_ERR_UNSUPPORTED", -7: "DUET_ERR_SYSTEM",
          -8: "DUET_ERR_CUDA", -9: "DUET_ERR_INTERNAL"}
OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3, "avg": 4}
SIGNAL_SET, SIGNAL_ADD = 0, 1
CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE = range(6)
_DTYPES = {np.dtype(np.int8): 0, np.dtype(np.uint8): 1, np.dtype(np.int32): 2, np.dtype(np.uint32): 3,
           np.dtype(np.int64): 4, np.dtype(np.uint64): 5, np.dtype(np.float16): 6, np.dtype(np.float32): 8,
           np.dtype(np.float64): 9}
_AMO = {np.dtype(np.int32): ("int32", ctypes.c_int32), np.dtype(np.int64): ("int64", ctypes.c_int64),
        np.dtype(np.uint32): ("uint32", ctypes.c_uint32), np.dtype(np.uint64): ("uint64", ctypes.c_uint64)}
_AMO_EXT = {np.dtype(np.float32): ("float", ctypes.c_float), np.dtype(np.float64): ("double", ctypes.c_double)}


class DuetError(RuntimeError):
    """A Duet call failed: .status is Duet's status name, .code its number, str() the message."""

    def __init__(self, code, message):
        self.code = code
        self.status = STATUS.get(code, str(code))
        super().__init__(f"{self.status}: {message}")


def _find_library():
    env = os.environ.get("DUET_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for rel in ("../../libduet.so.0", "../../../libduet.so.0", "../../lib/libduet.so.0"):
        p = os.path.normpath(os.path.join(here, rel))
        if os.path.exists(p):
            return p
    found = ctypes.util.find_library("duet")
    if not found:
        raise OSError("libduet not found: set DUET_LIB to libduet.so.0 (build/lib or PREFIX/lib)")
    return found


_lib = ctypes.CDLL(_find_library())
_vp, _sz, _int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
_lib.duet_last_error.restype = ctypes.c_char_p
_lib.duet_version_string.restype = ctypes.c_char_p
_lib.duet_comm_world.restype = _vp
for _name in ("duet_malloc", "duet_calloc", "duet_align"):
    getattr(_lib, _name).restype = _vp
_lib.duet_malloc.argtypes = [_vp, _sz]
_lib.duet_calloc.argtypes = [_vp, _sz, _sz]
_lib.duet_free.argtypes = [_vp, _vp]
_lib.duet_ptr.restype = _vp
_lib.duet_ptr.argtypes = [_vp, _vp, _int]
for _name in ("duet_comm_rank", "duet_comm_size", "duet_comm_destroy", "duet_barrier", "duet_quiet", "duet_fence",
              "duet_sync", "duet_comm_status", "duet_comm_revoke"):
    getattr(_lib, _name).argtypes = [_vp]
_lib.duet_comm_split.argtypes = [_vp, _int, _int, ctypes.POINTER(_vp)]
for _name in ("duet_put", "duet_get", "duet_put_nbi", "duet_get_nbi"):
    getattr(_lib, _name).argtypes = [_vp, _vp, _vp, _sz, _int]
_lib.duet_put_signal.argtypes = [_vp, _vp, _vp, _sz, _vp, ctypes.c_uint64, _int, _int]
_lib.duet_put_signal_nbi.argtypes = _lib.duet_put_signal.argtypes
_lib.duet_signal_op.argtypes = [_vp, _vp, ctypes.c_uint64, _int, _int]
_lib.duet_signal_fetch.argtypes = [_vp, _vp, ctypes.POINTER(ctypes.c_uint64)]
_lib.duet_signal_wait_until.argtypes = [_vp, _vp, _int, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)]
_lib.duet_allreduce.argtypes = [_vp, _vp, _sz, _int, _int, _vp, _vp]
_lib.duet_broadcast.argtypes = [_vp, _vp, _sz, _int, _int, _vp, _vp]
_lib.duet_reduce.argtypes = [_vp, _vp, _sz, _int, _int, _int, _vp, _vp]
_lib.duet_allgather.argtypes = [_vp, _vp, _sz, _int, _vp, _vp]
_lib.duet_reduce_scatter.argtypes = [_vp, _vp, _sz, _int, _int, _vp, _vp]
_lib.duet_alltoall.argtypes = [_vp, _vp, _sz, _int, _vp, _vp]
_lib.duet_send.argtypes = [_vp, _sz, _int, _int, _vp, _vp]
_lib.duet_recv.argtypes = [_vp, _sz, _int, _int, _vp, _vp]


def _check(code):
    if code != 0:
        raise DuetError(code, (_lib.duet_last_error() or b"").decode(errors="replace"))


def _fail(message, code=-1):
    raise DuetError(code, message)


_state = {"init": False, "world": None}


def version():
    """Duet's version string."""
    return _lib.duet_version_string().decode()


def init():
    """duet_init: joins the job (ranks from duetrun, mpirun, srun or torchrun). finalize()
    runs at exit if the program does not call it."""
    if _state["init"]:
        return
    _check(_lib.duet_init())
    _state["init"] = True
    atexit.register(finalize)


def finalize():
    """duet_finalize (collective): frees every symmetric array."""
    if not _state["init"]:
        return
    Comm._live.clear()
    _state["init"], _state["world"] = False, None
    _check(_lib.duet_finalize())


def world():
    """The world communicator (after init)."""
    if not _state["init"]:
        _fail("duet.world(): duet.init() was not called")
    if _state["world"] is None:
        _state["world"] = Comm(_lib.duet_comm_world(), owned=False)
    return _state["world"]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):  # DLPack's DLTensor, the head of a DLManagedTensor
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT = 0, 1, 2, 4
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dlpack(a, what, stream):
    """(address, elements, dtype, on the device) of an object with __dlpack__ (a PyTorch,
    CuPy or JAX tensor, on the CPU or a CUDA device): its DLTensor read out of the capsule,
    which is not consumed (its destructor hands the tensor back; the object, which the caller
    holds, keeps the memory). A CUDA tensor is asked to order its pending work before `stream`
    (the protocol's stream argument; None: CUDA's legacy default stream)."""
    dev_type = a.__dlpack_device__()[0] if hasattr(a, "__dlpack_device__") else _DL_CPU
    on_device = dev_type in (_DL_CUDA, _DL_CUDA_MANAGED)
    if not on_device and dev_type not in (_DL_CPU, _DL_CUDA_HOST):
        raise TypeError(f"{what}: a DLPack tensor on device type {dev_type}: only the CPU and CUDA devices are "
                        "supported")
    capsule = a.__dlpack__(stream=(1 if stream is None else int(stream))) if on_device else a.__dlpack__()
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    shape = [t.shape[i] for i in range(t.ndim)]
    dt, lanes = t.dtype, t.dtype.lanes
    kinds = {_DL_INT: "i", _DL_UINT: "u", _DL_FLOAT: "f"}
    if lanes != 1 or (dt.code not in kinds and (dt.code, dt.bits) != (_DL_BFLOAT, 16)):
        raise TypeError(f"{what}: a DLPack tensor of type code {dt.code}, {dt.bits} bits, {lanes} lanes: Duet's "
                        "collectives take int8 .. uint64, float16, bfloat16, float32 and float64")
    dtype = "bfloat16" if dt.code == _DL_BFLOAT else np.dtype(f"{kinds[dt.code]}{dt.bits // 8}")
    count = int(np.prod(shape)) if shape else 1
    if t.strides and count > 1:
        want, step = [], 1
        for extent in reversed(shape):
            want.insert(0, step)
            step *= extent
        if any(shape[i] > 1 and t.strides[i] != want[i] for i in range(t.ndim)):
            raise ValueError(f"{what}: the DLPack tensor must be C-contiguous")
    return (t.data or 0) + t.byte_offset, count, dtype, on_device


def _buffer(a, what, writable=False, stream=None):
    """(address, elements, numpy dtype, on the device) of an array for a collective."""
    if not isinstance(a, np.ndarray) and not hasattr(a, "__cuda_array_interface__") and hasattr(a, "__dlpack__"):
        return _dlpack(a, what, stream)
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        strides = cai.get("strides")
        dt = np.dtype(cai["typestr"])
        count = int(np.prod(cai["shape"])) if cai["shape"] else 1
        if strides is not None and tuple(strides) != tuple(np.empty(cai["shape"], dt).strides):
            raise ValueError(f"{what}: a GPU array must be C-contiguous")
        return cai["data"][0], count, dt, True
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{what}: a numpy array (or an object with __cuda_array_interface__ or __dlpack__), not "
                        f"{type(a).__name__}")
    if not a.flags["C_CONTIGUOUS"]:
        raise ValueError(f"{what}: the array must be C-contiguous")
    if writable and not a.flags["WRITEABLE"]:
        raise ValueError(f"{what}: the array is read-only")
    return a.ctypes.data, a.size, a.dtype, False


def _dtype_code(dt, what):
    if isinstance(dt, str) and dt == "bfloat16":  # a DLPack tensor's (numpy has no bfloat16)
        return 7
    code = _DTYPES.get(np.dtype(dt))
    if code is None:
        raise TypeError(f"{what}: Duet's collectives have no {np.dtype(dt)} (int8, uint8, int32, uint32, int64, "
                        f"uint64, float16, float32, float64)")
    return code


def _op_code(op):
    if op not in OPS:
        raise ValueError(f"op {op!r}: one of {', '.join(OPS)}")
    return OPS[op]


def _stream(arr, stream):
    if stream is not None:
        return int(stream)
    cai = getattr(arr, "__cuda_array_interface__", None)
    if cai is None:  # a DLPack tensor on a CUDA device: CUDA's legacy default stream
        dev = arr.__dlpack_device__()[0] if hasattr(arr, "__dlpack_device__") else _DL_CPU
        return 1 if dev in (_DL_CUDA, _DL_CUDA_MANAGED) else None
    s = cai.get("stream")
    return int(s) if s else 1  # CUDA's legacy default stream


class Comm:
    """A communicator: the world (duet.world()) or one made by split(). rank and size are
    this communicator's."""
    _live = {}  # address of a symmetric array -> (communicator handle, bytes)

    def __init__(self, handle, owned=True):
        self._h = handle
        self._owned = owned
        self.rank = _lib.duet_comm_rank(handle)
        self.size = _lib.duet_comm_size(handle)

    def __repr__(self):
        return f"<duet.Comm rank {self.rank} of {self.size}>"

    # ------------------------------------------------------------------ communicators
    def split(self, color, key=0):
        """duet_comm_split (collective): the ranks of one color, ordered by key. color < 0:
        this rank joins none (returns None). The new communicator shares this one's heap."""
        out = _vp()
        _check(_lib.duet_comm_split(self._h, int(color), int(key), ctypes.byref(out)))
        return Comm(out.value) if out.value else None

    def destroy(self):
        """duet_comm_destroy (collective)."""
        if self._owned and self._h:
            _check(_lib.duet_comm_destroy(self._h))
            self._h = None

    def status(self):
        """None while sound, else the DuetError of a failed peer or a revoke."""
        code = _lib.duet_comm_status(self._h)
        return None if code == 0 else DuetError(code, (_lib.duet_last_error() or b"").decode(errors="replace"))

    # ------------------------------------------------------------------ symmetric memory
    def array(self, shape, dtype=np.float64, fill=0):
        """A symmetric array (collective: every rank, the same shape and dtype, in the same
        order), zeroed, or filled with `fill` (None: left as allocated). Free it with free()."""
        dt = np.dtype(dtype)
        count = int(np.prod(shape)) if np.ndim(shape) else int(shape)
        nbytes = count * dt.itemsize
        p = _lib.duet_calloc(self._h, 1, nbytes if nbytes else 1)
        if not p:
            _check(_lib.duet_last_status() or -2)
        buf = (ctypes.c_char * max(nbytes, 1)).from_address(p)
        a = np.frombuffer(buf, dtype=dt, count=count).reshape(shape)
        if fill is not None and fill != 0:
            a[...] = fill
        Comm._live[p] = (self._h, nbytes)
        return a

    def free(self, a):
        """Frees a symmetric array from array() (collective)."""
        p = a.ctypes.data if isinstance(a, np.ndarray) else int(a)
        if p not in Comm._live:
            _fail("free: not a symmetric array from Comm.array (or already freed)")
        del Comm._live[p]
        _check(_lib.duet_free(self._h, p))

    def ptr(self, a, pe):
        """The peer's copy of symmetric array a mapped here (a numpy view), or None when pe's
        memory is not mapped (another host)."""
        p = _lib.duet_ptr(self._h, a.ctypes.data, int(pe))
        if not p:
            return None
        buf = (ctypes.c_char * max(a.nbytes, 1)).from_address(p)
        return np.frombuffer(buf, dtype=a.dtype, count=a.size).reshape(a.shape)

    # ------------------------------------------------------------------ one-sided
    def put(self, dest, src, pe, nbi=False):
        """Copies src (any C-contiguous array) into the symmetric dest on rank pe."""
        s, _, _, _ = _buffer(np.ascontiguousarray(src), "put: src")
        nbytes = np.asarray(src).nbytes
        if nbytes > dest.nbytes:
            raise ValueError(f"put: {nbytes} bytes into a destination of {dest.nbytes}")
        _check((_lib.duet_put_nbi if nbi else _lib.duet_put)(self._h, dest.ctypes.data, s, nbytes, int(pe)))

    def get(self, dest, src, pe, nbi=False):
        """Copies the symmetric src of rank pe into dest (a writable C-contiguous array)."""
        d, _, _, _ = _buffer(dest, "get: dest", writable=True)
        if dest.nbytes > src.nbytes:
            raise ValueError(f"get: {dest.nbytes} bytes from a source of {src.nbytes}")
        _check((_lib.duet_get_nbi if nbi else _lib.duet_get)(self._h, d, src.ctypes.data, dest.nbytes, int(pe)))

    def _amo(self, op, a, index, pe, *values, fetch=False):
        dt = np.dtype(a.dtype)
        if op in ("fetch", "set", "swap") and dt in _AMO_EXT:
            name, ct = _AMO_EXT[dt]
        elif dt in _AMO:
            name, ct = _AMO[dt]
        else:
            raise TypeError(f"atomic {op}: no {dt} (int32, int64, uint32, uint64; float32 / float64 for fetch, "
                            f"set, swap)")
        if not 0 <= index < a.size:
            raise IndexError(f"atomic {op}: index {index} of an array of {a.size}")
        fn = getattr(_lib, f"duet_atomic_{op}_{name}")
        addr = _vp(a.ctypes.data + index * dt.itemsize)
        args = [_vp(self._h), addr] + ([int(pe)] if op == "fetch" else [])
        args += [ct(v) for v in values] + ([] if op == "fetch" else [int(pe)])
        old = ct()
        if fetch:
            args.append(ctypes.byref(old))
        _check(fn(*args))
        return old.value if fetch else None

    def atomic_fetch(self, a, index, pe):
        return self._amo("fetch", a, index, pe, fetch=True)

    def atomic_set(self, a, index, value, pe):
        self._amo("set", a, index, pe, value)

    def atomic_swap(self, a, index, value, pe):
        return self._amo("swap", a, index, pe, value, fetch=True)

    def atomic_compare_swap(self, a, index, cond, value, pe):
        return self._amo("compare_swap", a, index, pe, cond, value, fetch=True)

    def atomic_add(self, a, index, value, pe):
        self._amo("add", a, index, pe, value)

    def atomic_fetch_add(self, a, index, value, pe):
        return self._amo("fetch_add", a, index, pe, value, fetch=True)

    def atomic_inc(self, a, index, pe):
        self._amo("inc", a, index, pe)

    def atomic_fetch_inc(self, a, index, pe):
        return self._amo("fetch_inc", a, index, pe, fetch=True)

    def atomic_and(self, a, index, value, pe):
        self._amo("and", a, index, pe, value)

    def atomic_or(self, a, index, value, pe):
        self._amo("or", a, index, pe, value)

    def atomic_xor(self, a, index, value, pe):
        self._amo("xor", a, index, pe, value)

    def put_signal(self, dest, src, sig, sig_index, value, pe, op=SIGNAL_SET, nbi=False):
        """put, then the signal sig[sig_index] (a symmetric uint64 array) set to / added
        value on pe: a peer that sees the signal sees the data."""
        if np.dtype(sig.dtype) != np.uint64:
            raise TypeError("put_signal: the signal array must be uint64")
        s, _, _, _ = _buffer(np.ascontiguousarray(src), "put_signal: src")
        nbytes = np.asarray(src).nbytes
        if nbytes > dest.nbytes:
            raise ValueError(f"put_signal: {nbytes} bytes into a destination of {dest.nbytes}")
        fn = _lib.duet_put_signal_nbi if nbi else _lib.duet_put_signal
        _check(fn(self._h, dest.ctypes.data, s, nbytes, sig.ctypes.data + 8 * int(sig_index), int(value), int(op),
                  int(pe)))

    def signal_wait_until(self, sig, sig_index, cmp, value):
        """Waits (bounded by DUET_WAIT_TIMEOUT) until the local sig[sig_index] cmp value;
        returns the value that satisfied it."""
        if np.dtype(sig.dtype) != np.uint64:
            raise TypeError("signal_wait_until: the signal array must be uint64")
        out = ctypes.c_uint64()
        _check(_lib.duet_signal_wait_until(self._h, sig.ctypes.data + 8 * int(sig_index), int(cmp), int(value),
                                           ctypes.byref(out)))
        return out.value

    def fence(self):
        _check(_lib.duet_fence(self._h))

    def quiet(self):
        _check(_lib.duet_quiet(self._h))

    def barrier(self):
        """Completes this rank's puts (quiet), then waits for every rank."""
        _check(_lib.duet_barrier(self._h))

    # ------------------------------------------------------------------ collectives
    def allreduce(self, send, recv=None, op="sum", stream=None):
        """recv = op over ranks of send (recv None: a new array; recv is send: in place)."""
        if recv is None:
            recv = np.empty_like(send)
        s, n, dt, _ = _buffer(send, "allreduce: send", stream=_stream(send, stream))
        r, rn, rdt, _ = _buffer(recv, "allreduce: recv", writable=True, stream=_stream(send, stream))
        if rn != n or rdt != dt:
            raise ValueError(f"allreduce: send has {n} {dt}, recv {rn} {rdt}")
        _check(_lib.duet_allreduce(s, r, n, _dtype_code(dt, "allreduce"), _op_code(op), self._h, _stream(send, stream)))
        return recv

    def broadcast(self, buf, root, stream=None):
        """buf on every rank = root's buf (in place)."""
        b, n, dt, _ = _buffer(buf, "broadcast: buf", writable=True, stream=_stream(buf, stream))
        _check(_lib.duet_broadcast(b, b, n, _dtype_code(dt, "broadcast"), int(root), self._h, _stream(buf, stream)))
        return buf

    def reduce(self, send, recv=None, op="sum", root=0, stream=None):
        """recv on root = op over ranks of send (recv is not written elsewhere)."""
        if recv is None:
            recv = np.empty_like(send)
        s, n, dt, _ = _buffer(send, "reduce: send", stream=_stream(send, stream))
        r, rn, rdt, _ = _buffer(recv, "reduce: recv", writable=True, stream=_stream(send, stream))
        if rn != n or rdt != dt:
            raise ValueError(f"reduce: send has {n} {dt}, recv {rn} {rdt}")
        _check(_lib.duet_reduce(s, r, n, _dtype_code(dt, "reduce"), _op_code(op), int(root), self._h,
                                _stream(send, stream)))
        return recv

    def allgather(self, send, recv=None, stream=None):
        """recv = every rank's send, in rank order (recv None: a new array of size * send.size)."""
        if recv is None:
            recv = np.empty((self.size,) + np.shape(send), dtype=send.dtype)
        s, n, dt, _ = _buffer(send, "allgather: send", stream=_stream(send, stream))
        r, rn, rdt, _ = _buffer(recv, "allgather: recv", writable=True, stream=_stream(send, stream))
        if rn != n * self.size or rdt != dt:
            raise ValueError(f"allgather: recv must hold {self.size} x {n} {dt}, has {rn} {rdt}")
        _check(_lib.duet_allgather(s, r, n, _dtype_code(dt, "allgather"), self._h, _stream(send, stream)))
        return recv

    def reduce_scatter(self, send, recv=None, op="sum", stream=None):
        """recv on rank r = op over ranks of block r of send (send.size = size * recv.size)."""
        s, n, dt, _ = _buffer(send, "reduce_scatter: send", stream=_stream(send, stream))
        if n % self.size:
            raise ValueError(f"reduce_scatter: send's {n} elements are not {self.size} equal blocks")
        if recv is None:
            recv = np.empty(n // self.size, dtype=dt)
        r, rn, rdt, _ = _buffer(recv, "reduce_scatter: recv", writable=True, stream=_stream(send, stream))
        if rn * self.size != n or rdt != dt:
            raise ValueError(f"reduce_scatter: recv must hold {n // self.size} {dt}, has {rn} {rdt}")
        _check(_lib.duet_reduce_scatter(s, r, rn, _dtype_code(dt, "reduce_scatter"), _op_code(op), self._h,
                                        _stream(send, stream)))
        return recv

    def alltoall(self, send, recv=None, stream=None):
        """Block q of send goes to rank q, into block r (this rank) of its recv."""
        s, n, dt, _ = _buffer(send, "alltoall: send", stream=_stream(send, stream))
        if n % self.size:
            raise ValueError(f"alltoall: send's {n} elements are not {self.size} equal blocks")
        if recv is None:
            recv = np.empty_like(send)
        r, rn, rdt, _ = _buffer(recv, "alltoall: recv", writable=True, stream=_stream(send, stream))
        if rn != n or rdt != dt:
            raise ValueError(f"alltoall: send has {n} {dt}, recv {rn} {rdt}")
        _check(_lib.duet_alltoall(s, r, n // self.size, _dtype_code(dt, "alltoall"), self._h, _stream(send, stream)))
        return recv

    def send(self, buf, peer, stream=None):
        b, n, dt, _ = _buffer(buf, "send: buf", stream=_stream(buf, stream))
        _check(_lib.duet_send(b, n, _dtype_code(dt, "send"), int(peer), self._h, _stream(buf, stream)))

    def recv(self, buf, peer, stream=None):
        b, n, dt, _ = _buffer(buf, "recv: buf", writable=True, stream=_stream(buf, stream))
        _check(_lib.duet_recv(b, n, _dtype_code(dt, "recv"), int(peer), self._h, _stream(buf, stream)))
        return buf

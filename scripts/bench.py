"""Times quilt (through libquilt.so, the C API) and ONNX Runtime on the same model and inputs, in
one process, interleaved: blocks of --block runs of one, then of the other (the order alternating),
so both see the same machine load; blocks rather than single runs because both keep their worker
threads spinning for a moment after a run, which would steal the cores of the other's next run. Prints min and median latency of each and quilt / ONNX Runtime, per
thread count, and checks that the outputs agree.

    python scripts/bench.py LIBQUILT.so PACKAGE.quilt MODEL.onnx INPUTS.npz [--threads 1,2]
        [--warmup W] [--iterations N] [--block B]
"""
import argparse
import ctypes as C
import time

import numpy as np
import onnxruntime as ort

DTYPES = {np.dtype("float32"): 1, np.dtype("uint8"): 2, np.dtype("int8"): 3, np.dtype("int32"): 6,
          np.dtype("int64"): 7, np.dtype("bool"): 9, np.dtype("float16"): 10,
          np.dtype("float64"): 11}
NUMPY = {v: k for k, v in DTYPES.items()}


class Tensor(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int32), ("rank", C.c_int32),
                ("shape", C.POINTER(C.c_int64)), ("data", C.c_void_p), ("byte_size", C.c_size_t)]


class Options(C.Structure):
    _fields_ = [("threads", C.c_int32), ("devices", C.c_char_p)]


class Quilt:
    def __init__(self, lib_path, package_path, threads):
        if "/" not in lib_path:
            raise SystemExit(f"bench: {lib_path!r} is not a path to libquilt.so")
        lib = C.CDLL(lib_path)
        for name in ("quilt_package_load_file", "quilt_session_create", "quilt_session_run",
                     "quilt_outputs_get"):
            getattr(lib, name).restype = C.c_void_p
        lib.quilt_status_message.restype = C.c_char_p
        lib.quilt_status_message.argtypes = [C.c_void_p]
        lib.quilt_outputs_count.restype = C.c_size_t
        lib.quilt_outputs_count.argtypes = [C.c_void_p]
        lib.quilt_outputs_get.argtypes = [C.c_void_p, C.c_size_t, C.POINTER(Tensor)]
        lib.quilt_outputs_free.argtypes = [C.c_void_p]
        lib.quilt_session_run.argtypes = [C.c_void_p, C.POINTER(Tensor), C.c_size_t,
                                          C.POINTER(C.c_void_p)]
        self.lib = lib
        self.package = C.c_void_p()
        self.check(lib.quilt_package_load_file(package_path.encode(), C.byref(self.package)))
        self.session = C.c_void_p()
        opts = Options(threads, None)
        self.check(lib.quilt_session_create(self.package, C.byref(opts), C.byref(self.session)))

    def check(self, status):
        if status:
            raise SystemExit("quilt: " + self.lib.quilt_status_message(status).decode())

    def prepare(self, feeds):
        self.keep = []
        tensors = (Tensor * len(feeds))()
        for i, (name, arr) in enumerate(feeds.items()):
            arr = np.ascontiguousarray(arr)
            shape = (C.c_int64 * max(arr.ndim, 1))(*arr.shape)
            self.keep += [arr, shape, name.encode()]
            tensors[i] = Tensor(self.keep[-1], DTYPES[arr.dtype], arr.ndim, shape,
                                arr.ctypes.data, arr.nbytes)
        self.inputs = tensors

    def run(self, fetch=False):
        outs = C.c_void_p()
        self.check(self.lib.quilt_session_run(self.session, self.inputs, len(self.inputs),
                                              C.byref(outs)))
        result = []
        if fetch:
            for i in range(self.lib.quilt_outputs_count(outs)):
                t = Tensor()
                self.check(self.lib.quilt_outputs_get(outs, i, C.byref(t)))
                shape = tuple(t.shape[d] for d in range(t.rank))
                buf = C.string_at(t.data, t.byte_size)
                result.append(np.frombuffer(buf, NUMPY[t.dtype]).reshape(shape).copy())
        self.lib.quilt_outputs_free(outs)
        return result


def stats(times):
    times = sorted(times)
    return times[0], times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("package")
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--block", type=int, default=10)
    args = ap.parse_args()
    feeds = dict(np.load(args.inputs))
    print(f"{'threads':>7}  {'quilt min':>9} {'median':>8}  {'ORT min':>8} {'median':>8}  "
          f"{'quilt/ORT min':>13} {'median':>7}   (ms, {args.iterations} interleaved runs)")
    for threads in [int(t) for t in args.threads.split(",")]:
        q = Quilt(args.lib, args.package, threads)
        q.prepare(feeds)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        want = sess.run(names, feeds)
        got = q.run(fetch=True)
        worst = max(float(np.max(np.abs(g.astype(np.float64) - w))) if w.size else 0.0
                    for g, w in zip(got, want))
        if worst > 1e-3:
            raise SystemExit(f"quilt and onnxruntime disagree (largest difference {worst:.3g})")
        for _ in range(args.warmup):
            q.run()
            sess.run(names, feeds)
        tq, to = [], []
        block = max(1, args.block)
        for i in range((args.iterations + block - 1) // block):
            for which in ((0, 1) if i % 2 == 0 else (1, 0)):
                for _ in range(block):
                    t0 = time.perf_counter()
                    q.run() if which == 0 else sess.run(names, feeds)
                    (tq if which == 0 else to).append((time.perf_counter() - t0) * 1e3)
        (qmin, qmed), (omin, omed) = stats(tq), stats(to)
        print(f"{threads:>7}  {qmin:>9.3f} {qmed:>8.3f}  {omin:>8.3f} {omed:>8.3f}  "
              f"{qmin / omin:>13.2f} {qmed / omed:>7.2f}")


if __name__ == "__main__":
    main()

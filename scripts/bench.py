"""The CPU benchmark (never a test): quilt next to ONNX Runtime, MNN and OpenVINO on the zoo's
models (models/zoo.toml) and their real inputs, at each thread count.

    python scripts/bench.py [--models a,b | --ci] [--engines quilt,onnxruntime,mnn,openvino]
        (quilt-opencl too, when asked for: the package compiled for OpenCL and the CPU; and
        quilt-f4: the package compiled with --cpu-winograd-tile 4)
        [--threads 1,2] [--runs N] [--seconds S] [--warmup W] [--out DIR] [--cache DIR]
        [--quilt-bin build/bin] [--lib build/lib/libquilt.so]
    python scripts/bench.py --model M.onnx --inputs IN.npz [--input-shape NAME:D,D,...]...

Per model: fetch it and make its inputs (scripts/zoo_fetch.py, scripts/zoo_inputs.py), compile it
with quiltc for the CPU (the zoo's --input-shape and --input-value), convert it for MNN
(mnnconvert), and count the multiply-adds of its convolutions and matrix products from the shapes
of one ONNX Runtime run. Then, per thread count, the engines take turns in R rounds (--rounds, in
an order that rotates from model to model and round to round), each turn a fresh process: it loads
the model, runs once, and its outputs are compared with ONNX Runtime's at one thread within the
zoo's tolerances before any timing (an engine whose outputs differ is reported as wrong and is not
anyone's best peer); then W warm-up runs and timed runs, at least N / R and at least S / R seconds
(at most 1000). An engine's min and median are over the runs of all its rounds (so a slow spell of
the machine falls on every engine rather than on whichever ran then); each process reports its
peak RSS (VmHWM) and its RSS before the engine was imported (Python, numpy and the inputs), so that
"RSS over Python" is the engine's own memory (the largest of its rounds).

Thread settings, the same for every engine: T intra-op threads, one inference at a time, float32
arithmetic. ONNX Runtime: intra_op_num_threads=T, inter_op_num_threads=1, sequential execution,
all graph optimizations. MNN: the Module API, CPU backend, numThread=T, precision "high" (float32;
"normal" may choose lower-precision paths on some CPUs). OpenVINO: CPU, INFERENCE_NUM_THREADS=T,
NUM_STREAMS=1, PERFORMANCE_HINT=LATENCY, INFERENCE_PRECISION_HINT=f32. quilt: the C API
(libquilt.so through ctypes), threads=T. Every engine is driven from Python the same way: inputs
prepared once, outputs read back as arrays on every run.

Writes OUT/bench-report.md and OUT/bench-report.json (default OUT: out/bench) and prints the
table. Sizes: the libraries each engine needs to run an ONNX model on the CPU (stripped
libquilt.so; ONNX Runtime's native libraries; MNN's; OpenVINO's core, CPU plugin and ONNX
frontend) and each model file (the ONNX model, quilt's package, MNN's .mnn, OpenVINO's IR).
"""
import argparse
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

ENGINES = ("quilt", "onnxruntime", "mnn", "openvino")
# Engines run when asked for alone: quilt's package for OpenCL with the CPU as the host (quiltc
# --device opencl --device llvm), on the machine's first OpenCL device (PoCL here: its pthread
# device limited to the thread count with POCL_MAX_PTHREAD_COUNT), its programs' binaries cached
# in the model's work folder. And quilt's package compiled with --cpu-winograd-tile 4 (Winograd
# F(4x4, 3x3) for the blocked 3x3 convs over large planes: faster, for larger rounding). Not
# peers: no ratio compares them.
OPTIONAL_ENGINES = ("quilt-opencl", "quilt-f4")
PEERS = ("onnxruntime", "mnn", "openvino")
MAX_RUNS = 1000


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ worker side


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class QuiltEngine:
    DTYPES = {np.dtype("float32"): 1, np.dtype("uint8"): 2, np.dtype("int8"): 3,
              np.dtype("int32"): 6, np.dtype("int64"): 7, np.dtype("bool"): 9,
              np.dtype("float16"): 10, np.dtype("float64"): 11}

    def __init__(self, spec, feeds, threads):
        import ctypes as C

        class Tensor(C.Structure):
            _fields_ = [("name", C.c_char_p), ("dtype", C.c_int32), ("rank", C.c_int32),
                        ("shape", C.POINTER(C.c_int64)), ("data", C.c_void_p),
                        ("byte_size", C.c_size_t)]

        class Options(C.Structure):  # quilt_session_options_t, every field (0: its default)
            _fields_ = [("threads", C.c_int32), ("devices", C.c_char_p),
                        ("max_threads", C.c_int32), ("max_loop_iterations", C.c_int64),
                        ("max_arena_bytes", C.c_int64), ("max_workers", C.c_int32),
                        ("max_run_bytes", C.c_int64), ("code_cache_dir", C.c_char_p),
                        ("strict", C.c_int32)]

        self.C, self.Tensor = C, Tensor
        self.numpy = {v: k for k, v in self.DTYPES.items()}
        lib = C.CDLL(spec["lib"])
        for name in ("quilt_package_load_file", "quilt_session_create", "quilt_session_run",
                     "quilt_outputs_get"):
            getattr(lib, name).restype = C.c_void_p
        lib.quilt_session_output_count.restype = C.c_size_t
        lib.quilt_session_output_count.argtypes = [C.c_void_p]
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
        self._check(lib.quilt_package_load_file(spec["package"].encode(), C.byref(self.package)))
        self.session = C.c_void_p()
        # The OpenCL engine keeps its programs' binaries in the model's work folder: the first
        # round's session builds them, later rounds' load them.
        cache = spec.get("code_cache") if spec.get("engine") == "quilt-opencl" else None
        self.cache = cache.encode() if cache else None
        opts = Options(threads=threads, code_cache_dir=self.cache)
        self._check(lib.quilt_session_create(self.package, C.byref(opts), C.byref(self.session)))
        feeds = {k: v for k, v in feeds.items() if k in spec["quilt_inputs"]}
        self.keep = []
        self.inputs = (Tensor * len(feeds))()
        for i, (name, arr) in enumerate(feeds.items()):
            # (np.ascontiguousarray makes a scalar 1-D: the reshape keeps its rank.)
            arr = np.ascontiguousarray(arr).reshape(np.shape(arr))
            shape = (C.c_int64 * max(arr.ndim, 1))(*arr.shape)
            self.keep += [arr, shape, name.encode()]
            self.inputs[i] = Tensor(self.keep[-1], self.DTYPES[arr.dtype], arr.ndim, shape,
                                    arr.ctypes.data, arr.nbytes)
        # What each run reuses (the glue's own cost is part of every timed run: a model of 40 us
        # spent 9 us of its Python run here).
        self.outs = C.c_void_p()
        self.outs_ref = C.byref(self.outs)
        self.slots = [Tensor() for _ in range(lib.quilt_session_output_count(self.session))]
        self.slot_refs = [C.byref(t) for t in self.slots]

    def _check(self, status):
        if status:
            raise RuntimeError("quilt: " + self.lib.quilt_status_message(status).decode())

    def run(self):
        lib, outs = self.lib, self.outs
        self._check(lib.quilt_session_run(self.session, self.inputs, len(self.inputs),
                                          self.outs_ref))
        result = {}
        try:
            count = lib.quilt_outputs_count(outs)
            if count != len(self.slots):
                raise RuntimeError(f"quilt: {count} outputs, the session has {len(self.slots)}")
            for i, t in enumerate(self.slots):
                self._check(lib.quilt_outputs_get(outs, i, self.slot_refs[i]))
                buf = self.C.string_at(t.data, t.byte_size)
                result[t.name.decode()] = np.frombuffer(buf, self.numpy[t.dtype]).reshape(
                    t.shape[:t.rank])
        finally:
            lib.quilt_outputs_free(outs)
        return result


class OrtEngine:
    def __init__(self, spec, feeds, threads):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        self.sess = ort.InferenceSession(spec["model"], opts, providers=["CPUExecutionProvider"])
        self.names = [o.name for o in self.sess.get_outputs()]
        wanted = {i.name for i in self.sess.get_inputs()}
        self.feeds = {k: v for k, v in feeds.items() if k in wanted}

    def run(self):
        return dict(zip(self.names, self.sess.run(self.names, self.feeds)))


class MnnEngine:
    def __init__(self, spec, feeds, threads):
        import MNN.expr as F
        import MNN.nn as nn

        self.F = F
        config = {"backend": "CPU", "numThread": threads, "precision": "high"}
        rt = nn.create_runtime_manager((config,))
        probe = nn.load_module_from_file(spec["mnn"], [], [], runtime_manager=rt)
        info = probe.get_info()
        self.input_names = list(info["inputNames"])
        self.output_names = list(info["outputNames"])
        self.module = nn.load_module_from_file(spec["mnn"], self.input_names, self.output_names,
                                               runtime_manager=rt)
        self.inputs = []
        for name in self.input_names:
            arr = np.ascontiguousarray(feeds[name])
            if arr.dtype == np.int64:  # MNN computes integers in int32
                arr = arr.astype(np.int32)
            elif arr.dtype == np.float64:
                arr = arr.astype(np.float32)
            dtype = {np.dtype("float32"): F.float, np.dtype("int32"): F.int,
                     np.dtype("uint8"): F.uint8, np.dtype("int8"): F.int8}[arr.dtype]
            self.inputs.append(F.const(arr, list(arr.shape), F.NCHW, dtype))

    def run(self):
        outs = self.module.forward(self.inputs)
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        result = {}
        for name, o in zip(self.output_names, outs):
            if o.data_format == self.F.NC4HW4:
                o = self.F.convert(o, self.F.NCHW)
            result[name] = np.array(o.read())
        return result


class OpenVinoEngine:
    def __init__(self, spec, feeds, threads):
        import openvino as ov

        core = ov.Core()
        compiled = core.compile_model(spec["model"], "CPU", {
            "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": "f32"})
        self.request = compiled.create_infer_request()
        wanted = {n for i in compiled.inputs for n in i.get_names()}
        self.feeds = {k: v for k, v in feeds.items() if k in wanted}

    def run(self):
        result = self.request.infer(self.feeds)
        # A port has every name its tensor goes by; the model's own output names among them.
        return {n: np.array(value) for port, value in result.items() for n in port.get_names()}


ENGINE_CLASSES = {"quilt": QuiltEngine, "quilt-opencl": QuiltEngine, "quilt-f4": QuiltEngine,
                  "onnxruntime": OrtEngine, "mnn": MnnEngine, "openvino": OpenVinoEngine}


def worker(spec_path):
    """One engine at one thread count: loads, runs once (the outputs go to spec["outputs"]),
    warms up and times; writes its numbers as JSON to spec["result"]."""
    with open(spec_path) as f:
        spec = json.load(f)
    res = {"error": None}
    try:
        with np.load(spec["inputs"]) as z:
            feeds = {k: z[k] for k in z.files}
        res["rss_python_kb"] = _status_kb("VmRSS")
        t0 = time.perf_counter()
        engine = ENGINE_CLASSES[spec["engine"]](spec, feeds, spec["threads"])
        res["load_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        outs = engine.run()
        res["first_ms"] = (time.perf_counter() - t0) * 1e3
        np.savez(spec["outputs"], **{f"o{i}": v for i, v in enumerate(outs.values())})
        res["output_names"] = list(outs.keys())
        for _ in range(spec["warmup"]):
            engine.run()
        times = []
        start = time.perf_counter()
        while len(times) < MAX_RUNS and (len(times) < spec["runs"] or
                                         time.perf_counter() - start < spec["seconds"]):
            t0 = time.perf_counter()
            engine.run()
            times.append((time.perf_counter() - t0) * 1e3)
        res["times_ms"] = list(times)
        times.sort()
        res.update(min_ms=times[0], median_ms=times[len(times) // 2], runs=len(times))
        res["peak_rss_kb"] = _status_kb("VmHWM")
    except Exception as e:  # an engine's failure on a model is a result
        res["error"] = " ".join(f"{type(e).__name__}: {e}".split())[:600]
    with open(spec["result"], "w") as f:
        json.dump(res, f)


# ------------------------------------------------------------------------------ driver side


def versions():
    v = {}
    for engine, module in (("onnxruntime", "onnxruntime"), ("mnn", "MNN"),
                           ("openvino", "openvino")):
        code = (f"import {module} as m; print(getattr(m, '__version__', '') or m.version())")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        v[engine] = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout else None
    return v


def _site_packages():
    r = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()"
                        "['purelib'])"], capture_output=True, text=True)
    return r.stdout.strip()


def _stripped_size(path):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "lib")
        r = subprocess.run(["strip", "-o", out, path], capture_output=True)
        return os.path.getsize(out if r.returncode == 0 else path)


# The native libraries an application needs to run an ONNX model on the CPU with each peer, as
# its wheel ships them (glob patterns under site-packages).
PEER_LIBRARIES = {
    "onnxruntime": (["onnxruntime/capi/libonnxruntime.so*"], "the C library"),
    "mnn": (["_mnncengine*.so", "mnn.libs/*.so*"],
            "the Python module, which holds the runtime, and its vendored libraries"),
    "openvino": (["openvino/libs/libopenvino.so*", "openvino/libs/libopenvino_intel_cpu_plugin.so",
                  "openvino/libs/libopenvino_onnx_frontend.so*", "openvino/libs/libtbb.so*",
                  "openvino/libs/libtbbmalloc.so*", "openvino/libs/libhwloc.so*"],
                 "core, CPU plugin, ONNX frontend, TBB and hwloc"),
}


def library_sizes(lib):
    """Bytes of the native libraries each engine needs to run an ONNX model on the CPU."""
    import glob

    sizes = {"quilt": {"files": [os.path.basename(lib)], "bytes": _stripped_size(lib),
                       "note": "the C library, stripped"}}
    site = _site_packages()
    for engine, (patterns, note) in PEER_LIBRARIES.items():
        files = sorted({f for pat in patterns for f in glob.glob(os.path.join(site, pat))})
        if files:
            sizes[engine] = {"files": [os.path.basename(f) for f in files],
                             "bytes": sum(os.path.getsize(f) for f in files),
                             "note": note + ", as shipped"}
    return sizes


def node_inputs(model_path):
    """Per node name (subgraphs too): its input names and the dims of those that are
    initializers. ONNX Runtime's profiler leaves out the inputs it packed ahead (a MatMul's or
    ConvTranspose's constant weight), so their shapes come from the model."""
    import onnx

    model = onnx.load(model_path, load_external_data=False)
    nodes = {}

    def walk(graph, outer):
        inits = dict(outer)
        inits.update({i.name: list(i.dims) for i in graph.initializer})
        for n in graph.node:
            nodes[n.name] = ([x for x in n.input if x], inits)
            for a in n.attribute:
                for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else []) + list(a.graphs):
                    walk(g, inits)

    walk(model.graph, {})
    return nodes


def full_shapes(recorded, names, inits):
    """The shapes of a node's inputs `names` from the profiler's `recorded` ones, each
    initializer's from the model where the profiler left it out."""
    if len(recorded) >= len(names):
        return recorded
    out, j = [], 0
    for k, name in enumerate(names):
        later = sum(1 for x in names[k + 1:] if x not in inits)
        if name not in inits:
            out.append(recorded[j] if j < len(recorded) else [])
            j += 1
        else:
            if j < len(recorded) and len(recorded) - j > later and recorded[j] == inits[name]:
                j += 1
            out.append(inits[name])
    return out


def count_flops(model_path, feeds, work):
    """Multiply-adds x 2 of the model's Conv, ConvTranspose, MatMul, Gemm, LSTM and GRU nodes
    (in subgraphs too), from the shapes ONNX Runtime's profiler records in one run of the
    unoptimized graph (and the model's, for the weights it packed ahead)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    opts.enable_profiling = True
    opts.profile_file_prefix = os.path.join(work, "ort-profile")
    sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    ins = {i.name for i in sess.get_inputs()}
    sess.run(None, {k: v for k, v in feeds.items() if k in ins})
    profile = sess.end_profiling()
    with open(profile) as f:
        events = json.load(f)
    os.remove(profile)

    def shapes(entries):
        return [next(iter(e.values())) for e in entries or []]

    inputs = node_inputs(model_path)
    flops = 0
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        a = e.get("args", {})
        op, x, y = a.get("op_name"), shapes(a.get("input_type_shape")), \
            shapes(a.get("output_type_shape"))
        names, inits = inputs.get(e["name"][:-len("_kernel_time")], ([], {}))
        x = full_shapes(x, names, inits)
        if len(x) < 2 or not y:
            continue
        if op == "Conv":
            flops += 2 * math.prod(y[0]) * math.prod(x[1][1:])
        elif op == "ConvTranspose":
            flops += 2 * math.prod(x[0]) * math.prod(x[1][1:])
        elif op == "MatMul":
            flops += 2 * math.prod(y[0]) * (x[0][-1] if x[0] else 1)
        elif op == "Gemm":  # A is (M, K) or, transposed, (K, M): K = |A| / M either way
            flops += 2 * math.prod(y[0]) * (math.prod(x[0]) // max(y[0][0], 1))
        elif op in ("LSTM", "GRU"):
            # W: [dirs, gates * hidden, input], R: [dirs, gates * hidden, hidden]; per step and
            # batch row the gates take (input + hidden) multiply-adds each.
            seq, batch = x[0][0], x[0][1]
            dirs, gates_h, inp = x[1]
            hidden = x[2][2] if len(x) > 2 else 0
            flops += 2 * seq * batch * dirs * gates_h * (inp + hidden)
    return float(flops)


def run_worker(spec, work, timeout):
    tag = f"{spec['engine']}-t{spec['threads']}"
    spec = dict(spec, outputs=os.path.join(work, f"{tag}-outputs.npz"),
                result=os.path.join(work, f"{tag}-result.json"))
    path = os.path.join(work, f"{tag}-spec.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    if os.path.exists(spec["result"]):
        os.remove(spec["result"])
    try:
        # numpy's BLAS on one thread: its idle workers would take a core from the engine timed.
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        if spec["engine"] == "quilt-opencl":
            env["POCL_MAX_PTHREAD_COUNT"] = str(spec["threads"])
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", path],
                           capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}, {}
    if not os.path.exists(spec["result"]):
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {r.returncode}: " + " | ".join(tail)}, {}
    with open(spec["result"]) as f:
        res = json.load(f)
    outs = {}
    if not res.get("error"):
        with np.load(spec["outputs"]) as z:
            outs = {n: z[f"o{i}"] for i, n in enumerate(res["output_names"])}
    return res, outs


def check(entry, names, got, want):
    """The zoo's comparison, on values: an engine that returns int32 where the model says int64
    is compared by value (the dtype is noted, not failed)."""
    import zoo

    cast = {}
    notes = []
    for n in names:
        if n in got and n in want and got[n].dtype != want[n].dtype:
            notes.append(f"{n}: {got[n].dtype} (model: {want[n].dtype})")
            cast[n] = got[n].astype(want[n].dtype)
    ok, _, problems = zoo.compare_outputs(entry, names, {**got, **cast}, want)
    # The zoo's wording names quilt as the side under test; here it is whichever engine ran.
    problems = [p.replace("quilt's outputs", "the engine's outputs") for p in problems]
    return ok, problems, notes


def prepare_model(entry, args, out):
    import zoo_fetch
    import zoo_inputs

    name = entry["name"]
    work = os.path.join(out, "work", name)
    os.makedirs(work, exist_ok=True)
    path = str(zoo_fetch.fetch(entry, args.cache)) if not entry.get("path_local") \
        else entry["path_local"]
    if entry.get("inputs_local"):
        with np.load(entry["inputs_local"]) as z:
            inputs = {k: z[k] for k in z.files}
    else:
        inputs = zoo_inputs.make_inputs(entry, path, work)
    npz = os.path.join(work, "inputs.npz")
    np.savez(npz, **inputs)
    p = {"name": name, "model": path, "inputs": npz, "feeds": inputs, "work": work,
         "sizes": {"onnx": os.path.getsize(path)}, "errors": {}, "packages": {}}
    import onnx

    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    p["names"] = [o.name for o in m.graph.output]
    fixed = {v.split("=", 1)[0] for v in entry.get("input_value", [])}
    p["quilt_inputs"] = [i.name for i in m.graph.input if i.name not in inits | fixed]
    for engine, suffix, devices, flags in (
            ("quilt", "", ["llvm"], []),
            ("quilt-opencl", "-opencl", ["opencl", "llvm"], []),
            ("quilt-f4", "-f4", ["llvm"], ["--cpu-winograd-tile", "4"])):
        if engine not in args.engines:
            continue
        pkg = os.path.join(work, f"{name}{suffix}.quilt")
        cmd = [os.path.join(args.quilt_bin, "quiltc"), path, "-o", pkg] + flags
        for d in devices:
            cmd += ["--device", d]
        for s in entry.get("input_shape", []):
            cmd += ["--input-shape", s]
        for v in entry.get("input_value", []):
            cmd += ["--input-value", v]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            p["errors"][engine] = "quiltc: " + r.stderr.strip().splitlines()[-1][:300]
        else:
            p["packages"][engine] = pkg
            p["sizes"][engine] = os.path.getsize(pkg)
    if "mnn" in args.engines:
        mnn = os.path.join(work, f"{name}.mnn")
        # MNN's converter itself (its native module, as the mnnconvert script calls it), not that
        # script: it imports a usage logger that runs "pip install" of its own dependencies when
        # missing (which put protobuf 5 into .venv, breaking onnx) and sends a record of each
        # conversion over the network. In the model's work folder: the converter leaves files in
        # its working directory.
        r = subprocess.run([sys.executable, "-c", "import sys, _tools; _tools.mnnconvert(sys.argv)",
                            "-f", "ONNX", "--modelFile", path, "--MNNModel", mnn,
                            "--bizCode", "bench"], capture_output=True, text=True, cwd=work)
        if r.returncode or not os.path.exists(mnn):
            # Its own error lines, not the pip warnings it passes on.
            lines = [l for l in (r.stdout + r.stderr).splitlines()
                     if l.strip() and "pip" not in l and "WARNING" not in l]
            said = [l for l in lines if re.search(r"error|fail|not support|unsupport", l, re.I)]
            text = " | ".join((said or lines)[-2:]) or "no message"
            how = f"signal {-r.returncode}" if r.returncode < 0 else f"exit {r.returncode}"
            p["errors"]["mnn"] = f"mnnconvert {how}, no model written: {text[:300]}"
        else:
            p["mnn"] = mnn
            p["sizes"]["mnn"] = os.path.getsize(mnn)
    if "openvino" in args.engines:
        code = ("import openvino as ov, sys; m = ov.Core().read_model(sys.argv[1]); "
                "ov.save_model(m, sys.argv[2], compress_to_fp16=False)")
        xml = os.path.join(work, f"{name}.xml")
        r = subprocess.run([sys.executable, "-c", code, path, xml], capture_output=True,
                           text=True, cwd=work)
        if r.returncode == 0:
            p["sizes"]["openvino"] = os.path.getsize(xml) + os.path.getsize(xml[:-4] + ".bin")
    try:
        p["flops"] = count_flops(path, inputs, work)
    except Exception as e:
        p["flops"] = None
        log(f"{name}: no FLOP count ({type(e).__name__}: {e})")
    return p


def bench_model(entry, args, out, index):
    name = entry["name"]
    log(f"{name}: preparing ...")
    p = prepare_model(entry, args, out)
    rec = {"name": name, "sizes": p["sizes"], "flops": p["flops"], "threads": {}}
    base = {"model": p["model"], "inputs": p["inputs"], "names": p["names"],
            "warmup": args.warmup, "runs": args.runs, "seconds": args.seconds,
            "lib": args.lib, "quilt_inputs": p["quilt_inputs"],
            "code_cache": os.path.join(p["work"], "code-cache"),
            "mnn": p.get("mnn")}
    # The reference: ONNX Runtime at one thread.
    ref_res, want = run_worker(dict(base, engine="onnxruntime", threads=1, runs=1, seconds=0,
                                    warmup=0), p["work"], args.timeout)
    if ref_res.get("error"):
        rec["error"] = "the ONNX Runtime reference failed: " + ref_res["error"]
        log(f"{name}: {rec['error']}")
        return rec
    order = list(args.engines)
    k = index % len(order)
    order = order[k:] + order[:k]
    # Each engine's runs in args.rounds rounds, the engines taking turns round by round (a fresh
    # process each): a slow spell of the machine falls on every engine alike rather than on
    # whichever ran then. Its min and median are over all its rounds' runs.
    rounds = max(1, args.rounds)
    per_round = dict(base, runs=max(1, math.ceil(args.runs / rounds)),
                     seconds=args.seconds / rounds)
    for threads in args.threads:
        row = {}
        parts = {e: [] for e in order}
        for r in range(rounds):
            turn = order[r % len(order):] + order[:r % len(order)]
            for engine in turn:
                if engine in p["errors"] or (parts[engine] and parts[engine][-1].get("error")):
                    continue
                log(f"{name}: {engine} at {threads} thread(s), round {r + 1} of {rounds} ...")
                res, got = run_worker(dict(per_round, engine=engine, threads=threads,
                                           package=p["packages"].get(engine)),
                                      p["work"], args.timeout)
                if not res.get("error"):
                    ok, problems, notes = check(entry, p["names"], got, want)
                    res["check"] = "ok" if ok else "wrong"
                    if problems:
                        res["problems"] = problems[:3]
                    if notes:
                        res["notes"] = notes
                parts[engine].append(res)
        for engine in order:
            if engine in p["errors"]:
                row[engine] = {"error": p["errors"][engine]}
                continue
            res = combine_rounds(parts[engine])
            if not res.get("error"):
                if p["flops"] and res.get("median_ms"):
                    res["gflops"] = p["flops"] / (res["median_ms"] * 1e6)
            row[engine] = res
            log(f"{name}: {engine} t{threads}: " + (
                res["error"] if res.get("error") else
                f"median {res['median_ms']:.3f} ms, min {res['min_ms']:.3f} ms, "
                f"{res['runs']} runs in {res['rounds']} rounds, {res['check']}"))
        good = {e: r for e, r in row.items() if e in PEERS and r.get("check") == "ok"}
        if good:
            best = min(good, key=lambda e: good[e]["median_ms"])
            q = row.get("quilt", {})
            row["best_peer"] = best
            if q.get("median_ms"):
                row["ratio_median"] = q["median_ms"] / good[best]["median_ms"]
                row["ratio_min"] = q["min_ms"] / min(r["min_ms"] for r in good.values())
            rss = {e: r["rss_over_python_mb"] for e, r in good.items()}
            if q.get("rss_over_python_mb") is not None and "onnxruntime" in rss:
                row["rss_ratio_ort"] = q["rss_over_python_mb"] / max(rss["onnxruntime"], 1e-9)
        rec["threads"][str(threads)] = row
    return rec


def combine_rounds(parts):
    """One engine's rounds as one result: its runs' min and median over every round, wrong where
    any round's outputs were, its memory the largest of any round's."""
    failed = [r for r in parts if r.get("error")]
    if failed or not parts:
        return failed[0] if failed else {"error": "no round ran"}
    times = sorted(t for r in parts for t in r["times_ms"])
    res = {k: v for k, v in parts[0].items() if k != "times_ms"}
    res.update(min_ms=times[0], median_ms=times[len(times) // 2], runs=len(times),
               rounds=len(parts), round_medians_ms=[r["median_ms"] for r in parts])
    wrong = [r for r in parts if r.get("check") != "ok"]
    if wrong:
        res.update(check="wrong", problems=wrong[0].get("problems", []))
    res["rss_over_python_mb"] = max(r["peak_rss_kb"] - r["rss_python_kb"] for r in parts) / 1024
    # Session creation per round: the first may build what later ones find in a cache (quilt's
    # OpenCL programs).
    res["load_s_rounds"] = [r.get("load_s") for r in parts]
    res["peak_rss_mb"] = max(r["peak_rss_kb"] for r in parts) / 1024
    return res


def _f(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def markdown(meta, records, lib_sizes):
    lines = [f"# CPU benchmark, {meta['date']}", "",
             f"Machine: {meta['cpu']}, {meta['cores']} cores. Engines: quilt {meta['commit']}, "
             + ", ".join(f"{e} {v}" for e, v in meta["versions"].items() if v)
             + f". Latency in ms (min / median of at least {meta['runs']} runs and "
               f"{meta['seconds']} s, in {meta.get('rounds', 1)} rounds the engines take turns "
               f"in, each after {meta['warmup']} warm-up runs); ratio = quilt's "
               "median / the best peer's median (< 1: quilt is faster); a peer whose outputs "
               "differ from ONNX Runtime's at one thread beyond the zoo's tolerances is "
               "marked wrong and is not anyone's best peer.", ""]
    for t in meta["threads"]:
        lines += [f"## {t} thread(s)", "",
                  "| model | GFLOP | " + " | ".join(meta["engines"]) +
                  " | best peer | ratio (median) | quilt GFLOP/s | RSS over Python, MB (quilt / ORT) |",
                  "|" + "---|" * (len(meta["engines"]) + 6)]
        for rec in records:
            row = rec["threads"].get(str(t), {})
            cells = []
            for e in meta["engines"]:
                r = row.get(e, {})
                if r.get("error"):
                    cells.append("error")
                elif "median_ms" in r:
                    mark = "" if r.get("check") == "ok" else " (wrong)"
                    cells.append(f"{r['min_ms']:.3g} / {r['median_ms']:.3g}{mark}")
                else:
                    cells.append("-")
            q, o = row.get("quilt", {}), row.get("onnxruntime", {})
            gf = rec["flops"] / 1e9 if rec.get("flops") else None
            lines.append(f"| {rec['name']} | {_f(gf, '.3g')} | " + " | ".join(cells) +
                         f" | {row.get('best_peer', '-')} | {_f(row.get('ratio_median'))} | "
                         f"{_f(q.get('gflops'), '.1f')} | {_f(q.get('rss_over_python_mb'), '.0f')}"
                         f" / {_f(o.get('rss_over_python_mb'), '.0f')} |")
        ratios = [rec["threads"][str(t)]["ratio_median"] for rec in records
                  if "ratio_median" in rec["threads"].get(str(t), {})]
        if ratios:
            geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            ahead = sum(r <= 0.9 for r in ratios)
            lines += ["", f"Geometric mean of quilt / best peer (median): {geo:.2f} over "
                          f"{len(ratios)} models; {ahead} at or below 0.9.", ""]
    lines += ["## Errors and wrong outputs", ""]
    for rec in records:
        if rec.get("error"):
            lines.append(f"- {rec['name']}: {rec['error']}")
        for t, row in rec["threads"].items():
            for e in meta["engines"]:
                r = row.get(e, {})
                if r.get("error"):
                    lines.append(f"- {rec['name']}, {e}, {t} thread(s): {r['error']}")
                elif r.get("check") == "wrong":
                    lines.append(f"- {rec['name']}, {e}, {t} thread(s): wrong: "
                                 + "; ".join(r.get("problems", [])))
    lines += ["", "## Sizes", "", "| engine | native libraries, MB | files |", "|---|---|---|"]
    for e, s in lib_sizes.items():
        lines.append(f"| {e} | {s['bytes'] / 2**20:.2f} ({s['note']}) | {', '.join(s['files'])} |")
    lines += ["", "| model | ONNX, KB | quilt package, KB | MNN, KB | OpenVINO IR, KB |",
              "|---|---|---|---|---|"]
    for rec in records:
        s = rec["sizes"]
        lines.append(f"| {rec['name']} | " + " | ".join(
            _f(s.get(k) / 1024 if s.get(k) else None, '.0f')
            for k in ("onnx", "quilt", "mnn", "openvino")) + " |")
    return "\n".join(lines) + "\n"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--models", help="comma-separated zoo model names (default: all)")
    ap.add_argument("--ci", action="store_true", help="the zoo's per-commit subset")
    ap.add_argument("--model", help="an ONNX model outside the zoo (with --inputs)")
    ap.add_argument("--inputs", help=".npz of the --model's inputs")
    ap.add_argument("--input-shape", action="append", default=[],
                    help="quiltc --input-shape for --model")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds the engines take turns in (each a fresh process per engine; "
                         "--runs and --seconds are the totals over the rounds)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "bench"))
    ap.add_argument("--cache", default=None)
    ap.add_argument("--manifest", default=os.path.join(ROOT, "models", "zoo.toml"))
    ap.add_argument("--quilt-bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "lib", "libquilt.so"))
    args = ap.parse_args(argv)
    if args.worker:
        return args
    args.engines = [e for e in args.engines.split(",") if e]
    bad = [e for e in args.engines if e not in ENGINES + OPTIONAL_ENGINES]
    if bad:
        ap.error(f"unknown engine(s) {', '.join(bad)}; the engines: "
                 f"{', '.join(ENGINES + OPTIONAL_ENGINES)}")
    try:
        args.threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        ap.error(f"--threads {args.threads}: a comma-separated list of thread counts")
    if any(t < 1 for t in args.threads):
        ap.error("--threads: each count is at least 1")
    if bool(args.model) != bool(args.inputs):
        ap.error("--model and --inputs go together")
    args.lib = os.path.abspath(args.lib)
    if any(e.startswith("quilt") for e in args.engines):
        for f in (args.lib, os.path.join(args.quilt_bin, "quiltc")):
            if not os.path.exists(f):
                ap.error(f"{f} is missing: build quilt first (scripts/bench.sh does)")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.worker:
        worker(args.worker)
        return 0
    import zoo_fetch

    if args.model:
        entries = [{"name": os.path.splitext(os.path.basename(args.model))[0],
                    "path_local": os.path.abspath(args.model),
                    "inputs_local": os.path.abspath(args.inputs),
                    "input_shape": args.input_shape}]
    else:
        entries = zoo_fetch.load_manifest(args.manifest)
        if args.models:
            want = args.models.split(",")
            known = {e["name"] for e in entries}
            missing = [w for w in want if w not in known]
            if missing:
                raise SystemExit(f"bench: no zoo model named {', '.join(missing)}")
            entries = [e for e in entries if e["name"] in want]
        elif args.ci:
            entries = [e for e in entries if e.get("ci")]
    os.makedirs(args.out, exist_ok=True)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), cpu)
    except OSError:
        pass
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cpu,
            "cores": os.cpu_count(), "commit": commit, "versions": versions(),
            "engines": args.engines, "threads": args.threads, "runs": args.runs,
            "seconds": args.seconds, "warmup": args.warmup, "rounds": args.rounds}
    lib_sizes = library_sizes(args.lib) if "quilt" in args.engines else {}
    records = []
    for i, entry in enumerate(entries):
        try:
            records.append(bench_model(entry, args, args.out, i))
        except Exception as e:
            records.append({"name": entry["name"], "error": f"{type(e).__name__}: {e}",
                            "threads": {}, "sizes": {}, "flops": None})
            log(f"{entry['name']}: {records[-1]['error']}")
        text = markdown(meta, records, lib_sizes)
        with open(os.path.join(args.out, "bench-report.md"), "w") as f:
            f.write(text)
        with open(os.path.join(args.out, "bench-report.json"), "w") as f:
            json.dump({"meta": meta, "libraries": lib_sizes, "models": records}, f, indent=1)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

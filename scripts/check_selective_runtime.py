"""A runtime built with chosen kernels (QUILT_KERNELS, runtime/README.md), end to end:

    python scripts/check_selective_runtime.py [--full-lib build-runtime/libquilt.so] [--work DIR]

1. A small model (conv, relu, max pooling, a matrix product, softmax, an If whose branches run an
   exp and a sigmoid) is compiled with quiltc, and `quilt-inspect --kernels` lists its kernels.
2. `cmake -S runtime -DQUILT_KERNELS=LIST` builds a runtime with those alone (Release; for
   -march=x86-64-v3 where this CPU has AVX2 and FMA).
3. The package runs on it through the C API, on both branches: its outputs must be bit for bit
   the full runtime's (the same kernels) and within 1e-5 of ONNX Runtime's. The library must be
   smaller than the full one.
4. A package needing a kernel the build left out (sin) is refused when its session is created,
   with a message naming the kernel and QUILT_KERNELS.
5. Lists the build must refuse: a name that is no kernel (a Debug build: it fails once linked,
   naming it), a line that is not a name, a list naming nothing, a list file that is missing.

Needs build/bin/quiltc and quilt-inspect (scripts/build.sh), the full runtime built alone
(build-runtime, scripts/test.sh) and the .venv (numpy, onnx, onnxruntime). Exit status 0 when
every check holds; prints what failed otherwise.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench import QuiltEngine  # noqa: E402  (the C API through ctypes)

failures = []


def check(ok, what, detail=""):
    print(("ok: " if ok else "FAILED: ") + what + ("" if ok or not detail else "\n" + detail),
          flush=True)
    if not ok:
        failures.append(what)


def flat(text):
    """CMake wraps its messages at the terminal's width: the words, one space apart."""
    return " ".join(text.split())


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def model_with_branches(path, rng):
    """x: (1, 3, 12, 12), flag: bool scalar -> y: (1, 10)."""
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(4).astype(np.float32) * 0.1
    m = rng.standard_normal((4 * 6 * 6, 10)).astype(np.float32) * 0.02
    then_g = helper.make_graph([helper.make_node("Exp", ["logits"], ["t"], name="exp")], "then",
                               [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 10])])
    else_g = helper.make_graph([helper.make_node("Sigmoid", ["logits"], ["e"], name="sig")],
                               "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 10])])
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Reshape", ["p", "shape"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "m"], ["logits"], name="fc"),
        helper.make_node("If", ["flag"], ["u"], name="branch", then_branch=then_g,
                         else_branch=else_g),
        helper.make_node("Softmax", ["u"], ["y"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "selective",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12]),
         helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
         numpy_helper.from_array(m, "m"),
         numpy_helper.from_array(np.array([1, -1], np.int64), "shape")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def model_with_sin(path):
    graph = helper.make_graph(
        [helper.make_node("Sin", ["x"], ["y"], name="sine")], "sine",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def compile_model(model, package):
    r = run([os.path.join(ROOT, "build", "bin", "quiltc"), model, "-o", package])
    if r.returncode:
        sys.exit(f"check-selective-runtime: quiltc {model}: {r.stderr.strip()}")


def host_has_avx2_fma():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return False
    return "avx2" in flags and "fma" in flags


def configure(build, kernels, build_type="Release", march=None):
    cmd = ["cmake", "-S", os.path.join(ROOT, "runtime"), "-B", build, "-G", "Ninja",
           f"-DCMAKE_BUILD_TYPE={build_type}", f"-DQUILT_KERNELS={kernels}"]
    if march:
        cmd.append(f"-DCMAKE_CXX_FLAGS=-march={march}")
    return run(cmd)


def stripped_size(lib, work):
    out = os.path.join(work, "stripped.so")
    subprocess.run(["strip", "-o", out, lib], check=True)
    return os.path.getsize(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full-lib", default=os.path.join(ROOT, "build-runtime", "libquilt.so"))
    ap.add_argument("--work", default=None, help="folder for models, lists and builds "
                    "(default: a temporary one, removed after)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="quilt-selective-") as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        rng = np.random.default_rng(7)
        model = os.path.join(work, "branches.onnx")
        package = os.path.join(work, "branches.quilt")
        model_with_branches(model, rng)
        compile_model(model, package)
        r = run([os.path.join(ROOT, "build", "bin", "quilt-inspect"), package, "--kernels"])
        check(r.returncode == 0, "quilt-inspect --kernels")
        kernels = os.path.join(work, "kernels.txt")
        with open(kernels, "w") as f:
            f.write("# the kernels of branches.quilt\n" + r.stdout)
        names = r.stdout.split()
        print("kernels: " + " ".join(names), flush=True)
        for needed in ("nn.conv2d", "exp", "sigmoid", "nn.softmax"):
            check(needed in names, f"the list names {needed}")

        # Built for the x86-64-v3 baseline where this CPU has it (AVX2 and FMA: the fast
        # kernels then have no baseline copies, simd.h), as for a known deployment target.
        march = "x86-64-v3" if host_has_avx2_fma() else None
        print(f"building for {march or 'the default baseline'}", flush=True)
        build = os.path.join(work, "build-runtime-chosen")
        r = configure(build, kernels, march=march)
        check(r.returncode == 0, "configure with QUILT_KERNELS", r.stderr.strip()[-1500:])
        r = run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2)])
        check(r.returncode == 0, "build with QUILT_KERNELS", (r.stdout + r.stderr)[-3000:])
        if failures:
            return 1
        lib = os.path.join(build, "libquilt.so")
        chosen_size, full_size = stripped_size(lib, work), stripped_size(args.full_lib, work)
        print(f"libquilt.so stripped: {chosen_size} bytes with the chosen kernels, "
              f"{full_size} with every kernel", flush=True)
        check(chosen_size < full_size * 0.75, "the library with chosen kernels is smaller")

        import onnxruntime as ort
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        x = rng.standard_normal((1, 3, 12, 12)).astype(np.float32)
        for flag in (True, False):
            feeds = {"x": x, "flag": np.array(flag)}
            spec = {"package": package, "quilt_inputs": ["x", "flag"]}
            chosen = QuiltEngine(dict(spec, lib=lib), feeds, 1).run()["y"]
            full = QuiltEngine(dict(spec, lib=args.full_lib), feeds, 1).run()["y"]
            want = sess.run(["y"], feeds)[0]
            check(np.array_equal(chosen, full),
                  f"flag={flag}: the chosen-kernel runtime's output is the full one's")
            err = float(np.max(np.abs(chosen.astype(np.float64) - want)))
            check(err <= 1e-5, f"flag={flag}: within 1e-5 of ONNX Runtime (max error {err:.2e})")

        sine = os.path.join(work, "sine.onnx")
        model_with_sin(sine)
        compile_model(sine, os.path.join(work, "sine.quilt"))
        try:
            QuiltEngine({"package": os.path.join(work, "sine.quilt"), "quilt_inputs": ["x"],
                         "lib": lib}, {"x": np.zeros(4, np.float32)}, 1)
            check(False, "a package needing a kernel left out is refused")
        except RuntimeError as e:
            msg = str(e)
            print("refused: " + msg, flush=True)
            check("no CPU kernel for step 0 (sin, node 'sine')" in msg and "QUILT_KERNELS" in msg,
                  "a package needing a kernel left out is refused, naming it")

        # Lists the build refuses.
        bad = os.path.join(work, "misspelt.txt")
        with open(bad, "w") as f:
            f.write("exp\nnn.conv2dd\n")
        debug = os.path.join(work, "build-runtime-misspelt")
        r = configure(debug, bad, "Debug")
        check(r.returncode == 0, "configure with a misspelt name", r.stderr.strip()[-1500:])
        r = run(["cmake", "--build", debug, "-j", str(os.cpu_count() or 2)])
        out = r.stdout + r.stderr
        check(r.returncode != 0 and "QUILT_KERNELS names 'nn.conv2dd', which is no CPU kernel"
              in out, "a name that is no kernel fails the build, naming it", out[-3000:])
        for text, expect in (("exp\nnn conv2d\n", "'nn conv2d' is not a kernel name"),
                             ("# nothing\n\n", "name no kernel")):
            with open(bad, "w") as f:
                f.write(text)
            r = configure(os.path.join(work, "build-runtime-bad"), bad)
            check(r.returncode != 0 and expect in flat(r.stderr), f"configure refuses: {expect}",
                  r.stderr[-1500:])
        r = configure(os.path.join(work, "build-runtime-bad"), os.path.join(work, "absent.txt"))
        check(r.returncode != 0 and "absent.txt is not a file" in flat(r.stderr),
              "configure refuses a list file that is missing", r.stderr[-1500:])
    if failures:
        print(f"check-selective-runtime: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("check-selective-runtime: every check holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())

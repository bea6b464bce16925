"""Writes the seed corpora and dictionaries of the fuzz targets (fuzz/README.md) to a folder.

Seeds are made, not committed (only fuzz/seeds/ and fuzz/dicts/ are, a few KB):
    OUT/onnx_import/  every ONNX node test model (BUILD/onnx-node-tests) and the smallest models
                      of the zoo's cache (~/.cache/quilt/zoo/models), when it is there
    OUT/ir_parse/     tests/data/ir, fuzz/seeds/ir_parse, every module written in a test
                      (tests/**/*.cc raw strings) and the IR of one node test per ONNX op
                      (BUILD/bin/quilt-opt)
    OUT/package/      packages of one node test per ONNX op (BUILD/bin/quiltc)
    OUT/npy/          .npy files of every dtype the reader knows (format versions 1 and 2, empty,
                      scalar, Fortran order, big-endian) and .npz archives, stored and deflated
    OUT/TARGET.dict   fuzz/dicts/TARGET.dict and the op names of ir/ops/*.def where they help
Usage: fuzz_seeds.py [--build build] [--out build-fuzz/seeds]
"""

import argparse
import collections
import concurrent.futures
import glob
import hashlib
import io
import os
import re
import shutil
import subprocess
import zipfile

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Zoo models up to this size seed the importer: bigger ones are mostly weights, which slow every
# execution without adding structure.
ZOO_MAX_BYTES = 600_000


def put(folder, data, suffix=""):
    """Writes `data` under its hash (libFuzzer's naming), so that a second run adds nothing."""
    name = hashlib.sha1(data).hexdigest() + suffix
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def one_per_op(node_tests):
    """The smallest node test of each op type (the first node's), in name order."""
    by_op = collections.defaultdict(list)
    for name in sorted(os.listdir(node_tests)):
        path = os.path.join(node_tests, name, "model.onnx")
        if not os.path.isfile(path):
            continue
        try:
            model = onnx.load(path, load_external_data=False)
        except Exception:  # a model the installed onnx cannot read: not a seed
            continue
        if model.graph.node:
            by_op[model.graph.node[0].op_type].append((os.path.getsize(path), name, path))
    return [min(tests)[2] for _, tests in sorted(by_op.items())]


def run_all(commands):
    """Runs each command (two at a time); returns the stdout of those that succeeded, or None."""

    def run(cmd):
        r = subprocess.run(cmd, capture_output=True, timeout=120)
        return r.stdout if r.returncode == 0 else None

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(run, commands))


def onnx_seeds(out, node_tests):
    n = 0
    for name in sorted(os.listdir(node_tests)):
        path = os.path.join(node_tests, name, "model.onnx")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                put(out, f.read())
            n += 1
    zoo = os.path.expanduser("~/.cache/quilt/zoo/models")
    if os.path.isdir(zoo):
        for name in sorted(os.listdir(zoo)):
            path = os.path.join(zoo, name)
            if name.endswith(".onnx") and os.path.getsize(path) <= ZOO_MAX_BYTES:
                with open(path, "rb") as f:
                    put(out, f.read())
                n += 1
    return n


def ir_seeds(out, build, models):
    n = 0
    for folder in (os.path.join(ROOT, "tests/data/ir"), os.path.join(ROOT, "fuzz/seeds/ir_parse")):
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(".qir"):
                with open(os.path.join(folder, name), "rb") as f:
                    put(out, f.read())
                n += 1
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/**/*.cc"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            for m in re.finditer(r'R"\((.*?)\)"', f.read(), re.S):
                if "@I.ir_module" in m.group(1):
                    put(out, m.group(1).encode())
                    n += 1
    quilt_opt = os.path.join(build, "bin/quilt-opt")
    for text in run_all([[quilt_opt, m] for m in models]):
        if text:
            put(out, text)
            n += 1
    return n


def package_seeds(out, build, models, tmp):
    quiltc = os.path.join(build, "bin/quiltc")
    os.makedirs(tmp, exist_ok=True)
    outputs = [os.path.join(tmp, "%d.quilt" % i) for i in range(len(models))]
    results = run_all([[quiltc, m, "-o", o] for m, o in zip(models, outputs)])
    n = 0
    for result, path in zip(results, outputs):
        if result is not None and os.path.isfile(path):
            with open(path, "rb") as f:
                put(out, f.read())
            n += 1
    shutil.rmtree(tmp)
    return n


def npy_seeds(out):
    dtypes = ["<f4", "<f8", "<f2", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"]
    shapes = [(), (0,), (3,), (2, 3), (2, 1, 2)]
    arrays = []
    for i, dt in enumerate(dtypes):
        shape = shapes[i % len(shapes)]
        arrays.append(np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(dt))
    n = 0

    def npy(a, version=None, **kw):
        b = io.BytesIO()
        np.lib.format.write_array(b, a, version=version, **kw)
        return b.getvalue()

    for a in arrays:
        put(out, npy(a))
        n += 1
    put(out, npy(arrays[0], version=(2, 0)))
    put(out, npy(np.asfortranarray(np.ones((2, 3), np.float32))))
    put(out, npy(np.ones((2,), ">f4")))
    n += 3
    for compress in (False, True):
        for members in (arrays[:1], arrays[1:4]):
            b = io.BytesIO()
            save = np.savez_compressed if compress else np.savez
            save(b, **{"a%d" % i: a for i, a in enumerate(members)})
            put(out, b.getvalue())
            n += 1
    # A ZIP64 archive (numpy writes one for members of 4 GiB and more; here forced small).
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        with z.open("x.npy", "w", force_zip64=True) as f:
            f.write(npy(arrays[3]))
    put(out, b.getvalue())
    return n + 1


def write_dicts(out):
    ops = set()
    for name in sorted(os.listdir(os.path.join(ROOT, "ir/ops"))):
        if name.endswith(".def"):
            with open(os.path.join(ROOT, "ir/ops", name)) as f:
                ops.update(re.findall(r'QUILT_OP\(\w+,\s*"([a-z0-9_.]+)"', f.read()))
    extra = {
        "ir_parse": ['"R.%s"' % op for op in sorted(ops)],
        "package": ['"%s"' % op for op in sorted(ops)],
        "onnx_import": ['"%s"' % s for s in sorted(onnx_op_types())],
        "npy": [],
    }
    for target, lines in extra.items():
        base = os.path.join(ROOT, "fuzz/dicts", target + ".dict")
        text = open(base).read() if os.path.exists(base) else ""
        with open(os.path.join(out, target + ".dict"), "w") as f:
            f.write(text + "".join(line + "\n" for line in lines))


def onnx_op_types():
    return {s.name for s in onnx.defs.get_all_schemas() if s.domain in ("", "ai.onnx")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build-fuzz/seeds"))
    args = ap.parse_args()
    node_tests = os.path.join(args.build, "onnx-node-tests")
    if not os.path.isdir(node_tests):
        raise SystemExit("fuzz_seeds: no %s; build first (scripts/build.sh)" % node_tests)
    for target in ("onnx_import", "ir_parse", "package", "npy"):
        os.makedirs(os.path.join(args.out, target), exist_ok=True)
    models = one_per_op(node_tests)
    counts = {
        "onnx_import": onnx_seeds(os.path.join(args.out, "onnx_import"), node_tests),
        "ir_parse": ir_seeds(os.path.join(args.out, "ir_parse"), args.build, models),
        "package": package_seeds(
            os.path.join(args.out, "package"), args.build, models, os.path.join(args.out, "tmp")
        ),
        "npy": npy_seeds(os.path.join(args.out, "npy")),
    }
    write_dicts(args.out)
    print(
        "fuzz_seeds: %s in %s"
        % (", ".join("%s %d" % (t, n) for t, n in counts.items()), args.out)
    )


if __name__ == "__main__":
    main()

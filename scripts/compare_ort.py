"""Runs a model with ONNX Runtime on the inputs of an .npz and compares with quilt's outputs.

    python scripts/compare_ort.py MODEL.onnx INPUTS.npz QUILT_OUTPUT_DIR [--labels a,b] [--runs N]

Prints each output of both side by side, the largest difference, and ONNX Runtime's latency
(min and median of N runs, single thread, like quilt-run's default).
"""
import argparse
import os
import re
import time

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("quilt_dir")
    ap.add_argument("--labels", default="")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])
    feeds = dict(np.load(args.inputs))
    names = [o.name for o in sess.get_outputs()]
    ref = sess.run(names, feeds)
    labels = args.labels.split(",") if args.labels else None
    worst = 0.0
    for name, want in zip(names, ref):
        got = np.load(os.path.join(args.quilt_dir, re.sub(r"[^A-Za-z0-9-]", "_", name) + ".npy"))
        diff = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
        worst = max(worst, diff)
        print(f"output {name}: {want.dtype} {tuple(want.shape)}")
        for i in range(min(len(want), 8)):
            row_q = np.array2string(got[i], precision=5, suppress_small=True)
            row_o = np.array2string(want[i], precision=5, suppress_small=True)
            label = ""
            if labels and want.ndim == 2:
                label = f"  -> quilt: {labels[int(np.argmax(got[i]))]}, onnxruntime: {labels[int(np.argmax(want[i]))]}"
            print(f"  [{i}] quilt {row_q}   onnxruntime {row_o}{label}")
    print(f"largest difference quilt vs onnxruntime: {worst:.3g}")
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        sess.run(names, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    print(f"onnxruntime latency over {len(times)} runs (ms): min {times[0]:.3f}  median {times[len(times) // 2]:.3f}")
    if worst > 1e-3:
        raise SystemExit("quilt and onnxruntime disagree")


if __name__ == "__main__":
    main()

"""The gate fails when a model drifts: one CI model is checked against the outputs of a copy of
itself with one weight tensor scaled by 1.01 (--reference-model), as if quilt had started
computing something else. The runner must exit 1, report that model failing with the outputs
that differ, and still pass the other model it ran.

    .venv/bin/python tests/zoo/test_zoo_drift.py
"""
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_testing import JOBS, ci_entries, explain, out_dir, records, run_zoo  # noqa: E402
import zoo  # noqa: E402
import zoo_fetch  # noqa: E402
import zoo_inputs  # noqa: E402


def ort_outputs(path, inputs):
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    wanted = {i.name for i in sess.get_inputs()}
    return dict(zip(names, sess.run(names, {k: v for k, v in inputs.items() if k in wanted})))


def weights(model):
    """The float tensors of the model: initializers and Constant nodes' values."""
    found = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT]
    for node in model.graph.node:
        if node.op_type == "Constant":
            found += [a.t for a in node.attribute
                      if a.name == "value" and a.t.data_type == onnx.TensorProto.FLOAT]
    return sorted(found, key=lambda t: -int(np.prod(t.dims)))


def perturbed_copy(entry, path, inputs, folder):
    """A copy of the model with one weight tensor scaled by 1.01: the largest one whose change
    moves an output beyond the entry's tolerance (checked with ONNX Runtime)."""
    model = onnx.load(path)
    names = [o.name for o in model.graph.output]
    base = ort_outputs(path, inputs)
    for t in weights(model)[:12]:
        original = onnx.TensorProto()
        original.CopyFrom(t)
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * np.float32(1.01), t.name))
        out = os.path.join(folder, f"{entry['name']}-drifted.onnx")
        onnx.save(model, out)
        ok, _, _ = zoo.compare_outputs(entry, names, ort_outputs(out, inputs), base)
        if not ok:
            return out, t.name
        t.CopyFrom(original)
    raise AssertionError(f"{entry['name']}: scaling none of its largest weights by 1.01 moves "
                         "an output beyond its tolerance")


class Drift(unittest.TestCase):
    def test_a_drifting_model_fails_the_gate_and_the_others_pass(self):
        entries = [e for e in ci_entries() if "llvm" in e["configs"]]
        self.assertGreaterEqual(len(entries), 2, "needs two ci models with the llvm config")
        victim, other = entries[0], entries[1]
        tmp = tempfile.mkdtemp(prefix="zoo-drift-")
        try:
            path = str(zoo_fetch.fetch(victim, zoo.default_cache()))
            inputs = zoo_inputs.make_inputs(victim, path, os.path.join(tmp, "inputs"))
            drifted, tensor = perturbed_copy(victim, path, inputs, tmp)
            out = out_dir("drift")
            p, report = run_zoo(["--models", f"{victim['name']},{other['name']}", "--configs",
                                 "llvm", "--jobs", JOBS, "--runs", "2", "--warmup", "0",
                                 "--reference-model", f"{victim['name']}={drifted}"], out,
                                timeout=240)
            self.assertIsNotNone(report, explain(p))
            self.assertEqual(p.returncode, 1, explain(p))
            recs = records(report)
            bad = recs[(victim["name"], "llvm")]
            self.assertEqual(bad["status"], "fail", f"{tensor}: {bad}")
            self.assertIn("beyond atol", bad["message"])
            self.assertTrue(any(not o["ok"] for o in bad["outputs"]))
            self.assertTrue(any(drifted in n for n in bad["notes"]), bad["notes"])
            # The float64 evaluation (of the drifted reference) does not take quilt's side.
            self.assertTrue(bad["float64"] is not None and not bad["float64"].get("quilt_closer"))
            self.assertEqual(recs[(other["name"], "llvm")]["status"], "pass", explain(p))
            self.assertRegex(p.stdout, rf"\| {victim['name']} \| llvm \| fail \|")
            self.assertRegex((out / "zoo-report.md").read_text(),
                             rf"### {victim['name']} llvm: fail")
            if not os.environ.get("QUILT_ZOO_OUT"):
                shutil.rmtree(out, ignore_errors=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()

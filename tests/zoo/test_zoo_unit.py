"""Unit tests of scripts/zoo.py: the output comparison, the float64 evaluation and arbitration,
the placement helpers and the judging of one model/configuration. No network, no quilt build.

    .venv/bin/python tests/zoo/test_zoo_unit.py
"""
import math
import os
import shutil
import sys
import tempfile
import types
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_testing  # noqa: E402,F401  (puts scripts/ on the path)
import zoo  # noqa: E402

ENTRY = {"name": "m", "task": "vision", "kind": "test",
         "tolerance": {"atol": 1e-4, "rtol": 1e-3,
                       "outputs": {"loose": {"atol": 0.5, "rtol": 0.0, "reason": "test"}}}}


def save(model, folder, name):
    path = os.path.join(folder, name)
    onnx.save(model, path)
    return path


def sum_model(n):
    """y = ReduceSum(Cast<float>(x) * w), w all ones: a long float32 accumulation."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    w = numpy_helper.from_array(np.ones((1, n), np.float32), "w")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("Cast", ["x"], ["xc"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xc", "w"], ["p"]),
             helper.make_node("ReduceSum", ["p", "axes"], ["y"], keepdims=0)]
    g = helper.make_graph(nodes, "sum", [x], [y], [w, axes])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def sum_input(n):
    """1 and then n - 1 values of 1e-8: each vanishes when added to 1 in float32, their sum
    (about n * 1e-8) does not in float64."""
    x = np.full((1, n), 1e-8, np.float32)
    x[0, 0] = 1.0
    return x


class CompareArrays(unittest.TestCase):
    def test_equal_and_within_tolerance_pass(self):
        r = np.array([1.0, -2.0, 0.0, 100.0], np.float32)
        self.assertTrue(zoo.compare_arrays(r.copy(), r, 1e-4, 1e-3)["ok"])
        q = r + np.array([5e-5, -5e-5, 9e-5, 0.1], np.float32)  # 0.1 <= 1e-4 + 1e-3 * 100
        c = zoo.compare_arrays(q, r, 1e-4, 1e-3)
        self.assertTrue(c["ok"], c)
        self.assertAlmostEqual(c["max_abs"], 0.1, places=5)
        self.assertLessEqual(c["score"], 1.0)

    def test_beyond_tolerance_fails_with_the_worst_element(self):
        r = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
        q = r.copy()
        q[1, 0] += 0.01
        c = zoo.compare_arrays(q, r, 1e-4, 1e-3)
        self.assertFalse(c["ok"])
        self.assertIn("1 of 4 elements beyond", c["problem"])
        self.assertEqual(c["worst"]["index"], [1, 0])
        self.assertAlmostEqual(c["max_abs"], 0.01, places=5)
        self.assertAlmostEqual(c["max_rel"], 0.01 / 3, places=5)

    def test_relative_error_ignores_elements_near_zero(self):
        r = np.array([1e-9, 1.0], np.float32)
        q = np.array([5e-5, 1.0], np.float32)
        c = zoo.compare_arrays(q, r, 1e-4, 1e-3)
        self.assertTrue(c["ok"])
        self.assertEqual(c["max_rel"], 0.0)

    def test_nan_positions_must_match(self):
        r = np.array([1.0, np.nan, 3.0], np.float32)
        self.assertTrue(zoo.compare_arrays(r.copy(), r, 1e-4, 1e-3)["ok"])
        q = np.array([np.nan, 2.0, 3.0], np.float32)
        c = zoo.compare_arrays(q, r, 1e-4, 1e-3)
        self.assertFalse(c["ok"])
        self.assertEqual(c["nan_mismatch"], 2)
        self.assertIn("NaN on one side only", c["problem"])

    def test_infinities(self):
        r = np.array([np.inf, -np.inf, 1.0], np.float32)
        self.assertTrue(zoo.compare_arrays(r.copy(), r, 1e-4, 1e-3)["ok"])
        for q in (np.array([1e30, -np.inf, 1.0], np.float32),
                  np.array([-np.inf, -np.inf, 1.0], np.float32),
                  np.array([np.inf, -np.inf, np.inf], np.float32)):
            c = zoo.compare_arrays(q, r, 1e-4, 1e-3)
            self.assertFalse(c["ok"], q)
            self.assertTrue(math.isinf(c["max_abs"]) or c["max_abs"] > 1e29)

    def test_shape_and_dtype_must_match(self):
        r = np.zeros((2, 3), np.float32)
        c = zoo.compare_arrays(np.zeros((3, 2), np.float32), r, 1e-4, 1e-3)
        self.assertFalse(c["ok"])
        self.assertIn("shape (3, 2)", c["problem"])
        c = zoo.compare_arrays(np.zeros((2, 3), np.float64), r, 1e-4, 1e-3)
        self.assertFalse(c["ok"])
        self.assertIn("dtype float64", c["problem"])

    def test_integers_and_booleans_are_exact(self):
        r = np.array([3, 7, 1], np.int64)
        self.assertTrue(zoo.compare_arrays(r.copy(), r, 1e-4, 1e-3)["ok"])
        self.assertFalse(zoo.compare_arrays(np.array([3, 8, 1]), r, 1e-4, 1e-3)["ok"])
        b = np.array([True, False])
        self.assertTrue(zoo.compare_arrays(b.copy(), b, 1e-4, 1e-3)["ok"])
        self.assertFalse(zoo.compare_arrays(~b, b, 1e-4, 1e-3)["ok"])

    def test_empty_and_scalar(self):
        self.assertTrue(zoo.compare_arrays(np.zeros((0, 4), np.float32),
                                           np.zeros((0, 4), np.float32), 0, 0)["ok"])
        self.assertTrue(zoo.compare_arrays(np.float32(2.0), np.float32(2.00001), 1e-4, 0)["ok"])


class CompareOutputs(unittest.TestCase):
    def test_tolerance_per_output(self):
        self.assertEqual(zoo.tolerance_for(ENTRY, "y"), (1e-4, 1e-3, ""))
        self.assertEqual(zoo.tolerance_for(ENTRY, "loose"), (0.5, 0.0, "test"))
        self.assertEqual(zoo.tolerance_for({"name": "n"}, "y"),
                         (zoo.DEFAULT_ATOL, zoo.DEFAULT_RTOL, ""))

    def test_override_applies_to_its_output_only(self):
        want = {"y": np.zeros(3, np.float32), "loose": np.zeros(3, np.float32)}
        got = {"y": np.zeros(3, np.float32), "loose": np.full(3, 0.4, np.float32)}
        ok, results, problems = zoo.compare_outputs(ENTRY, ["y", "loose"], got, want)
        self.assertTrue(ok, problems)
        self.assertEqual(results[1]["tolerance_reason"], "test")
        got["y"] = np.full(3, 0.4, np.float32)
        ok, _, problems = zoo.compare_outputs(ENTRY, ["y", "loose"], got, want)
        self.assertFalse(ok)
        self.assertEqual(len(problems), 1)
        self.assertIn("output 'y'", problems[0])

    def test_missing_or_renamed_output_fails(self):
        want = {"y": np.zeros(3, np.float32), "z": np.zeros(3, np.float32)}
        got = {"y": np.zeros(3, np.float32), "z_renamed": np.zeros(3, np.float32)}
        ok, results, problems = zoo.compare_outputs(ENTRY, ["y", "z"], got, want)
        self.assertFalse(ok)
        self.assertIn("output 'z' is missing from quilt's outputs", problems)
        self.assertFalse(results[1]["ok"])


class Float64(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zoo-unit-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_conversion_makes_every_float_double(self):
        m = zoo.to_float64(sum_model(8))
        self.assertEqual(m.graph.input[0].type.tensor_type.elem_type, TensorProto.DOUBLE)
        self.assertEqual(m.graph.output[0].type.tensor_type.elem_type, TensorProto.DOUBLE)
        self.assertEqual(m.graph.initializer[0].data_type, TensorProto.DOUBLE)
        self.assertEqual(m.graph.initializer[1].data_type, TensorProto.INT64)
        self.assertEqual(m.graph.node[0].attribute[0].i, TensorProto.DOUBLE)
        onnx.checker.check_model(m)

    def test_float64_evaluation_keeps_what_float32_loses(self):
        n = 20000
        path = save(sum_model(n), self.tmp, "sum.onnx")
        x = sum_input(n)
        f64, why = zoo.float64_reference(path, {"x": x}, timeout=120)
        self.assertIsNone(why)
        exact = 1.0 + float(np.sum(x[0, 1:].astype(np.float64)))
        self.assertEqual(f64["y"].dtype, np.float64)
        self.assertAlmostEqual(float(f64["y"][0]), exact, delta=1e-12)
        # A float32 running sum, as a naive kernel computes it, loses every small term.
        naive = np.float32(0)
        for v in x[0]:
            naive = np.float32(naive + v)
        self.assertEqual(naive, np.float32(1.0))
        self.assertGreater(exact - 1.0, 1e-4)

    def test_arbitration_passes_the_side_closer_to_float64(self):
        n = 20000
        path = save(sum_model(n), self.tmp, "sum.onnx")
        f64, why = zoo.float64_reference(path, {"x": sum_input(n)}, timeout=120)
        self.assertIsNone(why)
        accurate = {"y": f64["y"].astype(np.float32)}
        naive = {"y": np.array([1.0], np.float32)}
        entry = {"name": "sum", "tolerance": {"atol": 1e-6, "rtol": 1e-6}}
        self.assertFalse(zoo.compare_outputs(entry, ["y"], accurate, naive)[0])
        ok, note, details = zoo.arbitrate(entry, ["y"], accurate, naive, f64)
        self.assertTrue(ok, note)
        self.assertIn("quilt is closer", note)
        self.assertEqual(details["y"]["closer"], "quilt")
        ok, note, details = zoo.arbitrate(entry, ["y"], naive, accurate, f64)
        self.assertFalse(ok)
        self.assertIn("onnxruntime closer", note)
        self.assertEqual(details["y"]["closer"], "onnxruntime")

    def test_closer_but_beyond_tolerance_of_float64_fails(self):
        f64 = {"y": np.array([1.0], np.float64)}
        entry = {"name": "e", "tolerance": {"atol": 1e-6, "rtol": 0.0}}
        ok, note, _ = zoo.arbitrate(entry, ["y"], {"y": np.array([1.001], np.float32)},
                                    {"y": np.array([1.01], np.float32)}, f64)
        self.assertFalse(ok)
        self.assertIn("quilt closer, but beyond tolerance of float64", note)

    def test_inference_batch_norm_with_momentum(self):
        # Exporters write `momentum` on inference BatchNormalization (opset 9-13); the float64
        # evaluation must not take it for training.
        rng = np.random.default_rng(1)
        c = 4
        inits = [numpy_helper.from_array(rng.uniform(0.5, 2, c).astype(np.float32), n)
                 for n in ("scale", "bias", "mean", "var")]
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c, 3, 3])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, c, 3, 3])
        node = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"],
                                ["y"], epsilon=1e-5, momentum=0.9)
        m = helper.make_model(helper.make_graph([node], "bn", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 11)])
        path = save(m, self.tmp, "bn.onnx")
        xv = rng.uniform(-1, 1, (2, c, 3, 3)).astype(np.float32)
        f64, why = zoo.float64_reference(path, {"x": xv}, timeout=120)
        self.assertIsNone(why)
        s, b, mu, v = (numpy_helper.to_array(t).astype(np.float64).reshape(1, c, 1, 1)
                       for t in inits)
        want = s * (xv - mu) / np.sqrt(v + 1e-5) + b
        np.testing.assert_allclose(f64["y"], want, rtol=1e-12, atol=1e-12)

    def test_unavailable_reference_says_why(self):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
        node = helper.make_node("Mystery", ["x"], ["y"], domain="com.example")
        m = helper.make_model(helper.make_graph([node], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 13),
                                             helper.make_opsetid("com.example", 1)])
        path = save(m, self.tmp, "mystery.onnx")
        f64, why = zoo.float64_reference(path, {"x": np.ones(2, np.float32)}, timeout=120)
        self.assertIsNone(f64)
        self.assertTrue(why.startswith("float64 reference unavailable: "), why)
        self.assertIn("Mystery", why)

    def test_timeout(self):
        path = save(sum_model(8), self.tmp, "sum.onnx")
        f64, why = zoo.float64_reference(path, {"x": sum_input(8)}, timeout=0.01)
        self.assertIsNone(f64)
        self.assertEqual(why, "float64 reference unavailable: timed out after 0.01 s")


class Helpers(unittest.TestCase):
    def test_split_rules_alternate_op_types(self):
        self.assertEqual(zoo.split_rules(["Conv", "Relu", "Add", "MatMul", "Softmax"], "llvm:1"),
                         ["op:Relu=llvm:1", "op:MatMul=llvm:1"])
        self.assertEqual(zoo.split_rules(["Conv"], "llvm:1"), [])

    def test_no_op_rule_message(self):
        msg = ("quiltc: error: --place op:Shape=llvm:1: the rule matches no op of the model "
               "(op types are ONNX's, as in 'op:Conv=llvm')")
        self.assertEqual(zoo.NO_OP_RULE.search(msg).group(1), "op:Shape=llvm:1")

    def test_placement_line(self):
        stderr = ("placement: 5 ops on 2 devices, 3 regions, 6 copies (2,992 bytes), 1 fallback\n"
                  "  llvm (llvm): 4 ops in 2 regions\n"
                  "  llvm:1 (llvm): 1 op in 1 region\n"
                  "  fallback: 1 x R.nn.softmax: no kernel\n"
                  "quiltc: wrote x.quilt (100 bytes)\n")
        self.assertEqual(zoo.placement_line(stderr),
                         "5 ops on 2 devices, 3 regions, 6 copies (2,992 bytes), 1 fallback; "
                         "llvm (llvm): 4 ops in 2 regions; llvm:1 (llvm): 1 op in 1 region")

    def test_first_error(self):
        text = "placement: ...\nquiltc: error: m.onnx: node 'a' (Foo): unsupported\n  detail\n"
        self.assertEqual(zoo.first_error(text, "quiltc"),
                         "quiltc: error: m.onnx: node 'a' (Foo): unsupported\n  detail")

    def test_sanitize_as_quilt_run(self):
        self.assertEqual(zoo.sanitize("save_infer_model/scale_0.tmp_1"),
                         "save_infer_model_scale_0_tmp_1")
        self.assertEqual(zoo.sanitize("StatefulPartitionedCall:0"), "StatefulPartitionedCall_0")

    def test_every_config_names_its_devices_and_resources(self):
        for name, cfg in zoo.CONFIGS.items():
            self.assertTrue(cfg["devices"], name)
            self.assertIsInstance(cfg["resources"], dict, name)
        self.assertEqual(zoo.CONFIGS["opencl"]["resources"], {"opencl": 1})
        self.assertEqual(zoo.CONFIGS["cuda+llvm"]["resources"], {"cuda": 1})
        self.assertEqual(zoo.CONFIGS["llvm"]["resources"], {})

    def test_the_manifest_accepts_the_configs_zoo_runs(self):
        import zoo_fetch
        self.assertEqual(zoo_fetch.CONFIGS, set(zoo.CONFIGS))

    def test_local_opencl_needs_a_registered_driver(self):
        saved = os.environ.get("OCL_ICD_VENDORS")
        empty = tempfile.mkdtemp()
        try:
            os.environ["OCL_ICD_VENDORS"] = empty
            why = zoo.LocalExecutor(1).available("opencl+llvm")
            self.assertIn("no OpenCL driver is registered here", why)
            self.assertIn("--ray", why)
            with open(os.path.join(empty, "pocl.icd"), "w") as f:
                f.write("libpocl.so.2\n")
            self.assertIsNone(zoo.LocalExecutor(1).available("opencl+llvm"))
            self.assertIn("'cuda' device", zoo.LocalExecutor(1).available("cuda+llvm"))
        finally:
            if saved is None:
                os.environ.pop("OCL_ICD_VENDORS", None)
            else:
                os.environ["OCL_ICD_VENDORS"] = saved
            shutil.rmtree(empty, ignore_errors=True)

    def test_json_report_has_no_nan(self):
        self.assertEqual(zoo._jsonable({"a": math.inf, "b": [np.float32(1.5), np.nan]}),
                         {"a": "inf", "b": [1.5, "nan"]})


class Judge(unittest.TestCase):
    """judge() on handmade task results: the status rules without running anything."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zoo-unit-")
        # A stand-in for scripts/zoo_tasks.py: the task result is the argmax.
        fake = types.ModuleType("zoo_tasks")
        def task_result(entry, inputs, outputs, cache_dir=None):
            if entry.get("kind") == "broken":
                raise KeyError("no output 'scores'")
            return str(int(np.argmax(list(outputs.values())[0])))

        fake.task_result = task_result
        fake.task_agrees = lambda entry, a, b: a == b
        self.saved = sys.modules.get("zoo_tasks")
        sys.modules["zoo_tasks"] = fake
        self.args = types.SimpleNamespace(float64_timeout=120)

    def tearDown(self):
        if self.saved is not None:
            sys.modules["zoo_tasks"] = self.saved
        else:
            sys.modules.pop("zoo_tasks", None)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def judge(self, entry, quilt, ort, names=("y",), printed=None, config="llvm", prep=None):
        rec = zoo.base_record(entry, config)
        prep = prep or {"names": list(names), "inputs": {}, "path": "m.onnx",
                        "ref_path": "m.onnx", "sha256": "0"}
        res = {"stage": "done", "message": None, "notes": [], "outputs": quilt,
               "output_names": list(printed if printed is not None else quilt),
               "ms": {"median": 2.0}, "compile_s": 0.1, "package_kb": 1.0, "peak_mb": 5.0,
               "placement": "1 op on 1 device"}
        zoo.judge(rec, entry, prep, {"error": None, "outputs": ort, "ms": {"median": 1.0}}, res,
                  {}, self.args)
        return rec

    def test_pass(self):
        y = np.array([0.1, 0.9], np.float32)
        rec = self.judge(ENTRY, {"y": y}, {"y": y + 1e-6})
        self.assertEqual(rec["status"], "pass", rec)
        self.assertEqual(rec["task"], {"quilt": "1", "onnxruntime": "1", "agrees": True})
        self.assertEqual(rec["ratio"], 2.0)

    def test_renamed_output_fails(self):
        y = np.array([0.1, 0.9], np.float32)
        rec = self.judge(ENTRY, {"y_0": y}, {"y": y})
        self.assertEqual(rec["status"], "fail")
        self.assertIn("output 'y' is missing from quilt's outputs", rec["message"])
        self.assertIn("quilt has outputs the model does not: 'y_0'", rec["message"])

    def test_task_disagreement_fails(self):
        entry = {"name": "m", "tolerance": {"atol": 1.0, "rtol": 0.0}}
        rec = self.judge(entry, {"y": np.array([0.6, 0.4], np.float32)},
                         {"y": np.array([0.4, 0.6], np.float32)})
        self.assertEqual(rec["status"], "fail")
        self.assertIn("task results differ", rec["message"])

    def test_failing_task_check_fails(self):
        y = np.array([0.1, 0.9], np.float32)
        rec = self.judge(dict(ENTRY, kind="broken"), {"y": y}, {"y": y})
        self.assertEqual(rec["status"], "fail")
        self.assertEqual(rec["message"], "task check failed: KeyError: \"no output 'scores'\"")

    def test_split_with_an_empty_device_fails(self):
        y = np.array([0.1, 0.9], np.float32)
        rec = zoo.base_record(ENTRY, "split")
        rec_in = {"placement_devices": [{"name": "llvm", "ops": 3}, {"name": "llvm:1", "ops": 0}]}
        prep = {"names": ["y"], "inputs": {}, "path": "m", "ref_path": "m", "sha256": "0"}
        res = {"stage": "done", "message": None, "notes": [], "outputs": {"y": y},
               "output_names": ["y"], "placement": "3 ops on 1 device", **rec_in}
        zoo.judge(rec, ENTRY, prep, {"error": None, "outputs": {"y": y}}, res, {}, self.args)
        self.assertEqual(rec["status"], "fail")
        self.assertIn("left llvm:1 without ops", rec["message"])

    def test_float64_arbitration_decides_a_disagreement(self):
        n = 20000
        path = save(sum_model(n), self.tmp, "sum.onnx")
        inputs = {"x": sum_input(n)}
        f64, _ = zoo.float64_reference(path, inputs, timeout=120)
        entry = {"name": "sum", "tolerance": {"atol": 1e-6, "rtol": 1e-6}}
        prep = {"names": ["y"], "inputs": inputs, "path": path, "ref_path": path, "sha256": "0"}
        accurate = {"y": f64["y"].astype(np.float32)}
        naive = {"y": np.array([1.0], np.float32)}
        rec = self.judge(entry, accurate, naive, prep=prep)
        self.assertEqual(rec["status"], "pass", rec)
        self.assertEqual(rec["message"], "passes on the float64 arbitration")
        self.assertTrue(rec["float64"]["quilt_closer"])
        self.assertFalse(rec["outputs"][0]["ok"])  # against ONNX Runtime it is still out
        rec = self.judge(entry, naive, accurate, prep=prep)
        self.assertEqual(rec["status"], "fail")
        self.assertFalse(rec["float64"]["quilt_closer"])
        self.assertTrue(any("onnxruntime closer" in n for n in rec["notes"]), rec["notes"])

    def test_compile_and_run_errors(self):
        rec = zoo.base_record(ENTRY, "llvm")
        prep = {"names": ["y"], "inputs": {}, "path": "m", "ref_path": "m"}
        zoo.judge(rec, ENTRY, prep, {"error": None, "outputs": {}},
                  {"stage": "compile", "message": "quiltc: error: no", "notes": [],
                   "outputs": {}, "output_names": []}, {}, self.args)
        self.assertEqual((rec["status"], rec["message"]), ("compile-error", "quiltc: error: no"))
        rec = zoo.base_record(ENTRY, "llvm")
        zoo.judge(rec, ENTRY, prep, {"error": None, "outputs": {}},
                  {"stage": "run", "message": "quilt-run: error: boom", "notes": [],
                   "outputs": {}, "output_names": []}, {}, self.args)
        self.assertEqual(rec["status"], "run-error")
        rec = zoo.base_record(ENTRY, "llvm")
        zoo.judge(rec, ENTRY, prep, {"error": "Fail: bad model", "outputs": {}},
                  {"stage": "done", "message": None, "notes": [], "outputs": {},
                   "output_names": []}, {}, self.args)
        self.assertEqual((rec["status"], rec["message"]), ("ort-error", "Fail: bad model"))


if __name__ == "__main__":
    unittest.main()

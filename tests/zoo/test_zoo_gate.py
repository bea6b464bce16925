"""The zoo gate: every model marked ci = true in models/zoo.toml, in each of its configurations,
compiled, run and compared with ONNX Runtime by scripts/zoo.py, must pass.

    .venv/bin/python tests/zoo/test_zoo_gate.py
"""
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_testing import JOBS, ci_entries, explain, out_dir, records, run_zoo  # noqa: E402


class Gate(unittest.TestCase):
    def test_ci_models_pass(self):
        entries = ci_entries()
        self.assertTrue(entries, "the manifest marks no model ci = true")
        out = out_dir("gate")
        # Few timed runs: the gate checks outputs; latencies are in the report all the same.
        p, report = run_zoo(["--ci", "--jobs", JOBS, "--runs", "3", "--warmup", "1"], out,
                            timeout=280)
        self.assertIsNotNone(report, explain(p))
        recs = records(report)
        for e in entries:
            for c in e["configs"]:
                self.assertIn((e["name"], c), recs, f"{e['name']} {c} missing from the report")
        failing = {k: (r["status"], r["message"]) for k, r in recs.items()
                   if r["status"] not in ("pass", "skipped")}
        self.assertEqual(failing, {}, explain(p))
        self.assertEqual(p.returncode, 0, explain(p))
        self.assertIn("| model | config | status |", p.stdout)
        self.assertTrue((out / "zoo-report.md").exists())
        if not os.environ.get("QUILT_ZOO_OUT"):
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()

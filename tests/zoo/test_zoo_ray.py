"""The zoo on a Ray cluster: a local head on 127.0.0.1 that offers one "opencl" resource, one
CI model in the configurations llvm, split, opencl and cuda. The records must match a local run
of the same matrix, the opencl task must run (it asks for the resource), and cuda must be
skipped (no node offers it) instead of waiting forever.

    .venv/bin/python tests/zoo/test_zoo_ray.py
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_testing import ci_entries, explain, out_dir, records, run_zoo  # noqa: E402

CONFIGS = "llvm,split,opencl,cuda"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RayHead:
    """`ray start --head --block` in a session of its own: stopping it (SIGTERM, then SIGKILL
    for the process group) ends this cluster and nothing else on the machine."""

    def __init__(self):
        self.port = free_port()
        # Short: Ray puts unix sockets under it.
        self.temp = tempfile.mkdtemp(prefix="rz", dir="/tmp")
        self.log_path = os.path.join(self.temp, "head.log")
        ray = os.path.join(os.path.dirname(sys.executable), "ray")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [ray, "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port",
             str(self.port), "--num-cpus", "2", "--resources", '{"opencl": 1}',
             "--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", self.temp,
             "--object-store-memory", str(256 << 20)],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)

    def wait_ready(self, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("ray start exited:\n" + self.text())
            if "Ray runtime started" in self.text():
                return
            time.sleep(0.5)
        raise AssertionError(f"the Ray head did not start in {timeout} s:\n" + self.text())

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever of this cluster is left
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()
        shutil.rmtree(self.temp, ignore_errors=True)


def comparable(rec):
    """What must be the same wherever the task ran: status, message, errors, task result."""
    return {"status": rec["status"], "message": rec["message"],
            "outputs": [(o["name"], o.get("ok"), o.get("max_abs"), o.get("max_rel"))
                        for o in rec["outputs"]],
            "task": rec["task"], "placement": rec["placement"], "package_kb": rec["package_kb"]}


class Ray(unittest.TestCase):
    def test_ray_matches_local(self):
        try:
            import ray  # noqa: F401
        except ImportError:
            self.fail("ray is not installed in this Python (scripts/setup.sh installs it)")
        model = next(e for e in ci_entries() if "llvm" in e["configs"])["name"]
        args = ["--models", model, "--configs", CONFIGS, "--runs", "2", "--warmup", "0"]
        out_local, out_ray = out_dir("ray-local"), out_dir("ray")
        head = RayHead()
        try:
            # The local run while the head starts (the head mostly waits on itself).
            p, local = run_zoo(args + ["--jobs", "1"], out_local, timeout=200)
            self.assertIsNotNone(local, explain(p))
            head.wait_ready(120)
            p, remote = run_zoo(args + ["--ray", f"127.0.0.1:{head.port}"], out_ray, timeout=240)
            self.assertIsNotNone(remote, explain(p))
        finally:
            head.stop()
        lrec, rrec = records(local), records(remote)
        self.assertEqual(set(lrec), set(rrec))
        for c in ("llvm", "split"):
            self.assertEqual(comparable(rrec[(model, c)]), comparable(lrec[(model, c)]), c)
            self.assertIsNotNone(rrec[(model, c)]["quilt_ms"], c)
            self.assertIsNotNone(rrec[(model, c)]["ort_ms"], c)
        # Locally, opencl runs where an OpenCL driver is registered (PoCL in CI), and then as it
        # does on the cluster; elsewhere it is skipped with the advice to use --ray.
        if lrec[(model, "opencl")]["status"] == "skipped":
            self.assertIn("--ray", lrec[(model, "opencl")]["message"])
        else:
            self.assertEqual(comparable(rrec[(model, "opencl")]),
                             comparable(lrec[(model, "opencl")]), "opencl")
        # On the cluster the opencl configuration ran, on the node that offers the resource.
        ocl = rrec[(model, "opencl")]
        self.assertEqual(ocl["status"], "pass", ocl)
        self.assertIn("opencl", ocl["placement"])
        self.assertEqual(rrec[(model, "cuda")]["status"], "skipped")
        self.assertIn("no node of the Ray cluster offers the resource 'cuda'",
                      rrec[(model, "cuda")]["message"])
        self.assertTrue(remote["meta"]["executor"].startswith("ray "))
        self.assertIn("Latencies are noisy", (out_ray / "zoo-report.md").read_text())
        if not os.environ.get("QUILT_ZOO_OUT"):
            shutil.rmtree(out_local, ignore_errors=True)
            shutil.rmtree(out_ray, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()

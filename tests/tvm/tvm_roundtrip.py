#!/usr/bin/env python3
"""quilt's text form against Apache TVM (the `apache-tvm` 0.27 wheel), in both directions.

Usage: tvm_roundtrip.py QUILT_OPT DATA_DIR OUT_DIR [--known FILE] [--pass-tests DIR]

  DATA_DIR    tests/data: TVM's own tests in tvm/ (tvm/README.md), quilt's IR examples in ir/
  OUT_DIR     every text this writes (TVM's prints, quilt's prints) and report.txt
  --known     the expected failures, one case id a line with its reason
              (default: known_differences.txt next to this script)
  --pass-tests  quilt's pass tests whose IR strings direction B reads (default DATA_DIR/../passes)

Direction A (TVM -> quilt). Each stored TVM test runs under TVM with RealizeVDevice,
UpdateVDevice and tvm.ir.assert_structural_equal wrapped, recording for every pass call the
input, what TVM returned and the test's expected module. TVM prints them; quilt-opt must parse
both, run the same pass on the input (update-vdevice with the arguments TVM got) and reach a
module structurally equal to TVM's result; TVM must then read quilt's print of its result back
as a module equal to its own. The parser tests' modules (what their `_check` receives) must
parse in quilt, and quilt's print of them must read back in TVM as the same module.

Direction B (quilt -> TVM). The modules of quilt's tests (DATA_DIR/ir/*.qir and the raw string
literals of the pass tests) must parse in TVM as they are (`:text`), as quilt prints them
(`:print`, and TVM must see the same module as in the text) and as quilt prints them after the
pass the test runs on them (`:after-PASS`).

Every case ends ok or with one status: quilt parse error, quilt pass error, pass result differs,
TVM parse error, roundtrip differs, TVM test failed. The exit status is 1 when a case fails that
the known-differences file does not list, or when the file lists a case that passes or does not
exist (delete its line); 77 when TVM cannot be imported (ctest's SKIP_RETURN_CODE); else 0.
"""

import argparse
import ast
import contextlib
import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
import traceback
from pathlib import Path

SKIP_RETURN_CODE = 77

# Statuses of a case; every status but these two is a failure.
OK = "ok"
SKIPPED = "skipped"

# quilt's IR examples (tests/data/ir/README.md): the pass each input file is run with. The files
# not named here are expected outputs (or, rfc_hint_conflict.qir, an input whose pass must fail):
# they are only parsed and printed.
QIR_PASSES = {
    "rfc_module.qir": ["normalize"],
    "rfc_normalize_before.qir": ["normalize"],
    "rfc_to_vdevice.qir": ["realize-vdevice"],
    "rfc_realize_before.qir": ["realize-vdevice"],
    "update_vdevice_before.qir": ['update-vdevice{index=1 target="cuda -arch=sm_80"}'],
}

# The pass a pass test runs when its spec is not written out in the test (helpers such as
# RunAssign or ExpectUnchanged call it).
DEFAULT_PASS = {
    "assign_test.cc": "assign",
    "fold_constants_test.cc": "fold-constants",
    "insert_device_copies_test.cc": "insert-device-copies",
    "normalize_test.cc": "normalize",
    "partition_test.cc": "partition",
    "realize_vdevice_test.cc": "realize-vdevice",
}


@dataclasses.dataclass
class Case:
    """One checked text: its id (what known_differences.txt names), status and details."""

    id: str
    status: str = OK
    detail: str = ""
    files: list = dataclasses.field(default_factory=list)


def fail(case, status, detail):
    case.status = status
    case.detail = detail.strip()
    return case


@contextlib.contextmanager
def quiet_native_stderr():
    """Silences what TVM's C++ side logs on file descriptor 2 (warnings such as "Unable to
    detect CUDA version"); errors still arrive as Python exceptions."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def first_lines(text, n=12):
    lines = text.strip().splitlines()
    return "\n".join(lines[:n] + (["..."] if len(lines) > n else []))


class Quilt:
    """Runs quilt-opt; messages name files relative to the output folder."""

    def __init__(self, exe, out_dir):
        self.exe = exe
        self.out_dir = out_dir

    def run(self, *args):
        try:
            r = subprocess.run([self.exe, *map(str, args)], capture_output=True, text=True,
                               timeout=120)
        except subprocess.TimeoutExpired:
            return -1, "quilt-opt ran past 120 s"
        text = (r.stdout + r.stderr).replace(str(self.out_dir) + os.sep, "")
        return r.returncode, text.replace("quilt-opt: error: ", "").strip()

    def parse(self, path, out=None):
        """Parses (and prints to `out`); returns None or the error."""
        rc, msg = self.run(path, *(["-o", out] if out else []))
        return None if rc == 0 else msg or f"exit status {rc}"

    def run_pass(self, path, spec, out):
        rc, msg = self.run(path, "--pass", spec, "-o", out)
        return None if rc == 0 else msg or f"exit status {rc}"

    def differs(self, path, spec, expected):
        """Runs `spec` on `path` and compares with `expected`: None or the difference."""
        rc, msg = self.run(path, "--pass", spec, "--check-equal", expected)
        return None if rc == 0 else msg or f"exit status {rc}"


class Tvm:
    """What this script asks of TVM: parse, print, compare."""

    def __init__(self, tvm):
        self.tvm = tvm
        # Taken before any patching (Recorder.patched wraps it while TVM's tests run).
        self.assert_structural_equal = tvm.ir.assert_structural_equal

    def parse(self, text):
        """The module TVM reads from `text`, or the error as a string."""
        try:
            with quiet_native_stderr():
                return self.tvm.script.from_source(text), None
        except Exception as e:  # TVM raises DiagnosticError and others; all are a refusal
            error = f"{type(e).__name__}: {e}"
        if "not well-formed" in error:
            error += "\n" + self.why_not_well_formed(text)
        return None, error

    def why_not_well_formed(self, text):
        """TVM's parse error says only "not well-formed" (the reason goes to its log): ask the
        well-formedness check again, where it raises the reason."""
        try:
            with quiet_native_stderr():
                mod = self.tvm.script.from_source(text, check_well_formed=False)
                self.tvm.relax.analysis.well_formed(mod)
        except Exception as e:
            return "why: " + str(e).strip().splitlines()[-1]
        return "why: (TVM's log only)"

    def as_module(self, obj):
        """A parser test may give a relax.Function: it is checked inside a module."""
        if isinstance(obj, self.tvm.IRModule):
            return obj
        name = obj.attrs["global_symbol"] if obj.attrs and "global_symbol" in obj.attrs else "foo"
        return self.tvm.IRModule({str(name): obj})

    def print(self, mod):
        with quiet_native_stderr():
            return self.as_module(mod).script(show_meta=True)

    def differs(self, lhs, rhs, lhs_name="lhs", rhs_name="rhs"):
        """None when TVM finds the two structurally equal, else where they differ."""
        try:
            self.assert_structural_equal(lhs, rhs)
            return None
        except Exception as e:
            return short_structural_error(str(e), lhs_name, rhs_name)


def short_structural_error(message, lhs_name, rhs_name):
    """TVM's StructuralEqual message prints both modules whole, the differing part underlined;
    keep the path where they differ and, from each side, the first underlined line that is not
    the same on the other side."""
    if "StructuralEqual check failed" not in message:
        return message
    path = re.search(r"caused by lhs at (\S+?):?\n", message)
    marked = []
    for half in message.split("\nand rhs at ", 1):
        lines = half.splitlines()
        marked.append([lines[i - 1].strip() for i in range(1, len(lines))
                       if re.fullmatch(r"\s*\^+\s*", lines[i])] or ["?"])
    pairs = list(zip(*marked)) if len(marked) == 2 else [(marked[0][0], "?")]
    lhs, rhs = next((p for p in pairs if p[0] != p[1]), pairs[0])
    return "\n".join([f"TVM's structural equality fails at {path.group(1) if path else '?'}",
                      f"  {lhs_name}: {lhs}", f"  {rhs_name}: {rhs}"])


# ---- direction A: record what TVM's tests do ---------------------------------------------------


@dataclasses.dataclass
class PassCall:
    spec: str  # the quilt pass spec of the same pass with the same arguments
    before: str  # TVM's print of the input, taken before the pass ran
    after: object  # the module TVM returned
    expected: object = None  # what the test compared it with, if it did


class Recorder:
    """Wraps TVM's vdevice passes and structural assertion while TVM's tests run."""

    def __init__(self, tvm_api):
        self.t = tvm_api
        self.calls = []
        self.parsed = []

    @staticmethod
    def plain(value):
        """A TVM FFI value (Map, Array, str, int, ...) as plain Python, for json."""
        if isinstance(value, (str, int, float, bool)) or value is None:
            return value
        if hasattr(value, "items"):
            return {str(k): Recorder.plain(v) for k, v in value.items()}
        return [Recorder.plain(v) for v in value]

    def quilt_target(self, target):
        """The target exactly as TVM holds it (every attribute, defaults included), in the JSON
        form TVM prints in I.vdevice."""
        return json.dumps(self.plain(target.export()), sort_keys=True)

    def wrap_pass(self, make, spec_of):
        recorder = self

        def constructor(*args, **kwargs):
            real = make(*args, **kwargs)
            spec = spec_of(*args, **kwargs)

            def run(mod):
                before = recorder.t.print(mod)
                after = real(mod)
                recorder.calls.append(PassCall(spec, before, after))
                return after

            return run

        return constructor

    def update_spec(self, new_vdevice, index):
        # Single quotes around the target: its JSON has double quotes.
        return (f"update-vdevice{{target='{self.quilt_target(new_vdevice.target)}' "
                f"index={int(index)} id={int(new_vdevice.vdevice_id)} "
                f'scope="{new_vdevice.memory_scope}"}}')

    @contextlib.contextmanager
    def patched(self):
        tvm = self.t.tvm
        transform = tvm.relax.transform
        saved = (transform.RealizeVDevice, transform.UpdateVDevice, tvm.ir.assert_structural_equal)
        real_assert = saved[2]

        def assert_structural_equal(lhs, rhs, *args, **kwargs):
            # The test compares a pass result with what it expects: remember the pair.
            def is_result(obj, call):
                return isinstance(obj, tvm.IRModule) and obj.same_as(call.after)

            for call in (c for c in self.calls if c.expected is None):
                if is_result(lhs, call):
                    call.expected = rhs
                elif is_result(rhs, call):
                    call.expected = lhs
            return real_assert(lhs, rhs, *args, **kwargs)

        transform.RealizeVDevice = self.wrap_pass(saved[0], lambda *a, **k: "realize-vdevice")
        transform.UpdateVDevice = self.wrap_pass(saved[1], self.update_spec)
        tvm.ir.assert_structural_equal = assert_structural_equal
        try:
            yield
        finally:
            transform.RealizeVDevice, transform.UpdateVDevice = saved[0], saved[1]
            tvm.ir.assert_structural_equal = saved[2]


def load_module(path):
    spec = importlib.util.spec_from_file_location("tvm_data_" + path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # TVM's parser finds a test's source through sys.modules
    spec.loader.exec_module(module)
    return module


def check_pass_call(case_id, call, t, quilt, out):
    """A pass call of a TVM test: TVM's before, after and expected against quilt."""
    case = Case(case_id)
    stem = out / case_id.replace(":", "__").replace("#", "_")
    before, tvm_after, quilt_after = (Path(f"{stem}.{s}.py") for s in ("before", "tvm_after",
                                                                      "quilt_after"))
    before.write_text(call.before)
    tvm_after.write_text(t.print(call.after))
    Path(f"{stem}.pass.txt").write_text(call.spec + "\n")
    case.files = [before, tvm_after, Path(f"{stem}.pass.txt")]
    if call.expected is not None:
        Path(f"{stem}.expected.py").write_text(t.print(call.expected))
        if t.differs(call.after, call.expected):  # the TVM test itself would fail
            return fail(case, "TVM test failed", "TVM's result is not the test's expected module")
    for path in (before, tvm_after):
        if err := quilt.parse(path):
            return fail(case, "quilt parse error", err)
    if err := quilt.run_pass(before, call.spec, quilt_after):
        return fail(case, "quilt pass error", f"{call.spec}: {err}")
    if diff := quilt.differs(before, call.spec, tvm_after):
        return fail(case, "pass result differs", f"{call.spec}: {diff}")
    back, err = t.parse(quilt_after.read_text())
    if err:
        return fail(case, "TVM parse error", f"quilt's print of its result: {err}")
    if diff := t.differs(back, call.after, "quilt's result", "TVM's result"):
        return fail(case, "pass result differs", diff)
    return case


def check_parsed(case_id, mod, t, quilt, out):
    """A module of a TVM parser test: quilt parses TVM's print; TVM reads quilt's print back."""
    case = Case(case_id)
    stem = out / case_id.replace(":", "__").replace("#", "_")
    text, quilt_print = Path(f"{stem}.tvm.py"), Path(f"{stem}.quilt.py")
    mod = t.as_module(mod)
    text.write_text(t.print(mod))
    case.files = [text]
    if err := quilt.parse(text, quilt_print):
        return fail(case, "quilt parse error", err)
    back, err = t.parse(quilt_print.read_text())
    if err:
        return fail(case, "TVM parse error", f"quilt's print: {err}")
    if diff := t.differs(back, mod, "quilt's print", "TVM's print"):
        return fail(case, "roundtrip differs", diff)
    return case


def run_tvm_tests(path, t):
    """Runs one stored TVM test file under the recorder:
    [(test name, its pass calls, the modules its _check got, the error if it failed)]."""
    recorder = Recorder(t)
    runs = []
    # The patches hold while the file loads (it imports the pass constructors by name) and while
    # its tests run.
    with recorder.patched(), quiet_native_stderr():
        module = load_module(path)
        real_check = getattr(module, "_check", None)
        if real_check:
            def recording_check(parsed, *args, **kwargs):
                recorder.parsed.append(parsed)
                return real_check(parsed, *args, **kwargs)

            module._check = recording_check
        for name, test in list(vars(module).items()):
            if not (name.startswith("test_") and callable(test)):
                continue
            recorder.calls, recorder.parsed = [], []
            try:
                test()
                error = None
            except Exception:
                error = traceback.format_exc(limit=4)
            runs.append((name, list(recorder.calls), list(recorder.parsed), error))
    return runs


def direction_a(tvm_dir, t, quilt, out):
    cases = []
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(tvm_dir.glob("test_*.py")):
        short = path.stem.removeprefix("test_")
        for name, calls, parsed, error in run_tvm_tests(path, t):
            base = f"A:{short}:{name}"
            if error:
                cases.append(fail(Case(base), "TVM test failed", error))
                continue
            many = len(calls) + len(parsed) > 1
            for i, call in enumerate(calls, 1):
                cases.append(check_pass_call(f"{base}#{i}" if many else base, call, t, quilt, out))
            for i, mod in enumerate(parsed, 1):
                cases.append(check_parsed(f"{base}#{i}" if many else base, mod, t, quilt, out))
            if not calls and not parsed:
                cases.append(fail(Case(base), SKIPPED, "the test gave no module to check"))
    return cases


# ---- direction B: quilt's texts read by TVM ----------------------------------------------------

RAW_STRING = re.compile(r'R"([^()\\\s]{0,16})\((.*?)\)\1"', re.S)
PLAIN_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
TEST_HEAD = re.compile(r"^TEST(?:_F)?\(\s*\w+\s*,\s*(\w+)\s*\)", re.M)
RUN_PASS = re.compile(r'RunPass\(\s*"((?:[^"\\]|\\.)*)"')


@dataclasses.dataclass
class Text:
    """An IR text of quilt's tests and what the test does with it."""

    id: str
    text: str
    passes: list  # pass specs quilt's test runs on it (none for an expected output)
    skip: str = ""  # why it is not a module to check, if it is not


def mask_strings(src):
    """`src` with the contents of every string literal blanked (newlines kept), so that braces
    and names inside IR texts do not count as C++."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))

    return PLAIN_STRING.sub(blank, RAW_STRING.sub(blank, src))


def test_blocks(masked):
    """(name, start, end) of every TEST body."""
    blocks = []
    for m in TEST_HEAD.finditer(masked):
        open_at = masked.index("{", m.end())
        depth = 0
        for i in range(open_at, len(masked)):
            depth += {"{": 1, "}": -1}.get(masked[i], 0)
            if depth == 0:
                blocks.append((m.group(1), m.start(), i + 1))
                break
    return blocks


def unescape(spec):
    return spec.encode().decode("unicode_escape")


def pass_test_texts(path):
    """The IR texts of one pass test file (the raw string literals that are modules)."""
    src = path.read_text()
    masked = mask_strings(src)
    blocks = test_blocks(masked)
    texts, ordinal = [], {}
    for m in RAW_STRING.finditer(src):
        body = m.group(2)
        if "@I.ir_module" not in body and "@R.function" not in body:
            continue
        # The C++ statement the literal is part of, up to the literal (whitespace collapsed).
        before = masked[max(0, m.start() - 1000):m.start()]
        statement = " ".join(re.split(r"[;{}]", before)[-1].split())
        block = next((b for b in blocks if b[1] <= m.start() < b[2]), None)
        constant = re.search(r"\b(k\w+)\s*=$", statement)
        if constant:
            # A module shared by several tests: they are the blocks that parse it.
            name = constant.group(1)
            uses = [b for b in blocks if re.search(rf"Parse(?:Module)?\(\s*{name}\b",
                                                   masked[b[1]:b[2]])]
            case_id, role_blocks = f"B:passes/{path.name}:{name}", uses
            template = not uses
        else:
            test = block[0] if block else "file"
            ordinal[test] = ordinal.get(test, 0) + 1
            case_id, role_blocks = f"B:passes/{path.name}:{test}#{ordinal[test]}", [block]
            template = False
        item = Text(case_id, body, [])
        if template:
            item.skip = "a template the tests edit before parsing"
        elif re.search(r"ParseError\($", statement):
            item.skip = "quilt must refuse it (a ParseError test)"
        elif re.search(r"ParseModule\($", statement):
            item.skip = "quilt may refuse it (the test takes a parse error as well)"
        elif re.search(r"ModulesEqual\(.*,\s*Parse\($", statement) or re.search(
                r"\b(want|expected|kExpected\w*)\s*=(\s*Parse\()?$", statement):
            pass  # an expected output: no pass to run
        else:
            for b in filter(None, role_blocks):
                item.passes += [unescape(s) for s in RUN_PASS.findall(src[b[1]:b[2]])]
            # PassError, AssignError: the test expects the pass to fail.
            uses_pass_error = any(b and re.search(r"\w+Error\(", src[b[1]:b[2]])
                                  for b in role_blocks)
            if not item.passes and not uses_pass_error and path.name in DEFAULT_PASS:
                item.passes = [DEFAULT_PASS[path.name]]
            item.passes = list(dict.fromkeys(item.passes))
        try:
            ast.parse(body)
        except SyntaxError:
            item.skip = item.skip or "a fragment the test joins with others"
        texts.append(item)
    return texts


def quilt_texts(ir_dir, pass_test_dir):
    texts = [Text(f"B:ir/{p.name}", p.read_text(), QIR_PASSES.get(p.name, []))
             for p in sorted(ir_dir.glob("*.qir"))]
    for path in sorted(pass_test_dir.glob("*_test.cc")):
        texts += pass_test_texts(path)
    return texts


def direction_b(texts, t, quilt, out):
    cases = []
    out.mkdir(parents=True, exist_ok=True)
    for item in texts:
        stem = out / re.sub(r"[^\w.-]+", "_", item.id.removeprefix("B:"))
        if item.skip:
            cases.append(fail(Case(item.id + ":text"), SKIPPED, item.skip))
            continue
        source = Path(f"{stem}.qir.py")
        source.write_text(item.text)

        # As written.
        case = Case(item.id + ":text", files=[source])
        original, err = t.parse(item.text)
        cases.append(fail(case, "TVM parse error", err) if err else case)

        # As quilt prints it.
        printed = Path(f"{stem}.print.py")
        case = Case(item.id + ":print", files=[source, printed])
        if err := quilt.parse(source, printed):
            cases.append(fail(case, "quilt parse error", err))
            continue
        back, err = t.parse(printed.read_text())
        if err:
            fail(case, "TVM parse error", err)
        elif original is not None and (diff := t.differs(back, original, "quilt's print",
                                                         "the text")):
            fail(case, "roundtrip differs", diff)
        cases.append(case)

        # As quilt prints it after the test's pass.
        names = [spec.split("{")[0] for spec in item.passes]
        for i, spec in enumerate(item.passes):
            suffix = f"#{names[:i + 1].count(names[i])}" if names.count(names[i]) > 1 else ""
            after = Path(f"{stem}.after-{names[i]}{suffix}.py")
            case = Case(f"{item.id}:after-{names[i]}{suffix}", files=[source, after])
            if err := quilt.run_pass(source, spec, after):
                cases.append(fail(case, "quilt pass error", f"{spec}: {err}"))
                continue
            _, err = t.parse(after.read_text())
            cases.append(fail(case, "TVM parse error", err) if err else case)
    return cases


# ---- the known differences and the report ------------------------------------------------------


def read_known(path):
    """{case id: reason}; '#' starts a comment line."""
    known = {}
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                case_id, _, reason = line.partition(" ")
                known[case_id] = reason.strip()
    return known


def report(cases, known, out_dir):
    failed = [c for c in cases if c.status not in (OK, SKIPPED)]
    unexpected = [c for c in failed if c.id not in known]
    ids = {c.id for c in cases}
    failing_ids = {c.id for c in failed}
    fixed = sorted(k for k in known if k in ids and k not in failing_ids)
    unknown = sorted(k for k in known if k not in ids)

    lines = []
    for c in cases:
        mark = "known" if c.id in known and c.status not in (OK, SKIPPED) else c.status
        lines.append(f"{c.id}: {mark}" + (f" ({c.status})" if mark == "known" else ""))
        if c.status != OK:
            lines += ["    " + s for s in first_lines(c.detail, 40).splitlines()]
    (out_dir / "report.txt").write_text("\n".join(lines) + "\n")

    counts = {}
    for c in cases:
        counts[c.status] = counts.get(c.status, 0) + 1
    print("tvm_roundtrip: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) +
          f"; {len(failed) - len(unexpected)} of the failures are known differences"
          f" (report: {out_dir / 'report.txt'})")
    for c in unexpected:
        print(f"\nFAIL {c.id}: {c.status}\n" + "\n".join(
            "    " + s for s in first_lines(c.detail).splitlines()))
        for f in c.files:
            print(f"    text: {f}")
    for k in fixed:
        print(f"\nNOW PASSES {k}: delete its line from the known differences")
    for k in unknown:
        print(f"\nNO SUCH CASE {k}: delete its line from the known differences")
    return 1 if unexpected or fixed or unknown else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("quilt_opt", type=Path)
    ap.add_argument("data_dir", type=Path)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--known", type=Path,
                    default=Path(__file__).resolve().parent / "known_differences.txt")
    ap.add_argument("--pass-tests", type=Path)
    args = ap.parse_args()
    sys.dont_write_bytecode = True  # the stored TVM tests are imported from the source tree

    try:
        with quiet_native_stderr():
            import tvm
            import tvm.relax
            import tvm.script
            import tvm.testing  # noqa: F401  (the stored tests import it)
    except Exception as e:
        print(f"tvm_roundtrip: SKIPPED: Apache TVM cannot be imported ({type(e).__name__}: {e}); "
              "scripts/setup.sh installs apache-tvm into .venv")
        return SKIP_RETURN_CODE
    print(f"tvm_roundtrip: TVM {tvm.__version__}, {args.quilt_opt}")

    out_dir = args.out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    t = Tvm(tvm)
    quilt = Quilt(args.quilt_opt.resolve(), out_dir)
    data = args.data_dir.resolve()
    cases = direction_a(data / "tvm", t, quilt, out_dir / "A")
    cases += direction_b(quilt_texts(data / "ir", args.pass_tests or data.parent / "passes"),
                         t, quilt, out_dir / "B")
    return report(cases, read_known(args.known), out_dir)


if __name__ == "__main__":
    sys.exit(main())

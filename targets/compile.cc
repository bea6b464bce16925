#include "targets/compile.h"

#include <openssl/evp.h>

#include <fstream>
#include <iterator>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/target.h"
#include "ir/verifier.h"
#include "passes/pass.h"
#include "passes/place_rules.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/package_writer.h"

namespace quilt::compiler {

std::string Sha256Hex(const void* data, size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  QUILT_CHECK(EVP_Digest(data, size, digest, &len, EVP_sha256(), nullptr) == 1) << "sha256";
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (unsigned int i = 0; i < len; ++i) {
    s.push_back(kHex[digest[i] >> 4]);
    s.push_back(kHex[digest[i] & 15]);
  }
  return s;
}

namespace {

// quiltc --portable: marks every accelerator device of `spec` as one whose steps may run on the
// CPU. The package's steps are that CPU version already (each kernel or dispatch step names its
// op, and the CPU runs it with that op's library kernel), so this checks that the CPU has a kernel
// for each of them and names every node whose op it lacks.
Status MarkPortable(PackageSpec& spec) {
  std::string missing;
  int count = 0;
  for (DeviceSpec& d : spec.devices) d.cpu_fallback = d.kind != "cpu";
  for (const GraphSpec& g : spec.graphs) {
    for (const StepSpec& step : g.steps) {
      if (!spec.devices[static_cast<size_t>(step.device)].cpu_fallback) continue;
      if (step.kind != pkg::StepKind::Kernel && step.kind != pkg::StepKind::Dispatch) continue;
      const std::string& op = step.kind == pkg::StepKind::Dispatch ? step.op : step.kernel;
      if (cpu::FindKernel(op)) continue;
      if (++count <= 10) {
        missing += "\n  node '" + (step.source.empty() ? std::string("?") : step.source) + "': R." +
                   op + " on '" + spec.devices[static_cast<size_t>(step.device)].target + "'";
      }
    }
  }
  if (count == 0) return {};
  return Error(
      "--portable: the CPU has no kernel for " + std::to_string(count) +
      " step(s) placed on an accelerator, so the package could not run without it:" + missing);
}

// The vdevice list the pipeline places onto: the --device targets in order, and the CPU as the
// host after them when none of them is a CPU.
Expected<std::string> DeviceList(const std::vector<std::string>& devices) {
  std::string list;
  bool cpu = false;
  for (std::string d : devices) {
    // "kind:N" is device N of that kind: "opencl:1" is "opencl -device=1".
    if (size_t colon = d.find(':');
        colon != std::string::npos && d.find(' ') == std::string::npos) {
      std::string n = d.substr(colon + 1);
      if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) {
        return Error("--device " + d + ": after ':' comes a device number");
      }
      d = d.substr(0, colon) + " -device=" + n;
    }
    Expected<ir::Target> t = ir::Target::Parse(d);
    if (!t) return Error("--device " + d + ": " + t.error().message);
    if (d.find(';') != std::string::npos) return Error("--device " + d + ": ';' in a target");
    cpu |= t->DeviceType() == "cpu";
    list += (list.empty() ? "" : ";") + d;
  }
  if (!cpu) list += (list.empty() ? "" : ";") + std::string("llvm");
  return list;
}

// The entry's output names as the module writes them (the variables its result returns), kept
// as its output_names where it has none (an ONNX import has them): the copies that bring results
// to the host are named after their device (y_llvm), and an output's name is the model's
// contract. A result that is not a variable or a tuple of variables keeps the lowering's names.
Expected<ir::IRModule> KeepOutputNames(const ir::IRModule& module) {
  Expected<ir::IRModule> mod = ir::NormalizeModule(module);  // binds items of tuples it returns
  if (!mod) return mod;
  std::string entry = mod->EntryName();
  ir::Function f = mod->Lookup(entry);
  if (!f || f->attrs.Get<std::vector<std::string>>("output_names")) return mod;
  std::vector<std::string> names;
  const ir::Expr& result = f->body->body;
  if (const auto* tuple = ir::As<ir::TupleNode>(result)) {
    for (const ir::Expr& field : tuple->fields) {
      const auto* v = ir::As<ir::VarNode>(field);
      if (!v || (v->struct_info && v->struct_info->kind == ir::StructInfoKind::kTuple)) return mod;
      names.push_back(v->name_hint);
    }
  } else if (const auto* v = ir::As<ir::VarNode>(result)) {
    if (!v->struct_info || v->struct_info->kind == ir::StructInfoKind::kTuple) return mod;
    names.push_back(v->name_hint);
  } else {
    return mod;
  }
  ir::Attrs attrs = f->attrs;
  attrs.Set("output_names", names);
  Expected<ir::Function> named = ir::MakeFunction(f->params, f->body, f->ret_struct_info, attrs,
                                                  f->is_pure, f->is_private, f->param_defaults);
  if (!named) return named.error();
  mod->Set(entry, *named);
  return mod;
}

}  // namespace

Expected<Compiled> Compile(const ir::IRModule& module, const CompileOptions& options,
                           const std::string& source_name, const std::string& source_sha256) {
  auto step = [&](const std::string& name, const ir::IRModule& m) -> Status {
    if (Status s = ir::Verify(m); !s) {
      return Error("the module is not valid after " + name + ": " + s.error().ToString());
    }
    if (options.after_step) options.after_step(name, m);
    return {};
  };
  auto run = [&](const std::string& spec, const ir::IRModule& m) -> Expected<ir::IRModule> {
    Expected<passes::Pass> p = passes::CreatePass(spec);
    if (!p) return p.error();
    Expected<ir::IRModule> out = p->Run(m);
    if (!out) return out.error();
    QUILT_TRY(step(p->name, *out));
    return out;
  };
  Expected<ir::IRModule> named = KeepOutputNames(module);
  if (!named) return named.error();
  ir::IRModule mod = *named;
  if (!options.devices.empty() || mod.vdevices.empty()) {
    Expected<std::string> list =
        DeviceList(options.devices.empty() ? std::vector<std::string>{"llvm"} : options.devices);
    if (!list) return list.error();
    Expected<ir::IRModule> m = run("update-vdevice{reset=\"" + *list + "\"}", mod);
    if (!m) return m.error();
    mod = *m;
  }
  Expected<ir::IRModule> hinted = passes::ApplyPlacementRules(mod, options.place);
  if (!hinted) return hinted.error();
  if (!options.place.empty()) QUILT_TRY(step("place", *hinted));
  Expected<ir::IRModule> realized = run("realize-vdevice{fill=false hints=keep}", *hinted);
  if (!realized) return realized.error();
  passes::AssignOptions assign;
  assign.strict = options.strict;
  assign.supports = options.supports;
  assign.max_fragment_ops = options.max_fragment_ops;
  Expected<passes::AssignResult> assigned = passes::Assign(*realized, assign);
  if (!assigned) return assigned.error();
  QUILT_TRY(step("assign", assigned->module));
  Expected<ir::IRModule> m = run("simplify", assigned->module);
  if (m && options.fold_constants) m = run("fold-constants", *m);
  if (m) m = run("partition", *m);
  if (m) m = run("insert-device-copies", *m);
  if (!m) return m.error();
  Compiled out;
  out.module = *m;
  out.report = BuildPlacementReport(*m, assigned->ops, source_name);
  Expected<PackageSpec> spec = Lower(*m, options.lower);
  if (!spec) return spec.error();
  if (options.portable) QUILT_TRY(MarkPortable(*spec));
  spec->source_model = source_name;
  spec->source_sha256 = source_sha256;
  spec->placement_report = ReportText(out.report);
  Expected<std::vector<uint8_t>> bytes = WritePackage(*spec);
  if (!bytes) return bytes.error();
  out.package = std::move(*bytes);
  return out;
}

Expected<std::vector<uint8_t>> CompileModule(const ir::IRModule& module,
                                             const CompileOptions& options,
                                             const std::string& source_name,
                                             const std::string& source_sha256) {
  Expected<Compiled> c = Compile(module, options, source_name, source_sha256);
  if (!c) return c.error();
  return std::move(c->package);
}

namespace {

// `d` as an error of the file at `path`: "PATH: LOCATION: message".
Diagnostic InFile(const std::string& path, const Diagnostic& d) {
  Diagnostic out = d;
  out.message = path + ": " + d.ToString();
  out.location.clear();
  return out;
}

// Compiles a module read from `path` (whose bytes are `bytes`), naming the file in errors.
Expected<Compiled> CompileFrom(const std::string& path, std::string_view bytes,
                               const ir::IRModule& mod, const CompileOptions& options) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  Expected<Compiled> out = Compile(mod, options, name, Sha256Hex(bytes.data(), bytes.size()));
  if (!out) return InFile(path, out.error());
  return out;
}

Expected<std::string> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot open '" + path + "'");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

Expected<Compiled> CompileOnnx(const std::string& path, const CompileOptions& options) {
  Expected<std::string> bytes = ReadBytes(path);
  if (!bytes) return bytes.error();
  Expected<ir::IRModule> mod = importers::onnx::ImportOnnxFile(path, options.import);
  if (!mod) return mod.error();
  if (options.after_step) options.after_step("import", *mod);
  return CompileFrom(path, *bytes, *mod, options);
}

Expected<Compiled> CompileText(const std::string& path, const CompileOptions& options) {
  Expected<std::string> text = ReadBytes(path);
  if (!text) return text.error();
  Expected<ir::IRModule> mod = ir::ParseModule(*text, path);
  if (!mod) return mod.error();
  if (Status s = ir::Verify(*mod); !s) return InFile(path, s.error());
  if (!mod->Lookup("main")) {
    std::string names;
    for (const auto& [name, f] : mod->functions) names += (names.empty() ? "" : ", ") + name;
    return Error(path + ": the module has no function 'main' to compile (it has: " +
                 (names.empty() ? "none" : names) + ")");
  }
  if (options.after_step) options.after_step("parse", *mod);
  return CompileFrom(path, *text, *mod, options);
}

Expected<std::vector<uint8_t>> CompileOnnxFile(const std::string& path,
                                               const CompileOptions& options) {
  Expected<Compiled> c = CompileOnnx(path, options);
  if (!c) return c.error();
  return std::move(c->package);
}

}  // namespace quilt::compiler

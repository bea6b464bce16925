#include "tools/package_summary.h"

#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "runtime/src/dims.h"
#include "runtime/src/kernel.h"
#include "runtime/src/session.h"
#include "targets/cpu/kernels/fused.h"

namespace quilt::tools {
namespace {

std::string ValueText(const pkg::Graph& g, int v) {
  const pkg::Value* value = g.values()->Get(v);
  rt::DimEnv env(g);
  std::string s = std::string(rt::DTypeName(static_cast<rt::DType>(value->dtype())));
  if (value->rank() < 0) return s + " (any rank)";
  s += " (";
  for (int i = 0; i < value->rank(); ++i)
    s += (i ? ", " : "") + env.DimString(value->dims()->Get(i));
  return s + (value->rank() == 1 ? ",)" : ")");
}

}  // namespace

std::string SummarizePackage(const rt::LoadedPackage& package, bool list_steps) {
  const pkg::Package& p = package.root();
  std::ostringstream os;
  os << "package format " << p.version()->major() << "." << p.version()->minor();
  if (const pkg::Metadata* m = p.metadata()) {
    if (m->producer()) os << ", produced by " << m->producer()->str();
    if (m->source_model() && m->source_model()->size()) {
      os << " from " << m->source_model()->str();
      if (m->source_sha256())
        os << " (sha256 " << m->source_sha256()->str().substr(0, 16) << "...)";
    }
  }
  // The placement summary: the report's lines from "placement:" to the first blank line.
  if (const pkg::Metadata* m = p.metadata(); m && m->placement_report()) {
    std::string report = m->placement_report()->str();
    size_t begin = report.find("placement:");
    if (begin != std::string::npos) {
      size_t end = report.find("\n\n", begin);
      os << "\n" << report.substr(begin, end == std::string::npos ? end : end - begin + 1);
    }
  }
  os << "\ndevices:\n";
  for (uint32_t d = 0; d < p.devices()->size(); ++d) {
    const pkg::Device* dev = p.devices()->Get(d);
    std::string scope = dev->memory_scope() ? dev->memory_scope()->str() : "global";
    os << "  " << d << ": " << dev->target()->str() << " (" << dev->kind()->str() << " "
       << dev->id() << (scope == "global" ? "" : ", memory scope " + scope) << ")"
       << (dev->cpu_fallback() ? "; portable: where it is absent, its steps run on the CPU" : "")
       << "\n";
  }
  const pkg::Graph& g = *p.graphs()->Get(0);
  os << "inputs:\n";
  for (int32_t v : *g.inputs()) {
    const pkg::Value* value = g.values()->Get(v);
    os << "  " << value->name()->str() << ": " << ValueText(g, v)
       << (value->default_buffer() >= 0 ? " = default" : "") << "\n";
  }
  os << "outputs:\n";
  for (int32_t v : *g.outputs()) {
    os << "  " << g.values()->Get(v)->name()->str() << ": " << ValueText(g, v) << "\n";
  }
  std::map<std::pair<int, std::string>, int> by_kernel;
  // Dispatch steps run generated code, one entry each: counted together.
  for (const pkg::Step* s : *g.steps()) {
    bool dispatch = s->kind() == pkg::StepKind::Dispatch;
    by_kernel[{s->device(), dispatch ? "(generated code)" : s->kernel()->str()}]++;
  }
  os << "steps: " << g.steps()->size() << " in " << p.graphs()->size() << " graph(s)\n";
  int device = -1;
  for (const auto& [key, n] : by_kernel) {
    if (key.first != device) {
      device = key.first;
      os << "  on " << p.devices()->Get(device)->target()->str() << ":\n";
    }
    os << "    " << n << "\t" << key.second << "\n";
  }
  // Regions of the entry graph: where each device's work starts and ends.
  int num_regions = g.regions() ? static_cast<int>(g.regions()->size()) : 0;
  os << "regions: " << num_regions << (num_regions ? "\n" : "");
  for (int r = 0; r < num_regions; ++r) {
    const pkg::Region* region = g.regions()->Get(r);
    os << "  " << r << ": on " << p.devices()->Get(region->device())->target()->str() << ", steps "
       << region->first_step() << "-" << region->first_step() + region->num_steps() - 1;
    if (region->name() && region->name()->size()) os << " (" << region->name()->str() << ")";
    os << "\n";
  }
  if (!num_regions) os << "\n";
  if (p.code() && p.code()->size()) {
    os << "code sections:\n";
    for (uint32_t i = 0; i < p.code()->size(); ++i) {
      const pkg::TargetCode* c = p.code()->Get(i);
      os << "  " << i << ": " << c->format()->str() << " for "
         << (c->target() ? c->target()->str() : std::string("?")) << " on device " << c->device()
         << ", " << package.BufferSize(c->buffer()) << " bytes, "
         << (c->entry_points() ? c->entry_points()->size() : 0) << " entry points\n";
    }
  }
  uint64_t constant_bytes = 0;
  int constants = 0;
  for (const pkg::Value* v : *g.values()) {
    if (v->kind() != pkg::ValueKind::Constant) continue;
    ++constants;
    constant_bytes += package.BufferSize(v->buffer());
  }
  int planned = 0, dynamic = 0;
  // Values no step writes (folded into a fused step) take no memory at all.
  std::vector<bool> written(g.values()->size(), false);
  for (const pkg::Step* st : *g.steps()) {
    for (int32_t o : *st->outputs()) written[static_cast<size_t>(o)] = true;
  }
  for (uint32_t i = 0; i < g.values()->size(); ++i) {
    const pkg::Value* v = g.values()->Get(i);
    if (v->kind() != pkg::ValueKind::Intermediate || !written[i]) continue;
    (v->arena_offset() >= 0 ? planned : dynamic)++;
  }
  os << "constants: " << constants << " (" << constant_bytes << " bytes)\n";
  os << "memory: ";
  if (g.arena_bytes()) {
    for (uint32_t d = 0; d < g.arena_bytes()->size(); ++d) {
      os << "arena of " << g.arena_bytes()->Get(d) << " bytes on device " << d << "; ";
    }
  }
  os << planned << " intermediates planned in the arena, " << dynamic
     << " allocated at run time (symbolic sizes or graph outputs)\n";
  if (!list_steps) return os.str();
  os << "step list:\n";
  for (uint32_t i = 0; i < g.steps()->size(); ++i) {
    const pkg::Step* s = g.steps()->Get(i);
    os << "  " << i << ": " << s->kernel()->str();
    if (s->kind() == pkg::StepKind::Dispatch) os << " (code " << s->code() << ")";
    if (s->source() && s->source()->size()) os << " [" << s->source()->str() << "]";
    os << " ->";
    for (int32_t v : *s->outputs()) os << " " << ValueText(g, v);
    os << "\n";
  }
  return os.str();
}

std::vector<std::string> PackageKernels(const rt::LoadedPackage& package) {
  std::set<std::string> names;
  for (const pkg::Graph* g : *package.root().graphs()) {
    if (!g->steps()) continue;
    for (const pkg::Step* s : *g->steps()) {
      const flatbuffers::String* name = s->kind() == pkg::StepKind::Dispatch ? s->op()
                                        : s->kind() == pkg::StepKind::Kernel ? s->kernel()
                                                                             : nullptr;
      if (!name || !name->size()) continue;
      names.insert(name->str());
      if (name->string_view() == cpu::kFusedElementwise) {
        for (std::string_view op : rt::AttrView(s->attrs()).Strs("ops")) names.emplace(op);
      }
    }
  }
  return {names.begin(), names.end()};
}

}  // namespace quilt::tools

#include "targets/package_writer.h"

#include <cstring>
#include <variant>

#include "runtime/src/checksum.h"
#include "runtime/src/package.h"

namespace quilt::compiler {
namespace {

namespace fb = flatbuffers;

constexpr uint64_t kAlign = 64;

uint64_t AlignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

fb::Offset<pkg::Attr> WriteAttr(fb::FlatBufferBuilder& b, const std::string& name,
                                const ir::AttrValue& v) {
  auto n = b.CreateString(name);
  pkg::AttrType type = pkg::AttrType::None;
  int64_t i = 0;
  double f = 0;
  fb::Offset<fb::String> s;
  fb::Offset<fb::Vector<int64_t>> ints;
  fb::Offset<fb::Vector<double>> floats;
  fb::Offset<fb::Vector<fb::Offset<fb::String>>> strs;
  if (const auto* x = std::get_if<int64_t>(&v)) {
    type = pkg::AttrType::Int;
    i = *x;
  } else if (const auto* x = std::get_if<double>(&v)) {
    type = pkg::AttrType::Float;
    f = *x;
  } else if (const auto* x = std::get_if<bool>(&v)) {
    type = pkg::AttrType::Bool;
    i = *x ? 1 : 0;
  } else if (const auto* x = std::get_if<std::string>(&v)) {
    type = pkg::AttrType::Str;
    s = b.CreateString(*x);
  } else if (const auto* x = std::get_if<std::vector<int64_t>>(&v)) {
    type = pkg::AttrType::Ints;
    ints = b.CreateVector(*x);
  } else if (const auto* x = std::get_if<std::vector<double>>(&v)) {
    type = pkg::AttrType::Floats;
    floats = b.CreateVector(*x);
  } else if (const auto* x = std::get_if<std::vector<std::string>>(&v)) {
    type = pkg::AttrType::Strs;
    strs = b.CreateVectorOfStrings(*x);
  } else if (const auto* x = std::get_if<ir::DataType>(&v)) {
    type = pkg::AttrType::DType;
    i = static_cast<int64_t>(*x);
  } else if (const auto* x = std::get_if<ir::VDevice>(&v)) {
    type = pkg::AttrType::Str;
    s = b.CreateString(x->ToString());
  }
  pkg::AttrBuilder ab(b);
  ab.add_name(n);
  ab.add_type(type);
  ab.add_i(i);
  ab.add_f(f);
  if (!s.IsNull()) ab.add_s(s);
  if (!ints.IsNull()) ab.add_ints(ints);
  if (!floats.IsNull()) ab.add_floats(floats);
  if (!strs.IsNull()) ab.add_strs(strs);
  return ab.Finish();
}

fb::Offset<pkg::Graph> WriteGraph(fb::FlatBufferBuilder& b, const GraphSpec& g) {
  std::vector<pkg::DimNode> dims;
  for (const DimSpec& d : g.dims) dims.emplace_back(d.kind, d.a, d.b, d.value);
  std::vector<fb::Offset<pkg::Value>> values;
  for (const ValueSpec& v : g.values) {
    values.push_back(pkg::CreateValue(b, b.CreateString(v.name), v.kind, v.dtype, v.rank,
                                      b.CreateVector(v.dims), v.device, v.buffer, v.default_buffer,
                                      v.arena_offset, v.byte_size));
  }
  std::vector<fb::Offset<pkg::Step>> steps;
  for (const StepSpec& s : g.steps) {
    std::vector<fb::Offset<pkg::Attr>> attrs;
    for (const auto& [name, value] : s.attrs.items) attrs.push_back(WriteAttr(b, name, value));
    steps.push_back(pkg::CreateStep(
        b, s.kind, b.CreateString(s.kernel), s.device, s.code, b.CreateVector(s.inputs),
        b.CreateVector(s.input_arity), b.CreateVector(s.outputs), b.CreateVector(attrs),
        b.CreateVector(s.dims), b.CreateVector(s.subgraphs), b.CreateString(s.source),
        s.op.empty() ? 0 : b.CreateString(s.op)));
  }
  // Regions: runs of steps of one region name, from a kernel or dispatch step of one device to
  // the last such step, with only the region's host feed between them (see the loader's check).
  std::vector<fb::Offset<pkg::Region>> regions;
  std::vector<int> made_by(g.values.size(), -1);
  for (size_t i = 0; i < g.steps.size(); ++i) {
    for (int v : g.steps[i].outputs) made_by[static_cast<size_t>(v)] = static_cast<int>(i);
  }
  auto runs_on_device = [&](size_t i) {
    return g.steps[i].kind == pkg::StepKind::Kernel || g.steps[i].kind == pkg::StepKind::Dispatch;
  };
  for (size_t i = 0; i < g.steps.size();) {
    if (!runs_on_device(i)) {
      ++i;
      continue;
    }
    const StepSpec& first = g.steps[i];
    size_t last = i;
    for (size_t j = i + 1; j < g.steps.size() && g.steps[j].region == first.region; ++j) {
      const StepSpec& s = g.steps[j];
      if (runs_on_device(j)) {
        if (s.device != first.device) break;
        last = j;
        continue;
      }
      bool feed =
          s.kind == pkg::StepKind::Control
              ? s.kernel == "shape_expr" || s.kernel == "prim_value"
              : s.kind == pkg::StepKind::Copy && s.device == first.device &&
                    made_by[static_cast<size_t>(s.inputs[0])] >= static_cast<int>(i) &&
                    g.steps[static_cast<size_t>(made_by[static_cast<size_t>(s.inputs[0])])].kind ==
                        pkg::StepKind::Control;
      if (!feed) break;
    }
    regions.push_back(pkg::CreateRegion(b, b.CreateString(first.region), first.device,
                                        static_cast<int>(i), static_cast<int>(last - i + 1)));
    i = last + 1;
  }
  return pkg::CreateGraph(
      b, b.CreateString(g.name), b.CreateVectorOfStrings(g.symbols), b.CreateVectorOfStructs(dims),
      b.CreateVector(values), b.CreateVector(g.inputs), b.CreateVector(g.outputs),
      b.CreateVector(steps), b.CreateVector(g.arena_bytes), b.CreateVector(regions));
}

}  // namespace

std::vector<uint8_t> WritePackage(const PackageSpec& spec) {
  fb::FlatBufferBuilder b(1 << 16);
  std::vector<fb::Offset<pkg::Device>> devices;
  for (const DeviceSpec& d : spec.devices) {
    devices.push_back(pkg::CreateDevice(b, b.CreateString(d.target), b.CreateString(d.kind), d.id,
                                        d.cpu_fallback, b.CreateString(d.memory_scope)));
  }
  std::vector<fb::Offset<pkg::Graph>> graphs;
  for (const GraphSpec& g : spec.graphs) graphs.push_back(WriteGraph(b, g));
  std::vector<fb::Offset<pkg::Buffer>> buffers;
  uint64_t data_size = 0;
  for (const auto& buf : spec.buffers) {
    uint64_t size = buf ? buf->size() : 0;
    buffers.push_back(pkg::CreateBuffer(b, data_size, size));
    data_size = AlignUp(data_size + size);
  }
  auto metadata = pkg::CreateMetadata(
      b, b.CreateString(spec.producer), b.CreateString(spec.source_model),
      b.CreateString(spec.source_sha256), b.CreateString(spec.placement_report));
  // The data section starts after the FlatBuffer, whose size is only known once it is
  // finished: store placeholders (non-default values are always stored, so the size does not
  // depend on them) and patch them in the finished bytes.
  std::vector<fb::Offset<pkg::TargetCode>> code;
  for (const TargetCodeSpec& c : spec.code) {
    code.push_back(pkg::CreateTargetCode(b, c.device, b.CreateString(c.format),
                                         b.CreateString(c.target), c.buffer,
                                         b.CreateVectorOfStrings(c.entry_points)));
  }
  auto code_v = b.CreateVector(code);
  pkg::FormatVersion version(rt::kFormatMajor, rt::kFormatMinor);
  auto devices_v = b.CreateVector(devices);
  auto graphs_v = b.CreateVector(graphs);
  auto buffers_v = b.CreateVector(buffers);
  pkg::PackageBuilder pb(b);
  pb.add_version(&version);
  pb.add_devices(devices_v);
  pb.add_graphs(graphs_v);
  pb.add_buffers(buffers_v);
  pb.add_data_offset(~uint64_t{0});
  pb.add_data_size(~uint64_t{0});
  pb.add_metadata(metadata);
  pb.add_code(code_v);
  b.Finish(pb.Finish(), pkg::PackageIdentifier());
  std::vector<uint8_t> out(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  uint64_t data_offset = AlignUp(out.size());
  // Patch the two placeholders in place (mutable accessors on the finished buffer).
  pkg::Package* root = pkg::GetMutablePackage(out.data());
  QUILT_CHECK(root->mutate_data_offset(data_offset) && root->mutate_data_size(data_size))
      << "package writer: could not set the data section";
  out.resize(data_offset + data_size, 0);
  root = pkg::GetMutablePackage(out.data());
  for (size_t i = 0; i < spec.buffers.size(); ++i) {
    if (!spec.buffers[i] || spec.buffers[i]->empty()) continue;
    std::memcpy(out.data() + data_offset + root->buffers()->Get(i)->offset(),
                spec.buffers[i]->data(), spec.buffers[i]->size());
  }
  size_t body = out.size();
  out.resize(body + rt::kChecksumBytes);
  rt::WriteChecksumFooter(out.data(), body, out.data() + body);
  return out;
}

}  // namespace quilt::compiler

#include "targets/placement_report.h"

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ir/op.h"
#include "passes/vdevice_util.h"

namespace quilt::compiler {
namespace {

using Why = passes::OpPlacement::Why;
using ir::As;

const char* kColors[] = {"#c6dbef", "#c7e9c0", "#fdd0a2", "#dadaeb", "#fcbba1", "#d9d9d9"};

std::string Color(int device) { return kColors[static_cast<size_t>(device) % 6]; }

int64_t StaticBytes(const ir::StructInfo& s) {
  if (!s || !s->IsTensor()) return -1;
  std::optional<std::vector<int64_t>> dims = s->StaticShape();
  if (!dims) return -1;
  int64_t n = 1;
  for (int64_t d : *dims) n *= d;
  return (n * ir::DataTypeBits(s->dtype) + 7) / 8;
}

std::string Bytes(int64_t b) {
  if (b < 0) return "size known at run time";
  std::string s = std::to_string(b);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s + " bytes";
}

std::string Who(const passes::OpPlacement& p) {
  return p.node.empty() ? "'" + p.value + "'" : "node '" + p.node + "'";
}

// Per device: the number of ops and of regions; fallbacks in total.
struct Counts {
  std::vector<int> ops, regions;
  std::vector<std::map<std::string, int>> by_op;
  int fallbacks = 0;
  int64_t copy_bytes = 0;
  bool copy_bytes_known = true;
};

Counts Count(const PlacementReport& r) {
  Counts c;
  c.ops.assign(r.devices.size(), 0);
  c.regions.assign(r.devices.size(), 0);
  c.by_op.resize(r.devices.size());
  for (const auto& p : r.ops) {
    if (p.device < 0 || p.device >= static_cast<int>(r.devices.size())) continue;
    ++c.ops[static_cast<size_t>(p.device)];
    ++c.by_op[static_cast<size_t>(p.device)][p.op];
    c.fallbacks += p.why == Why::kFallback;
  }
  for (const auto& g : r.regions) ++c.regions[static_cast<size_t>(g.device)];
  for (const auto& cp : r.copies) {
    if (cp.bytes < 0) c.copy_bytes_known = false;
    c.copy_bytes += std::max<int64_t>(cp.bytes, 0);
  }
  return c;
}

std::string Plural(int n, const std::string& word, const std::string& plural = "") {
  return std::to_string(n) + " " + (n == 1 ? word : plural.empty() ? word + "s" : plural);
}

}  // namespace

PlacementReport BuildPlacementReport(const ir::IRModule& module,
                                     const std::vector<passes::OpPlacement>& ops,
                                     const std::string& model) {
  PlacementReport r;
  r.model = model;
  r.host = passes::HostVDevice(module.vdevices);
  // The ops that are still there (simplify removes those nobody uses after assign).
  std::set<std::string> live;
  for (const auto& [name, f] : module.functions) {
    for (const ir::BindingBlock& b : f->body->blocks) {
      for (const ir::Binding& x : b.bindings) live.insert(x.var->name_hint);
    }
  }
  for (const passes::OpPlacement& p : ops) {
    if (live.count(p.value)) r.ops.push_back(p);
  }
  for (size_t i = 0; i < module.vdevices.size(); ++i) {
    const ir::VDevice& d = module.vdevices[i];
    r.devices.push_back({ir::DeviceString(static_cast<int>(i), module.vdevices),
                         d.target.ToString(), d.target.DeviceType(), d.vdevice_id});
  }
  for (const auto& [name, f] : module.functions) {
    const auto* d = f->attrs.Get<std::string>("vdevice");
    if (!d) continue;
    Expected<int> index = ir::ResolveDeviceString(*d, module.vdevices);
    if (!index) continue;
    PlacementReport::Region g{name, *index, {}};
    for (const ir::BindingBlock& b : f->body->blocks) {
      for (const ir::Binding& x : b.bindings) {
        if (As<ir::CallNode>(x.value) || As<ir::IfNode>(x.value))
          g.values.push_back(x.var->name_hint);
      }
    }
    r.regions.push_back(std::move(g));
  }
  if (ir::Function entry = module.Lookup(module.EntryName())) {
    // Which region produced each value of the entry, and which regions read it.
    std::map<const ir::VarNode*, std::string> made_by;
    std::map<const ir::VarNode*, std::vector<std::string>> read_by;
    for (const ir::BindingBlock& b : entry->body->blocks) {
      for (const ir::Binding& x : b.bindings) {
        const auto* call = As<ir::CallNode>(x.value);
        const auto* gv = call ? As<ir::GlobalVarNode>(call->callee) : nullptr;
        if (gv) {
          made_by[x.var.get()] = gv->name;
          for (const ir::Expr& a : call->args) {
            if (const auto* v = As<ir::VarNode>(a)) read_by[v].push_back(gv->name);
          }
        } else if (const auto* item = As<ir::TupleGetItemNode>(x.value)) {
          if (const auto* t = As<ir::VarNode>(item->tuple); t && made_by.count(t)) {
            made_by[x.var.get()] = made_by[t];
          }
        }
      }
    }
    for (const ir::BindingBlock& b : entry->body->blocks) {
      for (const ir::Binding& x : b.bindings) {
        const auto* call = As<ir::CallNode>(x.value);
        if (!call || !call->op() || call->op()->kind != ir::OpKind::kToVDevice) continue;
        const ir::StructInfo& in = call->args[0]->struct_info;
        int from = in && in->vdevice ? module.VDeviceIndex(*in->vdevice) : -1;
        int to = module.VDeviceIndex(*call->attrs.Get<ir::VDevice>("dst_vdevice"));
        PlacementReport::Copy cp{x.var->name_hint,    from, to, StaticBytes(x.var->struct_info), "",
                                 read_by[x.var.get()]};
        if (const auto* v = As<ir::VarNode>(call->args[0]); v && made_by.count(v)) {
          cp.from_region = made_by[v];
        }
        r.copies.push_back(std::move(cp));
      }
    }
  }
  return r;
}

std::string ReportSummary(const PlacementReport& r) {
  Counts c = Count(r);
  std::ostringstream s;
  int used = 0;
  for (int n : c.ops) used += n > 0;
  s << "placement: " << Plural(static_cast<int>(r.ops.size()), "op") << " on "
    << Plural(used, "device") << ", " << Plural(static_cast<int>(r.regions.size()), "region")
    << ", " << Plural(static_cast<int>(r.copies.size()), "copy", "copies")
    << (r.copies.empty()
            ? ""
            : " (" + Bytes(c.copy_bytes) + (c.copy_bytes_known ? "" : " and more") + ")")
    << ", " << Plural(c.fallbacks, "fallback") << "\n";
  for (size_t i = 0; i < r.devices.size(); ++i) {
    s << "  " << r.devices[i].name << " (" << r.devices[i].target << "): " << Plural(c.ops[i], "op")
      << " in " << Plural(c.regions[i], "region") << "\n";
  }
  // Fallbacks grouped by op and reason, most frequent first.
  std::map<std::pair<std::string, std::string>, int> groups;
  for (const auto& p : r.ops) {
    if (p.why == Why::kFallback) ++groups[{p.op, p.reason}];
  }
  std::vector<std::pair<int, std::pair<std::string, std::string>>> sorted;
  for (const auto& [k, n] : groups) sorted.push_back({-n, k});
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size() && i < 5; ++i) {
    s << "  fallback: " << -sorted[i].first << " x R." << sorted[i].second.first << ": "
      << sorted[i].second.second << "\n";
  }
  if (sorted.size() > 5) s << "  ... " << sorted.size() - 5 << " more kinds (see --report)\n";
  return s.str();
}

std::string ReportText(const PlacementReport& r) {
  Counts c = Count(r);
  std::ostringstream s;
  s << "# quilt placement report" << (r.model.empty() ? "" : ": " + r.model) << "\n\n";
  s << ReportSummary(r) << "\n";
  s << "devices, in priority order:\n";
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const auto& d = r.devices[i];
    s << "  [" << i << "] " << d.name << ": " << d.target << " (" << d.type << " " << d.id << ")"
      << (static_cast<int>(i) == r.host ? ", the host" : "") << "\n";
  }
  s << "\nops by device:\n";
  for (size_t i = 0; i < r.devices.size(); ++i) {
    s << "  " << r.devices[i].name << ": " << Plural(c.ops[i], "op");
    std::string sep = " (";
    for (const auto& [op, n] : c.by_op[i]) {
      s << sep << op << " " << n;
      sep = ", ";
    }
    s << (c.by_op[i].empty() ? "" : ")") << "\n";
  }
  s << "\nregions:\n";
  if (r.regions.empty()) s << "  none\n";
  for (const auto& g : r.regions) {
    s << "  " << g.function << " on " << r.devices[static_cast<size_t>(g.device)].name << ": "
      << Plural(static_cast<int>(g.values.size()), "op") << "\n";
  }
  s << "\ncopies between devices:\n";
  if (r.copies.empty()) s << "  none\n";
  for (const auto& cp : r.copies) {
    s << "  " << cp.value << ": "
      << (cp.from >= 0 ? r.devices[static_cast<size_t>(cp.from)].name : "?") << " -> "
      << r.devices[static_cast<size_t>(cp.to)].name << ", " << Bytes(cp.bytes) << "\n";
  }
  s << "\nfallbacks (ops not on the first device that was asked for):\n";
  if (c.fallbacks == 0) s << "  none\n";
  for (const auto& p : r.ops) {
    if (p.why != Why::kFallback) continue;
    s << "  " << Who(p) << " (R." << p.op << ") on "
      << r.devices[static_cast<size_t>(p.device)].name << ": " << p.reason << "\n";
  }
  s << "\nevery op (value, node, op, device, why):\n";
  for (const auto& p : r.ops) {
    s << "  " << p.value << "  " << (p.node.empty() ? "-" : p.node) << "  R." << p.op << "  "
      << r.devices[static_cast<size_t>(p.device)].name << "  " << passes::WhyName(p.why)
      << (p.reason.empty() || p.why == Why::kFallback ? "" : ": " + p.reason) << "\n";
  }
  return s.str();
}

std::string ReportDot(const PlacementReport& r) {
  std::ostringstream s;
  s << "digraph placement {\n  compound=true;\n  node [shape=box, style=filled, "
       "fillcolor=white, fontname=\"Helvetica\"];\n";
  s << "  label=\"" << (r.model.empty() ? "placement" : r.model) << "\";\n";
  std::map<std::string, std::string> region_of, op_of;
  for (const auto& p : r.ops) op_of[p.value] = p.op;
  for (size_t k = 0; k < r.regions.size(); ++k) {
    const auto& g = r.regions[k];
    s << "  subgraph cluster_" << k << " {\n    label=\"" << g.function << " ("
      << r.devices[static_cast<size_t>(g.device)].name << ")\";\n    style=filled;\n"
      << "    fillcolor=\"" << Color(g.device) << "\";\n";
    for (const std::string& v : g.values) {
      s << "    \"" << g.function << ":" << v << "\" [label=\"" << v
        << (op_of.count(v) ? "\\n" + op_of[v] : "") << "\"];\n";
      region_of[v] = g.function;
    }
    for (size_t i = 1; i < g.values.size(); ++i) {
      s << "    \"" << g.function << ":" << g.values[i - 1] << "\" -> \"" << g.function << ":"
        << g.values[i] << "\" [style=invis];\n";
    }
    s << "  }\n";
  }
  // A region's first op stands for its cluster at the ends of an edge.
  std::map<std::string, std::pair<size_t, std::string>> anchor;
  for (size_t k = 0; k < r.regions.size(); ++k) {
    const auto& g = r.regions[k];
    if (!g.values.empty()) anchor[g.function] = {k, g.function + ":" + g.values[0]};
  }
  for (const auto& cp : r.copies) {
    std::string id = "copy:" + cp.value;
    s << "  \"" << id << "\" [shape=ellipse, label=\"copy " << cp.value << "\\n"
      << (cp.from >= 0 ? r.devices[static_cast<size_t>(cp.from)].name : "?") << " -> "
      << r.devices[static_cast<size_t>(cp.to)].name << "\\n"
      << Bytes(cp.bytes) << "\"];\n";
    if (auto it = anchor.find(cp.from_region); it != anchor.end()) {
      s << "  \"" << it->second.second << "\" -> \"" << id << "\" [ltail=cluster_"
        << it->second.first << "];\n";
    }
    for (const std::string& to : cp.to_regions) {
      if (auto it = anchor.find(to); it != anchor.end()) {
        s << "  \"" << id << "\" -> \"" << it->second.second << "\" [lhead=cluster_"
          << it->second.first << "];\n";
      }
    }
  }
  s << "  legend [shape=plaintext, label=<<table border=\"0\">";
  for (size_t i = 0; i < r.devices.size(); ++i) {
    s << "<tr><td bgcolor=\"" << Color(static_cast<int>(i)) << "\">" << r.devices[i].name
      << "</td></tr>";
  }
  s << "</table>>];\n}\n";
  return s.str();
}

std::string ReportJson(const PlacementReport& r) {
  using nlohmann::json;
  Counts c = Count(r);
  json j;
  j["model"] = r.model;
  j["devices"] = json::array();
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const auto& d = r.devices[i];
    j["devices"].push_back({{"index", i},
                            {"name", d.name},
                            {"target", d.target},
                            {"type", d.type},
                            {"id", d.id},
                            {"ops", c.ops[i]},
                            {"regions", c.regions[i]},
                            {"ops_by_type", c.by_op[i]}});
  }
  j["ops"] = json::array();
  for (const auto& p : r.ops) {
    j["ops"].push_back({{"value", p.value},
                        {"node", p.node},
                        {"op", p.op},
                        {"device", p.device},
                        {"why", std::string(passes::WhyName(p.why))},
                        {"reason", p.reason}});
  }
  j["regions"] = json::array();
  for (const auto& g : r.regions) {
    j["regions"].push_back({{"function", g.function}, {"device", g.device}, {"ops", g.values}});
  }
  j["copies"] = json::array();
  for (const auto& cp : r.copies) {
    j["copies"].push_back({{"value", cp.value},
                           {"from", cp.from},
                           {"to", cp.to},
                           {"from_region", cp.from_region},
                           {"to_regions", cp.to_regions},
                           {"bytes", cp.bytes >= 0 ? json(cp.bytes) : json(nullptr)}});
  }
  j["fallbacks"] = c.fallbacks;
  return j.dump(2) + "\n";
}

}  // namespace quilt::compiler

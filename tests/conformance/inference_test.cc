// The independent check of the importer's inference: every ONNX backend node test shipped by the
// `onnx` package is imported, and each output's inferred dtype and shape is compared with the
// expected output tensors of its first data set. A symbolic dim passes (it cannot be wrong, only
// unknown); a static dim, the rank and the dtype must match.
//
// tests/conformance/inference_baseline.txt lists each test not supported yet, with its reason.
// The test fails when a test outside the baseline fails, and when a baseline test passes (so
// the baseline only shrinks). A report by op type is written to the build folder.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "importers/onnx/importer.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "ir/verifier.h"
#include "tests/conformance/node_tests.h"

namespace {

namespace fs = std::filesystem;
using quilt::Expected;
using quilt::conformance::OpTypes;
using quilt::conformance::PinShapeInputs;
using quilt::conformance::ReadBaseline;
using quilt::conformance::ReadTensorProto;
using quilt::ir::IRModule;
using quilt::ir::StructInfo;

// Empty when the inferred struct info agrees with the expected tensor.
std::string Compare(const StructInfo& s, const onnx::TensorProto& want, size_t index) {
  std::string where = "output " + std::to_string(index) + ": ";
  if (!s || !s->IsTensor()) return where + "not a tensor";
  auto dtype = static_cast<quilt::ir::DataType>(want.data_type());
  if (s->dtype != dtype) {
    return where + "dtype " + std::string(quilt::ir::DataTypeName(s->dtype)) + ", expected " +
           std::string(quilt::ir::DataTypeName(dtype));
  }
  if (s->ndim >= 0 && s->ndim != want.dims_size()) {
    return where + "rank " + std::to_string(s->ndim) + ", expected " +
           std::to_string(want.dims_size());
  }
  if (!s->shape) return "";
  for (int i = 0; i < want.dims_size(); ++i) {
    std::optional<int64_t> d = quilt::ir::AsInt((*s->shape)[i]);
    if (d && *d != want.dims(i)) {
      return where + "dim " + std::to_string(i) + " is " + std::to_string(*d) + ", expected " +
             std::to_string(want.dims(i));
    }
  }
  return "";
}

std::string CheckOne(const fs::path& dir) {
  Expected<IRModule> mod =
      quilt::importers::onnx::ImportOnnxFile((dir / "model.onnx").string(), PinShapeInputs(dir));
  if (!mod) return "import: " + mod.error().ToString();
  // The imported module must verify and survive the text form: print, parse, compare.
  if (quilt::Status v = quilt::ir::Verify(*mod); !v) return "verify: " + v.error().ToString();
  std::string text = quilt::ir::PrintModule(*mod);
  Expected<IRModule> again = quilt::ir::ParseModule(text);
  if (!again) return "text round trip: " + again.error().ToString();
  std::string why;
  if (!quilt::ir::StructuralEqual(*mod, *again, &why)) return "text round trip: " + why;
  quilt::ir::Function main = mod->Lookup("main");
  StructInfo ret = main->ret_struct_info;
  std::vector<StructInfo> outs;
  if (ret->kind == quilt::ir::StructInfoKind::kTuple) {
    outs = ret->fields;
  } else {
    outs.push_back(ret);
  }
  fs::path data = dir / "test_data_set_0";
  for (size_t i = 0;; ++i) {
    fs::path p = data / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) {
      if (i != outs.size())
        return "the model returns " + std::to_string(outs.size()) + " outputs, the data has " +
               std::to_string(i);
      break;
    }
    onnx::TensorProto t;
    if (!ReadTensorProto(p, &t)) return "cannot read " + p.string();
    if (i >= outs.size()) return "missing output " + std::to_string(i);
    std::string diff = Compare(outs[i], t, i);
    if (!diff.empty()) return diff;
  }
  return "";
}

TEST(OnnxNodeTests, InferredShapesAndDtypesMatchTheExpectedOutputs) {
  fs::path root = QUILT_NODE_TEST_DIR;
  if (!fs::exists(root))
    GTEST_SKIP() << "no node tests at " << root << ": run scripts/setup.sh and rebuild";
  std::map<std::string, std::string> baseline =
      ReadBaseline(std::string(QUILT_SOURCE_DIR) + "/tests/conformance/inference_baseline.txt");
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root)) {
    if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  ASSERT_GT(dirs.size(), 1000u) << "too few node tests in " << root;
  int pass = 0;
  std::vector<std::string> new_failures, now_passing;
  std::map<std::string, std::pair<int, int>> by_op;  // op types -> (pass, total)
  std::ostringstream report, failures_file;
  for (const fs::path& d : dirs) {
    std::string name = d.filename().string();
    std::string problem = CheckOne(d);
    std::string ops = OpTypes(d / "model.onnx");
    auto& [p, total] = by_op[ops];
    ++total;
    bool listed = baseline.count(name) > 0;
    if (problem.empty()) {
      ++pass;
      ++p;
      if (listed) now_passing.push_back(name);
      continue;
    }
    std::string one_line = problem.substr(0, problem.find('\n'));
    if (problem.find("unsupported node") != std::string::npos) {
      // "unsupported: Conv, MaxPool" from the per-node lines "  node 'x': Conv (domain ...".
      std::set<std::string> ops;
      std::istringstream lines(problem);
      for (std::string line; std::getline(lines, line);) {
        size_t colon = line.find("': ");
        size_t paren = line.find(" (domain");
        if (colon != std::string::npos && paren != std::string::npos && paren > colon) {
          ops.insert(line.substr(colon + 3, paren - colon - 3));
        }
      }
      one_line = "unsupported:";
      for (const auto& o : ops) one_line += " " + o;
    }
    failures_file << name << "\t" << one_line << "\n";
    if (!listed) new_failures.push_back(name + ": " + problem);
  }
  report << "# ONNX node tests: importer inference\n\n"
         << pass << " of " << dirs.size()
         << " pass\n\n| ops | pass | total |\n| --- | --- | --- |\n";
  for (const auto& [ops, pt] : by_op)
    report << "| " << ops << " | " << pt.first << " | " << pt.second << " |\n";
  std::ofstream(std::string(QUILT_BINARY_DIR) + "/inference_report.md") << report.str();
  std::ofstream(std::string(QUILT_BINARY_DIR) + "/inference_failures.txt") << failures_file.str();
  std::cout << "node tests: " << pass << " of " << dirs.size() << " pass inference; report in "
            << QUILT_BINARY_DIR << "/inference_report.md\n";
  std::string nf;
  for (size_t i = 0; i < new_failures.size() && i < 40; ++i) nf += "  " + new_failures[i] + "\n";
  EXPECT_TRUE(new_failures.empty())
      << new_failures.size() << " node tests fail outside the baseline:\n"
      << nf;
  std::string np;
  for (const auto& n : now_passing) np += "  " + n + "\n";
  EXPECT_TRUE(now_passing.empty())
      << now_passing.size() << " baseline tests pass now; remove them from the baseline:\n"
      << np;
}

}  // namespace

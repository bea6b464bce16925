// The converter table: the category lists, one line each, and what is left out on purpose.
#include <algorithm>
#include <set>

#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {
namespace {

const std::vector<const std::vector<Converter>*>& Categories() {
  static const std::vector<const std::vector<Converter>*> lists = {
      &kElementwiseConverters, &kNnConverters,        &kTensorConverters,  &kReduceConverters,
      &kLinalgConverters,      &kImageConverters,     &kControlConverters, &kQuantizeConverters,
      &kTransformerConverters, &kRecurrentConverters, &kSignalConverters,
  };
  return lists;
}

}  // namespace

const Converter* FindConverter(const std::string& op_type, int64_t opset,
                               const std::string& domain) {
  const std::string& d = domain == "ai.onnx" ? std::string() : domain;
  const Converter* best = nullptr;
  for (const auto* list : Categories()) {
    for (const Converter& c : *list) {
      if (op_type == c.op_type && d == c.domain && c.since <= opset &&
          (!best || c.since > best->since)) {
        best = &c;
      }
    }
  }
  return best;
}

std::vector<std::string> SupportedOpTypes() {
  std::set<std::string> names;
  for (const auto* list : Categories()) {
    for (const Converter& c : *list) {
      names.insert(*c.domain ? std::string(c.domain) + "." + c.op_type : c.op_type);
    }
  }
  return {names.begin(), names.end()};
}

std::string LeftOutReason(const std::string& domain, const std::string& op_type) {
  if (domain == "ai.onnx.ml") return "the ai.onnx.ml domain (classical ML) is left out";
  if (domain == "ai.onnx.preview.training") return "training ops are left out";
  if (!domain.empty()) return "";
  static const std::set<std::string> kRandom = {"RandomNormal",     "RandomUniform",
                                                "RandomNormalLike", "RandomUniformLike",
                                                "Bernoulli",        "Multinomial"};
  static const std::set<std::string> kStrings = {"StringNormalizer", "StringConcat", "StringSplit",
                                                 "RegexFullMatch"};
  static const std::set<std::string> kSequences = {
      "SequenceAt",         "SequenceConstruct", "SequenceEmpty",      "SequenceErase",
      "SequenceInsert",     "SequenceLength",    "SequenceMap",        "SplitToSequence",
      "ConcatFromSequence", "Optional",          "OptionalGetElement", "OptionalHasElement"};
  static const std::set<std::string> kTraining = {"Adagrad", "Adam", "Momentum", "Gradient"};
  if (kRandom.count(op_type))
    return "random generators are left out (results are not reproducible)";
  if (kStrings.count(op_type)) return "string ops are left out";
  if (kSequences.count(op_type)) return "sequence and optional types are left out";
  if (kTraining.count(op_type)) return "training ops are left out";
  return "";
}

}  // namespace quilt::importers::onnx

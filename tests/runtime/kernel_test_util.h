// What the CPU kernels' tests share: a step's attributes built as a package holds them, a
// kernel context over tensors the test holds, random data, and convolution cases.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "quilt/package_generated.h"
#include "runtime/src/kernel.h"
#include "runtime/src/thread_pool.h"

namespace quilt::cpu::kernel_test {

// The tolerances of a fast kernel against its reference.
inline constexpr double kRtol = 1e-4, kAtol = 1e-5;

// The attributes of one step, built as the package holds them.
class Attrs {
 public:
  Attrs& Int(const std::string& name, int64_t v) {
    auto n = fbb_.CreateString(name);
    list_.push_back(pkg::CreateAttr(fbb_, n, pkg::AttrType::Int, v));
    return *this;
  }
  Attrs& Ints(const std::string& name, const std::vector<int64_t>& v) {
    return Ints(name, std::span<const int64_t>(v));
  }
  Attrs& Ints(const std::string& name, std::span<const int64_t> v) {
    auto n = fbb_.CreateString(name);
    auto ints = fbb_.CreateVector(v.data(), v.size());
    list_.push_back(pkg::CreateAttr(fbb_, n, pkg::AttrType::Ints, 0, 0, 0, ints));
    return *this;
  }
  Attrs& Dtype(const std::string& name, DType v) {
    auto n = fbb_.CreateString(name);
    list_.push_back(pkg::CreateAttr(fbb_, n, pkg::AttrType::DType, static_cast<int64_t>(v)));
    return *this;
  }
  Attrs& Bool(const std::string& name, bool v) {
    auto n = fbb_.CreateString(name);
    list_.push_back(pkg::CreateAttr(fbb_, n, pkg::AttrType::Bool, v ? 1 : 0));
    return *this;
  }
  Attrs& Float(const std::string& name, double v) {
    auto n = fbb_.CreateString(name);
    list_.push_back(pkg::CreateAttr(fbb_, n, pkg::AttrType::Float, 0, v));
    return *this;
  }
  Attrs& Str(const std::string& name, const std::string& v) {
    auto n = fbb_.CreateString(name);
    auto s = fbb_.CreateString(v);
    list_.push_back(pkg::CreateAttr(fbb_, n, pkg::AttrType::Str, 0, 0, s));
    return *this;
  }
  Attrs& Floats(const std::string& name, const std::vector<double>& v) {
    auto n = fbb_.CreateString(name);
    auto floats = fbb_.CreateVector(v);
    list_.push_back(pkg::CreateAttr(fbb_, n, pkg::AttrType::Floats, 0, 0, 0, 0, floats));
    return *this;
  }
  Attrs& Strs(const std::string& name, const std::vector<std::string>& v) {
    auto n = fbb_.CreateString(name);
    auto strs = fbb_.CreateVectorOfStrings(v);
    list_.push_back(pkg::CreateAttr(fbb_, n, pkg::AttrType::Strs, 0, 0, 0, 0, 0, strs));
    return *this;
  }
  const rt::AttrView::List* Finish() {
    auto vec = fbb_.CreateVector(list_);
    pkg::StepBuilder step(fbb_);
    step.add_attrs(vec);
    fbb_.Finish(step.Finish());
    return flatbuffers::GetRoot<pkg::Step>(fbb_.GetBufferPointer())->attrs();
  }

 private:
  flatbuffers::FlatBufferBuilder fbb_;
  std::vector<flatbuffers::Offset<pkg::Attr>> list_;
};

// A kernel context over float tensors held by the test, with `outputs` float outputs.
class TestContext final : public rt::KernelContext {
 public:
  TestContext(std::vector<Tensor> inputs, const rt::AttrView::List* attrs, rt::ThreadPool* pool,
              int outputs = 1)
      : inputs_(std::move(inputs)), attrs_(attrs), pool_(pool), outs_(outputs), data_(outputs) {}
  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  const Tensor* input(int i) const override {
    return i >= 0 && i < num_inputs() ? &inputs_[i] : nullptr;
  }
  int ArgBegin(int arg) const override {
    if (variadic_ == 0) return arg;
    return arg == 0 ? 0 : variadic_ + arg - 1;
  }
  int ArgSize(int arg) const override {
    if (variadic_ > 0 && arg == 0) return variadic_;
    return ArgBegin(arg) < num_inputs() ? 1 : 0;
  }
  // The first argument takes the first `n` inputs (a variadic one: concat's tensors).
  void SetVariadicFirst(int n) { variadic_ = n; }
  int num_outputs() const override { return static_cast<int>(outs_.size()); }
  DType output_dtype(int) const override { return DType::kFloat32; }
  Status Output(int i, DType dtype, const Shape& shape, Tensor** out) override {
    if (i < 0 || i >= num_outputs()) return Status::Error("no output " + std::to_string(i));
    Tensor& t = outs_[i];
    t.dtype = dtype;
    t.shape = shape;
    // Filled with garbage: a kernel must write every element. In floats, whatever the dtype.
    size_t floats = (rt::DTypeBytes(dtype, t.NumElements()) + sizeof(float) - 1) / sizeof(float);
    if (i < static_cast<int>(memory_.size()) && memory_[i]) {
      t.data = memory_[i];
      *out = &t;
      return Status::Ok();
    }
    data_[i].assign(std::max<size_t>(floats, static_cast<size_t>(t.NumElements())) + 1,
                    std::nanf(""));
    t.data = data_[i].data();
    *out = &t;
    return Status::Ok();
  }
  // Output i in `memory` (as the executor places an output in an input's buffer, kInPlaceInput),
  // not in garbage-filled memory of its own: the caller's, large enough.
  void SetOutputMemory(int i, float* memory) {
    memory_.resize(std::max(memory_.size(), static_cast<size_t>(i) + 1), nullptr);
    memory_[static_cast<size_t>(i)] = memory;
  }
  const rt::AttrView& attrs() const override { return attrs_; }
  int threads() const override { return pool_ ? pool_->threads() : 1; }
  rt::ThreadPool* thread_pool() const override { return pool_; }
  bool constant_input(int i) const override { return i >= 0 && i < 64 && ((constant_ >> i) & 1); }
  rt::StepCache* cache() const override { return cache_; }
  // A step's cache, and its inputs (bit i: input i) that stay the same run after run.
  void SetCache(rt::StepCache* cache, uint64_t constant) {
    cache_ = cache;
    constant_ = constant;
  }
  const Tensor& out(int i = 0) const { return outs_[i]; }
  std::vector<float> values(int i = 0) const {
    const float* p = static_cast<const float*>(outs_[i].data);
    return std::vector<float>(p, p + outs_[i].NumElements());
  }

 private:
  std::vector<Tensor> inputs_;
  rt::AttrView attrs_;
  rt::ThreadPool* pool_;
  std::vector<Tensor> outs_;
  std::vector<std::vector<float>> data_;
  std::vector<float*> memory_;
  rt::StepCache* cache_ = nullptr;
  uint64_t constant_ = 0;
  int variadic_ = 0;
};

inline std::vector<float> Random(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

inline int64_t Count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline std::string Join(std::span<const int64_t> v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

struct ConvCase {
  int64_t n, groups, cg, og;
  std::vector<int64_t> in, kernel, stride, dilation, pads;
  std::string auto_pad = "NOTSET";
};

// The data (x) and weight (w) shapes of case c, and its groups, strides, dilation and pads as
// attributes.
inline void ConvShapes(const ConvCase& c, Shape* x, Shape* w) {
  *x = {c.n, c.groups * c.cg};
  *w = {c.groups * c.og, c.cg};
  x->insert(x->end(), c.in.begin(), c.in.end());
  w->insert(w->end(), c.kernel.begin(), c.kernel.end());
}
inline Attrs& ConvAttrs(const ConvCase& c, Attrs& attrs) {
  return attrs.Int("groups", c.groups)
      .Ints("strides", c.stride)
      .Ints("dilation", c.dilation)
      .Ints("padding", c.pads);
}

}  // namespace quilt::cpu::kernel_test

#include "tests/targets/opencl_emit_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "runtime/src/float_convert.h"
#include "runtime/src/package.h"
#include "targets/compile.h"
#include "tests/test_util.h"

namespace quilt::opencl_test {

Input Floats(const std::string& name, rt::Shape shape, float scale, float shift, float drift) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = scale * static_cast<float>((i * 7919) % 23) - shift + drift * static_cast<float>(i);
  }
  Input in{name, rt::DType::kFloat32, std::move(shape), std::vector<uint8_t>(v.size() * 4)};
  if (!v.empty()) std::memcpy(in.bytes.data(), v.data(), in.bytes.size());
  return in;
}

Input Halves(const std::string& name, rt::Shape shape, const std::vector<float>& special,
             float scale, float shift) {
  Input f = Floats(name, shape, scale, shift);
  std::vector<float> v(f.bytes.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), f.bytes.data(), f.bytes.size());
  std::copy(special.begin(), special.end(), v.begin());
  Input in{name, rt::DType::kFloat16, std::move(shape), std::vector<uint8_t>(v.size() * 2)};
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = numeric::FloatToHalf(v[i]);
    std::memcpy(in.bytes.data() + 2 * i, &h, 2);
  }
  return in;
}

Input Int64s(const std::string& name, const std::vector<int64_t>& v, rt::Shape shape) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  Input in{name, rt::DType::kInt64, std::move(shape), std::vector<uint8_t>(v.size() * 8)};
  std::memcpy(in.bytes.data(), v.data(), in.bytes.size());
  return in;
}

std::string ConstFloats(const std::vector<int64_t>& shape, float scale, float shift) {
  size_t i = 0;
  std::string text;
  auto list = [&](auto&& self, size_t axis) -> void {
    text += "[";
    for (int64_t k = 0; k < shape[axis]; ++k) {
      if (k) text += ", ";
      if (axis + 1 < shape.size()) {
        self(self, axis + 1);
        continue;
      }
      float v = scale * static_cast<float>((i * 7919) % 23) - shift + 0.01f * static_cast<float>(i);
      ++i;
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
      text += buf;
    }
    text += "]";
  };
  list(list, 0);
  return "R.const(" + text + ", \"float32\")";
}

std::vector<rt::NamedTensor> Named(const std::vector<Input>& inputs) {
  std::vector<rt::NamedTensor> named;
  for (const Input& in : inputs) {
    rt::NamedTensor t;
    t.name = in.name;
    t.tensor.dtype = in.dtype;
    t.tensor.shape = in.shape;
    t.tensor.data = const_cast<uint8_t*>(in.bytes.data());
    named.push_back(t);
  }
  return named;
}

void CompileAndRun(const std::string& model, std::vector<std::string> devices, bool strict,
                   const std::vector<Input>& inputs, std::vector<rt::OwnedTensor>* out,
                   int* dispatches) {
  compiler::CompileOptions options;
  options.devices = std::move(devices);
  options.strict = strict;
  Expected<compiler::Compiled> c = compiler::Compile(testing::Parse(model), options);
  ASSERT_TRUE(c) << c.error().ToString();
  std::unique_ptr<rt::LoadedPackage> p;
  rt::Status st = rt::LoadedPackage::FromMemory(c->package.data(), c->package.size(), &p);
  ASSERT_TRUE(st.ok()) << st.message();
  *dispatches = 0;
  for (const pkg::Step* step : *p->root().graphs()->Get(0)->steps()) {
    *dispatches += step->kind() == pkg::StepKind::Dispatch;
  }
  rt::SessionOptions so;
  so.strict = true;  // a kernel the driver does not build is an error, not a quiet CPU run
  std::unique_ptr<rt::Session> s;
  st = rt::Session::Create(std::move(p), so, &s);
  ASSERT_TRUE(st.ok()) << st.message();
  st = s->Run(Named(inputs), out);
  ASSERT_TRUE(st.ok()) << st.message();
}

void ExpectOpenClMatchesCpu(const std::string& model, const std::vector<Input>& inputs,
                            int min_dispatches, int max_dispatches, int half_ulps) {
  std::vector<rt::OwnedTensor> cl, cpu;
  int cl_dispatches = 0, cpu_dispatches = 0;
  ASSERT_NO_FATAL_FAILURE(CompileAndRun(model, {"opencl"}, true, inputs, &cl, &cl_dispatches));
  ASSERT_NO_FATAL_FAILURE(CompileAndRun(model, {"llvm"}, false, inputs, &cpu, &cpu_dispatches));
  EXPECT_GE(cl_dispatches, min_dispatches);
  EXPECT_LE(cl_dispatches, max_dispatches);
  EXPECT_EQ(cpu_dispatches, 0);
  ASSERT_EQ(cl.size(), cpu.size());
  for (size_t o = 0; o < cl.size(); ++o) {
    ASSERT_EQ(cl[o].shape, cpu[o].shape) << "output " << o;
    ASSERT_EQ(cl[o].dtype, cpu[o].dtype) << "output " << o;
    ASSERT_EQ(cl[o].data.size(), cpu[o].data.size()) << "output " << o;
    if (cl[o].dtype == rt::DType::kFloat16) {
      size_t n = cl[o].data.size() / 2;
      int bad = 0;
      for (size_t i = 0; i < n && bad < 5; ++i) {
        uint16_t a, b;
        std::memcpy(&a, cl[o].data.data() + 2 * i, 2);
        std::memcpy(&b, cpu[o].data.data() + 2 * i, 2);
        float fa = numeric::HalfToFloat(a), fb = numeric::HalfToFloat(b);
        // Halves of one sign are ordered as their bits: the difference counts units in the last
        // place.
        bool same = std::isnan(fb) ? std::isnan(fa)
                                   : a == b || ((a ^ b) < 0x8000 && std::abs(a - b) <= half_ulps);
        if (!same) ++bad;
        EXPECT_TRUE(same) << "output " << o << " element " << i << ": OpenCL " << fa << " (0x"
                          << std::hex << a << "), CPU " << fb << " (0x" << b << ")" << std::dec;
      }
      continue;
    }
    if (cl[o].dtype != rt::DType::kFloat32) {
      EXPECT_EQ(cl[o].data, cpu[o].data) << "output " << o;  // integers and bools: exact
      continue;
    }
    size_t n = cl[o].data.size() / 4;
    std::vector<float> a(n), b(n);
    if (n) std::memcpy(a.data(), cl[o].data.data(), n * 4);
    if (n) std::memcpy(b.data(), cpu[o].data.data(), n * 4);
    int bad = 0;
    for (size_t i = 0; i < n && bad < 5; ++i) {
      bool same = std::isnan(b[i])
                      ? std::isnan(a[i])
                      : (a[i] == b[i] || std::fabs(a[i] - b[i]) <= 1e-5f + 1e-4f * std::fabs(b[i]));
      if (!same) ++bad;
      EXPECT_TRUE(same) << "output " << o << " element " << i << ": OpenCL " << a[i] << ", CPU "
                        << b[i];
    }
  }
}

}  // namespace quilt::opencl_test

// The recurrent layers (RNN, GRU, LSTM): their activations, the reference kernels
// (recurrent.cc, in double) and the float32 fast paths (recurrent_fast.cc) that
// tests/runtime/fast_kernels_test.cc checks against them.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/src/kernel.h"

namespace quilt::cpu::rnn {

using rt::KernelContext;
using rt::Status;

enum class Cell { kRnn, kGru, kLstm };

enum class Act {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus
};

struct Activation {
  Act act;
  double alpha, beta;
  double operator()(double x) const {
    switch (act) {
      case Act::kRelu:
        return x > 0 ? x : 0;
      case Act::kTanh:
        return std::tanh(x);
      case Act::kSigmoid:
        return 1 / (1 + std::exp(-x));
      case Act::kAffine:
        return alpha * x + beta;
      case Act::kLeakyRelu:
        return x >= 0 ? x : alpha * x;
      case Act::kThresholdedRelu:
        return x > alpha ? x : 0;
      case Act::kScaledTanh:
        return alpha * std::tanh(beta * x);
      case Act::kHardSigmoid:
        return std::max(0.0, std::min(1.0, alpha * x + beta));
      case Act::kElu:
        return x >= 0 ? x : alpha * (std::exp(x) - 1);
      case Act::kSoftsign:
        return x / (1 + std::fabs(x));
      case Act::kSoftplus:
        return std::log1p(std::exp(x));
    }
    return x;
  }
};

inline Status ParseActivation(std::string_view name, double alpha, double beta, Activation* out) {
  static constexpr std::pair<std::string_view, Act> kNames[] = {
      {"Relu", Act::kRelu},
      {"Tanh", Act::kTanh},
      {"Sigmoid", Act::kSigmoid},
      {"Affine", Act::kAffine},
      {"LeakyRelu", Act::kLeakyRelu},
      {"ThresholdedRelu", Act::kThresholdedRelu},
      {"ScaledTanh", Act::kScaledTanh},
      {"HardSigmoid", Act::kHardSigmoid},
      {"Elu", Act::kElu},
      {"Softsign", Act::kSoftsign},
      {"Softplus", Act::kSoftplus},
  };
  for (const auto& [n, a] : kNames) {
    if (n == name) {
      *out = {a, alpha, beta};
      return Status::Ok();
    }
  }
  return Status::Error("unknown activation '" + std::string(name) + "'");
}

// ONNX semantics in double: every dtype, every attribute, the errors.
Status RnnReference(KernelContext& ctx);
Status GruReference(KernelContext& ctx);
Status LstmReference(KernelContext& ctx);
// com.microsoft DynamicQuantizeLSTM: the reference (integer products one by one, the cell in
// double) and the kernel (the same integers from the 8-bit GEMM or exact float GEMMs; the cell
// with ONNX's default activations, no clip and no coupled gates in float, as ONNX Runtime
// computes it, and any other in double, bit for bit the reference's results).
Status DynamicQuantizeLstmReference(KernelContext& ctx);
Status DynamicQuantizeLstm(KernelContext& ctx);
// The LSTM cell with ONNX's default activations (sigmoid, tanh, tanh) in float for a batch of
// one, across n hidden units: the gates' input projections xi, xo, xf, xc and recurrent ones ri,
// ro, rf, rc, peepholes pi, po, pf (n values each, contiguous); the cell c and hidden state h
// updated in place (recurrent_fast.cc).
void StandardLstmColumn(int64_t n, const float* xi, const float* xo, const float* xf,
                        const float* xc, const float* ri, const float* ro, const float* rf,
                        const float* rc, const float* pi, const float* po, const float* pf,
                        float* __restrict c, float* __restrict h);
// Float32 in float32 arithmetic, the products on the blocked GEMM; any other element type, and
// every input the reference refuses, is the reference's.
Status RnnFast(KernelContext& ctx);
Status GruFast(KernelContext& ctx);
Status LstmFast(KernelContext& ctx);

}  // namespace quilt::cpu::rnn

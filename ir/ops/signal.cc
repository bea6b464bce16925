// Struct-info rules of the ops in ir/ops/signal.def.
#include <cstring>

#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

using Dims = std::vector<PrimExpr>;

std::string Str(int64_t v) { return std::to_string(v); }

PrimExpr FloorDiv(PrimExpr a, PrimExpr b) { return MakeBinary(PrimKind::kFloorDiv, a, b); }

StructInfo Unknown(DataType dtype, int ndim) {
  return TensorSInfo(std::nullopt, dtype, std::nullopt, ndim);
}

// An empty tensor (shape [0]) stands for an input the model leaves out.
bool IsAbsent(const StructInfoNode& s) {
  std::optional<std::vector<int64_t>> shape = s.StaticShape();
  return shape && shape->size() == 1 && (*shape)[0] == 0;
}

// The values of an int32/int64 constant argument, or nullopt.
std::optional<std::vector<int64_t>> ConstantInts(const Expr& e) {
  const ConstantNode* c = As<ConstantNode>(e);
  if (!c || (c->dtype != DataType::kInt64 && c->dtype != DataType::kInt32)) return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < c->NumElements(); ++i) {
    if (c->dtype == DataType::kInt64) {
      int64_t v;
      std::memcpy(&v, c->data->data() + 8 * i, 8);
      out.push_back(v);
    } else {
      int32_t v;
      std::memcpy(&v, c->data->data() + 4 * i, 4);
      out.push_back(v);
    }
  }
  return out;
}

// Argument i as an integer scalar (rank 0, or one element): its tensor struct info, checked.
Expected<const StructInfoNode*> IntScalarArg(const OpInfo& op, const std::vector<Expr>& args,
                                             size_t i) {
  Expected<const StructInfoNode*> t = TensorArg(op, args, i);
  if (!t) return t;
  const StructInfoNode& s = **t;
  if (s.dtype != DataType::kVoid && s.dtype != DataType::kInt32 && s.dtype != DataType::kInt64) {
    return Error(op.arg_names[i] + " must be int32 or int64, got " + DtypeName(s.dtype));
  }
  if (s.ndim > 1) {
    return Error(op.arg_names[i] + " must be a scalar, got rank " + Str(s.ndim));
  }
  if (std::optional<std::vector<int64_t>> shape = s.StaticShape();
      shape && shape->size() == 1 && (*shape)[0] != 1) {
    return Error(op.arg_names[i] + " must be a scalar, got " + Str((*shape)[0]) + " values");
  }
  return t;
}

// The value of a scalar int argument when it is a constant.
std::optional<int64_t> ScalarValue(const Expr& e) {
  std::optional<std::vector<int64_t>> v = ConstantInts(e);
  if (!v || v->size() != 1) return std::nullopt;
  return (*v)[0];
}

}  // namespace

Expected<StructInfo> InferDft(const OpInfo& op, const std::vector<Expr>& args, const Attrs& attrs) {
  Expected<const StructInfoNode*> xa = TensorArg(op, args, 0);
  if (!xa) return xa.error();
  const StructInfoNode& x = **xa;
  if (x.dtype != DataType::kVoid && !IsFloat(x.dtype)) {
    return Error("the input must be floating-point, got " + DtypeName(x.dtype));
  }
  const bool inverse = *attrs.Get<bool>("inverse"), onesided = *attrs.Get<bool>("onesided");
  const bool irfft = inverse && onesided;
  Expected<const StructInfoNode*> len = TensorArg(op, args, 1);
  if (!len) return len.error();
  const bool has_length = !IsAbsent(**len);
  if (has_length) {
    if (Expected<const StructInfoNode*> l = IntScalarArg(op, args, 1); !l) return l.error();
  }
  if (Expected<const StructInfoNode*> a = IntScalarArg(op, args, 2); !a) return a.error();
  const int r = x.ndim;
  if (r < 0) return Unknown(x.dtype, -1);
  if (r < 2) {
    return Error(
        "the input must have rank >= 2 (signal dims, then 1 or 2 for real or complex), "
        "got rank " +
        Str(r));
  }
  // The trailing real/complex dim.
  std::optional<int64_t> last = AsInt(x.shape ? x.shape->back() : nullptr);
  if (last && *last != 1 && *last != 2) {
    return Error("the last dim must be 1 (real) or 2 (complex), got " + Str(*last));
  }
  if (last && onesided && !inverse && *last != 1) {
    return Error("a one-sided forward DFT needs real input (last dim 1), got complex input");
  }
  if (last && irfft && *last != 2) {
    return Error("a one-sided inverse DFT needs complex input (last dim 2), got real input");
  }
  std::optional<int64_t> axis = ScalarValue(args[2]);
  if (!axis) return Unknown(x.dtype, r);
  if (!((*axis >= -r && *axis <= -2) || (*axis >= 0 && *axis <= r - 2))) {
    return Error("axis " + Str(*axis) + " is out of range for rank " + Str(r) + " (the last dim " +
                 "holds real and imaginary parts; accepted [" + Str(-r) + ", -2] or [0, " +
                 Str(r - 2) + "])");
  }
  const int64_t a = *axis < 0 ? *axis + r : *axis;
  std::optional<int64_t> length;
  if (has_length) {
    length = ScalarValue(args[1]);
    if (!length) return Unknown(x.dtype, r);
    if (*length < 1) return Error("dft_length must be positive, got " + Str(*length));
  }
  if (!x.shape) return Unknown(x.dtype, r);
  Dims out = *x.shape;
  PrimExpr n = length ? IntImm(*length) : irfft ? IntImm(2) * (out[a] - IntImm(1)) : out[a];
  if (!length && irfft) {
    if (std::optional<int64_t> d = AsInt(out[a]); d && *d < 2) {
      return Error("a one-sided inverse DFT without dft_length needs at least 2 bins on axis " +
                   Str(a) + ", got " + Str(*d));
    }
  }
  out[a] = onesided && !inverse ? FloorDiv(n, IntImm(2)) + IntImm(1) : n;
  out.back() = IntImm(irfft ? 1 : 2);
  return TensorSInfo(out, x.dtype);
}

Expected<StructInfo> InferStft(const OpInfo& op, const std::vector<Expr>& args,
                               const Attrs& attrs) {
  Expected<const StructInfoNode*> sa = TensorArg(op, args, 0);
  if (!sa) return sa.error();
  const StructInfoNode& signal = **sa;
  DataType dtype = signal.dtype;
  if (dtype != DataType::kVoid && !IsFloat(dtype)) {
    return Error("the signal must be floating-point, got " + DtypeName(dtype));
  }
  if (signal.ndim >= 0 && signal.ndim != 3) {
    return Error("the signal must have rank 3 ([batch, signal_length, 1 or 2]), got rank " +
                 Str(signal.ndim));
  }
  const bool onesided = *attrs.Get<bool>("onesided");
  std::optional<int64_t> last = AsInt(signal.shape ? (*signal.shape)[2] : nullptr);
  if (last && *last != 1 && *last != 2) {
    return Error("the signal's last dim must be 1 (real) or 2 (complex), got " + Str(*last));
  }
  if (last && onesided && *last == 2) {
    return Error("onesided output needs a real signal (last dim 1), got a complex one");
  }
  if (Expected<const StructInfoNode*> s = IntScalarArg(op, args, 1); !s) return s.error();
  Expected<const StructInfoNode*> wa = TensorArg(op, args, 2);
  if (!wa) return wa.error();
  const StructInfoNode& window = **wa;
  const bool has_window = !IsAbsent(window);
  if (has_window) {
    if (window.ndim >= 0 && window.ndim != 1) {
      return Error("window must have rank 1, got rank " + Str(window.ndim));
    }
    if (Expected<DataType> d = SameDtype(signal, window); !d) {
      return Error("signal and window: " + d.error().message);
    }
  }
  Expected<const StructInfoNode*> fla = TensorArg(op, args, 3);
  if (!fla) return fla.error();
  const bool has_frame_length = !IsAbsent(**fla);
  if (has_frame_length) {
    if (Expected<const StructInfoNode*> f = IntScalarArg(op, args, 3); !f) return f.error();
  }
  const StructInfo unknown = Unknown(dtype, 4);
  std::optional<int64_t> step = ScalarValue(args[1]);
  if (step && *step < 1) return Error("frame_step must be positive, got " + Str(*step));

  PrimExpr window_length = has_window && window.shape ? (*window.shape)[0] : nullptr;
  PrimExpr frame_length;
  if (has_frame_length) {
    std::optional<int64_t> fl = ScalarValue(args[3]);
    if (fl && *fl < 1) return Error("frame_length must be positive, got " + Str(*fl));
    if (fl) frame_length = IntImm(*fl);
    std::optional<int64_t> wl = AsInt(window_length);
    if (fl && wl && *fl != *wl) {
      return Error("window has length " + Str(*wl) + " but frame_length is " + Str(*fl));
    }
  } else if (has_window) {
    frame_length = window_length;
  } else if (signal.shape) {
    frame_length = (*signal.shape)[1];
  }
  if (!signal.shape || !step || !frame_length) return unknown;
  const Dims& s = *signal.shape;
  std::optional<int64_t> sl = AsInt(s[1]), fl = AsInt(frame_length);
  if (sl && fl && *fl > *sl) {
    return Error("frame_length " + Str(*fl) + " is longer than the signal (" + Str(*sl) + ")");
  }
  PrimExpr frames = FloorDiv(s[1] - frame_length, IntImm(*step)) + IntImm(1);
  PrimExpr bins = onesided ? FloorDiv(frame_length, IntImm(2)) + IntImm(1) : frame_length;
  return TensorSInfo(Dims{s[0], frames, bins, IntImm(2)}, dtype);
}

Expected<StructInfo> InferWindow(const OpInfo& op, const std::vector<Expr>& args,
                                 const Attrs& attrs) {
  if (Expected<const StructInfoNode*> s = IntScalarArg(op, args, 0); !s) return s.error();
  DataType dtype = *attrs.Get<DataType>("output_datatype");
  if (!IsFloat(dtype) && !IsInteger(dtype)) {
    return Error("output_datatype must be a numeric type, got " + DtypeName(dtype));
  }
  std::optional<int64_t> size = ScalarValue(args[0]);
  if (!size) return Unknown(dtype, 1);
  if (*size < 0) return Error("size must not be negative, got " + Str(*size));
  return TensorSInfo(std::vector<int64_t>{*size}, dtype);
}

Expected<StructInfo> InferMelWeightMatrix(const OpInfo& op, const std::vector<Expr>& args,
                                          const Attrs& attrs) {
  for (size_t i = 0; i < 3; ++i) {
    if (Expected<const StructInfoNode*> s = IntScalarArg(op, args, i); !s) return s.error();
  }
  for (size_t i = 3; i < 5; ++i) {
    Expected<const StructInfoNode*> t = TensorArg(op, args, i);
    if (!t) return t.error();
    if ((*t)->dtype != DataType::kVoid && !IsFloat((*t)->dtype)) {
      return Error(op.arg_names[i] + " must be floating-point, got " + DtypeName((*t)->dtype));
    }
    if ((*t)->ndim > 1) {
      return Error(op.arg_names[i] + " must be a scalar, got rank " + Str((*t)->ndim));
    }
  }
  DataType dtype = *attrs.Get<DataType>("output_datatype");
  if (!IsFloat(dtype) && !IsInteger(dtype)) {
    return Error("output_datatype must be a numeric type, got " + DtypeName(dtype));
  }
  std::optional<int64_t> bins = ScalarValue(args[0]), length = ScalarValue(args[1]);
  if (std::optional<int64_t> rate = ScalarValue(args[2]); rate && *rate <= 0) {
    return Error("sample_rate must be positive, got " + Str(*rate));
  }
  if (bins && *bins < 1) return Error("num_mel_bins must be positive, got " + Str(*bins));
  if (length && *length < 1) return Error("dft_length must be positive, got " + Str(*length));
  if (!bins || !length) return Unknown(dtype, 2);
  return TensorSInfo(std::vector<int64_t>{*length / 2 + 1, *bins}, dtype);
}

}  // namespace quilt::ir

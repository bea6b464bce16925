// Signal processing: DFT, STFT, window functions, mel weight matrix.
//
// Transforms are plain O(n^2) sums in double; twiddle angles are reduced modulo n first so that
// they stay exact for long signals.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

constexpr double kPi = 3.14159265358979323846;

// An int32/int64 scalar (rank 0 or one element).
Status IntScalar(const Tensor* t, const char* what, int64_t* out) {
  if (!t || t->NumElements() != 1 || t->rank() > 1) {
    return Status::Error(std::string(what) + " must be an integer scalar");
  }
  if (t->dtype == DType::kInt64) {
    *out = t->Data<int64_t>()[0];
  } else if (t->dtype == DType::kInt32) {
    *out = t->Data<int32_t>()[0];
  } else {
    return Status::Error(std::string(what) + " must be int32 or int64");
  }
  return Status::Ok();
}

Status FloatScalar(const Tensor* t, const char* what, double* out) {
  if (!t || t->NumElements() != 1 || t->rank() > 1) {
    return Status::Error(std::string(what) + " must be a scalar");
  }
  return VisitNumeric(t->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *out = static_cast<double>(Load(t->Data<T>()[0]));
    return Status::Ok();
  });
}

// Stores doubles in a numeric tensor (integers: truncated toward zero, clamped to the type).
void WriteNumbers(Tensor* t, const std::vector<double>& v) {
  (void)VisitNumeric(t->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    for (size_t i = 0; i < v.size(); ++i) {
      double x = v[i];
      if constexpr (std::is_integral_v<C>) {
        if (std::isnan(x)) x = 0;
        double lo = static_cast<double>(std::numeric_limits<C>::lowest());
        double hi = static_cast<double>(std::numeric_limits<C>::max());
        C c = x <= lo   ? std::numeric_limits<C>::lowest()
              : x >= hi ? std::numeric_limits<C>::max()
                        : static_cast<C>(x);
        t->MutableData<T>()[i] = c;
      } else {
        t->MutableData<T>()[i] = Store<T>(static_cast<C>(x));
      }
    }
    return Status::Ok();
  });
}

// e^{sign * 2 pi i k t / n} as (cos, sin).
void Twiddle(int64_t k, int64_t t, int64_t n, double sign, double* c, double* s) {
  // (k * t) mod n without overflow for the sizes a tensor can have.
  unsigned __int128 kt = static_cast<unsigned __int128>(k) * static_cast<unsigned __int128>(t);
  int64_t m = static_cast<int64_t>(kt % static_cast<unsigned __int128>(n));
  double a = sign * 2 * kPi * static_cast<double>(m) / static_cast<double>(n);
  *c = std::cos(a);
  *s = std::sin(a);
}

Status Dft(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor* tlen = ctx.input(1);
  bool inverse = ctx.attrs().Bool("inverse", false);
  bool onesided = ctx.attrs().Bool("onesided", false);
  bool irfft = inverse && onesided;
  int r = x.rank();
  if (r < 2) return Status::Error("dft input must have rank >= 2");
  int64_t comps = x.shape[r - 1];
  if (comps != 1 && comps != 2) return Status::Error("dft input's last dim must be 1 or 2");
  int64_t axis;
  QUILT_RETURN_IF_ERROR(IntScalar(ctx.input(2), "axis", &axis));
  if (!((axis >= -r && axis <= -2) || (axis >= 0 && axis <= r - 2))) {
    return Status::Error("dft axis " + std::to_string(axis) + " is out of range");
  }
  if (axis < 0) axis += r;
  int64_t dim = x.shape[axis];
  int64_t n;
  if (!Absent(tlen)) {
    QUILT_RETURN_IF_ERROR(IntScalar(tlen, "dft_length", &n));
    if (n < 1) return Status::Error("dft_length must be positive");
  } else {
    n = irfft ? 2 * (dim - 1) : dim;
    if (n < 1) return Status::Error("the dft length would be " + std::to_string(n));
  }
  if (onesided && !inverse && comps != 1) {
    return Status::Error("a one-sided forward dft needs real input");
  }
  if (irfft && comps != 2) return Status::Error("a one-sided inverse dft needs complex input");
  Shape out = x.shape;
  out[axis] = onesided && !inverse ? n / 2 + 1 : n;
  out[r - 1] = irfft ? 1 : 2;
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  std::vector<double> in;
  QUILT_RETURN_IF_ERROR(ReadFloats(x, &in));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int d = static_cast<int>(axis) + 1; d < r - 1; ++d) inner *= x.shape[d];
  int64_t bins = out[axis], ocomps = out[r - 1];
  std::vector<double> res(outer * bins * inner * ocomps);
  double sign = inverse ? 1.0 : -1.0;
  auto value = [&](int64_t o, int64_t t, int64_t i, double* re, double* im) {
    if (t >= dim) {
      *re = *im = 0;
      return;
    }
    const double* p = &in[((o * dim + t) * inner + i) * comps];
    *re = p[0];
    *im = comps == 2 ? p[1] : 0.0;
  };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < bins; ++k) {
        double sr = 0, si = 0;
        for (int64_t t = 0; t < n; ++t) {
          double re, im;
          if (irfft) {
            // The full Hermitian spectrum from its first n / 2 + 1 bins.
            if (t <= n / 2) {
              value(o, t, i, &re, &im);
            } else {
              value(o, n - t, i, &re, &im);
              im = -im;
            }
          } else {
            value(o, t, i, &re, &im);
          }
          double c, s;
          Twiddle(k, t, n, sign, &c, &s);
          sr += re * c - im * s;
          si += re * s + im * c;
        }
        if (inverse) {
          sr /= static_cast<double>(n);
          si /= static_cast<double>(n);
        }
        double* q = &res[((o * bins + k) * inner + i) * ocomps];
        q[0] = sr;
        if (ocomps == 2) q[1] = si;
      }
    }
  }
  WriteNumbers(y, res);
  return Status::Ok();
}

Status Stft(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor* twin = ctx.input(2);
  const Tensor* tlen = ctx.input(3);
  bool onesided = ctx.attrs().Bool("onesided", true);
  if (x.rank() != 3 || (x.shape[2] != 1 && x.shape[2] != 2)) {
    return Status::Error("stft signal must be [batch, length, 1 or 2]");
  }
  if (onesided && x.shape[2] != 1) return Status::Error("one-sided stft needs a real signal");
  int64_t step;
  QUILT_RETURN_IF_ERROR(IntScalar(ctx.input(1), "frame_step", &step));
  if (step < 1) return Status::Error("frame_step must be positive");
  int64_t B = x.shape[0], L = x.shape[1], comps = x.shape[2];
  bool has_win = !Absent(twin);
  int64_t fl;
  if (!Absent(tlen)) {
    QUILT_RETURN_IF_ERROR(IntScalar(tlen, "frame_length", &fl));
  } else {
    fl = has_win ? twin->NumElements() : L;
  }
  if (fl < 1 || fl > L) return Status::Error("frame_length must be in [1, signal length]");
  std::vector<double> win(fl, 1.0);
  if (has_win) {
    if (twin->rank() != 1 || twin->shape[0] != fl) {
      return Status::Error("window must have frame_length points");
    }
    QUILT_RETURN_IF_ERROR(ReadFloats(*twin, &win));
  }
  int64_t frames = (L - fl) / step + 1;
  int64_t bins = onesided ? fl / 2 + 1 : fl;
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, {B, frames, bins, 2}, &y));
  std::vector<double> in;
  QUILT_RETURN_IF_ERROR(ReadFloats(x, &in));
  std::vector<double> res(B * frames * bins * 2);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t k = 0; k < bins; ++k) {
        double sr = 0, si = 0;
        for (int64_t t = 0; t < fl; ++t) {
          const double* p = &in[(b * L + f * step + t) * comps];
          double re = p[0] * win[t], im = comps == 2 ? p[1] * win[t] : 0.0;
          double c, s;
          Twiddle(k, t, fl, -1.0, &c, &s);
          sr += re * c - im * s;
          si += re * s + im * c;
        }
        res[((b * frames + f) * bins + k) * 2] = sr;
        res[((b * frames + f) * bins + k) * 2 + 1] = si;
      }
    }
  }
  WriteNumbers(y, res);
  return Status::Ok();
}

enum class WindowKind { kHann, kHamming, kBlackman };

template <WindowKind kKind>
Status Window(KernelContext& ctx) {
  int64_t size;
  QUILT_RETURN_IF_ERROR(IntScalar(ctx.input(0), "size", &size));
  if (size < 0) return Status::Error("window size must not be negative");
  bool periodic = ctx.attrs().Bool("periodic", true);
  DType dt = ctx.attrs().Dtype("output_datatype", DType::kFloat32);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, dt, {size}, &y));
  std::vector<double> w(size);
  int64_t denom = periodic ? size : size - 1;
  for (int64_t i = 0; i < size; ++i) {
    double a = denom > 0 ? 2 * kPi * static_cast<double>(i) / static_cast<double>(denom) : 0.0;
    switch (kKind) {
      case WindowKind::kHann:
        w[i] = 0.5 - 0.5 * std::cos(a);
        break;
      case WindowKind::kHamming:
        w[i] = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(a);
        break;
      case WindowKind::kBlackman:
        w[i] = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
        break;
    }
  }
  WriteNumbers(y, w);
  return Status::Ok();
}

Status MelWeightMatrix(KernelContext& ctx) {
  int64_t mel_bins, dft_length, rate;
  QUILT_RETURN_IF_ERROR(IntScalar(ctx.input(0), "num_mel_bins", &mel_bins));
  QUILT_RETURN_IF_ERROR(IntScalar(ctx.input(1), "dft_length", &dft_length));
  QUILT_RETURN_IF_ERROR(IntScalar(ctx.input(2), "sample_rate", &rate));
  double lower, upper;
  QUILT_RETURN_IF_ERROR(FloatScalar(ctx.input(3), "lower_edge_hertz", &lower));
  QUILT_RETURN_IF_ERROR(FloatScalar(ctx.input(4), "upper_edge_hertz", &upper));
  if (mel_bins < 1 || dft_length < 1 || rate < 1) {
    return Status::Error("num_mel_bins, dft_length and sample_rate must be positive");
  }
  DType dt = ctx.attrs().Dtype("output_datatype", DType::kFloat32);
  int64_t spec_bins = dft_length / 2 + 1;
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, dt, {spec_bins, mel_bins}, &y));
  // The edges in mel, in float32 like the ONNX reference (float32 edge inputs).
  auto mel = [](double hz) {
    float v = static_cast<float>(std::log1p(static_cast<float>(hz / 700.0)));
    return static_cast<float>(static_cast<float>(2595.0f * v) / std::log(10.0));
  };
  float low_mel = mel(lower), high_mel = mel(upper);
  float step = static_cast<float>(high_mel - low_mel) / static_cast<float>(mel_bins + 2);
  std::vector<int64_t> edges(mel_bins + 2);
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    double m = static_cast<double>(i) * step + low_mel;
    double hz = 700 * std::expm1(m / 2595 * std::log(10.0));
    double bin = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate));
    if (!(bin >= 0 && bin < static_cast<double>(spec_bins))) {
      return Status::Error("mel edge frequency falls outside the spectrogram bins");
    }
    edges[i] = static_cast<int64_t>(bin);
  }
  std::vector<double> out(spec_bins * mel_bins, 0.0);
  for (int64_t i = 0; i < mel_bins; ++i) {
    int64_t lo = edges[i], c = edges[i + 1], hi = edges[i + 2];
    if (c == lo) {
      out[c * mel_bins + i] = 1;
    } else {
      for (int64_t j = lo; j <= c; ++j) {
        out[j * mel_bins + i] = static_cast<double>(j - lo) / static_cast<double>(c - lo);
      }
    }
    if (hi > c) {
      for (int64_t j = c; j < hi; ++j) {
        out[j * mel_bins + i] = static_cast<double>(hi - j) / static_cast<double>(hi - c);
      }
    }
  }
  WriteNumbers(y, out);
  return Status::Ok();
}

constexpr rt::KernelEntry kKernels[] = {
    Kernel("signal.dft", Dft),
    Kernel("signal.stft", Stft),
    Kernel("signal.hann_window", Window<WindowKind::kHann>),
    Kernel("signal.hamming_window", Window<WindowKind::kHamming>),
    Kernel("signal.blackman_window", Window<WindowKind::kBlackman>),
    Kernel("signal.mel_weight_matrix", MelWeightMatrix),
};

}  // namespace

std::span<const rt::KernelEntry> SignalKernels() { return kKernels; }

}  // namespace quilt::cpu

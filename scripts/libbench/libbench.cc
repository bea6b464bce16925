// Times convolutions and a matrix product in oneDNN and XNNPACK (Debian's libdnnl-dev and
// libxnnpack-dev) on one thread, for scripts/measure-libraries.py, which times the same shapes in
// quilt and prints them side by side. Not part of the build: the runtime links neither library.
//
//   libbench conv N C H W O KH KW SH SW PH PW GROUPS
//   libbench matmul M N K
//
// prints one line per engine and layout: "<engine> <layout> min_us median_us", after checking
// that each engine's output matches a float64 reference to 1e-4 of its largest value (else
// "<engine> <layout> wrong").
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int kWarmup = 5;
constexpr int kRuns = 60;

// Min and median of kRuns timed calls of f, in microseconds.
std::pair<double, double> Time(const std::function<void()>& f) {
  for (int i = 0; i < kWarmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < kRuns; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return {t[0], t[t.size() / 2]};
}

void Report(const char* engine, const char* layout, const std::vector<float>& got,
            const std::vector<double>& want, const std::function<void()>& run) {
  // Against the largest output: a sum that cancels keeps the rounding of its terms.
  double scale = 0, worst = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(scale, 1e-30));
  }
  if (!(worst < 1e-4)) {
    std::printf("%s %s wrong %.3g\n", engine, layout, worst);
    return;
  }
  auto [lo, mid] = Time(run);
  std::printf("%s %s %.1f %.1f\n", engine, layout, lo, mid);
}

struct Conv {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, groups;
  int64_t Oh() const { return (h + 2 * ph - kh) / sh + 1; }
  int64_t Ow() const { return (w + 2 * pw - kw) / sw + 1; }
};

int RunConv(const Conv& p) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t cg = p.c / p.groups, og = p.o / p.groups, oh = p.Oh(), ow = p.Ow();
  std::vector<float> x(p.n * p.c * p.h * p.w), wt(p.o * cg * p.kh * p.kw), bias(p.o);
  for (float& v : x) v = u(rng);
  for (float& v : wt) v = u(rng) * 0.1f;
  for (float& v : bias) v = u(rng);
  // The reference in float64, NCHW.
  std::vector<double> want(p.n * p.o * oh * ow);
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t oc = 0; oc < p.o; ++oc)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double s = bias[oc];
          const int64_t g = oc / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < p.kh; ++i)
              for (int64_t j = 0; j < p.kw; ++j) {
                int64_t iy = y * p.sh - p.ph + i, ix = z * p.sw - p.pw + j;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                s += double(x[((b * p.c + g * cg + ci) * p.h + iy) * p.w + ix]) *
                     wt[((oc * cg + ci) * p.kh + i) * p.kw + j];
              }
          want[((b * p.o + oc) * oh + y) * ow + z] = s;
        }

  // oneDNN: NCHW in and out (what quilt's NCHW kernels read and write), then its own choice of
  // layouts ("any": blocked), the reorders into and out of them not timed.
  using namespace dnnl;
  engine eng(engine::kind::cpu, 0);
  stream str(eng);
  memory::dims src_d = {p.n, p.c, p.h, p.w}, dst_d = {p.n, p.o, oh, ow};
  memory::dims w_d = p.groups > 1 ? memory::dims{p.groups, og, cg, p.kh, p.kw}
                                  : memory::dims{p.o, p.c, p.kh, p.kw};
  auto f32 = memory::data_type::f32;
  for (bool any : {false, true}) {
    auto tag = any ? memory::format_tag::any : memory::format_tag::nchw;
    memory::desc src_md(src_d, f32, tag), dst_md(dst_d, f32, tag);
    memory::desc w_md(w_d, f32, memory::format_tag::any), b_md({p.o}, f32, memory::format_tag::a);
    convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, src_md,
                                w_md, b_md, dst_md, {p.sh, p.sw}, {p.ph, p.pw}, {p.ph, p.pw});
    convolution_forward::primitive_desc pd(d, eng);
    memory x_user({src_d, f32, memory::format_tag::nchw}, eng, x.data());
    memory w_user({w_d, f32, p.groups > 1 ? memory::format_tag::goihw : memory::format_tag::oihw},
                  eng, wt.data());
    memory b_mem(b_md, eng, bias.data());
    memory x_mem(pd.src_desc(), eng), w_mem(pd.weights_desc(), eng), y_mem(pd.dst_desc(), eng);
    reorder(x_user, x_mem).execute(str, x_user, x_mem);
    reorder(w_user, w_mem).execute(str, w_user, w_mem);
    convolution_forward conv(pd);
    auto run = [&] {
      conv.execute(str, {{DNNL_ARG_SRC, x_mem},
                         {DNNL_ARG_WEIGHTS, w_mem},
                         {DNNL_ARG_BIAS, b_mem},
                         {DNNL_ARG_DST, y_mem}});
      str.wait();
    };
    run();
    std::vector<float> got(want.size());
    memory y_user({dst_d, f32, memory::format_tag::nchw}, eng, got.data());
    reorder(y_mem, y_user).execute(str, y_mem, y_user);
    str.wait();
    Report("onednn", any ? "own" : "nchw", got, want, run);
  }

  // XNNPACK: NHWC (its only layout), one thread.
  if (xnn_initialize(nullptr) != xnn_status_success) return 1;
  std::vector<float> xh(x.size()), wh(wt.size()), yh(want.size());
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t ch = 0; ch < p.c; ++ch)
      for (int64_t i = 0; i < p.h * p.w; ++i)
        xh[(b * p.h * p.w + i) * p.c + ch] = x[(b * p.c + ch) * p.h * p.w + i];
  // Its kernel: (groups, og, kh, kw, cg).
  for (int64_t oc = 0; oc < p.o; ++oc)
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t i = 0; i < p.kh * p.kw; ++i)
        wh[(oc * p.kh * p.kw + i) * cg + ci] = wt[(oc * cg + ci) * p.kh * p.kw + i];
  xnn_operator_t op = nullptr;
  if (xnn_create_convolution2d_nhwc_f32(p.ph, p.pw, p.ph, p.pw, p.kh, p.kw, p.sh, p.sw, 1, 1,
                                        p.groups, cg, og, p.c, p.o, wh.data(), bias.data(),
                                        -INFINITY, INFINITY, 0, &op) != xnn_status_success ||
      xnn_setup_convolution2d_nhwc_f32(op, p.n, p.h, p.w, xh.data(), yh.data(), nullptr) !=
          xnn_status_success) {
    std::printf("xnnpack nhwc unsupported\n");
    return 0;
  }
  auto run = [&] { xnn_run_operator(op, nullptr); };
  run();
  std::vector<float> got(want.size());
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t oc = 0; oc < p.o; ++oc)
      for (int64_t i = 0; i < oh * ow; ++i)
        got[(b * p.o + oc) * oh * ow + i] = yh[(b * oh * ow + i) * p.o + oc];
  Report("xnnpack", "nhwc", got, want, run);
  xnn_delete_operator(op);
  return 0;
}

int RunMatmul(int64_t m, int64_t n, int64_t k) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(m * k), b(k * n);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  std::vector<double> want(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) want[i * n + j] += double(a[i * k + p]) * b[p * n + j];
  using namespace dnnl;
  engine eng(engine::kind::cpu, 0);
  stream str(eng);
  auto f32 = memory::data_type::f32;
  // A and C row-major; B in oneDNN's own layout (a constant weight, laid out once).
  memory::desc a_md({m, k}, f32, memory::format_tag::ab), c_md({m, n}, f32, memory::format_tag::ab);
  memory::desc b_md({k, n}, f32, memory::format_tag::any);
  matmul::primitive_desc pd(matmul::desc(a_md, b_md, c_md), eng);
  memory a_mem(a_md, eng, a.data()), b_user({{k, n}, f32, memory::format_tag::ab}, eng, b.data());
  memory b_mem(pd.weights_desc(), eng);
  reorder(b_user, b_mem).execute(str, b_user, b_mem);
  std::vector<float> got(m * n);
  memory c_mem(c_md, eng, got.data());
  matmul mm(pd);
  auto run = [&] {
    mm.execute(str, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    str.wait();
  };
  run();
  Report("onednn", "own", got, want, run);
  // XNNPACK: a fully connected layer (its kernel n x k, that is B^T).
  if (xnn_initialize(nullptr) != xnn_status_success) return 1;
  std::vector<float> bt(n * k), c2(m * n);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) bt[j * k + p] = b[p * n + j];
  xnn_operator_t op = nullptr;
  if (xnn_create_fully_connected_nc_f32(k, n, k, n, bt.data(), nullptr, -INFINITY, INFINITY, 0,
                                        &op) != xnn_status_success ||
      xnn_setup_fully_connected_nc_f32(op, m, a.data(), c2.data(), nullptr) != xnn_status_success) {
    std::printf("xnnpack fc unsupported\n");
    return 0;
  }
  auto xrun = [&] { xnn_run_operator(op, nullptr); };
  xrun();
  Report("xnnpack", "rowmajor", c2, want, xrun);
  xnn_delete_operator(op);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> v;
  for (int i = 2; i < argc; ++i) v.push_back(std::atoll(argv[i]));
  std::string what = argc > 1 ? argv[1] : "";
  if (what == "conv" && v.size() == 12) {
    return RunConv({v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]});
  }
  if (what == "matmul" && v.size() == 3) return RunMatmul(v[0], v[1], v[2]);
  std::fprintf(stderr, "usage: libbench conv N C H W O KH KW SH SW PH PW GROUPS | matmul M N K\n");
  return 2;
}

// OpenCL kernels of the convolutions conv2d's tiled kernel (emit.cc) does not cover: nn.conv3d
// (nn.conv1d runs as those tiles, a row of L pixels), and the transposed convolutions of 1 to 3
// spatial dims. The window's constants are baked in, the sizes passed as step dims.
//  - conv: one work-item per output element, the spatial dims padded to three (size 1, kernel
//    1); the window over the input, as targets/cpu/kernels/conv.cc's reference; a fused bias and
//    activation (targets/fuse_epilogue.h) at the end.
//  - transposed: each output element gathers the inputs whose scatter reaches it, i.e. the k with
//    (o + pad_begin - k * dilation) a multiple of the stride, inside the input: the same sum the
//    CPU's scatter makes. In register tiles (emit_util.h's ConvChannelTile, ConvPixelTile): a
//    work-item computes OT output channels of a group by PV outputs along the last spatial dim
//    that share their phase, o2 = f + m * S2 for m < PV (the spatial dims padded to three in
//    front). The taps k2 that reach them are the same for all PV and each reads PV neighbouring
//    inputs: one vector load (lane by lane where it would leave the row) feeding OT fmas. The
//    work-items f, f + 1, ..., f + S2 - 1 cover a block of S2 * PV outputs; the taps along the
//    outer dims are the same for the whole tile. A group's last channel tile is moved back to end
//    where the group ends, overlapping the one before, whose channels it leaves to it.
#include <algorithm>
#include <string>
#include <vector>

#include "targets/opencl/emit_util.h"

namespace quilt::compiler::opencl {
namespace {

struct Window {
  size_t rank = 0;
  std::vector<int64_t> kernel, stride, dilation, pad;  // 3 each (spatial dims padded with 1)
};

// Kernel sizes from the weight's static dims, the rest from the attributes; `same` padding needs
// the input's spatial dims static.
Status MakeWindow(const GraphSpec& g, const StepSpec& step, const std::vector<int>& x,
                  const std::vector<int>& w, bool transposed, Window* win) {
  std::string where = Where(step);
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size()) {
    return Error(where + ": data and weight of 1 to 3 spatial dims expected");
  }
  size_t r = x.size() - 2;
  win->rank = r;
  win->kernel.assign(3, 1);
  for (size_t i = 0; i < r; ++i) {
    std::optional<int64_t> k = StaticDim(g, w[2 + i]);
    if (!k) return Error(where + ": the weight's dims must be static");
    win->kernel[i] = *k;
  }
  std::vector<int64_t> stride = Ints(step.attrs, "strides", r, 1);
  std::vector<int64_t> dilation = Ints(step.attrs, "dilation", r, 1);
  std::vector<int64_t> padding = Ints(step.attrs, "padding", 2 * r, 0);
  win->stride.assign(3, 1);
  win->dilation.assign(3, 1);
  win->pad.assign(3, 0);
  const std::string* auto_pad = step.attrs.Get<std::string>("auto_pad");
  std::string mode = auto_pad && !transposed ? *auto_pad : "NOTSET";
  for (size_t i = 0; i < r; ++i) {
    if (stride[i] < 1 || dilation[i] < 1) return Error(where + ": strides and dilation below 1");
    win->stride[i] = stride[i];
    win->dilation[i] = dilation[i];
    if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      std::optional<int64_t> in = StaticDim(g, x[2 + i]);
      if (!in) return Error(where + ": SAME padding needs static spatial dims");
      int64_t out = (*in + stride[i] - 1) / stride[i];
      int64_t dk = (win->kernel[i] - 1) * dilation[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * stride[i] + dk - *in);
      win->pad[i] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (mode != "VALID") {
      win->pad[i] = padding[i];
    }
  }
  return {};
}

// Passes the sizes: the grid, then N, C, O and the input and output spatial dims (3 each).
void PassSizes(GraphSpec& g, KernelText& k, const std::vector<int>& x, const std::vector<int>& y) {
  k.Long("total", Product(g, y, 0));
  k.Long("C", x[1]);
  k.Long("O", y[1]);
  for (size_t i = 0; i < 3; ++i) {
    std::string is = std::to_string(i);
    k.Long("I" + is, i + 2 < x.size() ? x[i + 2] : IntDim(g, 1));
    k.Long("Y" + is, i + 2 < y.size() ? y[i + 2] : IntDim(g, 1));
  }
}

// The window's constants and the output element's coordinates (b, o, o0, o1, o2).
std::string Prologue(const Window& w, int64_t groups) {
  std::string s = "  long t = get_global_id(0);\n  if (t >= total) return;\n";
  s += "  const long G = " + Int(groups) + ";\n";
  for (size_t i = 0; i < 3; ++i) {
    std::string is = std::to_string(i);
    s += "  const long K" + is + " = " + Int(w.kernel[i]) + ", S" + is + " = " + Int(w.stride[i]) +
         ", D" + is + " = " + Int(w.dilation[i]) + ", P" + is + " = " + Int(w.pad[i]) + ";\n";
  }
  s += R"(  long o2 = t % Y2, o1 = t / Y2 % Y1, o0 = t / (Y2 * Y1) % Y0;
  long o = t / (Y2 * Y1 * Y0) % O, b = t / (Y2 * Y1 * Y0 * O);
  float acc = 0.0f;
)";
  return s;
}

int64_t Groups(const StepSpec& step) {
  const int64_t* groups = step.attrs.Get<int64_t>("groups");
  return groups ? *groups : 1;
}

}  // namespace

Status EmitConv(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const std::vector<int>& x = k.In(0).dims;
  const std::vector<int>& w = k.In(1).dims;
  Window win;
  QUILT_TRY(MakeWindow(g, step, x, w, false, &win));
  std::optional<int64_t> cg = StaticDim(g, w[1]);
  if (!cg) return Error(Where(step) + ": the weight's dims must be static");
  PassSizes(g, k, x, k.Out().dims);
  std::string body = Prologue(win, Groups(step));
  body += "  const long CG = " + Int(*cg) + ";\n";
  const bool half = IsHalf(k.In(0));
  const std::string T = Pointee(half);
  body += "  long c0 = o / (O / G) * CG;\n  for (long c = 0; c < CG; ++c) {\n";
  body += "    __global const " + T + "* xc = x0 + (b * C + c0 + c) * I0 * I1 * I2;\n";
  body += "    __global const " + T + "* wc = x1 + (o * CG + c) * K0 * K1 * K2;\n";
  body += R"(    for (long k0 = 0; k0 < K0; ++k0) {
      long i0 = o0 * S0 - P0 + k0 * D0;
      if (i0 < 0 || i0 >= I0) continue;
      for (long k1 = 0; k1 < K1; ++k1) {
        long i1 = o1 * S1 - P1 + k1 * D1;
        if (i1 < 0 || i1 >= I1) continue;
        for (long k2 = 0; k2 < K2; ++k2) {
          long i2 = o2 * S2 - P2 + k2 * D2;
          if (i2 < 0 || i2 >= I2) continue;
)";
  body += "          acc = fma(" + LoadFloat(half, "xc", "(i0 * I1 + i1) * I2 + i2") + ", " +
          LoadFloat(half, "wc", "(k0 * K1 + k1) * K2 + k2") + ", acc);\n";
  body += "        }\n      }\n    }\n  }\n  {\n    float v = acc;\n";
  body += ConvEpilogue(step, half) + "    " + k.Write(0, "t", "v") + ";\n  }\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

Status EmitConvTranspose(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const std::vector<int>& x = k.In(0).dims;
  const std::vector<int>& w = k.In(1).dims;
  const std::vector<int>& y = k.Out().dims;
  Window win;
  QUILT_TRY(MakeWindow(g, step, x, w, true, &win));
  std::optional<int64_t> c = StaticDim(g, w[0]), og = StaticDim(g, w[1]);
  if (!c || !og) return Error(Where(step) + ": the weight's dims must be static");
  int64_t groups = Groups(step);
  if (groups < 1 || *c % groups != 0) {
    return Error(Where(step) + ": groups must divide the input channels");
  }
  int64_t ot = ConvChannelTile(*og), oq = (*og + ot - 1) / ot;
  // The spatial dims padded to three in front (size 1, kernel 1), so that dim 2 is the last.
  size_t lead = 3 - win.rank;
  Window pad3 = win;
  int one = IntDim(g, 1);
  std::vector<int> in(3, one), out(3, one);
  for (size_t i = 0; i < 3; ++i) {
    bool real = i >= lead;
    pad3.kernel[i] = real ? win.kernel[i - lead] : 1;
    pad3.stride[i] = real ? win.stride[i - lead] : 1;
    pad3.dilation[i] = real ? win.dilation[i - lead] : 1;
    pad3.pad[i] = real ? win.pad[i - lead] : 0;
    if (real) in[i] = x[2 + i - lead], out[i] = y[2 + i - lead];
  }
  int64_t s2 = pad3.stride[2];
  // PV outputs of one phase along the last dim, of ceil(Y2 / S2).
  std::optional<int64_t> last = StaticDim(g, out[2]);
  int64_t pv = ConvPixelTile(last ? std::optional<int64_t>((*last + s2 - 1) / s2) : std::nullopt);
  std::string vt = "float" + std::to_string(pv), vn = std::to_string(pv);
  const bool half = IsHalf(k.In(0));
  const std::string T = Pointee(half);
  int bq = CeilDiv(g, out[2], s2 * pv);  // blocks of S2 * PV outputs along the last dim
  std::vector<int> grid = {y[0], IntDim(g, groups * oq), out[0], out[1], IntDim(g, s2), bq};
  k.Long("total", Product(g, grid, 0));
  k.Long("C", x[1]);
  k.Long("O", y[1]);
  for (size_t i = 0; i < 3; ++i) {
    std::string is = std::to_string(i);
    k.Long("I" + is, in[i]);
    k.Long("Y" + is, out[i]);
  }
  k.Long("BQ", bq);
  std::string body = "  long t = get_global_id(0);\n  if (t >= total) return;\n";
  for (size_t i = 0; i < 3; ++i) {
    std::string is = std::to_string(i);
    body += "  const long K" + is + " = " + Int(pad3.kernel[i]) + ", S" + is + " = " +
            Int(pad3.stride[i]) + ", D" + is + " = " + Int(pad3.dilation[i]) + ", P" + is + " = " +
            Int(pad3.pad[i]) + ";\n";
  }
  body += "  const long G = " + Int(groups) + ", CG = " + Int(*c / groups) + ", OG = " + Int(*og) +
          ", OT = " + Int(ot) + ", OQ = " + Int(oq) + ", PV = " + Int(pv) + ";\n";
  body += R"(  long tq = t % (S2 * BQ), r = t / (S2 * BQ);
  long o2f = tq / S2 * S2 * PV + tq % S2;
  long o1 = r % Y1, o0 = r / Y1 % Y0;
  long grp = r / (Y1 * Y0) % (G * OQ) / OQ, ogs = r / (Y1 * Y0) % OQ * OT;
  long b = r / (Y1 * Y0 * G * OQ);
  long og0 = min(ogs, OG - OT);
)";
  body += "  __global const " + T + "* xb = x0 + (b * C + grp * CG) * I0 * I1 * I2;\n";
  body += "  __global const " + T + "* wb = x1 + (grp * CG * OG + og0) * K0 * K1 * K2;\n";
  for (int64_t r = 0; r < ot; ++r) body += "  " + vt + " a" + std::to_string(r) + " = 0.0f;\n";
  body += "  for (long c = 0; c < CG; ++c) {\n";
  body += "    __global const " + T + "* xc = xb + c * I0 * I1 * I2;\n";
  body += "    __global const " + T + "* wc = wb + c * OG * K0 * K1 * K2;\n";
  body += R"(    for (long k0 = 0; k0 < K0; ++k0) {
      long n0 = o0 + P0 - k0 * D0;
      if (n0 < 0 || n0 % S0 != 0 || n0 / S0 >= I0) continue;
      for (long k1 = 0; k1 < K1; ++k1) {
        long n1 = o1 + P1 - k1 * D1;
        if (n1 < 0 || n1 % S1 != 0 || n1 / S1 >= I1) continue;
)";
  body += "        __global const " + T + "* xr = xc + (n0 / S0 * I1 + n1 / S1) * I2;\n";
  body += "        __global const " + T + "* wr = wc + (k0 * K1 + k1) * K2;\n";
  body += "        " + vt + " v;\n";
  // Tap k2: the PV inputs from (o2f + P2 - k2 * D2) / S2 on, where that divides (for all PV
  // outputs alike), times each channel's weight.
  auto tap = [&](const std::string& k2, const std::string& indent) {
    std::string s = indent + "{\n" + indent + "  long n2 = o2f + P2 - " + k2 + " * D2;\n";
    s += indent + "  if (n2 % S2 == 0) {\n";
    s += indent + "    long i2 = n2 / S2;\n";
    s += indent + "    if (i2 >= 0 && i2 + PV <= I2) {\n";
    s += indent + "      v = " + LoadVector(half, pv, "0", "xr + i2") + ";\n";
    s += indent + "    } else {\n";
    s += indent + "      float e[" + vn + "];\n";
    s += indent + "      for (int q = 0; q < PV; ++q) {\n";
    s += indent + "        e[q] = i2 + q >= 0 && i2 + q < I2 ? " + LoadFloat(half, "xr", "i2 + q") +
         " : 0.0f;\n";
    s += indent + "      }\n";
    s += indent + "      v = vload" + vn + "(0, e);\n" + indent + "    }\n";
    for (int64_t r = 0; r < ot; ++r) {
      std::string a = "a" + std::to_string(r);
      std::string wi = Int(r * pad3.kernel[0] * pad3.kernel[1] * pad3.kernel[2]) + " + " + k2;
      s += indent + "    " + a + " = fma(v, (" + vt + ")(" + LoadFloat(half, "wr", wi) + "), " + a +
           ");\n";
    }
    return s + indent + "  }\n" + indent + "}\n";
  };
  if (pad3.kernel[2] <= kConvUnrolledTaps) {
    for (int64_t j = 0; j < pad3.kernel[2]; ++j) body += tap(Int(j), "        ");
  } else {
    body +=
        "        for (long k2 = 0; k2 < K2; ++k2) {\n" + tap("k2", "          ") + "        }\n";
  }
  body += "      }\n    }\n  }\n";
  body += "  float res[" + std::to_string(ot * pv) + "];\n";
  for (int64_t r = 0; r < ot; ++r) {
    body += "  vstore" + vn + "(a" + std::to_string(r) + ", " + std::to_string(r) + ", res);\n";
  }
  body += "  for (long r = 0; r < OT; ++r) {\n";
  body += "    if (og0 + r < ogs) continue;  // the tile before this one stores it\n";
  body += "    __global " + T +
          "* yr = y + (((b * O + grp * OG + og0 + r) * Y0 + o0) * Y1 + o1) * Y2;\n";
  body += "    for (int q = 0; q < PV; ++q) {\n      long o2 = o2f + q * S2;\n";
  body += "      if (o2 < Y2) " + StoreFloat(half, "yr", "o2", "res[r * PV + q]") + ";\n";
  body += "    }\n  }\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

// Max, average and Lp pooling over 1 to 3 spatial dims (nn.max_pool1d / 3d, nn.avg_pool1d / 3d,
// nn.lp_pool1d / 2d / 3d), as targets/cpu/kernels/pool.cc computes them: padded cells never take
// part; a max starts from the first cell inside; an average divides by the cells inside, or
// (count_include_pad) by those inside the input or its explicit padding.
Status EmitPool(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  std::string where = Where(step);
  const std::vector<int>& x = k.In(0).dims;
  const std::vector<int>& y = k.Out().dims;
  if (x.size() < 3 || x.size() > 5 || y.size() != x.size()) {
    return Error(where + ": data of 1 to 3 spatial dims expected");
  }
  size_t r = x.size() - 2;
  std::vector<int64_t> size = Ints(step.attrs, "pool_size", r, 1);
  std::vector<int64_t> stride = Ints(step.attrs, "strides", r, 1);
  std::vector<int64_t> dilation = Ints(step.attrs, "dilation", r, 1);
  std::vector<int64_t> padding = Ints(step.attrs, "padding", 2 * r, 0);
  const std::string* auto_pad = step.attrs.Get<std::string>("auto_pad");
  std::string mode = auto_pad ? *auto_pad : "NOTSET";
  std::vector<int64_t> kernel(3, 1), st(3, 1), dil(3, 1), pb(3, 0), pe(3, 0);
  for (size_t i = 0; i < r; ++i) {
    kernel[i] = size[i], st[i] = stride[i], dil[i] = dilation[i];
    if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      std::optional<int64_t> in = StaticDim(g, x[2 + i]);
      if (!in) return Error(where + ": SAME padding needs static spatial dims");
      int64_t out = (*in + st[i] - 1) / st[i];
      int64_t dk = (kernel[i] - 1) * dil[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * st[i] + dk - *in);
      pb[i] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    } else if (mode != "VALID") {
      pb[i] = padding[i];
      pe[i] = padding[r + i];
    }
  }
  PassSizes(g, k, x, y);
  std::string body = "  long t = get_global_id(0);\n  if (t >= total) return;\n";
  for (size_t i = 0; i < 3; ++i) {
    std::string is = std::to_string(i);
    body += "  const long K" + is + " = " + Int(kernel[i]) + ", S" + is + " = " + Int(st[i]) +
            ", D" + is + " = " + Int(dil[i]) + ", P" + is + " = " + Int(pb[i]) + ", E" + is +
            " = " + Int(pe[i]) + ";\n";
  }
  body += R"(  long o2 = t % Y2, o1 = t / Y2 % Y1, o0 = t / (Y2 * Y1) % Y0;
  long plane = t / (Y2 * Y1 * Y0);
  float acc = 0.0f;
  long cells = 0;
)";
  const bool half = IsHalf(k.In(0));
  body += "  __global const " + Pointee(half) + "* xp = x0 + plane * I0 * I1 * I2;\n";
  std::string op = step.kernel;
  bool max = op.find("max_pool") != std::string::npos;
  bool lp = op.find("lp_pool") != std::string::npos;
  const double* p_attr = step.attrs.Get<double>("p");
  double p = p_attr ? *p_attr : 2.0;
  if (lp && !(p > 0)) return Error(where + ": p must be positive");
  if (max) body += "  acc = -INFINITY;\n";
  body += R"(  for (long k0 = 0; k0 < K0; ++k0) {
    long i0 = o0 * S0 - P0 + k0 * D0;
    if (i0 < 0 || i0 >= I0) continue;
    for (long k1 = 0; k1 < K1; ++k1) {
      long i1 = o1 * S1 - P1 + k1 * D1;
      if (i1 < 0 || i1 >= I1) continue;
      for (long k2 = 0; k2 < K2; ++k2) {
        long i2 = o2 * S2 - P2 + k2 * D2;
        if (i2 < 0 || i2 >= I2) continue;
)";
  body += "        float v = " + LoadFloat(half, "xp", "(i0 * I1 + i1) * I2 + i2") + ";\n";
  if (max) {
    body += "        if (cells == 0 || v > acc) acc = v;\n";
  } else if (lp) {
    body += "        acc += pow(fabs(v), " + FloatLiteral(p) + ");\n";
  } else {
    body += "        acc += v;\n";
  }
  body += "        ++cells;\n      }\n    }\n  }\n";
  if (max) {
    body += "  " + k.Write(0, "t", "acc") + ";\n";
  } else if (lp) {
    body += "  " + k.Write(0, "t", "pow(acc, " + FloatLiteral(1.0 / p) + ")") + ";\n";
  } else {
    const bool* include = step.attrs.Get<bool>("count_include_pad");
    if (include && *include) {
      // The window's cells inside the input or its explicit padding, per dim.
      body += "  cells = 1;\n";
      for (size_t i = 0; i < 3; ++i) {
        std::string is = std::to_string(i);
        body += "  {\n    long n = 0;\n    for (long k = 0; k < K" + is +
                "; ++k) {\n      long i = o" + is + " * S" + is + " - P" + is + " + k * D" + is +
                ";\n      if (i >= -P" + is + " && i < I" + is + " + E" + is +
                ") ++n;\n    }\n    cells *= n;\n  }\n";
      }
    }
    body += "  " + k.Write(0, "t", "cells > 0 ? acc / (float)cells : 0.0f") + ";\n";
  }
  k.Finish(name, body, kLocalSize, code);
  return {};
}

// Adaptive average and max pooling over 1 to 3 spatial dims: output cell i of n over an input of
// m covers [floor(i * m / n), ceil((i + 1) * m / n)), as targets/cpu/kernels/pool.cc computes it
// (a max starts from the first cell). Averages of whole planes of kGroupRowLength or more
// elements (a global average pool) take a work-group per plane.
Status EmitAdaptivePool(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const std::vector<int>& x = k.In(0).dims;
  const std::vector<int>& y = k.Out().dims;
  if (x.size() < 3 || x.size() > 5 || y.size() != x.size()) {
    return Error(Where(step) + ": data of 1 to 3 spatial dims expected");
  }
  bool max = step.kernel.find("max") != std::string::npos;
  // Average pooling of whole planes of kGroupRowLength or more elements: a work-group per plane.
  int64_t plane = 1;
  for (size_t i = 2; i < x.size() && plane > 0; ++i) {
    std::optional<int64_t> in = StaticDim(g, x[i]), out = StaticDim(g, y[i]);
    plane = in && out == 1 ? plane * *in : 0;
  }
  if (!max && plane >= kGroupRowLength) {
    std::string n = Int(plane);
    std::string body = GroupPerRow(k, g, Product(g, y, 0)) + "  float acc = 0.0f;\n" +
                       GroupLoop(n) + " acc += " + k.Read(0, "r * " + n + " + j") + ";\n" +
                       GroupReduce("acc", false) + "  if (l == 0) " +
                       k.Write(0, "r", "acc / (float)" + n) + ";\n";
    k.Finish(name, body, kLocalSize, code);
    return {};
  }
  PassSizes(g, k, x, y);
  const bool half = IsHalf(k.In(0));
  std::string body = R"(  long t = get_global_id(0);
  if (t >= total) return;
  long o2 = t % Y2, o1 = t / Y2 % Y1, o0 = t / (Y2 * Y1) % Y0;
)";
  body += "  __global const " + Pointee(half) + "* xp = x0 + t / (Y2 * Y1 * Y0) * I0 * I1 * I2;\n";
  body += R"(  float acc = 0.0f;
  long cells = 0;
  for (long i0 = o0 * I0 / Y0; i0 < ((o0 + 1) * I0 + Y0 - 1) / Y0; ++i0) {
    for (long i1 = o1 * I1 / Y1; i1 < ((o1 + 1) * I1 + Y1 - 1) / Y1; ++i1) {
      for (long i2 = o2 * I2 / Y2; i2 < ((o2 + 1) * I2 + Y2 - 1) / Y2; ++i2) {
)";
  body += "        float v = " + LoadFloat(half, "xp", "(i0 * I1 + i1) * I2 + i2") + ";\n";
  body += max ? "        if (cells == 0 || v > acc) acc = v;\n" : "        acc += v;\n";
  body += "        ++cells;\n      }\n    }\n  }\n";
  body += "  " +
          k.Write(0, "t",
                  max ? "cells > 0 ? acc : -INFINITY" : "cells > 0 ? acc / (float)cells : 0.0f") +
          ";\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

}  // namespace quilt::compiler::opencl

// The OpenCL kernels of nn.conv2d (NCHW, in register tiles), of nn.conv1d as the same tiles over
// rows of one pixel's height, and of nn.max_pool2d / nn.avg_pool2d.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "targets/opencl/emit_util.h"

namespace quilt::compiler::opencl {

Status PadBegin(const GraphSpec& g, const StepSpec& step, const ValueSpec& x, int64_t kernel,
                int64_t stride, int64_t dilation, int i, int64_t* pad, size_t spatial) {
  const std::string* auto_pad = step.attrs.Get<std::string>("auto_pad");
  std::string mode = auto_pad ? *auto_pad : "NOTSET";
  if (mode == "VALID") {
    *pad = 0;
  } else if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    std::optional<int64_t> in = StaticDim(g, x.dims[static_cast<size_t>(2 + i)]);
    if (!in) return Error("R." + step.kernel + ": SAME padding needs static spatial dims");
    int64_t out = (*in + stride - 1) / stride;
    int64_t total = std::max<int64_t>(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - *in);
    *pad = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
  } else {
    *pad = Ints(step.attrs, "padding", 2 * spatial, 0)[static_cast<size_t>(i)];
  }
  return {};
}

namespace {

// nn.conv2d, NCHW, in register tiles: each work-item computes OT output channels (of one group)
// by PV neighbouring output pixels of one row, each channel's PV pixels one OpenCL vector (PoCL
// compiles a float16 to one AVX-512 register). Each tap's PV inputs are one vector load that feeds
// OT fmas, each with one weight broadcast; the accumulators and the channel and tap loops are
// written out, so that they stay in registers. The window's constants are baked in; the sum over
// (c, i, j) is in the CPU reference's order.
//  - Tiles: OT = ConvChannelTile(OG) and PV = ConvPixelTile(OW) (emit_util.h). A tile of one
//    channel (a depthwise conv) spans kConvRows output rows instead of one: each input row's tap
//    vectors then feed every output row whose window reads that row. A group's, a row's or a
//    column's last tile is moved back to end where they end, overlapping the tile before it,
//    whose channels, rows and pixels it leaves to it: every tile loads whole vectors.
//  - Edges: a tile whose window stays inside the input row takes vector loads (stride 1: one
//    load; stride 2: the even lanes of 2 * PV; others: PV scalars). A tile that overlaps the
//    padding (a second copy of the loops, chosen once per work-item) loads the same vectors, which
//    reach into the neighbouring rows, and zeroes the lanes outside the row (a select); where
//    those vectors would leave the input tensor (its first and last rows), it reads them from a
//    copy of the row's span, zero outside the row. Window rows outside the input are skipped.
//    Where the dims are static and no tile leaves its row, the kernel has no edge code.
//  - A 1 x 1 conv of stride 1 without padding runs as the same kernel over each image taken as
//    one row of H * W pixels.
// A fused bias and activation (ConvEpilogue) on each channel's vector.
struct Conv2dWindow {
  int64_t kh, kw, sh, sw, dh, dw, ph, pw;
};

// PV lanes at p[off], p[off + s], ..., read as one vector of floats (p: a pointer into an input
// row; to half where `half`).
std::string TapVector(int64_t pv, int64_t s, const std::string& p, const std::string& off,
                      bool half) {
  std::string n = std::to_string(pv), at = p + " + " + off;
  if (s == 1) return LoadVector(half, pv, "0", at);
  if (s == 2 && pv == 16) {
    return "(float16)(" + LoadVector(half, 16, "0", at) + ".even, " +
           LoadVector(half, 16, "0", at + " + 16") + ".even)";
  }
  if (s == 2) return LoadVector(half, 2 * pv, "0", at) + ".even";
  std::string v = "(float" + n + ")(";
  for (int64_t q = 0; q < pv; ++q) {
    v += (q ? ", " : "") + LoadFloat(half, p, off + " + " + Int(q * s));
  }
  return v + ")";
}

// How many elements past a tap's first TapVector reads.
int64_t TapReach(int64_t pv, int64_t s) { return s == 2 ? 2 * pv : (pv - 1) * s + 1; }

// Emits the tiled kernel over input dims (C, H, W), output dims (O, OH, OW); `cg` input channels
// and `og` output channels per group.
void EmitConv2dTiles(GraphSpec& g, StepSpec& step, KernelText& k, const Conv2dWindow& win,
                     int64_t groups, int64_t cg, int64_t og, const std::vector<int>& in,
                     const std::vector<int>& out, const std::string& name, std::string* code) {
  int64_t ot = ConvChannelTile(og), oq = (og + ot - 1) / ot;
  int64_t pv = ConvPixelTile(StaticDim(g, out[3]));
  std::optional<int64_t> oh_static = StaticDim(g, out[2]);
  int64_t rh = ot == 1 && oh_static && *oh_static >= kConvRows ? kConvRows : 1;
  std::string vt = "float" + std::to_string(pv), vn = std::to_string(pv);
  const bool half = IsHalf(k.In(0));
  const std::string T = Pointee(half);
  int owq = CeilDiv(g, out[3], pv), ohq = CeilDiv(g, out[2], rh);
  k.Long("total", MulDim(g, MulDim(g, out[0], IntDim(g, groups * oq)), MulDim(g, ohq, owq)));
  k.Long("C", in[1]);
  k.Long("H", in[2]);
  k.Long("W", in[3]);
  k.Long("O", out[1]);
  k.Long("OH", out[2]);
  k.Long("OW", out[3]);
  k.Long("OWQ", owq);
  k.Long("OHQ", ohq);
  k.Long("XN", Product(g, in, 0));
  std::string body = "  long t = get_global_id(0);\n  if (t >= total) return;\n";
  body += "  const long KH = " + Int(win.kh) + ", KW = " + Int(win.kw) + ", SH = " + Int(win.sh) +
          ", SW = " + Int(win.sw) + ", DH = " + Int(win.dh) + ", DW = " + Int(win.dw) +
          ", PH = " + Int(win.ph) + ", PW = " + Int(win.pw) + ";\n";
  body += "  const long G = " + Int(groups) + ", CG = " + Int(cg) + ", OG = " + Int(og) +
          ", OT = " + Int(ot) + ", OQ = " + Int(oq) + ", PV = " + Int(pv) + ", RH = " + Int(rh) +
          ";\n";
  body += R"(  long ows = t % OWQ * PV;
  long ohs = t / OWQ % OHQ * RH;
  long grp = t / (OWQ * OHQ) % (G * OQ) / OQ;
  long ogs = t / (OWQ * OHQ) % OQ * OT;
  long b = t / (OWQ * OHQ * G * OQ);
  long og0 = min(ogs, OG - OT), ow0 = max(min(ows, OW - PV), 0L), oh0 = max(min(ohs, OH - RH), 0L);
  long ih0 = oh0 * SH - PH, iw0 = ow0 * SW - PW;
)";
  body += "  __global const " + T + "* xb = x0 + (b * C + grp * CG) * H * W;\n";
  body += "  __global const " + T + "* wb = x1 + (grp * OG + og0) * CG * KH * KW;\n";
  // Accumulator k * OT + r: output row oh0 + k, channel og0 + r.
  for (int64_t a = 0; a < ot * rh; ++a) body += "  " + vt + " a" + std::to_string(a) + " = 0.0f;\n";
  int64_t reach = (win.kw - 1) * win.dw + TapReach(pv, win.sw);  // of a row, from iw0
  // The input rows the tile reads, from ih0 on: with one output row, every DH-th.
  int64_t rows = (win.kh - 1) * win.dh + 1 + (rh - 1) * win.sh, row_step = rh == 1 ? win.dh : 1;
  // Whether some tile's window may leave its row: unless the dims are static and the first and
  // the last tile of a row stay inside (iw0 grows with the tile).
  std::optional<int64_t> w_static = StaticDim(g, in[3]), ow_static = StaticDim(g, out[3]);
  bool edges = true;
  if (w_static && ow_static) {
    int64_t last = std::max<int64_t>(*ow_static - pv, 0) * win.sw - win.pw;
    edges = win.pw > 0 || last + reach > *w_static;
  }
  if (edges) {
    // The lanes' offsets in the row (edge tiles' masks).
    body += "  const int" + vn + " lanes = (int" + vn + ")(";
    for (int64_t q = 0; q < pv; ++q) body += (q ? ", " : "") + std::to_string(q * win.sw);
    body += ");\n";
    // Whether every row the tile reads, from iw0 on, lies in the input tensor (XN elements): its
    // edge tiles then load whole vectors too, reading into the neighbouring rows.
    body += "  bool safe = (b * C + grp * CG) * H * W + max(ih0, 0L) * W + iw0 >= 0 &&\n";
    body += "              (b * C + grp * CG + CG - 1) * H * W + min(ih0 + " + Int(rows - 1) +
            ", H - 1) * W + iw0 + " + Int(reach) + " <= XN;\n";
  }
  // The loops over the channels and input rows, then the taps along the row. `inside`: the tile's
  // window lies in the row; else the taps' lanes outside the row are zeros (the padding): the
  // vectors loaded whole and masked where `safe`, else from a copy of the row's span, zero
  // outside the row.
  auto loops = [&](bool inside) {
    std::string s = "    for (long c = 0; c < CG; ++c) {\n";
    s += "      __global const " + T + "* xc = xb + c * H * W;\n";
    s += "      __global const " + T + "* wc = wb + c * KH * KW;\n";
    s += "      for (long ii = 0; ii < " + Int(rows) + "; ii += " + Int(row_step) + ") {\n";
    s += "        long ih = ih0 + ii;\n        if (ih < 0 || ih >= H) continue;\n";
    s += "        __global const " + T + "* xp = xc + ih * W + iw0;\n";
    if (rh > 1) {
      // The window row of each output row that reads input row ii, or -1.
      for (int64_t kr = 0; kr < rh; ++kr) {
        std::string n = Int(kr * win.sh), ks = std::to_string(kr);
        s += "        long i" + ks + " = ii >= " + n + " && (ii - " + n + ") % DH == 0 && (ii - " +
             n + ") / DH < KH ? (ii - " + n + ") / DH : -1;\n";
      }
    }
    if (!inside) {
      s += "        float span[" + std::to_string(reach) + "];\n";
      s += "        if (!safe) {\n";
      s += "          for (long q = 0; q < " + Int(reach) + "; ++q) {\n";
      s += "            span[q] = iw0 + q >= 0 && iw0 + q < W ? " + LoadFloat(half, "xp", "q") +
           " : 0.0f;\n";
      s += "          }\n        }\n";
    }
    s += "        " + vt + " v;\n";
    // Tap j (at offset `off` from iw0): its PV inputs times each channel's weight, for each
    // output row whose window reads this input row.
    auto tap = [&](const std::string& off, const std::string& j, const std::string& in) {
      std::string t;
      if (inside) {
        t += in + "v = " + TapVector(pv, win.sw, "xp", off, half) + ";\n";
      } else {
        t += in + "v = safe ? select((" + vt + ")(0.0f), " +
             TapVector(pv, win.sw, "xp", off, half) + ",\n" + in +
             "                  (lanes >= (int)-(iw0 + " + off + ")) & (lanes < (int)(W - iw0 - " +
             off + ")))\n" + in + "         : " + TapVector(pv, win.sw, "span", off, false) + ";\n";
      }
      for (int64_t kr = 0; kr < rh; ++kr) {
        std::string ks = std::to_string(kr), row = rh > 1 ? "i" + ks : "ii / DH";
        std::string guard = rh > 1 ? "if (i" + ks + " >= 0) " : "";
        for (int64_t r = 0; r < ot; ++r) {
          std::string a = "a" + std::to_string(kr * ot + r);
          std::string w = Int(r * cg * win.kh * win.kw) + " + " + row + " * KW + " + j;
          t += in + guard + a + " = fma(v, (" + vt + ")(" + LoadFloat(half, "wc", w) + "), " + a +
               ");\n";
        }
      }
      return t;
    };
    if (win.kw <= kConvUnrolledTaps) {
      for (int64_t j = 0; j < win.kw; ++j) s += tap(Int(j * win.dw), Int(j), "        ");
    } else {
      s += "        for (long j = 0; j < KW; ++j) {\n";
      s += tap("j * DW", "j", "          ") + "        }\n";
    }
    return s + "      }\n    }\n";
  };
  if (edges) {
    body += "  if (iw0 >= 0 && iw0 + " + Int(reach) + " <= W) {\n";
    body += loops(true) + "  } else {\n" + loops(false) + "  }\n";
  } else {
    body += "  {\n" + loops(true) + "  }\n";
  }
  // The results through the epilogue (on each channel's vector), then stored: each channel's PV
  // as one vector where the tile is whole (not a row's moved-back last tile nor a tile wider than
  // its row), else lane by lane; rows and channels that the tile before this one stores, or past
  // the output, are left.
  body += "  float res[" + std::to_string(rh * ot * pv) + "];\n";
  std::string epilogue = ConvEpilogue(step, half, vt);
  for (int64_t a = 0; a < rh * ot; ++a) {
    std::string as = std::to_string(a);
    if (epilogue.empty()) {
      body += "  vstore" + vn + "(a" + as + ", " + as + ", res);\n";
      continue;
    }
    body += "  {\n    long o = grp * OG + og0 + " + std::to_string(a % ot) + ";\n    " + vt +
            " v = a" + as + ";\n";
    body += epilogue + "    vstore" + vn + "(v, " + as + ", res);\n  }\n";
  }
  body += R"(  bool whole = ow0 == ows && ow0 + PV <= OW;
  for (long a = 0; a < RH * OT; ++a) {
    long oh = oh0 + a / OT, og = og0 + a % OT;
    if (og < ogs || oh < ohs || oh >= OH) continue;
)";
  body += "    __global " + T + "* yr = y + ((b * O + grp * OG + og) * OH + oh) * OW + ow0;\n";
  body += "    if (whole) {\n      " + StoreVector(half, pv, "vload" + vn + "(a, res)", "0", "yr") +
          ";\n    } else {\n      for (int q = 0; q < PV; ++q) {\n";
  body += "        if (ow0 + q >= ows && ow0 + q < OW) " +
          StoreFloat(half, "yr", "q", "res[a * PV + q]") + ";\n      }\n    }\n  }\n";
  k.Finish(name, body, kLocalSize, code);
}

}  // namespace

Status EmitConv2d(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const ValueSpec& x = k.In(0);
  const ValueSpec& w = k.In(1);
  const ValueSpec& out = k.Out();
  std::optional<int64_t> o = StaticDim(g, w.dims[0]), cg = StaticDim(g, w.dims[1]),
                         kh = StaticDim(g, w.dims[2]), kw = StaticDim(g, w.dims[3]);
  if (!o || !cg || !kh || !kw) return Error("R.nn.conv2d: the weight's dims must be static");
  std::vector<int64_t> stride = Ints(step.attrs, "strides", 2, 1);
  std::vector<int64_t> dil = Ints(step.attrs, "dilation", 2, 1);
  const int64_t* groups_attr = step.attrs.Get<int64_t>("groups");
  int64_t groups = groups_attr ? *groups_attr : 1;
  if (groups < 1 || *o % groups != 0) {
    return Error(Where(step) + ": groups must divide the output channels");
  }
  Conv2dWindow win{*kh, *kw, stride[0], stride[1], dil[0], dil[1], 0, 0};
  QUILT_TRY(PadBegin(g, step, x, *kh, stride[0], dil[0], 0, &win.ph));
  QUILT_TRY(PadBegin(g, step, x, *kw, stride[1], dil[1], 1, &win.pw));
  bool pointwise = *kh == 1 && *kw == 1 && stride[0] == 1 && stride[1] == 1 && win.ph == 0 &&
                   win.pw == 0 && SameDim(g, x.dims[2], out.dims[2]) &&
                   SameDim(g, x.dims[3], out.dims[3]);
  bool column = !pointwise && *kw == 1 && win.pw == 0 && StaticDim(g, x.dims[3]) == 1 &&
                StaticDim(g, out.dims[3]) == 1;
  if (pointwise) {
    // Each image as one row of H * W pixels (a static count where H and W are: the tile sizes
    // follow it).
    int one = IntDim(g, 1);
    std::optional<int64_t> h = StaticDim(g, out.dims[2]), w = StaticDim(g, out.dims[3]);
    int pixels = h && w ? IntDim(g, *h * *w) : MulDim(g, out.dims[2], out.dims[3]);
    EmitConv2dTiles(g, step, k, win, groups, *cg, *o / groups, {x.dims[0], x.dims[1], one, pixels},
                    {out.dims[0], out.dims[1], one, pixels}, name, code);
  } else if (column) {
    // Rows one pixel wide (a 1-D signal stored as (N, C, L, 1)): the same bytes as one row of L
    // pixels with the window along it, so that the tiles' pixel vectors run along L.
    int one = IntDim(g, 1);
    Conv2dWindow row{1, *kh, 1, stride[0], 1, dil[0], 0, win.ph};
    EmitConv2dTiles(g, step, k, row, groups, *cg, *o / groups,
                    {x.dims[0], x.dims[1], one, x.dims[2]},
                    {out.dims[0], out.dims[1], one, out.dims[2]}, name, code);
  } else {
    EmitConv2dTiles(g, step, k, win, groups, *cg, *o / groups, x.dims, out.dims, name, code);
  }
  return {};
}

// nn.conv1d as conv2d's tiles: (N, C, L) as (N, C, 1, L), the window (1, K) along the row (the
// STFT of a speech model, 258 filters of 256 taps at stride 128, took 17 ms of its 40 on PoCL as
// a work-item per output; conv3d stays there, emit_conv.cc).
Status EmitConvOfRank(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const ValueSpec& x = k.In(0);
  const ValueSpec& w = k.In(1);
  const ValueSpec& out = k.Out();
  if (x.dims.size() != 3 || w.dims.size() != 3 || out.dims.size() != 3) {
    return EmitConv(g, step, name, code);
  }
  std::optional<int64_t> o = StaticDim(g, w.dims[0]), cg = StaticDim(g, w.dims[1]),
                         kw = StaticDim(g, w.dims[2]);
  if (!o || !cg || !kw) return Error(Where(step) + ": the weight's dims must be static");
  int64_t stride = Ints(step.attrs, "strides", 1, 1)[0];
  int64_t dil = Ints(step.attrs, "dilation", 1, 1)[0];
  const int64_t* groups_attr = step.attrs.Get<int64_t>("groups");
  int64_t groups = groups_attr ? *groups_attr : 1;
  if (groups < 1 || *o % groups != 0) {
    return Error(Where(step) + ": groups must divide the output channels");
  }
  if (stride < 1 || dil < 1) return Error(Where(step) + ": strides and dilation below 1");
  Conv2dWindow win{1, *kw, 1, stride, 1, dil, 0, 0};
  QUILT_TRY(PadBegin(g, step, x, *kw, stride, dil, 0, &win.pw, 1));
  int one = IntDim(g, 1);
  EmitConv2dTiles(g, step, k, win, groups, *cg, *o / groups, {x.dims[0], x.dims[1], one, x.dims[2]},
                  {out.dims[0], out.dims[1], one, out.dims[2]}, name, code);
  return {};
}

// nn.max_pool2d, nn.avg_pool2d (NCHW): one work-item per output element.
Status EmitPool2d(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const ValueSpec& x = k.In(0);
  const ValueSpec& out = k.Out();
  std::vector<int64_t> size = Ints(step.attrs, "pool_size", 2, 1);
  std::vector<int64_t> stride = Ints(step.attrs, "strides", 2, 1);
  std::vector<int64_t> dil = Ints(step.attrs, "dilation", 2, 1);
  int64_t ph = 0, pw = 0;
  QUILT_TRY(PadBegin(g, step, x, size[0], stride[0], dil[0], 0, &ph));
  QUILT_TRY(PadBegin(g, step, x, size[1], stride[1], dil[1], 1, &pw));
  std::vector<int64_t> pads = Ints(step.attrs, "padding", 4, 0);
  bool max = step.kernel == "nn.max_pool2d";
  const bool* include = step.attrs.Get<bool>("count_include_pad");
  bool count_pad = include && *include;
  k.Long("total", Product(g, out.dims, 0));
  k.Long("H", x.dims[2]);
  k.Long("W", x.dims[3]);
  k.Long("OH", out.dims[2]);
  k.Long("OW", out.dims[3]);
  std::string body = "  long t = get_global_id(0);\n  if (t >= total) return;\n";
  body += "  const long KH = " + Int(size[0]) + ", KW = " + Int(size[1]) +
          ", SH = " + Int(stride[0]) + ", SW = " + Int(stride[1]) + ", DH = " + Int(dil[0]) +
          ", DW = " + Int(dil[1]) + ", PH = " + Int(ph) + ", PW = " + Int(pw) + ";\n";
  const bool half = IsHalf(x);
  body += "  long ow = t % OW, oh = t / OW % OH, nc = t / (OW * OH);\n";
  body += "  __global const " + Pointee(half) + "* xc = x0 + nc * H * W;\n";
  const std::string v = LoadFloat(half, "xc", "ih * W + iw");
  if (max) {
    body += R"(  float m = -INFINITY;
  for (long i = 0; i < KH; ++i) {
    long ih = oh * SH - PH + i * DH;
    if (ih < 0 || ih >= H) continue;
    for (long j = 0; j < KW; ++j) {
      long iw = ow * SW - PW + j * DW;
      if (iw < 0 || iw >= W) continue;
)";
    body += "      float v = " + v + ";\n      m = (v > m || isnan(v)) ? v : m;\n    }\n  }\n  " +
            k.Write(0, "t", "m") + ";\n";
  } else {
    // The divisor: the window's cells inside the input, or (count_include_pad) inside the padded
    // input: the explicit pads, not the room ceil mode adds past them.
    body += "  const long PH1 = " + Int(count_pad ? pads[2] : 0) +
            ", PW1 = " + Int(count_pad ? pads[3] : 0) + ";\n";
    body += R"(  float s = 0.0f;
  long cells = 0;
  for (long i = 0; i < KH; ++i) {
    long ih = oh * SH - PH + i * DH;
    for (long j = 0; j < KW; ++j) {
      long iw = ow * SW - PW + j * DW;
      bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
)";
    body += "      if (inside) s += " + v + ";\n";
    body += count_pad
                ? "      if (ih >= -PH && ih < H + PH1 && iw >= -PW && iw < W + PW1) ++cells;\n"
                : "      if (inside) ++cells;\n";
    body += "    }\n  }\n  " + k.Write(0, "t", "s / (float)cells") + ";\n";
  }
  k.Finish(name, body, kLocalSize, code);
  return {};
}

}  // namespace quilt::compiler::opencl

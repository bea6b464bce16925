// The channel-blocked layout for chains of CPU convolutions (run by Lower after the conv
// epilogues, before memory planning; the layout and its kernels: cpu/kernels/conv_blocked.h).
//
// A float32 nn.conv2d step on a CPU device whose channel counts are known when compiling (batch
// and spatial dims may be symbols), input and output channels multiples of 16 or padded to them
// (BlockableChannels in block_layout.cc: padding of at most half a count, of at most 15% for a
// dense conv's outputs; its weight and epilogue values per channel padded when compiling), dense
// 1x1 (groups 1), dense 3x3 of unit dilations and strides (Winograd on blocked data where the image
// has enough tiles) or strides up to 2 (the direct blocked kernel), or depthwise (one input channel
// per group, as many outputs), its weight a constant that it alone reads, may run as
// nn.conv2d_nchw16c; so may a dense one of any window over up to 4 input channels (a network's
// first layer), which reads its data as it is. Dense convs of other windows over blocked data
// stay NCHW, where the GEMM outruns the blocked direct kernel.
// A float32 2-D max pool of such channels may run as nn.max_pool2d_nchw16c between them (joined as
// a conv is, counted as none); so may a squeeze-and-excite block's end: a global average pool of
// a chain's data (nn.global_avg_pool2d_nchw16c; its (N, C, 1, 1) result the same floats in either
// layout, so it stays as it is and nothing joins through it) and a multiply of the data by a gate
// of one value per channel ((C, 1, 1) or (N or 1, C, 1, 1): multiply_channels_nchw16c); and so
// may an elementwise add, subtract or multiply of operands of the result's shape, a concat and a
// split along the channels, every input and result of 16k channels (a concat's and a split's: no
// padding inside the channels), the others padded as a conv's may be: the same kernels over the
// blocked values (their shapes alike), a concat's or split's axis that of the blocks and a
// split's parts given in blocks (a YOLO block's split, residual add and concat); and a resize of
// the height and width (image.resize2d_nchw16c, of the data's NCHW view). A step other than a
// conv whose result leaves the chain while all its data is there in NCHW anyway stays as it was
// (it would add a transform and spare none). Where a group does not pay, its steps other than
// convs leave it and the groups are weighed again, so that chains joined through them into a
// group that does not pay (a detector's backbone and neck) still run blocked where they pay.
// Such convs are joined where one's result is another's data or residual input; a group runs
// blocked when it has at least two convs, at least twice as many convs as values crossing its
// edge, and, where its shapes are known, at least 100 multiply-adds of its convs for each element
// of those values (a value entering it: one layout_to_nchw16c step, made before its first reader; a
// result read outside it or a graph output: one layout_from_nchw16c step, made right after its
// conv, which writes the value of the same name as before). Inside, each conv reads and writes the
// blocked values, its weight laid out in the package as the kernel reads it (BlockConvWeight), its
// epilogue as it was. Results read only inside a group are no longer written in NCHW (neither
// planned nor allocated).
#pragma once

#include "targets/package_spec.h"

namespace quilt::compiler {

// Rewrites `g`, a graph of `spec`, in place (the weights laid out in spec's buffers: in place of
// their values where no other value holds them); returns the number of convs made blocked. With
// winograd_tile 4, its dense 3x3 convs carry the attribute winograd_tile = 4 (their Winograd, where
// the kernel takes one, of tile F(4x4, 3x3) on planes of 16 x 16 or more: cpu::nn::kWinogradTile);
// with 2, none (F(2x2, 3x3)).
int BlockConvLayouts(PackageSpec& spec, GraphSpec& g, int winograd_tile = 2);

// The input position of a conv step's residual (its epilogue's "residual" attribute: the input
// after the bias, before a prelu's slope and the ops after), or -1 where it has none.
int ConvResidualInput(const StepSpec& step);

}  // namespace quilt::compiler

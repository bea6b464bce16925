// Lowering: the entry function of a normalized module becomes the steps of a package graph.
//
//  1. Parameters become graph inputs (a parameter with a default keeps it as a buffer).
//  2. Each binding of an op call becomes one step; its arguments become value indices: vars by
//     lookup, constants as constant values with a buffer, shapes and prim values with symbolic
//     entries as `shape_expr` / `prim_value` builtin steps evaluated at run time, tuples
//     flattened (with the arity of each argument kept on the step).
//  3. Dims become an expression pool; symbols are numbered in order of first appearance.
//  4. A float32 conv's bias add and activation join the conv step (fuse_epilogue.h); on OpenCL,
//     chains of elementwise steps become one step each, on the CPU float32 chains of one shape
//     (fuse_elementwise.h).
//  5. Intermediates with a static size get arena offsets (memory_plan.h); graph outputs are
//     never placed in the arena; elementwise steps write in place where their input dies.
// Ops without a kernel on the chosen device are reported all at once, with node names.
#pragma once

#include <string>

#include "ir/diagnostic.h"
#include "ir/module.h"
#include "targets/package_spec.h"

namespace quilt::compiler {

struct LowerOptions {
  // Plan intermediates into an arena (off: every intermediate is allocated at run time).
  bool plan_memory = true;
  // Let the output of an elementwise step take over the memory of an input no later step reads.
  bool in_place = true;
  // Fold a conv's bias add and relu / clip into the conv step (fuse_epilogue.h).
  bool fuse_epilogues = true;
  // Join chains of elementwise steps on OpenCL devices, and float32 ones of one shape on the CPU,
  // into one step each (fuse_elementwise.h).
  bool fuse_elementwise = true;
  // Run chains of CPU convolutions in the channel-blocked layout where block_layout.h's rule picks
  // them (off: quiltc --cpu-layout nchw).
  bool block_layout = true;
  // The output tile of the Winograd that the blocked dense 3x3 convs of unit strides take (quiltc
  // --cpu-winograd-tile): 2, F(2x2, 3x3); 4, F(4x4, 3x3) on planes of 16 x 16 or more, fewer
  // multiplies for larger rounding (block_layout.h).
  int winograd_tile = 2;
  // Store constant matmul weights packed for the CPU's GEMM (pack_weights.h).
  bool pack_weights = true;
  // Flush subnormal values of CPU products' constant weights to zero (pack_weights.h).
  bool flush_subnormal_weights = true;
};

Expected<PackageSpec> Lower(const ir::IRModule& module, const LowerOptions& options = {});

}  // namespace quilt::compiler

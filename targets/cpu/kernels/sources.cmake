# The CPU kernels (reference kernels, and fast float32 paths tested against them), compiled
# into the runtime library (runtime/CMakeLists.txt).
# One file per op family; registry.cc lists the families.
set(QUILT_CPU_KERNEL_SOURCES
  ${QUILT_ROOT}/targets/cpu/kernels/registry.cc
  ${QUILT_ROOT}/targets/cpu/kernels/elementwise.cc
  ${QUILT_ROOT}/targets/cpu/kernels/elementwise_fast.cc
  ${QUILT_ROOT}/targets/cpu/kernels/cast.cc
  ${QUILT_ROOT}/targets/cpu/kernels/util.cc
  ${QUILT_ROOT}/targets/cpu/kernels/reduce.cc
  ${QUILT_ROOT}/targets/cpu/kernels/nn.cc
  ${QUILT_ROOT}/targets/cpu/kernels/nn_norm.cc
  ${QUILT_ROOT}/targets/cpu/kernels/norm_fast.cc
  ${QUILT_ROOT}/targets/cpu/kernels/conv.cc
  ${QUILT_ROOT}/targets/cpu/kernels/conv_fast.cc
  ${QUILT_ROOT}/targets/cpu/kernels/conv_winograd.cc
  ${QUILT_ROOT}/targets/cpu/kernels/conv_blocked.cc
  ${QUILT_ROOT}/targets/cpu/kernels/conv_blocked_winograd.cc
  ${QUILT_ROOT}/targets/cpu/kernels/depthwise_fast.cc
  ${QUILT_ROOT}/targets/cpu/kernels/gemm.cc
  ${QUILT_ROOT}/targets/cpu/kernels/int8_gemm.cc
  ${QUILT_ROOT}/targets/cpu/kernels/pool.cc
  ${QUILT_ROOT}/targets/cpu/kernels/pool_fast.cc
  ${QUILT_ROOT}/targets/cpu/kernels/manip.cc
  ${QUILT_ROOT}/targets/cpu/kernels/index.cc
  ${QUILT_ROOT}/targets/cpu/kernels/image.cc
  ${QUILT_ROOT}/targets/cpu/kernels/linalg.cc
  ${QUILT_ROOT}/targets/cpu/kernels/quantize.cc
  ${QUILT_ROOT}/targets/cpu/kernels/transformer.cc
  ${QUILT_ROOT}/targets/cpu/kernels/recurrent.cc
  ${QUILT_ROOT}/targets/cpu/kernels/recurrent_fast.cc
  ${QUILT_ROOT}/targets/cpu/kernels/signal.cc
  ${QUILT_ROOT}/targets/cpu/kernels/text.cc
  ${QUILT_ROOT}/targets/cpu/kernels/fused.cc
)
# The hot loops of the fast paths are written for the vectorizer: -O3 in every build type but
# Debug, multiply-adds contracted into FMA where the target has it, no floating-point traps
# (nothing reads the exception flags; with them GCC keeps a select as a branch) and no errno
# (nothing reads it; with it GCC keeps sqrt a call).
if(NOT CMAKE_BUILD_TYPE STREQUAL "Debug" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set_source_files_properties(
    ${QUILT_ROOT}/targets/cpu/kernels/gemm.cc ${QUILT_ROOT}/targets/cpu/kernels/conv_fast.cc
    ${QUILT_ROOT}/targets/cpu/kernels/conv_winograd.cc
    ${QUILT_ROOT}/targets/cpu/kernels/depthwise_fast.cc ${QUILT_ROOT}/targets/cpu/kernels/conv_blocked.cc
    ${QUILT_ROOT}/targets/cpu/kernels/conv_blocked_winograd.cc
    ${QUILT_ROOT}/targets/cpu/kernels/pool_fast.cc ${QUILT_ROOT}/targets/cpu/kernels/elementwise_fast.cc
    ${QUILT_ROOT}/targets/cpu/kernels/recurrent_fast.cc ${QUILT_ROOT}/targets/cpu/kernels/norm_fast.cc
    ${QUILT_ROOT}/targets/cpu/kernels/int8_gemm.cc
    PROPERTIES COMPILE_OPTIONS "-O3;-ffp-contract=fast;-fno-trapping-math;-fno-math-errno")
  # Conversions: no contraction (the narrow float formats' arithmetic stays as written).
  set_source_files_properties(${QUILT_ROOT}/targets/cpu/kernels/cast.cc
                              PROPERTIES COMPILE_OPTIONS "-O3;-fno-trapping-math")
endif()

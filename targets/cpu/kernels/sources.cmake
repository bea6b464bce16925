# The CPU reference kernels, compiled into the runtime library (runtime/CMakeLists.txt).
# One file per op family; registry.cc lists the families.
set(QUILT_CPU_KERNEL_SOURCES
  ${QUILT_ROOT}/targets/cpu/kernels/registry.cc
  ${QUILT_ROOT}/targets/cpu/kernels/elementwise.cc
  ${QUILT_ROOT}/targets/cpu/kernels/cast.cc
  ${QUILT_ROOT}/targets/cpu/kernels/util.cc
  ${QUILT_ROOT}/targets/cpu/kernels/reduce.cc
  ${QUILT_ROOT}/targets/cpu/kernels/nn.cc
  ${QUILT_ROOT}/targets/cpu/kernels/nn_norm.cc
  ${QUILT_ROOT}/targets/cpu/kernels/conv.cc
  ${QUILT_ROOT}/targets/cpu/kernels/pool.cc
  ${QUILT_ROOT}/targets/cpu/kernels/manip.cc
  ${QUILT_ROOT}/targets/cpu/kernels/index.cc
  ${QUILT_ROOT}/targets/cpu/kernels/image.cc
  ${QUILT_ROOT}/targets/cpu/kernels/linalg.cc
  ${QUILT_ROOT}/targets/cpu/kernels/quantize.cc
  ${QUILT_ROOT}/targets/cpu/kernels/transformer.cc
  ${QUILT_ROOT}/targets/cpu/kernels/recurrent.cc
  ${QUILT_ROOT}/targets/cpu/kernels/signal.cc
  ${QUILT_ROOT}/targets/cpu/kernels/text.cc
)

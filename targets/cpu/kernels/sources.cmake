# The CPU reference kernels, compiled into the runtime library (runtime/CMakeLists.txt).
# One file per op family; registry.cc lists the families.
set(QUILT_CPU_KERNEL_SOURCES
  ${QUILT_ROOT}/targets/cpu/kernels/registry.cc
  ${QUILT_ROOT}/targets/cpu/kernels/elementwise.cc
  ${QUILT_ROOT}/targets/cpu/kernels/util.cc
)

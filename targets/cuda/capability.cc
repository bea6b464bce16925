// What the CUDA back end can run: the ops with a CUDA kernel. It has no kernels yet, so it
// takes nothing and says so; each kernel that lands adds its op here.
#include "targets/capability.h"

namespace quilt::targets {

const Capability& CudaCapability() {
  static const NoKernelsYet backend("CUDA");
  return backend;
}

}  // namespace quilt::targets

// What the OpenCL back end can run: the ops with a OpenCL kernel. It has no kernels yet, so it
// takes nothing and says so; each kernel that lands adds its op here.
#include "targets/capability.h"

namespace quilt::targets {

const Capability& OpenClCapability() {
  static const NoKernelsYet backend("OpenCL");
  return backend;
}

}  // namespace quilt::targets

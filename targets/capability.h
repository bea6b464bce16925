// Target capability: per op call (its op, attributes and the struct info of its arguments),
// whether a target can run it, and when not, why.
//
//   Support s = CapabilityFor(target).Supports(call);
//   if (!s.ok) report(s.reason);   // "no OpenCL kernel for R.nn.conv2d yet"
//
// Each target answers from its real kernels (targets/<t>/capability.cc), so a placement never
// promises what the runtime cannot do.
#pragma once

#include <string>
#include <string_view>

#include "ir/expr.h"
#include "ir/target.h"

namespace quilt::targets {

struct Support {
  bool ok = true;
  std::string reason;  // why not, when !ok

  static Support Yes() { return {}; }
  static Support No(std::string why) { return {false, std::move(why)}; }
};

class Capability {
 public:
  virtual ~Capability() = default;
  // Whether the target can run op call `call`.
  virtual Support Supports(const ir::CallNode& call) const = 0;
};

// A back end whose kernels have not landed: it takes no op, and says so ("no CUDA kernel for
// R.add yet"). Each kernel that lands moves its op into a real table.
class NoKernelsYet : public Capability {
 public:
  explicit NoKernelsYet(std::string device) : device_(std::move(device)) {}
  Support Supports(const ir::CallNode& call) const override;

 private:
  std::string device_;
};

// R.nn.batch_norm in the form the kernels compute: inference (training=False) with its scale and
// shift (center=True, scale=True). Any other form is refused, saying which and on `device`.
Support BatchNormForm(const ir::CallNode& call, const std::string& device);

// The capability of the back end for `target` (by its device type). A kind without a back end
// answers "not supported" for every op, saying so.
const Capability& CapabilityFor(const ir::Target& target);

// The back ends (one file each).
const Capability& CpuCapability();
const Capability& CudaCapability();
const Capability& OpenClCapability();

}  // namespace quilt::targets

// Loading a package: the bytes (read from a file, or mapped; or a copy of caller memory), its
// checksum, the FlatBuffers verifier, then a semantic check of everything the executor will rely on
// (indices in range, sizes consistent, every value defined once before it is used). Nothing else in
// the runtime looks at a package that has not passed both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "quilt/package_generated.h"
#include "runtime/src/status.h"

namespace quilt::rt {

// The format version this runtime reads and writes. A package of another major version is
// refused (an older one with the advice to compile the model again); a newer minor version adds
// fields and steps an older runtime of the same major version reads, or refuses by name when it
// prepares the step (a kernel it lacks, a dispatch convention its device does not pass).
//   1.0  values, steps by kernel name, per-device arenas, constants in a data section
//   2.0  step kinds (kernel, dispatch, copy, control), regions, code sections with their target
//   2.1  Device.cpu_fallback (quiltc --portable)
//   2.2  fused_elementwise steps (targets/cpu/kernels/fused.h); dispatch steps that check their
//        indices (attribute "checked", targets/opencl/device/dispatch.h)
//   2.3  a checksum footer over every byte before it (runtime/src/checksum.h), verified at load;
//        a package of an earlier minor version loads only unverified (LoadOptions)
//   2.4  Device.memory_scope (the vdevice's memory scope, "global" when absent)
inline constexpr uint16_t kFormatMajor = 2;
inline constexpr uint16_t kFormatMinor = 4;
// The first minor version (of kFormatMajor) that carries a checksum footer.
inline constexpr uint16_t kFormatMinorChecksum = 3;

// How a package is loaded.
struct LoadOptions {
  // Verify the checksum footer: one pass over the package's bytes (about 0.05 ms per MiB, 5 ms
  // for a 94 MiB package: runtime/README.md). Skip only for packages verified before, on storage
  // nothing else writes.
  bool verify_checksum = true;
  // A file is read into memory that the package owns, so that a file replaced, rewritten or
  // truncated under a live session changes nothing. Mapping it instead shares its pages with the
  // OS's file cache, but then the file must not change while the package lives: a write shows
  // through and a truncation ends the process with SIGBUS.
  bool map_file = false;
};

// The step kind a builtin name belongs to: Copy for "copy", Control for the executor's control
// steps, nullopt for any other name (an op's kernel or an entry point).
std::optional<pkg::StepKind> BuiltinStepKind(std::string_view name);

class PackageBytes;

class LoadedPackage {
 public:
  ~LoadedPackage();
  static Status FromFile(const std::string& path, std::unique_ptr<LoadedPackage>* out,
                         const LoadOptions& options = {});
  // Copies the bytes: the caller's memory may be freed or reused once this returns.
  static Status FromMemory(const void* data, size_t size, std::unique_ptr<LoadedPackage>* out,
                           const LoadOptions& options = {});

  const pkg::Package& root() const { return *root_; }
  // The bytes of constant buffer `i` (in range: checked at load).
  const uint8_t* BufferData(int i) const;
  uint64_t BufferSize(int i) const;

 private:
  LoadedPackage() = default;
  Status Check(const std::string& origin, const LoadOptions& options);
  std::unique_ptr<PackageBytes> bytes_;
  const pkg::Package* root_ = nullptr;
};

}  // namespace quilt::rt

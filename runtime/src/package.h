// Loading a package: the bytes (mmap'ed from a file, or a copy of caller memory), the
// FlatBuffers verifier, then a semantic check of everything the executor will rely on (indices in
// range, sizes consistent, every value defined once before it is used). Nothing else in the
// runtime looks at a package that has not passed both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "quilt/package_generated.h"
#include "runtime/src/status.h"

namespace quilt::rt {

// The format version this runtime reads and writes. A package with a newer major version is
// refused; a newer minor version adds only fields this runtime may ignore.
inline constexpr uint16_t kFormatMajor = 1;
inline constexpr uint16_t kFormatMinor = 0;

class PackageBytes;

class LoadedPackage {
 public:
  ~LoadedPackage();
  static Status FromFile(const std::string& path, std::unique_ptr<LoadedPackage>* out);
  static Status FromMemory(const void* data, size_t size, std::unique_ptr<LoadedPackage>* out);

  const pkg::Package& root() const { return *root_; }
  // The bytes of constant buffer `i` (in range: checked at load).
  const uint8_t* BufferData(int i) const;
  uint64_t BufferSize(int i) const;

 private:
  LoadedPackage() = default;
  Status Check(const std::string& origin);
  std::unique_ptr<PackageBytes> bytes_;
  const pkg::Package* root_ = nullptr;
};

}  // namespace quilt::rt

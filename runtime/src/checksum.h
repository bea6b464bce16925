// The package checksum: XXH3-64 (xxHash, header-only, so the runtime links nothing for it) over
// every byte of a package before its footer. The footer is the file's last kChecksumBytes:
// "QSUM", the algorithm (1: XXH3-64), then the hash, all little-endian. Written by the compiler's
// package writer, verified by the loader (package.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace quilt::rt {

inline constexpr size_t kChecksumBytes = 16;
inline constexpr char kChecksumMagic[4] = {'Q', 'S', 'U', 'M'};
inline constexpr uint32_t kChecksumXxh3 = 1;

inline uint64_t PackageChecksum(const uint8_t* data, size_t size) {
  return XXH3_64bits(data, size);
}

// The footer of the `size` bytes at `data`, written at `footer`.
inline void WriteChecksumFooter(const uint8_t* data, size_t size, uint8_t* footer) {
  uint64_t hash = PackageChecksum(data, size);
  std::memcpy(footer, kChecksumMagic, 4);
  std::memcpy(footer + 4, &kChecksumXxh3, 4);
  std::memcpy(footer + 8, &hash, 8);
}

}  // namespace quilt::rt

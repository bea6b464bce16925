// Fuzzes the .npy and .npz readers of the tools (tools/tensor_io.h), as quilt-run reads its input
// files: each input is parsed as an .npy file (ParseNpy) and read as an .npz archive (ReadNpz, from
// an in-memory file). A bad file must be an error naming the file, never a crash or an allocation
// the file's size does not justify.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "tools/tensor_io.h"

namespace {

// The in-memory file ReadNpz reads: one per process, rewritten for each input.
int NpzFile() {
  static int fd = memfd_create("fuzz.npz", 0);
  QUILT_CHECK(fd >= 0) << "memfd_create failed";
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace quilt;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  Expected<tools::OwnedTensor> npy = tools::ParseNpy(bytes, "fuzz.npy");
  if (npy) {
    int64_t n = 1;
    for (int64_t d : npy->shape) n *= d;
    QUILT_CHECK(npy->data.size() == rt::DTypeBytes(npy->dtype, n))
        << "an .npy tensor whose data does not match its shape";
  }

  int fd = NpzFile();
  QUILT_CHECK(ftruncate(fd, 0) == 0);
  QUILT_CHECK(pwrite(fd, data, size, 0) == static_cast<ssize_t>(size));
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  Expected<std::vector<tools::OwnedTensor>> npz = tools::ReadNpz(path);
  if (!npz) {
    QUILT_CHECK(npz.error().ToString().find(path) != std::string::npos)
        << "an .npz error that does not name the file: " << npz.error().ToString();
  }
  return 0;
}

// Fuzzes the ONNX importer from bytes (ImportOnnxBytes), as quiltc and quilt-opt import a model
// file: a malformed model must be a diagnostic that says what is wrong, never a crash, a hang or
// an allocation the model's size does not justify. What imports must verify (every later stage
// relies on it) and print.
#include <cstddef>
#include <cstdint>

#include "importers/onnx/importer.h"
#include "ir/printer.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace quilt;
  // No model folder: external data is refused rather than read from the file system.
  Expected<ir::IRModule> mod = importers::onnx::ImportOnnxBytes(data, size, "", "fuzz.onnx");
  if (!mod) {
    QUILT_CHECK(!mod.error().message.empty()) << "a refused model without a message";
    return 0;
  }
  Status verified = ir::Verify(*mod);
  QUILT_CHECK(verified) << "the importer made a module that does not verify: "
                        << verified.error().ToString();
  std::string text = ir::PrintModule(*mod);
  QUILT_CHECK(!text.empty());
  return 0;
}

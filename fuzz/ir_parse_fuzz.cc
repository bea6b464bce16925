// Fuzzes the IR text parser (ParseModule), as quilt-opt reads a .qir file: bad text must be a
// diagnostic with a line and column, never a crash or a hang. What parses is verified, and a
// module that verifies is printed and must parse again (the printer and parser round-trip).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace quilt;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Expected<ir::IRModule> mod = ir::ParseModule(text, "fuzz.qir");
  if (!mod) {
    QUILT_CHECK(!mod.error().message.empty()) << "a refused text without a message";
    return 0;
  }
  if (!ir::Verify(*mod)) return 0;
  std::string printed = ir::PrintModule(*mod);
  Expected<ir::IRModule> again = ir::ParseModule(printed, "printed.qir");
  QUILT_CHECK(again) << "a verified module prints as text that does not parse: "
                     << again.error().ToString() << "\n"
                     << printed;
  return 0;
}

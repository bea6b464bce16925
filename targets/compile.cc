#include "targets/compile.h"

#include <openssl/evp.h>

#include <fstream>
#include <iterator>

#include "ir/target.h"
#include "targets/package_writer.h"

namespace quilt::compiler {

std::string Sha256Hex(const void* data, size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  QUILT_CHECK(EVP_Digest(data, size, digest, &len, EVP_sha256(), nullptr) == 1) << "sha256";
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (unsigned int i = 0; i < len; ++i) {
    s.push_back(kHex[digest[i] >> 4]);
    s.push_back(kHex[digest[i] & 15]);
  }
  return s;
}

Expected<std::vector<uint8_t>> CompileModule(const ir::IRModule& module,
                                             const CompileOptions& options,
                                             const std::string& source_name,
                                             const std::string& source_sha256) {
  for (const std::string& d : options.devices) {
    Expected<ir::Target> t = ir::Target::Parse(d);
    if (!t) return Error("--device " + d + ": " + t.error().message);
    if (t->DeviceType() != "cpu") {
      return Error("--device " + d + ": only the CPU target (llvm) can be compiled for so far");
    }
  }
  Expected<PackageSpec> spec = Lower(module, options.lower);
  if (!spec) return spec.error();
  spec->source_model = source_name;
  spec->source_sha256 = source_sha256;
  return WritePackage(*spec);
}

Expected<std::vector<uint8_t>> CompileOnnxFile(const std::string& path,
                                               const CompileOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot open '" + path + "'");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Expected<ir::IRModule> mod = importers::onnx::ImportOnnxFile(path, options.import);
  if (!mod) return mod.error();
  std::string name = path.substr(path.find_last_of('/') + 1);
  Expected<std::vector<uint8_t>> out =
      CompileModule(*mod, options, name, Sha256Hex(bytes.data(), bytes.size()));
  if (!out) {
    Diagnostic d = out.error();
    d.message = path + ": " + d.ToString();
    d.location.clear();
    return d;
  }
  return out;
}

}  // namespace quilt::compiler

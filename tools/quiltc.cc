// quiltc: compile an ONNX model into a quilt package.
//
//   quiltc MODEL.onnx -o OUT.quilt [--device llvm] [--input-shape NAME:D,D,...]...
//
// Exit status 0 on success, 1 when the model cannot be compiled (the message names the file,
// node, op type and why), 2 for bad usage. Never overwrites the model it reads.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "targets/compile.h"
#include "tools/cli.h"

namespace {

// "x:1,3,224,224" -> name and dims.
bool ParseInputShape(const std::string& text, std::string* name, std::vector<int64_t>* dims) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  *name = text.substr(0, colon);
  dims->clear();
  std::string rest = text.substr(colon + 1) + ",";
  std::string num;
  for (char c : rest) {
    if (c == ',') {
      if (num.empty() && rest != ",") return false;
      if (!num.empty()) {
        if (num.size() > 15) return false;
        dims->push_back(std::stoll(num));
      }
      num.clear();
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      num.push_back(c);
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quiltc: compile an ONNX model into a quilt package"};
  std::string model, output;
  std::vector<std::string> devices, shapes;
  app.add_option("model", model, "ONNX model (.onnx)")->required();
  app.add_option("-o,--output", output, "package to write (.quilt)")->required();
  app.add_option("--device", devices, "target to compile for, in priority order (llvm)");
  app.add_option("--input-shape", shapes, "fix an input's shape: NAME:D,D,...");
  if (std::optional<int> code = quilt::tools::ParseArgs(app, argc, argv)) return *code;
  quilt::compiler::CompileOptions options;
  if (!devices.empty()) options.devices = devices;
  for (const std::string& s : shapes) {
    std::string name;
    std::vector<int64_t> dims;
    if (!ParseInputShape(s, &name, &dims)) {
      std::cerr << "quiltc: error: --input-shape '" << s << "': expected NAME:D,D,...\n";
      return 2;
    }
    options.import.input_shapes[name] = dims;
  }
  std::error_code ec;
  if (std::filesystem::exists(output, ec) && std::filesystem::equivalent(model, output, ec)) {
    std::cerr << "quiltc: error: the output '" << output << "' is the model itself\n";
    return 2;
  }
  quilt::Expected<std::vector<uint8_t>> bytes = quilt::compiler::CompileOnnxFile(model, options);
  if (!bytes) {
    std::cerr << "quiltc: error: " << bytes.error().ToString() << "\n";
    return 1;
  }
  // Write next to the target and rename, so a failed write never leaves half a package.
  std::string tmp = output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes->data()),
              static_cast<std::streamsize>(bytes->size()));
    if (!out) {
      std::cerr << "quiltc: error: cannot write '" << tmp << "'\n";
      return 1;
    }
  }
  std::filesystem::rename(tmp, output, ec);
  if (ec) {
    std::cerr << "quiltc: error: cannot write '" << output << "': " << ec.message() << "\n";
    return 1;
  }
  std::cerr << "quiltc: wrote " << output << " (" << bytes->size() << " bytes)\n";
  return 0;
}

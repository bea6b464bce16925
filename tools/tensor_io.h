// Tensors in and out of files: NumPy .npy and .npz (stored or deflated members), and ONNX
// TensorProto .pb files (the ONNX test data format). Errors name the file and what is wrong.
#pragma once

#include <string>
#include <vector>

#include "ir/diagnostic.h"
#include "runtime/src/session.h"

namespace quilt::tools {

using rt::OwnedTensor;

Expected<OwnedTensor> ParseNpy(const std::string& bytes, const std::string& where);
Expected<OwnedTensor> ReadNpy(const std::string& path);
// Every array of an .npz archive, named by its member name without ".npy".
Expected<std::vector<OwnedTensor>> ReadNpz(const std::string& path);
// An ONNX TensorProto; the name is the proto's own.
Expected<OwnedTensor> ReadTensorPb(const std::string& path);
// By extension: .npy, .npz (every member) or .pb.
Expected<std::vector<OwnedTensor>> ReadTensors(const std::string& path);

std::string NpyBytes(const OwnedTensor& t);
// Writes through a temporary file renamed over `path` (see tools/files.h).
Status WriteNpy(const std::string& path, const OwnedTensor& t);

}  // namespace quilt::tools

// Tensors in and out of files: NumPy .npy and .npz (stored or deflated members), and ONNX
// TensorProto .pb files (the ONNX test data format). Errors name the file and what is wrong.
//
// Every size a file declares (a .npy header's shape, a zip directory's member sizes, a
// TensorProto's dims) is checked, with overflow-checked arithmetic, against the bytes the file
// holds before anything of that size is allocated: a header that claims 2^60 elements is a
// message, not an allocation. Files are read only when they are regular files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/diagnostic.h"
#include "runtime/src/session.h"

namespace quilt::tools {

using rt::OwnedTensor;

Expected<OwnedTensor> ParseNpy(std::string_view bytes, const std::string& where);
Expected<OwnedTensor> ReadNpy(const std::string& path);
// Every array of an .npz archive, named by its member name without ".npy".
Expected<std::vector<OwnedTensor>> ReadNpz(const std::string& path);
// The member of an .npz archive named `name` (as "name.npy" or "name"), or its only member; else
// an error that lists the members.
Expected<OwnedTensor> ReadNpzMember(const std::string& path, const std::string& name);
// An ONNX TensorProto; the name is the proto's own.
Expected<OwnedTensor> ReadTensorPb(const std::string& path);
// The tensor for the input `name`, by extension: a .npy, the member `name` of an .npz (see
// ReadNpzMember) or a .pb; named `name`.
Expected<OwnedTensor> ReadInputTensor(const std::string& path, const std::string& name);

std::string NpyBytes(const OwnedTensor& t);
// Writes through a temporary file renamed over `path` (see tools/files.h).
Status WriteNpy(const std::string& path, const OwnedTensor& t);

}  // namespace quilt::tools

// Files as the tools read and write them.
//
//   if (Status s = CheckInputFile(model, "the model"); !s) ...   // before a library opens it
//   Expected<std::string> text = ReadRegularFile(path, "");      // open, check, read
//   Status w = WriteFileAtomically(output, bytes, "the package");
//
// An input is read only when it is a regular file: a FIFO would block the tool forever on open,
// a directory reads as nothing, a device never ends. ReadRegularFile opens without blocking and
// checks the descriptor it opened; CheckInputFile is for paths a library opens itself.
//
// An output is written to a unique temporary file in its own folder (created with O_EXCL, so no
// existing file is touched) and renamed over the output: a reader sees the old file or the whole
// new one, two writers of one output never mix their bytes, and every failure removes the
// temporary file. An output that exists and is not a regular file (a directory, a FIFO, a
// device) is refused rather than replaced.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "ir/diagnostic.h"

namespace quilt::tools {

// "a directory", "a FIFO (named pipe)", ... for a stat mode that is not a regular file.
std::string FileTypeName(mode_t mode);

// `path` exists and is a regular file (after symlinks). `what` ("the model", "" for none) names
// the path's role in the message: "cannot read the model 'x': it is a directory, not a file".
Status CheckInputFile(const std::string& path, const std::string& what);

// The bytes of the regular file `path`, opened without blocking and checked before reading.
Expected<std::string> ReadRegularFile(const std::string& path, const std::string& what);

// `path` is absent or a regular file: what WriteFileAtomically would replace.
Status CheckOutputFile(const std::string& path, const std::string& what);

// Writes `bytes` to `path` through a unique temporary file beside it, renamed over `path`. The
// file gets the mode a new file gets (0666 less the umask).
Status WriteFileAtomically(const std::string& path, std::string_view bytes,
                           const std::string& what);

}  // namespace quilt::tools

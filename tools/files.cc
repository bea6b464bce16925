#include "tools/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace quilt::tools {
namespace {

std::string Named(const std::string& what, const std::string& path) {
  return (what.empty() ? "" : what + " ") + "'" + path + "'";
}

Diagnostic NotAFile(const char* verb, const std::string& what, const std::string& path,
                    mode_t mode) {
  return Error(std::string("cannot ") + verb + " " + Named(what, path) + ": it is " +
               FileTypeName(mode) + ", not a file");
}

Diagnostic Failed(const char* verb, const std::string& what, const std::string& path, int err) {
  return Error(std::string("cannot ") + verb + " " + Named(what, path) + ": " + std::strerror(err));
}

// The folder part of `path` ("." for a bare name) and the name in it.
void Split(const std::string& path, std::string* dir, std::string* name) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) {
    *dir = ".";
    *name = path;
    return;
  }
  *dir = slash == 0 ? "/" : path.substr(0, slash);
  *name = path.substr(slash + 1);
}

}  // namespace

std::string FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

Status CheckInputFile(const std::string& path, const std::string& what) {
  if (path.empty()) return Error("cannot read " + Named(what, path) + ": the path is empty");
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return Failed("read", what, path, errno);
  if (!S_ISREG(st.st_mode)) return NotAFile("read", what, path, st.st_mode);
  return {};
}

Expected<std::string> ReadRegularFile(const std::string& path, const std::string& what) {
  if (path.empty()) return Error("cannot read " + Named(what, path) + ": the path is empty");
  // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer; the type check
  // then refuses it. Regular files ignore the flag.
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    // A socket, say, cannot be opened at all: say what it is rather than ENXIO.
    int err = errno;
    if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      return NotAFile("read", what, path, st.st_mode);
    }
    return Failed("read", what, path, err);
  }
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return Failed("read", what, path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return NotAFile("read", what, path, st.st_mode);
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(st.st_size));
  std::vector<char> buf(1 << 16);
  for (;;) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return Failed("read", what, path, err);
    }
    if (n == 0) break;
    bytes.append(buf.data(), static_cast<size_t>(n));
  }
  close(fd);
  return bytes;
}

Status CheckOutputFile(const std::string& path, const std::string& what) {
  std::string dir, name;
  Split(path, &dir, &name);
  if (name.empty() || name == "." || name == "..") {
    return Error("cannot write " + Named(what, path) + ": the path names a folder, not a file");
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return NotAFile("write", what, path, st.st_mode);
    return {};
  }
  if (errno != ENOENT) return Failed("write", what, path, errno);
  if (stat(dir.c_str(), &st) != 0) {
    return Error("cannot write " + Named(what, path) + ": its folder '" + dir +
                 "': " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Error("cannot write " + Named(what, path) + ": its folder '" + dir + "' is " +
                 FileTypeName(st.st_mode));
  }
  return {};
}

Status WriteFileAtomically(const std::string& path, std::string_view bytes,
                           const std::string& what) {
  QUILT_TRY(CheckOutputFile(path, what));
  std::string dir, name;
  Split(path, &dir, &name);
  // A hidden name in the output's folder, short enough for NAME_MAX whatever the output's name.
  std::string pattern = (dir == "." && path.find('/') == std::string::npos ? "" : dir + "/") + "." +
                        name.substr(0, 200) + ".XXXXXX";
  std::vector<char> tmp(pattern.begin(), pattern.end());
  tmp.push_back('\0');
  int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    return Error("cannot write " + Named(what, path) + ": cannot create a file in '" + dir +
                 "': " + std::strerror(errno));
  }
  auto fail = [&](int err, const char* doing) -> Status {
    if (fd >= 0) close(fd);
    unlink(tmp.data());
    return Error("cannot write " + Named(what, path) + ": " + doing + ": " + std::strerror(err));
  };
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errno, "writing");
    done += static_cast<size_t>(n);
  }
  // mkostemp makes the file 0600; give it the mode a file created in its place would have.
  mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) != 0) return fail(errno, "setting its mode");
  if (fsync(fd) != 0) return fail(errno, "flushing it");
  int closed = close(fd);
  fd = -1;
  if (closed != 0) return fail(errno, "closing it");
  if (rename(tmp.data(), path.c_str()) != 0) return fail(errno, "renaming it into place");
  return {};
}

}  // namespace quilt::tools

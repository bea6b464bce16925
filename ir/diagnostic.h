// Diagnostics for problems caused by the input (a malformed model, a bad IR text, a placement
// conflict), and Expected<T>, the result type of every fallible compiler-side function.
// Broken invariants of our own are QUILT_CHECK failures instead: they abort with file and line.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace quilt {

struct Diagnostic {
  std::string message;
  // Where: "FILE:LINE:COL" for text, or a node / value name; empty when unknown.
  std::string location;

  std::string ToString() const { return location.empty() ? message : location + ": " + message; }
};

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}   // NOLINT: implicit on purpose
  Expected(Diagnostic d) : v_(std::move(d)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Diagnostic& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Diagnostic> v_;
};

// Expected<void>: success or a diagnostic.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Diagnostic d) : d_(std::move(d)) {}  // NOLINT
  bool ok() const { return !d_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Diagnostic& error() const { return *d_; }

 private:
  std::optional<Diagnostic> d_;
};

inline Diagnostic Error(std::string message, std::string location = "") {
  return Diagnostic{std::move(message), std::move(location)};
}

// Returns the diagnostic of a failed Status from the enclosing function.
#define QUILT_TRY(expr)                                                  \
  do {                                                                   \
    if (::quilt::Status try_s_ = (expr); !try_s_) return try_s_.error(); \
  } while (0)

namespace detail {
// Collects the message of a failed QUILT_CHECK and aborts when destroyed.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond) {
    os_ << file << ":" << line << ": check failed: " << cond << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::fprintf(stderr, "%s\n", os_.str().c_str());
    std::abort();
  }
  template <typename T>
  CheckFailure& operator<<(const T& v) {
    os_ << v;
    return *this;
  }

 private:
  std::ostringstream os_;
};
}  // namespace detail

}  // namespace quilt

#define QUILT_CHECK(cond) \
  if (cond) {             \
  } else                  \
    ::quilt::detail::CheckFailure(__FILE__, __LINE__, #cond)

// Status: the result of a fallible runtime call. OK carries nothing; an error carries a message
// that callers extend with context on the way up ("step 12 (nn.conv2d, node 'conv1'): ...").
#pragma once

#include <memory>
#include <string>
#include <utility>

namespace quilt::rt {

// What kind of failure an error is: most are kError; a run cancelled by its caller
// (RunControl) and a limit reached (SessionLimits) are told apart, so a caller can act on them.
enum class StatusCode { kOk = 0, kError = 1, kCancelled = 2, kLimit = 3 };

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message, StatusCode code = StatusCode::kError) {
    Status s;
    s.message_ = std::make_shared<std::string>(std::move(message));
    s.code_ = code;
    return s;
  }
  bool ok() const { return message_ == nullptr; }
  StatusCode code() const { return code_; }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }
  // The same error with `context: ` in front of its message; OK stays OK.
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Error(context + ": " + *message_, code_);
  }

 private:
  std::shared_ptr<const std::string> message_;
  StatusCode code_ = StatusCode::kOk;
};

#define QUILT_RETURN_IF_ERROR(expr)   \
  do {                                \
    ::quilt::rt::Status _st = (expr); \
    if (!_st.ok()) return _st;        \
  } while (0)

}  // namespace quilt::rt

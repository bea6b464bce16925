// Tokenizer and recursive-descent parser for the Python subset used by TVMScript.
//
// Two stages:
//  1. Lexer turns the whole source into a token vector, Python style: NAME, NUMBER (value
//     decoded), STRING (escapes decoded), OP, NEWLINE at the end of each logical line, INDENT /
//     DEDENT from an indentation stack, END. Comments, blank lines and `\` continuations are
//     dropped, and newlines inside (), [], {} are ignored (implicit line joining). On the first
//     lexical error (tab in indentation, unterminated string, bad dedent, unclosed bracket, ...)
//     it stops and appends an ERROR token carrying the message, so errors still come out in
//     source order: the parser only reports it once it gets that far.
//  2. Parser walks the tokens by recursive descent, one function per grammar level
//     (or > and > not > comparison > | > ^ > & > shifts > + - > * / // % @ > unary > ** >
//     postfix > atom), and builds the immutable AST of py_ast.h. Every function returns null /
//     false on failure after recording the first error; a failure at the ERROR token reports
//     the lexer's message instead, as does any failure after a bracket that is never closed
//     ("'(' was never closed" is the real cause there).
// ToString prints an expression back, adding parentheses only where precedence needs them.
#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <string>
#include <utility>

#include "ir/text/py_ast.h"

namespace quilt::ir::text {
namespace {

constexpr size_t kNone = static_cast<size_t>(-1);
constexpr int kMaxDepth = 200;  // nesting limit for expressions and blocks (guards the stack)

enum class TokKind { kName, kNumber, kString, kOp, kNewline, kIndent, kDedent, kEnd, kError };

struct Token {
  TokKind kind = TokKind::kEnd;
  Loc loc;
  std::string text;   // spelling in the source; the message for kError
  std::string value;  // kString: decoded value
  bool is_float = false;
  int64_t int_value = 0;
  double float_value = 0;
};

// Escape letters and the characters they stand for (both directions).
constexpr std::string_view kEscapeLetters = "ntrabfv\\'\"";
constexpr std::string_view kEscapedChars = "\n\t\r\a\b\f\v\\'\"";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) return out->push_back(static_cast<char>(cp));
  const int n = cp < 0x800 ? 1 : cp < 0x10000 ? 2 : 3;  // continuation bytes
  out->push_back(static_cast<char>(((0xFF << (7 - n)) & 0xFF) | (cp >> (6 * n))));
  for (int i = n - 1; i >= 0; --i) out->push_back(static_cast<char>(0x80 | ((cp >> 6 * i) & 0x3F)));
}

// A byte as it should appear in a message or a string literal: itself if printable, else \xNN.
std::string Printable(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u != 0x7F) return std::string(1, c);
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("\\x") + kHex[u >> 4] + kHex[u & 0xF];
}

// ---------------------------------------------------------------------------------------------
// Stage 1: tokens

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {
    if (src_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = line_start_ = 3;  // UTF-8 byte order mark
  }

  // Returns the tokens, ending with kEnd or kError. If the error is an unclosed bracket,
  // *unclosed_open is the index of that bracket's token.
  std::vector<Token> Run(size_t* unclosed_open) {
    Lex();
    *unclosed_open = unclosed_open_;
    return std::move(toks_);
  }

 private:
  bool AtEnd() const { return pos_ >= src_.size(); }
  char Ch(size_t k = 0) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
  Loc Here() const { return {line_, static_cast<int>(pos_ - line_start_) + 1}; }
  void Advance(size_t n = 1) {
    for (size_t i = 0; i < n && !AtEnd(); ++i, ++pos_) {
      if (src_[pos_] == '\n') ++line_, line_start_ = pos_ + 1;
    }
  }
  void SkipComment() {
    while (!AtEnd() && Ch() != '\n') Advance();
  }
  Token& Emit(TokKind kind, Loc loc, std::string text) {
    Token& tok = toks_.emplace_back();
    tok.kind = kind;
    tok.loc = loc;
    tok.text = std::move(text);
    if (kind <= TokKind::kOp) last_end_ = Here();  // a real token, not layout
    return tok;
  }
  bool Error(Loc loc, std::string message) {
    Emit(TokKind::kError, loc, std::move(message));
    return false;
  }
  bool Lex();
  bool LexIndentation();
  bool LexNumber();
  bool LexString();
  bool LexEscape(Loc loc, std::string* value);

  std::string_view src_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  Loc last_end_{1, 1};  // just past the last real token: where a NEWLINE token is placed
  bool at_line_start_ = true;
  std::vector<int> indents_ = {0};
  std::vector<size_t> brackets_;  // token indices of the open brackets
  size_t unclosed_open_ = kNone;  // set with the "never closed" error
  std::vector<Token> toks_;
};

bool Lexer::Lex() {
  static constexpr std::array<std::string_view, 18> kOps2 = {
      "**", "//", "==", "!=", "<=", ">=", "->", "<<", ">>",
      "+=", "-=", "*=", "/=", "%=", "@=", "&=", "|=", "^="};
  static constexpr std::string_view kOps1 = "()[]{},:.;@=+-*/%<>&|^~";
  while (true) {
    if (at_line_start_ && brackets_.empty() && !LexIndentation()) return false;
    if (AtEnd()) break;
    const char c = Ch();
    const Loc loc = Here();
    const size_t start = pos_;
    if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
      Advance();
    } else if (c == '#') {
      SkipComment();
    } else if (c == '\\') {
      const size_t k = Ch(1) == '\r' ? 2 : 1;
      if (Ch(k) != '\n') return Error(loc, "unexpected character after line continuation");
      Advance(k + 1);
    } else if (c == '\n') {
      Advance();
      if (brackets_.empty()) {
        if (!toks_.empty() && toks_.back().kind != TokKind::kNewline) {
          Emit(TokKind::kNewline, last_end_, "");
        }
        at_line_start_ = true;
      }
    } else if (IsIdentStart(c)) {
      while (IsIdentChar(Ch())) Advance();
      Emit(TokKind::kName, loc, std::string(src_.substr(start, pos_ - start)));
    } else if (IsDigit(c) || (c == '.' && IsDigit(Ch(1)))) {
      if (!LexNumber()) return false;
    } else if (c == '"' || c == '\'') {
      if (!LexString()) return false;
    } else if (std::find(kOps2.begin(), kOps2.end(), src_.substr(pos_, 2)) != kOps2.end()) {
      Advance(2);
      Emit(TokKind::kOp, loc, std::string(src_.substr(start, 2)));
    } else if (kOps1.find(c) != std::string_view::npos) {
      if (c == '(' || c == '[' || c == '{') brackets_.push_back(toks_.size());
      if ((c == ')' || c == ']' || c == '}') && !brackets_.empty()) brackets_.pop_back();
      Advance();
      Emit(TokKind::kOp, loc, std::string(1, c));
    } else {
      return Error(loc, "unexpected character '" + Printable(c) + "'");
    }
  }
  if (!brackets_.empty()) {
    unclosed_open_ = brackets_.back();
    const Token& open = toks_[unclosed_open_];
    return Error(open.loc, "'" + open.text + "' was never closed");
  }
  if (!toks_.empty() && toks_.back().kind != TokKind::kNewline) {
    Emit(TokKind::kNewline, last_end_, "");
  }
  for (size_t i = 1; i < indents_.size(); ++i) Emit(TokKind::kDedent, Here(), "");
  Emit(TokKind::kEnd, Here(), "");
  return true;
}

// At the start of a line outside brackets: skips blank and comment-only lines, then compares
// the indentation of the next line with the stack and emits INDENT / DEDENTs.
bool Lexer::LexIndentation() {
  int width = 0;
  Loc tab;
  bool has_tab = false;
  while (true) {
    width = 0;
    has_tab = false;
    for (; Ch() == ' ' || Ch() == '\t'; ++width, Advance()) {
      if (Ch() == '\t' && !has_tab) has_tab = true, tab = Here();
    }
    if (Ch() == '#') SkipComment();
    if (Ch() == '\r' && Ch(1) == '\n') Advance();
    if (AtEnd()) return true;
    if (Ch() != '\n') break;
    Advance();  // blank line: stay at line start
  }
  if (has_tab) return Error(tab, "tab character in indentation is not supported");
  at_line_start_ = false;
  if (width > indents_.back()) {
    indents_.push_back(width);
    Emit(TokKind::kIndent, Here(), "");
    return true;
  }
  for (; width < indents_.back(); indents_.pop_back()) Emit(TokKind::kDedent, Here(), "");
  if (width == indents_.back()) return true;
  return Error(Here(), "unindent does not match any outer indentation level");
}

bool Lexer::LexNumber() {
  const Loc loc = Here();
  const size_t start = pos_;
  bool is_float = false;
  int base = 10;
  const char prefix = static_cast<char>(Ch(1) | 0x20);  // lower case
  if (Ch() == '0' && (prefix == 'x' || prefix == 'o' || prefix == 'b')) {
    base = prefix == 'x' ? 16 : prefix == 'o' ? 8 : 2;
    Advance(2);
    while (IsIdentChar(Ch())) Advance();
  } else {
    const auto digits = [this] {
      while (IsDigit(Ch()) || Ch() == '_') Advance();
    };
    digits();
    if (Ch() == '.') is_float = true, Advance(), digits();
    const size_t k = (Ch(1) == '+' || Ch(1) == '-') ? 2 : 1;
    if ((Ch() == 'e' || Ch() == 'E') && IsDigit(Ch(k))) is_float = true, Advance(k), digits();
    if (IsIdentChar(Ch())) return Error(loc, "invalid decimal literal");
  }
  const std::string_view text = src_.substr(start, pos_ - start);
  std::string digits;
  for (char c : text.substr(base == 10 ? 0 : 2)) {
    if (c != '_') digits.push_back(c);
  }
  const char* first = digits.data();
  const char* last = first + digits.size();
  double float_value = 0;
  uint64_t int_value = 0;
  const auto [ptr, ec] = is_float ? std::from_chars(first, last, float_value)
                                  : std::from_chars(first, last, int_value, base);
  if (ec == std::errc::result_out_of_range && !is_float) {
    return Error(loc, "integer literal is too large");
  }
  if (ec == std::errc::result_out_of_range) {
    float_value = std::strtod(digits.c_str(), nullptr);  // overflow to inf, or underflow
  } else if (ec != std::errc() || ptr != last || digits.empty() || text.back() == '_') {
    return Error(loc, "invalid number literal");
  }
  Token& tok = Emit(TokKind::kNumber, loc, std::string(text));
  tok.is_float = is_float;
  tok.float_value = float_value;
  tok.int_value = static_cast<int64_t>(int_value);  // wraps above INT64_MAX
  return true;
}

bool Lexer::LexString() {
  const Loc loc = Here();
  const size_t start = pos_;
  const char quote = Ch();
  const bool triple = Ch(1) == quote && Ch(2) == quote;
  Advance(triple ? 3 : 1);
  std::string value;
  while (!(Ch() == quote && (!triple || (Ch(1) == quote && Ch(2) == quote)))) {
    if (AtEnd() || (!triple && (Ch() == '\n' || (Ch() == '\r' && Ch(1) == '\n')))) {
      return Error(loc, triple ? "unterminated triple-quoted string" : "unterminated string");
    }
    if (Ch() == '\\') {
      const Loc esc = Here();
      Advance();
      if (!AtEnd() && !LexEscape(esc, &value)) return false;
    } else {
      value.push_back(Ch());
      Advance();
    }
  }
  Advance(triple ? 3 : 1);
  Emit(TokKind::kString, loc, std::string(src_.substr(start, pos_ - start))).value =
      std::move(value);
  return true;
}

// Decodes the escape whose backslash (at `loc`) was just consumed.
bool Lexer::LexEscape(Loc loc, std::string* value) {
  const char c = Ch();
  Advance();
  if (size_t i = kEscapeLetters.find(c); i != std::string_view::npos) {
    value->push_back(kEscapedChars[i]);
  } else if (c == '\r' || c == '\n') {  // backslash-newline: continues the string
    if (c == '\r' && Ch() == '\n') Advance();
  } else if (c == 'x' || c == 'u' || c == 'U') {
    const int n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
    uint32_t cp = 0;
    for (int i = 0; i < n; ++i, Advance()) {
      const int h = HexValue(Ch());
      if (h < 0 || cp > 0x10FFFF) return Error(loc, std::string("invalid \\") + c + " escape");
      cp = cp * 16 + static_cast<uint32_t>(h);
    }
    if (cp > 0x10FFFF) return Error(loc, std::string("invalid \\") + c + " escape");
    if (c == 'x') {
      value->push_back(static_cast<char>(cp));
    } else {
      AppendUtf8(cp, value);
    }
  } else if (c >= '0' && c <= '7') {  // octal, up to three digits
    int v = c - '0';
    for (int i = 0; i < 2 && Ch() >= '0' && Ch() <= '7'; ++i, Advance()) v = v * 8 + (Ch() - '0');
    value->push_back(static_cast<char>(v & 0xFF));
  } else {  // unknown escape: kept verbatim, as Python does
    value->push_back('\\');
    value->push_back(c);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Stage 2: AST

template <size_t N>
bool OneOf(std::string_view s, const std::array<std::string_view, N>& set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

bool IsReserved(std::string_view s) {
  static constexpr std::array<std::string_view, 32> kReserved = {
      "and",    "as",   "assert", "async",  "await",  "break",   "class",    "continue",
      "def",    "del",  "elif",   "else",   "except", "finally", "for",      "from",
      "global", "if",   "import", "in",     "is",     "lambda",  "nonlocal", "not",
      "or",     "pass", "raise",  "return", "try",    "while",   "with",     "yield"};
  return OneOf(s, kReserved);
}

bool IsUnsupportedStatement(std::string_view s) {
  static constexpr std::array<std::string_view, 14> kWords = {
      "assert", "async",  "break",    "continue", "del", "for",   "from",
      "global", "import", "nonlocal", "raise",    "try", "while", "yield"};
  return OneOf(s, kWords);
}

bool IsComparison(std::string_view op) {
  static constexpr std::array<std::string_view, 6> kOps = {"==", "!=", "<", "<=", ">", ">="};
  return OneOf(op, kOps);
}

// Binary operator levels between comparison and unary, loosest first.
constexpr std::array<std::array<std::string_view, 5>, 6> kBinaryLevels = {{
    {"|"},
    {"^"},
    {"&"},
    {"<<", ">>"},
    {"+", "-"},
    {"*", "/", "//", "%", "@"},
}};

std::string Describe(const Token& t) {
  if (t.kind == TokKind::kNewline) return "'NEWLINE'";
  if (t.kind == TokKind::kIndent) return "'INDENT'";
  if (t.kind == TokKind::kDedent) return "'DEDENT'";
  if (t.kind == TokKind::kEnd) return "'end of input'";
  if (t.kind == TokKind::kString && t.text.size() > 24) return "'" + t.text.substr(0, 20) + "...'";
  return "'" + t.text + "'";
}

std::shared_ptr<PyExpr> MakeExpr(PyExprKind kind, Loc loc) {
  auto e = std::make_shared<PyExpr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}

std::shared_ptr<PyStmt> MakeStmt(PyStmtKind kind, Loc loc) {
  auto s = std::make_shared<PyStmt>();
  s->kind = kind;
  s->loc = loc;
  return s;
}

class DepthGuard {
 public:
  explicit DepthGuard(int* depth) : depth_(depth) { ++*depth_; }
  ~DepthGuard() { --*depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
  bool TooDeep() const { return *depth_ > kMaxDepth; }

 private:
  int* depth_;
};

class Parser {
 public:
  Parser(std::string_view src, std::vector<Token> toks, size_t unclosed_open)
      : src_(src), toks_(std::move(toks)), unclosed_open_(unclosed_open) {}

  bool ParseModule(PyModule* out) {
    while (Cur().kind != TokKind::kEnd) {
      if (!ParseStatement(&out->body)) return false;
    }
    return true;
  }
  const PyError& error() const { return error_; }

 private:
  using StmtList = std::vector<PyStmtPtr>;

  // --- token helpers ---
  const Token& Cur() const { return toks_[pos_]; }
  const Token& Next() const { return toks_[std::min(pos_ + 1, toks_.size() - 1)]; }
  void Advance() { pos_ = std::min(pos_ + 1, toks_.size() - 1); }
  bool IsOp(std::string_view op) const { return Cur().kind == TokKind::kOp && Cur().text == op; }
  bool IsKeyword(std::string_view kw) const {
    return Cur().kind == TokKind::kName && Cur().text == kw;
  }
  bool AcceptOp(std::string_view op) {
    if (!IsOp(op)) return false;
    Advance();
    return true;
  }
  bool IsName() const { return Cur().kind == TokKind::kName && !IsReserved(Cur().text); }
  bool StartsExpr() const {
    const Token& t = Cur();
    if (t.kind == TokKind::kNumber || t.kind == TokKind::kString) return true;
    if (t.kind == TokKind::kName) return !IsReserved(t.text) || t.text == "not";
    static constexpr std::array<std::string_view, 6> kPrefixOps = {"(", "[", "{", "-", "+", "~"};
    return t.kind == TokKind::kOp && OneOf(t.text, kPrefixOps);
  }
  static bool Push(StmtList* out, PyStmtPtr stmt) {
    out->push_back(std::move(stmt));
    return true;
  }

  // --- errors: all return false, so that `return Fail(...)` works in bool functions ---
  bool FailAt(Loc loc, std::string message) {
    if (!failed_) error_ = PyError{loc, std::move(message)};
    failed_ = true;
    return false;
  }
  // Fails at the current token; a lexical error there (or an unclosed bracket before it) wins.
  bool Fail(std::string message) {
    if (Cur().kind == TokKind::kError || (unclosed_open_ != kNone && pos_ > unclosed_open_)) {
      return FailAt(toks_.back().loc, toks_.back().text);
    }
    return FailAt(Cur().loc, std::move(message));
  }
  bool Expected(std::string_view what) {
    return Fail("expected " + std::string(what) + " but found " + Describe(Cur()));
  }
  // Accepts `op` or fails with "expected 'op' <context> but found ...".
  bool ExpectOp(std::string_view op, std::string_view context) {
    if (AcceptOp(op)) return true;
    return Expected("'" + std::string(op) + "'" + (context.empty() ? "" : " ") +
                    std::string(context));
  }

  // --- statements ---
  bool ParseStatement(StmtList* out);
  bool ParseSimpleStatements(StmtList* out);
  bool ParseSimpleStatement(StmtList* out);
  bool ParseDecorated(StmtList* out);
  bool ParseFunctionDef(std::vector<PyExprPtr> decorators, StmtList* out, int first_line = 0);
  bool SkipRawBody(int first_line, PyStmt* stmt);
  bool ParseClassDef(std::vector<PyExprPtr> decorators, StmtList* out);
  bool ParseIf(StmtList* out);
  bool ParseWith(StmtList* out);
  bool ParseBlock(const std::string& what, int line, StmtList* body);
  bool CheckTarget(const PyExprPtr& e);

  // --- expressions (null on failure) ---
  PyExprPtr ParseTupleOrExpr();
  PyExprPtr ParseExpr();
  PyExprPtr ParseBoolOp(const char* op);
  PyExprPtr ParseNot();
  PyExprPtr ParseComparison();
  PyExprPtr ParseBinary(size_t level);
  PyExprPtr ParseUnary();
  PyExprPtr ParsePostfix();
  PyExprPtr ParseAtom();
  PyExprPtr ParseParen();
  bool ParseCallArgs(PyExpr* call);
  PyExprPtr ParseSequence(PyExprKind kind, const char* close);
  PyExprPtr MakeBinary(const std::string& op, PyExprPtr lhs, PyExprPtr rhs) {
    auto e = MakeExpr(PyExprKind::kBinOp, lhs->loc);
    e->name = op;
    e->items = {std::move(lhs), std::move(rhs)};
    return e;
  }

  std::string_view src_;
  std::vector<Token> toks_;
  size_t unclosed_open_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool failed_ = false;
  PyError error_;
};

bool Parser::ParseStatement(StmtList* out) {
  const Token& t = Cur();
  if (t.kind == TokKind::kIndent) return Fail("unexpected indent");
  if (t.kind == TokKind::kDedent) return Fail("unexpected dedent");
  if (IsOp("@")) return ParseDecorated(out);
  if (t.kind == TokKind::kName) {
    if (t.text == "def") return ParseFunctionDef({}, out);
    if (t.text == "class") return ParseClassDef({}, out);
    if (t.text == "if") return ParseIf(out);
    if (t.text == "with") return ParseWith(out);
    if (t.text == "elif" || t.text == "else") return Fail("'" + t.text + "' without matching 'if'");
  }
  return ParseSimpleStatements(out);
}

// simple_stmt (';' simple_stmt)* [';'] NEWLINE
bool Parser::ParseSimpleStatements(StmtList* out) {
  do {
    if (!ParseSimpleStatement(out)) return false;
  } while (AcceptOp(";") && Cur().kind != TokKind::kNewline);
  if (Cur().kind != TokKind::kNewline) return Fail("unexpected token " + Describe(Cur()));
  Advance();
  return true;
}

bool Parser::ParseSimpleStatement(StmtList* out) {
  const Token& t = Cur();
  const Loc loc = t.loc;
  if (IsKeyword("pass")) {
    Advance();
    return Push(out, MakeStmt(PyStmtKind::kPass, loc));
  }
  if (IsKeyword("return")) {
    Advance();
    auto stmt = MakeStmt(PyStmtKind::kReturn, loc);
    if (StartsExpr() && !(stmt->value = ParseTupleOrExpr())) return false;
    return Push(out, stmt);
  }
  if (t.kind == TokKind::kName && IsUnsupportedStatement(t.text)) {
    return Fail("'" + t.text + "' statements are not supported");
  }
  PyExprPtr first = ParseTupleOrExpr();
  if (!first) return false;
  auto stmt = MakeStmt(PyStmtKind::kAssign, loc);
  if (AcceptOp(":")) {  // target: annotation = value
    const PyExprKind k = first->kind;
    if (k != PyExprKind::kName && k != PyExprKind::kAttr && k != PyExprKind::kSubscript) {
      return FailAt(first->loc, "only a single name, attribute or subscript can be annotated");
    }
    stmt->targets.push_back(first);
    if (!(stmt->annotation = ParseExpr()) || !ExpectOp("=", "after annotation")) return false;
    return (stmt->value = ParseTupleOrExpr()) && Push(out, stmt);
  }
  if (IsOp("=")) {  // target = [target = ...] value
    PyExprPtr value = first;
    while (AcceptOp("=")) {
      if (!CheckTarget(value)) return false;
      stmt->targets.push_back(value);
      if (!(value = ParseTupleOrExpr())) return false;
    }
    stmt->value = value;
    return Push(out, stmt);
  }
  const std::string& op = Cur().text;
  if (Cur().kind == TokKind::kOp && op.size() == 2 && op[1] == '=' && !IsComparison(op)) {
    return Fail("augmented assignment " + Describe(Cur()) + " is not supported");
  }
  stmt->kind = PyStmtKind::kExpr;
  stmt->value = first;
  return Push(out, stmt);
}

// Valid targets: names, attributes, subscripts, and tuples / lists of targets.
bool Parser::CheckTarget(const PyExprPtr& e) {
  if (e->kind == PyExprKind::kTuple || e->kind == PyExprKind::kList) {
    for (const PyExprPtr& item : e->items) {
      if (!CheckTarget(item)) return false;
    }
    return true;
  }
  if (e->kind == PyExprKind::kName || e->kind == PyExprKind::kAttr ||
      e->kind == PyExprKind::kSubscript) {
    return true;
  }
  return FailAt(e->loc, "cannot assign to expression '" + ToString(*e) + "'");
}

// After the ':' of a compound statement: NEWLINE INDENT statement+ DEDENT, or a one-line body.
bool Parser::ParseBlock(const std::string& what, int line, StmtList* body) {
  DepthGuard guard(&depth_);
  if (guard.TooDeep()) return Fail("too many nested blocks");
  if (Cur().kind != TokKind::kNewline) return ParseSimpleStatements(body);  // `if c: pass`
  Advance();
  if (Cur().kind != TokKind::kIndent) {
    return Fail("expected an indented block after " + what + " on line " + std::to_string(line));
  }
  Advance();
  while (Cur().kind != TokKind::kDedent) {
    if (Cur().kind == TokKind::kEnd) return Expected("DEDENT");
    if (!ParseStatement(body)) return false;
  }
  Advance();
  return true;
}

bool Parser::ParseDecorated(StmtList* out) {
  const int first_line = Cur().loc.line;
  std::vector<PyExprPtr> decorators;
  while (AcceptOp("@")) {
    PyExprPtr e = ParseExpr();
    if (!e) return false;
    if (Cur().kind != TokKind::kNewline) return Expected("NEWLINE after decorator");
    Advance();
    decorators.push_back(std::move(e));
  }
  if (IsKeyword("def")) return ParseFunctionDef(std::move(decorators), out, first_line);
  if (IsKeyword("class")) return ParseClassDef(std::move(decorators), out);
  return Expected("'def' or 'class' after decorator");
}

// `T.prim_func` or `T.prim_func(...)`.
bool IsPrimFuncDecorator(const PyExpr& d) {
  const PyExpr& e = d.kind == PyExprKind::kCall ? *d.base : d;
  return e.kind == PyExprKind::kAttr && e.name == "prim_func" && e.base &&
         e.base->kind == PyExprKind::kName && e.base->name == "T";
}

bool Parser::ParseFunctionDef(std::vector<PyExprPtr> decorators, StmtList* out, int first_line) {
  auto stmt = MakeStmt(PyStmtKind::kFunctionDef, Cur().loc);
  bool prim = false;
  for (const PyExprPtr& d : decorators) prim |= IsPrimFuncDecorator(*d);
  stmt->decorators = std::move(decorators);
  Advance();  // def
  if (!IsName()) return Expected("function name after 'def'");
  stmt->name = Cur().text;
  Advance();
  if (!ExpectOp("(", "after function name")) return false;
  bool seen_default = false;
  while (!IsOp(")")) {
    if (IsOp("*") || IsOp("**") || IsOp("/")) {
      return Fail("parameter syntax " + Describe(Cur()) + " is not supported");
    }
    if (!IsName()) return Expected("parameter name");
    PyParam param;
    param.name = Cur().text;
    param.loc = Cur().loc;
    Advance();
    if (AcceptOp(":") && !(param.annotation = ParseExpr())) return false;
    if (AcceptOp("=")) {
      if (!(param.default_value = ParseExpr())) return false;
      seen_default = true;
    } else if (seen_default) {
      return FailAt(param.loc, "parameter without a default follows parameter with a default");
    }
    for (const PyParam& p : stmt->params) {
      if (p.name == param.name) {
        return FailAt(param.loc, "duplicate parameter '" + param.name + "' in function definition");
      }
    }
    stmt->params.push_back(std::move(param));
    if (!AcceptOp(",")) break;
  }
  if (!ExpectOp(")", "or ',' in parameter list")) return false;
  if (AcceptOp("->") && !(stmt->returns = ParseExpr())) return false;
  if (!ExpectOp(":", "after function signature")) return false;
  if (prim)
    return SkipRawBody(first_line ? first_line : stmt->loc.line, stmt.get()) && Push(out, stmt);
  return ParseBlock("function definition", stmt->loc.line, &stmt->body) && Push(out, stmt);
}

// The indented body of a T.prim_func: its tokens are passed over (the lexer has checked them),
// and the definition's lines from `first_line` on become stmt->raw.
bool Parser::SkipRawBody(int first_line, PyStmt* stmt) {
  if (Cur().kind != TokKind::kNewline) return Expected("NEWLINE after the prim_func's header");
  Advance();
  if (Cur().kind != TokKind::kIndent) return Expected("an indented prim_func body");
  int depth = 0, last_line = first_line;
  do {
    switch (Cur().kind) {
      case TokKind::kIndent:
        ++depth;
        break;
      case TokKind::kDedent:
        --depth;
        break;
      case TokKind::kEnd:
      case TokKind::kError:
        return Expected("the end of the prim_func's body");
      default:
        last_line = std::max(last_line, Cur().loc.line);
    }
    Advance();
  } while (depth > 0);
  // Lines first_line..last_line of the source, less the first line's indentation.
  std::vector<std::string_view> lines;
  for (size_t start = 0, line = 1; start <= src_.size() && static_cast<int>(line) <= last_line;
       ++line) {
    size_t end = src_.find('\n', start);
    if (end == std::string_view::npos) end = src_.size();
    if (static_cast<int>(line) >= first_line) lines.push_back(src_.substr(start, end - start));
    start = end + 1;
  }
  size_t indent = lines.empty() ? 0 : lines[0].find_first_not_of(" \t");
  for (std::string_view l : lines) {
    size_t lead = std::min(indent, l.find_first_not_of(" \t") == std::string_view::npos
                                       ? l.size()
                                       : l.find_first_not_of(" \t"));
    std::string_view rest = l.substr(lead);
    while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
    stmt->raw += std::string(rest) + "\n";
  }
  return true;
}

bool Parser::ParseClassDef(std::vector<PyExprPtr> decorators, StmtList* out) {
  auto stmt = MakeStmt(PyStmtKind::kClassDef, Cur().loc);
  stmt->decorators = std::move(decorators);
  Advance();  // class
  if (!IsName()) return Expected("class name after 'class'");
  stmt->name = Cur().text;
  Advance();
  if (AcceptOp("(")) {
    while (!IsOp(")")) {
      if (Cur().kind == TokKind::kName && Next().kind == TokKind::kOp && Next().text == "=") {
        return Fail("keyword arguments in class bases are not supported");
      }
      PyExprPtr base = ParseExpr();
      if (!base) return false;
      stmt->bases.push_back(std::move(base));
      if (!AcceptOp(",")) break;
    }
    if (!ExpectOp(")", "or ',' in class bases")) return false;
  }
  if (!ExpectOp(":", "after class header")) return false;
  return ParseBlock("class definition", stmt->loc.line, &stmt->body) && Push(out, stmt);
}

// `if` with its `elif` chain (built iteratively: each `elif` is a kIf nested in orelse).
bool Parser::ParseIf(StmtList* out) {
  auto root = MakeStmt(PyStmtKind::kIf, Cur().loc);
  for (std::shared_ptr<PyStmt> node = root;;) {
    const std::string keyword = Cur().text;
    const int line = Cur().loc.line;
    Advance();  // if / elif
    if (!(node->value = ParseExpr())) return false;
    if (!ExpectOp(":", "after '" + keyword + "' condition")) return false;
    if (!ParseBlock("'" + keyword + "' statement", line, &node->body)) return false;
    if (IsKeyword("elif")) {
      auto next = MakeStmt(PyStmtKind::kIf, Cur().loc);
      node->orelse.push_back(next);
      node = next;
      continue;
    }
    if (IsKeyword("else")) {
      const int else_line = Cur().loc.line;
      Advance();
      if (!ExpectOp(":", "after 'else'")) return false;
      if (!ParseBlock("'else'", else_line, &node->orelse)) return false;
    }
    break;
  }
  return Push(out, root);
}

bool Parser::ParseWith(StmtList* out) {
  auto stmt = MakeStmt(PyStmtKind::kWith, Cur().loc);
  Advance();  // with
  if (!(stmt->value = ParseExpr())) return false;
  if (IsKeyword("as")) {
    Advance();
    PyExprPtr target = ParseExpr();
    if (!target || !CheckTarget(target)) return false;
    stmt->targets.push_back(std::move(target));
  }
  if (!ExpectOp(":", "after 'with' item")) return false;
  return ParseBlock("'with' statement", stmt->loc.line, &stmt->body) && Push(out, stmt);
}

// expr (',' expr)* [','] -- a bare tuple when there is a comma.
PyExprPtr Parser::ParseTupleOrExpr() {
  PyExprPtr first = ParseExpr();
  if (!first || !IsOp(",")) return first;
  auto tuple = MakeExpr(PyExprKind::kTuple, first->loc);
  tuple->items.push_back(std::move(first));
  while (AcceptOp(",") && StartsExpr()) {
    PyExprPtr e = ParseExpr();
    if (!e) return nullptr;
    tuple->items.push_back(std::move(e));
  }
  return tuple;
}

PyExprPtr Parser::ParseExpr() {
  DepthGuard guard(&depth_);
  if (guard.TooDeep()) return Fail("expression is nested too deeply"), nullptr;
  return ParseBoolOp("or");
}

// or_expr: and_expr ('or' and_expr)*;  and_expr: not_expr ('and' not_expr)*
PyExprPtr Parser::ParseBoolOp(const char* op) {
  const bool is_or = std::string_view(op) == "or";
  PyExprPtr lhs = is_or ? ParseBoolOp("and") : ParseNot();
  while (lhs && IsKeyword(op)) {
    Advance();
    PyExprPtr rhs = is_or ? ParseBoolOp("and") : ParseNot();
    if (!rhs) return nullptr;
    lhs = MakeBinary(op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

PyExprPtr Parser::ParseNot() {
  if (!IsKeyword("not")) return ParseComparison();
  DepthGuard guard(&depth_);
  if (guard.TooDeep()) return Fail("expression is nested too deeply"), nullptr;
  auto e = MakeExpr(PyExprKind::kUnaryOp, Cur().loc);
  e->name = "not";
  Advance();
  PyExprPtr operand = ParseNot();
  if (!operand) return nullptr;
  e->items.push_back(std::move(operand));
  return e;
}

PyExprPtr Parser::ParseComparison() {
  PyExprPtr lhs = ParseBinary(0);
  if (!lhs || Cur().kind != TokKind::kOp || !IsComparison(Cur().text)) return lhs;
  const std::string op = Cur().text;
  Advance();
  PyExprPtr rhs = ParseBinary(0);
  if (!rhs) return nullptr;
  if (Cur().kind == TokKind::kOp && IsComparison(Cur().text)) {
    return Fail("chained comparisons are not supported"), nullptr;
  }
  return MakeBinary(op, std::move(lhs), std::move(rhs));
}

// Left-associative binary levels from kBinaryLevels, then unary.
PyExprPtr Parser::ParseBinary(size_t level) {
  if (level == kBinaryLevels.size()) return ParseUnary();
  PyExprPtr lhs = ParseBinary(level + 1);
  while (lhs && Cur().kind == TokKind::kOp && OneOf(Cur().text, kBinaryLevels[level])) {
    const std::string op = Cur().text;
    Advance();
    PyExprPtr rhs = ParseBinary(level + 1);
    if (!rhs) return nullptr;
    lhs = MakeBinary(op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

// unary: ('-' | '+' | '~') unary | postfix ['**' unary]
// so `**` is right-associative and binds tighter than a unary operator on its left.
PyExprPtr Parser::ParseUnary() {
  if (!IsOp("-") && !IsOp("+") && !IsOp("~")) {
    PyExprPtr base = ParsePostfix();
    if (!base || !AcceptOp("**")) return base;
    PyExprPtr exponent = ParseUnary();
    return exponent ? MakeBinary("**", std::move(base), std::move(exponent)) : nullptr;
  }
  DepthGuard guard(&depth_);
  if (guard.TooDeep()) return Fail("expression is nested too deeply"), nullptr;
  auto e = MakeExpr(PyExprKind::kUnaryOp, Cur().loc);
  e->name = Cur().text;
  Advance();
  PyExprPtr operand = ParseUnary();
  if (!operand) return nullptr;
  e->items.push_back(std::move(operand));
  return e;
}

PyExprPtr Parser::ParsePostfix() {
  PyExprPtr e = ParseAtom();
  while (e) {
    if (AcceptOp(".")) {
      if (Cur().kind != TokKind::kName) return Expected("attribute name after '.'"), nullptr;
      auto attr = MakeExpr(PyExprKind::kAttr, e->loc);
      attr->name = Cur().text;
      attr->base = std::move(e);
      Advance();
      e = std::move(attr);
    } else if (IsOp("(")) {
      auto call = MakeExpr(PyExprKind::kCall, e->loc);
      call->base = std::move(e);
      if (!ParseCallArgs(call.get())) return nullptr;
      e = std::move(call);
    } else if (AcceptOp("[")) {
      auto sub = MakeExpr(PyExprKind::kSubscript, e->loc);
      sub->base = std::move(e);
      PyExprPtr index = ParseTupleOrExpr();
      if (!index) return nullptr;
      sub->items.push_back(std::move(index));
      if (!ExpectOp("]", "")) return nullptr;
      e = std::move(sub);
    } else {
      break;
    }
  }
  return e;
}

bool Parser::ParseCallArgs(PyExpr* call) {
  Advance();  // (
  while (!IsOp(")")) {
    if (IsName() && Next().kind == TokKind::kOp && Next().text == "=") {
      PyKeyword kw{Cur().text, nullptr, Cur().loc};
      for (const PyKeyword& other : call->keywords) {
        if (other.name == kw.name) return Fail("keyword argument '" + kw.name + "' repeated");
      }
      Advance();
      Advance();
      if (!(kw.value = ParseExpr())) return false;
      call->keywords.push_back(std::move(kw));
    } else {
      if (IsOp("*") || IsOp("**")) return Fail("star arguments are not supported");
      if (!call->keywords.empty() && StartsExpr()) {
        return Fail("positional argument follows keyword argument");
      }
      PyExprPtr arg = ParseExpr();
      if (!arg) return false;
      call->items.push_back(std::move(arg));
    }
    if (!AcceptOp(",")) break;
  }
  return ExpectOp(")", "or ','");
}

PyExprPtr Parser::ParseAtom() {
  const Token& t = Cur();
  std::shared_ptr<PyExpr> e;
  if (t.kind == TokKind::kName && !IsReserved(t.text)) {
    if (t.text == "True" || t.text == "False") {
      e = MakeExpr(PyExprKind::kBool, t.loc);
      e->int_value = t.text == "True";
      e->text = t.text;
    } else if (t.text == "None") {
      e = MakeExpr(PyExprKind::kNone, t.loc);
    } else {
      e = MakeExpr(PyExprKind::kName, t.loc);
      e->name = t.text;
    }
    Advance();
  } else if (t.kind == TokKind::kNumber) {
    e = MakeExpr(t.is_float ? PyExprKind::kFloat : PyExprKind::kInt, t.loc);
    e->text = t.text;
    e->int_value = t.int_value;
    e->float_value = t.float_value;
    Advance();
  } else if (t.kind == TokKind::kString) {  // adjacent literals concatenate
    e = MakeExpr(PyExprKind::kString, t.loc);
    for (; Cur().kind == TokKind::kString; Advance()) e->name += Cur().value;
  } else if (IsOp("(")) {
    return ParseParen();
  } else if (IsOp("[")) {
    return ParseSequence(PyExprKind::kList, "]");
  } else if (IsOp("{")) {
    return ParseSequence(PyExprKind::kDict, "}");
  } else {
    return Expected("expression"), nullptr;
  }
  return e;
}

// '[' [expr (',' expr)* [',']] ']'  or  '{' [key ':' value (',' key ':' value)* [',']] '}'
PyExprPtr Parser::ParseSequence(PyExprKind kind, const char* close) {
  auto e = MakeExpr(kind, Cur().loc);
  Advance();
  while (!IsOp(close)) {
    PyExprPtr item = ParseExpr();
    if (!item) return nullptr;
    e->items.push_back(std::move(item));
    if (kind == PyExprKind::kDict) {
      if (!ExpectOp(":", "after dict key") || !(item = ParseExpr())) return nullptr;
      e->items.push_back(std::move(item));
    }
    if (!AcceptOp(",")) break;
  }
  if (!ExpectOp(close, "or ','")) return nullptr;
  return e;
}

// '(' ')' | '(' expr ')' | '(' expr ',' [expr (',' expr)* [',']] ')'
PyExprPtr Parser::ParseParen() {
  auto tuple = MakeExpr(PyExprKind::kTuple, Cur().loc);
  Advance();  // (
  if (AcceptOp(")")) return tuple;
  PyExprPtr first = ParseExpr();
  if (!first) return nullptr;
  if (AcceptOp(")")) return first;
  if (!IsOp(",")) return Expected("')' or ','"), nullptr;
  tuple->items.push_back(std::move(first));
  while (AcceptOp(",") && !IsOp(")")) {
    PyExprPtr e = ParseExpr();
    if (!e) return nullptr;
    tuple->items.push_back(std::move(e));
  }
  if (!ExpectOp(")", "or ','")) return nullptr;
  return tuple;
}

// ---------------------------------------------------------------------------------------------
// Printing

constexpr int kNotPrecedence = 3;
constexpr int kUnaryPrecedence = 11;
constexpr int kPowerPrecedence = 12;
constexpr int kAtomPrecedence = 13;

int BinaryPrecedence(std::string_view op) {
  if (op == "or") return 1;
  if (op == "and") return 2;
  if (IsComparison(op)) return 4;
  for (size_t i = 0; i < kBinaryLevels.size(); ++i) {
    if (OneOf(op, kBinaryLevels[i])) return 5 + static_cast<int>(i);
  }
  return kPowerPrecedence;
}

int Precedence(const PyExpr& e) {
  if (e.kind == PyExprKind::kBinOp) return BinaryPrecedence(e.name);
  if (e.kind == PyExprKind::kUnaryOp) return e.name == "not" ? kNotPrecedence : kUnaryPrecedence;
  return kAtomPrecedence;
}

std::string Bare(const PyExpr& e);

// `e`, parenthesized if it binds less tightly than `min_precedence`.
std::string Str(const PyExprPtr& e, int min_precedence) {
  if (!e) return "<null>";
  return Precedence(*e) < min_precedence ? "(" + Bare(*e) + ")" : Bare(*e);
}

std::string Join(const std::vector<PyExprPtr>& items) {
  std::string s;
  for (const PyExprPtr& item : items) s += (s.empty() ? "" : ", ") + Str(item, 0);
  return s;
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const size_t i = kEscapedChars.find(c);
    out += c != '\'' && i != std::string_view::npos ? std::string{'\\', kEscapeLetters[i]}
                                                    : Printable(c);
  }
  return out + "\"";
}

std::string FormatFloat(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, ec == std::errc() ? ptr : buf);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // "n": inf / nan
  return s;
}

std::string Bare(const PyExpr& e) {
  const auto item = [&e](size_t i) { return i < e.items.size() ? e.items[i] : nullptr; };
  switch (e.kind) {
    case PyExprKind::kName:
      return e.name;
    case PyExprKind::kInt:
      return e.text.empty() ? std::to_string(e.int_value) : e.text;
    case PyExprKind::kFloat:
      return e.text.empty() ? FormatFloat(e.float_value) : e.text;
    case PyExprKind::kString:
      return Quote(e.name);
    case PyExprKind::kBool:
      return e.int_value ? "True" : "False";
    case PyExprKind::kNone:
      return "None";
    case PyExprKind::kTuple:
      return "(" + Join(e.items) + (e.items.size() == 1 ? ",)" : ")");
    case PyExprKind::kList:
      return "[" + Join(e.items) + "]";
    case PyExprKind::kDict: {
      std::string s;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        s += (i > 0 ? ", " : "") + Str(e.items[i], 0) + ": " + Str(e.items[i + 1], 0);
      }
      return "{" + s + "}";
    }
    case PyExprKind::kAttr: {  // `1.x` would lex as a float: parenthesize integer objects
      const bool is_int = e.base && e.base->kind == PyExprKind::kInt;
      return Str(e.base, kAtomPrecedence + is_int) + "." + e.name;
    }
    case PyExprKind::kCall: {
      std::string s = Join(e.items);
      for (const PyKeyword& kw : e.keywords) {
        s += (s.empty() ? "" : ", ") + kw.name + "=" + Str(kw.value, 0);
      }
      return Str(e.base, kAtomPrecedence) + "(" + s + ")";
    }
    case PyExprKind::kSubscript: {
      const PyExprPtr index = item(0);
      const bool bare_tuple = index && index->kind == PyExprKind::kTuple && index->items.size() > 1;
      return Str(e.base, kAtomPrecedence) + "[" +
             (bare_tuple ? Join(index->items) : Str(index, 0)) + "]";
    }
    case PyExprKind::kBinOp: {
      const int p = BinaryPrecedence(e.name);
      if (p == kPowerPrecedence) {
        return Str(item(0), kAtomPrecedence) + " ** " + Str(item(1), kUnaryPrecedence);
      }
      const bool non_assoc = IsComparison(e.name);
      return Str(item(0), p + non_assoc) + " " + e.name + " " + Str(item(1), p + 1);
    }
    case PyExprKind::kUnaryOp:
      return (e.name == "not" ? "not " : e.name) + Str(item(0), Precedence(e));
  }
  return "<?>";
}

}  // namespace

bool ParsePy(std::string_view source, PyModule* out, PyError* error) {
  size_t unclosed_open = kNone;
  std::vector<Token> toks = Lexer(source).Run(&unclosed_open);
  Parser parser(source, std::move(toks), unclosed_open);
  PyModule module;
  if (!parser.ParseModule(&module)) {
    if (error) *error = parser.error();
    return false;
  }
  if (out) *out = std::move(module);
  return true;
}

std::string ToString(const PyExpr& e) { return Bare(e); }

std::string ToString(const PyError& error) {
  return std::to_string(error.loc.line) + ":" + std::to_string(error.loc.col) + ": " +
         error.message;
}

}  // namespace quilt::ir::text

#include "passes/pass.h"

#include <cctype>
#include <charconv>

namespace quilt::passes {

Expected<PassSpec> ParsePassSpec(std::string_view text) {
  PassSpec spec;
  size_t brace = text.find('{');
  spec.name = std::string(text.substr(0, brace));
  if (spec.name.empty()) return Error("empty pass name in '" + std::string(text) + "'");
  for (char c : spec.name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      return Error("bad pass name '" + spec.name + "'");
    }
  }
  if (brace == std::string_view::npos) return spec;
  if (text.back() != '}') return Error("pass options of '" + spec.name + "' must end with '}'");
  std::string_view body = text.substr(brace + 1, text.size() - brace - 2);
  size_t i = 0;
  auto bad = [&](const std::string& why) {
    return Error("bad options for pass '" + spec.name + "': " + why + " in '{" + std::string(body) +
                 "}'");
  };
  while (i < body.size()) {
    if (std::isspace(static_cast<unsigned char>(body[i]))) {
      ++i;
      continue;
    }
    size_t eq = body.find('=', i);
    if (eq == std::string_view::npos) return bad("expected key=value");
    std::string key(body.substr(i, eq - i));
    if (key.empty() || key.find(' ') != std::string::npos) return bad("expected key=value");
    i = eq + 1;
    std::string value;
    if (i < body.size() && (body[i] == '"' || body[i] == '\'')) {
      char quote = body[i++];
      size_t end = body.find(quote, i);
      if (end == std::string_view::npos) return bad("unterminated quote");
      value = std::string(body.substr(i, end - i));
      i = end + 1;
    } else {
      size_t end = i;
      while (end < body.size() && !std::isspace(static_cast<unsigned char>(body[end]))) ++end;
      value = std::string(body.substr(i, end - i));
      i = end;
    }
    if (!spec.options.emplace(key, value).second) return bad("option '" + key + "' given twice");
  }
  return spec;
}

Status CheckOptions(const PassSpec& spec, const std::vector<std::string>& known) {
  for (const auto& [key, value] : spec.options) {
    bool ok = false;
    for (const std::string& k : known) ok |= k == key;
    if (ok) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return Error("pass '" + spec.name + "' has no option '" + key + "'" +
                 (list.empty() ? " (it takes none)" : " (options: " + list + ")"));
  }
  return {};
}

Expected<int64_t> IntOption(const PassSpec& spec, const std::string& key, int64_t fallback) {
  auto it = spec.options.find(key);
  if (it == spec.options.end()) return fallback;
  const std::string& v = it->second;
  int64_t out = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || ptr != v.data() + v.size()) {
    return Error("option '" + key + "' of pass '" + spec.name + "' must be an integer, got '" + v +
                 "'");
  }
  return out;
}

std::string StrOption(const PassSpec& spec, const std::string& key, const std::string& fallback) {
  auto it = spec.options.find(key);
  return it == spec.options.end() ? fallback : it->second;
}

Expected<Pass> CreatePass(const PassSpec& spec) {
  for (const PassInfo& info : AllPasses()) {
    if (spec.name == info.name) return info.create(spec);
  }
  std::string list;
  for (const PassInfo& info : AllPasses())
    list += (list.empty() ? "" : ", ") + std::string(info.name);
  return Error("unknown pass '" + spec.name + "' (known: " + list + ")");
}

Expected<Pass> CreatePass(std::string_view text) {
  Expected<PassSpec> spec = ParsePassSpec(text);
  if (!spec) return spec.error();
  return CreatePass(*spec);
}

}  // namespace quilt::passes

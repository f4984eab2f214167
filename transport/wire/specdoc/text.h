// Small string helpers on std::string_view for uet-spec-doc.
//
// Debian 12's Abseil (20220623) is built with its own absl::string_view rather than
// std::string_view, so absl::StrCat and friends do not accept the std::string_view fields of
// the reflection tables; these few helpers stand in for them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace uet::specdoc {

inline void append_to(std::string& s, std::string_view v) { s.append(v); }
inline void append_to(std::string& s, const char* v) { s.append(v); }
inline void append_to(std::string& s, char c) { s.push_back(c); }
template <typename T>
requires(std::is_integral_v<T> && !std::is_same_v<T, char> &&
         !std::is_same_v<T, bool>) inline void append_to(std::string& s, T v) {
  s += std::to_string(v);
}

// Concatenates strings, characters and integers (in decimal).
template <typename... Args>
std::string cat(const Args&... args) {
  std::string s;
  (append_to(s, args), ...);
  return s;
}

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

inline std::string_view strip(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Removes `prefix` from the front of `*s` if it is there.
inline bool consume_prefix(std::string_view* s, std::string_view prefix) {
  if (!s->starts_with(prefix)) return false;
  s->remove_prefix(prefix.size());
  return true;
}

inline bool consume_suffix(std::string_view* s, std::string_view suffix) {
  if (!s->ends_with(suffix)) return false;
  s->remove_suffix(suffix.size());
  return true;
}

// Splits at every `sep`; n separators give n + 1 pieces.
inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

inline std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) s.append(sep);
    s.append(parts[i]);
  }
  return s;
}

inline std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  size_t at = 0;
  for (size_t hit = s.find(from); hit != std::string_view::npos; hit = s.find(from, at)) {
    out.append(s.substr(at, hit - at));
    out.append(to);
    at = hit + from.size();
  }
  out.append(s.substr(at));
  return out;
}

// "0x0F" for hex(15, 2): upper-case digits, zero-padded to `digits`.
inline std::string hex(uint64_t v, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*llX", digits, static_cast<unsigned long long>(v));
  return buf;
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace uet::specdoc

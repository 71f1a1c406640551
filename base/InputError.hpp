#pragma once
// The one exception type for bad user input (spec, catalog entry, trace, results file).
// The CLI turns it into a single line on stderr and exit code 2; nothing else catches it.
#include <stdexcept>
#include <string>

namespace memwall {

// A NUL byte the user wrote (a key, a preset name) is kept as the text "\x00": the
// message is stored and printed as a C string, which ended at it ("unknown model preset
// 'gp").
inline std::string without_nul(const std::string& text)
{
  std::string out;
  for (char c : text)
    out += c == '\0' ? std::string("\\x00") : std::string(1, c);
  return out;
}

class InputError : public std::runtime_error {
public:
  explicit InputError(const std::string& message) : std::runtime_error(without_nul(message)) {}
};

// `text` as one printable line: control characters (a newline in a key or value the
// user wrote, a library's multi-line message) are shown escaped, and very long text is
// cut with its length said, so every error stays one line on a terminal and in a log.
inline std::string one_line(const std::string& text)
{
  const size_t longest = 4000;
  std::string out;
  for (size_t i = 0; i < text.size() && out.size() < longest; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += ' ';
    else if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else
      out += static_cast<char>(c);
  }
  if (out.size() >= longest)
    out += "... (" + std::to_string(text.size()) + " characters)";
  return out;
}

} // namespace memwall

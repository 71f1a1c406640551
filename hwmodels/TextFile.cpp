#include "TextFile.hpp"

#include "InputError.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace memwall {

std::string read_text_file(const std::string& path, const std::string& what)
{
  std::ifstream in(path);
  if (!std::filesystem::is_regular_file(path) || !in)
    throw InputError(path + ": " + what + " not found");
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

} // namespace memwall

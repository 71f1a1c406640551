#include "base/TextFile.hpp"

#include "base/InputError.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace memwall {
namespace {

const char* kind_of(std::filesystem::file_type t)
{
  using T = std::filesystem::file_type;
  switch (t) {
    case T::directory: return "directory";
    case T::fifo: return "FIFO";
    case T::socket: return "socket";
    case T::block: return "block device";
    case T::character: return "character device";
    default: return "special file";
  }
}

std::vector<std::string>& read_list()
{
  static std::vector<std::string> paths;
  return paths;
}

} // namespace

void check_input_file(const std::string& path, const std::string& what)
{
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    if (!ec || ec == std::errc::no_such_file_or_directory)
      throw InputError(path + ": " + what + " not found");
    throw InputError(path + ": " + what + " cannot be opened: " + ec.message());
  }
  if (!fs::is_regular_file(st))
    throw InputError(path + ": " + what + " is a " + kind_of(st.type()) + ", not a regular file");
  auto size = fs::file_size(path, ec);
  if (!ec && size > static_cast<std::uintmax_t>(largest_input_file))
    throw InputError(path + ": " + what + " of " + std::to_string(size) + " bytes; the limit is " +
                     std::to_string(largest_input_file) + " bytes (1 GiB)");
  if (std::find(read_list().begin(), read_list().end(), path) == read_list().end())
    read_list().push_back(path);
}

const std::vector<std::string>& input_files_read() { return read_list(); }

std::string read_text_file(const std::string& path, const std::string& what)
{
  check_input_file(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path + ": " + what + " cannot be read (permissions?)");
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad())
    throw InputError(path + ": " + what + " cannot be read");
  return buf.str();
}

} // namespace memwall

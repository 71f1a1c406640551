#include "AtomicOutput.hpp"

#include "InputError.hpp"

#include <filesystem>
#include <unistd.h>

namespace memwall {

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write)
{
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  if (!fs::is_directory(dir))
    throw InputError(path + ": output folder " + dir.string() + " does not exist");
  std::string temp = (dir / ("." + target.filename().string() + ".tmp" + std::to_string(::getpid()))).string();
  try {
    write(temp);
    fs::rename(temp, target);
  } catch (...) {
    std::error_code ec;
    fs::remove(temp, ec);
    throw;
  }
}

} // namespace memwall

#include "base/AtomicOutput.hpp"

#include "base/InputError.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>

namespace memwall {
namespace {

namespace fs = std::filesystem;

fs::path folder_of(const fs::path& target)
{
  return target.parent_path().empty() ? fs::path(".") : target.parent_path();
}

std::string temp_prefix(const fs::path& target) { return "." + target.filename().string() + ".tmp"; }

// ".NAME.tmp<pid>.<random>" files whose writer no longer runs (it was killed).
void remove_stale_temps(const fs::path& target)
{
  std::string prefix = temp_prefix(target);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder_of(target), ec)) {
    std::string name = e.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      fs::remove(e.path(), ec);
  }
}

std::string create_temp(const fs::path& target)
{
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "%d.%08x", static_cast<int>(::getpid()), static_cast<unsigned>(rd()));
    std::string temp = (folder_of(target) / (temp_prefix(target) + suffix)).string();
    int fd           = ::open(temp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      return temp;
    }
    if (errno != EEXIST)
      throw std::runtime_error(target.string() + ": cannot create a file beside it: " + std::strerror(errno));
  }
  throw std::runtime_error(target.string() + ": cannot create a temporary file beside it");
}

void flush_to_disk(const std::string& temp, const std::string& path)
{
  int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    int err = errno;
    if (fd >= 0)
      ::close(fd);
    throw std::runtime_error(path + ": writing failed: " + std::strerror(err));
  }
  ::close(fd);
}

} // namespace

void write_file_bytes(const std::string& path, const std::string& bytes)
{
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error(path + ": cannot open for writing: " + std::strerror(errno));
  const char* p = bytes.data();
  size_t left   = bytes.size();
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int err = w < 0 ? errno : ENOSPC;
      ::close(fd);
      throw std::runtime_error(path + ": writing failed: " + std::strerror(err));
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  if (::close(fd) != 0)
    throw std::runtime_error(path + ": writing failed: " + std::strerror(errno));
}

void check_output_path(const std::string& path, const std::vector<std::string>& inputs)
{
  if (path.empty())
    return;
  fs::path target(path);
  std::error_code ec;
  fs::file_status link = fs::symlink_status(target, ec);
  if (fs::is_symlink(link))
    throw InputError(path + ": output is a symbolic link; memwall replaces files, not links: name the file itself");
  if (fs::exists(link) && !fs::is_regular_file(link))
    throw InputError(path + ": output is " + (fs::is_directory(link) ? "a directory" : "not a regular file") +
                     "; name the file to write");
  fs::path dir = folder_of(target);
  if (!fs::is_directory(dir, ec))
    throw InputError(path + ": output folder " + dir.string() + " does not exist");
  if (fs::exists(link))
    for (const std::string& in : inputs)
      if (!in.empty() && fs::equivalent(target, in, ec))
        throw InputError(path + ": output is the input " + in + "; name another file");
}

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write)
{
  check_output_path(path);
  fs::path target(path);
  remove_stale_temps(target);
  std::string temp = create_temp(target);
  try {
    write(temp);
    flush_to_disk(temp, path);
    fs::rename(temp, target);
  } catch (...) {
    std::error_code ec;
    fs::remove(temp, ec);
    throw;
  }
}

OutputLock::OutputLock(const std::string& path)
{
  fs::path target(path);
  lock_path_ = (folder_of(target) / ("." + target.filename().string() + ".lock")).string();
  fd_        = ::open(lock_path_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw InputError(path + ": cannot create the lock file " + lock_path_ + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    fd_ = -1;
    throw InputError(path + ": another memwall process is writing this file (lock " + lock_path_ +
                     "); wait for it or write elsewhere");
  }
}

OutputLock::~OutputLock()
{
  if (fd_ < 0)
    return;
  ::unlink(lock_path_.c_str());
  ::close(fd_);
}

} // namespace memwall

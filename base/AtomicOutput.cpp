#include "base/AtomicOutput.hpp"

#include "base/InputError.hpp"
#include "base/TextFile.hpp"

#include <fcntl.h>
#include <new>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

namespace memwall {
namespace {

namespace fs = std::filesystem;

fs::path folder_of(const fs::path& target)
{
  return target.parent_path().empty() ? fs::path(".") : target.parent_path();
}

// The output's name as the start of its temporary and lock files' names. A name near
// the file system's 255-byte limit (valid for the output itself) would overflow theirs:
// a long one is cut and a hash of the whole keeps different outputs apart.
std::string beside_name(const fs::path& target)
{
  std::string name = target.filename().string();
  if (name.size() <= 200)
    return "." + name;
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name)
    h = (h ^ c) * 1099511628211ULL;
  char hash[24];
  std::snprintf(hash, sizeof hash, "~%016llx", static_cast<unsigned long long>(h));
  return "." + name.substr(0, 180) + hash;
}

std::string temp_prefix(const fs::path& target) { return beside_name(target) + ".tmp"; }

// Lock files this process holds (OutputLock): its own writes need no second lock.
std::set<std::string>& held_locks()
{
  static std::set<std::string> held;
  return held;
}

std::string lock_path_of(const fs::path& target)
{
  return (folder_of(target) / (beside_name(target) + ".lock")).string();
}

// Two names of one file, though neither exists yet ("x.h5", "./x.h5", "d/../x.h5").
bool same_place(const std::string& a, const std::string& b)
{
  std::error_code ec1, ec2;
  fs::path x = fs::weakly_canonical(fs::absolute(a), ec1), y = fs::weakly_canonical(fs::absolute(b), ec2);
  return !ec1 && !ec2 && x == y;
}

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
  // A name the file system cannot hold failed only at the final rename, after the run.
  long asked       = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  size_t name_max  = asked > 0 ? static_cast<size_t>(asked) : 255; // 255: Linux's file systems, when it cannot say
  size_t name_size = target.filename().string().size();
  if (name_size > name_max)
    throw InputError(path + ": output file name of " + std::to_string(name_size) + " bytes; the file system takes " +
                     std::to_string(name_max) + " at most");
  std::vector<std::string> all = inputs;
  all.insert(all.end(), input_files_read().begin(), input_files_read().end());
  for (const std::string& in : all)
    if (!in.empty() && (same_place(path, in) || (fs::exists(link) && fs::equivalent(target, in, ec))))
      throw InputError(path + ": output is the input " + in + "; name another file");
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs)
{
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = i + 1; j < outputs.size(); ++j)
      if (!outputs[i].second.empty() && !outputs[j].second.empty() && same_place(outputs[i].second, outputs[j].second))
        throw InputError(outputs[j].second + ": " + outputs[i].first + " and " + outputs[j].first +
                         " name the same file");
}

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write)
{
  check_output_path(path);
  fs::path target(path);
  // Another process's lock (a sweep writing this file) refuses the write; this
  // process's own lock is already held.
  std::optional<OutputLock> lock;
  if (!held_locks().count(lock_path_of(target)))
    lock.emplace(path);
  remove_stale_temps(target);
  std::string temp = create_temp(target);
  try {
    write(temp);
    flush_to_disk(temp, path);
    fs::rename(temp, target);
  } catch (const InputError&) {
    std::error_code ec;
    fs::remove(temp, ec);
    throw;
  } catch (const std::bad_alloc&) { // out of memory stays that, for its own line
    std::error_code ec;
    fs::remove(temp, ec);
    throw;
  } catch (const std::runtime_error& e) {
    // A failed write names the file asked for, not the temporary that is gone
    // (".out.h5.tmp32347.ddc1a2bb: writing failed: File too large" under ulimit -f).
    std::error_code ec;
    fs::remove(temp, ec);
    std::string message = e.what();
    for (size_t at = message.find(temp); at != std::string::npos; at = message.find(temp, at + path.size()))
      message.replace(at, temp.size(), path);
    throw std::runtime_error(message);
  } catch (...) {
    std::error_code ec;
    fs::remove(temp, ec);
    throw;
  }
}

OutputLock::OutputLock(const std::string& path)
{
  fs::path target(path);
  lock_path_ = lock_path_of(target);
  fd_        = ::open(lock_path_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw InputError(path + ": cannot create the lock file " + lock_path_ + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    fd_ = -1;
    throw InputError(path + ": another memwall process is writing this file (lock " + lock_path_ +
                     "); wait for it or write elsewhere");
  }
  held_locks().insert(lock_path_);
}

OutputLock::~OutputLock()
{
  if (fd_ < 0)
    return;
  held_locks().erase(lock_path_);
  ::unlink(lock_path_.c_str());
  ::close(fd_);
}

} // namespace memwall

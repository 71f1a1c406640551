#pragma once
// Output files appear whole or not at all: writers fill a temporary file beside the
// target and rename it into place only once everything succeeded, including the
// file's close and its flush to disk (a full disk shows there, not in the writes).
#include <functional>
#include <string>
#include <vector>

namespace memwall {

// Refuses, before any work is done, an output path that memwall must not replace:
// a directory, a device, a FIFO, a symbolic link, a file in a folder that does not
// exist, or one of `inputs` (the spec it was asked to read). Empty paths pass.
void check_output_path(const std::string& path, const std::vector<std::string>& inputs = {});

// Calls write(temp_path) on a fresh temporary file beside `path` (created exclusively,
// unpredictable name); on success flushes it to disk and renames it to path, on any
// exception removes it and rethrows, leaving whatever was at `path` untouched.
// Temporary files of earlier writers to the same path that were killed are removed.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

// Replaces the contents of the existing file `path` with `bytes`, every write checked
// (a full disk is a runtime_error naming the path, never a short file taken for whole).
void write_file_bytes(const std::string& path, const std::string& bytes);

// Holds an exclusive lock on `path` for as long as it lives (a lock file beside it),
// so that two sweeps cannot write one results file; InputError when another process
// holds it.
class OutputLock {
public:
  explicit OutputLock(const std::string& path);
  ~OutputLock();
  OutputLock(const OutputLock&)            = delete;
  OutputLock& operator=(const OutputLock&) = delete;

private:
  std::string lock_path_;
  int fd_ = -1;
};

} // namespace memwall

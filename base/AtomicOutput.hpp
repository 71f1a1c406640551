#pragma once
// Output files appear whole or not at all: writers fill a temporary file beside the
// target and rename it into place only once everything succeeded, including the
// file's close and its flush to disk (a full disk shows there, not in the writes).
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace memwall {

// Refuses, before any work is done, an output path that memwall must not replace:
// a directory, a device, a FIFO, a symbolic link, a file in a folder that does not
// exist, or an input: one of `inputs` (the spec it was asked to read) or any file this
// process has read (input_files_read(): HF configs, traces, profiles), by any name of
// it ("./x.h5", a hard link). Empty paths pass.
void check_output_path(const std::string& path, const std::vector<std::string>& inputs = {});

// InputError when two of the outputs (option, path) name one file; empty paths pass.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// Calls write(temp_path) on a fresh temporary file beside `path` (created exclusively,
// unpredictable name); on success flushes it to disk and renames it to path, on any
// exception removes it and rethrows, leaving whatever was at `path` untouched.
// Temporary files of earlier writers to the same path that were killed are removed.
// Holds the path's OutputLock meanwhile, unless this process holds it already: a
// file another process is writing (a running sweep's) is not replaced.
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

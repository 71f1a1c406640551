#include "workloads/trace/GzipInput.hpp"

#include "base/InputError.hpp"
#include "base/TextFile.hpp"

#include <filesystem>

namespace memwall {

GzipInput::GzipInput(const std::string& path, const std::string& what) : path_(path)
{
  check_input_file(path, what);
  std::error_code ec;
  stored_ = static_cast<size_t>(std::filesystem::file_size(path, ec));
  file_   = gzopen(path.c_str(), "rb");
  if (!file_)
    throw InputError(path + ": cannot open the " + what);
  gzbuffer(file_, 1 << 17);
}

GzipInput::~GzipInput()
{
  if (file_)
    gzclose(file_);
}

GzipInput::int_type GzipInput::underflow()
{
  if (gptr() < egptr())
    return traits_type::to_int_type(*gptr());
  int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
  if (n < 0) {
    int err         = 0;
    const char* msg = gzerror(file_, &err);
    throw InputError(path_ + ": not a readable gzip or text file (" + (msg ? msg : "zlib error") + ")");
  }
  if (n == 0) {
    // zlib checks a gzip trailer's CRC, but a file cut just before its trailer ends
    // like a whole one: only the error state says so.
    int err = 0;
    gzerror(file_, &err);
    if (err != Z_OK)
      throw InputError(path_ + ": a truncated gzip file (it ends before its trailer)");
    return traits_type::eof();
  }
  consumed_ += static_cast<size_t>(n);
  // The input limit is on what is read, not what is stored: 2 MB of gzip decompressed
  // to 2 GB and was parsed for 17 s. Real traces compress 10 to 20 times.
  if (consumed_ > static_cast<size_t>(largest_input_file))
    throw InputError(path_ + ": decompresses to more than " + std::to_string(largest_input_file) +
                     " bytes (1 GiB), the input limit");
  if (!gzdirect(file_) && consumed_ > (64u << 20) && consumed_ / largest_gzip_ratio > stored_)
    throw InputError(path_ + ": decompresses to more than " + std::to_string(largest_gzip_ratio) + " times its " +
                     std::to_string(stored_) + " bytes; not a trace (a gzip bomb?)");
  setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
  return traits_type::to_int_type(*gptr());
}

} // namespace memwall

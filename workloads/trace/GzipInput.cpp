#include "workloads/trace/GzipInput.hpp"

#include "base/InputError.hpp"
#include "base/TextFile.hpp"

namespace memwall {

GzipInput::GzipInput(const std::string& path, const std::string& what) : path_(path)
{
  check_input_file(path, what);
  file_ = gzopen(path.c_str(), "rb");
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
  if (n == 0)
    return traits_type::eof();
  consumed_ += static_cast<size_t>(n);
  setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
  return traits_type::to_int_type(*gptr());
}

} // namespace memwall

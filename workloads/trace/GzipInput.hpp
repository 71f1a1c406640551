#pragma once
// A std::streambuf over a gzip-compressed or plain file (zlib reads both), so that a
// trace of hundreds of MB is parsed as it is decompressed, never held whole.
#include <zlib.h>

#include <array>
#include <streambuf>
#include <string>

namespace memwall {

class GzipInput : public std::streambuf {
public:
  // InputError (naming `path` as `what`) when the file cannot be opened.
  GzipInput(const std::string& path, const std::string& what);
  ~GzipInput() override;
  GzipInput(const GzipInput&)            = delete;
  GzipInput& operator=(const GzipInput&) = delete;
  // Bytes of decompressed text handed out so far.
  size_t consumed() const { return consumed_; }

protected:
  int_type underflow() override;

private:
  gzFile file_ = nullptr;
  std::string path_;
  std::array<char, 1 << 16> buffer_{};
  size_t consumed_                           = 0;
  size_t stored_                             = 0; // the file's size on disk
  static constexpr size_t largest_gzip_ratio = 200;
};

} // namespace memwall

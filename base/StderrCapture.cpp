#include "base/StderrCapture.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

namespace memwall {
namespace {
int active_saved = -1;
}

int StderrCapture::real_stderr() { return active_saved >= 0 ? active_saved : 2; }

StderrCapture::StderrCapture()
{
#if !defined(MEMWALL_SANITIZED)
  std::fflush(stderr);
  capture_ = ::memfd_create("memwall-stderr", MFD_CLOEXEC);
  if (capture_ < 0)
    return; // no capture: stderr stays as it is
  saved_ = ::dup(2);
  if (saved_ < 0 || ::dup2(capture_, 2) < 0) {
    if (saved_ >= 0)
      ::close(saved_);
    ::close(capture_);
    saved_ = capture_ = -1;
  }
  active_saved = saved_;
#endif
}

StderrCapture::~StderrCapture()
{
  if (saved_ < 0)
    return;
  active_saved = -1;
  std::fflush(stderr);
  ::dup2(saved_, 2);
  ::close(saved_);
  if (forward_) {
    char buf[1 << 14];
    ssize_t n;
    ::lseek(capture_, 0, SEEK_SET);
    while ((n = ::read(capture_, buf, sizeof buf)) > 0)
      if (::write(2, buf, static_cast<size_t>(n)) != n)
        break;
  }
  ::close(capture_);
}

} // namespace memwall

#include "base/ChildPool.hpp"

#include "base/InputError.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace memwall {
namespace {

void write_all(int fd, const char* p, size_t n)
{
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      _exit(3);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

} // namespace

ChildPool::ChildPool(int max_children) : max_(max_children < 1 ? 1 : max_children) {}

ChildPool::~ChildPool()
{
  for (Child& c : children_) {
    ::kill(c.pid, SIGKILL);
    ::close(c.fd);
    ::waitpid(c.pid, nullptr, 0);
  }
}

void ChildPool::spawn(int64_t tag, const std::function<std::string()>& work)
{
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr); // buffered output must not be printed twice
  pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Die with the parent: a killed sweep leaves no orphans running its points.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::signal(SIGINT, SIG_DFL); // the parent may catch these to stop a sweep cleanly
    ::signal(SIGTERM, SIG_DFL);
    ::close(fds[0]);
    for (const Child& c : children_) // siblings' pipes: not ours to hold open
      ::close(c.fd);
    // First byte: 'R' result, 'I' input error, 'E' failure; then the payload.
    char kind = 'R';
    std::string payload;
    try {
      payload = work();
    } catch (const InputError& e) {
      kind    = 'I';
      payload = e.what();
    } catch (const std::exception& e) {
      kind    = 'E';
      payload = e.what();
    }
    write_all(fds[1], &kind, 1);
    write_all(fds[1], payload.data(), payload.size());
    ::close(fds[1]);
    _exit(0); // skip static destructors: the parent owns them
  }
  ::close(fds[1]);
  children_.push_back({tag, pid, fds[0], {}});
}

std::pair<int64_t, ChildOutcome> ChildPool::wait_one()
{
  if (children_.empty())
    throw std::logic_error("ChildPool::wait_one with no child running");
  std::vector<pollfd> fds(children_.size());
  char buf[1 << 16];
  for (;;) {
    for (size_t i = 0; i < children_.size(); ++i)
      fds[i] = {children_[i].fd, POLLIN, 0};
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR)
        continue;
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    for (size_t i = 0; i < children_.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t r = ::read(children_[i].fd, buf, sizeof buf);
      if (r < 0 && errno == EINTR)
        continue;
      if (r > 0) {
        children_[i].data.append(buf, static_cast<size_t>(r));
        continue;
      }
      Child c = std::move(children_[i]);
      children_.erase(children_.begin() + static_cast<std::ptrdiff_t>(i));
      return {c.tag, finish(c)};
    }
  }
}

ChildOutcome ChildPool::finish(Child& c)
{
  ::close(c.fd);
  int status = 0;
  while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  ChildOutcome out;
  if (c.data.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string died = worker_died_prefix;
    out.data         = WIFSIGNALED(status) ? died + " of signal " + std::to_string(WTERMSIG(status))
                                           : died + " (status " + std::to_string(status) + ")";
    return out;
  }
  out.kind = c.data[0] == 'R'   ? ChildOutcome::Kind::result
             : c.data[0] == 'I' ? ChildOutcome::Kind::input_error
                                : ChildOutcome::Kind::failure;
  out.data = c.data.substr(1);
  return out;
}

ChildOutcome run_in_child(const std::function<std::string()>& work)
{
  ChildPool pool(1);
  pool.spawn(0, work);
  return pool.wait_one().second;
}

void run_in_children(size_t count, int jobs, const std::function<std::string(size_t)>& work,
                     const std::function<void(size_t, const ChildOutcome&)>& done)
{
  ChildPool pool(jobs);
  size_t next = 0;
  while (next < count || pool.running() > 0) {
    for (; next < count && !pool.full(); ++next)
      pool.spawn(static_cast<int64_t>(next), [&work, next] { return work(next); });
    auto [i, out] = pool.wait_one();
    done(static_cast<size_t>(i), out);
  }
}

} // namespace memwall

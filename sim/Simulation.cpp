#include "Simulation.hpp"

#include "InputError.hpp"
#include "TrainingStepGenerator.hpp"
#include "inference/ServingDriver.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>

namespace memwall {
namespace {

void write_all(int fd, const void* data, size_t n)
{
  const char* p = static_cast<const char*>(data);
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

std::vector<uint8_t> read_all(int fd)
{
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    out.insert(out.end(), buf, buf + r);
  }
  return out;
}

} // namespace

OpDag build_workload(const ExperimentSpec& spec)
{
  return TrainingStepGenerator(spec.model, spec.training, spec.cluster).generate();
}

static void start_engine()
{
  // Logging off before the Engine exists; exactness settings before the first zone.
  xbt_log_control_set("root.thres:critical");
  int argc         = 1;
  char name[]      = "memwall";
  char* argv[]     = {name, nullptr};
  static simgrid::s4u::Engine engine(&argc, argv);
  configure_exact_engine();
}

static RunResult in_child(const std::function<RunResult()>& work)
{
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr); // buffered output must not be printed twice
  pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    // First byte: 'R' result, 'I' input error, 'E' failure; then the payload.
    char tag = 'R';
    std::vector<uint8_t> payload;
    try {
      payload = nlohmann::json::to_cbor(nlohmann::json(work()));
    } catch (const InputError& e) {
      tag = 'I';
      payload.assign(e.what(), e.what() + std::strlen(e.what()));
    } catch (const std::exception& e) {
      tag = 'E';
      payload.assign(e.what(), e.what() + std::strlen(e.what()));
    }
    write_all(fds[1], &tag, 1);
    write_all(fds[1], payload.data(), payload.size());
    ::close(fds[1]);
    _exit(0); // skip static destructors: the parent owns them
  }
  ::close(fds[1]);
  std::vector<uint8_t> data = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (data.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("the replay process died (status " + std::to_string(status) + ")");
  std::string text(data.begin() + 1, data.end());
  if (data[0] == 'I')
    throw InputError(text);
  if (data[0] == 'E')
    throw std::runtime_error(text);
  return nlohmann::json::from_cbor(data.begin() + 1, data.end()).get<RunResult>();
}

RunResult replay(const ClusterSpec& cluster, const OpDag& dag, const ReplayOptions& options)
{
  start_engine();
  Platform platform(cluster);
  Replayer replayer(dag, platform, options);
  return replayer.run();
}

RunResult replay_in_child(const ClusterSpec& cluster, const OpDag& dag, const ReplayOptions& options)
{
  return in_child([&] { return replay(cluster, dag, options); });
}

RunResult serve(const ExperimentSpec& spec, const ReplayOptions& options)
{
  start_engine();
  Platform platform(spec.cluster);
  ServingDriver driver(spec.model, spec.inference, spec.cluster);
  Replayer replayer(driver, platform, options);
  RunResult r             = replayer.run();
  r.model_flops_per_step = driver.model_flops();
  r.serving              = driver.take_stats();
  for (const RequestRecord& q : r.serving.requests)
    if (!q.rejected)
      r.tokens_per_step += static_cast<double>(q.output_tokens);
  r.gpus               = spec.cluster.total_gpus();
  r.peak_flops_per_gpu = spec.cluster.node.gpu.peak(spec.inference.gemm_dtype());
  return r;
}

RunResult simulate(const ExperimentSpec& spec, bool child)
{
  ReplayOptions options;
  options.collective_algorithm = spec.collective_algorithm;
  if (spec.serving)
    return child ? in_child([&] { return serve(spec, options); }) : serve(spec, options);
  OpDag dag = build_workload(spec);
  RunResult r = child ? replay_in_child(spec.cluster, dag, options) : replay(spec.cluster, dag, options);
  for (OpId v = 0; v < dag.size(); ++v) {
    const Op& op = dag.op(v);
    r.model_flops_per_step += op.model_flops * dag.represents(op.device);
  }
  r.tokens_per_step    = spec.training.tokens_per_step();
  r.gpus               = spec.cluster.total_gpus();
  r.peak_flops_per_gpu = spec.cluster.node.gpu.peak(spec.training.precision);
  return r;
}

} // namespace memwall

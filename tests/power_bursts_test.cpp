// The power limit across idle time, and what FP8 GEMMs and attention draw, against an H200
// at 700 W (calibration/data/measured/h200/power-bursts.csv, power-fp8.csv,
// power-attention.csv; calibration/probes/power_bursts.py).
#include "base/TextFile.hpp"
#include "calibration/Measurement.hpp"
#include "hwmodels/Catalog.hpp"
#include "sim/Simulation.hpp"
#include "sim/timing/KernelTimer.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

using namespace memwall;
using namespace memwall::test;

namespace {

double median(std::vector<double> v)
{
  REQUIRE(!v.empty());
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A measured CSV's rows as columns by name.
std::vector<std::map<std::string, std::string>> read_rows(const std::string& relative)
{
  std::ifstream in(source_path(relative));
  REQUIRE(in);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> head = split_csv_line(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> f = split_csv_line(line);
    REQUIRE(f.size() == head.size());
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < f.size(); ++i)
      row[head[i]] = f[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

Op square(KernelClass kclass, Dtype dtype, double n)
{
  Op op    = kernel_op(DeviceRef{}, kclass, dtype, 2 * n * n * n, 3 * 2 * n * n, 2 * n * n * n, "k");
  op.shape = {static_cast<uint32_t>(n), static_cast<uint32_t>(n), static_cast<uint32_t>(n)};
  return op;
}

// A burst pattern as measured: GEMMs per burst, the idle before each, and the rate in each
// span of time since the burst began as a fraction of its first three GEMMs' (full clock).
struct Pattern {
  int per       = 0;
  double idle_s = 0;
  std::map<int, std::vector<double>> by_bin; // bin start (ms) -> rates
  std::vector<double> first;
};

const std::vector<int> bins = {0, 10, 20, 30, 40, 50, 75, 100, 150, 200, 300, 400};

int bin_of(double ms)
{
  int b = 0;
  for (int edge : bins)
    if (ms >= edge)
      b = edge;
  return b;
}

} // namespace

TEST_CASE("gemm_bursts_after_idle_start_at_full_clock_and_fall_to_the_held_rate_as_an_h200_did", "[power][measured]")
{
  // Seven patterns of bf16 8192^3 GEMMs for on_ms then the GPU idle for off_ms (25 / 25 to
  // 400 / 100), the second half of each series: the rate since each burst began, as a
  // fraction of its first three GEMMs'. The replay's timer is given each GEMM's start (the
  // idle before a burst as measured): its rates as a fraction of full clock.
  std::map<std::pair<int, int>, Pattern> patterns;
  std::map<std::pair<int, int>, int> bursts;
  auto rows = read_rows("calibration/data/measured/h200/power-bursts.csv");
  for (const auto& r : rows) {
    auto key    = std::make_pair(std::stoi(r.at("on_ms")), std::stoi(r.at("off_ms")));
    bursts[key] = std::max(bursts[key], std::stoi(r.at("burst")) + 1);
  }
  std::map<std::pair<int, int>, std::vector<double>> idles;
  for (const auto& r : rows) {
    auto key = std::make_pair(std::stoi(r.at("on_ms")), std::stoi(r.at("off_ms")));
    if (std::stoi(r.at("burst")) < bursts[key] / 2)
      continue;
    Pattern& p = patterns[key];
    int index  = std::stoi(r.at("index"));
    p.per      = std::max(p.per, index + 1);
    double v   = std::stod(r.at("tflops"));
    if (index < 3)
      p.first.push_back(v);
    if (index == 0)
      idles[key].push_back(std::stod(r.at("idle_before_ms")) * 1e-3);
    p.by_bin[bin_of(std::stod(r.at("start_ms")))].push_back(v);
  }
  REQUIRE(patterns.size() == 7);
  GpuSpec g = gpu_preset("h200-sxm-141gb");
  REQUIRE(g.power_limited());
  Op op       = square(KernelClass::gemm, Dtype::bf16, 8192);
  double full = kernel_timing(g, op).total_s(op.bytes);
  double sum2 = 0, worst = 0;
  int count = 0;
  for (auto& [key, p] : patterns) {
    p.idle_s = median(idles[key]);
    KernelTimer timer(g);
    std::map<int, std::vector<double>> model;
    double t = 0;
    for (int cycle = 0; cycle < 30; ++cycle) {
      model.clear();
      double begin = t + (cycle ? p.idle_s : 0);
      t            = begin;
      for (int i = 0; i < p.per; ++i) {
        double d = timer(op, t).total_s(op.bytes);
        model[bin_of((t - begin) * 1e3)].push_back(full / d);
        t += d;
      }
    }
    double head = median(p.first);
    for (const auto& [bin, rates] : p.by_bin) {
      INFO("on " << key.first << " off " << key.second << " ms, from " << bin << " ms");
      if (!model.count(bin)) // the replayed burst ends before this span of the measured one
        continue;
      double measured = median(rates) / head, replayed = median(model[bin]);
      if (bin < 20) { // after the idle: full clock in both
        CHECK(measured > 0.985);
        CHECK(replayed > 0.985);
      }
      CHECK(std::abs(replayed - measured) < 0.05);
      sum2 += (replayed - measured) * (replayed - measured);
      worst = std::max(worst, std::abs(replayed - measured));
      ++count;
    }
  }
  // Fitted with window_s (40 ms: the least-squares fit over these bins gave rms 1.5 %,
  // 4.3 % at worst); the held rate itself is the duty series' (power_limit_test).
  CHECK(count >= 45); // of the 47 spans measured
  CHECK(std::sqrt(sum2 / count) < 0.02);
  CHECK(worst < 0.045);
}

TEST_CASE("fp8_gemms_and_flash_attention_are_held_as_bf16_gemms_are_within_two_per_cent", "[power][measured]")
{
  // Back to back for 18 s (FP8 e4m3 8192^3) and 15 s (sdpa flash forward, causal, 4 x 32 x
  // 8,192 x 128): the last half's median against the first GEMMs' (full clock, after the
  // first's wake-up). One tensor_core_w holds all three: sqrt(700 / 1000) = 0.837.
  auto fraction = [](const std::string& file) {
    std::vector<double> start, sustained;
    for (const auto& r : read_rows(file))
      if (r.at("phase") == "sustained")
        sustained.push_back(std::stod(r.at("tflops")));
    REQUIRE(sustained.size() > 100);
    for (size_t i = 1; i < 10; ++i)
      start.push_back(sustained[i]);
    std::vector<double> last(sustained.begin() + static_cast<long>(sustained.size() / 2), sustained.end());
    return median(last) / median(start);
  };
  double fp8 = fraction("calibration/data/measured/h200/power-fp8.csv");
  double att = fraction("calibration/data/measured/h200/power-attention.csv");
  GpuSpec g  = gpu_preset("h200-sxm-141gb");
  for (auto [kclass, dtype, measured] :
       {std::tuple{KernelClass::gemm, Dtype::fp8, fp8}, std::tuple{KernelClass::attention, Dtype::bf16, att}}) {
    INFO((kclass == KernelClass::gemm ? "fp8 gemm" : "attention") << " measured " << measured);
    KernelTimer timer(g);
    Op op             = square(kclass, dtype, 8192);
    KernelTiming full = kernel_timing(g, op), t;
    for (int i = 0; i < 400; ++i)
      t = timer(op);
    double replayed = t.compute_s > 0 ? full.compute_s / t.compute_s : 1;
    CHECK(replayed == Approx(std::sqrt(0.7)).epsilon(0.005)); // its launch draws as memory-bound
    CHECK(replayed == Approx(measured).epsilon(0.02));
  }
}

TEST_CASE("a_gpu_idle_past_the_window_in_a_replay_starts_its_next_gemm_at_full_clock", "[power]")
{
  // GPU 1 runs 100 GEMMs of 2 ms at full clock (held back: sqrt(0.7) of their rate), then
  // waits for GPU 0's 0.5 s kernel, idle for ~0.26 s (> 6 windows), and runs one more.
  // Hand cluster: bf16 400 TFLOP/s x 0.5, 5 us launch; power as the H200's.
  ClusterSpec c            = hand_cluster(2, GpuFabric::nvswitch, 2);
  c.node.gpu.tdp_w         = 700;
  c.node.gpu.tensor_core_w = 1000;
  c.node.gpu.idle_w        = 135;
  c.node.gpu.hbm_stream_w  = 490;
  const DeviceRef gpu0{DeviceKind::gpu, 0, 0}, gpu1{DeviceKind::gpu, 0, 1};
  OpDag dag;
  OpId slow = dag.add(memwall::kernel_op(gpu0, KernelClass::elementwise, Dtype::bf16, 0, 1e12, 0, "slow"));
  for (int i = 0; i < 100; ++i)
    dag.add(kernel_op(gpu1, 4e11, 0, "busy" + std::to_string(i)));
  OpId after = dag.add(kernel_op(gpu1, 4e11, 0, "after"));
  dag.depend(after, slow);
  RunResult r          = replay_in_child(c, dag, {});
  const double full    = 5e-6 + 4e11 / 200e12;
  const OpRecord& last = record(r, "busy99");
  CHECK(last.end - last.start == Approx(5e-6 + 2e-3 / std::sqrt(0.7)).epsilon(1e-3));
  CHECK(record(r, "after").start == Approx(0.5 + 5e-6).epsilon(1e-6));
  CHECK(record(r, "after").end - record(r, "after").start == Approx(full).epsilon(1e-9));
}

TEST_CASE("a_kernel_that_ends_later_than_timed_keeps_its_gpu_busy_until_it_ends", "[power]")
{
  // Held GEMMs, then a copy started by the launcher (its end known only when it ends: it
  // may share the HBM), then a GEMM 100 ms after the copy's timed end. While the copy runs
  // the GPU is not idle: the GEMM is held as the window's GEMMs were. Ended at its timed
  // end, the 100 ms count as idle (> 2 windows): full clock. Ended 90 ms late, only the
  // last 10 ms count: held less than without idle, more than after 100 ms of it.
  GpuSpec g      = gpu_preset("h200-sxm-141gb");
  Op gemm        = square(KernelClass::gemm, Dtype::bf16, 8192);
  Op copy        = kernel_op(DeviceRef{}, KernelClass::elementwise, Dtype::bf16, 0, 2e9, 0, "copy");
  auto next_gemm = [&](double ended_late_s) { // < 0: not ended yet
    PowerGovernor gov(g);
    for (int i = 0; i < 100; ++i)
      gov.note(gemm, kernel_timing(g, gemm), PowerGovernor::back_to_back);
    double start = gov.snapshot(DeviceRef{}).window.busy_until;
    gov.note(copy, kernel_timing(g, copy), start);
    gov.started(DeviceRef{});
    double timed_end = gov.snapshot(DeviceRef{}).window.busy_until;
    if (ended_late_s >= 0)
      gov.ended(DeviceRef{}, timed_end + ended_late_s);
    return gov.note(gemm, kernel_timing(g, gemm), timed_end + 0.1);
  };
  double running = next_gemm(-1), late = next_gemm(0.09);
  CHECK(running < 0.86);
  CHECK(next_gemm(0) == 1.0);
  CHECK(late > running + 0.01);
  CHECK(late < 1.0);
}

TEST_CASE("gemms_waiting_on_hbm_are_held_as_an_h200_held_them_beside_and_between_big_ones", "[power][measured]")
{
  // power-mixed.csv (probes/power_mixed.py), back to back for 8 s each, the last half's
  // median against the first calls' (full clock; power-mixed-log.txt): decode GEMMs of 8
  // tokens (8192 x 8192 bf16 weights streamed) ran at 1,980 MHz throughout, not held
  // (363-372 W for ~6 s, then up to ~506 W as its calls ran faster, 56 -> 36 us); 256-token GEMMs at the limit, 49.4 -> 56.8 us (x = 0.870); 8192^3 GEMMs each
  // followed by 28 decode GEMMs, 1,369.8 -> 1,519.4 us (x = 0.902); followed by as long
  // idle (an SM spinning), 1,370.8 -> 1,383.3 us (x = 0.991). Replayed (2026-11-28):
  // decode 1.0; 256 tokens 0.907 (+4.3 %: the model gives its tiles 70 % of its time, where
  // it drew as compute-bound); big beside decodes 0.923 (+2.3 %), beside idle 1.0 (+0.9 %).
  GpuSpec g   = gpu_preset("h200-sxm-141gb");
  auto linear = [](double tokens) {
    Op op    = kernel_op(DeviceRef{}, KernelClass::gemm, Dtype::bf16, 2 * tokens * 8192 * 8192,
                         2 * (2 * tokens * 8192 + 8192.0 * 8192), 2 * tokens * 8192 * 8192, "linear");
    op.shape = {static_cast<uint32_t>(tokens), 8192, 8192};
    return op;
  };
  Op decode = linear(8), medium = linear(256), big = square(KernelClass::gemm, Dtype::bf16, 8192);
  auto x_of = [&](const Op& op, const KernelTiming& held) {
    return kernel_timing(g, op).total_s(op.bytes) / held.total_s(op.bytes);
  };
  auto alone = [&](const Op& op) {
    KernelTimer timer(g);
    KernelTiming t;
    for (int i = 0; i < 4000; ++i)
      t = timer(op);
    return x_of(op, t);
  };
  CHECK(alone(decode) > 0.99);
  CHECK(alone(medium) == Approx(0.870).epsilon(0.05));
  // Mixed: each big GEMM then 28 decodes, or then the GPU idle as long as the big GEMM.
  auto mixed = [&](bool decodes) {
    KernelTimer timer(g);
    double t = 0;
    KernelTiming b;
    for (int cycle = 0; cycle < 300; ++cycle) {
      b = timer(big, t);
      t += b.total_s(big.bytes);
      if (decodes)
        for (int i = 0; i < 28; ++i)
          t += timer(decode, t).total_s(decode.bytes);
      else
        t += 1.3895e-3; // the measured sleep
    }
    return x_of(big, b);
  };
  CHECK(mixed(true) == Approx(0.902).epsilon(0.03));
  CHECK(mixed(false) == Approx(0.991).epsilon(0.02));
}

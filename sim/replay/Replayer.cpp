#include "sim/replay/Replayer.hpp"

#include "sim/replay/ReplayProgress.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include <algorithm>
#include <stdexcept>

namespace sg4 = simgrid::s4u;

namespace memwall {
namespace {

Replayer* current = nullptr; // the one replay of this process (one Engine per process)

} // namespace

Replayer::Replayer(const OpDag& dag, const Platform& platform, ReplayOptions options)
    : dag_(dag), platform_(platform), options_(std::move(options)),
      collective_(collective_registry().make(options_.collective_algorithm)),
      kernel_timer_(platform.cluster().node.gpu, options_.recorded_on.get())
{
  if (paging_on())
    prefetch_ = prefetch_registry().make(options_.memory.prefetch);
  take_new_ops();
}

Replayer::Replayer(StepSource& source, const Platform& platform, ReplayOptions options)
    : Replayer(source.dag(), platform, std::move(options))
{
  source_ = &source;
}

void Replayer::take_new_ops()
{
  if (dag_.first_id() != base_) {
    // The source forgot the ops it issued before, all of them completed.
    base_ = dag_.first_id();
    waiting_on_.clear();
    running_acts_.clear();
    private_.clear();
    summary_op_.clear();
    member_.clear();
    edges_taken_ = 0;
  }
  size_t n = dag_.size();
  if (dag_.chain_count() > 0 && !summary_only())
    throw std::logic_error("a DAG with chains replays without records only (OpDag::set_chains)");
  waiting_on_.resize(n - base_);
  running_acts_.resize(n - base_, 0);
  private_.resize(n - base_, 0);
  member_.resize(n - base_, 0);
  chain_info_.resize(dag_.chain_count());
  chain_seen_.resize(dag_.chain_count(), 0);
  keep_records(taken_, n);
  index_batch(n);
  for (size_t v = taken_; v < n; ++v)
    waiting_on_[v - base_] = in_count_[v - batch_];
  // A GPU whose kernels all run on one stream, and which copies nothing to itself,
  // never has two users of its HBM at once: its kernels can be single timed activities.
  visit_ops(taken_, n, [&](const Op& op) {
    if (op.kind == OpKind::kernel && op.seconds <= 0) { // a measured kernel's time is all its own
      auto [it, fresh] = kernel_stream_.try_emplace(op.device, op.stream);
      if (!fresh && it->second != op.stream)
        shared_hbm_.insert(op.device);
    } else if (op.kind == OpKind::copy && op.src == op.dst) {
      shared_hbm_.insert(op.src);
    }
  });
  fold_batch(taken_, n);
  find_private_ops(taken_, n);
  for (size_t v = taken_; v < n; ++v)
    if (waiting_on_[v - base_] == 0)
      ready_.push_back(static_cast<OpId>(v));
  taken_ = n;
}

// Which records ops [from, to) get. All of them, indexed by op id, unless only the
// summary is wanted: then none, and the ops of the first GPU holding memory (the
// breakdown's GPU, StepReport's busiest_gpu: pools are ordered by device) and its
// node's host compute add their intervals as they end.
void Replayer::keep_records(size_t from, size_t to)
{
  if (!summary_only()) {
    records_.resize(to);
    return;
  }
  DeviceRef gpu = intervals_.gpu;
  visit_ops(from, to, [&](const Op& op) {
    if ((op.kind == OpKind::alloc || op.kind == OpKind::free) && op.pool.kind == DeviceKind::gpu &&
        (gpu.node < 0 || op.pool < gpu))
      gpu = op.pool;
  });
  if (!(gpu == intervals_.gpu)) // what was added belonged to another GPU
    intervals_ = StepIntervals{.gpu = gpu};
  summary_op_.resize(to - base_, 0);
  for (size_t v = from; v < to; ++v) {
    const Op& op = dag_.op(static_cast<OpId>(v));
    // A chain's members share its device: whether any of their kinds is read.
    summary_op_[v - base_] =
        gpu.node >= 0 && (op.kind == OpKind::chain ? intervals_.reads(OpKind::host_compute, op.device) ||
                                                         intervals_.reads(OpKind::kernel, op.device)
                                                   : intervals_.reads(op.kind, op.device));
  }
}

// The adjacency of ops [taken_, n) from the edges added since the last batch. Ops taken
// before have all completed: an edge from one of them holds nothing back. Each op's
// successors keep the order their edges were added in (the order ops become ready).
void Replayer::index_batch(size_t n)
{
  const std::vector<DagEdge>& edges = dag_.edges();
  batch_                            = static_cast<OpId>(taken_);
  size_t count                      = n - taken_;
  out_start_.assign(count + 1, 0);
  in_count_.assign(count, 0);
  auto inside = [&](const DagEdge& e) { return e.earlier >= taken_ && e.later >= taken_; };
  for (size_t i = edges_taken_; i < edges.size(); ++i)
    if (inside(edges[i])) {
      ++out_start_[edges[i].earlier - batch_ + 1];
      ++in_count_[edges[i].later - batch_];
    }
  for (size_t v = 0; v < count; ++v)
    out_start_[v + 1] += out_start_[v];
  out_.resize(out_start_[count]);
  std::vector<uint32_t> cursor(out_start_.begin(), out_start_.end() - 1);
  for (size_t i = edges_taken_; i < edges.size(); ++i)
    if (inside(edges[i]))
      out_[cursor[edges[i].earlier - batch_]++] = edges[i].later;
  edges_taken_ = edges.size();
}

Replayer::~Replayer()
{
  if (current == this)
    current = nullptr;
}

RunResult Replayer::run()
{
  if (current)
    throw std::logic_error("one replay per process: SimGrid has one Engine per process");
  current               = this;
  static bool connected = false;
  if (!connected) {
    connected = true;
    // An exception must not leave a callback: SimGrid's code between it and run() ends
    // the process on one (a std::bad_alloc mid-replay aborted, exit 134). It is kept,
    // the replay starts nothing more, and replay_loop throws it once SimGrid returns.
    sg4::Activity::on_completion_cb([](const sg4::Activity& a) {
      if (current && !current->failure_ && a.get_state() == sg4::Activity::State::FINISHED)
        current->guarded([&] { current->on_activity_done(reinterpret_cast<uintptr_t>(a.get_data<void>()) - 1); });
    });
    // SimGrid still touches an activity after its completion callback: release our
    // references only once time has moved on (DESIGN.md §3).
    sg4::Engine::on_time_advance_cb([](double) {
      if (current && !current->failure_)
        current->guarded([] {
          current->parked_.clear();
          // A run due within the timing precision of this stop ends at it (end_runs).
          double now = sg4::Engine::get_clock();
          if (!current->runs_.empty() && current->runs_.top().date - now < current->timing_precision_)
            current->arm_run_timer(now);
        });
    });
  }
  sg4::Engine* engine = sg4::Engine::get_instance();
  timing_precision_   = simgrid::config::get_value<double>("surf/precision");
  ReplayProgress progress(options_.progress);
  progress_ = &progress;
  mirror_orbits();
  replay_loop(engine);
  restore_links();
  progress_ = nullptr;
  if (completed_ != dag_.size())
    throw std::runtime_error(stall_message());
  return collect();
}

// Only on failure: name the cause that is true, not the one that is likely. Boost's
// topological sort proves or refutes a cycle; without one, an activity never ended.
std::string Replayer::stall_message() const
{
  std::string head = "replay stalled at simulated time " + std::to_string(sg4::Engine::get_clock()) +
                     " s: " + std::to_string(dag_.size() - completed_) + " of " + std::to_string(dag_.size()) +
                     " ops never ran";
  // Kahn's algorithm over the batch: ops left unvisited lie on a cycle or behind one.
  std::vector<uint32_t> in(in_count_);
  std::vector<OpId> free_ops;
  for (size_t v = 0; v < in.size(); ++v)
    if (in[v] == 0)
      free_ops.push_back(batch_ + static_cast<OpId>(v));
  size_t visited = 0;
  while (!free_ops.empty()) {
    OpId v = free_ops.back();
    free_ops.pop_back();
    ++visited;
    for (uint32_t k = out_start_[v - batch_]; k < out_start_[v - batch_ + 1]; ++k)
      if (--in[out_[k] - batch_] == 0)
        free_ops.push_back(out_[k]);
  }
  if (visited < in.size())
    return head + " (the op DAG has a dependency cycle)";
  return head + " (the op DAG has no cycle: an activity never completed)";
}

void Replayer::replay_loop(sg4::Engine* engine)
{
  for (;;) {
    drain_ready();
    engine->run();
    if (failure_)
      std::rethrow_exception(failure_);
    parked_.clear();
    due_memory_.apply_all(sg4::Engine::get_clock());
    if (!source_ || completed_ != taken_)
      break;
    activities_.clear(); // all done: their completion callbacks have run
    free_activities_.clear();
    // A wait shorter than the engine resolves (SimGrid ends an activity whose remaining
    // work is below its precision without moving the clock) has still ended: the source
    // is told the time it asked to wake at, or it would ask for the same wait forever.
    double now     = std::max(sg4::Engine::get_clock(), waiting_until_);
    waiting_until_ = 0;
    StepDecision d = source_->next(now);
    take_new_ops();
    if (d.kind == StepDecision::Kind::done && ready_.empty())
      break;
    if (d.kind == StepDecision::Kind::wait && d.wake_at > now) {
      waiting_until_ = d.wake_at;
      start_delay(OpDag::none, d.wake_at - sg4::Engine::get_clock());
    }
  }
}

void Replayer::drain_ready()
{
  if (draining_)
    return;
  draining_ = true;
  // FIFO in order of readiness, so ops released at the same instant start in a fixed order.
  for (size_t head = 0; head < ready_.size(); ++head)
    start(ready_[head]);
  ready_.clear();
  draining_ = false;
}

void Replayer::start(OpId id)
{
  if (options_.coalesce && step_private({id, member_[id - base_]}) && start_run(id))
    return;
  const Op& op = current_op(id);
  double now   = sg4::Engine::get_clock();
  open_record(id, op, now);
  switch (op.kind) {
    case OpKind::alloc:
    case OpKind::free: apply_memory_op(id, op, now); break;
    case OpKind::kernel:
      if (paging_on() && !dag_.accesses(id).empty())
        start_paged_kernel(id, op);
      else
        start_kernel(id, op);
      break;
    case OpKind::host_compute:
      start_host_compute(id, op.device, op);
      if (op.seconds <= 0) // a recorded host delay has no shadow ranks' work beside it
        for (const DeviceRef& peer : dag_.shadows(op.src))
          start_host_compute(id, shadow_of(op.src, peer, op.device), op);
      break;
    case OpKind::copy:
      if (start_mirrored_copy(id, op))
        break;
      start_copy(id, op, op.src, op.dst);
      for (const DeviceRef& peer : dag_.shadows(op.device))
        start_copy(id, op, shadow_of(op.device, peer, op.src), shadow_of(op.device, peer, op.dst));
      break;
    case OpKind::collective: {
      CollectiveRun& run = collectives_[id];
      run.plan           = &planned(op);
      if (step_private({id, member_[id - base_]}) && !run.plan->timed) {
        run.measure = true;
        run.start   = now;
        for (int l : run.plan->links) {
          run.bytes_before.push_back(routes_.accounts().bytes(l));
          run.busy_before.push_back(routes_.accounts().busy(l));
        }
      }
      start_collective_phase(id);
      break;
    }
    case OpKind::chain: break; // current_op() is one of its members
  }
  if (running_acts_[id - base_] == 0)
    complete(id);
}

void Replayer::on_activity_done(size_t index)
{
  Activity& a = activities_.at(index);
  double now  = sg4::Engine::get_clock();
  if (a.route >= 0)
    routes_.accounts().flow_ended(routes_.route(a.route).links, now);
  parked_.push_back(std::move(a.handle));
  OpId op     = a.op;
  bool paging = a.paging;
  free_activities_.push_back(static_cast<uint32_t>(index)); // `a` is done with: its slot is free
  if (op == OpDag::none)
    return;
  // A kernel under unified memory: when its own work (not a paging transfer) ends.
  auto paged = paged_.empty() ? paged_.end() : paged_.find(op);
  if (paged != paged_.end() && !paging)
    paged->second.own_end = now;
  if (--running_acts_[op - base_] > 0)
    return;
  if (current_op(op).kind == OpKind::collective && start_collective_phase(op))
    return;
  if (paged != paged_.end() && start_paging_step(op))
    return;
  complete(op);
  drain_ready();
}

void Replayer::complete(OpId id, double end)
{
  double now = sg4::Engine::get_clock();
  close_record(id, current_op(id), end < 0 ? now : end);
  if (!paged_.empty())
    finish_paged_kernel(id);
  ++ops_done_;
  const Op& whole = dag_.op(id);
  if (whole.kind == OpKind::chain && ++member_[id - base_] < dag_.chain(whole.chain).size()) {
    ready_.push_back(id); // its next member, ready as an op whose one dependency ended
    return;
  }
  ++completed_;
  if (progress_)
    progress_->op_done(completed_, dag_.size(), now);
  for (uint32_t k = out_start_[id - batch_]; k < out_start_[id - batch_ + 1]; ++k)
    if (--waiting_on_[out_[k] - base_] == 0) {
      ready_.push_back(out_[k]);
      __builtin_prefetch(&dag_.op(out_[k])); // start() reads it soon: fetch it meanwhile
    }
}

RunResult Replayer::collect()
{
  RunResult r;
  r.makespan_s = sg4::Engine::get_clock();
  r.activities = started_activities_;
  r.op_count   = static_cast<int64_t>(ops_done_);
  if (options_.record_ops)
    r.ops = std::move(records_);
  if (summary_only()) {
    r.step_intervals         = std::move(intervals_);
    r.step_intervals.present = true;
  }
  for (auto& [d, p] : pools_)
    r.pools.push_back(p->take_result());
  if (orbits_)
    orbits_->mirror(routes_.accounts().all_bytes(), routes_.accounts().all_busy());
  const LinkAccounts& accounts = routes_.accounts();
  for (int l = 0; l < static_cast<int>(routes_.link_count()); ++l) {
    if (accounts.bytes(l) <= 0)
      continue;
    // Its nominal bandwidth: the orbits' scaled links are restored by now (run()).
    const sg4::Link* link = routes_.link(l);
    r.links.push_back({link->get_name(), link->get_bandwidth(), accounts.bytes(l), accounts.busy(l)});
  }
  // By name: the order routes were first asked for depends on how the replay ran.
  std::sort(r.links.begin(), r.links.end(), [](const LinkResult& a, const LinkResult& b) { return a.name < b.name; });
  for (auto& [d, g] : paging_)
    r.paging.push_back(std::move(g.result));
  return r;
}

} // namespace memwall

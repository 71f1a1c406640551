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
    paging_.prefetch = prefetch_registry().make(options_.memory.prefetch);
  take_new_ops();
}

Replayer::Replayer(StepSource& source, const Platform& platform, ReplayOptions options)
    : Replayer(source.dag(), platform, std::move(options))
{
  drive_.source = &source;
}

void Replayer::take_new_ops()
{
  if (dag_.first_id() != index_.base) {
    // The source forgot the ops it issued before, all of them completed.
    index_.base = dag_.first_id();
    index_.waiting_on.clear();
    index_.running_acts.clear();
    runs_.private_ops.clear();
    records_.summary_op.clear();
    chains_.member.clear();
    index_.edges_taken = 0;
  }
  size_t n = dag_.size();
  if (dag_.chain_count() > 0 && !summary_only())
    throw std::logic_error("a DAG with chains replays without records only (OpDag::set_chains)");
  index_.waiting_on.resize(n - index_.base);
  index_.running_acts.resize(n - index_.base, 0);
  runs_.private_ops.resize(n - index_.base, 0);
  chains_.member.resize(n - index_.base, 0);
  chains_.info.resize(dag_.chain_count());
  chains_.seen.resize(dag_.chain_count(), 0);
  keep_records(index_.taken, n);
  index_.index_batch(dag_.edges(), n);
  for (size_t v = index_.taken; v < n; ++v)
    index_.waiting_on[v - index_.base] = index_.in_count[v - index_.batch];
  // A GPU whose kernels all run on one stream, and which copies nothing to itself,
  // never has two users of its HBM at once: its kernels can be single timed activities.
  visit_ops(index_.taken, n, [&](const Op& op) {
    if (op.kind == OpKind::kernel && op.seconds <= 0) { // a measured kernel's time is all its own
      auto [it, fresh] = streams_.kernel_stream.try_emplace(op.device, op.stream);
      if (!fresh && it->second != op.stream)
        streams_.shared_hbm.insert(op.device);
    } else if (op.kind == OpKind::copy && op.src == op.dst) {
      streams_.shared_hbm.insert(op.src);
    }
  });
  fold_batch(index_.taken, n);
  find_private_ops(index_.taken, n);
  for (size_t v = index_.taken; v < n; ++v)
    if (index_.waiting_on[v - index_.base] == 0)
      index_.ready.push_back(static_cast<OpId>(v));
  index_.taken = n;
}

// Which records ops [from, to) get. All of them, indexed by op id, unless only the
// summary is wanted: then none, and the ops of the first GPU holding memory (the
// breakdown's GPU, StepReport's busiest_gpu: pools are ordered by device) and its
// node's host compute add their intervals as they end.
void Replayer::keep_records(size_t from, size_t to)
{
  if (!summary_only()) {
    records_.ops.resize(to);
    return;
  }
  DeviceRef gpu = records_.intervals.gpu;
  visit_ops(from, to, [&](const Op& op) {
    if ((op.kind == OpKind::alloc || op.kind == OpKind::free) && op.pool.kind == DeviceKind::gpu &&
        (gpu.node < 0 || op.pool < gpu))
      gpu = op.pool;
  });
  if (!(gpu == records_.intervals.gpu)) // what was added belonged to another GPU
    records_.intervals = StepIntervals{.gpu = gpu};
  records_.summary_op.resize(to - index_.base, 0);
  for (size_t v = from; v < to; ++v) {
    const Op& op = dag_.op(static_cast<OpId>(v));
    // A chain's members share its device: whether any of their kinds is read.
    records_.summary_op[v - index_.base] =
        gpu.node >= 0 && (op.kind == OpKind::chain ? records_.intervals.reads(OpKind::host_compute, op.device) ||
                                                         records_.intervals.reads(OpKind::kernel, op.device)
                                                   : records_.intervals.reads(op.kind, op.device));
  }
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
      if (current && !current->drive_.failure && a.get_state() == sg4::Activity::State::FINISHED)
        current->guarded([&] { current->on_activity_done(reinterpret_cast<uintptr_t>(a.get_data<void>()) - 1); });
    });
    // SimGrid still touches an activity after its completion callback: release our
    // references only once time has moved on (DESIGN.md §3).
    sg4::Engine::on_time_advance_cb([](double) {
      if (current && !current->drive_.failure)
        current->guarded([] {
          current->slots_.parked.clear();
          // A run due within the timing precision of this stop ends at it (end_runs).
          double now = sg4::Engine::get_clock();
          if (!current->runs_.queue.empty() && current->runs_.queue.top().date - now < current->runs_.timing_precision)
            current->arm_run_timer(now);
        });
    });
  }
  sg4::Engine* engine    = sg4::Engine::get_instance();
  runs_.timing_precision = simgrid::config::get_value<double>("surf/precision");
  ReplayProgress progress(options_.progress);
  drive_.progress = &progress;
  mirror_orbits();
  replay_loop(engine);
  restore_links();
  drive_.progress = nullptr;
  if (drive_.completed != dag_.size())
    throw std::runtime_error(stall_message());
  return collect();
}

// Only on failure: name the cause that is true, not the one that is likely. Boost's
// topological sort proves or refutes a cycle; without one, an activity never ended.
std::string Replayer::stall_message() const
{
  std::string head = "replay stalled at simulated time " + std::to_string(sg4::Engine::get_clock()) +
                     " s: " + std::to_string(dag_.size() - drive_.completed) + " of " + std::to_string(dag_.size()) +
                     " ops never ran";
  // Kahn's algorithm over the batch: ops left unvisited lie on a cycle or behind one.
  std::vector<uint32_t> in(index_.in_count);
  std::vector<OpId> free_ops;
  for (size_t v = 0; v < in.size(); ++v)
    if (in[v] == 0)
      free_ops.push_back(index_.batch + static_cast<OpId>(v));
  size_t visited = 0;
  while (!free_ops.empty()) {
    OpId v = free_ops.back();
    free_ops.pop_back();
    ++visited;
    for (uint32_t k = index_.out_start[v - index_.batch]; k < index_.out_start[v - index_.batch + 1]; ++k)
      if (--in[index_.out[k] - index_.batch] == 0)
        free_ops.push_back(index_.out[k]);
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
    if (drive_.failure)
      std::rethrow_exception(drive_.failure);
    slots_.parked.clear();
    due_memory_.apply_all(sg4::Engine::get_clock());
    if (!drive_.source || drive_.completed != index_.taken)
      break;
    slots_.activities.clear(); // all done: their completion callbacks have run
    slots_.free.clear();
    // A wait shorter than the engine resolves (SimGrid ends an activity whose remaining
    // work is below its precision without moving the clock) has still ended: the source
    // is told the time it asked to wake at, or it would ask for the same wait forever.
    double now           = std::max(sg4::Engine::get_clock(), drive_.waiting_until);
    drive_.waiting_until = 0;
    StepDecision d       = drive_.source->next(now);
    take_new_ops();
    if (d.kind == StepDecision::Kind::done && index_.ready.empty())
      break;
    if (d.kind == StepDecision::Kind::wait && d.wake_at > now) {
      drive_.waiting_until = d.wake_at;
      start_delay(OpDag::none, d.wake_at - sg4::Engine::get_clock());
    }
  }
}

void Replayer::drain_ready()
{
  if (drive_.draining)
    return;
  drive_.draining = true;
  // FIFO in order of readiness, so ops released at the same instant start in a fixed order.
  for (size_t head = 0; head < index_.ready.size(); ++head)
    start(index_.ready[head]);
  index_.ready.clear();
  drive_.draining = false;
}

void Replayer::start(OpId id)
{
  if (options_.coalesce && member_private({id, chains_.member[id - index_.base]}) && start_run(id))
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
      CollectiveRun& run = collectives_.running[id];
      run.plan           = &planned(op);
      if (member_private({id, chains_.member[id - index_.base]}) && !run.plan->timed) {
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
  if (index_.running_acts[id - index_.base] == 0)
    complete(id);
}

void Replayer::on_activity_done(size_t index)
{
  Activity& a = slots_.activities.at(index);
  double now  = sg4::Engine::get_clock();
  if (a.route >= 0)
    routes_.accounts().flow_ended(routes_.route(a.route).links, now);
  slots_.parked.push_back(std::move(a.handle));
  OpId op     = a.op;
  bool paging = a.paging;
  slots_.free.push_back(static_cast<uint32_t>(index)); // `a` is done with: its slot is free
  if (op == OpDag::none)
    return;
  // A kernel under unified memory: when its own work (not a paging transfer) ends.
  auto paged = paging_.kernels.empty() ? paging_.kernels.end() : paging_.kernels.find(op);
  if (paged != paging_.kernels.end() && !paging)
    paged->second.own_end = now;
  if (--index_.running_acts[op - index_.base] > 0)
    return;
  if (current_op(op).kind == OpKind::collective && start_collective_phase(op))
    return;
  if (paged != paging_.kernels.end() && start_paging_step(op))
    return;
  complete(op);
  drain_ready();
}

void Replayer::complete(OpId id, double end)
{
  double now = sg4::Engine::get_clock();
  close_record(id, current_op(id), end < 0 ? now : end);
  if (!paging_.kernels.empty())
    finish_paged_kernel(id);
  ++drive_.ops_done;
  const Op& whole = dag_.op(id);
  if (whole.kind == OpKind::chain && ++chains_.member[id - index_.base] < dag_.chain(whole.chain).size()) {
    index_.ready.push_back(id); // its next member, ready as an op whose one dependency ended
    return;
  }
  ++drive_.completed;
  if (drive_.progress)
    drive_.progress->op_done(drive_.completed, dag_.size(), now);
  for (uint32_t k = index_.out_start[id - index_.batch]; k < index_.out_start[id - index_.batch + 1]; ++k)
    if (--index_.waiting_on[index_.out[k] - index_.base] == 0) {
      index_.ready.push_back(index_.out[k]);
      __builtin_prefetch(&dag_.op(index_.out[k])); // start() reads it soon: fetch it meanwhile
    }
}

RunResult Replayer::collect()
{
  RunResult r;
  r.makespan_s = sg4::Engine::get_clock();
  r.activities = slots_.started;
  r.op_count   = static_cast<int64_t>(drive_.ops_done);
  if (options_.record_ops)
    r.ops = std::move(records_.ops);
  if (summary_only()) {
    r.step_intervals         = std::move(records_.intervals);
    r.step_intervals.present = true;
  }
  for (auto& [d, p] : pools_.by_device)
    r.pools.push_back(p->take_result());
  if (mirror_.fold)
    mirror_.fold->mirror(routes_.accounts().all_bytes(), routes_.accounts().all_busy());
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
  for (auto& [d, g] : paging_.gpus)
    r.paging.push_back(std::move(g.result));
  return r;
}

} // namespace memwall

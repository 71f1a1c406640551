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
    : dag_(dag), platform_(platform), options_(std::move(options)), chains_(dag, index_),
      launcher_(dag, platform, index_, chains_, options_.recorded_on.get()),
      pools_(platform.cluster(), dag, options_.memory_timelines, options_.allocator),
      // Under unified memory the stall figures are read from every kernel's record.
      records_(dag, index_, chains_, options_.summary_records_only && !options_.memory.enabled(),
               options_.memory.enabled()),
      paging_(dag, options_.memory, launcher_, pools_),
      collectives_(dag, platform, options_.collective_algorithm, options_.fold_collectives, paging_.on(), launcher_,
                   chains_, index_),
      mirror_(dag, platform, launcher_, collectives_, chains_),
      runs_({dag, index_, chains_, launcher_, collectives_, records_, pools_, due_memory_},
            options_.coalesce && !paging_.on(), [this] {
              if (!drive_.failure)
                guarded([&] { end_runs(); });
            })
{
  take_new_ops();
}

Replayer::Replayer(WorkloadSource& source, const Platform& platform, ReplayOptions options)
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
    runs_.forget();
    records_.forget();
    chains_.member.clear();
    index_.edges_taken = 0;
  }
  size_t n = dag_.size();
  if (dag_.chain_count() > 0 && !records_.summary_only())
    throw std::logic_error("a DAG with chains replays without records only (OpDag::set_chains)");
  index_.waiting_on.resize(n - index_.base);
  index_.running_acts.resize(n - index_.base, 0);
  runs_.resize(n - index_.base);
  chains_.resize(n - index_.base, dag_.chain_count());
  records_.keep(index_.taken, n);
  index_.index_batch(dag_.edges(), n);
  for (size_t v = index_.taken; v < n; ++v)
    index_.waiting_on[v - index_.base] = index_.in_count[v - index_.batch];
  launcher_.note_streams(index_.taken, n);
  collectives_.fold_batch(index_.taken, n);
  runs_.find_private_ops(index_.taken, n);
  for (size_t v = index_.taken; v < n; ++v)
    if (index_.waiting_on[v - index_.base] == 0)
      index_.ready.push_back(static_cast<OpId>(v));
  index_.taken = n;
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
          current->launcher_.slots().parked.clear();
          current->runs_.time_advanced(sg4::Engine::get_clock());
        });
    });
  }
  sg4::Engine* engine = sg4::Engine::get_instance();
  runs_.set_timing_precision(simgrid::config::get_value<double>("surf/precision"));
  ReplayProgress progress(options_.progress);
  drive_.progress = &progress;
  // A replay that pages or grows as it runs breaks the rotation's symmetry.
  mirror_.mirror(options_.mirror_orbits && !paging_.on() && !drive_.source, index_.taken);
  replay_loop(engine);
  mirror_.restore_links();
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
    launcher_.slots().parked.clear();
    due_memory_.apply_all(sg4::Engine::get_clock());
    if (!drive_.source || drive_.completed != index_.taken)
      break;
    launcher_.slots().activities.clear(); // all done: their completion callbacks have run
    launcher_.slots().free.clear();
    // A wait shorter than the engine resolves (SimGrid ends an activity whose remaining
    // work is below its precision without moving the clock) has still ended: the source
    // is told the time it asked to wake at, or it would ask for the same wait forever.
    double now           = std::max(sg4::Engine::get_clock(), drive_.waiting_until);
    drive_.waiting_until = 0;
    SourceDecision d     = drive_.source->next(now);
    take_new_ops();
    if (d.kind == SourceDecision::Kind::done && index_.ready.empty())
      break;
    if (d.kind == SourceDecision::Kind::wait && d.wake_at > now) {
      drive_.waiting_until = d.wake_at;
      launcher_.start_delay(OpDag::none, d.wake_at - sg4::Engine::get_clock());
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
  bool priv = runs_.member_private({id, chains_.member[id - index_.base]});
  if (priv && runs_.start_run(id))
    return;
  const Op& op = chains_.current_op(id);
  double now   = sg4::Engine::get_clock();
  records_.open(id, op, now);
  switch (op.kind) {
    case OpKind::alloc:
    case OpKind::free: apply_memory_op(id, op, now); break;
    case OpKind::kernel:
      if (paging_.on() && !dag_.accesses(id).empty())
        paging_.start_kernel(id, op);
      else
        launcher_.start_kernel(id, op);
      break;
    case OpKind::host_compute:
      launcher_.start_host_compute(id, op.device, op);
      if (op.seconds <= 0) // a recorded host delay has no shadow ranks' work beside it
        for (const DeviceRef& peer : dag_.shadows(op.src))
          launcher_.start_host_compute(id, launcher_.shadow_of(op.src, peer, op.device), op);
      break;
    case OpKind::copy:
      if (mirror_.start_copy(id, op))
        break;
      launcher_.start_copy(id, op, op.src, op.dst);
      for (const DeviceRef& peer : dag_.shadows(op.device))
        launcher_.start_copy(id, op, launcher_.copy_end_of(op, peer, op.src), launcher_.copy_end_of(op, peer, op.dst));
      break;
    case OpKind::collective: collectives_.start(id, op, priv); break;
    case OpKind::chain: break; // current_op() is one of its members
  }
  if (index_.running_acts[id - index_.base] == 0)
    complete(id);
}

void Replayer::apply_memory_op(OpId id, const Op& op, double now)
{
  if (paging_.on()) { // no run holds an alloc or free under unified memory
    if (op.kind == OpKind::alloc && op.pool.kind == DeviceKind::gpu)
      return paging_.alloc(id, op);
    if (op.kind == OpKind::free && paging_.free_managed(op))
      return;
  }
  due_memory_.apply_now(pools_.pool(op.pool), op, now);
}

void Replayer::on_activity_done(size_t index)
{
  ActivitySlots& slots = launcher_.slots();
  ReplayActivity& a    = slots.activities.at(index);
  double now           = sg4::Engine::get_clock();
  RouteTable& routes   = launcher_.routes();
  if (a.route >= 0)
    routes.accounts().flow_ended(routes.route(a.route).links, now);
  slots.parked.push_back(std::move(a.handle));
  OpId op     = a.op;
  bool paging = a.paging;
  slots.free.push_back(static_cast<uint32_t>(index)); // `a` is done with: its slot is free
  if (op == OpDag::none)
    return;
  // A kernel under unified memory: when its own work (not a paging transfer) ends.
  paging_.activity_ended(op, paging, now);
  if (--index_.running_acts[op - index_.base] > 0)
    return;
  const Op& member = chains_.current_op(op);
  if (member.kind == OpKind::collective && collectives_.start_phase(op))
    return;
  if (paging_.kernels_paging() && paging_.start_step(op))
    return;
  if (member.kind == OpKind::kernel)
    launcher_.kernel_timer().power().ended(member.device, now); // started by the launcher
  complete(op);
  drain_ready();
}

void Replayer::complete(OpId id, double end)
{
  double now = sg4::Engine::get_clock();
  records_.close(id, chains_.current_op(id), end < 0 ? now : end);
  if (paging_.kernels_paging())
    paging_.finish_kernel(id, records_.record(id)); // every op has a record under unified memory
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
  r.activities = launcher_.slots().started;
  r.op_count   = static_cast<int64_t>(drive_.ops_done);
  if (options_.record_ops)
    r.ops = records_.take_ops();
  if (records_.summary_only()) {
    r.step_intervals         = records_.take_intervals();
    r.step_intervals.present = true;
  }
  for (auto& [d, p] : pools_.by_device())
    r.pools.push_back(p->take_result());
  mirror_.mirror_figures();
  const RouteTable& routes     = launcher_.routes();
  const LinkAccounts& accounts = routes.accounts();
  for (int l = 0; l < static_cast<int>(routes.link_count()); ++l) {
    if (accounts.bytes(l) <= 0)
      continue;
    // Its nominal bandwidth: the orbits' scaled links are restored by now (run()).
    const sg4::Link* link = routes.link(l);
    r.links.push_back({link->get_name(), link->get_bandwidth(), accounts.bytes(l), accounts.busy(l)});
  }
  // By name: the order routes were first asked for depends on how the replay ran.
  std::sort(r.links.begin(), r.links.end(), [](const LinkResult& a, const LinkResult& b) { return a.name < b.name; });
  r.paging = paging_.take_results();
  return r;
}

void Replayer::end_runs()
{
  double now = sg4::Engine::get_clock();
  while (runs_.due(now)) {
    finish_run(runs_.pop());
    drain_ready();
  }
  runs_.rearm();
}

void Replayer::finish_run(const Coalescer::Run& run)
{
  // Inside the run, each op is the only dependency of the next: nothing else to release.
  drive_.ops_done += run.members - 1;
  for (OpId e : run.entries) {
    --index_.waiting_on[index_.out[index_.out_start[e - index_.batch]] - index_.base];
    ++drive_.completed;
  }
  complete(run.tail, run.end); // the prefix sum, as for the others, not the clock's rounding
}

} // namespace memwall

// Coalescing: a run of ops on one stream replayed as one timed activity.
//
// An op is private when no other stream ever uses what it uses: a kernel on a GPU whose
// kernels all run on one stream and whose HBM nothing copies through; an alloc or free
// (instantaneous without unified memory); a collective whose flows cross only links no
// other stream's flows cross. A private op takes the same time whenever it runs, since
// its stream runs one op at a time and nothing else shares its resources: a kernel its
// KernelTiming, a collective what its first instance took (measured by the replay
// itself, with its link bytes and busy time).
//
//     stream:  [a]──►[k1]──►[k2]──►[c]──►[f]──►[k3]     one Exec of the summed time,
//                ▲                                │      members' records filled from
//        from another stream               to another    the prefix sums
//
// A run is a chain of private ops of one stream where each edge inside is the only
// edge leaving its source and the only one entering its target: nothing outside the
// run can start, or be started, in the middle. Its allocs and frees wait in DueMemory
// and reach their pools in time order, before any other op on that pool at or after
// their time, so memory timelines stay in time order; a run neither starts with one
// nor holds one at its start time (their order among other streams' events of that
// instant is the op-by-op replay's). A run is no SimGrid activity: it ends on a kernel
// timer where its Exec would have ended (Replayer::end_runs).
//
// A run walks its members: ops, and the members of chain ops (OpDag::end_capture), whose
// privacy, kernel timings and collective plans are derived once per stored chain.
#include "sim/replay/Coalescer.hpp"
#include "sim/replay/RouteOpSet.hpp"
#include "sim/timing/KernelTiming.hpp"

#include <optional>

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace memwall {
namespace {

constexpr int no_owner = -1;
constexpr int shared   = -2;

} // namespace

void Coalescer::find_private_ops(size_t from, size_t to)
{
  if (!enabled_)
    return;
  // Which stream uses each link (or several do).
  std::vector<int> owner;
  auto claim = [&](int key, int link) {
    if (static_cast<size_t>(link) >= owner.size())
      owner.resize(link + 1, no_owner);
    int& o = owner[link];
    o      = (o == no_owner || o == key) ? key : shared;
  };
  auto claim_route = [&](int key, const DeviceRef& a, const DeviceRef& b) {
    for (int l : p_.launcher.routes().route(p_.launcher.route_of(a, b)).links)
      claim(key, l);
  };
  RouteOpSet claimed; // an op alike claims the same links for the same stream
  p_.chains.visit(from, to, [&](const Op& op) {
    if (!claimed.first(op))
      return;
    int key = p_.launcher.stream_key(op);
    if (op.kind == OpKind::collective)
      for (int l : p_.collectives.planned(op).links)
        claim(key, l);
    else
      p_.launcher.for_each_route(op, [&](const DeviceRef& a, const DeviceRef& b) { claim_route(key, a, b); });
  });
  auto mine = [&](const Op& op) {
    switch (op.kind) {
      case OpKind::alloc:
      case OpKind::free: return true;
      case OpKind::kernel: return op.seconds > 0 || !p_.launcher.shares_hbm(op.device);
      case OpKind::host_compute: return op.seconds > 0;
      case OpKind::collective: {
        int key = p_.launcher.stream_key(op);
        for (int l : p_.collectives.planned(op).links)
          if (owner[l] != key)
            return false;
        return true;
      }
      case OpKind::copy:
      case OpKind::chain: return false;
    }
    return false;
  };
  for (size_t v = from; v < to; ++v) {
    const Op& op = p_.dag.op(static_cast<OpId>(v));
    if (op.kind != OpKind::chain) {
      private_ops_[v - p_.index.base] = mine(op);
      continue;
    }
    ChainInfo& c = p_.chains.info[op.chain];
    if (c.batch == p_.collectives.batch())
      continue;
    c       = ChainInfo{};
    c.batch = p_.collectives.batch();
    for (const Op& m : p_.dag.chain(op.chain))
      c.members.push_back(facts_of(m, mine(m)));
  }
}

bool Coalescer::member_private(RunMember s) const
{
  const Op& op = p_.dag.op(s.id);
  if (op.kind != OpKind::chain)
    return private_ops_[s.id - p_.index.base];
  const MemberFacts* f = ChainState::facts(p_.chains.info[op.chain], s.member, p_.collectives.batch());
  return f && f->priv;
}

MemberFacts Coalescer::facts_of(const Op& op, bool priv)
{
  MemberFacts f;
  f.priv = priv;
  if (priv && op.kind == OpKind::kernel) { // at full clock: the power limit applies as the member runs
    KernelTiming t = p_.launcher.kernel_timer().full_clock(op);
    f.seconds      = t.total_s(op.bytes);
    f.hbm_busy     = ActivityLauncher::hbm_busy_s(op, t);
  }
  if (priv && op.kind == OpKind::collective)
    f.plan = &p_.collectives.planned(op);
  return f;
}

bool Coalescer::member_duration(const Op& op, const MemberFacts& facts, double& seconds, double& hbm_busy,
                                const PlannedCollective*& plan)
{
  if (!facts.priv)
    return false;
  switch (op.kind) {
    case OpKind::alloc:
    case OpKind::free: seconds = 0; return true;
    case OpKind::kernel:
      seconds  = facts.seconds;
      hbm_busy = facts.hbm_busy;
      return true;
    case OpKind::host_compute: seconds = op.seconds; return op.seconds > 0;
    case OpKind::collective:
      plan    = facts.plan;
      seconds = plan->duration;
      return plan->timed;
    default: return false;
  }
}

bool Coalescer::start_run(OpId head)
{
  // A member is committed (its interval, memory, HBM and link figures, in member order)
  // once the next one has joined, so that a run of a whole step holds no list of its
  // members: a run needs two, and the last one's record closes with the run.
  struct Member {
    RunMember unit;
    const Op* op = nullptr;
    double begin = 0, end = 0;
    double hbm_busy               = -1;
    const PlannedCollective* plan = nullptr;
    int hbm_route                 = -1;    // a kernel's, where it has HBM figures
    bool recorded                 = false; // its interval is kept (record_span)
    bool last                     = false; // of its op (a chain's last member, or an op)
  };
  double now         = sg4::Engine::get_clock();
  double t           = now;
  KernelTimer& timer = p_.launcher.kernel_timer();
  std::optional<PowerGovernor::Snapshot> head_window; // the head's device before it was noted
  // The member being built and the pending one take turns in two slots: nothing is
  // copied from one to the other (a copy of a Member just written stalls on its stores).
  Member slots[2];
  Member* pending = nullptr;
  size_t count    = 0;
  std::vector<OpId> entries;             // ops the run completes before its last member
  std::vector<DueMemory::Entry> due_ops; // its allocs and frees after this instant, in time order
  DeviceRef hbm_device{DeviceKind::nvme, -1, -1};
  int hbm      = -1; // hbm_device's HBM route, found once a run (its members share a device)
  auto account = [&](const Member& m) {
    switch (m.op->kind) {
      case OpKind::alloc:
      case OpKind::free:
        if (m.begin == now)
          p_.due_memory.apply_now(p_.pools.pool(m.op->pool), *m.op, m.begin);
        else
          due_ops.push_back({m.begin, m.op, &p_.pools.pool(m.op->pool)});
        break;
      case OpKind::kernel:
        if (m.hbm_busy >= 0)
          p_.launcher.account_hbm(m.hbm_route, m.op->bytes, m.hbm_busy);
        break;
      case OpKind::collective:
        for (size_t j = 0; j < m.plan->links.size(); ++j) {
          p_.launcher.routes().accounts().add(m.plan->links[j], m.plan->link_bytes[j], m.plan->link_busy[j]);
        }
        break;
      default: break;
    }
  };
  // Op by op; a chain's members in turn, its stored members and ChainInfo found once.
  for (OpId id = head;;) {
    const Op& whole    = p_.dag.op(id);
    bool chained       = whole.kind == OpKind::chain;
    const ChainInfo* c = chained ? &p_.chains.info[whole.chain] : nullptr;
    const Op* ops      = chained ? p_.dag.chain(whole.chain).data() : &whole;
    auto size          = static_cast<uint32_t>(chained ? p_.dag.chain(whole.chain).size() : 1);
    bool recorded      = p_.records.recorded(id);
    uint32_t k         = id == head ? p_.chains.member[head - p_.index.base] : 0;
    for (; k < size; ++k) {
      const Op& op             = ops[k];
      Member& m                = slots[pending == &slots[0] ? 1 : 0];
      m                        = Member{};
      m.unit                   = {id, k};
      m.op                     = &op;
      m.begin                  = t;
      m.last                   = k + 1 == size;
      m.recorded               = recorded;
      double d                 = 0;
      const MemberFacts* facts = chained ? ChainState::facts(*c, k, p_.collectives.batch()) : nullptr;
      bool timed               = chained ? facts && member_duration(op, *facts, d, m.hbm_busy, m.plan)
                                         : member_duration(op, facts_of(op, private_ops_[id - p_.index.base]), d, m.hbm_busy, m.plan);
      if (!timed)
        break;
      if (op.kind == OpKind::kernel && timer.power().on()) { // held by the power limit, in run order
        if (count == 0)                                      // the head
          head_window = timer.power().snapshot(op.device);
        d = timer(op, t).total_s(op.bytes);
      }
      // Allocs and frees at this very instant go op by op, interleaved with other
      // streams' in order of readiness, as without coalescing: at one instant their
      // order decides the peak.
      bool memory = op.kind == OpKind::alloc || op.kind == OpKind::free;
      if (memory && t == now)
        break;
      if (m.hbm_busy >= 0 && op.kind == OpKind::kernel) {
        if (!(op.device == hbm_device)) {
          hbm_device = op.device;
          hbm        = p_.launcher.hbm_route(op.device);
        }
        m.hbm_route = hbm;
      }
      m.end = t += d;
      if (count++ > 0) {
        if (pending->recorded)
          p_.records.span(pending->unit.id, *pending->op, pending->begin, pending->end);
        account(*pending);
        if (pending->last)
          entries.push_back(pending->unit.id);
      }
      pending = &m;
    }
    if (k < size) // a member that cannot join: the run ends before it
      break;
    // Inside a chain each member is the next one's only dependency; after the op, the
    // next joins if it is the op's one successor and this is its one dependency.
    uint32_t first = p_.index.out_start[id - p_.index.batch];
    if (p_.index.out_start[id - p_.index.batch + 1] - first != 1)
      break;
    OpId next   = p_.index.out[first];
    const Op& n = p_.dag.op(next);
    if (p_.index.in_count[next - p_.index.batch] != 1 || n.device != ops[size - 1].device ||
        n.stream != ops[size - 1].stream)
      break;
    id = next;
  }
  if (count < 2) {
    if (head_window) // the head runs on its own, noted there
      timer.power().restore(pending ? pending->op->device : p_.dag.op(head).device, *head_window);
    return false;
  }
  // The last one ends with the run's activity (finish_run).
  p_.records.open(pending->unit.id, *pending->op, pending->begin);
  account(*pending);
  p_.due_memory.add_run(std::move(due_ops));
  OpId tail                              = pending->unit.id;
  p_.chains.member[tail - p_.index.base] = pending->unit.member; // what complete() closes
  // A delay of d seconds on a 1 flop/s host (what SimGrid's lazy CPU model would run)
  // is due at now + d: the run ends then, or at an earlier clock stop that is less than
  // the engine's timing precision before it, as SimGrid ends an Exec
  // (CpuModel::update_actions_state_lazy): a run ends exactly where its Exec would.
  ++p_.launcher.slots().started;
  double date = now + (pending->end - now);
  bool first  = queue_.empty() || date < queue_.top().date;
  queue_.push({date, seq_++, tail, std::move(entries), count, pending->end});
  if (first)
    arm(date);
  return true;
}

void Coalescer::arm(double date)
{
  if (!armed_dates_.insert(date).second)
    return; // one timer a date
  simgrid::kernel::timer::Timer::set(date, [this, date] {
    armed_dates_.erase(date);
    on_due_();
  });
}

Coalescer::Run Coalescer::pop()
{
  // priority_queue gives its top as const; it is popped at once.
  Run run = std::move(const_cast<Run&>(queue_.top()));
  queue_.pop();
  return run;
}

// The earliest left may have started while a run before it was the earliest.
void Coalescer::rearm()
{
  if (!queue_.empty())
    arm(queue_.top().date);
}

} // namespace memwall

#pragma once
// The op DAG of one step. Adding an op appends it to its stream: the edge from the
// stream's previous op is added here, so the replay sees one mechanism (edges) for both
// stream order and cross-stream events.
//
// Storage is flat, for DAGs of millions of ops: ops in fixed chunks that never move, and
// edges as one list of (earlier, later) pairs, 8 bytes each. The replay builds the
// adjacency it walks from that list once (Replayer::take_new_ops).
//
// Repeated work is stored once (reuse along time): with chains on, a generator wraps
// work that may repeat (a pipeline stage's pass over one micro-batch) in begin_capture /
// end_capture; ops that form a chain (one stream, no edge but stream order) become one
// chain op, and a chain equal to the last one under the same key shares its stored ops.
// The 1T step's 4.41 M ops are 138,018 entries; the replay runs each member.
//
// Symmetric ranks are folded: the DAG holds the ops of representative devices only,
// and `represents(d)` says how many identical devices d stands for. Collectives still
// name every member of their group so their flows load every link they cross.
#include "workloads/dag/ChunkedVector.hpp"
#include "workloads/dag/Op.hpp"

#include <initializer_list>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

namespace memwall {

using OpId = uint32_t;

// `later` may start only once `earlier` has completed.
struct DagEdge {
  OpId earlier = 0, later = 0;
};

struct Tensor {
  uint32_t id = 0;
  DeviceRef pool;
  MemCategory category = MemCategory::other;
  double bytes         = 0;
};

class OpDag {
public:
  OpId add(Op op, std::initializer_list<OpId> deps = {});
  OpId add(Op op, const std::vector<OpId>& deps);
  OpId add(Op op, const OpId* deps, size_t count); // both of the above: no list built per op
  void depend(OpId later, OpId earlier);
  // Ops added from now on belong to `p` (a generator's forward, backward, optimizer).
  void set_phase(StepPhase p) { phase_ = p; }

  // Chains (see the header comment). Off by default: a DAG whose every op is a record
  // (-o, --trace) and one that a test inspects hold their ops one by one.
  void set_chains(bool on) { chains_ = on; }
  // Holds back the ops added from now on (a no-op with chains off, or while tensor
  // accesses are tracked: unified memory reads every op's own tensors). Their ids, as
  // add() and stream_tail() return them meanwhile, are provisional (captured_bit set)
  // and stay valid: used later, they name the op's final id, or the chain op for a
  // chain's last member. A chain's other members cannot be depended on: asking for a
  // stream's tail while capturing keeps the held ops from forming a chain.
  void begin_capture();
  // Adds the held ops: as one chain op when they form a chain, else as they are. `key`
  // names the work that may repeat. True when they formed a chain.
  bool end_capture(uint64_t key);
  // Adds one more chain op of the chain last stored under `key`, as if its ops had been
  // captured again (a generator that knows the work repeats skips building it).
  OpId repeat_chain(uint64_t key);
  static constexpr OpId captured_bit = 0x80000000u;
  // The members of chain op `op` (op.chain), in order.
  const std::vector<Op>& chain(uint32_t c) const { return chains_store_[c]; }
  size_t chain_count() const { return chains_store_.size(); }
  // Ops the DAG stands for, a chain's members each counted (size() counts entries).
  size_t op_count() const { return size() + extra_members_; }

  // Memory: an alloc op on `stream` of `device` for a tensor held in `pool`.
  Tensor alloc(const DeviceRef& device, StreamKind stream, const DeviceRef& pool, MemCategory category, double bytes,
               OpName name, std::initializer_list<OpId> deps = {});
  OpId free(const Tensor& t, const DeviceRef& device, StreamKind stream, OpName name,
            std::initializer_list<OpId> deps = {});
  OpId last_alloc_or_free() const;

  // Which tensors a kernel reads and writes (unified memory, sim/paging). Recorded only
  // once tracking is on, so that a run without managed memory stores nothing per op.
  void track_accesses(bool on) { track_accesses_ = on; }
  bool tracks_accesses() const { return track_accesses_; }
  // Kernel `op` touches `bytes` of `t` from `offset`; ignored for a tensor without id.
  void touch(OpId op, const Tensor& t, double bytes, bool write, double offset = 0);
  // The kernel's accesses in the order they were added; empty when none were recorded.
  const std::vector<TensorAccess>& accesses(OpId op) const;

  // A collective group of the representative, and the groups of its shadow ranks that
  // run each of its collectives at the same time (their flows load their own links).
  int32_t add_group(std::vector<DeviceRef> members, std::vector<std::vector<DeviceRef>> concurrent = {});
  const std::vector<DeviceRef>& group(int32_t g) const { return groups_.at(g).members; }
  size_t group_count() const { return groups_.size(); }
  const std::vector<std::vector<DeviceRef>>& concurrent_groups(int32_t g) const { return groups_.at(g).concurrent; }

  void set_represents(const DeviceRef& d, int count) { represents_[d] = count; }
  int represents(const DeviceRef& d) const;
  const std::map<DeviceRef, int>& represented() const { return represents_; }
  // Ranks on the representative's node whose copies and host work load the same shared
  // links (PCIe switches, DRAM, NVMe, NICs): the replay repeats that traffic for each of
  // them, mapped by their GPU-index offset, without recording it. Their collectives are
  // the concurrent groups of add_group.
  void set_shadows(const DeviceRef& d, std::vector<DeviceRef> peers) { shadows_[d] = std::move(peers); }
  const std::vector<DeviceRef>& shadows(const DeviceRef& d) const;
  const std::map<DeviceRef, std::vector<DeviceRef>>& all_shadows() const { return shadows_; }

  // Ids count every op ever added; those before first_id() were forgotten.
  size_t size() const { return base_ + ops_.size(); }
  OpId first_id() const { return base_; }
  const Op& op(OpId id) const
  {
    if (id & captured_bit) [[unlikely]]
      return captured_op(id);
    return ops_[id - base_];
  }
  // Edges between the ops not forgotten, in the order they were added.
  const std::vector<DagEdge>& edges() const { return edges_; }
  // Drops every op, once all have run: a workload that grows during the replay (a
  // serving run of millions of ops) keeps only its current iteration. Ids go on
  // counting; a dependency on a forgotten op, which has completed, is no edge.
  void forget_ops();
  // FLOPs of the held ops that count toward MFU, times the devices each op stands for.
  double model_flops() const;
  // Last op issued on a stream, or nullopt-like max() when the stream is empty.
  OpId stream_tail(const DeviceRef& d, StreamKind s);
  static constexpr OpId none = 0xffffffffu;

private:
  // A capture's provisional ids [tag, tag + n): added as [first, first + n), or as the
  // one chain op `first`.
  struct Capture {
    OpId tag     = 0;
    uint32_t n   = 0;
    OpId first   = 0;
    bool chained = false;
  };
  bool chain_ok() const;
  // Whether the held ops repeat stored chain `same`: the same work, and the same tensors
  // once each held alloc's id stands for the stored alloc's (`alias`: pairs to record).
  bool repeats(const std::vector<Op>& same, std::vector<std::pair<uint32_t, uint32_t>>& alias) const;
  std::vector<std::pair<uint32_t, uint32_t>> repeat_alias_; // repeats()'s pairs, kept for their capacity
  // The id a tensor's frees carry: the stored chain's for an alloc inside a repeat.
  uint32_t tensor_id(uint32_t id) const
  {
    return id < tensor_alias_.size() && tensor_alias_[id] ? tensor_alias_[id] : id;
  }
  Op chain_entry(uint32_t c) const; // the entry standing for stored chain c
  OpId resolve(OpId id) const;      // a provisional id's final one
  const Op& captured_op(OpId id) const;
  std::vector<Capture> captures_;
  OpId next_tag_ = captured_bit;
  OpId held_tag_ = 0;     // the current capture's first provisional id
  bool escaped_  = false; // a held op's id was handed out as a stream's tail
  ChunkedVector<Op> ops_;
  // Capturing: the held ops and the edges they take, ids as add() returned them.
  bool chains_    = false;
  bool capturing_ = false;
  std::vector<Op> held_;
  std::vector<DagEdge> held_edges_;
  OpId tail_before_ = none; // the first held op's stream's tail before it
  std::vector<std::vector<Op>> chains_store_;
  std::unordered_map<uint64_t, uint32_t> chain_by_key_;
  size_t extra_members_ = 0;
  // last_memory_op_ when the last alloc or free is inside a repeated chain, not its end.
  static constexpr OpId inside_chain = none - 1;
  std::vector<DagEdge> edges_;
  using Tails = std::map<std::pair<DeviceRef, StreamKind>, OpId>;
  Tails tails_;
  // The stream added to last, and those whose tails a capture moved (map nodes never
  // move, not even when the DAG does).
  Tails::value_type* last_tail_ = nullptr;
  std::vector<Tails::value_type*> touched_;
  struct Group {
    std::vector<DeviceRef> members;
    std::vector<std::vector<DeviceRef>> concurrent;
  };
  std::vector<Group> groups_;
  std::map<DeviceRef, int> represents_;
  std::map<DeviceRef, std::vector<DeviceRef>> shadows_;
  std::unordered_map<OpId, std::vector<TensorAccess>> accesses_;
  bool track_accesses_  = false;
  uint32_t next_tensor_ = 1;
  // A repeated chain replays the stored chain's allocs, ids and all: the tensors the
  // held copy allocated are known by the stored ids from then on (0: its own id), so a
  // free added later pairs with the alloc the replay makes (the caching allocator
  // pairs them by id; a repeat allocates an id again while it is live, freed oldest first).
  std::vector<uint32_t> tensor_alias_;
  OpId last_memory_op_ = none;
  OpId base_           = 0;
  StepPhase phase_     = StepPhase::setup;
};

} // namespace memwall

#include "workloads/dag/OpDag.hpp"

#include <algorithm>
#include <stdexcept>

namespace memwall {

OpId OpDag::add(Op op, std::initializer_list<OpId> deps) { return add(std::move(op), deps.begin(), deps.size()); }

OpId OpDag::add(Op op, const std::vector<OpId>& deps) { return add(std::move(op), deps.data(), deps.size()); }

OpId OpDag::add(Op op, const OpId* deps, size_t count)
{
  // A generator's arithmetic gone wrong (a negative width, 0/0) would replay as an op
  // ending before it starts; stop at the op instead of printing a wrong step time.
  if (!(op.flops >= 0) || !(op.bytes >= 0))
    throw std::logic_error("op " + op.name.str() + ": negative or NaN work (" + std::to_string(op.flops) + " FLOPs, " +
                           std::to_string(op.bytes) + " bytes)");
  auto key = std::make_pair(op.device, op.stream);
  op.phase = phase_;
  OpId id  = 0;
  if (capturing_) {
    id = next_tag_++;
    if (held_.empty())
      tail_before_ = stream_tail(op.device, op.stream);
    held_.push_back(std::move(op));
  } else {
    id = base_ + static_cast<OpId>(ops_.size());
    ops_.push_back(std::move(op));
  }
  // A generator adds runs of ops to one stream: its tail entry is looked up once per run.
  if (!last_tail_ || last_tail_->first != key)
    last_tail_ = &*tails_.try_emplace(key, none).first;
  if (last_tail_->second != none)
    depend(id, last_tail_->second);
  last_tail_->second = id;
  if (capturing_ && (touched_.empty() || touched_.back() != last_tail_))
    touched_.push_back(last_tail_);
  for (size_t i = 0; i < count; ++i)
    depend(id, deps[i]);
  return id;
}

void OpDag::depend(OpId later, OpId earlier)
{
  later   = resolve(later);
  earlier = resolve(earlier);
  if (later != none && earlier != none && earlier >= base_)
    (capturing_ ? held_edges_ : edges_).push_back({earlier, later});
}

OpId OpDag::resolve(OpId id) const
{
  if (id == none || !(id & captured_bit) || (capturing_ && id >= held_tag_))
    return id;
  auto c = std::upper_bound(captures_.begin(), captures_.end(), id, [](OpId v, const Capture& k) { return v < k.tag; });
  --c; // the capture whose ids include `id`
  if (!c->chained)
    return c->first + (id - c->tag);
  if (id != c->tag + c->n - 1)
    throw std::logic_error("op DAG: a dependency on an op inside a chain (OpDag::begin_capture)");
  return c->first;
}

const Op& OpDag::captured_op(OpId id) const
{
  if (capturing_ && id >= held_tag_)
    return held_[id - held_tag_];
  OpId r = resolve(id);
  return ops_[r - base_];
}

void OpDag::begin_capture()
{
  capturing_ = chains_ && !track_accesses_;
  held_tag_  = next_tag_;
  escaped_   = false;
}

// The held ops form a chain when they share one stream, no id of theirs was handed out
// as a tail, and their only edges are the stream order, from the stream's earlier tail
// into the first.
bool OpDag::chain_ok() const
{
  if (held_.size() < 2 || escaped_)
    return false;
  for (const Op& op : held_)
    if (!(op.device == held_.front().device) || op.stream != held_.front().stream || op.kind == OpKind::chain)
      return false;
  size_t k = 0;
  if (tail_before_ != none) {
    if (held_edges_.empty() || held_edges_[0].earlier != tail_before_ || held_edges_[0].later != held_tag_)
      return false;
    k = 1;
  }
  if (held_edges_.size() != k + held_.size() - 1)
    return false;
  for (size_t i = 1; i < held_.size(); ++i, ++k)
    if (held_edges_[k].earlier != held_tag_ + i - 1 || held_edges_[k].later != held_tag_ + i)
      return false;
  return true;
}

bool OpDag::end_capture(uint64_t key)
{
  if (!capturing_)
    return false;
  OpId first = base_ + static_cast<OpId>(ops_.size());
  Capture cap{held_tag_, static_cast<uint32_t>(held_.size()), first, chain_ok()};
  capturing_ = false;
  if (!cap.chained) {
    for (Op& op : held_)
      ops_.push_back(std::move(op));
  } else {
    auto [it, fresh] = chain_by_key_.try_emplace(key, static_cast<uint32_t>(chains_store_.size()));
    std::vector<std::pair<uint32_t, uint32_t>>& alias = repeat_alias_; // one list for every capture
    alias.clear();
    if (fresh || !repeats(chains_store_[it->second], alias)) {
      it->second = static_cast<uint32_t>(chains_store_.size());
      chains_store_.push_back(held_);
    } else {
      for (auto [own, stored] : alias) {
        if (tensor_alias_.size() <= own)
          tensor_alias_.resize(std::max<size_t>(own + 1, 2 * tensor_alias_.size()), 0);
        tensor_alias_[own] = stored;
      }
    }
    ops_.push_back(chain_entry(it->second));
    extra_members_ += held_.size() - 1;
  }
  if (cap.n > 0)
    captures_.push_back(cap);
  if (cap.chained) {
    if (tail_before_ != none)
      edges_.push_back({tail_before_, first});
  } else {
    for (const DagEdge& e : held_edges_)
      edges_.push_back({resolve(e.earlier), resolve(e.later)});
  }
  for (auto t : touched_) // a chained stream's tail is its last held op
    t->second = resolve(t->second);
  touched_.clear();
  held_.clear();
  held_edges_.clear();
  tail_before_ = none;
  return cap.chained;
}

bool OpDag::repeats(const std::vector<Op>& same, std::vector<std::pair<uint32_t, uint32_t>>& alias) const
{
  if (same.size() != held_.size())
    return false;
  for (size_t i = 0; i < held_.size(); ++i) {
    const Op &h = held_[i], &s = same[i];
    if (!same_work(s, h))
      return false;
    if (h.kind == OpKind::alloc && h.tensor != s.tensor) {
      alias.push_back({h.tensor, s.tensor});
    } else if (h.kind == OpKind::free && h.tensor != s.tensor) {
      // Freed by the same ops, the tensor must be the one the stored chain frees: one of
      // the held allocs standing for it; a tensor allocated elsewhere keeps its own id.
      // (Held allocs take ids in increasing order: the pairs are sorted.)
      auto a = std::lower_bound(alias.begin(), alias.end(), std::pair<uint32_t, uint32_t>{h.tensor, 0});
      if (a == alias.end() || a->first != h.tensor || a->second != s.tensor)
        return false;
    }
  }
  return true;
}

Op OpDag::chain_entry(uint32_t c) const
{
  const std::vector<Op>& m = chains_store_[c];
  Op op;
  op.kind   = OpKind::chain;
  op.device = m.front().device;
  op.stream = m.front().stream;
  op.phase  = m.back().phase;
  op.chain  = c;
  return op;
}

OpId OpDag::repeat_chain(uint64_t key)
{
  uint32_t c               = chain_by_key_.at(key);
  const std::vector<Op>& m = chains_store_[c];
  OpId id                  = add(chain_entry(c));
  extra_members_ += m.size() - 1;
  for (size_t i = m.size(); i-- > 0;)
    if (m[i].kind == OpKind::alloc || m[i].kind == OpKind::free) {
      last_memory_op_ = i + 1 == m.size() ? id : inside_chain;
      break;
    }
  return id;
}

OpId OpDag::last_alloc_or_free() const
{
  if (last_memory_op_ == inside_chain)
    throw std::logic_error("op DAG: the last alloc or free is inside a chain (OpDag::repeat_chain)");
  return resolve(last_memory_op_);
}

void OpDag::forget_ops()
{
  base_ += static_cast<OpId>(ops_.size());
  ops_.clear();
  edges_.clear();
  accesses_.clear();
}

void OpDag::touch(OpId op, const Tensor& t, double bytes, bool write, double offset)
{
  if (!track_accesses_ || t.id == 0 || bytes <= 0 || op == none)
    return;
  accesses_[op].push_back({t.id, offset, std::min(bytes, t.bytes - offset), write});
}

const std::vector<TensorAccess>& OpDag::accesses(OpId op) const
{
  static const std::vector<TensorAccess> empty;
  auto it = accesses_.find(op);
  return it == accesses_.end() ? empty : it->second;
}

double OpDag::model_flops() const
{
  double total = 0;
  // Millions of ops, most without model FLOPs, a few devices: look each device up once
  // per run of its ops, not once per op.
  DeviceRef last{DeviceKind::nvme, -1, -1};
  int times = 1;
  auto add  = [&](const Op& op) {
    if (op.model_flops == 0)
      return;
    if (!(op.device == last)) {
      last  = op.device;
      times = represents(op.device);
    }
    total += op.model_flops * times;
  };
  ops_.for_each([&](const Op& op) {
    if (op.kind != OpKind::chain) {
      add(op);
      return;
    }
    for (const Op& m : chains_store_[op.chain])
      add(m);
  });
  return total;
}

Tensor OpDag::alloc(const DeviceRef& device, StreamKind stream, const DeviceRef& pool, MemCategory category,
                    double bytes, OpName name, std::initializer_list<OpId> deps)
{
  Tensor t{next_tensor_++, pool, category, bytes};
  Op op;
  op.kind         = OpKind::alloc;
  op.stream       = stream;
  op.device       = device;
  op.name         = name;
  op.bytes        = bytes;
  op.category     = category;
  op.pool         = pool;
  op.tensor       = t.id;
  last_memory_op_ = add(std::move(op), deps);
  return t;
}

OpId OpDag::free(const Tensor& t, const DeviceRef& device, StreamKind stream, OpName name,
                 std::initializer_list<OpId> deps)
{
  Op op;
  op.kind         = OpKind::free;
  op.stream       = stream;
  op.device       = device;
  op.name         = name;
  op.bytes        = t.bytes;
  op.category     = t.category;
  op.pool         = t.pool;
  op.tensor       = tensor_id(t.id);
  last_memory_op_ = add(std::move(op), deps);
  return last_memory_op_;
}

int32_t OpDag::add_group(std::vector<DeviceRef> members, std::vector<std::vector<DeviceRef>> concurrent)
{
  groups_.push_back({std::move(members), std::move(concurrent)});
  return static_cast<int32_t>(groups_.size() - 1);
}

int OpDag::represents(const DeviceRef& d) const
{
  auto it = represents_.find(d);
  return it == represents_.end() ? 1 : it->second;
}

const std::vector<DeviceRef>& OpDag::shadows(const DeviceRef& d) const
{
  static const std::vector<DeviceRef> none_;
  auto it = shadows_.find(d);
  return it == shadows_.end() ? none_ : it->second;
}

OpId OpDag::stream_tail(const DeviceRef& d, StreamKind s)
{
  auto it = tails_.find({d, s});
  if (it == tails_.end() || it->second == none)
    return none;
  if (capturing_ && it->second >= held_tag_)
    escaped_ = true; // whoever asked may depend on it once later ops follow it
  return it->second;
}

} // namespace memwall

#include "OpDag.hpp"

#include <algorithm>

namespace memwall {

OpId OpDag::add(Op op, std::initializer_list<OpId> deps) { return add(std::move(op), std::vector<OpId>(deps)); }

OpId OpDag::add(Op op, const std::vector<OpId>& deps)
{
  auto key = std::make_pair(op.device, op.stream);
  OpId id  = base_ + static_cast<OpId>(ops_.size());
  op.phase = phase_;
  ops_.push_back(std::move(op));
  auto it  = tails_.find(key);
  if (it != tails_.end()) {
    depend(id, it->second);
    it->second = id;
  } else {
    tails_.emplace(key, id);
  }
  for (OpId d : deps)
    depend(id, d);
  return id;
}

void OpDag::depend(OpId later, OpId earlier)
{
  if (later != none && earlier != none && earlier >= base_)
    edges_.push_back({earlier, later});
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
  ops_.for_each([&](const Op& op) { total += op.model_flops * represents(op.device); });
  return total;
}

Tensor OpDag::alloc(const DeviceRef& device, StreamKind stream, const DeviceRef& pool, MemCategory category,
                    double bytes, OpName name, std::initializer_list<OpId> deps)
{
  Tensor t{next_tensor_++, pool, category, bytes};
  Op op;
  op.kind     = OpKind::alloc;
  op.stream   = stream;
  op.device   = device;
  op.name     = name;
  op.bytes    = bytes;
  op.category = category;
  op.pool     = pool;
  op.tensor   = t.id;
  last_memory_op_ = add(std::move(op), deps);
  return t;
}

OpId OpDag::free(const Tensor& t, const DeviceRef& device, StreamKind stream, OpName name,
                 std::initializer_list<OpId> deps)
{
  Op op;
  op.kind     = OpKind::free;
  op.stream   = stream;
  op.device   = device;
  op.name     = name;
  op.bytes    = t.bytes;
  op.category = t.category;
  op.pool     = t.pool;
  op.tensor   = t.id;
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

OpId OpDag::stream_tail(const DeviceRef& d, StreamKind s) const
{
  auto it = tails_.find({d, s});
  return it == tails_.end() ? none : it->second;
}

} // namespace memwall

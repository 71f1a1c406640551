#include "sim/paging/ManagedMemory.hpp"

#include "base/InputError.hpp"

#include <algorithm>
#include <cmath>

namespace memwall {
namespace {

constexpr double small_page_bytes = 4096;

size_t index(MemCategory c) { return static_cast<size_t>(c); }

} // namespace

ManagedMemory::ManagedMemory(const UnifiedMemoryConfig& cfg, std::unique_ptr<EvictionPolicy> eviction)
    : cfg_(cfg), eviction_(std::move(eviction))
{}

int ManagedMemory::new_chunk(uint32_t tensor, MemCategory c, double bytes)
{
  int id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<int>(chunks_.size());
    chunks_.emplace_back();
  }
  chunks_[static_cast<size_t>(id)] = {tensor, c, bytes, false, false};
  return id;
}

Migration ManagedMemory::add(uint32_t tensor, MemCategory c, double bytes, Start start, double room)
{
  Migration m;
  // A bound on what is tracked: 2^26 chunks are 128 TiB at 2 MiB, far beyond any host.
  constexpr double max_chunks = 1 << 26;
  if ((static_cast<double>(chunks_.size() - free_ids_.size()) + std::ceil(bytes / cfg_.chunk_bytes)) > max_chunks)
    throw InputError("memory: managed memory on one GPU exceeds " + std::to_string(static_cast<int64_t>(max_chunks)) +
                     " chunks of memory.chunk_bytes (" + std::to_string(static_cast<int64_t>(cfg_.chunk_bytes)) +
                     " bytes); raise memory.chunk_bytes or manage fewer categories");
  auto& ids = tensors_[tensor];
  for (double at = 0; at < bytes; at += cfg_.chunk_bytes) {
    int id = new_chunk(tensor, c, std::min(cfg_.chunk_bytes, bytes - at));
    ids.push_back(id);
    Chunk& ch = chunks_[static_cast<size_t>(id)];
    bool on_gpu =
        start == Start::gpu ? ensure_room(ch.bytes, room, m) : start == Start::gpu_if_room && room >= ch.bytes;
    if (on_gpu) {
      place_on_gpu(id, m);
      room -= ch.bytes;
    } else {
      m.to_host[index(c)] += ch.bytes;
    }
  }
  return m;
}

Migration ManagedMemory::remove(uint32_t tensor)
{
  Migration m;
  auto it = tensors_.find(tensor);
  if (it == tensors_.end())
    return m;
  for (int id : it->second) {
    Chunk& ch = chunks_[static_cast<size_t>(id)];
    if (ch.on_gpu) {
      eviction_->gone(id);
      resident_ -= ch.bytes;
      m.to_gpu[index(ch.category)] -= ch.bytes;
    } else {
      m.to_host[index(ch.category)] -= ch.bytes;
    }
    free_ids_.push_back(id);
  }
  tensors_.erase(it);
  return m;
}

void ManagedMemory::place_on_gpu(int id, Migration& m)
{
  Chunk& ch = chunks_[static_cast<size_t>(id)];
  ch.on_gpu = true;
  resident_ += ch.bytes;
  m.to_gpu[index(ch.category)] += ch.bytes;
  eviction_->resident(id);
}

bool ManagedMemory::ensure_room(double bytes, double& room, Migration& m)
{
  while (room < bytes) {
    int v = eviction_->victim();
    if (v < 0)
      return false;
    Chunk& ch = chunks_[static_cast<size_t>(v)];
    eviction_->gone(v);
    ch.on_gpu  = false;
    ch.evicted = true;
    resident_ -= ch.bytes;
    room += ch.bytes;
    m.d2h += ch.bytes;
    ++m.evictions;
    m.to_gpu[index(ch.category)] -= ch.bytes;
    m.to_host[index(ch.category)] += ch.bytes;
  }
  return true;
}

Migration ManagedMemory::make_room(double bytes, double room)
{
  Migration m;
  ensure_room(bytes, room, m);
  return m;
}

std::vector<ManagedMemory::Touch> ManagedMemory::sweep(const std::vector<TensorAccess>& accesses) const
{
  std::vector<Touch> order;
  for (const TensorAccess& a : accesses) {
    auto it = tensors_.find(a.tensor);
    if (it == tensors_.end() || a.bytes <= 0)
      continue;
    const auto& ids = it->second;
    double end      = a.offset + a.bytes;
    size_t first    = static_cast<size_t>(std::max(0.0, std::floor(a.offset / cfg_.chunk_bytes)));
    for (size_t i = first; i < ids.size() && static_cast<double>(i) * cfg_.chunk_bytes < end; ++i) {
      double lo = std::max(a.offset, static_cast<double>(i) * cfg_.chunk_bytes);
      double hi = std::min(end, static_cast<double>(i) * cfg_.chunk_bytes + chunks_[static_cast<size_t>(ids[i])].bytes);
      if (hi > lo)
        order.push_back({(lo - a.offset) / a.bytes, ids[i], hi - lo});
    }
  }
  std::stable_sort(order.begin(), order.end(), [](const Touch& x, const Touch& y) { return x.position < y.position; });
  return order;
}

Migration ManagedMemory::access(const std::vector<TensorAccess>& accesses, double room, bool on_demand)
{
  Migration m;
  for (const Touch& t : sweep(accesses)) {
    Chunk& ch = chunks_[static_cast<size_t>(t.chunk)];
    if (ch.on_gpu) {
      eviction_->touched(t.chunk);
      continue;
    }
    // Mapped for remote access: the GPU reads it over PCIe and nothing migrates. A
    // chunk that cannot get room (HBM held by memory that is not managed) is read so too.
    if (cfg_.is_remote(ch.category) || !ensure_room(ch.bytes, room, m)) {
      if (on_demand)
        m.remote += t.bytes;
      continue;
    }
    if (on_demand) {
      double big_pages = std::ceil(ch.bytes / cfg_.big_page_bytes);
      m.faults += std::max<int64_t>(1, static_cast<int64_t>(std::ceil(cfg_.prefetch_density * big_pages - 1e-9)));
    }
    if (ch.evicted)
      m.thrashing_pages += std::ceil(ch.bytes / small_page_bytes);
    m.h2d += ch.bytes;
    m.to_host[index(ch.category)] -= ch.bytes;
    place_on_gpu(t.chunk, m);
    room -= ch.bytes;
  }
  return m;
}

} // namespace memwall

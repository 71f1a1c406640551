#include "workloads/training/SavedTensors.hpp"

#include "workloads/training/StepBuild.hpp"

namespace memwall {

std::vector<Tensor>& SavedTensors::start(int b, int64_t mb, size_t kernels)
{
  auto& saved = kept_[slot_key(b, mb)].saved;
  saved.assign(kernels, Tensor{});
  return saved;
}

std::vector<Tensor>& SavedTensors::of(int b, int64_t mb)
{
  Kept& k = kept_[slot_key(b, mb)];
  if (k.repeated) {
    k.saved    = *k.repeated;
    k.repeated = nullptr;
  }
  return k.saved;
}

Tensor& SavedTensors::regenerated(int b, int64_t mb, size_t i, size_t kernels)
{
  auto& again = kept_[slot_key(b, mb)].regenerated;
  again.resize(kernels);
  return again[i];
}

const std::vector<Tensor>* SavedTensors::regenerated_of(int b, int64_t mb) const
{
  auto k = kept_.find(slot_key(b, mb));
  return k == kept_.end() || k->second.regenerated.empty() ? nullptr : &k->second.regenerated;
}

void SavedTensors::keep_checkpoint(int b, int64_t mb, const Tensor& t) { kept_[slot_key(b, mb)].checkpoint = t; }

Tensor SavedTensors::checkpoint(int b, int64_t mb) const
{
  auto k = kept_.find(slot_key(b, mb));
  return k == kept_.end() ? Tensor{} : k->second.checkpoint;
}

void SavedTensors::repeat(int b, int64_t mb, const std::vector<Tensor>* saved, const Tensor& checkpoint)
{
  Kept& k    = kept_[slot_key(b, mb)];
  k.repeated = saved;
  if (checkpoint.id != 0)
    k.checkpoint = checkpoint;
}

void SavedTensors::forget(int b, int64_t mb) { kept_.erase(slot_key(b, mb)); }

} // namespace memwall

#pragma once
// Runs a serving workload as the replay goes: every time the previous iteration has
// completed, it updates the sequences (tokens computed, tokens sampled, first-token and
// finish times at the replay's clock), retires finished ones, asks the BatchScheduler
// for the next iteration against the KvManager, and appends that iteration's ops:
//
//   KV        net alloc/free of the KV slots that changed (GPU part, and the offloaded
//             part in host DRAM or NVMe); swap-outs D2H and swap-ins H2D first;
//   model     embedding, per layer qkv -> attention -> proj -> MLP (tp all-reduces
//             between), the LM head on the sampled rows, in an activation workspace;
//   offload   FlexGen-style: the offloaded part of each layer's weights and of the
//             batch's KV streamed (NVMe ->) host -> GPU on their own streams one layer
//             ahead (two staging buffers), new KV written back D2H.
//
// One GPU stands for the ranks of the replica (they run the same kernels: the tp ranks,
// and with attention data parallelism (ep = tp x d) the d groups, each given an even
// share of the batch); the other ranks on its node repeat its copies, so PCIe switches
// and DRAM carry everyone's load.
// Implementation files: ServingDriver.cpp (setup, sequences, statistics),
// ServingIteration.cpp (the ops of an iteration), ServingTouches.cpp (what kernels touch).
#include "hwmodels/ClusterSpec.hpp"
#include "workloads/dag/WorkloadSource.hpp"
#include "workloads/inference/InferenceKernels.hpp"
#include "workloads/inference/ServingStats.hpp"
#include "workloads/inference/config/InferenceConfig.hpp"
#include "workloads/inference/engine/StartupMemory.hpp"
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/inference/scheduler/BatchScheduler.hpp"

#include <memory>

namespace memwall {

class ServingDriver : public WorkloadSource {
public:
  ServingDriver(const ModelSpec& model, const InferenceConfig& cfg, const ClusterSpec& cluster);
  ~ServingDriver() override;

  const OpDag& dag() const override { return dag_; }
  SourceDecision next(double now) override;
  ServingStats take_stats();
  // FLOPs of the model's forward passes over the run, summed over the tp ranks.
  double model_flops() const { return model_flops_; }

  // The KV budget, known before anything runs (also what `kv_capacity_tokens` reports).
  int64_t kv_capacity_tokens() const { return kv_->capacity(); }

private:
  // ServingDriver.cpp
  void setup();
  StartupBudget kv_budget() const;
  double offloaded_tables() const;
  void account_iteration(double now);
  void retire(double now);
  // ServingIteration.cpp
  void emit_kv_changes(const Iteration& it);
  void emit_iteration(const Iteration& it);
  OpId emit_kernel(const KernelCost& k, OpName name, std::initializer_list<OpId> deps = {});
  void emit_layer_part(const IterationKernels& k, int64_t layer, const std::string& L, OpId w_ready,
                       std::vector<OpId>& freed_kv);
  OpId emit_cpu_attention(const LayerKernels& k, double share, const std::string& name, std::vector<OpId>& freed_kv);
  OpId emit_fetch(const OffShares& from, double bytes, const std::string& name, OpId after, Tensor& staged,
                  MemCategory category);
  OpId emit_activation_offload(double bytes, const std::string& name);
  // ServingTouches.cpp (unified memory)
  void touch_weights(OpId k, double offset, double bytes);
  void touch_activations(OpId k, double bytes);
  void touch_edge(OpId k, const KernelCost& c, bool head);
  void touch_layer(OpId k, const LayerKernels& lk, int64_t layer, const KernelCost& c, int part);
  // Managed KV: the GPU's KV bytes held in slabs of kv_slab_bytes, grown and shrunk as
  // the reserved KV changes (alloc and free ops after `after`).
  void resize_managed_kv(double gpu_bytes, OpId after);
  DeviceRef offload_pool(OffloadPlace p) const { return p == OffloadPlace::nvme ? nvme_ : host_; }
  // Ranks whose offloaded share sits in the same pool as the representative's.
  int ranks_sharing(OffloadPlace p) const
  {
    return p == OffloadPlace::nvme ? 1 + static_cast<int>(node_peers_.size()) : ranks_on_socket_;
  }

  ModelSpec model_;
  InferenceConfig cfg_;
  ClusterSpec cluster_;
  InferenceKernels kernels_;
  OpDag dag_;
  ServingState st_;
  std::unique_ptr<KvManager> kv_;
  ServingStats stats_;

  Tensor weights_;                           // on the GPU (all of them unless offloaded)
  Tensor act_;                               // the current iteration's activation workspace
  std::vector<Tensor> kv_slabs_;             // managed KV (unified memory), oldest first
  double kv_gpu_bytes_                  = 0; // the GPU's KV bytes the slabs hold
  static constexpr double kv_slab_bytes = 64.0 * 1024 * 1024;
  DeviceRef gpu_, host_, nvme_;
  int32_t tp_group_ = -1, ep_group_ = -1; // ep: attention data parallelism's all-to-all group
  std::vector<DeviceRef> tp_members_, ep_members_, node_peers_;
  std::vector<std::vector<DeviceRef>> other_tp_groups_;
  int ranks_on_socket_ = 1; // tp ranks sharing the representative's DRAM (itself included)
  bool started_        = false;
  Iteration current_;
  int64_t kv_slots_   = 0; // slots allocated in the pools so far
  OpId kv_ready_      = OpDag::none;
  double model_flops_ = 0;
};

} // namespace memwall

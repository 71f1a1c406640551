#pragma once
// Builds the op DAG of one training step of a tp x pp x dp job. One representative GPU
// per pipeline stage stands for the tp x dp identical ranks of that stage
// (ParallelLayout); what it does:
//
//   setup      model states allocated where ZeRO and offload put them;
//   pipeline   the stage's forward/backward passes in the order of the chosen
//              PipelineSchedule; activations and gradients go stage to stage as
//              flows on the p2p stream; tensor-parallel collectives sit between the
//              kernels on the compute stream (BlockKernels);
//   per block  saved activations alive from forward to backward, or recomputed
//              (selective: attention core; full: everything but the layer input);
//              ZeRO-3 all-gathers parameters ahead of use (zero_prefetch) and frees them;
//   gradients  DDP buckets all-reduced (ZeRO-0), reduce-scattered (ZeRO-1) in the last
//              micro-batch, or reduce-scattered every micro-batch (ZeRO-2/3);
//   optimizer  per block on the GPU, or on the CPU socket with gradients D2H and
//              updated parameters H2D (ZeRO-Offload), states streamed from NVMe (ZeRO-Infinity).
//
// Implementation files: TrainingStepGenerator.cpp (setup, blocks), PipelineSlots.cpp
// (schedule order, stage-to-stage sends, repeated slots), GradientSync.cpp (buckets, reductions), OptimizerStep.cpp, ParamGather.cpp (ZeRO-3),
// TensorFetch.cpp (ZeRO-3 tensor by tensor, as the stack plans it).
#include "hwmodels/ClusterSpec.hpp"
#include "workloads/dag/OpDag.hpp"
#include "workloads/training/ParallelLayout.hpp"
#include "workloads/training/SavedActivations.hpp"
#include "workloads/training/blocks/BlockKernels.hpp"
#include "workloads/training/config/TrainingConfig.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>

namespace memwall {

class TrainingStepGenerator {
public:
  TrainingStepGenerator(const ModelSpec& model, const TrainingConfig& cfg, const ClusterSpec& cluster);
  // chains: repeated passes stored once (OpDag::begin_capture), for a replay that keeps
  // no record per op; off, every op is its own entry.
  OpDag generate(bool chains = false);

  // Bytes per trainable parameter of each model state, as ZeRO counts them (K = 12 for mixed Adam).
  double weight_bytes_per_param() const;
  double gradient_bytes_per_param() const;
  double optimizer_bytes_per_param() const;

private:
  struct Block {
    BlockPlan plan;
    int stage     = 0;
    int64_t chunk = 0;
    Tensor weights;                  // this rank's weights (its shard under ZeRO-3), where they are placed
    Tensor states;                   // this rank's optimizer states, where they are placed
    Tensor grads;                    // on the GPU: full (ZeRO-0/1) or this rank's shard (ZeRO-2/3)
    Tensor host_grads;               // ZeRO-Offload: fp32 gradient shard in host DRAM
    Tensor bucket;                   // ZeRO-2/3: this micro-batch's full gradient before reduce-scatter
    int64_t backwards = 0;           // backward passes emitted so far
    OpId grads_ready  = OpDag::none; // last op before the optimizer may read the gradients
    // Its kernels' op names by role, made on first use: every micro-batch reuses them
    // instead of building and interning the same strings again.
    std::vector<std::array<OpName, 11>> names;
  };
  // The ops a block's kernel i gives rise to, each with its own name.
  enum class Role : uint8_t {
    fwd,
    fwd_saved,
    fwd_tp,
    rc,
    rc_saved,
    rc_tp,
    bwd,
    bwd_tp_in,
    bwd_tp,
    bwd_free_saved,
    bwd_free_regenerated
  };
  // DDP / ZeRO-1 gradient buckets of one reduction group: the dp group, or for routed
  // experts' gradients under expert parallelism the edp group.
  struct BucketLane {
    int32_t group  = -1;
    bool experts   = false;
    double pending = 0;
    std::vector<int> pending_blocks;
    std::vector<std::pair<double, std::vector<int>>> deferred; // when overlap is off
  };
  struct Stage {
    DeviceRef gpu, host, nvme;
    int32_t tp_group = -1, dp_group = -1;
    int32_t ep_group      = -1;                     // expert parallelism (the edp group is lanes[1].group)
    int32_t ep_node_group = -1;                     // the ep ranks on the node (a two-hop dispatcher's NVLink hop)
    int32_t etp_group     = -1;                     // expert tensor parallelism (the tp group when etp = tp)
    int32_t cp_group      = -1;                     // context parallelism
    int shadows_on_socket = 1, shadows_on_node = 1; // ranks sharing the host's DRAM / the node's NVMe
    std::vector<std::vector<int>> chunks;           // block indices per chunk, forward order
    std::array<BucketLane, 2> lanes;                // dense gradients, routed experts' gradients
    std::deque<OpId> buckets_in_flight;             // ZeRO-2/3: frees of the buckets still reducing
    // DDP's copies back from its buckets, made when backward ends: (all-reduce, bytes, blocks).
    std::vector<std::tuple<OpId, double, std::vector<int>>> ddp_copy_back;
  };
  struct Gather {
    Tensor buffer;
    OpId ready = OpDag::none;
    OpId freed = OpDag::none;
  };

  // TrainingStepGenerator.cpp
  void build_stages();
  void emit_setup();
  // PipelineSlots.cpp
  void emit_pipeline();
  void emit_slot(int stage, int64_t micro_batch, int64_t chunk, bool forward);
  // Reuse along time (OpDag chains). A steady slot changes no state but its micro-batch's
  // own tensors: any forward, and a backward that is neither a block's first (gradients
  // allocated) nor its last (buckets reduced), without ZeRO-2/3's per-micro-batch work.
  // Once two steady slots of a virtual stage and direction in a row were captured as
  // the same chain, later ones are not built: repeat_slot adds the chain again and
  // keeps the tensors' bookkeeping as building them would.
  bool steady_slot(int stage, int64_t chunk, bool forward) const;
  // Builds the slot's ops inside an OpDag capture, and notes whether it verified a repeat.
  void capture_slot(int stage, int64_t micro_batch, int64_t chunk, bool forward, uint64_t key, bool steady);
  void repeat_slot(int stage, int64_t micro_batch, int64_t chunk, bool forward, uint64_t key);
  // TrainingStepGenerator.cpp
  void emit_forward(int b, int64_t mb);
  void emit_backward(int b, int64_t mb);
  void emit_recompute(int b, int64_t mb); // what SavedActivations says the backward brings back
  OpId kernel(const DeviceRef& gpu, const OpName& name, const KernelPlan& k, bool forward, bool recompute);
  // Block b's kernel i's tp collective in `role`, if it has one.
  void tp_collective(int b, size_t i, Role role, const TpComm& c);
  const OpName& name(int b, size_t i, Role role);
  // GradientSync.cpp
  void alloc_gradients(int b);
  void reduce_gradients(int b, int64_t mb);
  void emit_bucket(int stage, const BucketLane& lane, double bytes, const std::vector<int>& blocks, OpId after,
                   int index);
  void flush_buckets();
  bool ddp_bucket_copies() const;
  // OptimizerStep.cpp
  void emit_optimizer();
  void emit_gpu_step(int b);
  void emit_offloaded_step(int b, bool first); // first: the first step emitted (backward order)
  OpId all_grads_ready(int stage);
  void gather_updated_weights(int b, OpId after);
  // TensorTouches.cpp (unified memory)
  // Kernel `kernel` of a block's plan: (offset, share) of the block's weights it reads.
  std::pair<double, double> weight_slice(const BlockPlan& plan, size_t kernel) const;
  Tensor weights_in_use(int b) const; // ZeRO-3: the gathered copy of the current use
  void touch_kernel(OpId k, int b, size_t i, bool forward, const Tensor& saved);
  void touch_optimizer_pass(OpId k, int b, bool grads, bool states, bool weights);
  // TensorFetch.cpp: ZeRO-3 tensor by tensor (blocks that list BlockPlan::tensors), as the stack plans it
  bool per_tensor_gathers() const;
  double persistent_params(int b) const; // held whole on every rank (stage3_param_persistence_threshold)
  void plan_tensor_fetches();            // which tensors each use gathers (the reuse distance)
  OpId gather_tensors(const Stage& s, size_t use, OpId after);
  OpId reduce_tensors(int b, int64_t mb, OpId after); // per-parameter reduce-scatters; returns the last
  // One collective as DeepSpeed issues it on `stream`; per_parameter_collectives adds the
  // host's per-rank views and copies and the device's copy through a flat buffer.
  struct CallName {
    std::string prefix;
    uint64_t number = 0;
    std::string suffix;
  };
  OpId list_collective(const Stage& s, StreamKind stream, CollectiveKind kind, double bytes, const CallName& call,
                       OpId after);
  StreamKind zero_stream(StreamKind own) const; // the compute stream when the stack runs them serially
  // ParamGather.cpp
  void plan_gathers();
  OpId gathered(int b); // waits for block b's next use's parameters; returns the op to depend on
  void release_gather();

  double shard(double params) const; // optimizer (and ZeRO-2/3 gradient) shard of a tp rank's params
  // The same for a quantity `full` in proportion to block b's parameters: routed
  // experts' part sharded over the edp group (dp / ep ranks), the rest over dp.
  double shard(int b, double full) const;
  // `full` split in proportion to block b's dense and routed-expert parameters (all
  // dense without expert parallelism, where the edp group is the dp group).
  std::pair<double, double> dense_and_experts(int b, double full) const;
  double host_share(const Stage& s, bool nvme) const;
  DeviceRef state_pool(const Stage& s, OffloadTarget t) const;
  Stage& stage_of(int b) { return stages_[blocks_[b].stage]; }

  ModelSpec model_;
  TrainingConfig cfg_;
  std::shared_ptr<const TrainingStack> stack_; // cfg_.stack: what the blocks launch, keep and hold
  ModelStateBytes state_bytes_;
  ClusterSpec cluster_;
  ParallelLayout layout_;
  StepShape shape_;
  OpDag dag_;
  std::vector<Block> blocks_;
  std::vector<Stage> stages_;
  // By (block or virtual stage, micro-batch), packed by slot_key: looked up a few times
  // per pass (65,536 passes in Megatron 1T's step), never walked in order.
  static uint64_t slot_key(int64_t a, int64_t micro_batch)
  {
    return (static_cast<uint64_t>(a) << 40) | static_cast<uint64_t>(micro_batch);
  }
  std::unordered_map<uint64_t, std::vector<Tensor>> saved_; // (block, micro-batch) -> per kernel
  // A repeated forward's saved tensors are its stored slot's (SlotRepeat::saved, which a
  // verified key never changes): pointed to, and copied into saved_ only for a backward
  // that is emitted op by op (saved_of); a repeated backward just drops them.
  std::unordered_map<uint64_t, const std::vector<Tensor>*> repeated_saved_;
  std::vector<Tensor>& saved_of(int b, int64_t mb);
  std::unordered_map<uint64_t, std::vector<Tensor>> regenerated_; // what a recompute brings back beside saved_
  std::unordered_map<uint64_t, Tensor> checkpoints_;              // full recompute: kept layer inputs
  // (virtual stage, micro-batch) -> its send, until the slot that receives it is emitted
  std::unordered_map<uint64_t, OpId> fwd_sent_, bwd_sent_;
  // Each (virtual stage, direction)'s send name, "pp.send_act.vs3.mb17", interned once.
  std::vector<OpName> send_names_;
  struct SlotRepeat {
    bool last_steady = false;               // the last slot captured under the key was steady
    bool verified    = false;               // and matched the steady one before it: repeat from now on
    std::vector<std::vector<Tensor>> saved; // forward: its blocks' saved tensors, in chunk order
    std::vector<Tensor> checkpoints;        // forward: its blocks' kept inputs (full recompute)
  };
  std::map<uint64_t, SlotRepeat> repeats_; // by OpDag chain key
  // ZeRO-3: blocks in order of use over the whole step, and the gathers emitted so far.
  std::vector<int> uses_;
  std::vector<bool> use_forward_; // uses_[j] is a forward
  std::vector<Gather> gathers_;
  std::vector<std::vector<std::pair<size_t, double>>> fetches_; // per use: (tensor index, elements) gathered
  size_t next_use_        = 0;
  size_t gathers_emitted_ = 0;
};

} // namespace memwall

// SavedActivations, the keep-or-recompute policy of training.recompute, on a hand-made
// layer: what each kernel keeps, what the backward brings back, what it reruns.
#include "workloads/training/SavedActivations.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

namespace {

// A layer of three kernels: a GEMM saving 100 B, the attention core saving 40 B (marked
// selective, as Megatron's is), and a GEMM saving 60 B under a per-op policy that keeps
// only 25 B of it and brings 35 B back.
BlockPlan hand_layer(bool layer)
{
  BlockPlan b;
  b.layer       = layer;
  b.input_bytes = 10;
  KernelPlan gemm, core, per_op;
  gemm.saved_bytes             = 100;
  core.saved_bytes             = 40;
  core.selective               = true;
  per_op.saved_bytes           = 60;
  per_op.selective_kept        = 25;
  per_op.selective_regenerated = 35;
  b.kernels                    = {gemm, core, per_op};
  return b;
}

double total(const BlockPlan& b, double (SavedActivations::*f)(const BlockPlan&, const KernelPlan&) const,
             const SavedActivations& p)
{
  double sum = 0;
  for (const KernelPlan& k : b.kernels)
    sum += (p.*f)(b, k);
  return sum;
}

} // namespace

TEST_CASE("without_recompute_every_kernel_keeps_what_it_saves_and_nothing_comes_back", "[recompute]")
{
  const SavedActivations none(Recompute::none);
  const BlockPlan b = hand_layer(true);
  CHECK(total(b, &SavedActivations::kept, none) == 200);
  CHECK(total(b, &SavedActivations::regenerated, none) == 0);
  CHECK_FALSE(none.recomputes(b));
  CHECK_FALSE(none.checkpoints(b));
}

TEST_CASE("selective_recompute_drops_the_attention_core_and_honours_a_per_op_policy", "[recompute]")
{
  // Kept: 100 (gemm) + 0 (core) + 25 (per-op); back: 0 + 40 + 35; rerun: the core only.
  const SavedActivations selective(Recompute::selective);
  const BlockPlan b = hand_layer(true);
  CHECK(total(b, &SavedActivations::kept, selective) == 125);
  CHECK(total(b, &SavedActivations::regenerated, selective) == 75);
  CHECK(selective.recomputes(b));
  CHECK_FALSE(selective.checkpoints(b));
  CHECK_FALSE(selective.reruns(b, b.kernels[0]));
  CHECK(selective.reruns(b, b.kernels[1]));
}

TEST_CASE("full_recompute_keeps_a_checkpoint_and_brings_every_saved_tensor_back", "[recompute]")
{
  const SavedActivations full(Recompute::full);
  const BlockPlan b = hand_layer(true);
  CHECK(total(b, &SavedActivations::kept, full) == 0);
  CHECK(total(b, &SavedActivations::regenerated, full) == 200);
  CHECK(full.checkpoints(b));
  for (const KernelPlan& k : b.kernels)
    CHECK(full.reruns(b, k));
}

TEST_CASE("blocks_that_are_not_layers_keep_what_they_save_under_any_recompute", "[recompute]")
{
  // Embedding and head blocks: Megatron recomputes transformer layers only.
  const BlockPlan b = hand_layer(false);
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    const SavedActivations p(r);
    CHECK(total(b, &SavedActivations::kept, p) == 200);
    CHECK(total(b, &SavedActivations::regenerated, p) == 0);
    CHECK_FALSE(p.recomputes(b));
  }
}

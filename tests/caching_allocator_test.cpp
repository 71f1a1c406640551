// PyTorch's CUDA caching allocator (sim/allocator/impl/CudaCachingAllocator.cpp) against
// hand calculations from c10/cuda/CUDACachingAllocator.cpp's rules, and a GPU's memory
// pool serving a step's tensors through it (reserved beside allocated, out of memory
// only when a new segment does not fit once the cached ones are given back).
#include "sim/allocator/DeviceAllocator.hpp"
#include "sim/replay/MemoryPool.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

namespace {

constexpr double MiB = 1024.0 * 1024.0;

std::unique_ptr<DeviceAllocator> caching() { return allocator_registry().make("caching"); }

MemoryPool gpu_pool(double capacity, const std::string& allocator)
{
  MemoryPool p({DeviceKind::gpu, 0, 0}, "test-gpu", capacity, 1, false);
  p.use_allocator(allocator, allocator_registry().make(allocator));
  return p;
}

} // namespace

TEST_CASE("small_requests_share_a_2_mib_segment", "[allocator]")
{
  auto a = caching();
  a->alloc(1, 1000); // rounded to 1,024 B, from a new 2 MiB small segment
  a->alloc(2, 100);  // 512 B, from the same segment's rest
  CHECK(a->reserved() == 2 * MiB);
  CHECK(a->allocated() == 1024 + 512);
}

TEST_CASE("four_5_mib_requests_split_one_20_mib_segment_and_a_fifth_takes_another", "[allocator]")
{
  // 1 MiB < 5 MiB < 10 MiB: a 20 MiB segment; each split leaves more than 1 MiB until
  // the last 5 MiB, taken whole.
  auto a = caching();
  for (uint32_t t = 1; t <= 4; ++t)
    a->alloc(t, 5 * MiB);
  CHECK(a->reserved() == 20 * MiB);
  a->alloc(5, 5 * MiB);
  CHECK(a->reserved() == 40 * MiB);
}

TEST_CASE("a_large_request_rounds_its_segment_up_to_2_mib", "[allocator]")
{
  auto a = caching();
  CHECK(a->needs(10 * MiB + 1) == 12 * MiB); // 10 MiB + 512 B, in 2 MiB steps
  a->alloc(1, 10 * MiB + 1);
  CHECK(a->reserved() == 12 * MiB);
  CHECK(a->allocated() == 10 * MiB + 512);
}

TEST_CASE("a_freed_block_is_cached_and_a_smaller_request_splits_it", "[allocator]")
{
  auto a = caching();
  a->alloc(1, 100 * MiB);
  a->free(1, 100 * MiB);
  CHECK(a->reserved() == 100 * MiB); // kept, not given back
  CHECK(a->needs(60 * MiB) == 0);
  a->alloc(2, 60 * MiB); // best fit: the cached 100 MiB, split into 60 + 40
  CHECK(a->reserved() == 100 * MiB);
  // 50 MiB does not fit the 40 MiB rest: a new segment, 150 MiB held for 110 MiB used.
  a->alloc(3, 50 * MiB);
  CHECK(a->reserved() == 150 * MiB);
  CHECK(a->allocated() == 110 * MiB);
  // Freeing the 60 MiB merges it with the free 40 MiB: 100 MiB serve again whole.
  a->free(2, 60 * MiB);
  CHECK(a->needs(100 * MiB) == 0);
}

TEST_CASE("the_smallest_cached_block_that_fits_is_taken", "[allocator]")
{
  auto a = caching();
  a->alloc(1, 30 * MiB);
  a->alloc(2, 20 * MiB);
  a->alloc(3, 50 * MiB);
  a->free(1, 30 * MiB);
  a->free(3, 50 * MiB);
  a->alloc(4, 25 * MiB); // from the 30 MiB block (split: 5 MiB rest > 1 MiB)
  a->alloc(5, 45 * MiB); // the 50 MiB block still holds it
  CHECK(a->reserved() == 100 * MiB);
}

TEST_CASE("a_live_tensor_id_allocated_again_frees_oldest_first", "[allocator]")
{
  // A repeated chain of ops allocates under the same tensor id while the first is live.
  auto a = caching();
  a->alloc(7, 30 * MiB);
  a->alloc(7, 30 * MiB);
  a->free(7, 30 * MiB);
  a->free(7, 30 * MiB);
  CHECK(a->allocated() == 0);
  CHECK(a->reserved() == 60 * MiB);
}

TEST_CASE("a_failed_cudamalloc_gives_cached_segments_back_before_running_out", "[allocator]")
{
  // 100 MiB card: 60 MiB used and freed (cached), then 70 MiB asked: 60 + 70 > 100, the
  // cached segment goes back and the new one fits.
  MemoryPool p = gpu_pool(100 * MiB, "caching");
  p.alloc(MemCategory::activations, 60 * MiB, 0, "a", 1);
  p.free(MemCategory::activations, 60 * MiB, 1, 1);
  p.alloc(MemCategory::activations, 70 * MiB, 2, "b", 2);
  PoolResult r = p.take_result();
  CHECK(r.oom_count == 0);
  CHECK(r.peak_reserved_bytes == 70 * MiB);
  CHECK(r.peak_bytes == 70 * MiB);
}

TEST_CASE("a_split_segment_is_not_given_back_so_fragmentation_runs_out_of_memory", "[allocator]")
{
  // 150 MiB card: a 100 MiB segment, freed, then split by a 30 MiB tensor; 80 MiB more
  // need a new segment (the free 70 MiB rest is too small) and the split one cannot go
  // back: 100 + 80 > 150, out of memory with 30 MiB allocated. Counting tensor bytes
  // alone, 30 + 80 fit.
  for (const char* name : {"caching", "exact"}) {
    MemoryPool p = gpu_pool(150 * MiB, name);
    p.alloc(MemCategory::activations, 100 * MiB, 0, "a", 1);
    p.free(MemCategory::activations, 100 * MiB, 1, 1);
    p.alloc(MemCategory::activations, 30 * MiB, 2, "b", 2);
    p.alloc(MemCategory::activations, 80 * MiB, 3, "c", 3);
    PoolResult r = p.take_result();
    INFO(name);
    CHECK(r.oom_count == (std::string(name) == "caching" ? 1 : 0));
  }
}

TEST_CASE("the_cuda_context_is_held_beside_the_allocators_segments", "[allocator]")
{
  // The context is the driver's, not a tensor: it counts against the card but not
  // against the allocator, whose 20 MiB segment for a 4 MiB tensor adds to it.
  MemoryPool p = gpu_pool(1000 * MiB, "caching");
  p.alloc(MemCategory::context, 500 * MiB, 0, "context", 0);
  p.alloc(MemCategory::activations, 4 * MiB, 0, "a", 1);
  PoolResult r = p.take_result();
  CHECK(r.peak_bytes == 504 * MiB);
  CHECK(r.peak_reserved_bytes == 520 * MiB);
  CHECK(r.allocator == "caching");
}

TEST_CASE("an_unknown_allocator_names_the_key_and_the_allocators", "[allocator][errors]")
{
  std::string err =
      memwall::test::refused("bad_allocator", memwall::test::small_training_spec + "  allocator: cachng\n");
  CHECK_THAT(err, Catch::Contains("bad_allocator.yaml") && Catch::Contains("training.allocator") &&
                      Catch::Contains("caching, exact"));
  std::string list =
      memwall::test::refused("list_allocator", memwall::test::small_training_spec + "  allocator: [caching]\n");
  CHECK_THAT(list, Catch::Contains("training.allocator") && Catch::Contains("expected an allocator's name"));
}

TEST_CASE("the_pytorch_stack_reports_what_the_caching_allocator_reserves_and_megatron_does_not", "[allocator]")
{
  // GPT-2 in eager PyTorch on one H100: served by the caching allocator, whose segments
  // hold at least the tensors; the same model under Megatron counts tensor bytes alone
  // unless an allocator is asked for.
  const std::string base = "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                           "training: {seq_len: 1024, global_batch: 8, micro_batch: 8, ";
  auto eager             = memwall::test::run_json("alloc_eager", base + "stack: pytorch}\n")["devices"][0];
  auto mega              = memwall::test::run_json("alloc_mega", base + "stack: megatron}\n")["devices"][0];
  auto asked = memwall::test::run_json("alloc_asked", base + "stack: megatron, allocator: caching}\n")["devices"][0];
  REQUIRE(eager.contains("allocator"));
  CHECK(eager["allocator"]["peak_reserved_bytes"].get<double>() >= eager["peak_bytes"].get<double>());
  CHECK_FALSE(mega.contains("allocator"));
  REQUIRE(asked.contains("allocator"));
  CHECK(asked["peak_bytes"] == mega["peak_bytes"]);
  CHECK(asked["allocator"]["peak_reserved_bytes"].get<double>() >= asked["peak_bytes"].get<double>());
}

TEST_CASE("reserved_memory_levels_off_after_the_first_micro_batch", "[allocator]")
{
  // PyTorch's caching allocator hands the blocks a micro-batch freed to the next one's
  // requests of the same size: after the first micro-batch nothing new is reserved, so
  // the reserved peak at 2, 8 and 64 micro-batches equals the one at 2 (the first holds
  // the gradients' first allocation as well, so 1 may hold less). Allocated tensors peak
  // the same whatever the count. GPT-2 small on one A100 80GB, micro-batch 8 of 1,024.
  const std::string base = "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                           "training: {seq_len: 1024, micro_batch: 8, precision: bf16, optimizer: adam, "
                           "flash_attention: true, stack: pytorch, allocator: caching, global_batch: ";
  std::vector<double> reserved, peak;
  for (int n : {1, 2, 8, 64}) {
    auto d = memwall::test::run_json("accumulate_" + std::to_string(n), base + std::to_string(8 * n) + "}\n");
    REQUIRE(d["fits"] == true);
    reserved.push_back(d["devices"][0]["allocator"]["peak_reserved_bytes"].get<double>());
    peak.push_back(d["devices"][0]["peak_bytes"].get<double>());
  }
  CHECK(reserved[0] <= reserved[1]);
  CHECK(reserved[2] == reserved[1]);
  CHECK(reserved[3] == reserved[1]);
  CHECK(peak[2] == peak[1]);
  CHECK(peak[3] == peak[1]);
  // The caching allocator holds at least the tensors, and within a segment's rounding of
  // them: not one copy of the activations per micro-batch.
  CHECK(reserved[3] >= peak[3]);
  CHECK(reserved[3] < 1.25 * peak[3]);
}

TEST_CASE("chained_and_unchained_dags_reserve_the_same_under_the_caching_allocator", "[allocator]")
{
  // A DAG stores a repeated micro-batch's ops once (chains) unless every op is recorded
  // (-o): the allocator must see the same tensors pair up either way. A DeepSpeed ZeRO-2
  // step of a 1.3B model over 4 micro-batches, run with and without a results file.
  const std::string spec = "hardware: {node: dgx-a100, gpus_per_node: 2}\nmodel: {preset: gpt2-xl}\n"
                           "training: {seq_len: 1024, global_batch: 16, micro_batch: 2, stack: deepspeed, "
                           "zero: 2}\n";
  auto chained           = memwall::test::run_json("ds_chained", spec);
  std::string out        = memwall::test::temp_path("ds_unchained.h5");
  std::remove(out.c_str());
  auto unchained = memwall::test::run_json("ds_unchained", spec, "-o " + out);
  REQUIRE(chained["devices"][0].contains("allocator"));
  CHECK(chained["devices"][0]["allocator"]["peak_reserved_bytes"] ==
        unchained["devices"][0]["allocator"]["peak_reserved_bytes"]);
  CHECK(chained["step_time_s"] == unchained["step_time_s"]);
}

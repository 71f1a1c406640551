// Names resolve once (DESIGN.md §4): a spec key picks an implementation by name, the
// section reader makes the configured object, and the rest of the house asks that object
// what it does. No source outside the file that registers a name compares against it.
#include "sim/allocator/DeviceAllocator.hpp"
#include "sim/collective/CollectiveAlgorithm.hpp"
#include "sim/paging/EvictionPolicy.hpp"
#include "sim/paging/PrefetchPolicy.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/inference/engine/InferenceEngine.hpp"
#include "workloads/inference/kv/KvManager.hpp"
#include "workloads/inference/scheduler/BatchScheduler.hpp"
#include "workloads/training/dispatch/TokenDispatcher.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace memwall;

namespace {

// The names a spec key picks. "none" and "auto" (a prefetch policy, a collective
// algorithm) are also what every other choice key says for nothing or automatic: not
// counted.
std::set<std::string> picked_names()
{
  std::set<std::string> out;
  auto add = [&](const std::vector<std::string>& names) { out.insert(names.begin(), names.end()); };
  add(training_stack_registry().names());
  add(pipeline_schedule_registry().names());
  add(token_dispatcher_registry().names());
  add(inference_engine_registry().names());
  add(batch_scheduler_registry().names());
  add(kv_manager_registry().names());
  add(allocator_registry().names());
  add(collective_registry().names());
  add(eviction_registry().names());
  add(prefetch_registry().names());
  out.erase("none");
  out.erase("auto");
  return out;
}

// Comparisons that look like one and are not: (file, name, why).
const std::set<std::pair<std::string, std::string>> not_an_implementation = {
    // NCCL's collective as a profiler trace names it, not the MoE dispatcher.
    {"workloads/trace/TraceNames.cpp", "alltoall"},
};

// "file:line compares against NAME" for each comparison with a picked name outside the
// file that registers it (the one whose text registers "NAME" with add()).
std::vector<std::string> name_comparisons(const fs::path& root, const std::set<std::string>& names,
                                          size_t* scanned = nullptr)
{
  std::vector<std::string> out;
  for (const char* layer : {"base", "hwmodels", "workloads", "calibration", "sim", "analysis", "app"}) {
    if (!fs::exists(root / layer))
      continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / layer)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp"))
        continue;
      const std::string rel = fs::relative(entry.path(), root).generic_string();
      if (scanned)
        ++*scanned;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      for (const std::string& n : names) {
        const std::string quoted = "\"" + n + "\"";
        if (s.find(quoted) == std::string::npos || not_an_implementation.count({rel, n}))
          continue;
        const std::regex add_re("\\.add\\(\\s*" + quoted);
        if (std::regex_search(s, add_re))
          continue; // its own file
        const std::regex compare_re("(==|!=)\\s*" + quoted + "|" + quoted + "\\s*(==|!=)");
        for (auto it = std::sregex_iterator(s.begin(), s.end(), compare_re); it != std::sregex_iterator(); ++it) {
          const auto line = std::count(s.begin(), s.begin() + it->position(), '\n') + 1;
          out.push_back(rel + ":" + std::to_string(line) + " compares against " + n);
        }
      }
    }
  }
  return out;
}

} // namespace

TEST_CASE("no_source_compares_against_an_implementations_name_outside_its_file", "[layers]")
{
  const std::set<std::string> names = picked_names();
  REQUIRE(names.count("deepspeed") == 1);
  REQUIRE(names.count("paged") == 1);
  REQUIRE(names.count("interleaved") == 1);
  size_t scanned                       = 0;
  const std::vector<std::string> found = name_comparisons(memwall::test::source_path(""), names, &scanned);
  CHECK(scanned > 300); // the check read the source (about 500 files)
  for (const std::string& f : found)
    UNSCOPED_INFO(f);
  CHECK(found.empty());
}

TEST_CASE("the_name_check_finds_a_planted_comparison_and_spares_the_registering_file", "[layers]")
{
  const fs::path root = memwall::test::temp_path("names_planted");
  fs::remove_all(root);
  fs::create_directories(root / "app/advise");
  fs::create_directories(root / "workloads/inference/kv/impl");
  std::ofstream(root / "app/advise/Planted.cpp") << "bool f(const S& s)\n{\n  return s.kv_manager == \"paged\";\n}\n";
  std::ofstream(root / "workloads/inference/kv/impl/Paged.cpp")
      << "const bool r = kv_manager_registry().add(\n    \"paged\", \"...\");\nbool g(std::string n) { return n == "
         "\"paged\"; }\n";
  const std::vector<std::string> found = name_comparisons(root, {"paged"});
  REQUIRE(found.size() == 1);
  CHECK(found[0] == "app/advise/Planted.cpp:3 compares against paged");
}

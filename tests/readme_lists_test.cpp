// The README's list of swappable implementations is what the registries hold: the block
// between its markers is `memwall list implementations` (scripts/update_goldens.sh
// writes it), so a new implementation, or a changed description, shows in the README.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <string>

TEST_CASE("the_readmes_implementation_list_is_what_memwall_list_implementations_prints", "[docs]")
{
  const std::string readme = memwall::test::read_file(memwall::test::source_path("README.md"));
  const std::string begin  = "<!-- begin: memwall list implementations -->\n```text\n";
  const std::string end    = "```\n<!-- end: memwall list implementations -->";
  const size_t from = readme.find(begin), to = readme.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const std::string block = readme.substr(from + begin.size(), to - from - begin.size());

  const memwall::test::CliResult r = memwall::test::run_cli("list implementations");
  REQUIRE(r.exit_code == 0);
  CHECK(block == r.out);
  // Every registry is in it, each under its spec key.
  for (const char* line :
       {"schedules: pipeline schedule (training.pipeline_schedule)\n", "schedulers: scheduler (inference.scheduler)\n",
        "collectives: collective algorithm", "stacks: training stack (training.stack)\n",
        "engines: inference engine (inference.engine)\n", "kv-managers: KV manager (inference.kv_manager)\n",
        "remedies: remedy (advise)\n"}) {
    INFO(line);
    CHECK(r.out.find(line) != std::string::npos);
  }
}

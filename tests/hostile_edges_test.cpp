// The smaller findings of issue 37 (10): gzip inputs judged by what they decompress to
// and by their trailer, trace spans with times that are not times, a NUL in a name,
// standard output that cannot be written, a FIFO as a sweep's base, and the exit code
// of an interrupted sweep.
#include "tests/DamagedFiles.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <sys/stat.h>
#include <sys/wait.h>

using namespace memwall::test;

namespace {

// The one-rank V100 trace with `edit` applied to its JSON, gzip-compressed to NAME.
std::string edited_trace(const std::string& name, const std::function<void(nlohmann::json&)>& edit)
{
  gzFile in = gzopen(source_path("tests/data/traces/v100-1rank.json.gz").c_str(), "rb");
  REQUIRE(in);
  std::string text;
  char buf[1 << 16];
  for (int n; (n = gzread(in, buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  gzclose(in);
  nlohmann::json j = nlohmann::json::parse(text);
  edit(j);
  std::string path = temp_path(name);
  gzFile out       = gzopen(path.c_str(), "wb");
  std::string dump = j.dump();
  gzwrite(out, dump.data(), static_cast<unsigned>(dump.size()));
  gzclose(out);
  return path;
}

std::string replay_spec(const std::string& trace)
{
  std::string spec = trace + ".yaml";
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1}\nworkload: {trace: " + trace + "}\n");
  return spec;
}

// The index of the n-th kernel event of the trace.
size_t kernel_event(const nlohmann::json& j, int n)
{
  const auto& ev = j["traceEvents"];
  for (size_t i = 0; i < ev.size(); ++i)
    if (ev[i].value("cat", "") == "kernel" && n-- == 0)
      return i;
  FAIL("the trace has too few kernels");
  return 0;
}

} // namespace

TEST_CASE("a_gzip_trace_is_limited_by_what_it_decompresses_to", "[robustness][trace]")
{
  // 2 MB of gzip decompressed to 2 GB of whitespace inside traceEvents and was parsed
  // for 17 s: the 1 GiB input limit applied to the stored size only.
  std::string bomb = temp_path("bomb.json.gz");
  gzFile out       = gzopen(bomb.c_str(), "wb9");
  gzputs(out, R"({"traceEvents": [)");
  std::string blanks(1 << 20, ' ');
  for (int i = 0; i < 300; ++i)
    gzwrite(out, blanks.data(), static_cast<unsigned>(blanks.size()));
  gzputs(out, "]}");
  gzclose(out);
  REQUIRE(std::filesystem::file_size(bomb) < 1'000'000);
  refused_file("run " + replay_spec(bomb), "decompresses to more than 200 times its");
}

TEST_CASE("a_gzip_trace_cut_before_its_trailer_is_refused", "[robustness][trace]")
{
  // zlib checks the trailer's CRC, but a file ending just before its 8-byte trailer
  // read as whole.
  std::string cut   = temp_path("cut.json.gz");
  std::string bytes = read_file(source_path("tests/data/traces/v100-1rank.json.gz"));
  write_file(cut, bytes.substr(0, bytes.size() - 8));
  refused_file("run " + replay_spec(cut), "a truncated gzip file (it ends before its trailer)");
}

TEST_CASE("a_span_whose_time_is_not_a_time_is_refused_not_dropped", "[robustness][trace]")
{
  // A kernel with a string ts or a negative dur was left out of the replay, silently.
  size_t k           = 0;
  std::string string = edited_trace("string_ts.json.gz", [&](nlohmann::json& j) {
    k                         = kernel_event(j, 3);
    j["traceEvents"][k]["ts"] = "soon";
  });
  refused_file("run " + replay_spec(string), "traceEvents[" + std::to_string(k) + "] ('");
  refused_file("run " + replay_spec(string), "): ts must be a number of microseconds");
  std::string negative = edited_trace("negative_dur.json.gz",
                                      [&](nlohmann::json& j) { j["traceEvents"][kernel_event(j, 3)]["dur"] = -5; });
  refused_file("run " + replay_spec(negative), "): dur must be a number of microseconds (dur not negative)");
}

TEST_CASE("a_nul_in_a_name_is_shown_not_the_end_of_the_message", "[robustness][spec]")
{
  // The message is kept as a C string: it ended at the NUL ("unknown model preset 'gp").
  std::string spec = temp_path("nul.yaml");
  write_file(spec, std::string("hardware: {node: desktop-4070}\nmodel: {preset: \"gp") + '\0' +
                       "t2\"}\ntraining: {seq_len: 256, global_batch: 2, micro_batch: 1}\n");
  refused_file("run " + spec, "unknown model preset 'gp\\x00t2'; did you mean gpt2?");
}

TEST_CASE("output_that_cannot_be_written_is_a_failure_for_every_command", "[robustness][outputs]")
{
  // `--version > /dev/full` exited 0.
  for (const char* args : {"--version", "help"}) {
    int status = std::system((std::string(MEMWALL_BINARY) + " " + args + " >/dev/full 2>/dev/null").c_str());
    INFO(args);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 3);
  }
}

TEST_CASE("a_fifo_as_a_sweeps_base_is_named_a_fifo_not_missing", "[robustness][sweep]")
{
  std::string fifo = temp_path("base.fifo");
  std::filesystem::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string sweep = temp_path("fifo_sweep.yaml");
  write_file(sweep, "base: base.fifo\ngrid:\n  training.micro_batch: [1, 2]\n");
  refused_file("sweep " + sweep + " -o " + temp_path("fifo_sweep.h5"), "base spec is a FIFO, not a regular file");
}

TEST_CASE("an_interrupted_sweep_ends_with_130_and_keeps_its_points", "[robustness][sweep]")
{
  // README: exit 130 for a sweep stopped by Ctrl-C, its finished points kept for --resume.
  // Eight points of the whole 1T step (0.5 s each with -j 1 on this 2-core machine; the
  // energy price changes nothing the replay does), interrupted after 1.5 s. Four points
  // at growing micro-batches were over within 1.5 s once the replay got faster.
  std::string spec = temp_path("interrupted.yaml"), h5 = temp_path("interrupted.h5");
  write_file(spec, "base: " + source_path("examples/megatron-1t-tp8-pp64-384xdgx-a100.yaml") +
                       "\ngrid:\n  hardware.usd_per_mwh: [80, 90, 100, 110, 120, 130, 140, 150]\n");
  std::filesystem::remove(h5);
  CliResult r = run_cli("sweep " + spec + " -o " + h5 + " -j 1", "timeout --preserve-status -s INT 1.5");
  INFO(r.err);
  CHECK(r.exit_code == 130);
  CHECK_THAT(r.err, Catch::Contains("memwall sweep: interrupted;"));
  CliResult resumed = run_cli("sweep " + spec + " -o " + h5 + " -j 1 --resume");
  CHECK(resumed.exit_code == 0);
  CHECK_THAT(run_cli("report " + h5).out, Catch::Contains("8 of 8 points"));
}

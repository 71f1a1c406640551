// memwall plot: PNGs of a run's memory (one panel per device), a sweep's metric against
// an axis, and a sweep's fits map; bad input gets one line, exit 2 and no picture.
#include "tests/DamagedFiles.hpp"
#include "tests/TestHelpers.hpp"

#include <H5Cpp.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace memwall::test;

namespace {

struct Png {
  bool valid     = false;
  unsigned width = 0, height = 0;
  std::string bytes;
};

// The PNG signature and the size from the IHDR chunk (big-endian at bytes 16..23).
Png read_png(const std::string& path)
{
  Png p;
  std::ifstream in(path, std::ios::binary);
  p.bytes.assign(std::istreambuf_iterator<char>(in), {});
  if (p.bytes.size() < 24 || p.bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 || p.bytes.compare(12, 4, "IHDR") != 0)
    return p;
  auto be32 = [&](size_t at) {
    unsigned v = 0;
    for (size_t i = 0; i < 4; ++i)
      v = v << 8 | static_cast<unsigned char>(p.bytes[at + i]);
    return v;
  };
  p.valid  = true;
  p.width  = be32(16);
  p.height = be32(20);
  return p;
}

std::string plotted(const std::string& args, const std::string& png)
{
  std::filesystem::remove(png);
  CliResult r = run_cli("plot " + args + " -o " + png);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

// `yaml` written to NAME.yaml and run into NAME.h5, whose path is returned.
std::string run_file(const std::string& name, const std::string& yaml)
{
  std::string spec = temp_path(name + ".yaml"), h5 = temp_path(name + ".h5");
  write_file(spec, yaml);
  REQUIRE(run_cli("run " + spec + " -o " + h5).exit_code == 0);
  return h5;
}

// The sweep spec `yaml` written to NAME.yaml and swept into NAME.h5, whose path is returned.
std::string swept(const std::string& name, const std::string& yaml)
{
  std::string spec = temp_path(name + ".yaml"), h5 = temp_path(name + ".h5");
  write_file(spec, yaml);
  REQUIRE(run_cli("sweep " + spec + " -o " + h5 + " -j 2").exit_code == 0);
  return h5;
}

// 6 points, micro batch 32 without recompute out of memory; timelines recorded.
const std::string sweep_yaml = gpt2_oom_sweep + "record: {memory: true}\n";

} // namespace

TEST_CASE("a_run_plot_has_one_memory_panel_per_device", "[plot]")
{
  // ZeRO-Offload keeps the optimizer in host RAM: two memories, so two panels. The
  // script draws 10 x (3.2 n + 0.8) inches at 110 dpi: 1100 x 792 pixels for n = 2.
  std::string h5  = run_file("plot_offload", "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                                              "training: {seq_len: 512, global_batch: 4, micro_batch: 4, zero: 1, "
                                              "offload: {optimizer: cpu}}\n");
  std::string png = temp_path("plot_offload.png");
  CHECK_THAT(plotted(h5, png), Catch::Contains("memory of 2 device(s)"));
  Png p = read_png(png);
  CHECK(p.valid);
  CHECK(p.width == 1100);
  CHECK(p.height == 792);

  // Same file, same picture, byte for byte.
  std::string again = temp_path("plot_offload_again.png");
  plotted(h5, again);
  CHECK(read_png(again).bytes == p.bytes);

  // One GPU alone: one panel, 10 x 4 inches.
  std::string one = temp_path("plot_offload_gpu.png");
  plotted(h5 + " --device node0.gpu0", one);
  CHECK(read_png(one).height == 440);
}

TEST_CASE("a_sweep_plots_its_metric_its_fits_map_and_a_recorded_point", "[plot][sweep]")
{
  std::string spec = temp_path("plot_sweep.yaml"), h5 = temp_path("plot_sweep.h5");
  write_file(spec, sweep_yaml);
  REQUIRE(run_cli("sweep " + spec + " -o " + h5 + " -j 2").exit_code == 0);

  std::string metric = temp_path("plot_metric.png");
  CHECK_THAT(plotted(h5 + " --y mfu", metric), Catch::Contains("mfu against training.micro_batch for 6 points"));
  Png m = read_png(metric);
  CHECK(m.valid);
  CHECK(m.width == 990); // 9 x 5.5 inches at 110 dpi, taller by a long legend's rows below the axes
  CHECK(m.height >= 605);

  // A trade-off of two results: only the 5 points that fit (micro batch 32 without
  // recompute does not).
  std::string tradeoff = temp_path("plot_tradeoff.png");
  CHECK_THAT(plotted(h5 + " --x gpu.peak_bytes --y step_time_s --lines training.recompute", tradeoff),
             Catch::Contains("step_time_s against gpu.peak_bytes for 5 points"));
  CHECK(read_png(tradeoff).valid);

  std::string fits = temp_path("plot_fits.png");
  CHECK_THAT(plotted(h5 + " --kind fits", fits),
             Catch::Contains("fits over training.micro_batch x training.recompute"));
  CHECK(read_png(fits).valid);

  // Point 4 is micro batch 32 without recompute: one GPU, one panel.
  std::string point = temp_path("plot_point.png");
  CHECK_THAT(plotted(h5 + " --kind memory --point 4", point), Catch::Contains("memory of 1 device(s)"));
  CHECK(read_png(point).height == 440);
}

TEST_CASE("plot_refuses_bad_input_with_one_line_and_no_picture", "[plot][errors]")
{
  std::string spec = temp_path("plot_bad.yaml"), h5 = temp_path("plot_bad.h5");
  write_file(spec, sweep_yaml);
  REQUIRE(run_cli("sweep " + spec + " -o " + h5 + " -j 2").exit_code == 0);
  std::string text = temp_path("plot_bad_text.h5");
  write_file(text, "not hdf5\n");
  struct Case {
    std::string args, message;
  } cases[] = {
      {h5 + " --x training.tp", "--x training.tp: not an axis of this sweep; the axes are training.micro_batch, "
                                "training.recompute"},
      {h5 + " --y step_tim_s", "--y step_tim_s: no such column"},
      {h5 + " --kind memory --point 99", "--point 99: no memory timeline recorded"},
      {h5 + " --kind heat", "--kind heat: allowed are memory, metric, fits and ranking"},
      {text, "not an HDF5 file"},
  };
  for (const Case& c : cases) {
    std::string png = temp_path("plot_bad.png");
    std::filesystem::remove(png);
    CliResult r = run_cli("plot " + c.args + " -o " + png);
    INFO(c.args << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::Contains(c.message));
    CHECK_FALSE(std::filesystem::exists(png));
  }
}

TEST_CASE("constant_memory_bands_are_stacked_at_the_bottom", "[plot]")
{
  // The CUDA context never changes; stacked last (CATEGORIES order) it rode on top of
  // the moving bands as a saw-tooth. stack_order puts constant categories first.
  std::string script = "import sys; sys.path.insert(0, '" + source_path("analysis") +
                       "'); import plot_results as p; "
                       "print(p.stack_order({'activations': [0, 5, 0], 'context': [1, 1, 1], "
                       "'weights': [2, 2, 2], 'kv_cache': [0, 3, 4]}))";
  FILE* f = ::popen(("python3 -c \"" + script + "\"").c_str(), "r");
  REQUIRE(f);
  char buf[256] = {};
  size_t n      = std::fread(buf, 1, sizeof buf - 1, f);
  ::pclose(f);
  CHECK(std::string(buf, n) == "['weights', 'context', 'activations', 'kv_cache']\n");
}

TEST_CASE("a_serving_plot_adds_a_kv_cache_panel_with_the_budget_line", "[plot][inference]")
{
  // One GPU panel plus the KV panel: 10 x (3.2 * 2 + 0.8) inches at 110 dpi = 1100 x 792.
  std::string h5 = run_file("layout_kv", small_serving_spec), png = temp_path("layout_kv.png");
  {
    H5::H5File f(h5, H5F_ACC_RDONLY);
    double budget = 0;
    f.openGroup("/kv_cache").openAttribute("budget_bytes").read(H5::PredType::NATIVE_DOUBLE, &budget);
    // the budget the summary reports, per GPU
    double summary = run_json("layout_kv", small_serving_spec)["kv_cache"]["budget_bytes"];
    CHECK(budget == summary);
    CHECK(budget > 0);
  }
  CHECK_THAT(plotted(h5, png), Catch::Contains("memory of 1 device(s)"));
  Png p = read_png(png);
  CHECK(p.width == 1100);
  CHECK(p.height == 792);
}

TEST_CASE("a_unified_memory_run_plot_adds_a_panel_of_managed_bytes_on_the_gpu_and_the_host", "[plot][paging]")
{
  // GPT-2 on the 12 GB RTX 4070 with a micro-batch beyond it, all memory managed: the GPU
  // and its socket's DRAM (where evicted pages go) get panels, and the managed-memory
  // panel makes three: 10 x (3.2 x 3 + 0.8) inches at 110 dpi = 1100 x 1144 pixels.
  std::string h5  = run_file("plot_unified", "hardware: {node: desktop-4070}\nmodel: {preset: gpt2}\n"
                                              "training: {seq_len: 1024, global_batch: 16, micro_batch: 16}\n"
                                              "memory: {mode: unified}\n");
  std::string png = temp_path("plot_unified.png");
  CHECK_THAT(plotted(h5, png), Catch::Contains("memory of 2 device(s)"));
  Png p = read_png(png);
  CHECK(p.width == 1100);
  CHECK(p.height == 1144);
}

TEST_CASE("a_metric_plot_draws_one_line_per_combination_of_comma_separated_axes", "[plot]")
{
  std::string sweep = temp_path("plot_lines.yaml"), h5 = temp_path("plot_lines.h5");
  write_file(sweep, sweep_base + "grid:\n  training.micro_batch: [1, 2]\nzip:\n  memory.mode: [unified, explicit]\n"
                                 "  training.recompute: [none, full]\n");
  REQUIRE(run_cli("sweep " + sweep + " -o " + h5 + " -j 1").exit_code == 0);
  std::string png = temp_path("plot_lines.png");
  CHECK_THAT(plotted(h5 + " --x training.micro_batch --lines memory.mode,training.recompute", png),
             Catch::Contains("against training.micro_batch for 4 points"));
  CliResult bad = run_cli("plot " + h5 + " --x training.micro_batch --lines memory.mode,training.zero -o " + png);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--lines training.zero: not an axis"));
}

TEST_CASE("a_purchase_plot_reads_at_a_glance_dollars_gpu_counts_and_no_overlapping_labels", "[plot][sweep]")
{
  // GPT-2 on 1 and 2 nodes of a DGX A100 (8 GPUs each) and of a 4x RTX 4090 workstation
  // (4 each): "nodes" means 8 GPUs on one and 4 on the other, so each point says its GPU
  // count. The x axis is in dollars without an offset; the titles are words with units.
  std::string h5  = swept("plot_purchase", "spec:\n  hardware: {node: dgx-a100}\n  model: {preset: gpt2}\n"
                                            "  training: {seq_len: 512, global_batch: 64, micro_batch: 1}\n"
                                            "grid:\n  hardware.node: [dgx-a100, workstation-4x4090]\n"
                                            "  hardware.nodes: [1, 2]\n  training.recompute: [none, selective]\n");
  std::string png = temp_path("plot_purchase.png"), texts = temp_path("plot_purchase.json");
  CliResult r = run_cli("plot " + h5 + " --x hardware_cost_usd --y step_time_s --lines hardware.node -o " + png,
                        "MEMWALL_PLOT_TEXTS=" + texts);
  REQUIRE(r.exit_code == 0);
  auto all = nlohmann::json::parse(read_file(texts));
  std::vector<nlohmann::json> notes;
  std::string xlabel, ylabel;
  for (const auto& t : all) {
    if (t["role"] == "xlabel")
      xlabel = t["text"];
    if (t["role"] == "ylabel")
      ylabel = t["text"];
    if (t["role"] == "xtick")
      CHECK(t["text"].get<std::string>().find('$') != std::string::npos);
    CHECK(t["role"] != "xoffset"); // no "1e7" beside the axis
    if (t["role"] == "annotation")
      notes.push_back(t);
  }
  CHECK(xlabel == "hardware cost (US$)");
  CHECK(ylabel == "step time (s)");
  // Four machines' worth of points on the fronts: 4, 8 and 16 GPUs are named.
  REQUIRE(notes.size() >= 3);
  std::string joined;
  for (const auto& n : notes)
    joined += n["text"].get<std::string>() + ";";
  CHECK_THAT(joined, Catch::Contains("8 GPUs") && Catch::Contains("16 GPUs") && Catch::Contains("4 GPUs"));
  // No two point labels overlap.
  for (size_t i = 0; i < notes.size(); ++i)
    for (size_t j = i + 1; j < notes.size(); ++j) {
      const auto &a = notes[i]["box"], &b = notes[j]["box"];
      bool apart = a[2].get<double>() <= b[0].get<double>() || b[2].get<double>() <= a[0].get<double>() ||
                   a[3].get<double>() <= b[1].get<double>() || b[3].get<double>() <= a[1].get<double>();
      INFO(notes[i]["text"] << " and " << notes[j]["text"]);
      CHECK(apart);
    }
}

TEST_CASE("report_and_plot_take_a_filter_over_the_columns_as_the_header_names_them", "[plot][report][sweep]")
{
  std::string spec = temp_path("filter_sweep.yaml"), h5 = temp_path("filter_sweep.h5");
  write_file(spec, sweep_yaml);
  REQUIRE(run_cli("sweep " + spec + " -o " + h5 + " -j 2").exit_code == 0);
  // micro_batch is the last part of training.micro_batch, as the report's header prints it.
  CliResult all = run_cli("report " + h5), some = run_cli("report " + h5 +
                                                          " --filter 'micro_batch <= 8' "
                                                          "--columns micro_batch,mfu");
  REQUIRE(some.exit_code == 0);
  CHECK_THAT(all.out, Catch::Contains("6 of 6 points"));
  CHECK_THAT(some.out, Catch::Contains("4 of 6 points") && Catch::Contains("mfu"));
  CliResult bad = run_cli("report " + h5 + " --filter 'nodes > 1'");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--filter") && Catch::Contains("nodes is not a column"));
  std::string png = temp_path("filter_plot.png");
  CHECK_THAT(plotted(h5 + " --y mfu --filter 'micro_batch <= 8'", png), Catch::Contains("for 4 points"));
}

namespace {

// The texts a plot shows (MEMWALL_PLOT_TEXTS), after plotting `args` into `png`.
nlohmann::json plot_texts(const std::string& args, const std::string& png, std::string* out = nullptr)
{
  std::string texts = png + ".json";
  std::filesystem::remove(png);
  CliResult r = run_cli("plot " + args + " -o " + png, "MEMWALL_PLOT_TEXTS=" + texts);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  if (out)
    *out = r.out;
  return nlohmann::json::parse(read_file(texts));
}

// Every title lies inside the figure: none is cut at its edges.
void check_titles_inside(const nlohmann::json& texts)
{
  double width = 0, height = 0;
  for (const auto& t : texts)
    if (t["role"] == "figure")
      width = t["box"][2].get<double>(), height = t["box"][3].get<double>();
  REQUIRE(width > 0);
  for (const auto& t : texts)
    if (t["role"] == "title" || t["role"] == "suptitle") {
      INFO(t["text"]);
      CHECK(t["box"][0].get<double>() >= 0);
      CHECK(t["box"][2].get<double>() <= width);
      CHECK(t["box"][3].get<double>() <= height);
    }
}

} // namespace

TEST_CASE("an_optimize_file_plots_as_its_ranking_and_no_title_is_cut", "[plot][optimize]")
{
  // GPT-2 on 8 GPUs, every layout of the search: the file reads first as its best
  // layouts, one bar each, named by the keys that differ among them, #1 the fastest.
  std::string spec = temp_path("plot_rank.yaml"), h5 = temp_path("plot_rank.h5");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 8}\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 1024, global_batch: 16, micro_batch: 1}\n");
  REQUIRE(run_cli("optimize " + spec + " -o " + h5 + " -j 2").exit_code == 0);
  std::string said;
  nlohmann::json texts = plot_texts(h5, temp_path("plot_rank.png"), &said);
  CHECK_THAT(said, Catch::Contains("the best 15 of"));
  size_t names = 0;
  double top = -1, first = -2; // #1 is the highest label
  for (const auto& t : texts)
    if (t["role"] == "ytick") {
      ++names;
      top = std::max(top, t["box"][1].get<double>());
      if (t["text"].get<std::string>().rfind("#1 ", 0) == 0)
        first = t["box"][1].get<double>();
    }
  CHECK(names == 15);
  CHECK(first == top);
  check_titles_inside(texts);
  // The same file against an axis, with a title naming a dozen other axes: wrapped, not cut.
  check_titles_inside(plot_texts(h5 + " --kind metric --x training.tp", temp_path("plot_rank_metric.png")));
}

TEST_CASE("a_fits_map_tells_cells_where_all_fit_from_cells_where_some_do", "[plot][sweep]")
{
  // GPT-2 XL on a 40 GB A100 at micro batch 4 without recompute: with flash attention it
  // fits, without it does not (the scores of 25 heads x 1024^2 per layer): the cell of
  // (4, none) holds one of each, "1 of 2 fit"; with full recompute both fit.
  std::string h5 = swept("plot_some", "spec:\n  hardware: {node: dgx-a100, gpus_per_node: 1, gpu: a100-sxm4-40gb}\n"
                                      "  model: {preset: gpt2-xl}\n"
                                      "  training: {seq_len: 1024, global_batch: 32, micro_batch: 1}\n"
                                      "grid:\n  training.micro_batch: [1, 4]\n  training.recompute: [none, full]\n"
                                      "  training.flash_attention: [true, false]\n");
  nlohmann::json texts = plot_texts(h5 + " --kind fits", temp_path("plot_some.png"));
  std::string cells, title;
  for (const auto& t : texts) {
    if (t["role"] == "annotation")
      cells += t["text"].get<std::string>() + ";";
    if (t["role"] == "title")
      title = t["text"];
  }
  std::replace(title.begin(), title.end(), '\n', ' '); // wrapped to the figure's width
  CHECK_THAT(cells, Catch::Contains("1 of 2 fit") && Catch::Contains("all 2 fit"));
  CHECK_THAT(title, Catch::Contains("yellow some fit") && Catch::Contains("green all fit"));
}

TEST_CASE("a_forged_points_list_and_a_refusing_output_folder_are_each_named_as_what_they_are", "[plot][errors]")
{
  // Behind a valid checksum, /points' columns forged to a number: exit 3 with Python's
  // TypeError; an axis naming no column: "unreadable memwall results ('nope')".
  std::string png     = temp_path("forged_points.png");
  std::string columns = damaged_sweep_file("forged_columns", [](H5::H5File& f) {
    H5::Group g = f.openGroup("points");
    replace_text_attribute(g, "columns", "5");
  });
  refused_file("plot " + columns + " -o " + png, "/points attribute columns is not a list of column names");
  std::string axes = damaged_sweep_file("forged_axes", [](H5::H5File& f) {
    H5::Group g = f.openGroup("points");
    replace_text_attribute(g, "axes", "[\"nope\"]");
  });
  refused_file("plot " + axes + " -o " + png, "/points axis 'nope' is not one of its columns");
  CHECK_FALSE(std::filesystem::exists(png));
  // A folder that exists but takes no file (sysfs refuses even root): the output's fault,
  // said of the output, not "unreadable memwall results" of a good file.
  if (!std::filesystem::is_directory("/sys")) {
    WARN("skipped: no /sys on this machine");
    return;
  }
  std::string good = damaged_sweep_file("plot_good", [](H5::H5File&) {});
  refused_file("plot " + good + " -o /sys/memwall-plot.png", "/sys/memwall-plot.png: cannot write the picture there");
}

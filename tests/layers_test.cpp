// The layering of DESIGN.md §1, checked on the source: every include names its file from
// the repository root, none runs up the layers or across to a peer, implementations in
// impl/ folders are reached only through their registry, and the simulator library links
// neither analysis nor calibration. CI runs it with every other test.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Bottom to top. A folder may include its own layer and those below; workloads and
// calibration are peers and never include each other; tests and bench sit above all.
const std::map<std::string, int> layer_rank = {
    {"base", 0},     {"hwmodels", 1}, {"workloads", 2}, {"calibration", 2}, {"sim", 3},
    {"analysis", 4}, {"app", 5},      {"bench", 6},     {"tests", 6},
};

struct Include {
  std::string file; // the including file, from the root
  int line = 0;
  std::string target;  // as written between the quotes (or the brackets)
  bool system = false; // <...>: a library's header
};

std::vector<Include> quoted_includes(const fs::path& root)
{
  static const std::regex include_re(R"re(^\s*#\s*include\s+"([^"]+)")re");
  static const std::regex system_re(R"re(^\s*#\s*include\s+<([^>]+)>)re");
  std::vector<Include> out;
  for (const auto& [layer, rank] : layer_rank) {
    (void)rank;
    if (!fs::exists(root / layer))
      continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / layer)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".hpp" && ext != ".cpp" && ext != ".cu" && ext != ".in"))
        continue;
      const std::string rel = fs::relative(entry.path(), root).generic_string();
      if (rel.starts_with("tests/data/") || rel.starts_with("tests/golden/"))
        continue;
      std::ifstream in(entry.path());
      std::string text;
      for (int n = 1; std::getline(in, text); ++n) {
        std::smatch m;
        if (std::regex_search(text, m, include_re))
          out.push_back({rel, n, m[1].str()});
        else if (std::regex_search(text, m, system_re))
          out.push_back({rel, n, m[1].str(), true});
      }
    }
  }
  return out;
}

std::string first_component(const std::string& path) { return path.substr(0, path.find('/')); }

std::string where(const Include& inc) { return inc.file + ":" + std::to_string(inc.line) + " includes " + inc.target; }

// One line per include that breaks a rule of DESIGN.md §1.
std::vector<std::string> layering_violations(const fs::path& root, const std::vector<Include>& includes)
{
  std::vector<std::string> out;
  for (const Include& inc : includes) {
    const std::string from = first_component(inc.file), to = first_component(inc.target);
    // SimGrid (and its xbt) belongs to the simulator (sim/): the rest of the house builds
    // without it, and the tests that drive the platform sit above everything.
    if (inc.system) {
      if ((to == "simgrid" || to == "xbt") && from != "sim" && from != "tests" && from != "bench")
        out.push_back(where(inc) + ": SimGrid is included in sim/ only");
      continue;
    }
    if (!layer_rank.contains(to) || !fs::exists(root / inc.target)) {
      out.push_back(where(inc) + ": not a path from the repository root");
      continue;
    }
    if (to != from && layer_rank.at(to) >= layer_rank.at(from))
      out.push_back(where(inc) + ": " + from + " may not include " + to);
    // An impl/ folder's files are private to the concern that registers them.
    const auto impl = inc.target.find("/impl/");
    if (impl != std::string::npos && !inc.file.starts_with(inc.target.substr(0, impl + 1)) && from != "tests" &&
        from != "bench")
      out.push_back(where(inc) + ": an implementation is reached through its registry");
  }
  return out;
}

// The folders that include one another in a circle (strongly connected components of
// more than one folder), each as a sorted set of folder paths.
std::set<std::set<std::string>> folder_cycles(const fs::path& root)
{
  std::map<std::string, std::set<std::string>> edges;
  for (const Include& inc : quoted_includes(root)) {
    if (inc.system)
      continue;
    const std::string from = fs::path(inc.file).parent_path().generic_string();
    const std::string to   = fs::path(inc.target).parent_path().generic_string();
    if (from != to)
      edges[from].insert(to);
  }
  // Tarjan's algorithm.
  std::map<std::string, int> index, low;
  std::vector<std::string> stack;
  std::set<std::string> on_stack;
  std::set<std::set<std::string>> cycles;
  int next                                      = 0;
  std::function<void(const std::string&)> visit = [&](const std::string& v) {
    index[v] = low[v] = next++;
    stack.push_back(v);
    on_stack.insert(v);
    for (const std::string& w : edges[v]) {
      if (!index.count(w)) {
        visit(w);
        low[v] = std::min(low[v], low[w]);
      } else if (on_stack.count(w)) {
        low[v] = std::min(low[v], index[w]);
      }
    }
    if (low[v] == index[v]) {
      std::set<std::string> component;
      std::string w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack.erase(w);
        component.insert(w);
      } while (w != v);
      if (component.size() > 1)
        cycles.insert(component);
    }
  };
  std::vector<std::string> folders;
  for (const auto& [from, to] : edges)
    folders.push_back(from);
  for (const std::string& f : folders)
    if (!index.count(f))
      visit(f);
  return cycles;
}

fs::path planted_tree(const std::string& name)
{
  const fs::path root = memwall::test::temp_path(name);
  fs::remove_all(root);
  for (const char* dir : {"base", "sim/collective/impl", "sim/replay", "analysis", "workloads/dag"})
    fs::create_directories(root / dir);
  for (const char* file :
       {"base/Quantity.hpp", "sim/collective/impl/Ring.hpp", "sim/replay/Replayer.hpp", "analysis/StepReport.hpp"})
    std::ofstream(root / file) << "#pragma once\n";
  return root;
}

} // namespace

TEST_CASE("no_include_in_the_source_runs_up_the_layers_or_into_an_impl_folder")
{
  const fs::path root                  = memwall::test::source_path("");
  const std::vector<Include> includes  = quoted_includes(root);
  const std::vector<std::string> found = layering_violations(root, includes);
  for (const std::string& v : found)
    UNSCOPED_INFO(v);
  CHECK(found.empty());
  // The check read the source: the simulator's include of its replay is among what it saw.
  bool saw_engine = false;
  for (const Include& inc : includes)
    saw_engine |= inc.file == "sim/Simulation.hpp" && inc.target == "sim/replay/Replayer.hpp";
  CHECK(saw_engine);
}

TEST_CASE("the_layer_check_refuses_an_upward_include_a_bare_name_a_foreign_impl_header_and_simgrid_outside_sim")
{
  const fs::path root = planted_tree("layers_planted");
  std::ofstream(root / "sim/replay/Replayer.cpp") << "#include \"sim/replay/Replayer.hpp\"\n"
                                                     "#include \"base/Quantity.hpp\"\n"
                                                     "#include \"analysis/StepReport.hpp\"\n" // up a layer
                                                     "#include \"Replayer.hpp\"\n"            // bare name
                                                     "#include \"sim/collective/impl/Ring.hpp\"\n";
  std::ofstream(root / "sim/collective/impl/Ring.cpp") << "#include \"sim/collective/impl/Ring.hpp\"\n"
                                                          "#include <simgrid/s4u/Engine.hpp>\n"; // allowed in sim/
  std::ofstream(root / "workloads/dag/Op.cpp") << "#include <vector>\n"
                                                  "#include <simgrid/s4u/Host.hpp>\n"; // not outside it
  const std::vector<std::string> found = layering_violations(root, quoted_includes(root));
  REQUIRE(found.size() == 4);
  CHECK(found[0] == "sim/replay/Replayer.cpp:3 includes analysis/StepReport.hpp: sim may not include analysis");
  CHECK(found[1] == "sim/replay/Replayer.cpp:4 includes Replayer.hpp: not a path from the repository root");
  CHECK(found[2] == "sim/replay/Replayer.cpp:5 includes sim/collective/impl/Ring.hpp: an implementation is reached "
                    "through its registry");
  CHECK(found[3] == "workloads/dag/Op.cpp:2 includes simgrid/s4u/Host.hpp: SimGrid is included in sim/ only");
}

TEST_CASE("the_simulator_library_links_neither_analysis_nor_calibration_nor_the_program")
{
  // sim/CMakeLists.txt names what memwall_sim and its implementations link.
  const std::string cmake = memwall::test::read_file(memwall::test::source_path("sim/CMakeLists.txt"));
  REQUIRE(cmake.find("add_library(memwall_sim STATIC") != std::string::npos);
  for (const char* upper : {"memwall_analysis", "memwall_calibration", "memwall_app"}) {
    INFO(upper);
    CHECK(cmake.find(upper) == std::string::npos);
  }
}

TEST_CASE("no_circle_of_folders_includes_one_another", "[layers]")
{
  // Layers never form one (the rank rule above); inside a layer, a parent folder that
  // asks its concern folders' registries keeps the plain types those concerns use in a
  // folder below them (hwmodels/kernel, training/config, inference/requests, ...).
  const std::set<std::set<std::string>> found = folder_cycles(memwall::test::source_path(""));
  for (const auto& cycle : found) {
    std::string names;
    for (const std::string& f : cycle)
      names += f + " ";
    UNSCOPED_INFO("a circle of folders: " << names);
  }
  CHECK(found.empty());
}

TEST_CASE("the_cycle_check_finds_two_folders_that_include_each_other", "[layers]")
{
  const fs::path root = planted_tree("layers_cycle");
  std::ofstream(root / "sim/replay/Replayer.cpp") << "#include \"sim/collective/impl/Ring.hpp\"\n";
  std::ofstream(root / "sim/collective/impl/Ring.cpp") << "#include \"sim/replay/Replayer.hpp\"\n";
  const std::set<std::set<std::string>> found = folder_cycles(root);
  REQUIRE(found.size() == 1);
  CHECK(*found.begin() == std::set<std::string>{"sim/collective/impl", "sim/replay"});
}

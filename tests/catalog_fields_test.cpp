// The catalog's fields are declared once (GpuSpec.hpp, NodeSpec.hpp: key, unit, default,
// meaning); the reader and `memwall list params` come from that declaration. Checked
// here against the parameter reference a user reads.
#include "hwmodels/NodeSpec.hpp"
#include "sim/spec/SpecParams.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

struct Declared {
  std::string path, type_prefix, description;
};

void quantity(std::vector<Declared>& out, const char* section, const char* key, const std::string& unit, const char* d)
{
  const char* text = unit == "bytes"       ? "bytes ("
                     : unit == "rate"      ? "bytes/s ("
                     : unit == "flop_rate" ? "FLOP/s ("
                                           : "seconds (";
  out.push_back({std::string(section) + key, text, d});
}

void count(std::vector<Declared>& out, const char* section, const char* key, long least, long most, const char* d)
{
  out.push_back(
      {std::string(section) + key, "integer in [" + std::to_string(least) + ", " + std::to_string(most) + "]", d});
}

// Every field the two headers declare with a unit or a range, as the declaration says.
std::vector<Declared> declared()
{
  std::vector<Declared> out;
#define MEMWALL_GPU_REQ(key, unit, d) quantity(out, "hardware.gpu.", #key, #unit, d);
#define MEMWALL_GPU_Q(key, unit, def, d) quantity(out, "hardware.gpu.", #key, #unit, d);
#define MEMWALL_GPU_C(key, def, least, most, d) count(out, "hardware.gpu.", #key, least, most, d);
#define MEMWALL_NODE_REQ(key, unit, d) quantity(out, "hardware.node.", #key, #unit, d);
#define MEMWALL_NODE_Q(key, unit, def, d) quantity(out, "hardware.node.", #key, #unit, d);
#define MEMWALL_NODE_C(key, def, least, most, d) count(out, "hardware.node.", #key, least, most, d);
  MEMWALL_GPU_REQUIRED_QUANTITIES(MEMWALL_GPU_REQ)
  MEMWALL_GPU_QUANTITIES(MEMWALL_GPU_Q)
  MEMWALL_GPU_COUNTS(MEMWALL_GPU_C)
  MEMWALL_NODE_REQUIRED_QUANTITIES(MEMWALL_NODE_REQ)
  MEMWALL_NODE_QUANTITIES(MEMWALL_NODE_Q)
  MEMWALL_NODE_COUNTS(MEMWALL_NODE_C)
  return out;
}

} // namespace

TEST_CASE("every_catalog_field_is_in_the_parameter_reference_with_its_declared_unit_and_meaning", "[catalog][docs]")
{
  const std::vector<Declared> fields = declared();
  REQUIRE(fields.size() == 5 + 6 + 4 + 1 + 12 + 3); // the lists in GpuSpec.hpp and NodeSpec.hpp
  for (const Declared& f : fields) {
    INFO(f.path);
    const memwall::ParamDoc* doc = nullptr;
    for (const memwall::ParamDoc& d : memwall::spec_param_docs())
      if (d.path == f.path)
        doc = &d;
    REQUIRE(doc != nullptr);
    CHECK(doc->type.rfind(f.type_prefix, 0) == 0);
    CHECK(doc->description == f.description);
  }
}

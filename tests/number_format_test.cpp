// Numbers as printed for people: separators, dollars, parameter counts as model names
// write them, binary sizes, one unit along a line (base/NumberFormat.hpp).
#include "base/NumberFormat.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

TEST_CASE("counts_and_prices_carry_thousands_separators", "[format]")
{
  CHECK(format_count(278366) == "278,366");
  CHECK(format_count(999) == "999");
  CHECK(format_count(-1234567) == "-1,234,567");
  CHECK(format_usd(3900000) == "$3,900,000");
  CHECK(format_usd_cents(0.2246) == "$0.22");
}

TEST_CASE("ranges_and_defaults_print_without_cs_exponent_sign", "[format]")
{
  CHECK(format_number(1e15) == "1e15");
  CHECK(format_number(1e-6) == "1e-6");
  CHECK(format_number(5e7) == "5e7");
  CHECK(format_number(100000) == "100000");
  CHECK(format_number(0.51) == "0.51");
}

TEST_CASE("parameter_counts_read_as_model_names_write_them", "[format]")
{
  // Llama 3.1 405B has 405,853,388,800 parameters; GPT-2 small 124,439,808.
  CHECK(format_params(405853388800.0) == "406B");
  CHECK(format_params(124439808.0) == "124M");
  CHECK(format_params(1.008e12) == "1.01T");
}

TEST_CASE("sizes_defined_in_binary_units_read_in_them", "[format]")
{
  CHECK(format_bytes(2 * 1048576.0) == "2.00 MiB"); // the driver's 2 MiB root chunk
  CHECK(format_bytes(2e12) == "1.82 TiB");          // a DGX's 2 TB of DRAM: 2e12 / 2^40
  CHECK(format_bytes(512) == "512 B");
}

TEST_CASE("durations_on_one_line_share_the_unit_of_the_largest", "[format]")
{
  // The ZeRO-Offload line that mixed "2.2 s", "882.21 ms" and "0 s".
  auto t = format_durations({2.2, 0.88221, 0});
  CHECK(t == std::vector<std::string>{"2.20 s", "0.88 s", "0.00 s"});
  CHECK(format_durations({0.0125, 0.0003}) == std::vector<std::string>{"12.50 ms", "0.30 ms"});
}

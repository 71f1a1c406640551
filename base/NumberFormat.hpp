#pragma once
// Numbers as a person reads them in a report or a listing, beside Quantity.hpp's bytes
// (GiB), SI rates and durations: counts with thousands separators, prices in dollars,
// parameter counts the way model names write them, sizes with binary prefixes, and
// durations that share one unit along a line.
#include <string>
#include <vector>

namespace memwall {

// "278,366"; rounds to the nearest integer.
std::string format_count(double v);
// Integers below a million in full ("100000"), other numbers in the shortest form
// ("0.51", "1e-6", "5e7", "1e15"), never C's "1e+15"; for ranges and defaults, where a
// thousands separator would read as a list separator.
std::string format_number(double v);
// Every digit a double needs to be read back as the same number (17 significant
// digits, "%.17g"): for CSV and for numbers written into text that is parsed again.
std::string format_exact(double v);
// "$10,000".
std::string format_usd(double v);
// A small sum: "$1.70", "$0.04"; large ones as format_usd.
std::string format_usd_cents(double v);
// "124M", "6.74B", "1.01T": as model names and papers count parameters.
std::string format_params(double v);
// Bytes with the binary prefix that reads best: "2.00 MiB", "15.72 TiB", "512 B".
std::string format_bytes(double v);
// Durations that appear together, each in the unit format_duration() picks for the
// largest of them: {2.2, 0.88221, 0} -> "2.20 s", "0.88 s", "0.00 s".
std::vector<std::string> format_durations(const std::vector<double>& seconds);

} // namespace memwall

#pragma once
// Numbers with optional SI or binary unit suffixes, as a person writes them in a spec:
// "80e9", "80 GB", "80GiB", "2.039 TB/s", "200 Gb/s" (bits), "312 TFLOP/s", "5 us".
#include <optional>
#include <string>

namespace memwall {

enum class QuantityKind { bytes, rate, flop_rate, seconds, plain };

// Parses text as a quantity of the given kind; returns nullopt when it is not one.
// Bytes and rates are returned in bytes and bytes/s, FLOP rates in FLOP/s, times in s.
std::optional<double> parse_quantity(const std::string& text, QuantityKind kind);

// Formats bytes for humans with an explicit unit: "79.2 GiB".
std::string format_gib(double bytes);
std::string format_si(double value, const std::string& unit); // "1.23 TFLOP/s"

} // namespace memwall

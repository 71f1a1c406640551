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

// The range a spec may give a quantity of each kind (0 stays allowed where a key allows
// it). Beyond it no real hardware exists and simulated times overflow or turn to
// nonsense: 1e-300 B/s makes one kernel outlast the range of a double.
struct QuantityLimits {
  double smallest_nonzero;
  double largest;
  const char* unit; // for the message: "B", "B/s", "FLOP/s", "s"
};
QuantityLimits quantity_limits(QuantityKind kind);

// Formats bytes for humans with an explicit unit: "79.2 GiB".
std::string format_gib(double bytes);
std::string format_si(double value, const std::string& unit); // "1.23 TFLOP/s", up to E (1e18)
// A duration in the unit that reads best: "85.3 us", "12.41 ms", "210.9 s", "2.31 h".
std::string format_duration(double seconds);

} // namespace memwall

#pragma once
// Every layout of a training job on a number of GPUs that the axes (LayoutAxis.hpp)
// propose, in enumeration order: the cartesian product of each axis's values given the
// choices before it.
#include "app/optimize/LayoutAxis.hpp"

#include <map>
#include <string>
#include <vector>

namespace memwall {

// --axis KEY=V1,V2,...: the values to try for KEY instead of the axis's own.
using AxisValues = std::map<std::string, std::vector<std::string>>;

// Parses --axis options; InputError naming the option when its key is no axis's, a
// value is empty or not one the axis takes.
AxisValues parse_axis_options(const std::vector<std::string>& options);

// The spec keys the search sets for `space`, in table order.
std::vector<std::string> searched_keys(const SearchSpace& space);

// A search's layouts over all its GPU counts are at most max_layouts: each is parsed and
// checked before anything runs (about 0.4 ms), and past this many the plan alone would
// take minutes. `limit`: what is left of it; InputError past it, naming the axis.
constexpr size_t max_layouts = 100'000;
std::vector<PartialLayout> enumerate_layouts(const SearchSpace& space, const AxisValues& given,
                                             size_t limit = max_layouts);

} // namespace memwall

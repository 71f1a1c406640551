#pragma once
// Derivative-free minimisation (Nelder & Mead 1965, standard coefficients), restarted
// from the best point until a restart no longer improves: enough for the handful of
// parameters of a hardware model, and deterministic.
#include <functional>
#include <vector>

namespace memwall {

std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> start,
                                double step = 0.5, int max_evaluations = 4000);

} // namespace memwall

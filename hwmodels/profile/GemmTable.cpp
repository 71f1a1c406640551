#include "hwmodels/profile/GemmTable.hpp"

#include "base/InputError.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

namespace memwall {
namespace {

// The sweeps whose measured errors are blended, and how distance weighs them. Chosen by
// leaving each model's layers out of the H100 and H200 tables in turn (4 sweeps, weights
// 1 / distance: held-out median 3.1-3.9 %; 1 or 2 sweeps follow one neighbour's steps,
// 8 blur them; calibration/VALIDATION.md).
constexpr size_t nearest_sweeps = 4;

// log(measured / model) of sweep `s` at `tokens`, linear in log tokens between its points.
double log_error(const GemmSweep& s, GemmPass pass, const GemmModel& model, double tokens)
{
  auto at = [&](size_t i) {
    double m, n, k;
    gemm_dims(pass, {s.tokens[i], s.a, s.b}, m, n, k);
    return std::log(s.time_s[i] / model.time(m, n, k));
  };
  auto hi  = std::lower_bound(s.tokens.begin(), s.tokens.end(), tokens);
  size_t j = static_cast<size_t>(hi - s.tokens.begin());
  if (j < s.tokens.size() && s.tokens[j] == tokens)
    return at(j);
  double lo_t = std::log(s.tokens[j - 1]), hi_t = std::log(s.tokens[j]);
  double f = (std::log(tokens) - lo_t) / (hi_t - lo_t);
  return (1 - f) * at(j - 1) + f * at(j);
}

} // namespace

GemmSweepPoint sweep_point(GemmPass pass, double m, double n, double k)
{
  return pass == GemmPass::weight_grad ? GemmSweepPoint{k, m, n} : GemmSweepPoint{m, n, k};
}

void gemm_dims(GemmPass pass, const GemmSweepPoint& p, double& m, double& n, double& k)
{
  if (pass == GemmPass::weight_grad)
    m = p.a, n = p.b, k = p.tokens;
  else
    m = p.tokens, n = p.a, k = p.b;
}

void pass_dims(GemmPass pass, double tokens, double out, double in, double& m, double& n, double& k)
{
  switch (pass) {
    case GemmPass::input_grad: m = tokens, n = in, k = out; return;
    case GemmPass::weight_grad: m = out, n = in, k = tokens; return;
    default: m = tokens, n = out, k = in; return;
  }
}

size_t GemmTable::points() const
{
  size_t n = 0;
  for (const GemmSweep& s : sweeps)
    n += s.tokens.size();
  return n;
}

double GemmTable::correction(const GemmModel& model, double m, double n, double k) const
{
  if (sweeps.empty())
    return 0;
  GemmSweepPoint q = sweep_point(pass, m, n, k);
  double a_lo = INFINITY, a_hi = 0, b_lo = INFINITY, b_hi = 0;
  for (const GemmSweep& s : sweeps) {
    a_lo = std::min(a_lo, s.a), a_hi = std::max(a_hi, s.a);
    b_lo = std::min(b_lo, s.b), b_hi = std::max(b_hi, s.b);
  }
  if (q.a < a_lo || q.a > a_hi || q.b < b_lo || q.b > b_hi)
    return 0;
  // The sweeps that reach this token count, nearest shape first.
  std::vector<std::pair<double, const GemmSweep*>> near;
  for (const GemmSweep& s : sweeps)
    if (q.tokens >= s.tokens.front() && q.tokens <= s.tokens.back())
      near.emplace_back(std::hypot(std::log2(q.a / s.a), std::log2(q.b / s.b)), &s);
  if (near.empty())
    return 0;
  size_t take = std::min(nearest_sweeps, near.size());
  std::partial_sort(near.begin(), near.begin() + static_cast<long>(take), near.end(), [](const auto& x, const auto& y) {
    return x.first < y.first || (x.first == y.first && x.second < y.second);
  });
  if (near.front().first < 1e-9) // a measured shape: its own sweep alone
    return std::exp(log_error(*near.front().second, pass, model, q.tokens));
  double sum = 0, weights = 0;
  for (size_t i = 0; i < take; ++i) {
    double w = 1 / near[i].first;
    sum += w * log_error(*near[i].second, pass, model, q.tokens);
    weights += w;
  }
  return std::exp(sum / weights);
}

std::map<GemmPass, GemmTable> parse_gemm_sweeps(const std::string& text, const std::string& where)
{
  std::map<GemmPass, GemmTable> out;
  std::istringstream lines(text);
  std::string line;
  for (int no = 1; std::getline(lines, line); ++no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto fail = [&](const std::string& what) {
      throw InputError(where + " line " + std::to_string(no) + ": " + what +
                       "; a sweep is PASS A B | TOKENS ... | TIME_S ... (PASS fwd, dgrad or wgrad)");
    };
    // Three fields split at '|': the pass and fixed dimensions, the token counts, the times.
    std::vector<std::string> part;
    std::istringstream fields(line);
    for (std::string f; std::getline(fields, f, '|');)
      part.push_back(f);
    if (part.size() != 3)
      fail("expected three fields separated by '|'");
    auto numbers = [&](const std::string& f) {
      std::vector<double> v;
      std::istringstream in(f);
      std::string word;
      while (in >> word) {
        char* end = nullptr;
        double x  = std::strtod(word.c_str(), &end);
        if (end != word.c_str() + word.size() || !std::isfinite(x) || x <= 0)
          fail("'" + word + "' is not a positive number");
        v.push_back(x);
      }
      return v;
    };
    std::istringstream head(part[0]);
    std::string pass_name;
    head >> pass_name;
    std::optional<GemmPass> pass = measured_gemm_pass(pass_name);
    if (!pass)
      fail("unknown pass '" + pass_name + "'");
    std::string rest;
    std::getline(head, rest);
    std::vector<double> fixed = numbers(rest), tokens = numbers(part[1]), times = numbers(part[2]);
    if (fixed.size() != 2)
      fail("expected the two fixed dimensions after the pass");
    if (tokens.size() < 2 || tokens.size() != times.size())
      fail("expected at least two token counts and a time for each");
    for (size_t i = 1; i < tokens.size(); ++i)
      if (tokens[i] <= tokens[i - 1])
        fail("token counts must be in ascending order");
    GemmTable& t = out[*pass];
    t.pass       = *pass;
    t.sweeps.push_back({fixed[0], fixed[1], tokens, times});
  }
  return out;
}

std::string gemm_sweeps_text(const std::vector<const GemmTable*>& tables)
{
  std::string out;
  char buf[32];
  auto put = [&](double v) { // six significant digits: the measurements carry five
    std::snprintf(buf, sizeof buf, " %.6g", v);
    out += buf;
  };
  for (const GemmTable* t : tables)
    for (const GemmSweep& s : t->sweeps) {
      out += gemm_pass_name(t->pass);
      put(s.a);
      put(s.b);
      out += " |";
      for (double v : s.tokens)
        put(v);
      out += " |";
      for (double v : s.time_s)
        put(v);
      out += "\n";
    }
  return out;
}

} // namespace memwall

#include "app/advise/Advisor.hpp"

#include "base/ChildPool.hpp"
#include "base/InputError.hpp"
#include "base/JsonOutput.hpp"
#include "sim/Simulation.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

namespace memwall {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TryMeasure, fits, oom, device, hardware, peak_bytes, capacity_bytes, step_time_s,
                                   tokens_per_s, tpot_s, rejected, preemptions, saturated, missed, gpus,
                                   hardware_cost_usd)

namespace {

double fill(const TryOutcome& t) { return t.m.capacity_bytes > 0 ? t.m.peak_bytes / t.m.capacity_bytes : 0.0; }

// Replays every outcome's change (on top of the user's overrides), `jobs` at once.
void replay_all(const std::string& path, const std::vector<std::string>& overrides, int jobs,
                const TryMeasurer& measure, const std::vector<TryOutcome*>& todo)
{
  run_in_children(
      todo.size(), jobs,
      [&](size_t i) {
        std::vector<std::string> all = overrides;
        all.insert(all.end(), todo[i]->change.overrides.begin(), todo[i]->change.overrides.end());
        ExperimentSpec spec = load_spec(path, all);
        RunResult r =
            simulate(spec, /*in_child=*/false, {false, true, /*all_records=*/false, /*memory_timelines=*/false});
        return json_text(nlohmann::json(measure(spec, r)));
      },
      [&](size_t i, const ChildOutcome& out) {
        TryOutcome& t = *todo[i];
        t.ran         = out.kind == ChildOutcome::Kind::result;
        if (t.ran)
          t.m = nlohmann::json::parse(out.data).get<TryMeasure>();
        else
          t.error = out.data;
      });
}

} // namespace

const TryOutcome* RemedyOutcome::answer() const
{
  const TryOutcome* closest = nullptr;
  for (const TryOutcome& t : tries) {
    if (!t.ran)
      continue;
    if (t.m.fits)
      return &t;
    if (!closest || fill(t) < fill(*closest))
      closest = &t;
  }
  return closest;
}

// Two tries of different remedies as one: both changes, a key set by both only where
// they agree (ZeRO-2 against ZeRO-3 is no combination). nullopt when they conflict.
static std::optional<RemedyTry> combine(const RemedyTry& a, const RemedyTry& b)
{
  auto key        = [](const std::string& o) { return o.substr(0, o.find('=')); };
  RemedyTry joint = {a.change + " + " + b.change, a.overrides};
  for (const std::string& o : b.overrides) {
    auto same = std::find_if(joint.overrides.begin(), joint.overrides.end(),
                             [&](const std::string& x) { return key(x) == key(o); });
    if (same == joint.overrides.end())
      joint.overrides.push_back(o);
    else if (*same != o)
      return std::nullopt;
  }
  return joint;
}

std::vector<const TryOutcome*> Advice::fitting_fastest_first() const
{
  std::vector<const TryOutcome*> out;
  auto add = [&](const TryOutcome& t) {
    if (t.ran && t.m.fits && t.m.gpus == given.m.gpus)
      out.push_back(&t);
  };
  for (const RemedyOutcome& r : remedies)
    for (const TryOutcome& t : r.tries)
      if (!r.changes_what_trains)
        add(t);
  for (const TryOutcome& t : combined)
    add(t);
  for (const TryOutcome& t : stacked)
    add(t);
  // Speed as a time to shorten (serving: seconds per output token). Tries within 1 % of
  // the fastest are equals: among them the cheapest (fewest changes, earliest remedy) comes
  // first, so that a change which buys nothing measurable is not recommended.
  auto time = [&](const TryOutcome* t) {
    return serving ? (t->m.tokens_per_s > 0 ? 1 / t->m.tokens_per_s : INFINITY) : t->m.step_time_s;
  };
  double best = INFINITY;
  for (const TryOutcome* t : out)
    best = std::min(best, time(t));
  auto key = [&](const TryOutcome* t) { return time(t) <= 1.01 * best ? best : time(t); };
  std::stable_sort(out.begin(), out.end(), [&](const TryOutcome* x, const TryOutcome* y) { return key(x) < key(y); });
  return out;
}

Advice advise(const ExperimentSpec& spec, const std::string& spec_path, const std::vector<std::string>& overrides,
              int jobs, const TryMeasurer& measure)
{
  Advice a;
  a.serving        = spec.serving;
  a.user_overrides = overrides;
  a.given.change   = {"as given", {}};
  replay_all(spec_path, overrides, jobs, measure, {&a.given});
  if (!a.given.ran)
    throw InputError(a.given.error);
  if (a.given.m.fits)
    return a;

  for (NamedRemedy& r : remedies_in_cost_order(spec.serving)) {
    RemedyOutcome o{r.name, r.description, {}, r.remedy->changes_what_trains()};
    for (RemedyTry& t : r.remedy->tries(spec))
      o.tries.push_back({std::move(t), false, "", {}});
    a.remedies.push_back(std::move(o));
  }
  std::vector<TryOutcome*> todo;
  for (RemedyOutcome& o : a.remedies)
    for (TryOutcome& t : o.tries)
      todo.push_back(&t);
  replay_all(spec_path, overrides, jobs, measure, todo);

  // Two at a time, on the given GPUs: every try that ran of a remedy with every try of a
  // costlier one (the stack switch a try names comes with it).
  for (size_t i = 0; i < a.remedies.size(); ++i)
    for (size_t j = i + 1; j < a.remedies.size(); ++j)
      for (const TryOutcome& x : a.remedies[i].changes_what_trains || a.remedies[j].changes_what_trains
                                     ? std::vector<TryOutcome>{}
                                     : a.remedies[i].tries)
        for (const TryOutcome& y : a.remedies[j].tries) {
          // A try that fits alone is an answer already: a second remedy on top only adds
          // its cost (and its pairs were half the replays).
          if (!x.ran || !y.ran || x.m.fits || y.m.fits || x.m.gpus != a.given.m.gpus || y.m.gpus != a.given.m.gpus)
            continue;
          if (std::optional<RemedyTry> both = combine(x.change, y.change))
            a.combined.push_back({std::move(*both), false, "", {}});
        }
  todo.clear();
  for (TryOutcome& t : a.combined)
    todo.push_back(&t);
  replay_all(spec_path, overrides, jobs, measure, todo);

  if (!a.fitting_fastest_first().empty())
    return a;
  // Nothing fits alone: apply the remedies one on top of the other, cheapest first,
  // each choosing among its changes to the spec as remedied so far, until one fits.
  std::vector<std::string> stack = overrides;
  std::string described;
  double stack_fill = fill(a.given);
  for (NamedRemedy& r : remedies_in_cost_order(spec.serving)) {
    if (r.remedy->changes_what_trains())
      continue;
    ExperimentSpec now = load_spec(spec_path, stack);
    RemedyOutcome level{r.name, r.description, {}};
    for (RemedyTry& t : r.remedy->tries(now))
      level.tries.push_back({std::move(t), false, "", {}});
    todo.clear();
    for (TryOutcome& t : level.tries)
      todo.push_back(&t);
    replay_all(spec_path, stack, jobs, measure, todo);
    const TryOutcome* best = level.answer();
    if (!best || (!best->m.fits && fill(*best) >= stack_fill))
      continue; // a remedy that saves nothing on top of the others stays out
    stack_fill      = fill(*best);
    TryOutcome step = *best;
    described += (described.empty() ? "" : " + ") + best->change.change;
    stack.insert(stack.end(), best->change.overrides.begin(), best->change.overrides.end());
    step.change = {described,
                   std::vector<std::string>(stack.begin() + static_cast<long>(overrides.size()), stack.end())};
    a.stacked.push_back(std::move(step));
    if (best->m.fits)
      break;
  }
  return a;
}

} // namespace memwall

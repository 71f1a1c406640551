#include "sim/replay/OrbitFold.hpp"

#include <algorithm>

namespace memwall {

void OrbitFold::add_orbit(const std::vector<int>& image_routes) { orbits_.insert(image_routes); }

void OrbitFold::add_foreign(int route) { foreign_.push_back(route); }

int OrbitFold::find(std::vector<int>& parent, int x)
{
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x         = parent[x];
  }
  return x;
}

void OrbitFold::unite(std::vector<int>& parent, int a, int b)
{
  a = find(parent, a);
  b = find(parent, b);
  if (a != b)
    parent[std::max(a, b)] = std::min(a, b); // the smaller id roots: the same classes every run
}

void OrbitFold::grow(int link)
{
  for (int l = static_cast<int>(link_class_.size()); l <= link; ++l)
    link_class_.push_back(l);
}

void OrbitFold::solve()
{
  // Orbits whose images' routes line up position by position (the same platform shape).
  std::vector<const std::vector<int>*> valid;
  for (const std::vector<int>& routes : orbits_) {
    const std::vector<int>& first = links_of_(routes.front());
    bool aligned                  = !first.empty();
    for (int r : routes)
      aligned = aligned && links_of_(r).size() == first.size();
    if (!aligned) {
      for (int r : routes)
        foreign_.push_back(r);
      continue;
    }
    valid.push_back(&routes);
    for (int r : routes)
      for (int l : links_of_(r))
        grow(l);
    for (size_t p = 0; p < first.size(); ++p)
      for (int r : routes)
        unite(link_class_, first[p], links_of_(r)[p]);
  }
  for (int r : foreign_)
    for (int l : links_of_(r))
      grow(l);

  // Each class: its links, and what every orbit crossing it agrees on.
  std::map<int, Class> classes;
  std::vector<uint8_t> listed(link_class_.size(), 0);
  for (const std::vector<int>* routes : valid)
    for (int r : *routes)
      for (int l : links_of_(r))
        if (!listed[l]) {
          listed[l] = 1;
          classes[find(link_class_, l)].links.push_back(l);
        }
  for (const std::vector<int>* routes : valid) {
    std::map<int, int> crossings; // link -> images crossing it
    for (int r : *routes)
      for (int l : links_of_(r))
        ++crossings[l];
    std::map<int, std::pair<int, size_t>> per_class; // root -> (crossings per link, links)
    for (const auto& [l, count] : crossings) {
      auto [it, fresh] = per_class.try_emplace(find(link_class_, l), count, 0);
      Class& c         = classes[it->first];
      if (!fresh && it->second.first != count)
        c.broken = true; // crossed unevenly: not a symmetry
      ++it->second.second;
    }
    for (const auto& [root, seen] : per_class) {
      Class& c = classes[root];
      if (seen.second != c.links.size() || (c.multiplicity != 0 && c.multiplicity != seen.first))
        c.broken = true;
      c.multiplicity = seen.first;
    }
    std::vector<int> canonical_roots;
    for (int l : links_of_(routes->front())) {
      int root = find(link_class_, l);
      Class& c = classes[root];
      if (std::find(canonical_roots.begin(), canonical_roots.end(), root) != canonical_roots.end() ||
          (c.canonical >= 0 && c.canonical != l))
        c.broken = true;
      c.canonical = l;
      canonical_roots.push_back(root);
    }
  }
  for (int r : foreign_)
    for (int l : links_of_(r)) {
      auto it = classes.find(find(link_class_, l));
      if (it != classes.end())
        it->second.broken = true;
    }

  // Components: classes joined by an orbit. One broken class keeps its whole component
  // as it is.
  std::vector<int> component(link_class_.size());
  for (size_t l = 0; l < component.size(); ++l)
    component[l] = static_cast<int>(l);
  for (const std::vector<int>* routes : valid)
    for (int r : *routes)
      for (int l : links_of_(r))
        unite(component, l, links_of_(routes->front()).front());
  std::vector<uint8_t> broken(component.size(), 0);
  for (const auto& [root, c] : classes)
    if (c.broken)
      broken[find(component, root)] = 1;

  for (const std::vector<int>* routes : valid) {
    if (broken[find(component, links_of_(routes->front()).front())])
      continue;
    for (size_t k = 0; k < routes->size(); ++k) {
      int r = (*routes)[k];
      if (static_cast<size_t>(r) >= roles_.size())
        roles_.resize(r + 1, Role::alone);
      roles_[r] = k == 0 ? Role::canonical : Role::image;
    }
  }
  for (auto& [root, c] : classes) {
    if (broken[find(component, root)])
      continue;
    if (c.multiplicity > 1)
      scaled_.push_back({c.canonical, c.multiplicity});
    classes_.emplace(root, std::move(c));
  }
}

void OrbitFold::mirror(std::vector<double>& bytes, std::vector<double>& busy) const
{
  for (const auto& [root, c] : classes_) {
    double b = bytes[c.canonical] * c.multiplicity;
    double u = busy[c.canonical];
    for (int l : c.links) {
      bytes[l] = b;
      busy[l]  = u;
    }
  }
}

} // namespace memwall

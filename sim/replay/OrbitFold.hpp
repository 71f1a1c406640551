#pragma once
// Which shadow ranks' flows the replay may run as one.
//
// A representative GPU with shadows on a block of b GPUs that tiles its node (tensor
// parallelism over all 8 GPUs of a DGX, or over 4 of them) sends each copy from all b
// GPUs at once: b flows that are images of one another under the rotation inside the
// blocks, GPU base + i -> base + (i + k) mod b in every block of every node. On a node
// whose links that rotation maps onto one another (NVSwitch ports, PCIe links and NICs
// one per GPU; the node's IB up and down links fixed), it is a symmetry of the
// platform. Where every flow that shares a link with such an orbit is itself an orbit
// started at the same instant, it is a symmetry of the whole max-min state too: every
// image runs at the same rate, so one image, the canonical one (its source the first
// GPU of its block), tells all of them.
//
//      node A                     node B        an orbit of 8 flows, gpu i -> gpu i:
//   gpu0 ─pcie0─nic0─┐       ┌─nic0─pcie0─ gpu0    pcie/nic links: one image each
//   gpu1 ─pcie1─nic1─┼─ib.up─┼─nic1─pcie1─ gpu1    ib.up, ib.down: all 8 images
//    ...             │  ib.down  ...               replayed: gpu0 -> gpu0 alone, with
//   gpu7 ─pcie7─nic7─┘       └─nic7─pcie7─ gpu7    ib.up and ib.down at 1/8 of capacity
//
// The links form classes, the link orbits (the links each position of the images'
// routes visits). A class crossed m times by every orbit's images per link (m = 1 for a
// GPU's own link, n for a fixed one) carries, in the full replay, m times the load its
// canonical link carries from the canonical images: its canonical link runs at 1/m of
// its capacity and, afterwards, every link of the class reports m times the canonical
// link's bytes and the same busy time. Classes joined by orbits form components; a
// component runs mirrored only when nothing else (a kernel's HBM, host work, a copy
// without its full set of shadows, a collective flow whose images are not all there)
// touches any of its links, every orbit crossing a class crosses it with the same m, and
// all canonical images of a class cross the same link. Otherwise its flows run as they
// are. Decided once per replay, over every flow it can start (OrbitMirror::mirror).
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>

namespace memwall {

class OrbitFold {
public:
  using RouteLinks = std::function<const std::vector<int>&(int route)>;
  explicit OrbitFold(RouteLinks links_of) : links_of_(std::move(links_of)) {}

  // An orbit: its images' routes, image 0 the canonical one. The same orbit may be
  // added again (a copy repeated every micro-batch).
  void add_orbit(const std::vector<int>& image_routes);
  // A route some activity uses that is no orbit's image.
  void add_foreign(int route);
  // Decides which orbits run mirrored. Call once, after every add.
  void solve();

  enum class Role : uint8_t { alone, canonical, image };
  // A flow over `route`: run it (alone), run it for its whole orbit (canonical), or
  // leave it to its canonical image (image).
  Role role(int route) const { return static_cast<size_t>(route) < roles_.size() ? roles_[route] : Role::alone; }
  // The canonical links crossed by m > 1 images of each orbit: run at 1/m capacity.
  struct Scaled {
    int link         = 0;
    int multiplicity = 1;
  };
  const std::vector<Scaled>& scaled_links() const { return scaled_; }
  // The figures the mirrored flows would have put on every link of their classes.
  void mirror(std::vector<double>& bytes, std::vector<double>& busy) const;

private:
  int find(std::vector<int>& parent, int x);
  void unite(std::vector<int>& parent, int a, int b);
  void grow(int link);

  RouteLinks links_of_;
  std::set<std::vector<int>> orbits_; // each orbit's image routes, once
  std::vector<int> foreign_;          // routes, possibly repeated
  std::vector<int> link_class_;       // union-find over link ids: link orbits
  std::vector<Role> roles_;           // per route
  struct Class {
    int canonical    = -1;
    int multiplicity = 0;
    bool broken      = false;
    std::vector<int> links;
  };
  std::map<int, Class> classes_; // by root link, of the mirrored components
  std::vector<Scaled> scaled_;
};

} // namespace memwall

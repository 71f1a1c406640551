#include "app/sweep/MpiWorld.hpp"

#include "base/ChildPool.hpp"
#include "base/InputError.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#ifdef MEMWALL_HAVE_MPI
#include <mpi.h>
#endif

namespace memwall {
int MpiWorld::launched_ranks()
{
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(var))
      return std::max(1, std::atoi(v));
  return 1;
}

#ifdef MEMWALL_HAVE_MPI

namespace {

enum Tag : int { request = 1, assign = 2, result = 3, done_tag = 4 };

// A finished point on the wire: 8 bytes of index, one byte of kind, then the data.
std::string encode(int64_t index, const ChildOutcome& o)
{
  std::string m(9, '\0');
  std::memcpy(m.data(), &index, 8);
  m[8] = static_cast<char>(o.kind);
  return m + o.data;
}

} // namespace

MpiWorld::MpiWorld()
{
  if (launched_ranks() <= 1)
    return;
  MPI_Init(nullptr, nullptr);
  joined_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiWorld::~MpiWorld()
{
  if (joined_)
    MPI_Finalize();
}

void MpiWorld::abort(int code) const
{
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

int MpiWorld::broadcast_status(int status) const
{
  if (size_ > 1)
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return status;
}

bool MpiWorld::coordinate_points(const std::vector<int64_t>& todo, const std::function<void(const PointOutcome&)>& done,
                                 const std::function<bool()>& stop) const
{
  try {
    return hand_out(todo, done, stop);
  } catch (const std::exception& e) {
    // The other ranks wait for points or for rank 0's answer: end them all.
    std::fprintf(stderr, "memwall: runtime failure: %s\n", e.what());
    abort(3);
  }
}

bool MpiWorld::hand_out(const std::vector<int64_t>& todo, const std::function<void(const PointOutcome&)>& done,
                        const std::function<bool()>& stop) const
{
  size_t next = 0;
  int serving = size_ - 1;
  while (serving > 0) {
    int ready = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &ready, &st);
    if (!ready) {
      // Polled rather than blocked, so that an interrupt is noticed between results.
      if (stop())
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    int bytes = 0;
    MPI_Get_count(&st, MPI_CHAR, &bytes);
    std::string m(static_cast<size_t>(bytes), '\0');
    MPI_Recv(m.data(), bytes, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (st.MPI_TAG == request) {
      int64_t index = next < todo.size() ? todo[next++] : -1;
      MPI_Send(&index, 1, MPI_INT64_T, st.MPI_SOURCE, assign, MPI_COMM_WORLD);
    } else if (st.MPI_TAG == result) {
      if (m.size() < 9)
        throw std::runtime_error("sweep: a short result message from rank " + std::to_string(st.MPI_SOURCE));
      PointOutcome o;
      std::memcpy(&o.index, m.data(), 8);
      o.ok   = static_cast<ChildOutcome::Kind>(m[8]) == ChildOutcome::Kind::result;
      o.data = m.substr(9);
      done(o);
    } else if (st.MPI_TAG == done_tag) {
      --serving;
    }
  }
  return true;
}

void MpiWorld::serve_points(const SweepSpec& sweep, int jobs, const PointSummary& summarize) const
{
  ChildPool pool(jobs);
  bool more = true;
  while (true) {
    while (more && !pool.full()) {
      MPI_Send(nullptr, 0, MPI_CHAR, 0, request, MPI_COMM_WORLD);
      int64_t index = -1;
      MPI_Recv(&index, 1, MPI_INT64_T, 0, assign, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (index < 0) {
        more = false;
        break;
      }
      const SweepPoint& p = sweep.points.at(static_cast<size_t>(index));
      pool.spawn(index, [&] { return run_point(sweep, p, summarize); });
    }
    if (pool.running() == 0)
      break;
    auto [index, outcome] = pool.wait_one();
    std::string m         = encode(index, outcome);
    MPI_Send(m.data(), static_cast<int>(m.size()), MPI_CHAR, 0, result, MPI_COMM_WORLD);
  }
  MPI_Send(nullptr, 0, MPI_CHAR, 0, done_tag, MPI_COMM_WORLD);
}

#else // built without MPI

MpiWorld::MpiWorld()
{
  if (int n = launched_ranks(); n > 1)
    throw InputError("sweep: started by mpirun with " + std::to_string(n) +
                     " ranks, but this memwall was built without MPI; install libopenmpi-dev "
                     "(scripts/install_deps.sh does) and rebuild, or run the sweep without mpirun");
}

MpiWorld::~MpiWorld() = default;

void MpiWorld::abort(int code) const { std::_Exit(code); }

int MpiWorld::broadcast_status(int status) const { return status; }

bool MpiWorld::coordinate_points(const std::vector<int64_t>&, const std::function<void(const PointOutcome&)>&,
                                 const std::function<bool()>&) const
{
  throw std::logic_error("coordinate_points without MPI");
}

void MpiWorld::serve_points(const SweepSpec&, int, const PointSummary&) const
{
  throw std::logic_error("serve_points without MPI");
}

#endif

} // namespace memwall

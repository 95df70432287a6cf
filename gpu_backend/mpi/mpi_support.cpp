#include "gpu_backend/mpi/mpi_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/error.hpp"

namespace ssim::gpu {

void mpi_check(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  throw MpiError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                 (length > 0 ? std::string(text, static_cast<std::size_t>(length))
                             : "error " + std::to_string(rc)));
}

std::string_view to_string(MpiClock clock) {
  switch (clock) {
    case MpiClock::wtime_global:
      return "MPI_Wtime (global)";
    case MpiClock::steady_one_node:
      return "steady_clock (all ranks on one host)";
    case MpiClock::barrier_relative:
      return "MPI_Wtime from each rank's barrier exit (several hosts)";
  }
  return "?";
}

std::string MpiWorld::device() const {
  std::string d = "mpi:" + host;
  if (nodes > 1) {
    d += '+';
    d += std::to_string(nodes - 1);
  }
  return d;
}

MpiWorld describe_world(MPI_Comm comm) {
  MpiWorld w;
  SSIM_MPI(MPI_Comm_rank(comm, &w.rank));
  SSIM_MPI(MPI_Comm_size(comm, &w.size));

  // One node leader per shared-memory domain; counting the leaders counts the hosts.
  MPI_Comm node = MPI_COMM_NULL;
  SSIM_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &node));
  int node_rank = 0;
  SSIM_MPI(MPI_Comm_rank(node, &node_rank));
  SSIM_MPI(MPI_Comm_free(&node));
  const int leader = node_rank == 0 ? 1 : 0;
  SSIM_MPI(MPI_Allreduce(&leader, &w.nodes, 1, MPI_INT, MPI_SUM, comm));

  char name[MPI_MAX_PROCESSOR_NAME + 1] = {};
  int length = 0;
  SSIM_MPI(MPI_Get_processor_name(name, &length));
  SSIM_MPI(MPI_Bcast(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm));
  name[MPI_MAX_PROCESSOR_NAME] = '\0';
  w.host = name;

  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  SSIM_MPI(MPI_Get_library_version(version, &length));
  w.library = std::string(version, static_cast<std::size_t>(length));
  w.library = w.library.substr(0, w.library.find_first_of("\n,"));

  int* is_global = nullptr;
  int found = 0;
  SSIM_MPI(MPI_Comm_get_attr(comm, MPI_WTIME_IS_GLOBAL, &is_global, &found));
  // Every rank must choose the same clock: the attribute is the same on every rank, and so is
  // the node count.
  if (found && is_global && *is_global) {
    w.clock = MpiClock::wtime_global;
  } else if (w.nodes == 1) {
    w.clock = MpiClock::steady_one_node;
  } else {
    w.clock = MpiClock::barrier_relative;
  }
  return w;
}

double clock_now(MpiClock clock) {
  if (clock == MpiClock::steady_one_node) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  return MPI_Wtime();
}

void agree_on_errors(MPI_Comm comm, const std::string& local_error) {
  int rank = 0;
  int size = 0;
  SSIM_MPI(MPI_Comm_rank(comm, &rank));
  SSIM_MPI(MPI_Comm_size(comm, &size));
  const int mine = local_error.empty() ? size : rank;
  int first = size;
  SSIM_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) return;

  // Did every rank fail with the same message? Then it is plain bad input, said once.
  int length = static_cast<int>(local_error.size());
  SSIM_MPI(MPI_Bcast(&length, 1, MPI_INT, first, comm));
  std::vector<char> text(local_error.begin(), local_error.end());
  text.resize(static_cast<std::size_t>(length));
  SSIM_MPI(MPI_Bcast(text.data(), length, MPI_CHAR, first, comm));
  const std::string message(text.begin(), text.end());
  const int same = message == local_error ? 1 : 0;
  int all_same = 0;
  SSIM_MPI(MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_MIN, comm));
  throw AgreedInputError(all_same || first == 0 ? message
                                                : "rank " + std::to_string(first) + ": " + message);
}

}  // namespace ssim::gpu

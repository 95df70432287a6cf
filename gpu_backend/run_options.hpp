// The size sweep of the measured drivers (stragglesim-gpu run, stragglesim-mpi): nccl-tests'
// -b/-e/-f sizes and the rank limit of the element check. Host code only, shared by the
// CUDA/NCCL and the MPI executors.
//
//   const std::vector<std::uint64_t> sizes = size_sweep(parse_size("1M"), parse_size("64M"), 4);
//   // {1 MiB, 4 MiB, 16 MiB, 64 MiB}
//
// A bare K, M or G after the number means KiB, MiB or GiB (nccl-tests' powers of 1024); any
// size ssim::parse_bytes reads is accepted too ("64MiB", "1MB", "4096").
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace ssim::gpu {

// Most ranks a run takes: the check's input values stay distinct up to 1030 ranks
// (host_executor.hpp); a round number keeps the message simple.
inline constexpr int kMaxRanks = 1024;

// "1M" = 1 MiB (nccl-tests), else parse_bytes. InputError on anything else.
std::uint64_t parse_size(std::string_view text);
// min, min*factor, ... while <= max. InputError when min is 0, min > max, or factor < 2
// while min < max.
std::vector<std::uint64_t> size_sweep(std::uint64_t min, std::uint64_t max, int factor);

}  // namespace ssim::gpu

// Byte counts of chunk ranges with the division done once: the rule of alg::chunk_bytes
// (schedule.hpp: every chunk floor(total / chunks) bytes, the last one also the remainder) for
// loops over many ranges of one buffer, such as the simulator's per-transfer byte counts.
//
//   const ChunkSizes sizes(/*total_bytes=*/10, /*chunks=*/3);  // chunks of 3, 3 and 4 bytes
//   sizes.length(1, 3);  // 7, as chunk_bytes(10, 3, 1, 3).length
//
// Ranges are not checked here (chunk_bytes checks them): callers check a transfer first.
#pragma once

#include <cstdint>

#include "algorithms/schedule.hpp"

namespace ssim::alg {

struct ChunkSizes {
  std::uint64_t base = 0;       // floor(total / chunks)
  std::uint64_t remainder = 0;  // total - base * chunks, carried by the last chunk
  std::int32_t chunks = 0;

  ChunkSizes() = default;
  // chunk_count > 0.
  ChunkSizes(std::uint64_t total_bytes, int chunk_count)
      : base(total_bytes / static_cast<std::uint64_t>(chunk_count)),
        remainder(total_bytes - base * static_cast<std::uint64_t>(chunk_count)),
        chunks(chunk_count) {}

  std::uint64_t length(std::int32_t chunk_begin, std::int32_t chunk_end) const {
    return base * static_cast<std::uint64_t>(chunk_end - chunk_begin) +
           (chunk_end == chunks && chunk_end > chunk_begin ? remainder : 0);
  }
  std::uint64_t length(const Transfer& t) const { return length(t.chunk_begin, t.chunk_end); }
  std::uint64_t length(const SwitchReduce& r) const { return length(r.chunk_begin, r.chunk_end); }
  ByteRange range(std::int32_t chunk_begin, std::int32_t chunk_end) const {
    return {base * static_cast<std::uint64_t>(chunk_begin), length(chunk_begin, chunk_end)};
  }
};

}  // namespace ssim::alg

// The receivers -> chunks matching of StragglAR's doubling construction (stragglar.cpp), in a
// header of its own so that tests can compare it with a plain augmenting-path search
// (tests/algorithms/stragglar_matching_test.cpp). Not a public interface.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "common/error.hpp"

namespace ssim::alg::detail {

// Bits set in x. Written out (SWAR) rather than std::popcount: without -mpopcnt (the default
// -march of x86-64) std::popcount is a call into libgcc, and the doubling construction asks
// for a count per receiver and round.
constexpr int popcount64(std::uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return static_cast<int>((x * 0x0101010101010101ull) >> 56);
}
static_assert(popcount64(0) == 0 && popcount64(~std::uint64_t{0}) == 64 &&
              popcount64(0x8000000000000001ull) == 2 && popcount64(0xf0f0ull) == 8);

// Receivers -> chunks of one round, at most `capacity` receivers per chunk (its senders).
// Each receiver takes the newest allowed chunk; a full chunk is taken over from one of
// its receivers if that one can move on (augmenting path). The chunks are those of a window
// base .. base+63 (a round's unfinished chunks span fewer than log2(n) of them), so a
// receiver's allowed chunks and the chunks an augmenting search has visited are bit masks:
// a holder with nothing left to try is passed over in O(1).
//
// The search (search()) is depth-first: receiver r tries its allowed chunks newest first, each
// visited at most once per add(); in a full chunk it tries the chunk's receivers in slot
// order, the first one with an unvisited allowed chunk left searching on. On success every
// receiver on the path takes the slot of the one it displaced (the last displaced one is
// appended to the chunk that had room). An explicit stack over flat arrays: one slot array
// with a fixed range per chunk (the capacities are known before the first add()).
//
// The pipe. At powers of two nearly every add() is a receiver allowed every chunk of the
// window, and its path runs through the first slot of every full chunk from the newest down
// to the newest one with room, `low` (about 10 steps at n = 4096): each first receiver moves
// one chunk down and the one of the chunk above `low` is appended to `low`. When that path
// is certain, the first slots of the chunks above `low` are kept as a deque (the pipe) and
// such an add() is O(1): push the receiver in front, append the last one to `low`. Certain
// means: the receiver's newest allowed chunk is the pipe's top and it is allowed every chunk
// from `low` to the top; every full chunk from the top down to `low` has a first receiver;
// and the first receiver of chunk c (c > low) is allowed no chunk above the top and every
// chunk from `low` to c-1 (so, displaced from c with the chunks >= c visited, its newest
// unvisited allowed chunk is c-1). Any other add() writes the pipe back into the slots and
// runs the search; the next one tries to start a pipe again. Both give the same matching
// (the test above compares them, and the schedules' digests in stragglar_test.cpp are those
// of the search alone).
class ChunkMatching {
 public:
  void reset(int ranks, int base) {
    base_ = base;
    allowed_.assign(static_cast<std::size_t>(ranks), 0);
    allowed_count_.assign(static_cast<std::size_t>(ranks), 0);
    assigned_.assign(static_cast<std::size_t>(ranks), -1);
    capacity_.fill(0);
    size_.fill(0);
    laid_out_ = false;
    piped_ = false;
    // Every add() pushes at most one receiver in front of the pipe; it holds at most 64.
    pipe_.resize(static_cast<std::size_t>(ranks) + 66);
  }
  // The chunks r may receive: bit i for chunk base+i.
  void allow(int r, std::uint64_t chunks) {
    allowed_[static_cast<std::size_t>(r)] = chunks;
    allowed_count_[static_cast<std::size_t>(r)] = popcount64(chunks);  // sorting key
  }
  int allowed_count(int r) const { return allowed_count_[static_cast<std::size_t>(r)]; }
  // Before the first add() after reset().
  void set_capacity(int chunk, int capacity) {
    SSIM_CHECK(!laid_out_, "stragglar: chunk capacity set after the matching started");
    capacity_[static_cast<std::size_t>(chunk - base_)] = capacity;
  }
  // Call once the receivers are added, before assigned().
  void finish() {
    if (piped_) unpipe();
  }
  // The chunk r receives (base-relative numbering undone), or -1.
  int assigned(int r) const {
    SSIM_CHECK(!piped_, "stragglar: matching read before finish()");
    return assigned_[static_cast<std::size_t>(r)];
  }

  // Adds receiver r (not added before); false when no augmenting path exists.
  bool add(int r) {
    if (!laid_out_) lay_out();
    if (!piped_) piped_ = start_pipe(r);
    if (piped_) {
      const std::uint64_t m = allowed_[static_cast<std::size_t>(r)];
      if ((m >> top_) == 1 && (m & span_) == span_) {
        piped_add(r);
        return true;
      }
      unpipe();
    }
    return search(r);
  }

 private:
  // A receiver on the search path: `rank` takes `slot` of `chunk` (window index) if the
  // search succeeds.
  struct Step {
    int rank, chunk, slot;
  };

  static std::uint64_t bits(int low, int high) {  // chunks low..high
    const std::uint64_t upto = high >= 63 ? ~std::uint64_t{0} : (std::uint64_t{2} << high) - 1;
    return upto & ~((std::uint64_t{1} << low) - 1);
  }

  void lay_out() {
    int total = 0;
    for (std::size_t i = 0; i < capacity_.size(); ++i) {
      start_[i] = total;
      total += capacity_[i];
    }
    if (slots_.size() < static_cast<std::size_t>(total))
      slots_.resize(static_cast<std::size_t>(total));
    laid_out_ = true;
  }

  bool search(int r) {
    std::uint64_t seen = 0;  // chunks visited by this search
    int depth = 0;           // steps on path_
    int rank = r;            // the receiver looking for a chunk
    for (;;) {
      const std::uint64_t open = allowed_[static_cast<std::size_t>(rank)] & ~seen;
      int chunk = 0, slot = 0;
      if (open != 0) {
        // Newest unvisited allowed chunk (visiting marks it, so this walks them downwards).
        chunk = 63 - std::countl_zero(open);
        seen |= std::uint64_t{1} << chunk;
        const std::size_t c = static_cast<std::size_t>(chunk);
        if (size_[c] < capacity_[c]) {
          slots_[static_cast<std::size_t>(start_[c] + size_[c]++)] = rank;
          assigned_[static_cast<std::size_t>(rank)] = base_ + chunk;
          // Every receiver on the path takes the slot of the one it displaced.
          while (depth > 0) {
            const Step& s = path_[static_cast<std::size_t>(--depth)];
            slots_[static_cast<std::size_t>(s.slot)] = s.rank;
            assigned_[static_cast<std::size_t>(s.rank)] = base_ + s.chunk;
          }
          return true;
        }
        slot = start_[c];
      } else {
        // `rank` found nothing: back to the receiver that displaced it, next slot.
        if (depth == 0) return false;
        const Step& s = path_[static_cast<std::size_t>(--depth)];
        rank = s.rank;
        chunk = s.chunk;
        slot = s.slot + 1;
      }
      // The first receiver of the full chunk from `slot` on with an unvisited allowed chunk
      // searches on; with none, `rank` tries its next chunk.
      const std::size_t c = static_cast<std::size_t>(chunk);
      const int end = start_[c] + size_[c];
      while (slot < end &&
             (allowed_[static_cast<std::size_t>(slots_[static_cast<std::size_t>(slot)])] & ~seen) ==
                 0)
        ++slot;
      if (slot < end) {
        path_[static_cast<std::size_t>(depth++)] = Step{rank, chunk, slot};
        rank = slots_[static_cast<std::size_t>(slot)];
      }
    }
  }

  // Whether the first receiver h of chunk c (above low_) stays on the pipe's path.
  bool on_path(int h, int c) const {
    const std::uint64_t m = allowed_[static_cast<std::size_t>(h)];
    return (top_ >= 63 || (m >> (top_ + 1)) == 0) &&
           (c == low_ || (m & bits(low_, c - 1)) == bits(low_, c - 1));
  }

  // Starts a pipe at r's newest allowed chunk if its path is certain (class comment).
  bool start_pipe(int r) {
    const std::uint64_t m = allowed_[static_cast<std::size_t>(r)];
    if (m == 0) return false;
    top_ = 63 - std::countl_zero(m);
    low_ = top_;
    while (low_ >= 0 &&
           size_[static_cast<std::size_t>(low_)] == capacity_[static_cast<std::size_t>(low_)]) {
      if (capacity_[static_cast<std::size_t>(low_)] == 0) return false;
      --low_;
    }
    if (low_ < 0) return false;
    span_ = bits(low_, top_);
    if ((m & span_) != span_) return false;
    len_ = top_ - low_;
    head_ = static_cast<int>(pipe_.size()) - 65;
    for (int i = 0; i < len_; ++i) {
      const int c = top_ - i;
      const int h = slots_[static_cast<std::size_t>(start_[static_cast<std::size_t>(c)])];
      if (!on_path(h, c)) return false;
      pipe_[static_cast<std::size_t>(head_ + i)] = h;
    }
    return true;
  }

  void piped_add(int r) {
    SSIM_CHECK(head_ > 0, "stragglar: more receivers added than ranks");
    pipe_[static_cast<std::size_t>(--head_)] = r;  // r takes the first slot of the top
    // The first receiver of the chunk above low_ moves to low_.
    const int x = pipe_[static_cast<std::size_t>(head_ + len_)];
    const std::size_t low = static_cast<std::size_t>(low_);
    slots_[static_cast<std::size_t>(start_[low] + size_[low]++)] = x;
    assigned_[static_cast<std::size_t>(x)] = base_ + low_;
    if (size_[low] < capacity_[low]) return;
    // low_ is full: its first receiver joins the pipe, whose path now reaches low_-1.
    const int y = slots_[static_cast<std::size_t>(start_[low])];
    pipe_[static_cast<std::size_t>(head_ + len_)] = y;
    ++len_;
    --low_;
    bool certain = low_ >= 0 && size_[static_cast<std::size_t>(low_)] <
                                    capacity_[static_cast<std::size_t>(low_)];
    if (certain) {
      span_ = bits(low_, top_);
      for (int i = 0; i < len_ && certain; ++i)
        certain = on_path(pipe_[static_cast<std::size_t>(head_ + i)], top_ - i);
    }
    if (!certain) unpipe();
  }

  // Writes the pipe back into the first slots of its chunks.
  void unpipe() {
    for (int i = 0; i < len_; ++i) {
      const int c = top_ - i;
      const int h = pipe_[static_cast<std::size_t>(head_ + i)];
      slots_[static_cast<std::size_t>(start_[static_cast<std::size_t>(c)])] = h;
      assigned_[static_cast<std::size_t>(h)] = base_ + c;
    }
    piped_ = false;
  }

  int base_ = 0;
  std::vector<std::uint64_t> allowed_;
  std::vector<int> allowed_count_;
  std::vector<int> assigned_;
  std::array<int, 64> capacity_{};
  std::array<int, 64> size_{};   // receivers per chunk so far
  std::array<int, 64> start_{};  // of each chunk's range in slots_
  std::vector<int> slots_;       // receivers per chunk, in slot order
  std::array<Step, 64> path_{};  // at most one step per chunk
  bool laid_out_ = false;
  // The pipe: first receivers of chunks top_, top_-1, .., low_+1 at pipe_[head_ ..
  // head_+len_-1] (len_ = top_-low_); span_ = chunks low_..top_.
  bool piped_ = false;
  int top_ = 0, low_ = 0, len_ = 0, head_ = 0;
  std::uint64_t span_ = 0;
  std::vector<int> pipe_;
};

}  // namespace ssim::alg::detail

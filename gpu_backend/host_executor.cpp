#include "gpu_backend/host_executor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "algorithms/verifier.hpp"
#include "common/error.hpp"
#include "gpu_backend/float16.hpp"

namespace ssim::gpu {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kPeriod = 61;     // input_value repeats every kPeriod elements
constexpr std::uint64_t kModulus = 1031;  // the largest value modulus (a prime)

// Thrown in ranks woken because another rank failed; the first real error is reported.
struct Aborted {};

struct Message {
  std::vector<std::byte> data;
  bool taken = false;  // guarded by the sender's endpoint mutex
};
using MessagePtr = std::shared_ptr<Message>;

// Per-rank endpoint: messages addressed to the rank, keyed by (round, sender), FIFO per key
// (NCCL matches sends and receives between one pair in issue order), and the condition
// variable the rank sleeps on, both for incoming messages and for its sends being taken.
struct Endpoint {
  std::mutex mutex;
  std::condition_variable cv;
  std::map<std::pair<int, int>, std::deque<MessagePtr>> inbox;
};

class Transport {
 public:
  Transport(int ranks, Seconds timeout)
      : endpoints_(std::make_unique<Endpoint[]>(static_cast<std::size_t>(ranks))),
        ranks_(ranks),
        timeout_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(timeout.value))) {}

  MessagePtr post(int round, int src, int dst, const std::byte* data, std::size_t bytes) {
    auto msg = std::make_shared<Message>();
    msg->data.assign(data, data + bytes);
    Endpoint& ep = endpoints_[static_cast<std::size_t>(dst)];
    {
      std::lock_guard lock(ep.mutex);
      ep.inbox[{round, src}].push_back(msg);
    }
    ep.cv.notify_all();
    return msg;
  }

  void take(int round, int src, int dst, std::byte* out, std::size_t bytes) {
    Endpoint& ep = endpoints_[static_cast<std::size_t>(dst)];
    MessagePtr msg;
    {
      std::unique_lock lock(ep.mutex);
      const auto key = std::make_pair(round, src);
      wait(
          ep, lock,
          [&] {
            auto it = ep.inbox.find(key);
            return it != ep.inbox.end() && !it->second.empty();
          },
          [&] {
            return "rank " + std::to_string(dst) + " waiting for its round-" +
                   std::to_string(round) + " data from rank " + std::to_string(src);
          });
      auto it = ep.inbox.find(key);
      msg = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) ep.inbox.erase(it);
    }
    SSIM_CHECK(msg->data.size() == bytes,
               "round " + std::to_string(round) + ": rank " + std::to_string(src) + " sent " +
                   std::to_string(msg->data.size()) + " B, rank " + std::to_string(dst) +
                   " expects " + std::to_string(bytes) + " B");
    std::memcpy(out, msg->data.data(), bytes);
    Endpoint& sender = endpoints_[static_cast<std::size_t>(src)];
    {
      std::lock_guard lock(sender.mutex);
      msg->taken = true;
    }
    sender.cv.notify_all();
  }

  void wait_taken(int src, int round, const std::vector<MessagePtr>& sent) {
    Endpoint& ep = endpoints_[static_cast<std::size_t>(src)];
    std::unique_lock lock(ep.mutex);
    wait(
        ep, lock,
        [&] {
          return std::all_of(sent.begin(), sent.end(),
                             [](const MessagePtr& m) { return m->taken; });
        },
        [&] {
          return "rank " + std::to_string(src) + " waiting for its round-" + std::to_string(round) +
                 " sends to be received";
        });
  }

  // Wakes every waiting rank; they throw Aborted.
  void abort() {
    aborted_ = true;
    for (int r = 0; r < ranks_; ++r) {
      Endpoint& ep = endpoints_[static_cast<std::size_t>(r)];
      { std::lock_guard lock(ep.mutex); }
      ep.cv.notify_all();
    }
  }

 private:
  // `what` describes the wait for the timeout message; called only then.
  template <class Pred, class What>
  void wait(Endpoint& ep, std::unique_lock<std::mutex>& lock, Pred ready, What what) {
    const auto deadline = Clock::now() + timeout_;
    while (!ready()) {
      if (aborted_) throw Aborted{};
      if (ep.cv.wait_until(lock, deadline) == std::cv_status::timeout && !ready()) {
        if (aborted_) throw Aborted{};
        throw InternalError("host executor: " + what() +
                            " timed out; the plan cannot make progress");
      }
    }
  }

  std::unique_ptr<Endpoint[]> endpoints_;
  int ranks_;
  Clock::duration timeout_;
  std::atomic<bool> aborted_{false};
};

template <class T>
void run_rank(const lowering::RankPlan& rp, int rank, Transport& transport, std::vector<T>& data,
              std::vector<T>& scratch) {
  auto* data_bytes = reinterpret_cast<std::byte*>(data.data());
  auto* scratch_bytes = reinterpret_cast<std::byte*>(scratch.data());
  std::vector<MessagePtr> sent;
  for (const lowering::Step& step : rp.steps) {
    sent.clear();
    for (const lowering::P2P& s : step.sends) {
      sent.push_back(
          transport.post(step.round, rank, s.peer, data_bytes + s.offset, s.count * sizeof(T)));
    }
    for (const lowering::P2P& v : step.recvs) {
      transport.take(step.round, v.peer, rank, scratch_bytes + v.offset, v.count * sizeof(T));
    }
    transport.wait_taken(rank, step.round, sent);
    for (const lowering::Apply& a : step.applies) {
      T* dst = data.data() + a.offset / sizeof(T);
      const T* src = scratch.data() + a.scratch_offset / sizeof(T);
      if (a.op == alg::Op::reduce) {
        for (std::uint64_t k = 0; k < a.count; ++k) dst[k] += src[k];
      } else {
        std::copy_n(src, a.count, dst);
      }
    }
  }
}

template <class T>
HostRunResult run_typed(const lowering::Plan& plan, const HostRunOptions& options) {
  const int n = plan.ranks;
  const lowering::BufferLayout& layout = plan.layout;
  std::vector<std::vector<T>> data(static_cast<std::size_t>(n));
  std::vector<std::vector<T>> scratch(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    auto& d = data[static_cast<std::size_t>(r)];
    d.resize(layout.padded_count());
    fill_input(plan, r, std::as_writable_bytes(std::span(d)));
    scratch[static_cast<std::size_t>(r)].resize(
        plan.rank_plans[static_cast<std::size_t>(r)].scratch_bytes / sizeof(T));
  }

  Transport transport(n, options.wait_timeout);
  std::vector<RankTiming> timing(static_cast<std::size_t>(n));
  std::mutex error_mutex;
  std::exception_ptr error;
  std::latch ready(n);
  std::latch go(1);
  Clock::time_point t0;
  auto since_t0 = [&t0](Clock::time_point t) {
    return Seconds{std::chrono::duration<double>(t - t0).count()};
  };

  auto body = [&](int r) {
    const auto ri = static_cast<std::size_t>(r);
    ready.count_down();
    go.wait();
    try {
      if (!options.start_delay.empty()) {
        std::this_thread::sleep_until(
            t0 + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(options.start_delay[ri].value)));
      }
      timing[ri].start = since_t0(Clock::now());
      run_rank(plan.rank_plans[ri], r, transport, data[ri], scratch[ri]);
      timing[ri].finish = since_t0(Clock::now());
    } catch (const Aborted&) {
    } catch (...) {
      {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
      transport.abort();
    }
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  try {
    for (int r = 0; r < n; ++r) threads.emplace_back(body, r);
  } catch (...) {
    // Could not start every rank: release the started ones straight into Aborted.
    transport.abort();
    for (int k = static_cast<int>(threads.size()); k < n; ++k) ready.count_down();
    go.count_down();
    for (std::thread& t : threads) t.join();
    throw;
  }
  ready.wait();
  t0 = Clock::now();
  go.count_down();
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);

  HostRunResult result;
  result.ranks = timing;
  for (const RankTiming& t : timing) {
    result.time.value = std::max(result.time.value, t.finish.value);
  }
  double last_start = 0;
  for (const RankTiming& t : timing) last_start = std::max(last_start, t.start.value);
  result.time_from_last_arrival = Seconds{result.time.value - last_start};
  if (options.check) {
    for (int r = 0; r < n; ++r) {
      check_output(plan, r, std::as_bytes(std::span(data[static_cast<std::size_t>(r)])),
                   result.check);
    }
  }
  return result;
}

// The expected values of one rank's elements after the collective, and which are checked.
class Expectation {
 public:
  Expectation(const lowering::Plan& plan, int rank)
      : plan_(plan), rank_(rank), modulus_(value_modulus(plan.layout.dtype, plan.ranks)) {
    if (plan.collective != alg::Collective::allgather) {
      sums_.assign(kPeriod, 0.0);
      for (std::uint64_t j = 0; j < kPeriod; ++j) {
        for (int r = 0; r < plan.ranks; ++r) sums_[j] += input_value(r, j, modulus_);
      }
    }
  }
  int owner(std::uint64_t element) const {
    return alg::chunk_owner(static_cast<int>(element / plan_.layout.chunk_count), plan_.ranks,
                            plan_.layout.chunks);
  }
  bool checked(std::uint64_t element) const {
    return plan_.collective != alg::Collective::reduce_scatter || owner(element) == rank_;
  }
  double value(std::uint64_t element) const {
    if (plan_.collective == alg::Collective::allgather)
      return input_value(owner(element), element, modulus_);
    return sums_[element % kPeriod];
  }

 private:
  const lowering::Plan& plan_;
  int rank_;
  std::uint64_t modulus_;
  std::vector<double> sums_;
};

template <class T>
void fill_typed(const lowering::Plan& plan, int rank, std::span<std::byte> buffer) {
  const lowering::BufferLayout& layout = plan.layout;
  SSIM_CHECK(buffer.size() == layout.padded_bytes(), "input buffer must have padded_bytes() bytes");
  const std::uint64_t modulus = value_modulus(layout.dtype, plan.ranks);
  for (std::uint64_t i = 0; i < layout.padded_count(); ++i) {
    T v{};
    if (i < layout.count) {
      const bool held = plan.collective != alg::Collective::allgather ||
                        alg::chunk_owner(static_cast<int>(i / layout.chunk_count), plan.ranks,
                                         layout.chunks) == rank;
      if (held) v = static_cast<T>(input_value(rank, i, modulus));
    }
    std::memcpy(buffer.data() + i * sizeof(T), &v, sizeof(T));
  }
}

template <class T>
void check_typed(const lowering::Plan& plan, int rank, std::span<const std::byte> buffer,
                 CheckReport& report) {
  const lowering::BufferLayout& layout = plan.layout;
  SSIM_CHECK(buffer.size() >= layout.count * sizeof(T),
             "output buffer smaller than the collective's size");
  const Expectation expect(plan, rank);
  for (std::uint64_t i = 0; i < layout.count; ++i) {
    if (!expect.checked(i)) continue;
    T v;
    std::memcpy(&v, buffer.data() + i * sizeof(T), sizeof(T));
    const double actual = static_cast<double>(v);
    const double expected = expect.value(i);
    ++report.checked;
    if (actual != expected) {
      if (report.wrong++ == 0) {
        report.first_rank = rank;
        report.first_element = i;
        report.expected = expected;
        report.actual = actual;
      }
    }
  }
}

template <class F>
decltype(auto) dispatch(lowering::DType dtype, F&& f) {
  switch (dtype) {
    case lowering::DType::float32:
      return f(float{});
    case lowering::DType::float64:
      return f(double{});
    case lowering::DType::int32:
      return f(std::int32_t{});
    case lowering::DType::int64:
      return f(std::int64_t{});
    case lowering::DType::float16:
      return f(Half{});
    case lowering::DType::bfloat16:
      return f(BFloat16{});
  }
  SSIM_CHECK(false, "unknown dtype");
  return f(float{});
}

// Expected values are integers; print integral values without a trailing ".000000".
std::string number(double v) {
  if (std::isfinite(v) && std::fabs(v) < 1e15 && v == std::trunc(v)) {
    return std::to_string(static_cast<long long>(v));
  }
  return std::to_string(v);
}

}  // namespace

double input_value(int rank, std::uint64_t element, std::uint64_t modulus) {
  const std::uint64_t j = element % kPeriod;
  return static_cast<double>((static_cast<std::uint64_t>(rank) + 1) * (j + 1) % modulus + 1);
}

double input_value(int rank, std::uint64_t element) { return input_value(rank, element, kModulus); }

std::uint64_t exact_integer_limit(lowering::DType dtype) {
  switch (dtype) {
    case lowering::DType::float16:
      return std::uint64_t{1} << 11;
    case lowering::DType::bfloat16:
      return std::uint64_t{1} << 8;
    case lowering::DType::float32:
      return std::uint64_t{1} << 24;
    case lowering::DType::int32:
      return (std::uint64_t{1} << 31) - 1;
    case lowering::DType::float64:
      return std::uint64_t{1} << 53;
    case lowering::DType::int64:
      return (std::uint64_t{1} << 63) - 1;
  }
  return 0;
}

std::uint64_t value_modulus(lowering::DType dtype, int ranks) {
  if (ranks < 1) throw InputError("need at least 1 rank, got " + std::to_string(ranks));
  const std::uint64_t limit = exact_integer_limit(dtype);
  const std::uint64_t modulus = std::min(kModulus, limit / static_cast<std::uint64_t>(ranks));
  if (modulus < 2) {
    throw InputError(std::string(to_string(dtype)) + " holds every integer only up to " +
                     std::to_string(limit) + ", so the exact check allows at most " +
                     std::to_string(limit / 2) + " ranks (inputs 1 and 2), got " +
                     std::to_string(ranks) + "; use a wider type (-d float32)");
  }
  return modulus;
}

void fill_input(const lowering::Plan& plan, int rank, std::span<std::byte> buffer) {
  dispatch(plan.layout.dtype, [&](auto t) { fill_typed<decltype(t)>(plan, rank, buffer); });
}

void check_output(const lowering::Plan& plan, int rank, std::span<const std::byte> buffer,
                  CheckReport& report) {
  dispatch(plan.layout.dtype,
           [&](auto t) { check_typed<decltype(t)>(plan, rank, buffer, report); });
}

std::string CheckReport::to_string() const {
  if (ok()) return "ok: " + std::to_string(checked) + " elements checked";
  return std::to_string(wrong) + " of " + std::to_string(checked) +
         " elements wrong; first: rank " + std::to_string(first_rank) + " element " +
         std::to_string(first_element) + " expected " + number(expected) + " got " + number(actual);
}

HostRunResult run_on_host(const lowering::Plan& plan, const HostRunOptions& options) {
  if (!options.start_delay.empty() && static_cast<int>(options.start_delay.size()) != plan.ranks) {
    throw InputError("start delays: need one per rank (" + std::to_string(plan.ranks) + "), got " +
                     std::to_string(options.start_delay.size()));
  }
  for (const Seconds& d : options.start_delay) {
    if (d.value < 0) throw InputError("start delays must be >= 0");
  }
  SSIM_CHECK(static_cast<int>(plan.rank_plans.size()) == plan.ranks,
             "plan needs one rank plan per rank");
  return dispatch(plan.layout.dtype, [&](auto t) { return run_typed<decltype(t)>(plan, options); });
}

HostRunResult run_on_host(const alg::Schedule& schedule, std::uint64_t bytes, lowering::DType dtype,
                          const HostRunOptions& options) {
  return run_on_host(lowering::lower(schedule, bytes, dtype), options);
}

}  // namespace ssim::gpu

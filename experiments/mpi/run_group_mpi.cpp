// The MPI run group (experiments/runner/run_group.hpp), compiled only when CMake finds MPI.
//
// Protocol (MPI_COMM_WORLD, rank 0 = leader; every message but ASSIGN is JSON as MessagePack,
// which carries runner/journal.hpp's JSON of a run exactly and parses faster than its text):
//   helper -> 0  HELLO   {"slots":S, "fingerprint":F} ready for S runs at a time
//                        {"slots":0}                  nothing to do (--dry-run)
//                        {"slots":0, "error":E}       could not load the experiment
//   0 -> helper  ASSIGN  one int64 per free slot: a run index, or -1 (the slot closes)
//   helper -> 0  RESULT  {"run":r, "seconds":s, "result":{...}} or {"run":r, "error":E};
//                        each one frees its slot, which rank 0 answers with one ASSIGN
// Rank 0 waits for every HELLO before any run starts (start), checks the fingerprints, then hands
// out runs (poll). A helper of J threads asks for S = 2J runs at a time: each thread has its next
// run queued while it runs one, so no thread waits for a round trip to rank 0 between runs, which
// may take a few milliseconds each. A helper ends once all its S slots are closed, so it never has
// a run in flight when it leaves; rank 0 ends once every helper has said HELLO and had all its
// slots closed.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "experiments/runner/journal.hpp"
#include "experiments/runner/run_group.hpp"

namespace ssim::experiments {
namespace {

constexpr int kHello = 1;
constexpr int kAssign = 2;
constexpr int kResult = 3;

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw InternalError(std::string(what) + ": " + std::string(text, static_cast<std::size_t>(len)));
}

using Bytes = std::vector<std::uint8_t>;

void send_message(const nlohmann::json& message, int dest, int tag) {
  const Bytes bytes = nlohmann::json::to_msgpack(message);
  check_mpi(
      MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD),
      "MPI_Send");
}

// Receives the message `status` announces (from MPI_Probe or MPI_Iprobe).
nlohmann::json recv_message(const MPI_Status& status) {
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  Bytes bytes(static_cast<std::size_t>(count));
  check_mpi(MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Recv");
  return nlohmann::json::from_msgpack(bytes);
}

void send_assign(std::int64_t run, int dest) {
  check_mpi(MPI_Send(&run, 1, MPI_INT64_T, dest, kAssign, MPI_COMM_WORLD), "MPI_Send");
}

// The runs a helper rank does, on its threads; the calling (MPI) thread feeds and drains it.
class LocalPool {
 public:
  LocalPool(const Experiment& e, int threads) : e_(e) {
    for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { work(); });
  }
  ~LocalPool() {
    {
      const std::lock_guard lock(mutex_);
      closed_ = true;
    }
    more_work_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void add(std::size_t run) {
    {
      const std::lock_guard lock(mutex_);
      work_.push_back(run);
    }
    more_work_.notify_one();
  }
  // The RESULT messages of the runs finished since the last call; waits up to `wait` for one.
  std::vector<Bytes> finished(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    if (done_.empty()) more_done_.wait_for(lock, wait);
    std::vector<Bytes> out(std::make_move_iterator(done_.begin()),
                           std::make_move_iterator(done_.end()));
    done_.clear();
    return out;
  }

 private:
  void work() {
    while (true) {
      std::size_t run = 0;
      {
        std::unique_lock lock(mutex_);
        more_work_.wait(lock, [&] { return closed_ || !work_.empty(); });
        if (work_.empty()) return;
        run = work_.front();
        work_.pop_front();
      }
      nlohmann::json message{{"run", run}};
      const auto start = std::chrono::steady_clock::now();
      try {
        const sim::SimulationResult r = execute_run(e_, run, 1);
        message["seconds"] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        message["result"] = run_result_json(r);
      } catch (const std::exception& ex) {
        message["error"] = ex.what();
      }
      Bytes text = nlohmann::json::to_msgpack(message);
      {
        const std::lock_guard lock(mutex_);
        done_.push_back(std::move(text));
      }
      more_done_.notify_one();
    }
  }

  const Experiment& e_;
  std::mutex mutex_;
  std::condition_variable more_work_, more_done_;
  std::deque<std::size_t> work_;
  std::vector<Bytes> done_;  // RESULT messages
  bool closed_ = false;
  std::vector<std::thread> threads_;
};

class MpiRunGroup final : public RunGroup, public RunPeers {
 public:
  MpiRunGroup(int rank, int size)
      : rank_(rank), size_(size), helpers_(static_cast<std::size_t>(size)) {}

  ~MpiRunGroup() override {
    try {
      if (rank_ == 0) stop_everyone();
    } catch (const std::exception&) {
      // Helpers that cannot be told to stop would wait forever: the last resort.
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  RunPeers* peers() override { return rank_ == 0 && size_ > 1 ? this : nullptr; }

  void serve(const Experiment& e, int jobs) override {
    SSIM_CHECK(rank_ != 0, "rank 0 leads, it does not serve");
    try {
      serve_runs(e, jobs);
    } catch (const std::exception& ex) {
      // Rank 0 waits for this rank's runs: the last resort is to end the whole job.
      std::cerr << "stragglesim run: rank " << rank_ << " of " << size_ << ": " << ex.what() << "\n"
                << std::flush;
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }

  void decline(const std::string& why) override {
    SSIM_CHECK(rank_ != 0, "rank 0 leads, it does not decline");
    nlohmann::json hello{{"slots", 0}};
    if (!why.empty()) hello["error"] = why;
    send_message(hello, 0, kHello);
  }

  void serve_runs(const Experiment& e, int jobs) {
    if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    int open = 2 * jobs;
    send_message({{"slots", open}, {"fingerprint", experiment_fingerprint(e)}}, 0, kHello);
    LocalPool pool(e, jobs);
    // Results on their way to rank 0: sent without blocking, so that this thread never spins in
    // MPI_Send (a large message waits for rank 0's receive) while the runs need the cores.
    std::deque<std::pair<Bytes, MPI_Request>> sending;
    auto sent = [&] {
      while (!sending.empty()) {
        int flag = 0;
        check_mpi(MPI_Test(&sending.front().second, &flag, MPI_STATUS_IGNORE), "MPI_Test");
        if (!flag) return;
        sending.pop_front();
      }
    };
    while (open > 0) {
      sent();
      int flag = 0;
      MPI_Status status;
      check_mpi(MPI_Iprobe(0, kAssign, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
      if (flag) {
        std::int64_t run = -1;
        check_mpi(MPI_Recv(&run, 1, MPI_INT64_T, 0, kAssign, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
        if (run < 0) {
          --open;
        } else {
          SSIM_CHECK(static_cast<std::size_t>(run) < e.run_count(),
                     "rank 0 hands out runs of this experiment");
          pool.add(static_cast<std::size_t>(run));
        }
        continue;
      }
      for (Bytes& message : pool.finished(std::chrono::milliseconds(1))) {
        sending.emplace_back(std::move(message), MPI_REQUEST_NULL);
        Bytes& b = sending.back().first;
        check_mpi(MPI_Isend(b.data(), static_cast<int>(b.size()), MPI_BYTE, 0, kResult,
                            MPI_COMM_WORLD, &sending.back().second),
                  "MPI_Isend");
      }
    }
    for (auto& [bytes, request] : sending)
      check_mpi(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
  }

  void start(const Experiment& e) override {
    const std::string fingerprint = experiment_fingerprint(e);
    for (int waiting = size_ - 1; waiting > 0; --waiting) {
      MPI_Status status;
      check_mpi(MPI_Probe(MPI_ANY_SOURCE, kHello, MPI_COMM_WORLD, &status), "MPI_Probe");
      const int from = status.MPI_SOURCE;
      const nlohmann::json message = recv_message(status);
      hello(from, message);
      const std::string who = "rank " + std::to_string(from) + " of " + std::to_string(size_);
      if (message.contains("error")) {
        throw InputError(who +
                         " could not load the experiment: " + message["error"].get<std::string>());
      }
      if (message.value("fingerprint", "") != fingerprint) {
        throw InputError(who + " loaded another experiment than rank 0 (fingerprint " +
                         message.value("fingerprint", "none") + ", not " + fingerprint +
                         "): give every rank the same YAML, flags and stragglesim version");
      }
    }
  }

  bool poll(const Hooks& hooks) override {
    // Free slots (new, or whose answer a throwing hook cut short) first.
    for (std::size_t r = 1; r < helpers_.size(); ++r) {
      while (helpers_[r].open > helpers_[r].in_flight) assign(static_cast<int>(r), hooks.take());
    }
    while (true) {
      int flag = 0;
      MPI_Status status;
      check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kResult, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
      if (!flag) break;
      const int from = status.MPI_SOURCE;
      const nlohmann::json message = recv_message(status);
      --helpers_[static_cast<std::size_t>(from)].in_flight;
      const std::size_t run = message["run"].get<std::size_t>();
      if (message.contains("error")) {
        hooks.failed(run, message["error"].get<std::string>());
      } else {
        hooks.done(run, run_result_from_json(message["result"]), message["seconds"].get<double>(),
                   "rank " + std::to_string(from));
      }
      assign(from, hooks.take());
    }
    return busy();
  }

 private:
  struct Helper {
    bool said_hello = false;
    int open = 0;  // slots not yet closed
    int in_flight = 0;
  };

  void hello(int from, const nlohmann::json& message) {
    Helper& h = helpers_[static_cast<std::size_t>(from)];
    h.said_hello = true;
    h.open = message.value("slots", 0);
  }

  void assign(int to, std::optional<std::size_t> run) {
    Helper& h = helpers_[static_cast<std::size_t>(to)];
    if (run) {
      send_assign(static_cast<std::int64_t>(*run), to);
      ++h.in_flight;
    } else {
      send_assign(-1, to);
      --h.open;
    }
  }

  bool busy() const {
    for (std::size_t r = 1; r < helpers_.size(); ++r) {
      if (!helpers_[r].said_hello || helpers_[r].open > 0) return true;
    }
    return false;
  }

  // Rank 0 leaving: every slot still open is closed, answering HELLOs and RESULTs (whose runs
  // are discarded) until no helper waits for an answer.
  void stop_everyone() {
    for (std::size_t r = 1; r < helpers_.size(); ++r) {
      Helper& h = helpers_[r];
      while (h.said_hello && h.open > h.in_flight) assign(static_cast<int>(r), std::nullopt);
    }
    while (busy()) {
      MPI_Status status;
      check_mpi(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status), "MPI_Probe");
      const int from = status.MPI_SOURCE;
      const nlohmann::json message = recv_message(status);
      if (status.MPI_TAG == kHello) {
        hello(from, message);
        while (helpers_[static_cast<std::size_t>(from)].open > 0) assign(from, std::nullopt);
      } else {
        --helpers_[static_cast<std::size_t>(from)].in_flight;
        assign(from, std::nullopt);
      }
    }
  }

  int rank_, size_;
  std::vector<Helper> helpers_;  // by rank; [0] unused
};

}  // namespace

std::unique_ptr<RunGroup> join_mpi_run_group() {
  // A world of one: nothing to share, MPI stays untouched.
  if (launcher_world_size() == 1) return nullptr;
  int provided = MPI_THREAD_SINGLE;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw InputError(
        "this MPI library gives no MPI_THREAD_FUNNELED, which `stragglesim run` under mpirun "
        "needs");
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::make_unique<MpiRunGroup>(rank, size);
}

}  // namespace ssim::experiments

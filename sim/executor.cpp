// The executor's facade: Executor::run sends each run to the evaluation that costs it (the
// dataflow pass, dataflow_pass.cpp; the event run, event_run.cpp; the shared-device model).

#include "sim/executor.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "algorithms/nccl_options.hpp"
#include "algorithms/protocol.hpp"
#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "sim/event_run.hpp"
#include "sim/nccl_tuner.hpp"
#include "sim/shared_device.hpp"

namespace ssim::sim {

Executor::Executor(const alg::Schedule& schedule, const topo::Topology& topology,
                   NetworkConfig network, Bytes bytes)
    : schedule_(schedule),
      network_(network),
      bytes_(bytes),
      routes_(topology,
              network.kind == NetworkKind::flow ? LinkLists::all : LinkLists::short_only) {
  if (schedule.ranks != topology.gpu_count()) {
    throw InputError("schedule has " + std::to_string(schedule.ranks) + " ranks but topology " +
                     topology.name + " has " + std::to_string(topology.gpu_count()) +
                     " GPUs (they must be equal)");
  }
  if (network.gamma.value < 0 || !std::isfinite(network.gamma.value)) {
    throw InputError("gamma must be a finite number of seconds per byte >= 0");
  }
  SSIM_CHECK(schedule.chunks > 0, "schedule without chunks");
  // A schedule that names its protocol (its `proto` option) runs as an NCCL kernel and pays what
  // the protocol costs on this machine; any other is costed by its routes alone.
  // A network-wide protocol (`network: {protocol: ...}`) makes every other schedule NCCL's
  // send/recv under it.
  std::optional<alg::Protocol> proto = network.p2p_protocol;
  const std::optional<alg::Protocol> named = alg::named_protocol(schedule);
  if (named) proto = named;
  if (proto) {
    network_.protocol = ProtocolTiming::of(network.protocols.of(*proto), topology.gpus_per_node);
    // Pipelined steps are an NCCL collective kernel's (its channels' steps in flight across
    // rounds). A schedule run as NCCL's send/recv under a network-wide protocol issues each
    // round as its own group of calls (gpu_backend/cuda/executor.hpp: one ncclGroupStart ..
    // ncclGroupEnd and the apply per round), so its rounds keep the per-round rule.
    network_.protocol.pipelined = network.pipelined_kernels && named.has_value();
    // NCCL's Ring kernel's transfers are its channels (one each per step), each at most the
    // ring graph's per-channel bandwidth (sim/protocol.hpp "channel"). Not NVLS kernels', whose
    // transfers carry several channels' shares, nor NCCL's send/recv (a network-wide
    // protocol), which spreads one peer's transfer over several channels; nor Tree's and
    // CollNet's, whose graphs have speeds of their own (NCCL's search raises a tree graph's
    // intra-node speed up to twice its inter-node one; perChMaxTreeBw): not modelled.
    const int channels = named ? alg::schedule_channels(schedule) : 1;
    if (named && alg::runs_ring_kernel(schedule)) {
      const double wire = network.protocols.of(*proto).wire;
      network_.protocol.cap_channel(nccl_channel_bandwidth(topology), wire);
      // LL's bus bandwidth is at most llMaxBw whatever the channels: a ring's bus bandwidth is
      // C channels' data rate, so each channel moves at most llMaxBw / C.
      if (*proto == alg::Protocol::ll) {
        network_.protocol.cap_channel(wire * nccl_ll_max_bandwidth(topology) / channels, wire);
      }
    }
    // The alpha-beta model's one send port per rank serves an NCCL kernel's C channels one
    // after another, so what caps one channel caps the port at C times that (a cap per transfer
    // would make C channels C times slower than one; LL128's 36.7 GB/s did so before).
    if (named && network.kind == NetworkKind::alphabeta) network_.protocol.scale_cap(channels);
    // NCCL's NVLS_TREE kernel's bus bandwidth is at most its heads x perChMaxNVLSTreeBw
    // (sim::nccl_nvls_tree_bandwidth): the reductions in its nodes' switches, which every byte
    // passes once, go no faster than that algorithm bandwidth. Both step rules.
    if (named && alg::runs_nvls_tree_kernel(schedule)) {
      const double cap = nccl_nvls_tree_bandwidth(topology);
      if (std::isfinite(cap)) network_.protocol.switch_bandwidth = cap;
    }
    // A pipelined NVLS kernel pays NVLS's per-step latencies (sim/protocol.hpp); which kernels
    // are NVLS's is the registry's to say (AlgorithmInfo::nvls_kernel).
    if (network_.protocol.pipelined && alg::runs_nvls_kernel(schedule)) {
      network_.protocol.switch_step = kNcclNvlsStep / 2;
      network_.protocol.step_inter = kNcclNvlsTreeNetStep;
    }
  }
}

Executor::~Executor() = default;

namespace {

// Passes rounds on and refuses one with in-network reductions (alg::SwitchReduce): the alpha-beta
// dataflow pass and the flow model cost them; the alpha-beta event engine and the shared-device
// model
// cost point-to-point transfers only.
class PointToPointRounds final : public RoundSource {
 public:
  PointToPointRounds(RoundSource& inner, std::string model)
      : inner_(inner), model_(std::move(model)) {}
  int ranks() const override { return inner_.ranks(); }
  int chunks() const override { return inner_.chunks(); }
  const alg::Round* next() override {
    const alg::Round* r = inner_.next();
    if (r && !r->switch_reduces.empty()) {
      throw InputError("round " + std::to_string(index_) +
                       " of the schedule has in-network reductions (switch_reduces), which the " +
                       model_ + " does not cost (the alphabeta and flow network models do)");
    }
    ++index_;
    return r;
  }

 private:
  RoundSource& inner_;
  std::string model_;
  std::size_t index_ = 0;
};

// Stands between a pipelined NCCL kernel's run and the caller's TimelineSink. Such a run
// finishes a rank's transfers out of round order (a step of one channel lands before an
// earlier step of another; in the alpha-beta pass a receive from a nearer peer can be ready
// before one from a farther peer posted earlier), so it breaks the sink's promise of sides in
// nondecreasing ready time per (rank, side). This holds every side and, when the run is over
// (release), hands them on sorted by (ready time, round, index, side): nondecreasing ready time
// for every (rank, side), ties in schedule order. Memory: every side of the run, O(transfers)
// (about 100 bytes a side). Rate changes of the flow model pass straight through as they come
// (in time order): a sink keeps them apart from the transfer sides (ChromeTraceWriter turns
// them into link counters, TraceCounter counts them per link).
class ReadyOrderSink final : public TimelineSink {
 public:
  explicit ReadyOrderSink(TimelineSink& out) : out_(out) {}
  void transfer_side(const TransferRecord& record, Side side) override {
    held_.push_back({record, side});
  }
  void flow_rate(std::span<const int> links, double old_rate, double new_rate,
                 Seconds now) override {
    out_.flow_rate(links, old_rate, new_rate, now);
  }
  void release() {
    std::sort(held_.begin(), held_.end(), [](const Held& a, const Held& b) {
      return std::tuple(ready(a), a.record.round, a.record.index, a.side) <
             std::tuple(ready(b), b.record.round, b.record.index, b.side);
    });
    std::vector<Held> held = std::move(held_);
    held_ = {};
    for (const Held& h : held) out_.transfer_side(h.record, h.side);
  }

 private:
  struct Held {
    TransferRecord record;
    Side side;
  };
  static double ready(const Held& h) {
    return (h.side == Side::send ? h.record.src_ready : h.record.dst_ready).value;
  }

  TimelineSink& out_;
  std::vector<Held> held_;
};

}  // namespace

IterationResult Executor::run(std::span<const Seconds> arrival, const RunOptions& options) {
  ScheduleRounds rounds(schedule_);
  return run(rounds, arrival, options);
}

IterationResult Executor::run(RoundSource& source, std::span<const Seconds> arrival,
                              const RunOptions& options) {
  SSIM_CHECK(source.ranks() == schedule_.ranks && source.chunks() == schedule_.chunks,
             "streamed rounds of another schedule");
  // A trace takes each rank's transfer sides in ready order (TimelineSink); a pipelined NCCL
  // kernel finishes them out of it, so its sides are held and handed on in that order when the
  // run is over (ReadyOrderSink).
  if (options.trace && network_.protocol.active && network_.protocol.pipelined) {
    ReadyOrderSink ordered(*options.trace);
    RunOptions held = options;
    held.trace = &ordered;
    IterationResult result = dispatch(source, arrival, held);
    ordered.release();
    return result;
  }
  return dispatch(source, arrival, options);
}

IterationResult Executor::dispatch(RoundSource& source, std::span<const Seconds> arrival,
                                   const RunOptions& options) {
  if (routes_.topology().shared_device) {
    PointToPointRounds rounds(source, "shared-device model");
    return run_shared_device(rounds, routes_.topology(), bytes_, arrival, options);
  }
  // A pipelined NCCL kernel's run (dataflow_pass.cpp) is the pass's alone; the alpha-beta
  // event engine cross-checks the per-round rule, so the pass costs it either way.
  if (network_.kind == NetworkKind::alphabeta &&
      (!options.use_event_engine || (network_.protocol.active && network_.protocol.pipelined)))
    return run_alphabeta(source, routes_, network_.gamma, bytes_, arrival, options,
                         network_.protocol);
  if (!events_)
    events_ =
        std::make_unique<EventRun>(schedule_.ranks, schedule_.chunks, routes_, network_, bytes_);
  // The flow model costs in-network reductions; the alpha-beta event engine (a cross-check of
  // the dataflow pass) does not.
  if (network_.kind == NetworkKind::flow) return events_->run(source, arrival, options);
  PointToPointRounds rounds(source, "event engine");
  return events_->run(rounds, arrival, options);
}

std::vector<std::vector<std::optional<Seconds>>> round_ends(const IterationResult& result,
                                                            std::size_t rounds) {
  std::vector<std::vector<std::optional<Seconds>>> ends(
      static_cast<std::size_t>(result.ranks), std::vector<std::optional<Seconds>>(rounds));
  auto note = [&](int rank, std::int32_t round, Seconds t) {
    SSIM_CHECK(
        rank >= 0 && rank < result.ranks && round >= 0 && static_cast<std::size_t>(round) < rounds,
        "timeline record outside the run's ranks or rounds");
    std::optional<Seconds>& e =
        ends[static_cast<std::size_t>(rank)][static_cast<std::size_t>(round)];
    if (!e || e->value < t.value) e = t;
  };
  for (const TransferRecord& t : result.timeline) {
    note(t.src, t.round, t.end);
    note(t.dst, t.round, t.done);
  }
  return ends;
}

}  // namespace ssim::sim

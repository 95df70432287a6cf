#include "sim/training.hpp"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include "algorithms/nccl_options.hpp"
#include "common/checked.hpp"
#include "common/cancel.hpp"
#include "common/error.hpp"
#include "common/stats.hpp"
#include "sim/executor.hpp"
#include "sim/nccl_tuner.hpp"

namespace ssim::sim {

std::vector<Bucket> make_buckets(const std::vector<TrainingLayer>& layers,
                                 std::uint64_t bytes_per_param, Bytes cap) {
  if (layers.empty()) throw InputError("the model has no layers");
  if (bytes_per_param == 0) throw InputError("gradient bytes per parameter must be >= 1");
  std::uint64_t total = 0;
  for (const TrainingLayer& l : layers) {
    total = checked_add(total, checked_mul(l.params, bytes_per_param, "the model's gradient bytes"),
                        "the model's gradient bytes");
  }
  if (total == 0) throw InputError("the model has no parameters (every layer has params 0)");
  if (cap.value == 0) throw InputError("bucket cap must be > 0");
  if (cap.value > total) {
    throw InputError("bucket cap " + format_bytes(cap) + " is larger than the model's gradients (" +
                     format_bytes(Bytes{total}) + ")");
  }
  std::vector<Bucket> buckets;
  double backward = 0;  // backward time done so far
  std::optional<Bucket> open;
  for (int i = static_cast<int>(layers.size()) - 1; i >= 0; --i) {
    const TrainingLayer& l = layers[static_cast<std::size_t>(i)];
    backward += l.backward.value;
    if (l.params == 0) continue;
    if (!open) open = Bucket{i, i, Bytes{0}, Seconds{0}};
    open->first_layer = i;
    open->bytes.value += l.params * bytes_per_param;
    open->ready = Seconds{backward};
    if (open->bytes.value >= cap.value) {
      buckets.push_back(*open);
      open.reset();
    }
  }
  if (open) buckets.push_back(*open);
  return buckets;
}

std::string SyncSpec::describe() const {
  switch (mode) {
    case SyncMode::synchronous:
      return "synchronous";
    case SyncMode::grouped:
      return "grouped(groups=" + std::to_string(groups) + ",every=" + std::to_string(every) + ")";
    case SyncMode::local_sgd:
      return "local_sgd(every=" + std::to_string(every) + ")";
    case SyncMode::exclude_late:
      return "exclude_late(late=" + std::to_string(late) + ",every=" + std::to_string(every) + ")";
  }
  return "?";
}

namespace {

void check_config(const TrainingConfig& c) {
  const int n = c.topology.gpu_count();
  if (n < 2)
    throw InputError("training needs at least 2 ranks, the topology has " + std::to_string(n));
  if (c.layers.empty()) throw InputError("the model has no layers");
  for (const TrainingLayer& l : c.layers) {
    if (!(l.forward.value > 0) || !std::isfinite(l.forward.value))
      throw InputError("layer " + l.name + ": forward time must be > 0");
    if (!(l.backward.value > 0) || !std::isfinite(l.backward.value))
      throw InputError("layer " + l.name + ": backward time must be > 0");
  }
  if (c.algorithms.empty()) throw InputError("no algorithm to train with");
  if (c.modes.empty()) throw InputError("no synchronization mode to train with");
  for (const SyncSpec& m : c.modes) {
    if (m.every < 1) throw InputError(m.describe() + ": every must be >= 1");
    if (m.mode == SyncMode::grouped && (m.groups < 2 || n % m.groups != 0)) {
      throw InputError(m.describe() + ": groups must be >= 2 and divide the " + std::to_string(n) +
                       " ranks");
    }
    if (m.mode == SyncMode::exclude_late) {
      if (m.late < 0 || m.late > n - 2) {
        throw InputError(m.describe() + ": late must be in [0, " + std::to_string(n - 2) +
                         "] (at least 2 of the " + std::to_string(n) + " ranks reduce)");
      }
      if (c.policy == StragglerPolicy::eager || !c.adaptive_fallbacks.empty()) {
        throw InputError(m.describe() +
                         ": the excluded ranks are predicted before the step; policies eager and "
                         "adaptive are not supported with it (oracle, previous or fixed)");
      }
      if (c.policy == StragglerPolicy::fixed && m.late > 1)
        throw InputError(m.describe() + ": policy fixed names one rank, late must be 1");
    }
  }
  if (c.steps < 1) throw InputError("steps must be >= 1");
  if (c.samples_per_gpu < 1) throw InputError("samples per GPU must be >= 1");
  if (!(c.optimizer.value >= 0) || !std::isfinite(c.optimizer.value))
    throw InputError("optimizer time must be >= 0");
  if (c.cluster_gpus < 0) throw InputError("cluster GPUs must be >= 0");
  for (const std::string& name : c.adaptive_fallbacks) {
    const alg::AlgorithmInfo& info = alg::find_algorithm(name);
    if (info.straggler_aware)
      throw InputError("adaptive fallback " + name + " must be a baseline, not straggler-aware");
  }
  if (c.detection && (!(c.detection->value >= 0) || !std::isfinite(c.detection->value)))
    throw InputError("eager detection latency must be >= 0");
  if (c.policy == StragglerPolicy::fixed && !c.straggler)
    throw InputError("prediction policy fixed needs a rank");
  if (c.straggler && (*c.straggler < 0 || *c.straggler >= n))
    throw InputError("predicted straggler rank " + std::to_string(*c.straggler) +
                     " is out of range");
}

// `groups` copies of `group` (a schedule on n / groups ranks) side by side on n ranks: group g's
// rank r is rank g * m + r, and round i holds round i of every group. Groups share no rank, so
// each runs exactly as alone, sharing only the network.
alg::Schedule side_by_side(const alg::Schedule& group, int groups) {
  const int m = group.ranks;
  alg::Schedule s =
      alg::Schedule::make(group.collective, group.algorithm, m * groups, group.chunks);
  for (const alg::Round& round : group.rounds) {
    alg::Round& r = s.add_round(round.phase);
    for (int g = 0; g < groups; ++g) {
      for (const alg::Transfer& t : round.transfers)
        r.add(g * m + t.src, g * m + t.dst, t.chunk_begin, t.chunk_end, t.op);
    }
  }
  return s;
}

// Whether the mode averages parameters every `every` steps (exclude_late with late 0 excludes
// nobody and needs none).
bool average_needed(const SyncSpec& m) {
  return m.mode != SyncMode::synchronous && !(m.mode == SyncMode::exclude_late && m.late == 0);
}

// What one pass over the steps measured (the delayed job or its baseline).
struct PassTotals {
  double last_end = 0;
  std::vector<double> idle_sum, idle_max, delay_sum;
  double exposed_sum = 0;
  int adaptive_runs = 0;     // collectives that chose under the adaptive policy
  int fallback_runs = 0;     // of those, the ones that ran a fallback
  std::vector<int> sat_out;  // per rank, steps it sat out (exclude_late)
  int steps = 0;             // steps run (fewer than configured when `until` ended the pass)
};

// One collective on every group of ranks (one group: all ranks), with the straggler-aware
// algorithms' straggler played, in each group, by the rank the policy predicts there. Under the
// adaptive policy (c.adaptive_fallbacks) a straggler-aware algorithm competes with the
// fallbacks (sim::AdaptiveChoice, as in run_simulation) on the arrivals predicted from this
// collective's previous run: each group's predicted rank late by the lead it had there over
// the group's second-to-last; one algorithm runs in every group. Under eager each group starts
// at eager_start's times within the group, the group's last arrival playing the straggler.
class Collective {
 public:
  // `group` is the schedule of one group; `groups` of them run side by side. `pad_to` > the
  // group's ranks (one group): the group runs on pad_to ranks, the others idle (exclude_late;
  // run() then takes the group's members).
  Collective(const TrainingConfig& c, const alg::Schedule& group, int groups, Bytes bytes,
             int pad_to = 0)
      : c_(c), group_(group), groups_(groups), m_(group.ranks) {
    if (groups > 1) merged_ = side_by_side(group, groups);
    if (groups == 1 && pad_to > group.ranks) {
      merged_ = alg::Schedule::make(group.collective, group.algorithm, pad_to, group.chunks);
      merged_.rounds = group.rounds;
      padded_ = true;
    }
    const alg::Schedule& run = groups > 1 || padded_ ? merged_ : group_;
    NetworkConfig network{c.network, c.gamma};
    network.p2p_protocol = c.protocol;
    network.pipelined_kernels = c.pipelined_kernels;
    executor_ = std::make_unique<Executor>(run, c.topology, network, bytes);
    previous_.assign(static_cast<std::size_t>(groups), -1);
    stragglers_.assign(static_cast<std::size_t>(groups), 0);
    if (group.straggler && !c.adaptive_fallbacks.empty()) {
      std::function<alg::Schedule(alg::Schedule)> arrange;
      if (groups > 1) arrange = [groups](alg::Schedule s) { return side_by_side(s, groups); };
      adaptive_ = std::make_unique<AdaptiveChoice>(c.adaptive_fallbacks, group.algorithm, m_,
                                                   arrange, c.topology, network, bytes);
    }
    eager_ = c.policy == StragglerPolicy::eager && group.straggler.has_value();
    if (eager_) detection_ = c.detection.value_or(default_detection(c.topology));
  }

  // Per physical rank, when it is done; `arrival` per physical rank.
  const std::vector<Seconds>& run(const std::vector<Seconds>& arrival) {
    options_.rank_map.clear();
    ran_ = -1;
    if (group_.straggler) {
      SSIM_CHECK(!padded_, "a padded collective runs with its members");
      options_.rank_map.resize(arrival.size());
      if (eager_) start_.assign(arrival.begin(), arrival.end());
      for (int g = 0; g < groups_; ++g) {
        const std::span<const Seconds> mine(arrival.data() + g * m_, static_cast<std::size_t>(m_));
        const int last = latest_ranks(mine, 1).back();
        const std::size_t ug = static_cast<std::size_t>(g);
        int predicted = last;
        if (c_.policy != StragglerPolicy::oracle && c_.policy != StragglerPolicy::eager) {
          // fixed: the given rank where it is in the group, else the group's last; previous:
          // the group's last arrival the previous time, the first time as fixed.
          const int given = c_.straggler.value_or(c_.topology.gpu_count() - 1) - g * m_;
          predicted = given >= 0 && given < m_ ? given : m_ - 1;
          if (c_.policy == StragglerPolicy::previous && previous_[ug] >= 0)
            predicted = previous_[ug];
        }
        previous_[ug] = last;
        stragglers_[ug] = g * m_ + predicted;
        const std::vector<int> local = straggler_rank_map(group_, predicted);
        for (int r = 0; r < m_; ++r)
          options_.rank_map[static_cast<std::size_t>(g * m_ + r)] = g * m_ + local[r];
        if (eager_) {
          const std::vector<Seconds> s = eager_start(mine, std::vector<int>{predicted}, detection_);
          std::copy(s.begin(), s.end(), start_.begin() + g * m_);
        }
        if (adaptive_) {
          if (predicted_.empty()) predicted_.resize(arrival.size());
          const std::span<const Seconds> before =
              last_arrival_.empty() ? std::span<const Seconds>{}
                                    : std::span<const Seconds>(last_arrival_.data() + g * m_,
                                                               static_cast<std::size_t>(m_));
          const std::vector<Seconds> p =
              AdaptiveChoice::predicted_arrivals(before, std::vector<int>{predicted}, m_);
          std::copy(p.begin(), p.end(), predicted_.begin() + g * m_);
        }
      }
      if (adaptive_) {
        ran_ = adaptive_->choose(*executor_, options_.rank_map, predicted_);
        last_arrival_.assign(arrival.begin(), arrival.end());
      }
    }
    const std::vector<Seconds>& start = eager_ ? start_ : arrival;
    if (ran_ >= 0) {
      result_ = (*adaptive_)[static_cast<std::size_t>(ran_)].executor->run(start, RunOptions{});
    } else {
      result_ = executor_->run(start, options_);
    }
    return result_.finish;
  }

  // exclude_late: one group of m ranks, `members` (physical, ascending), the `idle` ones
  // (physical) sitting out; m + idle = the schedule's ranks. A straggler-aware schedule's
  // straggler is predicted within the members as for one group above, `previous` remembering
  // the physical rank (a rank that sat out does not count as predicted: the fallback is used).
  const std::vector<Seconds>& run(const std::vector<Seconds>& arrival, std::span<const int> members,
                                  std::span<const int> idle) {
    SSIM_CHECK(groups_ == 1 && static_cast<int>(members.size()) == m_ &&
                   members.size() + idle.size() == arrival.size(),
               "members and idle ranks must cover the ranks");
    SSIM_CHECK(!eager_ && !adaptive_, "exclude_late runs without eager or adaptive");
    ran_ = -1;
    options_.rank_map.resize(arrival.size());
    std::vector<int> local;
    if (group_.straggler) {
      mine_.resize(members.size());
      for (std::size_t j = 0; j < members.size(); ++j) mine_[j] = arrival[members[j]];
      const int last = latest_ranks(mine_, 1).back();
      auto local_of = [&members](int physical) {
        const auto it = std::find(members.begin(), members.end(), physical);
        return it == members.end() ? -1 : static_cast<int>(it - members.begin());
      };
      int predicted = last;
      if (c_.policy != StragglerPolicy::oracle) {
        const int given = local_of(c_.straggler.value_or(c_.topology.gpu_count() - 1));
        predicted = given >= 0 ? given : m_ - 1;
        if (c_.policy == StragglerPolicy::previous && previous_[0] >= 0) {
          const int p = local_of(previous_[0]);
          if (p >= 0) predicted = p;
        }
      }
      previous_[0] = members[static_cast<std::size_t>(last)];
      stragglers_[0] = members[static_cast<std::size_t>(predicted)];
      local = straggler_rank_map(group_, predicted);
    }
    for (int j = 0; j < m_; ++j) {
      const int r = local.empty() ? j : local[static_cast<std::size_t>(j)];
      options_.rank_map[static_cast<std::size_t>(j)] = members[static_cast<std::size_t>(r)];
    }
    for (std::size_t x = 0; x < idle.size(); ++x)
      options_.rank_map[static_cast<std::size_t>(m_) + x] = idle[x];
    result_ = executor_->run(arrival, options_);
    return result_.finish;
  }

  void reset() {
    std::fill(previous_.begin(), previous_.end(), -1);
    last_arrival_.clear();
  }

  // What the last run() ran: the algorithm or an adaptive fallback, and for a straggler-aware
  // schedule the physical rank that played its straggler in each group (else empty).
  std::string_view ran() const {
    return ran_ >= 0 ? std::string_view((*adaptive_)[static_cast<std::size_t>(ran_)].name)
                     : std::string_view(group_.algorithm);
  }
  std::span<const int> stragglers() const {
    return group_.straggler && ran_ < 0 ? std::span<const int>(stragglers_)
                                        : std::span<const int>{};
  }
  bool ran_fallback() const { return ran_ >= 0; }
  bool adaptive() const { return adaptive_ != nullptr; }

  // The first link the model does not share (alpha-beta only), with the schedule's rank labels.
  std::optional<SharedLink> shared_link() {
    if (c_.network != NetworkKind::alphabeta) return std::nullopt;
    return find_shared_link(groups_ > 1 || padded_ ? merged_ : group_, executor_->routes());
  }

 private:
  const TrainingConfig& c_;
  const alg::Schedule& group_;
  alg::Schedule merged_;
  bool padded_ = false;
  int groups_, m_;
  std::unique_ptr<Executor> executor_;
  std::vector<int> previous_;
  std::vector<int> stragglers_;  // per group, the physical rank predicted in the last run
  std::unique_ptr<AdaptiveChoice> adaptive_;
  std::vector<Seconds> last_arrival_;  // adaptive: the previous run's arrivals
  std::vector<Seconds> predicted_;     // adaptive: the arrivals the choice runs on
  int ran_ = -1;                       // the last run's candidate, -1: the algorithm
  bool eager_ = false;
  Seconds detection_{0};
  std::vector<Seconds> start_;  // eager: when each rank starts
  std::vector<Seconds> mine_;   // exclude_late: the members' arrivals
  RunOptions options_;
  IterationResult result_;
};

// `nccl`'s schedules on every rank, one per choice NCCL makes (sim/nccl_tuner.hpp): NCCL's
// algorithm, protocol and channels for a collective's size on the machine, as run_simulation
// fills them in. Buckets of one choice share its schedule.
class NcclSchedules {
 public:
  NcclSchedules(const topo::Topology& topology, alg::Options options, bool pipelined_steps)
      : topology_(topology),
        request_(topology.gpu_count(), std::move(options)),
        pipelined_(pipelined_steps) {}

  const alg::Schedule& operator()(Bytes size) {
    const alg::Options options =
        request_.schedule_options(nccl_choose(topology_, size, request_, pipelined_));
    auto it = made_.find(options.values());
    if (it == made_.end()) {
      it = made_
               .emplace(options.values(), std::make_unique<alg::Schedule>(alg::generate(
                                              "nccl", topology_.gpu_count(), options)))
               .first;
    }
    return *it->second;
  }

 private:
  const topo::Topology& topology_;
  const alg::NcclRequest request_;  // the options, checked and read once
  const bool pipelined_;             // the run's steps (nccl_choose's pipelined_steps)
  std::map<std::map<std::string, std::string>, std::unique_ptr<alg::Schedule>> made_;
};

class StepModel {
 public:
  // `full`: the algorithm's schedule on every rank; `group`: on one group of the mode (the
  // same schedule for synchronous). `nccl`: NCCL's choice per size for the collectives that
  // span every rank (the buckets when `group` is `full`, the parameter average).
  StepModel(const TrainingConfig& c, const SyncSpec& mode, const alg::Schedule& full,
            const alg::Schedule& group, const std::vector<Bucket>& buckets, Bytes model_bytes,
            NcclSchedules* nccl = nullptr)
      : c_(c), mode_(mode), buckets_(buckets), n_(c.topology.gpu_count()) {
    for (const TrainingLayer& l : c.layers) {
      forward_ += l.forward.value;
      backward_ += l.backward.value;
    }
    excluding_ = mode.mode == SyncMode::exclude_late;
    if (mode.mode != SyncMode::local_sgd) {
      const int groups = mode.mode == SyncMode::grouped ? mode.groups : 1;
      for (const Bucket& b : buckets) {
        const alg::Schedule& s = nccl && group.ranks == n_ ? (*nccl)(b.bytes) : group;
        bucket_.push_back(
            std::make_unique<Collective>(c, s, groups, b.bytes, excluding_ ? n_ : 0));
      }
    }
    if (average_needed(mode)) {
      average_ = std::make_unique<Collective>(c, nccl ? (*nccl)(model_bytes) : full, 1,
                                              model_bytes);
    }
  }

  // exclude_late: the mode's `late` ranks predicted to arrive last at step s sit out
  // (sat_out_, ascending), the others reduce (members_, ascending). Predicted arrival: the
  // start of the step plus forward and backward plus the delay the policy predicts.
  void choose_sat_out(int s, const std::vector<double>& start, const std::vector<double>& delay,
                      const std::vector<double>& previous_delay) {
    const std::size_t un = static_cast<std::size_t>(n_);
    sat_out_.clear();
    if (mode_.late > 0) {
      const bool guess =
          c_.policy == StragglerPolicy::fixed || (c_.policy == StragglerPolicy::previous && s == 0);
      if (guess) {
        // The given rank, then the highest ranks.
        if (c_.straggler) sat_out_.push_back(*c_.straggler);
        for (int r = n_ - 1; static_cast<int>(sat_out_.size()) < mode_.late; --r) {
          if (!c_.straggler || r != *c_.straggler) sat_out_.push_back(r);
        }
      } else {
        predicted_.resize(un);
        const std::vector<double>& d =
            c_.policy == StragglerPolicy::previous ? previous_delay : delay;
        for (std::size_t r = 0; r < un; ++r)
          predicted_[r] = Seconds{start[r] + d[r] + forward_ + backward_};
        sat_out_ = latest_ranks(predicted_, mode_.late);
      }
      std::sort(sat_out_.begin(), sat_out_.end());
    }
    members_.clear();
    std::size_t x = 0;
    for (int r = 0; r < n_; ++r) {
      if (x < sat_out_.size() && sat_out_[x] == r) {
        ++x;
      } else {
        members_.push_back(r);
      }
    }
  }

  // Every step; `delays` null for the job without delays. `on_step` per step when set.
  // `until`, when set, is asked after every step with the step and each rank's end minus the
  // step's end; true ends the pass there (PassTotals::steps says how many ran).
  using Until = std::function<bool(const StepRecord&, std::span<const double>)>;
  PassTotals run(const DelayGenerator* delays,
                 const std::function<void(const StepRecord&)>& on_step, const Until& until = {}) {
    const std::size_t un = static_cast<std::size_t>(n_);
    PassTotals t;
    t.idle_sum.assign(un, 0.0);
    t.idle_max.assign(un, 0.0);
    t.delay_sum.assign(un, 0.0);
    t.sat_out.assign(un, 0);
    std::vector<double> start(un, 0.0), delay(un, 0.0), bwd(un), comm_free(un), end(un);
    std::vector<double> previous_delay(un, 0.0);
    std::vector<Seconds> arrival(un);
    for (auto& b : bucket_) b->reset();
    if (average_) average_->reset();
    const double own = forward_ + backward_ + c_.optimizer.value;
    double previous_end = 0;
    choices_.resize(bucket_.size());
    // What a collective ran, for the step record and the fallback count.
    auto record = [&t](const Collective& col, BucketChoice& out) {
      out.algorithm = col.ran();
      out.stragglers = col.stragglers();
      if (col.adaptive()) {
        ++t.adaptive_runs;
        t.fallback_runs += col.ran_fallback() ? 1 : 0;
      }
    };
    for (int s = 0; s < c_.steps; ++s) {
      cancellation_point();  // the Python binding's KeyboardInterrupt (common/cancel.hpp)
      if (delays) {
        const IterationArrivals a = delays->iteration(s);
        previous_delay.swap(delay);
        for (std::size_t r = 0; r < un; ++r) delay[r] = a.arrival[r].value;
      }
      if (excluding_) {
        choose_sat_out(s, start, delay, previous_delay);
        for (const int r : sat_out_) ++t.sat_out[static_cast<std::size_t>(r)];
      }
      double compute_end = 0;
      for (std::size_t r = 0; r < un; ++r) {
        bwd[r] = start[r] + delay[r] + forward_;
        comm_free[r] = start[r];
        compute_end = std::max(compute_end, bwd[r] + backward_);
      }
      for (std::size_t b = 0; b < bucket_.size(); ++b) {
        for (std::size_t r = 0; r < un; ++r)
          arrival[r] = Seconds{std::max(bwd[r] + buckets_[b].ready.value, comm_free[r])};
        if (excluding_) {
          // The ranks that sit out have no transfer: their comm_free stays.
          const std::vector<Seconds>& finish = bucket_[b]->run(arrival, members_, sat_out_);
          for (const int r : members_)
            comm_free[static_cast<std::size_t>(r)] = finish[static_cast<std::size_t>(r)].value;
        } else {
          const std::vector<Seconds>& finish = bucket_[b]->run(arrival);
          for (std::size_t r = 0; r < un; ++r) comm_free[r] = finish[r].value;
        }
        record(*bucket_[b], choices_[b]);
      }
      for (std::size_t r = 0; r < un; ++r)
        end[r] = std::max(bwd[r] + backward_, comm_free[r]) + c_.optimizer.value;
      const bool averaged = average_ && (s + 1) % mode_.every == 0;
      if (averaged) {
        for (std::size_t r = 0; r < un; ++r) arrival[r] = Seconds{end[r]};
        const std::vector<Seconds>& finish = average_->run(arrival);
        for (std::size_t r = 0; r < un; ++r) end[r] = finish[r].value;
        record(*average_, average_choice_);
      }
      double step_end = 0, idle_sum = 0, idle_max = 0, max_delay = -1;
      int slowest = 0;
      for (std::size_t r = 0; r < un; ++r) {
        const double idle = std::max(0.0, end[r] - start[r] - delay[r] - own);
        t.idle_sum[r] += idle;
        t.idle_max[r] = std::max(t.idle_max[r], idle);
        t.delay_sum[r] += delay[r];
        idle_sum += idle;
        idle_max = std::max(idle_max, idle);
        step_end = std::max(step_end, end[r]);
        if (delay[r] > max_delay) {
          max_delay = delay[r];
          slowest = static_cast<int>(r);
        }
      }
      const double exposed = std::max(0.0, step_end - c_.optimizer.value - compute_end);
      t.exposed_sum += exposed;
      if (on_step) {
        on_step(StepRecord{s, Seconds{step_end - previous_end}, Seconds{step_end},
                           Seconds{idle_sum / n_}, Seconds{idle_max}, slowest, Seconds{exposed},
                           choices_, averaged ? &average_choice_ : nullptr, sat_out_});
      }
      t.steps = s + 1;
      if (until) {
        offsets_.resize(un);
        for (std::size_t r = 0; r < un; ++r) offsets_[r] = end[r] - step_end;
        StepRecord record;
        record.step = s;
        record.step_time = Seconds{step_end - previous_end};
        record.end = Seconds{step_end};
        if (until(record, offsets_)) {
          t.last_end = step_end;
          return t;
        }
      }
      previous_end = step_end;
      start.swap(end);
    }
    t.last_end = previous_end;
    return t;
  }

  double forward() const { return forward_; }
  double backward() const { return backward_; }
  std::optional<SharedLink> shared_link() {
    if (!bucket_.empty()) {
      if (auto s = bucket_.front()->shared_link()) return s;
    }
    return average_ ? average_->shared_link() : std::nullopt;
  }

 private:
  const TrainingConfig& c_;
  SyncSpec mode_;
  const std::vector<Bucket>& buckets_;
  int n_;
  double forward_ = 0, backward_ = 0;
  std::vector<std::unique_ptr<Collective>> bucket_;
  std::unique_ptr<Collective> average_;
  std::vector<BucketChoice> choices_;  // this step's, per bucket
  BucketChoice average_choice_;
  bool excluding_ = false;          // exclude_late
  std::vector<int> sat_out_;        // exclude_late: this step's, ascending
  std::vector<int> members_;        // exclude_late: the others, ascending
  std::vector<Seconds> predicted_;  // exclude_late: predicted arrivals
  std::vector<double> offsets_;     // run's `until`: each rank's end minus the step's end
};

// The nccl options of the reference: nccl's defaults with the topology's node structure (as the
// configuration loaders give every algorithm that takes gpus_per_node).
alg::Options reference_options(const topo::Topology& t) {
  return alg::nccl_default_options(t.gpus_per_node);
}

// The mean step of `model` without delays. Without delays the job is periodic: once each
// rank's end relative to the step's end repeats, every step (with parameter averages every
// `every` steps: every period of that many) repeats the one before. The pass stops at the
// first period that repeats the previous one (the period's duration and every rank's offset
// within 1e-9 of the period) and counts the steps left at that period's step times; a job that
// never settles runs every step.
double periodic_mean_step(const TrainingConfig& c, const SyncSpec& mode, StepModel& model) {
  const int period = average_needed(mode) ? mode.every : 1;
  std::vector<double> times;   // the step times of the period in progress
  std::vector<double> before;  // each rank's offset at the end of the previous period
  double before_duration = -1;
  const auto until = [&](const StepRecord& r, std::span<const double> offsets) {
    times.push_back(r.step_time.value);
    if ((r.step + 1) % period != 0) return false;
    double duration = 0;
    for (const double t : times) duration += t;
    const double tolerance = 1e-9 * duration;
    bool same = before_duration >= 0 && std::abs(duration - before_duration) <= tolerance;
    for (std::size_t k = 0; same && k < offsets.size(); ++k)
      same = std::abs(offsets[k] - before[k]) <= tolerance;
    before.assign(offsets.begin(), offsets.end());
    before_duration = duration;
    if (!same) times.clear();
    return same;
  };
  const PassTotals t = model.run(nullptr, {}, until);
  double total = t.last_end;
  if (t.steps < c.steps) {
    const int left = c.steps - t.steps;  // t.steps is a whole number of periods
    total += (left / period) * before_duration;
    for (int k = 0; k < left % period; ++k) total += times[static_cast<std::size_t>(k)];
  }
  return total / c.steps;
}

// The mode's common reference (TrainingReference): NCCL's choice without delays, a listed nccl
// of the same options reused, else the fastest of `runs` (the mode's runs) without delays.
TrainingReference common_reference(const TrainingConfig& c, const SyncSpec& mode,
                                   std::span<const TrainingRun> runs,
                                   const std::vector<Bucket>& buckets, Bytes model_bytes) {
  const int n = c.topology.gpu_count();
  TrainingReference ref;
  ref.mode = mode;
  // The fastest without delays, the first of equals (config order): the fallback, and the
  // bound a reference on NCCL's choice may not exceed.
  const TrainingRun* fastest = &runs.front();
  for (const TrainingRun& r : runs) {
    if (r.baseline_mean_step.value < fastest->baseline_mean_step.value) fastest = &r;
  }
  const bool groups = (mode.mode == SyncMode::grouped && mode.groups > 1) ||
                      (mode.mode == SyncMode::exclude_late && mode.late > 0);
  if (c.topology.shared_device) {
    ref.why_not_nccl = "topology " + c.topology.name +
                       " puts several ranks on one GPU, which NCCL refuses";
  } else if (groups) {
    ref.why_not_nccl = "the mode's bucket AllReduces run on groups of ranks, and NCCL's choice "
                       "here is made for the whole machine";
  } else {
    const alg::Options options = reference_options(c.topology);
    const auto listed = std::find_if(runs.begin(), runs.end(), [&](const TrainingRun& r) {
      return r.algorithm == "nccl" && r.options.values() == options.values();
    });
    try {
      Seconds step;
      if (listed != runs.end()) {
        step = listed->baseline_mean_step;
      } else {
        const alg::Schedule schedule = alg::generate("nccl", n, options);
        NcclSchedules nccl(c.topology, options, c.pipelined_kernels);
        StepModel model(c, mode, schedule, schedule, buckets, model_bytes, &nccl);
        step = Seconds{periodic_mean_step(c, mode, model)};
      }
      // A reference slower than what the job itself runs without delays would make every
      // algorithm look better than no loss at all: where the model runs NCCL's choice slower
      // (the alpha-beta model serves a rank's channels one after another on one port), the
      // fastest listed algorithm is the reference and the reason says by how much.
      if (step.value <= fastest->baseline_mean_step.value) {
        ref.mean_step = step;
        ref.nccl = true;
        ref.algorithm = "nccl";
        ref.options = options;
        return ref;
      }
      char why[160];
      std::snprintf(why, sizeof why, "NCCL's choice takes %.3fms per step in this model, %.2fx ",
                    step.value * 1e3, step.value / fastest->baseline_mean_step.value);
      ref.why_not_nccl = std::string(why) + fastest->algorithm + "'s";
    } catch (const InputError& e) {
      ref.why_not_nccl = std::string("nccl: ") + e.what();
    }
  }
  ref.algorithm = fastest->algorithm;
  ref.options = fastest->options;
  ref.mean_step = fastest->baseline_mean_step;
  return ref;
}

}  // namespace

TrainingResult run_training(const TrainingConfig& c, const StepCallback& on_step) {
  check_config(c);
  const int n = c.topology.gpu_count();
  TrainingResult result;
  result.ranks = n;
  result.cluster_gpus = c.cluster_gpus > 0 ? c.cluster_gpus : n;
  result.buckets = make_buckets(c.layers, c.bytes_per_param, c.bucket_cap);
  for (const Bucket& b : result.buckets) result.gradient_bytes += b.bytes.value;
  const DelayGenerator delays(c.delays, n, c.seed, StragglerPolicy::oracle);

  for (const SyncSpec& mode : c.modes) {
    const std::size_t first_run = result.runs.size();
    for (const TrainingAlgorithm& a : c.algorithms) {
      const alg::AlgorithmInfo& info = alg::find_algorithm(a.name);
      const int m = mode.mode == SyncMode::grouped        ? n / mode.groups
                    : mode.mode == SyncMode::exclude_late ? n - mode.late
                                                          : n;
      const std::string who =
          mode.mode == SyncMode::grouped ? " (the groups of " : " (the group of ";
      for (const int ranks : {n, m}) {
        if (!info.supports_ranks(ranks)) {
          throw InputError("algorithm " + info.name + " does not support " + std::to_string(ranks) +
                           " ranks (supported: " + info.supported_ranks + ")" +
                           (ranks != n ? who + mode.describe() + ")" : ""));
        }
        for (const std::string& name :
             info.straggler_aware ? c.adaptive_fallbacks : std::vector<std::string>{}) {
          const alg::AlgorithmInfo& f = alg::find_algorithm(name);
          if (!f.supports_ranks(ranks)) {
            throw InputError("adaptive fallback " + f.name + " does not support " +
                             std::to_string(ranks) + " ranks (supported: " + f.supported_ranks +
                             ")" + (ranks != n ? who + mode.describe() + ")" : ""));
          }
        }
      }
      const alg::Schedule schedule = alg::generate(info.name, n, a.options);
      if (schedule.late.size() > 1) {
        throw InputError(
            "algorithm " + info.name +
            ": schedules built for several late ranks are not supported by the training model");
      }
      // A straggler option names a rank of the whole job; a group's schedule takes its default.
      std::optional<alg::Schedule> group;
      if (m != n) {
        alg::Options group_options;
        for (const auto& kv : a.options.values()) {
          if (kv.first != "straggler") group_options.set(kv.first, kv.second);
        }
        group = alg::generate(info.name, m, group_options);
      }
      if (mode.mode == SyncMode::exclude_late && mode.late > 0 &&
          (group ? *group : schedule).has_switch_reduces()) {
        throw InputError("algorithm " + info.name + " reduces in switches, which " +
                         mode.describe() + " does not model for a group of ranks");
      }
      std::optional<NcclSchedules> nccl;
      if (info.name == "nccl") nccl.emplace(c.topology, a.options, c.pipelined_kernels);
      StepModel model(c, mode, schedule, group ? *group : schedule, result.buckets,
                      Bytes{result.gradient_bytes}, nccl ? &*nccl : nullptr);
      result.forward = Seconds{model.forward()};
      result.backward = Seconds{model.backward()};

      TrainingRun run;
      run.mode = mode;
      run.algorithm = info.name;
      run.options = a.options;
      run.straggler_aware = schedule.straggler.has_value();
      run.buckets = static_cast<int>(result.buckets.size());
      run.shared_link = model.shared_link();
      if (c.keep_step_times) run.step_times.reserve(static_cast<std::size_t>(c.steps));
      StreamQuantiles step_quantiles;
      const PassTotals delayed = model.run(&delays, [&](const StepRecord& r) {
        if (c.keep_step_times) run.step_times.push_back(r.step_time);
        step_quantiles.add(r.step_time.value);
        if (on_step) on_step(run, r);
      });
      const PassTotals baseline = model.run(nullptr, {});
      run.adaptive_collectives = delayed.adaptive_runs;
      run.fallback_fraction =
          delayed.adaptive_runs > 0
              ? static_cast<double>(delayed.fallback_runs) / delayed.adaptive_runs
              : 0.0;

      const double steps = c.steps;
      run.mean_step = Seconds{delayed.last_end / steps};
      run.p50_step = Seconds{step_quantiles.quantile(0.5)};
      run.p90_step = Seconds{step_quantiles.quantile(0.9)};
      run.p99_step = Seconds{step_quantiles.quantile(0.99)};
      run.max_step = Seconds{step_quantiles.max()};
      run.exact_quantiles = step_quantiles.exact();
      const double samples = static_cast<double>(n) * c.samples_per_gpu;
      run.samples_per_second = samples / run.mean_step.value;
      for (int r = 0; r < n; ++r) {
        const std::size_t ur = static_cast<std::size_t>(r);
        run.mean_idle.push_back(Seconds{delayed.idle_sum[ur] / steps});
        run.max_idle.push_back(Seconds{delayed.idle_max[ur]});
        run.mean_delay.push_back(Seconds{delayed.delay_sum[ur] / steps});
        run.sat_out.push_back(delayed.sat_out[ur] / steps);
      }
      run.mean_exposed_comm = Seconds{delayed.exposed_sum / steps};
      run.baseline_mean_step = Seconds{baseline.last_end / steps};
      run.baseline_samples_per_second = samples / run.baseline_mean_step.value;
      run.lost_fraction = 1.0 - run.baseline_mean_step.value / run.mean_step.value;
      run.lost_gpu_hours_per_day = result.cluster_gpus * 24.0 * run.lost_fraction;
      if (average_needed(mode)) {
        // Step s lacks the other ranks' updates of the s mod every steps since the last average.
        double sum = 0;
        for (int s = 0; s < c.steps; ++s) sum += s % mode.every;
        run.mean_staleness = sum / steps;
        run.max_staleness = std::min(c.steps, mode.every) - 1;
      }
      result.runs.push_back(std::move(run));
    }
    if (!c.common_reference) continue;
    const std::span<TrainingRun> runs(result.runs.data() + first_run,
                                      result.runs.size() - first_run);
    TrainingReference ref = common_reference(c, mode, runs, result.buckets,
                                             Bytes{result.gradient_bytes});
    for (TrainingRun& run : runs) {
      run.reference_mean_step = ref.mean_step;
      run.lost_vs_reference = 1.0 - ref.mean_step.value / run.mean_step.value;
      run.lost_vs_reference_gpu_hours_per_day = result.cluster_gpus * 24.0 * run.lost_vs_reference;
    }
    result.references.push_back(std::move(ref));
  }
  return result;
}

}  // namespace ssim::sim

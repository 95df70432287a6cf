#include "gpu_backend/cuda/driver.hpp"

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/devices.hpp"
#include "gpu_backend/cuda/executor.hpp"
#include "gpu_backend/result_csv.hpp"

namespace ssim::gpu {

namespace {

std::string line(const char* format, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

void print_header(std::ostream& out, const RunOptions& o, int ranks, const DeviceGroup& group,
                  const IterationSettings& settings) {
  out << "# stragglesim-gpu run: algorithm " << o.algorithm << ", " << ranks << " ranks, "
      << to_string(o.dtype) << " sum, transport " << to_string(o.transport) << ", phase 1 "
      << to_string(o.phase1) << "\n";
  out << "# " << o.iterations << " iterations after " << o.warmup << " warm-up, check "
      << (o.check ? "on" : "off") << "\n";
  if (settings.delay.value > 0) {
    out << "# straggler: rank " << settings.straggler << " arrives " << format_time(settings.delay)
        << " late (spin kernel); time = first arrival to last finish, after-last = time - "
           "measured delay\n";
  } else {
    out << "# no straggler delay\n";
  }
  out << "# device: " << group.description() << "\n";
  const std::vector<int> local = group.local_ranks();
  if (group.transport() == Transport::single_gpu) {
    out << "#  ranks 0.." << ranks - 1 << " on GPU " << group.device_of(local.front()) << "\n";
  } else {
    for (int r : local) out << line("#  rank %4d on GPU %2d\n", r, group.device_of(r));
  }
  out << "#\n";
  out << line("# %12s %12s %8s %12s %15s %12s %12s %8s\n", "size", "count", "type", "time(us)",
              "after-last(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
}

}  // namespace

SweepOutcome run_sweep(const RunOptions& o, std::ostream& out) {
  validate_without_device(o);
  const DeviceReport report = query_devices();
  if (report.devices.empty()) throw DeviceError("no CUDA device: " + report.no_device_reason);
  const int device_count = static_cast<int>(report.devices.size());
  const int ranks = resolve_ranks(o, device_count);
  check_device_count(o, ranks, device_count);

  // Every size prepared before any GPU work, so a bad one fails first.
  std::vector<PreparedCollective> prepared;
  for (std::uint64_t bytes : o.sizes)
    prepared.push_back(prepare_collective(collective_spec(o, ranks, bytes)));

  const bool leader = !one_process_per_gpu(o) || *o.rank == 0;
  std::ofstream csv_file;
  std::optional<ResultCsvWriter> csv;
  if (leader && !o.output.empty()) {
    csv_file.open(o.output);
    if (!csv_file) throw InputError("cannot write the result CSV -o " + o.output);
    csv.emplace(csv_file);
  }

  std::unique_ptr<FileIdExchange> ids;
  std::optional<DeviceGroup> group;
  if (one_process_per_gpu(o)) {
    ids = std::make_unique<FileIdExchange>(o.id_file, o.id_timeout);
    group.emplace(DeviceGroup::one_rank(*o.rank, ranks, process_device(o, device_count), *ids));
  } else if (o.transport == Transport::single_gpu) {
    group.emplace(DeviceGroup::single_gpu(ranks, 0));
  } else {
    group.emplace(DeviceGroup::all_local(ranks));
  }

  IterationSettings settings;
  settings.delay = o.delay;
  settings.straggler = o.delay.value > 0 ? straggler_rank(o, ranks) : -1;
  settings.check = o.check;
  if (leader) print_header(out, o, ranks, *group, settings);

  SweepOutcome outcome;
  double busbw_sum = 0;
  for (std::size_t si = 0; si < prepared.size(); ++si) {
    const std::uint64_t bytes = o.sizes[si];
    CollectiveRun run(*group, std::move(prepared[si]), settings);
    const PreparedCollective& c = run.collective();
    for (int w = 0; w < o.warmup; ++w) run.run();

    double time_sum = 0;
    double after_sum = 0;
    std::uint64_t wrong = 0;
    for (int it = 0; it < o.iterations; ++it) {
      const IterationResult r = run.run();
      time_sum += r.time.value;
      after_sum += r.after_last_arrival.value;
      wrong += r.wrong.value_or(0);
      if (!r.local.ok() && outcome.first_failure.empty()) {
        outcome.first_failure = "size " + std::to_string(bytes) + " B, iteration " +
                                std::to_string(it) + ": " + r.local.to_string();
      }
      if (csv) {
        ResultRow row;
        row.source = ResultSource::measured;
        row.algorithm = c.label;
        row.ranks = ranks;
        row.bytes = Bytes{bytes};
        row.dtype = std::string(to_string(o.dtype));
        row.delay = settings.delay;
        if (settings.delay.value > 0) row.straggler = settings.straggler;
        row.iteration = it;
        row.time = r.time;
        row.after_last_arrival = r.after_last_arrival;
        set_bandwidths(row);
        row.wrong = r.wrong;
        row.device = group->description();
        row.timestamp = utc_timestamp_now();
        csv->write(row);
      }
    }
    outcome.wrong += wrong;
    const double mean_time = time_sum / o.iterations;
    const double mean_after = after_sum / o.iterations;
    const double algbw = mean_after > 0 ? static_cast<double>(bytes) / mean_after / 1e9 : 0.0;
    const double busbw = algbw * allreduce_bus_factor(ranks);
    busbw_sum += busbw;
    if (leader) {
      const std::string wrong_text = o.check ? std::to_string(wrong) : std::string("N/A");
      out << line("  %12llu %12llu %8s %12.2f %15.2f %12.2f %12.2f %8s\n",
                  static_cast<unsigned long long>(bytes),
                  static_cast<unsigned long long>(c.plan.layout.count),
                  std::string(to_string(o.dtype)).c_str(), mean_time * 1e6, mean_after * 1e6, algbw,
                  busbw, wrong_text.c_str());
      out.flush();
    }
  }
  if (leader) {
    out << line("# Avg bus bandwidth    : %.3f GB/s (after the last arrival)\n",
                busbw_sum / static_cast<double>(o.sizes.size()));
    if (o.check) {
      out << "# Out of bounds values : " << outcome.wrong << (outcome.wrong ? " FAILED" : " OK")
          << "\n";
    }
    if (csv) out << "# results: " << o.output << "\n";
  }
  return outcome;
}

}  // namespace ssim::gpu

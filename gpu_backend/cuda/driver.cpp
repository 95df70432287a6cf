#include "gpu_backend/cuda/driver.hpp"

#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "common/output_file.hpp"
#include "gpu_backend/cuda/bootstrap_mpi.hpp"
#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/devices.hpp"
#include "gpu_backend/cuda/executor.hpp"
#include "gpu_backend/run_table.hpp"
#include "schema/result_csv.hpp"

namespace ssim::gpu {

namespace {

void print_header(std::ostream& out, const SweepConfig& o, int ranks, const DeviceGroup& group,
                  const IterationSettings& settings) {
  out << "# stragglesim-gpu run: algorithm " << o.algorithm << ", " << ranks << " ranks, "
      << to_string(o.dtype) << " sum, transport " << to_string(o.transport) << ", phase 1 "
      << to_string(o.phase1) << "\n";
  out << "# " << o.iterations << " iterations after " << o.warmup << " warm-up, check "
      << (o.check_iterations > 0 ? std::to_string(o.check_iterations) + " per size (device)"
                                 : std::string("off"))
      << ", launch " << to_string(o.launch)
      << (o.transport == Transport::single_gpu
              ? std::string(", copy ") + std::string(to_string(o.copy))
              : std::string())
      << ", watchdog " << format_time(o.timeout) << " per size\n";
  out << "# clock: %globaltimer stamps; time = each rank's finish - start, " << to_string(o.average)
      << " over ranks (-a); after-last = max finish - max arrival\n";
  if (settings.delay.value > 0) {
    out << "# straggler: rank " << settings.straggler << " arrives " << format_time(settings.delay)
        << " late (spin on %globaltimer; the CSV's delay_s is the measured spin)\n";
  } else {
    out << "# no straggler delay\n";
  }
  out << "# device: " << group.description() << "\n";
  const std::vector<int> local = group.local_ranks();
  bool one_gpu = true;
  for (int r : group.local_ranks()) one_gpu = one_gpu && group.device_of(r) == group.device_of(0);
  if (group.transport() != Transport::nccl && one_gpu) {
    out << "#  ranks 0.." << ranks - 1 << " on GPU " << group.device_of(local.front()) << "\n";
  } else {
    for (int r : local) out << "#  rank " << r << " on GPU " << group.device_of(r) << "\n";
  }
  out << "#\n";
  out << run_table_header();
}

// OutputFile(path); an InputError names what the file is for ("cannot write the JSON -J ...").
OutputFile open_output(const std::string& path, const std::string& what) {
  try {
    return OutputFile(path);
  } catch (const InputError& e) {
    throw InputError("cannot write " + what + e.what());
  }
}

// One row per rank and round it takes part in (one row with an empty round for a rank in no
// round); times in seconds since the iteration's first arrival. arrival_s and finish_s as in
// `stragglesim simulate --json --per-rank`. options: the generator's options as the result
// CSV's column has them, `straggler` included unless it is n-1 (the timeline has no straggler
// column); `stragglesim validate --timeline` builds the schedule from it.
void write_timeline_header(std::ostream& out) {
  out << "algorithm,ranks,bytes,iteration,rank,arrival_s,finish_s,delay_s,round,round_end_s,"
         "options\n";
}

std::string seconds_since(std::uint64_t t, std::uint64_t origin) {
  char buf[32];
  const double s = (static_cast<double>(t) - static_cast<double>(origin)) * 1e-9;
  std::snprintf(buf, sizeof buf, "%.9f", s);
  return buf;
}

void write_timeline(std::ostream& out, const std::string& label, int ranks, std::uint64_t bytes,
                    int iteration, const IterationResult& r, const std::string& options) {
  const std::string options_field = schema::csv_field(options);
  for (const RankStamps& st : r.stamps) {
    const std::string prefix = label + "," + std::to_string(ranks) + "," + std::to_string(bytes) +
                               "," + std::to_string(iteration) + "," + std::to_string(st.rank) +
                               "," + seconds_since(st.arrival, r.origin) + "," +
                               seconds_since(st.finish, r.origin) + "," +
                               seconds_since(st.arrival, st.start) + ",";
    bool any = false;
    for (std::size_t k = 0; k < st.round_end.size(); ++k) {
      if (st.round_end[k] == 0) continue;
      any = true;
      out << prefix << k << "," << seconds_since(st.round_end[k], r.origin) << "," << options_field
          << "\n";
    }
    if (!any) out << prefix << ",," << options_field << "\n";
  }
}

}  // namespace

SweepOutcome run_sweep(const SweepConfig& o, std::ostream& out) {
  validate_without_device(o);
  const bool leader = !one_process_per_gpu(o) || *o.rank == 0;
  // Output files are opened (and their headers written out) before the device is looked for,
  // so a bad path is said without a GPU. They take their names when the sweep is done
  // (common/output_file.hpp): a failed run leaves none, a failed write is exit 3.
  std::optional<OutputFile> csv_file;
  std::optional<schema::ResultCsvWriter> csv;
  if (leader && !o.output.empty()) {
    csv_file.emplace(open_output(o.output, "the result CSV --csv "));
    csv.emplace(csv_file->stream());
    csv_file->flush();
  }
  std::optional<OutputFile> json_file;
  if (leader && !o.json.empty()) json_file.emplace(open_output(o.json, "the JSON -J "));
  std::optional<OutputFile> timeline;
  if (!o.timeline.empty()) {
    const std::string path = leader ? o.timeline : o.timeline + ".rank" + std::to_string(*o.rank);
    timeline.emplace(open_output(path, "the timeline --timeline "));
    write_timeline_header(timeline->stream());
    timeline->flush();
  }

  const DeviceReport report = query_devices();
  if (report.devices.empty()) throw DeviceError("no CUDA device: " + report.no_device_reason);
  const int device_count = static_cast<int>(report.devices.size());
  const int ranks = resolve_ranks(o, device_count);
  check_device_count(o, ranks, device_count);

  // Every size prepared before any GPU work, so a bad one fails first.
  std::vector<PreparedCollective> prepared;
  for (std::uint64_t bytes : o.sizes)
    prepared.push_back(prepare_collective(collective_spec(o, ranks, bytes)));

  const std::string nccl_version = format_nccl_version(report.nccl_version);
  // What NCCL was asked for, recorded on ncclAllReduce's rows (empty: NCCL's own choice).
  const bool nccl_rows = o.algorithm == kNcclAlgorithm;
  const std::string nccl_algo = nccl_rows ? nccl_env("NCCL_ALGO") : std::string();
  const std::string nccl_proto = nccl_rows ? nccl_env("NCCL_PROTO") : std::string();
  // The options column: what the generator got, less what the straggler column implies.
  const bool aware =
      o.algorithm != kNcclAlgorithm && alg::find_algorithm(o.algorithm).straggler_aware;
  const std::string options =
      o.algorithm == kNcclAlgorithm
          ? std::string()
          : result_options(o.algorithm_options, aware ? straggler_rank(o, ranks) : -1, ranks,
                           o.delay.value > 0);
  const std::string timeline_options =
      o.algorithm == kNcclAlgorithm
          ? std::string()
          : result_options(o.algorithm_options, aware ? straggler_rank(o, ranks) : -1, ranks,
                           false);

  std::unique_ptr<IdExchange> ids;
  std::optional<DeviceGroup> group;
  if (one_process_per_gpu(o)) {
    if (o.mpi) {
      ids = std::make_unique<MpiIdExchange>();
    } else {
      ids = std::make_unique<FileIdExchange>(o.id_file, o.id_timeout);
    }
    group.emplace(DeviceGroup::one_rank(*o.rank, ranks, process_device(o, device_count), *ids));
  } else if (o.transport == Transport::single_gpu) {
    group.emplace(DeviceGroup::single_gpu(ranks, 0));
  } else if (o.transport == Transport::direct) {
    group.emplace(DeviceGroup::direct(ranks, direct_devices(ranks, device_count)));
  } else {
    group.emplace(DeviceGroup::all_local(ranks));
  }

  IterationSettings settings;
  settings.delay = o.delay;
  settings.straggler = o.delay.value > 0 ? straggler_rank(o, ranks) : -1;
  settings.launch = o.launch;
  settings.copy = o.copy;
  settings.timeout = o.timeout;
  settings.average = o.average;
  if (leader) print_header(out, o, ranks, *group, settings);

  SweepOutcome outcome;
  double busbw_sum = 0;
  std::vector<SizeRow> table;
  std::string label = o.algorithm;  // the collective's name as the rows give it
  for (std::size_t si = 0; si < prepared.size(); ++si) {
    const std::uint64_t bytes = o.sizes[si];
    CollectiveRun run(*group, std::move(prepared[si]), settings);
    const PreparedCollective& c = run.collective();
    label = c.label;
    for (int w = 0; w < o.warmup; ++w) run.run(false);

    double time_sum = 0;
    double after_sum = 0;
    double rank_time_sum = 0;
    std::uint64_t wrong = 0;
    auto note_failure = [&](const IterationResult& r, const std::string& which) {
      wrong += r.wrong.value_or(0);
      if (!r.local.ok() && outcome.first_failure.empty()) {
        outcome.first_failure =
            "size " + std::to_string(bytes) + " B, " + which + ": " + r.local.to_string();
      }
    };
    for (int it = 0; it < o.iterations; ++it) {
      const IterationResult r = run.run(it < o.check_iterations);
      if (timeline)
        write_timeline(timeline->stream(), c.label, ranks, bytes, it, r, timeline_options);
      time_sum += r.time.value;
      after_sum += r.after_last_arrival.value;
      rank_time_sum += r.rank_time.value;
      note_failure(r, "iteration " + std::to_string(it));
      if (csv) {
        schema::ResultRow row;
        row.source = schema::ResultSource::measured;
        row.algorithm = c.label;
        row.ranks = ranks;
        row.bytes = Bytes{bytes};
        row.dtype = std::string(to_string(o.dtype));
        row.delay = r.delay;  // measured
        if (settings.delay.value > 0) row.straggler = settings.straggler;
        row.iteration = it;
        row.time = r.time;
        row.after_last_arrival = r.after_last_arrival;
        schema::set_bandwidths(row);
        row.wrong = r.wrong;
        row.device = group->description();
        row.timestamp = schema::utc_timestamp_now();
        row.nccl_version = nccl_version;
        row.nccl_algo = nccl_algo;
        row.nccl_proto = nccl_proto;
        row.options = options;
        // The single-GPU transport with kernel copies is another machine behaviour (no
        // slowdown at odd chunk strides): its rows say so.
        row.transport = std::string(to_string(o.transport)) +
                        (o.copy == CopyMode::kernel ? "+kernel-copy" : "");
        csv->write(row);
      }
    }
    // -c beyond -n: the remaining checks on untimed iterations, as nccl-tests checks apart.
    for (int extra = o.iterations; extra < o.check_iterations; ++extra)
      note_failure(run.run(true), "checked iteration " + std::to_string(extra));
    outcome.wrong += wrong;
    const SizeRow row{.bytes = bytes,
                      .count = c.plan.layout.count,
                      .dtype = o.dtype,
                      .ranks = ranks,
                      .mean_time_s = time_sum / o.iterations,
                      .mean_after_last_s = after_sum / o.iterations,
                      .check = o.check_iterations > 0,
                      .wrong = wrong,
                      .rank_time_s = rank_time_sum / o.iterations};
    table.push_back(row);
    busbw_sum += row.busbw_GBps();
    for (std::optional<OutputFile>* f : {&csv_file, &timeline}) {
      if (*f) (*f)->flush();  // a full disk stops the sweep here
    }
    if (leader) {
      out << format_size_row(row);
      out.flush();
    }
  }
  if (leader) {
    out << run_table_footer(busbw_sum / static_cast<double>(o.sizes.size()), o.check_iterations > 0,
                            outcome.wrong);
    if (csv) {
      csv_file->commit();
      out << "# results: " << o.output << "\n";
    }
    if (json_file) {
      RunJsonHeader h;
      h.program = "stragglesim-gpu";
      h.args = o.args;
      h.device = group->description();
      h.ranks = ranks;
      h.iterations = o.iterations;
      h.warmup = o.warmup;
      h.check_iterations = o.check_iterations;
      h.average = std::string(to_string(o.average));
      h.delay_s = settings.delay.value;
      if (settings.straggler >= 0) h.straggler = settings.straggler;
      h.algorithm = label;
      h.nccl_version = nccl_version;
      json_file->stream() << run_json(h, table);
      json_file->commit();
      out << "# JSON: " << o.json << "\n";
    }
  }
  if (timeline) {
    timeline->commit();
    if (leader) out << "# timeline: " << o.timeline << "\n";
  }
  return outcome;
}

}  // namespace ssim::gpu

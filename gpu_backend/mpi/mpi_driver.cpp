#include "gpu_backend/mpi/mpi_driver.hpp"

#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <ostream>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "common/output_file.hpp"
#include "gpu_backend/mpi/mpi_executor.hpp"
#include "gpu_backend/mpi/mpi_support.hpp"
#include "gpu_backend/run_table.hpp"
#include "schema/result_csv.hpp"

namespace ssim::gpu {

namespace {

void print_header(std::ostream& out, const MpiSweepConfig& o, const MpiWorld& world,
                  const MpiIterationSettings& settings) {
  out << "# stragglesim-mpi: algorithm " << o.algorithm << ", " << world.size
      << " ranks (one MPI process each), " << to_string(o.dtype) << " sum, host buffers, "
      << (o.algorithm == kMpiAlgorithm ? "MPI_Allreduce" : "MPI_Isend/MPI_Irecv per round") << "\n";
  out << "# " << o.iterations << " iterations after " << o.warmup << " warm-up; "
      << o.check_iterations << " checked per size; time = each rank's own time, "
      << to_string(o.average) << " over ranks (-a)\n";
  if (settings.straggler >= 0) {
    out << "# straggler: rank " << settings.straggler << " arrives " << format_time(settings.delay)
        << " late (sleep after the barrier); time = first arrival to last finish, after-last = "
           "last arrival to last finish\n";
  } else {
    out << "# no straggler delay\n";
  }
  out << "# device: " << world.device() << " (" << world.library << ", " << world.nodes
      << (world.nodes == 1 ? " host" : " hosts") << "), clock: " << to_string(world.clock)
      << "\n#\n";
  out << run_table_header();
}

// The lowest failing rank's check report, on every rank.
std::string first_failure(MPI_Comm comm, const MpiWorld& world, const CheckReport& local) {
  const int mine = local.ok() ? world.size : world.rank;
  int first = world.size;
  SSIM_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == world.size) return {};
  std::string text = local.to_string();
  int length = static_cast<int>(text.size());
  SSIM_MPI(MPI_Bcast(&length, 1, MPI_INT, first, comm));
  text.resize(static_cast<std::size_t>(length));
  SSIM_MPI(MPI_Bcast(text.data(), length, MPI_CHAR, first, comm));
  return text;
}

// OutputFile(path); an InputError names what the file is for ("cannot write the JSON -J ...").
OutputFile open_output(const std::string& path, const std::string& what) {
  try {
    return OutputFile(path);
  } catch (const InputError& e) {
    throw InputError("cannot write " + what + e.what());
  }
}

}  // namespace

MpiSweepOutcome run_mpi_sweep(const MpiSweepConfig& o, MPI_Comm comm, std::ostream& out) {
  const MpiWorld world = describe_world(comm);
  const bool leader = world.rank == 0;

  // Setup: identical on every rank except the CSV file (rank 0) and allocations; agreed on.
  std::vector<MpiCollective> prepared;
  // Output files take their names when the sweep is done (common/output_file.hpp): a failed
  // run leaves none.
  std::optional<OutputFile> csv_file;
  std::optional<schema::ResultCsvWriter> csv;
  std::optional<OutputFile> json_file;
  std::string error;
  try {
    validate_mpi_options(o, world.size);
    for (std::uint64_t bytes : o.sizes)
      prepared.push_back(prepare_mpi_collective(o, world.size, bytes));
    if (leader && !o.csv.empty()) {
      csv_file.emplace(open_output(o.csv, "the result CSV --csv "));
      csv.emplace(csv_file->stream());
    }
    if (leader && !o.json.empty()) json_file.emplace(open_output(o.json, "the JSON -J "));
  } catch (const std::exception& e) {
    error = e.what();
  }
  agree_on_errors(comm, error);

  MpiIterationSettings settings;
  if (o.delay.value > 0) {
    settings.delay = o.delay;
    settings.straggler = straggler_rank(o, world.size);
  }
  settings.average = o.average;
  if (leader) print_header(out, o, world, settings);
  // The options column: what the generator got, less what the straggler column implies.
  std::string options;
  if (o.algorithm != kMpiAlgorithm) {
    const bool aware = alg::find_algorithm(o.algorithm).straggler_aware;
    options = result_options(o.algorithm_options, aware ? straggler_rank(o, world.size) : -1,
                             world.size, o.delay.value > 0);
  }

  MpiSweepOutcome outcome;
  double busbw_sum = 0;
  std::vector<SizeRow> table;
  std::string label = o.algorithm;  // the schedule's name as the rows give it
  for (std::size_t si = 0; si < prepared.size(); ++si) {
    const std::uint64_t bytes = o.sizes[si];
    std::unique_ptr<MpiCollectiveRun> run;
    error.clear();
    try {
      run = std::make_unique<MpiCollectiveRun>(comm, world, std::move(prepared[si]), settings);
    } catch (const std::bad_alloc&) {
      error = "cannot allocate the buffers of size " + std::to_string(bytes) + " B";
    }
    agree_on_errors(comm, error);
    const MpiCollective& c = run->collective();
    label = c.label;
    for (int w = 0; w < o.warmup; ++w) run->run(false);

    double time_sum = 0;
    double after_sum = 0;
    double rank_time_sum = 0;
    std::uint64_t wrong = 0;
    auto note_failure = [&](const MpiIterationResult& r, const std::string& which) {
      wrong += r.wrong.value_or(0);
      if (r.wrong.value_or(0) > 0 && outcome.first_failure.empty()) {
        outcome.first_failure = "size " + std::to_string(bytes) + " B, " + which + ": " +
                                first_failure(comm, world, r.local);
      }
    };
    for (int it = 0; it < o.iterations; ++it) {
      const MpiIterationResult r = run->run(it < o.check_iterations);
      time_sum += r.time.value;
      after_sum += r.after_last_arrival.value;
      rank_time_sum += r.rank_time.value;
      note_failure(r, "iteration " + std::to_string(it));
      if (csv) {
        schema::ResultRow row;
        row.source = schema::ResultSource::measured;
        row.algorithm = c.label;
        row.ranks = world.size;
        row.bytes = Bytes{bytes};
        row.dtype = std::string(to_string(o.dtype));
        row.delay = settings.delay;
        if (settings.delay.value > 0 && settings.straggler >= 0) row.straggler = settings.straggler;
        row.iteration = it;
        row.time = r.time;
        row.after_last_arrival = r.after_last_arrival;
        schema::set_bandwidths(row);
        row.wrong = r.wrong;
        row.device = world.device();
        row.timestamp = schema::utc_timestamp_now();
        row.options = options;
        row.transport = "mpi";
        csv->write(row);
      }
    }
    // -c beyond -n: the remaining checks on untimed iterations, as nccl-tests checks apart.
    for (int extra = o.iterations; extra < o.check_iterations; ++extra) {
      note_failure(run->run(true), "checked iteration " + std::to_string(extra));
    }
    outcome.wrong += wrong;
    const SizeRow row{.bytes = bytes,
                      .count = c.plan.layout.count,
                      .dtype = o.dtype,
                      .ranks = world.size,
                      .mean_time_s = time_sum / o.iterations,
                      .mean_after_last_s = after_sum / o.iterations,
                      .check = o.check_iterations > 0,
                      .wrong = wrong,
                      .rank_time_s = rank_time_sum / o.iterations};
    table.push_back(row);
    busbw_sum += row.busbw_GBps();
    if (leader) {
      out << format_size_row(row);
      out.flush();
    }
  }
  if (leader) {
    out << run_table_footer(busbw_sum / static_cast<double>(o.sizes.size()), o.check_iterations > 0,
                            outcome.wrong);
  }
  // Rank 0 writes; a failed write ends every rank with exit 3 (AgreedOutputError).
  error.clear();
  int write_failed = 0;
  try {
    if (csv) csv_file->commit();
    if (json_file) {
      RunJsonHeader h;
      h.program = "stragglesim-mpi";
      h.args = o.args;
      h.device = world.device();
      h.ranks = world.size;
      h.iterations = o.iterations;
      h.warmup = o.warmup;
      h.check_iterations = o.check_iterations;
      h.average = std::string(to_string(o.average));
      h.delay_s = settings.delay.value;
      if (settings.straggler >= 0) h.straggler = settings.straggler;
      h.algorithm = label;
      json_file->stream() << run_json(h, table);
      json_file->commit();
    }
  } catch (const OutputError& e) {
    error = e.what();
    write_failed = 1;
  }
  SSIM_MPI(MPI_Bcast(&write_failed, 1, MPI_INT, 0, comm));
  try {
    agree_on_errors(comm, error);
  } catch (const AgreedInputError& e) {
    if (write_failed) throw AgreedOutputError(e.what());
    throw;
  }
  if (csv) out << "# results: " << o.csv << "\n";
  if (json_file) out << "# JSON: " << o.json << "\n";
  return outcome;
}

}  // namespace ssim::gpu

// Calibration of the simulator's alpha-beta(-gamma) model from measurements: least-squares fits
// (Eigen) of the per-message latency alpha, the per-byte time beta = 1 / bandwidth and the
// reduce cost gamma. No YAML and no simulator here: `stragglesim calibrate` prints the fits and
// writes them as a topology file (experiments/config/calibration.cpp).
//
//   std::ifstream in("sweep.csv");
//   CalibrationOptions o;
//   o.piecewise = parse_size_list("64KiB");          // one fit below 64 KiB, one from it up
//   Calibration c = calibrate(in, "sweep.csv", o);
//   for (const AlphaBetaFit& f : c.fits)
//     std::cout << f.alpha.value << " s, " << f.bandwidth().value << " B/s\n";
//
// Inputs, told apart by their header (columns are found by name, extra columns are ignored):
//   sweep          bytes,seconds[,link_class][,kind]: one point-to-point (or reduce) timing per
//                  row. kind p2p (default) rows fit seconds = alpha + beta * bytes, one fit per
//                  link_class (and per size piece); kind reduce rows fit one
//                  seconds = intercept + gamma * bytes over all of them. Blank lines and lines
//                  starting with '#' are skipped. bytes >= 0 integer, seconds > 0.
//   collective     a result CSV (result_csv.hpp). Its measured rows are AllReduce runs of a
//   runs           registry algorithm; a run of algorithm A on n ranks with s bytes is modelled by
//                  A's closed form, which is linear in the parameters:
//                    T = a_A(n) alpha + b_A(n, s) beta + c_A(n, s) gamma,
//                  with the coefficients read off exactly as cost(n, s, unit vector)
//                  (cost_coefficients). T is time_s, or after_last_arrival_s when delay_s > 0
//                  (the closed form assumes everyone arrives together, which is what the
//                  algorithm sees after the last arrival; for ring-like schedules an
//                  approximation, since early ranks may have started). gamma is taken as known
//                  (CalibrationOptions::gamma) unless fit_gamma asks to fit it too; ring and rhd
//                  move and reduce the same bytes (b = 2c), so only a mix with e.g. direct or
//                  tree separates beta from gamma.
//                  Skipped, and reported: simulated rows, algorithms without a closed form in
//                  the registry (nccl, NAME+nccl-rs), costs not linear in the parameters at the
//                  row's options (linear_cost_coefficients), rank counts an algorithm does not
//                  support, straggler-aware algorithms with a delay (their time after the last
//                  arrival is not the registry's all-arrive-together form).
//   nccl-tests     all_reduce_perf's text output or its -J JSON (nccl_tests.hpp): each row's
//   log            out-of-place time is a run of CalibrationOptions::algorithm (default ring)
//                  on the log's rank count, fitted as collective runs.
//
// The fit minimises the sum of squared RELATIVE residuals ((fitted - measured) / measured): a
// sweep spans microseconds to milliseconds, and plain least squares would let the largest
// sizes decide alpha, which only the small sizes can measure. R^2 is the ordinary one, on the
// measured seconds. A fit needs at least 2 distinct sizes (collective runs: rows whose
// coefficients determine every fitted parameter); otherwise calibrate throws InputError.
// Malformed input is an InputError naming the file, the line and the column.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/units.hpp"
#include "schema/result_csv.hpp"

namespace ssim::calib {

enum class CalibrationInput : std::uint8_t { sweep, collective_runs, nccl_tests };
// "point-to-point sweep", "collective runs" or "nccl-tests log".
std::string_view to_string(CalibrationInput input);

// Options stated on the command line (-O ALG:KEY=VALUE) for measured rows that do not record
// theirs (files written before the options column): algorithm name -> its options.
using StatedOptions = std::map<std::string, std::map<std::string, std::string>>;
// Adds one "ALG:KEY=VALUE". InputError naming `flag` (-O, --algorithm-option) and the text when
// it is not of that form, ALG is no registry algorithm, KEY is no option of ALG (or is
// `straggler`, which the rows' straggler column gives), or ALG's KEY is stated twice.
void add_stated_option(StatedOptions& stated, std::string_view text,
                       std::string_view flag = "-O");

struct CalibrationOptions {
  // Piece boundaries, strictly increasing: pieces [0, b1), [b1, b2), ..., [bk, inf), each fitted
  // on its own (pieces without rows are left out). Empty: one fit over every size.
  std::vector<Bytes> piecewise;
  // Sweeps with a link_class column: fit only this class (InputError when it has no rows).
  // Otherwise a label carried into the fits.
  std::optional<std::string> link_class;
  // Collective runs: the reduce cost, taken as known, unless fit_gamma.
  SecondsPerByte gamma{0.0};
  bool fit_gamma = false;
  // nccl-tests logs: the registry algorithm whose closed form models NCCL's AllReduce (default
  // ring); InputError for other inputs, whose rows name their algorithm.
  std::optional<std::string> algorithm;
  // nccl-tests logs that do not list their devices: the rank count.
  std::optional<int> ranks;
  // Result CSVs: the options of rows without an options column (see RunOptionsResolver).
  StatedOptions stated_options;
};

// Sizes [low, high); no high: unbounded.
struct SizeRange {
  Bytes low;
  std::optional<Bytes> high;
  bool contains(Bytes b) const { return b >= low && (!high || b < *high); }
};
// "[0, 64KiB)", "[64KiB, inf)".
std::string describe(const SizeRange& range);

// One measurement as a fit used it.
struct FitRow {
  int line = 0;       // in the input file
  std::string label;  // "ring n=8" for collective runs, empty for sweeps
  Bytes bytes;
  Seconds measured;
  Seconds fitted;
  double relative_error() const { return (fitted.value - measured.value) / measured.value; }
};

struct FitQuality {
  std::vector<FitRow> rows;  // in input order
  double r_squared = 0.0;    // 1 - SS_res / SS_tot on seconds (1 when both are 0)
  double median_abs_relative_error = 0.0;
  double max_abs_relative_error = 0.0;
};

struct AlphaBetaFit {
  std::string link_class;  // empty when the input has none and no label was given
  SizeRange piece;         // [0, inf) without piecewise
  Bytes min_bytes;         // smallest and largest size among the rows
  Bytes max_bytes;
  Seconds alpha;
  SecondsPerByte beta;
  std::optional<SecondsPerByte> gamma;  // collective runs with fit_gamma (>= 0)
  // fit_gamma: the gamma the unconstrained fit gave when it was negative; the fit was then redone
  // with gamma = 0 (the bound gamma >= 0 as a non-negative least squares of that coefficient).
  std::optional<SecondsPerByte> negative_gamma;
  FitQuality quality;
  BytesPerSecond bandwidth() const { return BytesPerSecond{1.0 / beta.value}; }
};

// kind=reduce rows of a sweep: seconds = intercept + gamma * bytes.
struct ReduceFit {
  SecondsPerByte gamma;
  Seconds intercept;
  Bytes min_bytes;
  Bytes max_bytes;
  FitQuality quality;
};

// Rows left out of the fits for one reason.
struct SkippedRows {
  std::string reason;
  std::vector<int> lines;
};

// Adds `line` to the entry of `reason` (appended, in order of first occurrence, when new).
void add_skipped(std::vector<SkippedRows>& skipped, const std::string& reason, int line);

struct Calibration {
  CalibrationInput input = CalibrationInput::sweep;
  std::string source;               // the input's name
  std::vector<AlphaBetaFit> fits;   // by link class (sorted), then by piece
  std::optional<ReduceFit> reduce;  // sweeps with kind=reduce rows
  // Collective runs: the gamma the fits assumed (not set when fit_gamma).
  std::optional<SecondsPerByte> assumed_gamma;
  std::vector<int> ranks;            // collective runs: the rank counts of the rows used, ascending
  std::vector<std::string> devices;  // collective runs: distinct device texts of the rows used
  std::size_t rows_used = 0;
  std::vector<SkippedRows> skipped;  // in order of first occurrence
  // Collective runs: algorithms whose rows neither record nor were stated options
  // (RunOptionsResolver::unrecorded), fitted with the defaults.
  std::set<std::string> unrecorded_options;
};

Calibration calibrate(std::istream& in, std::string_view name, const CalibrationOptions& options);

// The coefficients of alpha, beta and gamma in `algorithm`'s closed form at (ranks, bytes):
// cost(ranks, bytes, {1,0,0}), {0,1,0}, {0,0,1}. Exact because the closed forms are linear in
// the parameters; an always-on check verifies that on (1, 1, 1).
struct CostCoefficients {
  double alpha = 0.0;
  double beta = 0.0;
  double gamma = 0.0;
};
CostCoefficients cost_coefficients(const alg::AlgorithmInfo& algorithm, int ranks, double bytes,
                                   const alg::Options& options = {});
// The same, or nothing where the cost is not linear in the parameters (checked on (1, 1, 1) and
// on a latency-bound point): a cost read off a generated schedule's critical path, such as
// stragglar_hier's on several nodes, is a maximum over paths. calibrate skips such rows.
std::optional<CostCoefficients> linear_cost_coefficients(const alg::AlgorithmInfo& algorithm,
                                                         int ranks, double bytes,
                                                         const alg::Options& options = {});

// A result CSV row with the line it starts on.
struct MeasuredRun {
  int line = 0;
  schema::ResultRow row;
};
// read_result_csv plus the line of every row and range checks, where the values are read
// (InputError "FILE:LINE:COLUMN: column NAME: VALUE is outside [LO, HI] (...)"): ranks in
// [1, kMaxRunRanks], bytes in [1, kMaxRunBytes], straggler empty or in [0, ranks - 1],
// iteration >= 0, delay_s, time_s and after_last_arrival_s in [0, kMaxRunSeconds].
inline constexpr int kMaxRunRanks = 65536;
inline constexpr std::uint64_t kMaxRunBytes = std::uint64_t{1} << 50;  // 1 PiB
inline constexpr double kMaxRunSeconds = 1e6;                          // as nccl-tests logs
std::vector<MeasuredRun> read_measured_runs(std::istream& in, std::string_view name);

// The generator options a measured run ran with: its options column, or, in a file without
// that column, the options stated for its algorithm (StatedOptions). Each distinct (algorithm,
// ranks, options) is checked once by generating the schedule's header: an option the algorithm
// does not have or a value out of range is an InputError naming the file, the line and the
// column (or the -O option that stated it). `straggler` is not added (the caller knows the run's
// straggler).
class RunOptionsResolver {
 public:
  RunOptionsResolver(StatedOptions stated, std::string name);
  alg::Options operator()(const MeasuredRun& run, const alg::AlgorithmInfo& info);
  // Whether a stated option was applied to some row.
  bool stated_used() const { return stated_used_; }
  const StatedOptions& stated() const { return stated_; }
  // Algorithms with options (other than straggler) some of whose rows neither recorded nor were
  // stated options: run with the defaults, which may not be what ran.
  const std::set<std::string>& unrecorded() const { return unrecorded_; }

 private:
  StatedOptions stated_;
  std::string name_;
  std::set<std::string> checked_;
  std::set<std::string> unrecorded_;
  bool stated_used_ = false;
};

// "ALG:k=v;k=v" as -O would state them (for messages).
std::string stated_text(const std::string& algorithm,
                        const std::map<std::string, std::string>& options);

// The collective-runs fit on runs already read (a result CSV or an nccl-tests log).
Calibration calibrate_runs(const std::vector<MeasuredRun>& runs, std::string_view name,
                           const CalibrationOptions& options);

// "64KiB,1MiB" -> sizes; InputError unless strictly increasing and > 0.
std::vector<Bytes> parse_size_list(std::string_view text);

}  // namespace ssim::calib

#include "calibration/calibration.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <istream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

#include "calibration/nccl_tests.hpp"
#include "common/csv.hpp"
#include "common/error.hpp"
#include "common/stats.hpp"
#include "common/suggest.hpp"
#include "common/text.hpp"

namespace ssim::calib {
namespace {

// "-1.25e-05 ns/B": a fitted gamma as the CLI prints it.
std::string gamma_ns_per_byte(double seconds_per_byte) {
  std::ostringstream os;
  os.precision(6);
  os << seconds_per_byte * 1e9 << " ns/B";
  return os.str();
}

// ---- CSV records with line numbers -------------------------------------------------------

// Records of `text` (common/csv.hpp), so that the records after the header correspond one to
// one with read_result_csv's rows. With `comments`, '#' lines are skipped too.
std::vector<CsvRecord> split_records(const std::string& text, std::string_view name,
                                     bool comments) {
  std::istringstream in(text);
  return read_csv(in, std::string(name), {.comments = comments});
}

[[noreturn]] void bad_value(std::string_view name, int line, std::string_view column,
                            const std::string& value, std::string_view expected) {
  throw InputError(std::string(name) + ":" + std::to_string(line) + ": column " +
                   std::string(column) + ": bad value '" + value + "' (expected " +
                   std::string(expected) + ")");
}

std::optional<double> to_double(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

std::optional<std::uint64_t> to_size(const std::string& text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// ---- least squares -------------------------------------------------------------------------

struct Observation {
  int line = 0;
  std::string label;
  Bytes bytes;
  double measured = 0;               // what the fit is compared with, seconds (> 0)
  double offset = 0;                 // known part of the model, subtracted before fitting
  std::vector<double> coefficients;  // of the fitted parameters
};

// Minimises sum_i ((x_i . p + offset_i - measured_i) / measured_i)^2. Columns are scaled to unit
// norm first so that the rank test compares like with like (alpha's coefficient is ~1, beta's
// ~1e9 bytes). Returns nothing when the columns are linearly dependent (rank < columns).
std::optional<std::vector<double>> relative_least_squares(const std::vector<Observation>& rows,
                                                          int columns) {
  const Eigen::Index n = static_cast<Eigen::Index>(rows.size());
  Eigen::MatrixXd a(n, columns);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const Observation& o = rows[static_cast<std::size_t>(i)];
    for (int j = 0; j < columns; ++j)
      a(i, j) = o.coefficients[static_cast<std::size_t>(j)] / o.measured;
    b(i) = (o.measured - o.offset) / o.measured;
  }
  Eigen::VectorXd scale(columns);
  for (int j = 0; j < columns; ++j) {
    scale(j) = a.col(j).norm();
    if (scale(j) == 0) return std::nullopt;
    a.col(j) /= scale(j);
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  qr.setThreshold(1e-10);
  if (qr.rank() < columns) return std::nullopt;
  const Eigen::VectorXd p = qr.solve(b).cwiseQuotient(scale);
  return std::vector<double>(p.data(), p.data() + columns);
}

FitQuality assess(const std::vector<Observation>& rows, const std::vector<double>& params) {
  FitQuality q;
  double mean = 0;
  for (const Observation& o : rows) mean += o.measured;
  mean /= static_cast<double>(rows.size());
  double ss_res = 0, ss_tot = 0;
  std::vector<double> abs_errors;
  for (const Observation& o : rows) {
    double fitted = o.offset;
    for (std::size_t j = 0; j < params.size(); ++j) fitted += o.coefficients[j] * params[j];
    FitRow r{.line = o.line,
             .label = o.label,
             .bytes = o.bytes,
             .measured = Seconds{o.measured},
             .fitted = Seconds{fitted}};
    ss_res += (fitted - o.measured) * (fitted - o.measured);
    ss_tot += (o.measured - mean) * (o.measured - mean);
    abs_errors.push_back(std::fabs(r.relative_error()));
    q.rows.push_back(std::move(r));
  }
  q.r_squared = ss_tot > 0 ? 1.0 - ss_res / ss_tot : (ss_res == 0 ? 1.0 : 0.0);
  q.median_abs_relative_error = quantile(abs_errors, 0.5);
  q.max_abs_relative_error = *std::max_element(abs_errors.begin(), abs_errors.end());
  return q;
}

std::size_t distinct_sizes(const std::vector<Observation>& rows) {
  std::set<std::uint64_t> sizes;
  for (const Observation& o : rows) sizes.insert(o.bytes.value);
  return sizes.size();
}

std::vector<SizeRange> pieces_of(const std::vector<Bytes>& bounds) {
  std::vector<SizeRange> pieces;
  Bytes low{0};
  for (const Bytes b : bounds) {
    pieces.push_back({low, b});
    low = b;
  }
  pieces.push_back({low, std::nullopt});
  return pieces;
}

std::string where(std::string_view name, const std::string& link_class, const SizeRange& piece,
                  bool piecewise) {
  std::string s(name);
  if (!link_class.empty()) s += ": link class " + link_class;
  if (piecewise) s += ": sizes " + describe(piece);
  return s;
}

void check_bounds(const CalibrationOptions& options) {
  for (std::size_t i = 0; i < options.piecewise.size(); ++i) {
    if (options.piecewise[i].value == 0 ||
        (i > 0 && options.piecewise[i] <= options.piecewise[i - 1])) {
      throw InputError("piecewise boundaries must be > 0 and strictly increasing");
    }
  }
}

// Splits one group's rows into pieces and fits alpha, beta (and gamma when `with_gamma`) on each.
void fit_pieces(std::string_view name, const std::string& link_class,
                const std::vector<Observation>& rows, const CalibrationOptions& options,
                bool with_gamma, Calibration& out) {
  const bool piecewise = !options.piecewise.empty();
  for (const SizeRange& piece : pieces_of(options.piecewise)) {
    std::vector<Observation> in;
    for (const Observation& o : rows) {
      if (piece.contains(o.bytes)) in.push_back(o);
    }
    if (in.empty()) continue;
    const std::string at = where(name, link_class, piece, piecewise);
    const std::size_t sizes = distinct_sizes(in);
    const int columns = with_gamma ? 3 : 2;
    auto ab = relative_least_squares(in, 2);
    if ((out.input == CalibrationInput::sweep && sizes < 2) || !ab) {
      std::string what = at + ": " + std::to_string(in.size()) + " row" +
                         (in.size() == 1 ? "" : "s") + " at " + std::to_string(sizes) +
                         " distinct size" + (sizes == 1 ? "" : "s") +
                         ": fitting alpha and beta needs at least 2 distinct sizes";
      if (out.input == CalibrationInput::collective_runs)
        what += " (or one size at several rank counts)";
      if (piecewise)
        what += "; move the --piecewise boundaries so that every piece holding rows has 2";
      throw InputError(what);
    }
    std::optional<std::vector<double>> params =
        with_gamma ? relative_least_squares(in, columns) : ab;
    if (!params) {
      throw InputError(
          at +
          ": beta and gamma cannot be told apart: in every row used the gamma coefficient is "
          "proportional to the beta one (ring and rhd reduce half the bytes they move); add runs "
          "of direct, tree or dbtree, or give --gamma (e.g. from a reduce sweep) instead of "
          "--fit-gamma");
    }
    AlphaBetaFit f;
    f.link_class = link_class;
    f.piece = piece;
    f.min_bytes = std::min_element(in.begin(), in.end(), [](auto& a, auto& b) {
                    return a.bytes < b.bytes;
                  })->bytes;
    f.max_bytes = std::max_element(in.begin(), in.end(), [](auto& a, auto& b) {
                    return a.bytes < b.bytes;
                  })->bytes;
    // gamma >= 0: a negative reduce cost would make every simulated reduction gain time (and
    // validate refuses it). With one bounded coefficient, the non-negative least squares is
    // the unconstrained fit when that is feasible, else the fit on the face gamma = 0.
    if (with_gamma && (*params)[2] < 0) {
      f.negative_gamma = SecondsPerByte{(*params)[2]};
      params = std::vector<double>{(*ab)[0], (*ab)[1], 0.0};
    }
    f.alpha = Seconds{(*params)[0]};
    f.beta = SecondsPerByte{(*params)[1]};
    if (with_gamma) f.gamma = SecondsPerByte{(*params)[2]};
    f.quality = assess(in, *params);
    out.fits.push_back(std::move(f));
  }
}

void skip(Calibration& c, const std::string& reason, int line) {
  add_skipped(c.skipped, reason, line);
}

// ---- sweeps --------------------------------------------------------------------------------

constexpr const char* kInputForms =
    "a calibration input is a sweep with columns bytes,seconds[,link_class][,kind] or a result CSV "
    "(schema/result_csv.hpp)";

Calibration calibrate_sweep(const std::vector<CsvRecord>& records, std::string_view name,
                            const CalibrationOptions& options) {
  const CsvRecord& header = records.front();
  const std::map<std::string, std::size_t> index = csv_column_index(std::string(name), header);
  for (const char* required : {"bytes", "seconds"}) {
    if (!index.count(required)) {
      throw InputError(std::string(name) + ":" + std::to_string(header.line) +
                       ": missing column '" + required + "' (" + kInputForms + ")");
    }
  }
  const std::size_t bytes_at = index.at("bytes"), seconds_at = index.at("seconds");
  constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);
  const std::size_t class_at = index.count("link_class") ? index.at("link_class") : kAbsent;
  const std::size_t kind_at = index.count("kind") ? index.at("kind") : kAbsent;
  // Without the column every row would be fitted under the --link-class name.
  if (options.link_class && class_at == kAbsent) {
    throw InputError(std::string(name) + ": --link-class " + *options.link_class +
                     ": the sweep has no link_class column");
  }

  Calibration c;
  c.input = CalibrationInput::sweep;
  c.source = std::string(name);
  std::map<std::string, std::vector<Observation>> p2p;  // by link class, sorted
  std::vector<Observation> reduce;
  for (std::size_t r = 1; r < records.size(); ++r) {
    const CsvRecord& rec = records[r];
    if (rec.fields.size() != header.fields.size()) {
      throw InputError(std::string(name) + ":" + std::to_string(rec.line) + ": " +
                       std::to_string(rec.fields.size()) + " fields, the header has " +
                       std::to_string(header.fields.size()));
    }
    const std::string bytes_text(trim(rec.fields[bytes_at]));
    const std::string seconds_text(trim(rec.fields[seconds_at]));
    const auto bytes = to_size(bytes_text);
    if (!bytes) bad_value(name, rec.line, "bytes", bytes_text, "a whole number of bytes >= 0");
    const auto seconds = to_double(seconds_text);
    if (!seconds || *seconds <= 0)
      bad_value(name, rec.line, "seconds", seconds_text, "a time in seconds > 0");
    if (*seconds < 1e-12)  // below 1 ps (denormals too) is no measured time, and breaks the fit
      bad_value(name, rec.line, "seconds", seconds_text, "a time in seconds >= 1e-12 (1 ps)");
    bool is_reduce = false;
    if (kind_at != kAbsent) {
      const std::string kind(trim(rec.fields[kind_at]));
      if (kind == "reduce") {
        is_reduce = true;
      } else if (kind != "p2p" && !kind.empty()) {
        bad_value(name, rec.line, "kind", kind, "p2p or reduce");
      }
    }
    Observation o{.line = rec.line,
                  .label = "",
                  .bytes = Bytes{*bytes},
                  .measured = *seconds,
                  .offset = 0,
                  .coefficients = {1.0, static_cast<double>(*bytes)}};
    if (is_reduce) {
      reduce.push_back(std::move(o));
      continue;
    }
    const bool has_class = class_at != kAbsent;
    std::string cls =
        has_class ? std::string(trim(rec.fields[class_at])) : options.link_class.value_or("");
    if (has_class && options.link_class && cls != *options.link_class) {
      skip(c, "link class '" + cls + "' (not --link-class " + *options.link_class + ")", rec.line);
      continue;
    }
    p2p[cls].push_back(std::move(o));
  }
  if (class_at != kAbsent && options.link_class && p2p.empty()) {
    std::string classes;
    for (const SkippedRows& s : c.skipped) classes += (classes.empty() ? "" : "; ") + s.reason;
    throw InputError(std::string(name) + ": no p2p row has link class '" + *options.link_class +
                     "' (found: " + (classes.empty() ? "none" : classes) + ")");
  }
  if (p2p.empty() && reduce.empty())
    throw InputError(std::string(name) + ": no measurements (only a header)");
  for (const auto& [cls, rows] : p2p) {
    c.rows_used += rows.size();
    fit_pieces(name, cls, rows, options, false, c);
  }
  if (!reduce.empty()) {
    const std::size_t sizes = distinct_sizes(reduce);
    if (sizes < 2) {
      throw InputError(std::string(name) + ": kind=reduce rows: " + std::to_string(reduce.size()) +
                       " row" + (reduce.size() == 1 ? "" : "s") +
                       " at 1 distinct size: fitting gamma needs at least 2 "
                       "distinct sizes");
    }
    const auto params = relative_least_squares(reduce, 2);
    // Distinct sizes can still be numerically one (268435456 and 268435457 B): bad input.
    if (!params) {
      throw InputError(std::string(name) + ": kind=reduce rows: " + std::to_string(reduce.size()) +
                       " rows at " + std::to_string(sizes) +
                       " distinct sizes too close together to separate gamma from the intercept; "
                       "measure sizes that differ by a factor of 2 or more");
    }
    // A reduction that takes no longer, or less time, on more bytes is not a cost model: a
    // negative gamma would make every simulated reduction gain time. Nearly equal sizes with
    // noisy times give exactly that, so it is the input's fault, named with the fitted value.
    if (!((*params)[1] > 0)) {
      const auto [lo, hi] = std::minmax_element(reduce.begin(), reduce.end(),
                                                [](auto& a, auto& b) { return a.bytes < b.bytes; });
      throw InputError(
          std::string(name) + ": kind=reduce rows: the fitted gamma is " +
          gamma_ns_per_byte((*params)[1]) + " (" + std::to_string(reduce.size()) + " rows, " +
          std::to_string(lo->bytes.value) + " .. " + std::to_string(hi->bytes.value) +
          " B): the times do not grow with the size, so gamma is not measured; measure sizes "
          "that differ by a factor of 2 or more (e.g. 64KiB .. 256MiB), or give --gamma");
    }
    ReduceFit g;
    g.intercept = Seconds{(*params)[0]};
    g.gamma = SecondsPerByte{(*params)[1]};
    g.min_bytes = std::min_element(reduce.begin(), reduce.end(), [](auto& a, auto& b) {
                    return a.bytes < b.bytes;
                  })->bytes;
    g.max_bytes = std::max_element(reduce.begin(), reduce.end(), [](auto& a, auto& b) {
                    return a.bytes < b.bytes;
                  })->bytes;
    g.quality = assess(reduce, *params);
    c.reduce = std::move(g);
    c.rows_used += reduce.size();
  }
  return c;
}

// ---- collective runs -----------------------------------------------------------------------

const alg::AlgorithmInfo* lookup(const std::string& name) {
  for (const alg::AlgorithmInfo& a : alg::algorithms()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

}  // namespace

Calibration calibrate_runs(const std::vector<MeasuredRun>& runs, std::string_view name,
                           const CalibrationOptions& options) {
  check_bounds(options);
  Calibration c;
  c.input = CalibrationInput::collective_runs;
  c.source = std::string(name);
  if (!options.fit_gamma) c.assumed_gamma = options.gamma;
  std::vector<Observation> rows;
  std::set<int> ranks;
  RunOptionsResolver resolve(options.stated_options, std::string(name));
  for (const MeasuredRun& run : runs) {
    const schema::ResultRow& r = run.row;
    if (r.source != schema::ResultSource::measured) {
      skip(c, "simulated rows (only measured runs are fitted)", run.line);
      continue;
    }
    const alg::AlgorithmInfo* info = lookup(r.algorithm);
    if (info == nullptr) {
      skip(c, "algorithm '" + r.algorithm + "' has no closed form in the registry", run.line);
      continue;
    }
    if (!info->supports_ranks(r.ranks)) {
      skip(c,
           info->name + " does not support " + std::to_string(r.ranks) + " ranks (" +
               info->supported_ranks + ")",
           run.line);
      continue;
    }
    const bool delayed = r.delay.value > 0;
    if (delayed && info->straggler_aware) {
      skip(c,
           info->name +
               " with a delay (straggler-aware: its time after the last arrival is not the closed "
               "form)",
           run.line);
      continue;
    }
    const double t = delayed ? r.after_last_arrival.value : r.time.value;
    if (t <= 0) {
      bad_value(name, run.line, delayed ? "after_last_arrival_s" : "time_s", "0",
                "a time > 0 to fit");
    }
    // The schedule that ran: the row's options (or those -O states for files without them).
    const alg::Options run_options = resolve(run, *info);
    if (info->name == "nccl" && !run_options.has("algo")) {
      // NCCL's own choice depends on the machine being fitted: which closed form applies is
      // not known until the fit is (a row that states algo= is fitted with that algorithm's).
      skip(c,
           "algorithm 'nccl' without algo= in its options (NCCL's own choice of algorithm "
           "depends on the machine being fitted: no closed form)",
           run.line);
      continue;
    }
    const std::optional<CostCoefficients> linear =
        linear_cost_coefficients(*info, r.ranks, static_cast<double>(r.bytes.value), run_options);
    const std::string options_text = schema::canonical_options(run_options.values());
    if (!linear) {
      // A cost read off the generated schedule's critical path (stragglar_hier on several
      // nodes): a maximum over paths, not linear in the parameters, so not a least-squares row.
      skip(c,
           info->name + (options_text.empty() ? "" : "[" + options_text + "]") +
               ": its cost is not linear in (alpha, beta, gamma) here",
           run.line);
      continue;
    }
    const CostCoefficients& k = *linear;
    Observation o;
    o.line = run.line;
    o.label = info->name + (options_text.empty() ? "" : "[" + options_text + "]") +
              " n=" + std::to_string(r.ranks) + (delayed ? " delayed" : "");
    o.bytes = r.bytes;
    o.measured = t;
    o.coefficients = {k.alpha, k.beta};
    if (options.fit_gamma) {
      o.coefficients.push_back(k.gamma);
    } else {
      o.offset = k.gamma * options.gamma.value;
    }
    rows.push_back(std::move(o));
    ranks.insert(r.ranks);
    if (std::find(c.devices.begin(), c.devices.end(), r.device) == c.devices.end())
      c.devices.push_back(r.device);
  }
  if (rows.empty()) {
    std::string why;
    for (const SkippedRows& s : c.skipped) why += (why.empty() ? "" : "; ") + s.reason;
    throw InputError(std::string(name) + ": no measured run can be fitted (" +
                     (why.empty() ? "no rows" : why) + ")");
  }
  c.rows_used = rows.size();
  c.ranks.assign(ranks.begin(), ranks.end());
  c.unrecorded_options = resolve.unrecorded();
  fit_pieces(name, options.link_class.value_or(""), rows, options, options.fit_gamma, c);
  return c;
}

std::string_view to_string(CalibrationInput input) {
  switch (input) {
    case CalibrationInput::sweep:
      return "point-to-point sweep";
    case CalibrationInput::collective_runs:
      return "collective runs";
    case CalibrationInput::nccl_tests:
      return "nccl-tests log";
  }
  return "?";
}

std::string describe(const SizeRange& range) {
  std::string s = "[";
  s += format_bytes(range.low);
  s += ", ";
  s += range.high ? format_bytes(*range.high) : std::string("inf");
  return s + ")";
}

std::optional<CostCoefficients> linear_cost_coefficients(const alg::AlgorithmInfo& algorithm,
                                                         int ranks, double bytes,
                                                         const alg::Options& options) {
  // An in-switch reduction's time depends on the switch's reduction bandwidth through a max()
  // (nvls.cpp): not a least-squares row of (alpha, beta, gamma).
  if (algorithm.in_network) return std::nullopt;
  const CostCoefficients k{
      .alpha =
          algorithm.cost(ranks, bytes, alg::CostParams{.alpha = 1, .beta = 0, .gamma = 0}, options),
      .beta =
          algorithm.cost(ranks, bytes, alg::CostParams{.alpha = 0, .beta = 1, .gamma = 0}, options),
      .gamma = algorithm.cost(ranks, bytes, alg::CostParams{.alpha = 0, .beta = 0, .gamma = 1},
                              options)};
  // Linearity on (1, 1, 1), a latency-bound and a bandwidth-bound point (where a max() over
  // parameter-dependent terms picks other branches than on the unit vectors).
  for (const alg::CostParams p : {alg::CostParams{.alpha = 1, .beta = 1, .gamma = 1},
                                  alg::CostParams{.alpha = 1, .beta = 1e-9, .gamma = 1e-9},
                                  alg::CostParams{.alpha = 1e-9, .beta = 1, .gamma = 1e-9}}) {
    const double all = algorithm.cost(ranks, bytes, p, options);
    const double sum = k.alpha * p.alpha + k.beta * p.beta + k.gamma * p.gamma;
    if (!(std::fabs(all - sum) <= 1e-9 * std::max(1.0, std::fabs(all)))) return std::nullopt;
  }
  return k;
}

CostCoefficients cost_coefficients(const alg::AlgorithmInfo& algorithm, int ranks, double bytes,
                                   const alg::Options& options) {
  const std::optional<CostCoefficients> k =
      linear_cost_coefficients(algorithm, ranks, bytes, options);
  // A closed form with a max() over parameter-dependent terms would make the unit-vector
  // reading wrong, and this catches it.
  SSIM_CHECK(k.has_value(),
             algorithm.name + "'s closed form is not linear in (alpha, beta, gamma)");
  return *k;
}

std::vector<MeasuredRun> read_measured_runs(std::istream& in, std::string_view name) {
  const std::string text(std::istreambuf_iterator<char>(in), {});
  std::istringstream again(text);
  std::vector<schema::ResultRow> rows = schema::read_result_csv(again, name);
  const std::vector<CsvRecord> records = split_records(text, name, false);
  SSIM_CHECK(records.size() == rows.size() + 1, "result CSV records and rows disagree");
  const std::vector<std::string>& header = records.front().fields;
  std::vector<MeasuredRun> runs;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CsvRecord& record = records[i + 1];
    MeasuredRun run{.line = record.line, .row = std::move(rows[i])};
    const schema::ResultRow& r = run.row;
    // "FILE:LINE:COLUMN: column NAME: VALUE is outside RANGE (WHY)", VALUE as written.
    auto outside = [&](std::string_view column, const std::string& range, std::string_view why) {
      const auto at = std::find(header.begin(), header.end(), column);
      SSIM_CHECK(at != header.end(), "a checked result column is missing");
      const auto k = static_cast<std::size_t>(at - header.begin());
      throw InputError(std::string(name) + ":" + std::to_string(record.positions[k].line) + ":" +
                       std::to_string(record.positions[k].column) + ": column " +
                       std::string(column) + ": " + printable(record.fields[k]) +
                       " is outside " + range + " (" + std::string(why) + ")");
    };
    if (r.ranks < 1 || r.ranks > kMaxRunRanks)
      outside("ranks", "[1, " + std::to_string(kMaxRunRanks) + "]", "the run's rank count");
    if (r.bytes.value < 1 || r.bytes.value > kMaxRunBytes)
      outside("bytes", "[1, " + std::to_string(kMaxRunBytes) + "]", "the buffer size in bytes");
    if (r.straggler && (*r.straggler < 0 || *r.straggler >= r.ranks)) {
      outside("straggler", "[0, " + std::to_string(r.ranks - 1) + "]",
              "the late rank of a run of " + std::to_string(r.ranks) +
                  " ranks; empty: none");
    }
    if (r.iteration < 0)
      outside("iteration", "[0, " + std::to_string(std::numeric_limits<int>::max()) + "]",
              "the iteration's index");
    auto seconds = [&](std::string_view column, Seconds t) {
      if (!(t.value >= 0 && t.value <= kMaxRunSeconds))
        outside(column, "[0, 1e6]", "a time in seconds");
    };
    seconds("delay_s", r.delay);
    seconds("time_s", r.time);
    seconds("after_last_arrival_s", r.after_last_arrival);
    runs.push_back(std::move(run));
  }
  return runs;
}

namespace {

// "unknown algorithm 'NAME' (did you mean 'N'? valid: ...)", the suggestion when a name is close.
std::string unknown_algorithm(const std::string& algorithm) {
  std::string names;
  std::vector<std::string> known;
  for (const alg::AlgorithmInfo& a : alg::algorithms()) {
    names += (names.empty() ? "" : ", ") + a.name;
    known.push_back(a.name);
  }
  const std::optional<std::string> near = closest_name(algorithm, known);
  return "unknown algorithm '" + algorithm + "' (" +
         (near ? "did you mean '" + *near + "'? " : "") + "valid: " + names + ")";
}

}  // namespace

Calibration calibrate(std::istream& in, std::string_view name, const CalibrationOptions& options) {
  check_bounds(options);
  const std::string text(std::istreambuf_iterator<char>(in), {});
  if (looks_like_nccl_tests(text)) {
    const std::string algorithm = options.algorithm.value_or("ring");
    const alg::AlgorithmInfo* info = lookup(algorithm);
    if (info == nullptr) {
      throw InputError("--algorithm: " + unknown_algorithm(algorithm));
    }
    if (info->name == "nccl") {
      throw InputError(
          "--algorithm nccl: NCCL's own choice depends on the machine this fit is for, so it has "
          "no closed form; name the algorithm the log ran (ring, nccl_ring, nccl_tree, ...)");
    }
    const NcclTestsLog log = parse_nccl_tests(text, name);
    std::vector<SkippedRows> skipped;
    const std::vector<MeasuredRun> runs =
        nccl_tests_runs(log, name, info->name, options.ranks, skipped);
    Calibration c = calibrate_runs(runs, name, options);
    c.input = CalibrationInput::nccl_tests;
    c.skipped.insert(c.skipped.begin(), skipped.begin(), skipped.end());
    return c;
  }
  if (options.algorithm) {
    throw InputError(std::string(name) +
                     ": --algorithm is for nccl-tests logs; the rows of this file name their "
                     "algorithm");
  }
  const std::vector<CsvRecord> records = split_records(text, name, true);
  if (records.empty()) throw InputError(std::string(name) + ": empty file (" + kInputForms + ")");
  const std::vector<std::string>& header = records.front().fields;
  auto has = [&](const char* column) {
    return std::find(header.begin(), header.end(), column) != header.end();
  };
  if (has("source") && has("time_s")) {
    std::istringstream again(text);
    return calibrate_runs(read_measured_runs(again, name), name, options);
  }
  return calibrate_sweep(records, name, options);
}

void add_stated_option(StatedOptions& stated, std::string_view text, std::string_view flag) {
  const std::string whole(text);
  auto fail = [&](const std::string& what) -> void {
    throw InputError(std::string(flag) + " " + whole + ": " + what);
  };
  const std::size_t colon = text.find(':');
  const std::size_t eq = text.find('=', colon == std::string_view::npos ? 0 : colon);
  if (colon == std::string_view::npos || eq == std::string_view::npos || colon == 0 ||
      eq == colon + 1) {
    fail("expected ALG:KEY=VALUE (e.g. hierarchical:gpus_per_node=4)");
  }
  const std::string algorithm(text.substr(0, colon));
  const std::string key(text.substr(colon + 1, eq - colon - 1));
  const std::string value(text.substr(eq + 1));
  const alg::AlgorithmInfo* info = lookup(algorithm);
  if (info == nullptr) {
    fail(unknown_algorithm(algorithm));
  }
  if (key == "straggler")
    fail("the straggler comes from the rows' straggler column (n-1 when it is empty)");
  const bool known = info->takes(key);
  if (!known) fail(alg::unknown_option_message(*info, algorithm, key));
  if (value.empty() || value.find(';') != std::string::npos)
    fail("the value must be non-empty and hold no ';'");
  if (!stated[algorithm].emplace(key, value).second)
    fail(algorithm + "'s " + key + " is given twice");
}

std::string stated_text(const std::string& algorithm,
                        const std::map<std::string, std::string>& options) {
  std::string s;
  for (const auto& [key, value] : options)
    s += (s.empty() ? "" : " ") + algorithm + ":" + key + "=" + value;
  return s;
}

RunOptionsResolver::RunOptionsResolver(StatedOptions stated, std::string name)
    : stated_(std::move(stated)), name_(std::move(name)) {}

alg::Options RunOptionsResolver::operator()(const MeasuredRun& run,
                                            const alg::AlgorithmInfo& info) {
  std::map<std::string, std::string> values;
  std::string from;
  if (run.row.options) {
    values = schema::parse_options(*run.row.options);
    from = "column options";
  } else if (auto it = stated_.find(info.name); it != stated_.end()) {
    values = it->second;
    from = "-O " + stated_text(info.name, values) + " (the file has no options column)";
    stated_used_ = true;
  } else if (std::any_of(info.options.begin(), info.options.end(),
                         [](const alg::OptionSpec& o) { return o.name != "straggler"; })) {
    unrecorded_.insert(info.name);
  }
  alg::Options options(values);
  const std::string key =
      info.name + "/" + std::to_string(run.row.ranks) + "/" + schema::canonical_options(values);
  if (!values.empty() && !checked_.count(key)) {
    try {
      // The header is built eagerly and checks every option; the rounds are not generated.
      (void)alg::generate_rounds(info.name, run.row.ranks, options);
    } catch (const InputError& e) {
      throw InputError(name_ + ":" + std::to_string(run.line) + ": " + from + ": " + e.what());
    }
    checked_.insert(key);
  }
  return options;
}

std::vector<Bytes> parse_size_list(std::string_view text) {
  std::vector<Bytes> sizes;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item(
        trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start)));
    const Bytes b = parse_bytes(item);
    if (b.value == 0) throw InputError("size list '" + std::string(text) + "': sizes must be > 0");
    if (!sizes.empty() && b <= sizes.back()) {
      throw InputError("size list '" + std::string(text) + "': sizes must be strictly increasing");
    }
    sizes.push_back(b);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return sizes;
}

void add_skipped(std::vector<SkippedRows>& skipped, const std::string& reason, int line) {
  for (SkippedRows& s : skipped) {
    if (s.reason == reason) {
      s.lines.push_back(line);
      return;
    }
  }
  skipped.push_back({reason, {line}});
}

}  // namespace ssim::calib

#include "gpu_backend/mpi/mpi_executor.hpp"

#include <algorithm>
#include <chrono>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "gpu_backend/float16.hpp"

namespace ssim::gpu {

namespace {

// Largest piece of one message or MPI_Allreduce call; keeps every MPI count an int.
constexpr std::uint64_t kMaxPieceBytes = std::uint64_t{1} << 30;
// MPI guarantees tags up to at least 32767.
constexpr int kTagMask = 0x7fff;

MPI_Datatype mpi_type(lowering::DType dtype) {
  switch (dtype) {
    case lowering::DType::float32:
      return MPI_FLOAT;
    case lowering::DType::float64:
      return MPI_DOUBLE;
    case lowering::DType::int32:
      return MPI_INT32_T;
    case lowering::DType::int64:
      return MPI_INT64_T;
    case lowering::DType::float16:
    case lowering::DType::bfloat16:
      return MPI_UINT16_T;  // the bit pattern; summed by a user-defined op (sum_16bit)
  }
  SSIM_CHECK(false, "unknown dtype");
  return MPI_BYTE;
}

// MPI has no half or bfloat16: MPI_Allreduce sums them with this op on MPI_UINT16_T.
template <class T>
void sum_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const T*>(in);
  auto* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] += a[i];
}

}  // namespace

class MpiCollectiveRun::Buffers {
 public:
  virtual ~Buffers() = default;
  virtual void reset() = 0;
  virtual void run_plan(const lowering::RankPlan& plan, MPI_Comm comm) = 0;
  virtual void run_allreduce(MPI_Comm comm) = 0;
  virtual std::span<const std::byte> data() const = 0;
};

namespace {

template <class T>
class TypedBuffers final : public MpiCollectiveRun::Buffers {
 public:
  TypedBuffers(const lowering::Plan& plan, int rank)
      : input_(plan.layout.padded_count()),
        data_(plan.layout.padded_count()),
        scratch_(plan.rank_plans[static_cast<std::size_t>(rank)].scratch_bytes / sizeof(T)) {
    fill_input(plan, rank, std::as_writable_bytes(std::span(input_)));
    if constexpr (kSixteenBitFloat) {
      SSIM_MPI(MPI_Op_create(&sum_16bit<T>, /*commute=*/1, &sum_));
    }
  }
  ~TypedBuffers() override {
    if (sum_ != MPI_SUM) MPI_Op_free(&sum_);
  }
  TypedBuffers(const TypedBuffers&) = delete;
  TypedBuffers& operator=(const TypedBuffers&) = delete;

  void reset() override { std::copy(input_.begin(), input_.end(), data_.begin()); }

  void run_plan(const lowering::RankPlan& plan, MPI_Comm comm) override {
    auto* data = reinterpret_cast<std::byte*>(data_.data());
    auto* scratch = reinterpret_cast<std::byte*>(scratch_.data());
    for (const lowering::Step& step : plan.steps) {
      requests_.clear();
      const int tag = step.round & kTagMask;
      for (const lowering::P2P& v : step.recvs) {
        post(scratch + v.offset, v.count * sizeof(T), v.peer, tag, comm, /*send=*/false);
      }
      for (const lowering::P2P& s : step.sends) {
        post(data + s.offset, s.count * sizeof(T), s.peer, tag, comm, /*send=*/true);
      }
      SSIM_MPI(
          MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
      for (const lowering::Apply& a : step.applies) {
        T* dst = data_.data() + a.offset / sizeof(T);
        const T* src = scratch_.data() + a.scratch_offset / sizeof(T);
        if (a.op == alg::Op::reduce) {
          for (std::uint64_t k = 0; k < a.count; ++k) dst[k] += src[k];
        } else {
          std::copy_n(src, a.count, dst);
        }
      }
    }
  }

  void run_allreduce(MPI_Comm comm) override {
    const std::uint64_t piece = kMaxPieceBytes / sizeof(T);
    const MPI_Datatype type = mpi_type(dtype_of());
    for (std::uint64_t first = 0; first < data_.size(); first += piece) {
      const auto count = static_cast<int>(std::min<std::uint64_t>(piece, data_.size() - first));
      SSIM_MPI(MPI_Allreduce(MPI_IN_PLACE, data_.data() + first, count, type, sum_, comm));
    }
  }

  std::span<const std::byte> data() const override { return std::as_bytes(std::span(data_)); }

 private:
  static constexpr bool kSixteenBitFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

  static lowering::DType dtype_of() {
    if constexpr (std::is_same_v<T, float>) return lowering::DType::float32;
    if constexpr (std::is_same_v<T, double>) return lowering::DType::float64;
    if constexpr (std::is_same_v<T, std::int32_t>) return lowering::DType::int32;
    if constexpr (std::is_same_v<T, Half>) return lowering::DType::float16;
    if constexpr (std::is_same_v<T, BFloat16>) return lowering::DType::bfloat16;
    return lowering::DType::int64;
  }

  void post(std::byte* buffer, std::uint64_t bytes, int peer, int tag, MPI_Comm comm, bool send) {
    for (std::uint64_t first = 0; first < bytes; first += kMaxPieceBytes) {
      const auto count = static_cast<int>(std::min(kMaxPieceBytes, bytes - first));
      MPI_Request& r = requests_.emplace_back(MPI_REQUEST_NULL);
      if (send) {
        SSIM_MPI(MPI_Isend(buffer + first, count, MPI_BYTE, peer, tag, comm, &r));
      } else {
        SSIM_MPI(MPI_Irecv(buffer + first, count, MPI_BYTE, peer, tag, comm, &r));
      }
    }
  }

  std::vector<T> input_;
  std::vector<T> data_;
  std::vector<T> scratch_;
  std::vector<MPI_Request> requests_;
  MPI_Op sum_ = MPI_SUM;
};

std::unique_ptr<MpiCollectiveRun::Buffers> make_buffers(const lowering::Plan& plan, int rank) {
  switch (plan.layout.dtype) {
    case lowering::DType::float32:
      return std::make_unique<TypedBuffers<float>>(plan, rank);
    case lowering::DType::float64:
      return std::make_unique<TypedBuffers<double>>(plan, rank);
    case lowering::DType::int32:
      return std::make_unique<TypedBuffers<std::int32_t>>(plan, rank);
    case lowering::DType::int64:
      return std::make_unique<TypedBuffers<std::int64_t>>(plan, rank);
    case lowering::DType::float16:
      return std::make_unique<TypedBuffers<Half>>(plan, rank);
    case lowering::DType::bfloat16:
      return std::make_unique<TypedBuffers<BFloat16>>(plan, rank);
  }
  SSIM_CHECK(false, "unknown dtype");
  return nullptr;
}

}  // namespace

MpiCollectiveRun::MpiCollectiveRun(MPI_Comm comm, const MpiWorld& world, MpiCollective collective,
                                   MpiIterationSettings settings)
    : comm_(comm), world_(world), collective_(std::move(collective)), settings_(settings) {
  SSIM_CHECK(collective_.plan.ranks == world_.size, "plan ranks must equal the MPI world size");
  SSIM_CHECK(static_cast<int>(collective_.plan.rank_plans.size()) == world_.size,
             "plan needs one rank plan per rank");
  buffers_ = make_buffers(collective_.plan, world_.rank);
}

MpiCollectiveRun::~MpiCollectiveRun() = default;

MpiIterationResult MpiCollectiveRun::run(bool check) {
  buffers_->reset();
  SSIM_MPI(MPI_Barrier(comm_));
  const double barrier_exit = clock_now(world_.clock);
  if (world_.rank == settings_.straggler && settings_.delay.value > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(settings_.delay.value));
  }
  const double start = clock_now(world_.clock);
  if (collective_.mpi_allreduce) {
    buffers_->run_allreduce(comm_);
  } else {
    buffers_->run_plan(collective_.plan.rank_plans[static_cast<std::size_t>(world_.rank)], comm_);
  }
  const double finish = clock_now(world_.clock);

  const double origin = world_.clock == MpiClock::barrier_relative ? barrier_exit : 0.0;
  // Every rank's (start, finish) on every rank: the spread, the two measures and the per-rank
  // times all come from them.
  const double local[2] = {start - origin, finish - origin};
  std::vector<double> all(2 * static_cast<std::size_t>(world_.size));
  SSIM_MPI(MPI_Allgather(local, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, comm_));
  double first_start = all[0], last_start = all[0], last_finish = all[1];
  std::vector<double> own(static_cast<std::size_t>(world_.size));
  for (std::size_t r = 0; r < own.size(); ++r) {
    first_start = std::min(first_start, all[2 * r]);
    last_start = std::max(last_start, all[2 * r]);
    last_finish = std::max(last_finish, all[2 * r + 1]);
    own[r] = all[2 * r + 1] - all[2 * r];
  }
  MpiIterationResult r;
  r.time = Seconds{last_finish - first_start};
  r.after_last_arrival = Seconds{last_finish - last_start};
  r.delay_measured = Seconds{last_start - first_start};
  r.rank_time = Seconds{combine(settings_.average, own)};
  if (check) {
    check_output(collective_.plan, world_.rank, buffers_->data(), r.local);
    const std::uint64_t mine = r.local.wrong;
    std::uint64_t total = 0;
    SSIM_MPI(MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, comm_));
    r.wrong = total;
  }
  return r;
}

}  // namespace ssim::gpu

// CPU versions of the executor's kernels (gpu_backend/cuda/kernels.cu) behind the same host
// launch functions (gpu_backend/cuda/kernels.hpp): each launch checks its arguments like a
// real launch, then runs on the emulated stream (emulator.hpp). Same arithmetic as the CUDA
// kernels, element by element; the apply kernel additionally checks that the items of one
// launch write disjoint ranges, which the CUDA kernel assumes.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_backend/cuda/kernels.hpp"
#include "tests/gpu_emulated/emulator.hpp"
#include "tests/gpu_emulated/half.hpp"

namespace ssim::gpu {

namespace {

// Element access: arithmetic types as they are; the 16-bit types widen to float for the sum
// and round back, as the GPU's half and bfloat16 additions do.
template <class T>
T widen(T v) {
  return v;
}
inline float widen(emu::Half v) { return emu::to_float(v); }
inline float widen(emu::Bfloat16 v) { return emu::to_float(v); }
template <class T, class A>
T narrow(A v) {
  return static_cast<T>(v);
}
template <>
emu::Half narrow<emu::Half, float>(float v) {
  return emu::to_half(v);
}
template <>
emu::Bfloat16 narrow<emu::Bfloat16, float>(float v) {
  return emu::to_bfloat16(v);
}
template <>
emu::Half narrow<emu::Half, std::uint64_t>(std::uint64_t v) {
  return emu::to_half(static_cast<float>(v));
}
template <>
emu::Bfloat16 narrow<emu::Bfloat16, std::uint64_t>(std::uint64_t v) {
  return emu::to_bfloat16(static_cast<float>(v));
}

std::size_t kernel_type_size(int dtype) {
  switch (dtype) {
    case kDtypeFloat16:
    case kDtypeBfloat16:
      return 2;
    case kDtypeFloat32:
    case kDtypeInt32:
      return 4;
    case kDtypeFloat64:
    case kDtypeInt64:
      return 8;
  }
  return 0;
}

template <class T>
void apply_items(std::byte* data, const std::byte* scratch, const std::vector<ApplyItem>& items) {
  for (const ApplyItem& item : items) {
    for (std::uint64_t i = 0; i < item.count; ++i) {
      T d, s;
      std::memcpy(&s, scratch + (item.src + i) * sizeof(T), sizeof(T));
      if (item.op == kApplyReduce) {
        std::memcpy(&d, data + (item.dst + i) * sizeof(T), sizeof(T));
        d = narrow<T>(widen(d) + widen(s));
      } else {
        d = s;
      }
      std::memcpy(data + (item.dst + i) * sizeof(T), &d, sizeof(T));
    }
  }
}

}  // namespace

namespace {

template <class F>
void dispatch(int dtype, F&& f) {
  switch (dtype) {
    case kDtypeFloat32:
      return f(float{});
    case kDtypeFloat64:
      return f(double{});
    case kDtypeInt32:
      return f(std::int32_t{});
    case kDtypeInt64:
      return f(std::int64_t{});
    case kDtypeFloat16:
      return f(emu::Half{});
    case kDtypeBfloat16:
      return f(emu::Bfloat16{});
  }
}

}  // namespace

cudaError_t launch_apply(int dtype, void* data, const void* scratch, const ApplyItem* items,
                         int n_items, std::uint64_t max_count, int max_blocks,
                         cudaStream_t stream) {
  const std::size_t elem = kernel_type_size(dtype);
  if (elem == 0 || n_items < 1 || n_items > 65535 || max_blocks < 1) return cudaErrorInvalidValue;
  const auto n = static_cast<std::size_t>(n_items);
  return emu::launch(
      stream, "apply", {{data, 1}, {scratch, 1}, {items, n * sizeof(ApplyItem)}},
      [=](emu::KernelContext& k) {
        k.read(items, n * sizeof(ApplyItem), "apply items");
        std::vector<ApplyItem> list(items, items + n);
        std::vector<std::pair<std::uint64_t, std::uint64_t>> writes;
        for (const ApplyItem& it : list) {
          if (it.count > max_count) k.fail("apply item larger than the launch's max_count");
          k.check(static_cast<std::byte*>(data) + it.dst * elem, it.count * elem, "apply data");
          k.read(static_cast<const std::byte*>(scratch) + it.src * elem, it.count * elem,
                 "apply scratch");
          if (it.op == kApplyReduce)
            k.read(static_cast<std::byte*>(data) + it.dst * elem, it.count * elem, "apply data");
          k.write(static_cast<std::byte*>(data) + it.dst * elem, it.count * elem, "apply data");
          writes.emplace_back(it.dst, it.dst + it.count);
        }
        std::sort(writes.begin(), writes.end());
        for (std::size_t i = 1; i < writes.size(); ++i) {
          if (writes[i].first < writes[i - 1].second)
            k.fail("apply items of one launch write overlapping ranges");
        }
        auto* d = static_cast<std::byte*>(data);
        const auto* s = static_cast<const std::byte*>(scratch);
        switch (dtype) {
          case kDtypeFloat32:
            return apply_items<float>(d, s, list);
          case kDtypeFloat64:
            return apply_items<double>(d, s, list);
          case kDtypeInt32:
            return apply_items<std::int32_t>(d, s, list);
          case kDtypeInt64:
            return apply_items<std::int64_t>(d, s, list);
          case kDtypeFloat16:
            return apply_items<emu::Half>(d, s, list);
          case kDtypeBfloat16:
            return apply_items<emu::Bfloat16>(d, s, list);
        }
      },
      1000 + max_count * elem / 100);
}

namespace {

template <class T>
void direct_items(std::byte* data, const std::vector<DirectItem>& items) {
  for (const DirectItem& item : items) {
    const auto* src =
        reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(item.src_addr));
    for (std::uint64_t i = 0; i < item.count; ++i) {
      T d, v;
      std::memcpy(&v, src + i * sizeof(T), sizeof(T));
      if (item.op == kApplyReduce) {
        std::memcpy(&d, data + (item.dst + i) * sizeof(T), sizeof(T));
        d = narrow<T>(widen(d) + widen(v));
      } else {
        d = v;
      }
      std::memcpy(data + (item.dst + i) * sizeof(T), &d, sizeof(T));
    }
  }
}

}  // namespace

cudaError_t launch_direct(int dtype, void* data, const DirectItem* items, int n_items,
                          std::uint64_t max_count, int max_blocks, cudaStream_t stream) {
  const std::size_t elem = kernel_type_size(dtype);
  if (elem == 0 || n_items < 1 || n_items > 65535 || max_blocks < 1) return cudaErrorInvalidValue;
  const auto n = static_cast<std::size_t>(n_items);
  return emu::launch(
      stream, "direct", {{data, 1}, {items, n * sizeof(DirectItem)}},
      [=](emu::KernelContext& k) {
        k.read(items, n * sizeof(DirectItem), "direct items");
        std::vector<DirectItem> list(items, items + n);
        std::vector<std::pair<std::uint64_t, std::uint64_t>> writes;
        auto* d = static_cast<std::byte*>(data);
        // Every source is read and every destination written by this one kernel: the race
        // check sees the sender's data read here, concurrently with whatever the sender's
        // stream does unless events order them.
        for (const DirectItem& it : list) {
          if (it.count > max_count) k.fail("direct item larger than the launch's max_count");
          const auto* src = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(it.src_addr));
          k.read(src, it.count * elem, "direct source");
          if (it.op == kApplyReduce) k.read(d + it.dst * elem, it.count * elem, "direct data");
          k.write(d + it.dst * elem, it.count * elem, "direct data");
          writes.emplace_back(it.dst, it.dst + it.count);
        }
        std::sort(writes.begin(), writes.end());
        for (std::size_t i = 1; i < writes.size(); ++i) {
          if (writes[i].first < writes[i - 1].second)
            k.fail("direct items of one launch write overlapping ranges");
        }
        dispatch(dtype, [&](auto t) { direct_items<decltype(t)>(d, list); });
      },
      1000 + max_count * elem / 100);
}

cudaError_t launch_copy(void* dst, const void* src, std::uint64_t bytes, int max_blocks,
                        cudaStream_t stream) {
  if (dst == nullptr || src == nullptr || max_blocks < 1) return cudaErrorInvalidValue;
  if (bytes == 0) return cudaSuccess;
  return emu::launch(
      stream, "copy", {{dst, 1}, {src, 1}},
      [=](emu::KernelContext& k) {
        k.read(src, bytes, "copy source");
        k.write(dst, bytes, "copy destination");
        std::memmove(dst, src, bytes);
      },
      1000 + bytes / 100);
}

cudaError_t launch_spin(const std::uint64_t* start, std::uint64_t ns, int priority,
                        cudaStream_t stream) {
  if (start == nullptr) return cudaErrorInvalidValue;
  // The stand-in's %globaltimer is its stream's virtual clock: the spin advances it to the
  // start stamp + `ns`.
  return emu::launch(
      stream, "spin", {{start, sizeof *start}},
      [start, ns](emu::KernelContext& k) {
        k.check(start, sizeof *start, "spin start stamp");
        const std::uint64_t until = *start + ns;
        if (k.now_ns() < until) k.advance_ns(until - k.now_ns());
      },
      0, priority);
}

cudaError_t launch_stamp(std::uint64_t* slot, int priority, cudaStream_t stream) {
  if (slot == nullptr) return cudaErrorInvalidValue;
  return emu::launch(
      stream, "stamp", {{slot, sizeof *slot}},
      [slot](emu::KernelContext& k) {
        k.check(slot, sizeof *slot, "stamp slot");
        *slot = k.now_ns();
      },
      500, priority);
}

cudaError_t launch_fill(int dtype, void* data, std::uint64_t count, std::uint64_t padded_count,
                        int rank, std::uint64_t modulus, int max_blocks, cudaStream_t stream) {
  const std::size_t elem = kernel_type_size(dtype);
  if (elem == 0 || max_blocks < 1 || modulus < 1 || count > padded_count) {
    return cudaErrorInvalidValue;
  }
  return emu::launch(
      stream, "fill", {{data, padded_count * elem}},
      [=](emu::KernelContext& k) {
        k.write(data, padded_count * elem, "fill data");
        dispatch(dtype, [&](auto t) {
          using T = decltype(t);
          auto* d = static_cast<std::byte*>(data);
          for (std::uint64_t i = 0; i < padded_count; ++i) {
            const T v = narrow<T>(i < count ? input_value_int(rank, i, modulus) : std::uint64_t{0});
            std::memcpy(d + i * sizeof(T), &v, sizeof(T));
          }
        });
      },
      1000 + padded_count * elem / 100);
}

cudaError_t launch_count_wrong(int dtype, const void* data, std::uint64_t count,
                               const ExpectedSums& sums, unsigned long long* wrong, int max_blocks,
                               cudaStream_t stream) {
  const std::size_t elem = kernel_type_size(dtype);
  if (elem == 0 || max_blocks < 1 || wrong == nullptr) return cudaErrorInvalidValue;
  return emu::launch(
      stream, "count_wrong", {{data, count * elem}, {wrong, sizeof *wrong}},
      [=](emu::KernelContext& k) {
        k.read(data, count * elem, "checked data");
        k.read(wrong, sizeof *wrong, "wrong counter");
        k.write(wrong, sizeof *wrong, "wrong counter");
        dispatch(dtype, [&](auto t) {
          using T = decltype(t);
          const auto* d = static_cast<const std::byte*>(data);
          for (std::uint64_t i = 0; i < count; ++i) {
            T v;
            std::memcpy(&v, d + i * sizeof(T), sizeof(T));
            if (static_cast<double>(widen(v)) != sums.value[i % kInputPeriod]) ++*wrong;
          }
        });
      },
      1000 + count * elem / 100);
}

}  // namespace ssim::gpu

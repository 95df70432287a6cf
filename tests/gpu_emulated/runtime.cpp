// The CPU stand-in of the CUDA runtime and NCCL: see emulator.hpp for what it models.
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/gpu_emulated/emulator.hpp"
#include "tests/gpu_emulated/half.hpp"

struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
struct ncclComm;

namespace ssim::emu {

namespace {

// Virtual costs: a kernel or copy 1 us plus 0.01 ns/B (100 GB/s), a transfer 2 us plus
// 0.02 ns/B (50 GB/s), a collective 5 us plus 0.04 ns/B.
constexpr std::uint64_t kCopyNs = 1000;
constexpr double kCopyNsPerByte = 0.01;
constexpr std::uint64_t kP2PNs = 2000;
constexpr double kP2PNsPerByte = 0.02;
constexpr std::uint64_t kCollNs = 5000;
constexpr double kCollNsPerByte = 0.04;

std::uint64_t cost(std::uint64_t base, double per_byte, std::uint64_t bytes) {
  return base + static_cast<std::uint64_t>(per_byte * static_cast<double>(bytes));
}

struct Fault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A vector clock: per stream id, how many of its kernels (epochs) are known to have finished.
// The race check (Runtime::access) orders two accesses to device memory only through it.
struct VectorClock {
  std::map<int, std::uint64_t> epochs;
  std::uint64_t at(int stream) const {
    auto it = epochs.find(stream);
    return it == epochs.end() ? 0 : it->second;
  }
  // `gone`: ids of deleted streams, left out (their records are dropped with them).
  void join(const VectorClock& o, const std::set<int>& gone) {
    for (const auto& [id, e] : o.epochs) {
      if (gone.count(id)) continue;
      std::uint64_t& mine = epochs[id];
      mine = std::max(mine, e);
    }
  }
};

struct RecordInstance {
  bool done = false;
  std::uint64_t time = 0;
  VectorClock vc;  // the recording stream's clock when it reached the record
};
using Instance = std::shared_ptr<RecordInstance>;

struct GroupOp;

// One NCCL call as issued: what a group is made of, eager or captured.
struct NcclCall {
  enum Kind { send, recv, allreduce, reduce_scatter } kind = send;
  ncclComm* comm = nullptr;
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  std::size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int peer = -1;
  cudaStream_t stream = nullptr;
};

struct P2PPart {
  NcclCall call;
  GroupOp* group = nullptr;
  std::weak_ptr<P2PPart> match;  // weak: the two parts of a pair point at each other
  bool done = false;
  std::uint64_t finish = 0;
};

struct CollInstance;
struct CollPart {
  NcclCall call;
  GroupOp* group = nullptr;
  std::shared_ptr<CollInstance> inst;
  bool done = false;
  std::uint64_t finish = 0;
};

struct CollInstance {
  std::vector<std::shared_ptr<CollPart>> parts;  // by rank
};

struct GroupOp {
  bool started = false;
  bool failed = false;  // its communicator was aborted
  std::uint64_t start = 0;
  std::vector<std::shared_ptr<P2PPart>> p2p;
  std::vector<std::shared_ptr<CollPart>> coll;
};

struct Op {
  enum Kind { kernel, record, wait, nccl } kind = kernel;
  std::string what;
  std::function<void(KernelContext&)> body;  // kernel (copies are kernels too)
  std::uint64_t cost_ns = 0;
  int priority = 0;                // kernel: the launch priority (lower runs first)
  std::uint64_t not_before = 0;    // the host's clock when it issued the op (see host_now)
  VectorClock host_vc;             // what the host had seen finish when it issued the op
  Instance instance;               // record, wait
  int node = -1;                   // captured record: its node; captured wait: bound node
  std::shared_ptr<GroupOp> group;  // nccl (eager)
  std::vector<NcclCall> calls;     // nccl (captured)
};

struct Capture;

}  // namespace
}  // namespace ssim::emu

struct CUstream_st {
  int device = 0;
  int id = 0;
  bool hidden = false;     // a graph's lane
  bool destroyed = false;  // destroyed by the user, kept until its work is done
  std::deque<ssim::emu::Op> queue;
  std::uint64_t clock = 0;
  ssim::emu::VectorClock vc;  // the race check's view of what this stream's work follows
  ssim::emu::Capture* capture = nullptr;
  int lane = -1;
};

struct CUevent_st {
  int device = 0;
  unsigned flags = 0;
  ssim::emu::Instance latest;
  ssim::emu::Capture* capture = nullptr;  // the last record was captured here
  int node = -1;
};

namespace ssim::emu {
namespace {

struct Lane {
  int device = 0;
  std::vector<Op> ops;
  bool joined = true;  // lane 0 always; others once lane 0 waited on their last record
  int last_record_node = -1;
};

struct Capture {
  CUstream_st* origin = nullptr;
  std::vector<CUstream_st*> streams;  // by lane
  std::vector<Lane> lanes;
  int records = 0;
  std::map<int, int> node_lane;  // record node -> lane
  bool invalid = false;
  std::string why;
};

}  // namespace
}  // namespace ssim::emu

struct CUgraph_st {
  std::vector<ssim::emu::Lane> lanes;
  int records = 0;
};

struct CUgraphExec_st {
  std::vector<ssim::emu::Lane> lanes;
  int records = 0;
  std::vector<CUstream_st*> hidden;  // lanes 1..
};

namespace ssim::emu {
namespace {

struct Clique {
  // A collective's parts and its instance point at each other (CollPart::inst, CollInstance::
  // parts); the clique owns the instances for its lifetime, so it breaks those cycles when it goes.
  ~Clique() {
    for (auto& c : colls) {
      if (c) c->parts.clear();
    }
  }
  int nranks = 0;
  std::vector<ncclComm*> ranks;
  int joined = 0;
  std::map<std::pair<int, int>, std::deque<std::shared_ptr<P2PPart>>> sends, recvs;
  std::vector<std::shared_ptr<CollInstance>> colls;
  struct Split {
    std::vector<std::optional<std::pair<int, int>>> requests;  // color, key by rank
    std::vector<ncclComm_t*> outputs;
    int arrived = 0;
    bool done = false;
  };
  std::vector<Split> splits;
};

struct Allocation {
  int device = -1;  // -1: mapped host memory
  std::size_t bytes = 0;
  bool host = false;
};

// One access of stream work to device memory, for the race check: [begin, end) bytes.
struct AccessRecord {
  std::uintptr_t begin = 0, end = 0;
  int stream = 0;
  std::uint64_t epoch = 0;
  bool write = false;
  std::string what;
};

}  // namespace
}  // namespace ssim::emu

struct ncclComm {
  ssim::emu::Clique* clique = nullptr;
  int rank = 0;
  int device = 0;
  bool aborted = false;
  bool finalized = false;
  std::size_t colls = 0;
  std::size_t splits = 0;
};

namespace ssim::emu {

struct Runtime {
  std::mutex mu;
  std::condition_variable cv;
  Config config;
  std::vector<CUstream_st*> streams;
  std::set<CUevent_st*> events;
  std::map<const std::byte*, Allocation> allocs;
  std::vector<std::unique_ptr<Clique>> cliques;
  std::map<std::string, Clique*> by_id;
  std::set<ncclComm*> comms;
  std::vector<ncclComm*> retired;  // destroyed or aborted: pending work may still name them
  std::vector<std::string> faults;
  std::string deadlock;  // the last deadlock's description (cudaGetErrorString)
  cudaError_t sticky = cudaSuccess;
  Counters counters;
  int next_stream = 1;
  std::uint64_t next_id = 1;
  std::uint64_t generation = 0;  // bumped on every change another thread may wait for
  int threads = 0;
  int blocked = 0;
  // The host's place on the one timeline all streams share: the latest virtual time of work
  // the host has seen finish (a synchronize, a successful query). Work it issues afterwards
  // starts no earlier, as on a GPU, where an idle stream does not fall behind the wall clock.
  // Without it an idle stream kept its old clock, and a barrier did not order the next
  // iteration after the previous one.
  std::uint64_t host_now = 0;
  VectorClock host_vc;  // the same for the race check: the work the host has seen finish
  // Per device allocation (by base), the accesses not yet known to be ordered before all
  // later ones: the race check's shadow of device memory.
  std::map<const std::byte*, std::vector<AccessRecord>> shadow;
  // Peer access enabled from a device to another (cudaDeviceEnablePeerAccess).
  std::set<std::pair<int, int>> peer_access;

  // Deleted streams: a deleted stream's work is done and no later work can be ordered after
  // it by a new wait, so its records leave the shadow and its id every clock (else each
  // graph's lanes would grow every clock for the rest of the process).
  std::set<int> gone;

  void observed(std::uint64_t t, const VectorClock& vc) {
    host_now = std::max(host_now, t);
    host_vc.join(vc, gone);
  }

  void forget_stream(int id) {
    gone.insert(id);
    host_vc.epochs.erase(id);
    for (CUstream_st* s : streams) s->vc.epochs.erase(id);
    for (auto& [base, list] : shadow) {
      list.erase(std::remove_if(list.begin(), list.end(),
                                [id](const AccessRecord& rec) { return rec.stream == id; }),
                 list.end());
    }
  }

  // The race check: an access by stream work conflicts with an earlier one to overlapping
  // bytes of the same allocation when either writes, they come from different streams, and
  // no chain of stream order and event waits orders the earlier one before this one (the
  // earlier stream's epoch is not in this stream's vector clock). Such a pair is a data race
  // on a GPU whatever the timing: a fault naming both. Mapped host memory is not tracked.
  void access(const CUstream_st& s, std::uint64_t epoch, const void* p, std::uint64_t bytes,
              bool write, const std::string& what) {
    if (bytes == 0) return;
    const std::byte* base = nullptr;
    const Allocation* a = find(p, bytes, &base);
    if (!a || a->host) return;
    const auto b = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t e = b + bytes;
    std::vector<AccessRecord>& list = shadow[base];
    std::string conflict;
    for (const AccessRecord& rec : list) {
      if (rec.end <= b || e <= rec.begin) continue;
      if (!rec.write && !write) continue;
      if (rec.stream == s.id || s.vc.at(rec.stream) >= rec.epoch) continue;
      conflict = what + (write ? " (write)" : " (read)") + " on stream " + std::to_string(s.id) +
                 " races with " + rec.what + (rec.write ? " (write)" : " (read)") + " on stream " +
                 std::to_string(rec.stream) + ": bytes [" +
                 std::to_string(std::max(b, rec.begin) - reinterpret_cast<std::uintptr_t>(base)) +
                 ", " +
                 std::to_string(std::min(e, rec.end) - reinterpret_cast<std::uintptr_t>(base)) +
                 ") of one allocation, no event orders them";
      break;
    }
    // What this access covers and follows is no longer needed: a write supersedes every
    // record inside it, a read the same stream's reads inside it.
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const AccessRecord& rec) {
                                return rec.begin >= b && rec.end <= e &&
                                       (write || (!rec.write && rec.stream == s.id));
                              }),
               list.end());
    list.push_back(AccessRecord{b, e, s.id, epoch, write, what});
    if (!conflict.empty()) throw Fault(conflict);
  }

  // ---- memory --------------------------------------------------------------------------
  const Allocation* find(const void* p, std::uint64_t bytes, const std::byte** base) const {
    const auto* b = static_cast<const std::byte*>(p);
    auto it = allocs.upper_bound(b);
    if (it == allocs.begin()) return nullptr;
    --it;
    if (b < it->first || b + bytes > it->first + it->second.bytes) return nullptr;
    if (base) *base = it->first;
    return &it->second;
  }

  std::string where(const void* p) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
  }

  // [p, p + bytes) must lie in one allocation that `device` may touch.
  void check_device(const void* p, std::uint64_t bytes, int device, const std::string& what) {
    if (p == nullptr) throw Fault(what + ": null pointer");
    const Allocation* a = find(p, std::max<std::uint64_t>(bytes, 1), nullptr);
    if (!a) {
      const Allocation* start = find(p, 1, nullptr);
      throw Fault(what + ": " + std::to_string(bytes) + " bytes at " + where(p) +
                  (start ? " run past the end of their allocation" : " are not device memory"));
    }
    if (a->device >= 0 && a->device != device) {
      throw Fault(what + ": " + where(p) + " belongs to device " + std::to_string(a->device) +
                  ", the work runs on device " + std::to_string(device));
    }
  }
  // Host memory of a copy: not inside a device allocation (mapped host memory is fine).
  void check_host(const void* p, std::uint64_t bytes, const std::string& what) {
    if (p == nullptr && bytes > 0) throw Fault(what + ": null host pointer");
    const Allocation* a = find(p, 1, nullptr);
    if (a && !a->host) throw Fault(what + ": " + where(p) + " is device memory, not host memory");
  }

  void fault(const std::string& message) {
    faults.push_back(message);
    std::fprintf(stderr, "gpu_emulated: fault: %s\n", message.c_str());
    if (sticky == cudaSuccess) sticky = cudaErrorIllegalAddress;
  }

  // ---- execution -----------------------------------------------------------------------
  bool run_kernel(CUstream_st* s, Op& op) {
    KernelContext k;
    k.device_ = s->device;
    k.now_ = s->clock;
    k.stream_ = s;
    k.epoch_ = ++s->vc.epochs[s->id];
    try {
      if (op.body) op.body(k);
    } catch (const Fault& f) {
      fault(op.what + " on device " + std::to_string(s->device) + ": " + f.what());
    }
    s->clock = k.now_ + op.cost_ns;
    return true;
  }

  void complete_pair(const std::shared_ptr<P2PPart>& send, const std::shared_ptr<P2PPart>& recv) {
    const std::uint64_t start = std::max(send->group->start, recv->group->start);
    const std::uint64_t bytes = send->call.count * type_size(send->call.type);
    send->done = recv->done = true;
    send->finish = recv->finish = start + cost(kP2PNs, kP2PNsPerByte, bytes);
    if (send->group->failed || recv->group->failed) return;
    const std::string what = "ncclSend rank " + std::to_string(send->call.comm->rank) + " -> " +
                             std::to_string(recv->call.comm->rank);
    try {
      check_device(send->call.sendbuf, bytes, send->call.comm->device, what + " (send buffer)");
      check_device(recv->call.recvbuf, bytes, recv->call.comm->device, what + " (recv buffer)");
      std::memmove(recv->call.recvbuf, send->call.sendbuf, bytes);
    } catch (const Fault& f) {
      fault(f.what());
    }
  }

  static std::size_t type_size(ncclDataType_t t) {
    switch (t) {
      case ncclInt8:
      case ncclUint8:
        return 1;
      case ncclFloat16:
      case ncclBfloat16:
        return 2;
      case ncclInt32:
      case ncclUint32:
      case ncclFloat32:
        return 4;
      default:
        return 8;
    }
  }

  template <class T>
  static void reduce_typed(std::vector<const std::byte*>& in, std::byte* out, std::size_t count,
                           ncclRedOp_t op) {
    for (std::size_t i = 0; i < count; ++i) {
      T acc;
      std::memcpy(&acc, in[0] + i * sizeof(T), sizeof(T));
      for (std::size_t r = 1; r < in.size(); ++r) {
        T v;
        std::memcpy(&v, in[r] + i * sizeof(T), sizeof(T));
        acc = op == ncclMax ? std::max(acc, v) : static_cast<T>(acc + v);
      }
      std::memcpy(out + i * sizeof(T), &acc, sizeof(T));
    }
  }

  // 16-bit floats: each step in float, rounded back to the type.
  template <class T>
  static void reduce_16(std::vector<const std::byte*>& in, std::byte* out, std::size_t count,
                        ncclRedOp_t op) {
    auto round = [](float v) {
      if constexpr (std::is_same_v<T, Half>) {
        return to_half(v);
      } else {
        return to_bfloat16(v);
      }
    };
    for (std::size_t i = 0; i < count; ++i) {
      T acc;
      std::memcpy(&acc, in[0] + i * sizeof(T), sizeof(T));
      for (std::size_t r = 1; r < in.size(); ++r) {
        T v;
        std::memcpy(&v, in[r] + i * sizeof(T), sizeof(T));
        const float a = to_float(acc), b = to_float(v);
        acc = round(op == ncclMax ? std::max(a, b) : a + b);
      }
      std::memcpy(out + i * sizeof(T), &acc, sizeof(T));
    }
  }

  void reduce(ncclDataType_t t, std::vector<const std::byte*>& in, std::byte* out,
              std::size_t count, ncclRedOp_t op) {
    switch (t) {
      case ncclFloat32:
        return reduce_typed<float>(in, out, count, op);
      case ncclFloat64:
        return reduce_typed<double>(in, out, count, op);
      case ncclInt32:
        return reduce_typed<std::int32_t>(in, out, count, op);
      case ncclInt64:
        return reduce_typed<std::int64_t>(in, out, count, op);
      case ncclUint64:
        return reduce_typed<std::uint64_t>(in, out, count, op);
      case ncclFloat16:
        return reduce_16<Half>(in, out, count, op);
      case ncclBfloat16:
        return reduce_16<Bfloat16>(in, out, count, op);
      default:
        throw Fault("the stand-in does not reduce NCCL type " + std::to_string(t));
    }
  }

  void complete_collective(CollInstance& c) {
    std::uint64_t start = 0;
    bool failed = false;
    for (auto& p : c.parts) {
      start = std::max(start, p->group->start);
      failed = failed || p->group->failed;
    }
    const NcclCall& first = c.parts[0]->call;
    const std::size_t elem = type_size(first.type);
    const std::size_t n = c.parts.size();
    const std::size_t in_count = first.kind == NcclCall::allreduce ? first.count : first.count * n;
    const std::uint64_t finish = start + cost(kCollNs, kCollNsPerByte, in_count * elem);
    for (auto& p : c.parts) {
      p->done = true;
      p->finish = finish;
    }
    if (failed) return;
    try {
      std::vector<std::vector<std::byte>> copies(n);
      for (std::size_t r = 0; r < n; ++r) {
        const NcclCall& call = c.parts[r]->call;
        const std::string what =
            std::string(first.kind == NcclCall::allreduce ? "ncclAllReduce" : "ncclReduceScatter") +
            " rank " + std::to_string(r);
        if (call.kind != first.kind || call.count != first.count || call.type != first.type ||
            call.op != first.op) {
          throw Fault(what + ": kind, count, type or op differ from rank 0's call");
        }
        check_device(call.sendbuf, in_count * elem, call.comm->device, what + " (send buffer)");
        check_device(call.recvbuf, call.count * elem, call.comm->device, what + " (recv buffer)");
        const auto* src = static_cast<const std::byte*>(call.sendbuf);
        copies[r].assign(src, src + in_count * elem);
      }
      for (std::size_t r = 0; r < n; ++r) {
        const NcclCall& call = c.parts[r]->call;
        std::vector<const std::byte*> in;
        const std::size_t offset = first.kind == NcclCall::allreduce ? 0 : r * first.count * elem;
        for (auto& v : copies) in.push_back(v.data() + offset);
        reduce(first.type, in, static_cast<std::byte*>(call.recvbuf), call.count, first.op);
      }
    } catch (const Fault& f) {
      fault(f.what());
    }
  }

  bool try_group(CUstream_st* s, Op& op) {
    GroupOp& g = *op.group;
    if (!g.started) {
      g.started = true;
      g.start = s->clock;
    }
    bool all = true;
    std::uint64_t finish = g.start;
    for (auto& p : g.p2p) {
      const std::shared_ptr<P2PPart> match = p->match.lock();
      if (!p->done && match && match->group->started) {
        if (p->call.kind == NcclCall::send) {
          complete_pair(p, match);
        } else {
          complete_pair(match, p);
        }
      }
      if (!p->done && p->call.comm->aborted) {
        p->done = true;
        p->finish = g.start;
        g.failed = true;
      }
      all = all && p->done;
      finish = std::max(finish, p->finish);
    }
    for (auto& p : g.coll) {
      if (!p->done) {
        bool ready = true;
        for (auto& q : p->inst->parts) ready = ready && q && q->group->started;
        if (ready) complete_collective(*p->inst);
      }
      if (!p->done && p->call.comm->aborted) {
        p->done = true;
        p->finish = g.start;
        g.failed = true;
      }
      all = all && p->done;
      finish = std::max(finish, p->finish);
    }
    if (!all) return false;
    s->clock = finish;
    return true;
  }

  bool try_run(CUstream_st* s, Op& op) {
    s->clock = std::max(s->clock, op.not_before);
    s->vc.join(op.host_vc, gone);
    switch (op.kind) {
      case Op::kernel:
        return run_kernel(s, op);
      case Op::record:
        op.instance->done = true;
        op.instance->time = s->clock;
        op.instance->vc = s->vc;
        return true;
      case Op::wait:
        if (!op.instance->done) return false;
        s->clock = std::max(s->clock, op.instance->time);
        s->vc.join(op.instance->vc, gone);
        return true;
      case Op::nccl:
        return try_group(s, op);
    }
    return false;
  }

  bool progress() {
    bool any = false;
    while (true) {
      bool round = false;
      // Higher-priority kernels first among the work that is ready now.
      for (int p = kGreatestPriority; p < kLeastPriority; ++p) {
        for (CUstream_st* s : streams) {
          while (!s->queue.empty() && s->queue.front().kind == Op::kernel &&
                 s->queue.front().priority == p && try_run(s, s->queue.front())) {
            s->queue.pop_front();
            round = true;
          }
        }
      }
      for (std::size_t i = 0; i < streams.size(); ++i) {
        CUstream_st* s = streams[i];
        while (!s->queue.empty() && try_run(s, s->queue.front())) {
          s->queue.pop_front();
          round = true;
        }
      }
      if (!round) break;
      any = true;
    }
    // Streams destroyed by the user go once their work is done.
    for (auto it = streams.begin(); it != streams.end();) {
      if ((*it)->destroyed && (*it)->queue.empty()) {
        const int id = (*it)->id;
        delete *it;
        it = streams.erase(it);
        forget_stream(id);
      } else {
        ++it;
      }
    }
    if (any) ++generation;
    return any;
  }

  std::string describe_stuck() const {
    std::string out;
    for (const CUstream_st* s : streams) {
      if (s->queue.empty()) continue;
      const Op& op = s->queue.front();
      out += "\n  stream " + std::to_string(s->id) + " (device " + std::to_string(s->device) +
             (s->hidden ? ", graph lane" : "") + ", " + std::to_string(s->queue.size()) +
             " op(s) left) waits at " + op.what;
      if (op.kind == Op::nccl) {
        for (const auto& p : op.group->p2p) {
          if (p->done) continue;
          out += "; " + std::string(p->call.kind == NcclCall::send ? "send to" : "recv from") +
                 " rank " + std::to_string(p->call.peer) + " of rank " +
                 std::to_string(p->call.comm->rank) +
                 (p->match.lock() ? ": the peer has not reached it"
                                  : ": the peer never issued the matching call");
        }
        for (const auto& p : op.group->coll) {
          if (!p->done)
            out += "; a collective of rank " + std::to_string(p->call.comm->rank) +
                   " that not every rank has reached";
        }
      }
    }
    return out;
  }

  // Blocks until pred() holds, running work. On a deadlock records a fault and returns false.
  // `rendezvous`: waits for peers that may not have called the stand-in yet (other threads
  // in their bootstrap), so even a lone thread waits 10 s for them before giving up.
  template <class Pred>
  bool wait_until(std::unique_lock<std::mutex>& lock, Pred pred, const std::string& what,
                  bool rendezvous = false) {
    using Clock = std::chrono::steady_clock;
    std::uint64_t seen = generation;
    auto quiet_since = Clock::now();
    while (true) {
      progress();
      if (pred()) return true;
      if (generation != seen) {
        seen = generation;
        quiet_since = Clock::now();
      }
      const bool everyone_blocked = blocked + 1 >= threads;
      // One thread: nothing else can change anything. Several: every one is blocked here and
      // nothing moved for a while.
      const auto grace = std::chrono::milliseconds(rendezvous ? 10000 : threads <= 1 ? 0 : 300);
      if (everyone_blocked && Clock::now() - quiet_since >= grace) {
        deadlock = what + " would block forever:" + describe_stuck();
        fault(deadlock);
        return false;
      }
      ++blocked;
      cv.notify_all();
      cv.wait_for(lock, std::chrono::milliseconds(20));
      --blocked;
    }
  }

  void changed() {
    ++generation;
    cv.notify_all();
  }

  // ---- issue ---------------------------------------------------------------------------
  void enqueue(CUstream_st* s, Op op) {
    op.not_before = host_now;
    op.host_vc = host_vc;
    s->queue.push_back(std::move(op));
    changed();
  }

  void capture_op(CUstream_st* s, Op op) {
    Capture& c = *s->capture;
    Lane& lane = c.lanes[static_cast<std::size_t>(s->lane)];
    if (op.kind == Op::record) {
      op.node = c.records++;
      c.node_lane[op.node] = s->lane;
      lane.last_record_node = op.node;
    } else {
      lane.last_record_node = -1;
    }
    if (s->lane != 0) lane.joined = false;
    lane.ops.push_back(std::move(op));
  }

  // Matching: the k-th send from a to b on a communicator meets the k-th receive on b from a.
  void post(const std::vector<NcclCall>& calls,
            std::map<cudaStream_t, std::shared_ptr<GroupOp>>& ops) {
    for (const NcclCall& call : calls) {
      auto& g = ops[call.stream];
      if (!g) g = std::make_shared<GroupOp>();
      Clique& cl = *call.comm->clique;
      if (call.kind == NcclCall::send || call.kind == NcclCall::recv) {
        auto part = std::make_shared<P2PPart>();
        part->call = call;
        part->group = g.get();
        const bool send = call.kind == NcclCall::send;
        const std::pair<int, int> key = send ? std::make_pair(call.comm->rank, call.peer)
                                             : std::make_pair(call.peer, call.comm->rank);
        auto& mine = send ? cl.sends[key] : cl.recvs[key];
        auto& theirs = send ? cl.recvs[key] : cl.sends[key];
        if (!theirs.empty()) {
          auto other = theirs.front();
          theirs.pop_front();
          if (other->call.count != call.count || other->call.type != call.type) {
            fault("ncclSend/ncclRecv between ranks " + std::to_string(key.first) + " -> " +
                  std::to_string(key.second) + " disagree on count or type (" +
                  std::to_string(other->call.count) + " vs " + std::to_string(call.count) + ")");
          }
          part->match = other;
          other->match = part;
        } else {
          mine.push_back(part);
        }
        g->p2p.push_back(part);
      } else {
        auto part = std::make_shared<CollPart>();
        part->call = call;
        part->group = g.get();
        const std::size_t seq = call.comm->colls++;
        while (cl.colls.size() <= seq) {
          cl.colls.push_back(std::make_shared<CollInstance>());
          cl.colls.back()->parts.resize(static_cast<std::size_t>(cl.nranks));
        }
        part->inst = cl.colls[seq];
        part->inst->parts[static_cast<std::size_t>(call.comm->rank)] = part;
        g->coll.push_back(part);
      }
    }
  }

  void issue_nccl(std::vector<NcclCall> calls) {
    // One operation per stream, in the order the streams first appear.
    std::vector<cudaStream_t> order;
    for (const NcclCall& c : calls) {
      if (std::find(order.begin(), order.end(), c.stream) == order.end()) order.push_back(c.stream);
    }
    for (cudaStream_t s : order) {
      std::vector<NcclCall> mine;
      for (const NcclCall& c : calls) {
        if (c.stream == s) mine.push_back(c);
      }
      Op op;
      op.kind = Op::nccl;
      op.what = "an NCCL group of " + std::to_string(mine.size()) + " call(s)";
      if (s->capture) {
        op.calls = std::move(mine);
        ++counters.captured_nccl;
        capture_op(s, std::move(op));
      } else {
        std::map<cudaStream_t, std::shared_ptr<GroupOp>> ops;
        post(mine, ops);
        op.group = ops[s];
        ++counters.nccl_groups;
        enqueue(s, std::move(op));
      }
    }
  }
};

namespace {

Runtime& rt() {
  static Runtime* r = [] {
    auto* x = new Runtime;
    x->config = config_from_environment();
    return x;
  }();
  return *r;
}

thread_local int t_device = 0;
thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_group_depth = 0;
thread_local std::vector<NcclCall> t_group_calls;
struct PendingSplit {
  ncclComm_t parent;
  int color, key;
  ncclComm_t* out;
};
thread_local std::vector<PendingSplit> t_group_splits;

// Counts the host threads that use the stand-in (for deadlock detection with several).
struct ThreadRegistration {
  bool registered = false;
  void ensure(Runtime& r) {
    if (registered) return;
    registered = true;
    ++r.threads;
  }
  ~ThreadRegistration() {
    if (!registered) return;
    Runtime& r = rt();
    std::lock_guard<std::mutex> lock(r.mu);
    --r.threads;
    r.changed();
  }
};
thread_local ThreadRegistration t_registration;

std::unique_lock<std::mutex> enter() {
  Runtime& r = rt();
  std::unique_lock<std::mutex> lock(r.mu);
  t_registration.ensure(r);
  return lock;
}

cudaError_t launch_error(cudaError_t e) {
  t_last_error = e;
  return e;
}

bool valid_stream(Runtime& r, cudaStream_t s) {
  return s && std::find(r.streams.begin(), r.streams.end(), s) != r.streams.end() && !s->destroyed;
}

}  // namespace

void KernelContext::check(const void* p, std::uint64_t bytes, const char* what) const {
  rt().check_device(p, bytes, device_, what);
}

void KernelContext::read(const void* p, std::uint64_t bytes, const char* what) const {
  Runtime& r = rt();
  const std::byte* base = nullptr;
  const Allocation* a = r.find(p, std::max<std::uint64_t>(bytes, 1), &base);
  if (a && a->device >= 0 && a->device != device_ &&
      r.peer_access.count({device_, a->device}) > 0) {
    r.check_device(p, bytes, a->device, what);  // a peer's memory, peer access enabled
  } else {
    r.check_device(p, bytes, device_, what);
  }
  if (stream_) r.access(*stream_, epoch_, p, bytes, false, what);
}

void KernelContext::record_access(const void* p, std::uint64_t bytes, bool write,
                                  const char* what) const {
  if (stream_) rt().access(*stream_, epoch_, p, bytes, write, what);
}

void KernelContext::write(const void* p, std::uint64_t bytes, const char* what) const {
  Runtime& r = rt();
  r.check_device(p, bytes, device_, what);
  if (stream_) r.access(*stream_, epoch_, p, bytes, true, what);
}

void KernelContext::fail(const std::string& message) const { throw Fault(message); }

Config config_from_environment() {
  Config c;
  if (const char* d = std::getenv("SSIM_EMU_DEVICES")) c.devices = std::max(0, std::atoi(d));
  return c;
}

void reset(const Config& config) {
  auto lock = enter();
  Runtime& r = rt();
  for (CUstream_st* s : r.streams) delete s;
  r.streams.clear();
  for (CUevent_st* e : r.events) delete e;
  r.events.clear();
  for (auto& [p, a] : r.allocs) ::operator delete(const_cast<std::byte*>(p));
  r.allocs.clear();
  for (ncclComm* c : r.comms) delete c;
  r.comms.clear();
  for (ncclComm* c : r.retired) delete c;
  r.retired.clear();
  r.cliques.clear();
  r.by_id.clear();
  r.faults.clear();
  r.sticky = cudaSuccess;
  r.counters = {};
  r.host_now = 0;
  r.host_vc = {};
  r.gone.clear();
  r.shadow.clear();
  r.peer_access.clear();
  r.config = config;
  t_device = 0;
  t_last_error = cudaSuccess;
}

std::vector<std::string> faults() {
  auto lock = enter();
  return rt().faults;
}

void clear_faults() {
  auto lock = enter();
  rt().faults.clear();
}

Counters counters() {
  auto lock = enter();
  Runtime& r = rt();
  Counters c = r.counters;
  c.live_streams = 0;
  for (CUstream_st* s : r.streams) c.live_streams += s->hidden || s->destroyed ? 0 : 1;
  c.live_allocations = r.allocs.size();
  c.live_comms = r.comms.size();
  return c;
}

cudaError_t launch(cudaStream_t stream, const char* name,
                   std::vector<std::pair<const void*, std::uint64_t>> pointers,
                   std::function<void(KernelContext&)> body, std::uint64_t cost_ns, int priority) {
  auto lock = enter();
  Runtime& r = rt();
  if (priority < kGreatestPriority || priority > kLeastPriority) {
    r.fault(std::string(name) + ": launch priority " + std::to_string(priority) +
            " outside cudaDeviceGetStreamPriorityRange's [" + std::to_string(kGreatestPriority) +
            ", " + std::to_string(kLeastPriority) + "]");
    return launch_error(cudaErrorInvalidValue);
  }
  if (!valid_stream(r, stream)) {
    r.fault(std::string(name) + ": launched on the legacy stream or an invalid stream");
    return launch_error(cudaErrorInvalidResourceHandle);
  }
  if (stream->device != t_device) {
    r.fault(std::string(name) + ": launched on a stream of device " +
            std::to_string(stream->device) + " while device " + std::to_string(t_device) +
            " is current");
    return launch_error(cudaErrorInvalidResourceHandle);
  }
  try {
    for (const auto& [p, bytes] : pointers)
      r.check_device(p, bytes, stream->device, std::string(name) + " argument");
  } catch (const Fault& f) {
    r.fault(f.what());
    return launch_error(cudaErrorInvalidValue);
  }
  Op op;
  op.kind = Op::kernel;
  op.what = std::string("kernel ") + name;
  op.body = std::move(body);
  op.cost_ns = cost_ns;
  op.priority = priority;
  if (priority < kLeastPriority) ++r.counters.priority_kernels;
  if (stream->capture) {
    ++r.counters.captured_kernels;
    r.capture_op(stream, std::move(op));
  } else {
    ++r.counters.kernels;
    r.enqueue(stream, std::move(op));
  }
  return launch_error(cudaSuccess);
}

}  // namespace ssim::emu

// ============================ the CUDA runtime API ========================================

using ssim::emu::Fault;
using ssim::emu::Op;
using ssim::emu::rt;
using ssim::emu::Runtime;

namespace {

cudaError_t check_device_index(int device) {
  return device >= 0 && device < rt().config.devices ? cudaSuccess : cudaErrorInvalidDevice;
}

// Work on `s` while it captures would be recorded; synchronising with it is an error that
// invalidates the capture, as in CUDA.
cudaError_t refuse_in_capture(Runtime& r, cudaStream_t s, const char* call) {
  if (s && s->capture) {
    s->capture->invalid = true;
    s->capture->why = std::string(call) + " during capture";
    r.fault(std::string(call) + " on a capturing stream");
    return cudaErrorStreamCaptureUnsupported;
  }
  return cudaSuccess;
}

cudaError_t copy_op(cudaStream_t stream, void* dst, const void* src, std::size_t bytes,
                    cudaMemcpyKind kind, int fill, bool is_set) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!ssim::emu::valid_stream(r, stream)) {
    r.fault(std::string(is_set ? "cudaMemsetAsync" : "cudaMemcpyAsync") +
            " on the legacy stream or an invalid stream");
    return cudaErrorInvalidResourceHandle;
  }
  const int device = stream->device;
  try {
    if (is_set) {
      r.check_device(dst, bytes, device, "cudaMemsetAsync");
    } else {
      const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
      const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
      if (kind == cudaMemcpyDefault || kind == cudaMemcpyHostToHost)
        throw Fault("cudaMemcpyAsync: the backend names the direction of every copy");
      // A device-to-device copy may read a peer's memory; the rest must be the stream's.
      if (dst_dev)
        r.check_device(dst, bytes, device, "cudaMemcpyAsync destination");
      else
        r.check_host(dst, bytes, "cudaMemcpyAsync destination");
      if (src_dev) {
        const ssim::emu::Allocation* a = r.find(src, bytes, nullptr);
        r.check_device(src, bytes, kind == cudaMemcpyDeviceToDevice && a ? a->device : device,
                       "cudaMemcpyAsync source");
      } else {
        r.check_host(src, bytes, "cudaMemcpyAsync source");
      }
    }
  } catch (const Fault& f) {
    r.fault(f.what());
    return cudaErrorInvalidValue;
  }
  Op op;
  op.kind = Op::kernel;
  op.what = is_set ? "cudaMemsetAsync" : "cudaMemcpyAsync";
  op.cost_ns = ssim::emu::cost(ssim::emu::kCopyNs, ssim::emu::kCopyNsPerByte, bytes);
  // Re-checked when it runs: the memory may have been freed in between. -2: host memory.
  int dst_device = -2, src_device = -2;
  if (is_set || kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice)
    dst_device = device;
  if (kind == cudaMemcpyDeviceToHost) src_device = device;
  if (!is_set && kind == cudaMemcpyDeviceToDevice) {
    const ssim::emu::Allocation* a = r.find(src, bytes, nullptr);
    src_device = a ? a->device : device;
  }
  op.body = [=, &r](ssim::emu::KernelContext& k) {
    if (dst_device != -2) r.check_device(dst, bytes, dst_device, "copy destination");
    if (src_device != -2) r.check_device(src, bytes, src_device, "copy source");
    if (src_device != -2) k.record_access(src, bytes, false, "copy source");
    if (dst_device != -2) k.record_access(dst, bytes, true, "copy destination");
    if (is_set) {
      std::memset(dst, fill, bytes);
    } else {
      std::memmove(dst, src, bytes);
    }
  };
  if (stream->capture) {
    r.capture_op(stream, std::move(op));
  } else {
    r.enqueue(stream, std::move(op));
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t cudaGetDeviceCount(int* count) {
  auto lock = ssim::emu::enter();
  *count = rt().config.devices;
  return rt().config.devices > 0 ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int device) {
  auto lock = ssim::emu::enter();
  if (check_device_index(device) != cudaSuccess) return cudaErrorInvalidDevice;
  ssim::emu::t_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = ssim::emu::t_device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  auto lock = ssim::emu::enter();
  if (check_device_index(device) != cudaSuccess) return cudaErrorInvalidDevice;
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "Emulated GPU");
  prop->totalGlobalMem = std::size_t{16} << 30;
  prop->multiProcessorCount = rt().config.sm_count;
  prop->major = 9;
  prop->minor = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  auto lock = ssim::emu::enter();
  if (check_device_index(device) != cudaSuccess) return cudaErrorInvalidDevice;
  switch (attr) {
    case cudaDevAttrClockRate:
      *value = 1000000;  // kHz
      return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
      *value = rt().config.sm_count;
      return cudaSuccess;
  }
  return cudaErrorInvalidValue;
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  auto lock = ssim::emu::enter();
  if (!can) return cudaErrorInvalidValue;
  if (cudaError_t e = check_device_index(device)) return e;
  if (cudaError_t e = check_device_index(peer)) return e;
  *can = device != peer && rt().config.peer_access ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (flags != 0) return cudaErrorInvalidValue;
  if (cudaError_t e = check_device_index(peer)) return e;
  const int device = ssim::emu::t_device;
  if (peer == device || !r.config.peer_access) return cudaErrorInvalidDevice;
  if (!r.peer_access.insert({device, peer}).second) return cudaErrorPeerAccessAlreadyEnabled;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = ssim::emu::kLeastPriority;
  if (greatest) *greatest = ssim::emu::kGreatestPriority;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = 13000;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = 13000;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  const int d = ssim::emu::t_device;
  const bool ok = r.wait_until(
      lock,
      [&] {
        for (CUstream_st* s : r.streams)
          if (s->device == d && !s->queue.empty()) return false;
        return true;
      },
      "cudaDeviceSynchronize");
  if (!ok) return cudaErrorEmulatedDeadlock;
  for (CUstream_st* s : r.streams)
    if (s->device == d) r.observed(s->clock, s->vc);
  return r.sticky;
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = ssim::emu::t_last_error;
  ssim::emu::t_last_error = cudaSuccess;
  return e;
}

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevicePointer:
      return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorPeerAccessAlreadyEnabled:
      return "cudaErrorPeerAccessAlreadyEnabled";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorStreamCaptureUnsupported:
      return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated:
      return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureMerge:
      return "cudaErrorStreamCaptureMerge";
    case cudaErrorStreamCaptureUnmatched:
      return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureUnjoined:
      return "cudaErrorStreamCaptureUnjoined";
    case cudaErrorStreamCaptureIsolation:
      return "cudaErrorStreamCaptureIsolation";
    case cudaErrorStreamCaptureWrongThread:
      return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorEmulatedDeadlock:
      return "cudaErrorEmulatedDeadlock";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  if (error == cudaErrorEmulatedDeadlock) {
    static thread_local std::string text;
    auto lock = ssim::emu::enter();
    text = "gpu_emulated: " + rt().deadlock;
    return text.c_str();
  }
  if (error == cudaErrorNoDevice) return "no CUDA-capable device is detected";
  return error == cudaSuccess ? "no error" : "gpu_emulated: see the recorded fault";
}

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  auto* p = static_cast<std::byte*>(::operator new(std::max<std::size_t>(bytes, 1)));
  std::memset(p, 0xA5, bytes);  // device memory starts as garbage
  r.allocs[p] = ssim::emu::Allocation{ssim::emu::t_device, bytes, false};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, std::size_t bytes, unsigned int) {
  auto lock = ssim::emu::enter();
  auto* p = static_cast<std::byte*>(::operator new(std::max<std::size_t>(bytes, 1)));
  std::memset(p, 0, bytes);
  rt().allocs[p] = ssim::emu::Allocation{-1, bytes, true};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned int) {
  auto lock = ssim::emu::enter();
  const ssim::emu::Allocation* a = rt().find(host_ptr, 1, nullptr);
  if (!a || !a->host) return cudaErrorInvalidValue;
  *device_ptr = host_ptr;
  return cudaSuccess;
}

namespace {
cudaError_t free_any(void* ptr, bool host) {
  if (!ptr) return cudaSuccess;
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  auto it = r.allocs.find(static_cast<std::byte*>(ptr));
  if (it == r.allocs.end() || it->second.host != host) {
    r.fault(std::string(host ? "cudaFreeHost" : "cudaFree") + " of " + r.where(ptr) +
            ", which it did not allocate");
    return cudaErrorInvalidValue;
  }
  // cudaFree waits for the device's work; work still pending would touch freed memory.
  r.progress();
  r.shadow.erase(it->first);
  r.allocs.erase(it);
  ::operator delete(ptr);
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaFree(void* ptr) { return free_any(ptr, false); }
cudaError_t cudaFreeHost(void* ptr) { return free_any(ptr, true); }

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  try {
    if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice) {
      const ssim::emu::Allocation* a = r.find(dst, bytes, nullptr);
      r.check_device(dst, bytes, a ? a->device : ssim::emu::t_device, "cudaMemcpy destination");
    }
    if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice) {
      const ssim::emu::Allocation* a = r.find(src, bytes, nullptr);
      r.check_device(src, bytes, a ? a->device : ssim::emu::t_device, "cudaMemcpy source");
    }
  } catch (const Fault& f) {
    r.fault(f.what());
    return cudaErrorInvalidValue;
  }
  std::memmove(dst, src, bytes);
  return r.sticky;
}

cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  try {
    const ssim::emu::Allocation* a = r.find(ptr, bytes, nullptr);
    r.check_device(ptr, bytes, a ? a->device : ssim::emu::t_device, "cudaMemset");
  } catch (const Fault& f) {
    r.fault(f.what());
    return cudaErrorInvalidValue;
  }
  std::memset(ptr, value, bytes);
  return r.sticky;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return copy_op(stream, dst, src, bytes, kind, 0, false);
}

cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t stream) {
  return copy_op(stream, ptr, nullptr, bytes, cudaMemcpyHostToDevice, value, true);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (flags != cudaStreamNonBlocking) {
    r.fault("the stand-in emulates non-blocking streams only (cudaStreamNonBlocking)");
    return cudaErrorInvalidValue;
  }
  auto* s = new CUstream_st;
  s->device = ssim::emu::t_device;
  s->id = r.next_stream++;
  r.streams.push_back(s);
  *stream = s;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!ssim::emu::valid_stream(r, stream)) return cudaErrorInvalidResourceHandle;
  if (stream->capture) return cudaErrorStreamCaptureUnsupported;
  stream->destroyed = true;
  r.progress();
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!ssim::emu::valid_stream(r, stream)) return cudaErrorInvalidResourceHandle;
  if (cudaError_t e = refuse_in_capture(r, stream, "cudaStreamSynchronize")) return e;
  if (!r.wait_until(
          lock, [&] { return stream->queue.empty(); },
          "cudaStreamSynchronize(stream " + std::to_string(stream->id) + ")"))
    return cudaErrorEmulatedDeadlock;
  r.observed(stream->clock, stream->vc);
  return r.sticky;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!ssim::emu::valid_stream(r, stream)) return cudaErrorInvalidResourceHandle;
  if (cudaError_t e = refuse_in_capture(r, stream, "cudaStreamQuery")) return e;
  r.progress();
  if (r.sticky != cudaSuccess) return r.sticky;
  if (!stream->queue.empty()) return cudaErrorNotReady;
  r.observed(stream->clock, stream->vc);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!ssim::emu::valid_stream(r, stream) || !r.events.count(event))
    return cudaErrorInvalidResourceHandle;
  if (event->capture) {
    ssim::emu::Capture& c = *event->capture;
    if (stream->capture && stream->capture != &c) {
      r.fault("cudaStreamWaitEvent would merge two captures");
      return cudaErrorStreamCaptureMerge;
    }
    if (!stream->capture) {  // the stream joins the capture as a new lane
      stream->capture = &c;
      stream->lane = static_cast<int>(c.lanes.size());
      c.streams.push_back(stream);
      c.lanes.push_back(ssim::emu::Lane{stream->device, {}, false, -1});
    }
    Op op;
    op.kind = Op::wait;
    op.what = "cudaStreamWaitEvent (captured)";
    op.node = event->node;
    // Lane 0 waiting on another lane's last record joins that lane back.
    const int from = c.node_lane[event->node];
    if (stream->lane == 0 && from != 0 &&
        c.lanes[static_cast<std::size_t>(from)].last_record_node == event->node) {
      r.capture_op(stream, std::move(op));
      c.lanes[static_cast<std::size_t>(from)].joined = true;
    } else {
      r.capture_op(stream, std::move(op));
    }
    return cudaSuccess;
  }
  if (stream->capture) {
    stream->capture->invalid = true;
    stream->capture->why = "a wait on an event recorded outside the capture";
    r.fault(
        "cudaStreamWaitEvent: a capturing stream waits on an event recorded outside the capture");
    return cudaErrorStreamCaptureIsolation;
  }
  if (!event->latest) return cudaSuccess;  // never recorded: nothing to wait for
  Op op;
  op.kind = Op::wait;
  op.what = "cudaStreamWaitEvent";
  op.instance = event->latest;
  r.enqueue(stream, std::move(op));
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  auto lock = ssim::emu::enter();
  auto* e = new CUevent_st;
  e->device = ssim::emu::t_device;
  e->flags = flags;
  rt().events.insert(e);
  *event = e;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  auto lock = ssim::emu::enter();
  if (!rt().events.erase(event)) return cudaErrorInvalidResourceHandle;
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!ssim::emu::valid_stream(r, stream) || !r.events.count(event)) {
    r.fault("cudaEventRecord on the legacy stream, an invalid stream or an invalid event");
    return cudaErrorInvalidResourceHandle;
  }
  if (event->device != stream->device) {
    r.fault("cudaEventRecord: event of device " + std::to_string(event->device) +
            " recorded on a stream of device " + std::to_string(stream->device));
    return cudaErrorInvalidResourceHandle;
  }
  Op op;
  op.kind = Op::record;
  op.what = "cudaEventRecord";
  if (stream->capture) {
    r.capture_op(stream, std::move(op));
    event->capture = stream->capture;
    event->node = stream->capture->lanes[static_cast<std::size_t>(stream->lane)].last_record_node;
    return cudaSuccess;
  }
  op.instance = std::make_shared<ssim::emu::RecordInstance>();
  event->latest = op.instance;
  event->capture = nullptr;
  r.enqueue(stream, std::move(op));
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!r.events.count(event)) return cudaErrorInvalidResourceHandle;
  if (event->capture) return cudaErrorStreamCaptureUnsupported;
  r.progress();
  if (r.sticky != cudaSuccess) return r.sticky;
  if (!event->latest) return cudaSuccess;
  if (!event->latest->done) return cudaErrorNotReady;
  r.observed(event->latest->time, event->latest->vc);
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!r.events.count(event)) return cudaErrorInvalidResourceHandle;
  if (event->capture) return cudaErrorStreamCaptureUnsupported;
  if (!event->latest) return cudaSuccess;
  const ssim::emu::Instance inst = event->latest;
  if (!r.wait_until(
          lock, [&] { return inst->done; }, "cudaEventSynchronize"))
    return cudaErrorEmulatedDeadlock;
  r.observed(inst->time, inst->vc);
  return r.sticky;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!r.events.count(start) || !r.events.count(end)) return cudaErrorInvalidResourceHandle;
  if ((start->flags | end->flags) & cudaEventDisableTiming) return cudaErrorInvalidResourceHandle;
  if (!start->latest || !end->latest) return cudaErrorInvalidResourceHandle;
  if (!start->latest->done || !end->latest->done) return cudaErrorNotReady;
  *ms = static_cast<float>(
      (static_cast<double>(end->latest->time) - static_cast<double>(start->latest->time)) * 1e-6);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!ssim::emu::valid_stream(r, stream)) return cudaErrorInvalidResourceHandle;
  if (stream->capture) return cudaErrorIllegalAddress;
  auto* c = new ssim::emu::Capture;
  c->origin = stream;
  c->streams.push_back(stream);
  c->lanes.push_back(ssim::emu::Lane{stream->device, {}, true, -1});
  stream->capture = c;
  stream->lane = 0;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!ssim::emu::valid_stream(r, stream) || !stream->capture) return cudaErrorIllegalAddress;
  ssim::emu::Capture* c = stream->capture;
  cudaError_t result = cudaSuccess;
  if (c->origin != stream) {
    r.fault("cudaStreamEndCapture on a stream that did not begin the capture");
    return cudaErrorStreamCaptureUnmatched;
  }
  if (c->invalid) {
    result = cudaErrorStreamCaptureInvalidated;
  } else {
    for (std::size_t i = 1; i < c->lanes.size(); ++i) {
      if (!c->lanes[i].joined) {
        r.fault("cudaStreamEndCapture: stream " + std::to_string(c->streams[i]->id) +
                " joined the capture and was not joined back");
        result = cudaErrorStreamCaptureUnjoined;
      }
    }
  }
  for (CUstream_st* s : c->streams) {
    s->capture = nullptr;
    s->lane = -1;
  }
  for (CUevent_st* e : r.events) {
    if (e->capture == c) e->capture = nullptr;
  }
  if (result == cudaSuccess) {
    auto* g = new CUgraph_st;
    g->lanes = std::move(c->lanes);
    g->records = c->records;
    *graph = g;
  } else {
    *graph = nullptr;
  }
  delete c;
  return result;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!graph) return cudaErrorInvalidValue;
  auto* x = new CUgraphExec_st;
  x->lanes = graph->lanes;
  x->records = graph->records;
  for (std::size_t i = 1; i < x->lanes.size(); ++i) {
    auto* s = new CUstream_st;
    s->device = x->lanes[i].device;
    s->id = r.next_stream++;
    s->hidden = true;
    r.streams.push_back(s);
    x->hidden.push_back(s);
  }
  *exec = x;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!exec || !ssim::emu::valid_stream(r, stream)) return cudaErrorInvalidResourceHandle;
  if (stream->capture) return cudaErrorStreamCaptureUnsupported;
  if (stream->device != exec->lanes[0].device) {
    r.fault("cudaGraphLaunch on a stream of another device than the graph's");
    return cudaErrorInvalidValue;
  }
  ++r.counters.graph_launches;
  std::vector<ssim::emu::Instance> nodes(static_cast<std::size_t>(exec->records));
  for (auto& n : nodes) n = std::make_shared<ssim::emu::RecordInstance>();
  // All NCCL calls of the launch are posted in lane order, as a real launch issues them.
  for (std::size_t i = 0; i < exec->lanes.size(); ++i) {
    CUstream_st* s = i == 0 ? stream : exec->hidden[i - 1];
    for (const Op& captured : exec->lanes[i].ops) {
      Op op = captured;
      if (op.kind == Op::record || op.kind == Op::wait)
        op.instance = nodes[static_cast<std::size_t>(op.node)];
      if (op.kind == Op::nccl) {
        std::vector<ssim::emu::NcclCall> calls = op.calls;
        for (auto& c : calls) c.stream = s;
        std::map<cudaStream_t, std::shared_ptr<ssim::emu::GroupOp>> ops;
        r.post(calls, ops);
        op.group = ops[s];
      }
      r.enqueue(s, std::move(op));
    }
  }
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!exec) return cudaErrorInvalidValue;
  for (CUstream_st* s : exec->hidden) s->destroyed = true;
  r.progress();
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

// ================================== NCCL =================================================

namespace {

ncclResult_t nccl_fault(const std::string& message, ncclResult_t result = ncclInvalidUsage) {
  rt().faults.push_back(message);
  std::fprintf(stderr, "gpu_emulated: fault: %s\n", message.c_str());
  return result;
}

ncclComm* new_comm(Runtime& r, ssim::emu::Clique* c, int rank, int device) {
  auto* comm = new ncclComm;
  comm->clique = c;
  comm->rank = rank;
  comm->device = device;
  c->ranks[static_cast<std::size_t>(rank)] = comm;
  r.comms.insert(comm);
  return comm;
}

ssim::emu::Clique* new_clique(Runtime& r, int nranks) {
  r.cliques.push_back(std::make_unique<ssim::emu::Clique>());
  ssim::emu::Clique* c = r.cliques.back().get();
  c->nranks = nranks;
  c->ranks.assign(static_cast<std::size_t>(nranks), nullptr);
  return c;
}

bool live(Runtime& r, ncclComm_t comm) { return comm && r.comms.count(comm); }

// Runs split number `seq` of `clique` once every rank asked for it.
void finish_split(Runtime& r, ssim::emu::Clique& parent, std::size_t seq) {
  auto& sp = parent.splits[seq];
  if (sp.done || sp.arrived < parent.nranks) return;
  sp.done = true;
  std::map<int, std::vector<std::pair<int, int>>> by_color;  // color -> (key, parent rank)
  for (int p = 0; p < parent.nranks; ++p) {
    const auto& req = sp.requests[static_cast<std::size_t>(p)];
    if (req->first == NCCL_SPLIT_NOCOLOR) {
      *sp.outputs[static_cast<std::size_t>(p)] = nullptr;
      continue;
    }
    by_color[req->first].push_back({req->second, p});
  }
  for (auto& [color, members] : by_color) {
    std::sort(members.begin(), members.end());
    ssim::emu::Clique* c = new_clique(r, static_cast<int>(members.size()));
    c->joined = c->nranks;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const int p = members[i].second;
      *sp.outputs[static_cast<std::size_t>(p)] =
          new_comm(r, c, static_cast<int>(i), parent.ranks[static_cast<std::size_t>(p)]->device);
    }
  }
  r.changed();
}

ncclResult_t request_split(Runtime& r, ncclComm_t comm, int color, int key, ncclComm_t* out,
                           std::size_t* seq_out) {
  if (!live(r, comm) || comm->aborted)
    return nccl_fault("ncclCommSplit on an invalid communicator", ncclInvalidArgument);
  ssim::emu::Clique& cl = *comm->clique;
  const std::size_t seq = comm->splits++;
  while (cl.splits.size() <= seq) {
    cl.splits.emplace_back();
    cl.splits.back().requests.resize(static_cast<std::size_t>(cl.nranks));
    cl.splits.back().outputs.resize(static_cast<std::size_t>(cl.nranks));
  }
  auto& sp = cl.splits[seq];
  sp.requests[static_cast<std::size_t>(comm->rank)] = std::make_pair(color, key);
  sp.outputs[static_cast<std::size_t>(comm->rank)] = out;
  ++sp.arrived;
  *seq_out = seq;
  finish_split(r, cl, seq);
  return ncclSuccess;
}

}  // namespace

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  auto lock = ssim::emu::enter();
  std::memset(id->internal, 0, sizeof id->internal);
  std::snprintf(id->internal, sizeof id->internal, "gpu_emulated-%llu",
                static_cast<unsigned long long>(rt().next_id++));
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error (gpu_emulated: see the recorded fault)";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage (gpu_emulated: see the recorded fault)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
  }
  return "unknown result code";
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (ndev < 1) return ncclInvalidArgument;
  for (int i = 0; i < ndev; ++i) {
    const int d = devlist ? devlist[i] : i;
    if (check_device_index(d) != cudaSuccess) return ncclUnhandledCudaError;
  }
  ssim::emu::Clique* c = new_clique(r, ndev);
  c->joined = ndev;
  for (int i = 0; i < ndev; ++i) comms[i] = new_comm(r, c, i, devlist ? devlist[i] : i);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  const std::string key(id.internal, strnlen(id.internal, sizeof id.internal));
  ssim::emu::Clique*& c = r.by_id[key];
  if (!c) c = new_clique(r, nranks);
  if (c->nranks != nranks) return nccl_fault("ncclCommInitRank: ranks disagree on nranks");
  if (c->ranks[static_cast<std::size_t>(rank)])
    return nccl_fault("ncclCommInitRank: rank " + std::to_string(rank) + " joined twice");
  ssim::emu::Clique* clique = c;
  *comm = new_comm(r, clique, rank, ssim::emu::t_device);
  ++clique->joined;
  r.changed();
  if (!r.wait_until(
          lock, [&] { return clique->joined == clique->nranks; },
          "ncclCommInitRank (rank " + std::to_string(rank) + " of " + std::to_string(nranks) + ")",
          true))
    return ncclSystemError;
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t*) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (ssim::emu::t_group_depth > 0) {
    ssim::emu::t_group_splits.push_back({comm, color, key, newcomm});
    return ncclSuccess;
  }
  std::size_t seq = 0;
  if (ncclResult_t e = request_split(r, comm, color, key, newcomm, &seq)) return e;
  ssim::emu::Clique* cl = comm->clique;
  if (!r.wait_until(
          lock, [&] { return cl->splits[seq].done; }, "ncclCommSplit", true))
    return ncclSystemError;
  return ncclSuccess;
}

namespace {
ncclResult_t release(ncclComm_t comm, bool abort) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!live(r, comm)) return nccl_fault("destroying an invalid communicator", ncclInvalidArgument);
  if (abort) {
    comm->aborted = true;
    r.progress();  // pending operations fail
  } else {
    // ncclCommDestroy after the work is done: operations still pending would hang.
    const bool ok = r.wait_until(
        lock,
        [&] {
          for (CUstream_st* s : r.streams) {
            for (const Op& op : s->queue) {
              if (op.kind != Op::nccl) continue;
              for (auto& p : op.group->p2p)
                if (p->call.comm == comm && !p->done) return false;
              for (auto& p : op.group->coll)
                if (p->call.comm == comm && !p->done) return false;
            }
          }
          return true;
        },
        "ncclCommDestroy");
    if (!ok) return ncclSystemError;
  }
  // Pending work may still name the communicator: keep it, unlinked, as aborted.
  comm->aborted = true;
  if (r.comms.erase(comm) != 0) r.retired.push_back(comm);
  r.changed();
  return ncclSuccess;
}
}  // namespace

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!live(r, comm))
    return nccl_fault("ncclCommFinalize on an invalid communicator", ncclInvalidArgument);
  comm->finalized = true;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) { return release(comm, false); }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return release(comm, true); }

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!live(r, comm)) return ncclInvalidArgument;
  r.progress();
  *error = comm->aborted ? ncclInvalidUsage : ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++ssim::emu::t_group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (ssim::emu::t_group_depth == 0) return nccl_fault("ncclGroupEnd without ncclGroupStart");
  if (--ssim::emu::t_group_depth > 0) return ncclSuccess;
  std::vector<ssim::emu::NcclCall> calls = std::move(ssim::emu::t_group_calls);
  ssim::emu::t_group_calls.clear();
  std::vector<ssim::emu::PendingSplit> splits = std::move(ssim::emu::t_group_splits);
  ssim::emu::t_group_splits.clear();
  bool capturing = false, eager = false;
  for (const auto& c : calls) (c.stream->capture ? capturing : eager) = true;
  if (capturing && eager)
    return nccl_fault("an NCCL group mixes capturing and non-capturing streams");
  r.issue_nccl(std::move(calls));
  std::vector<std::pair<ssim::emu::Clique*, std::size_t>> waits;
  for (const auto& s : splits) {
    std::size_t seq = 0;
    if (ncclResult_t e = request_split(r, s.parent, s.color, s.key, s.out, &seq)) return e;
    waits.push_back({s.parent->clique, seq});
  }
  if (!waits.empty() && !r.wait_until(
                            lock,
                            [&] {
                              for (auto& [cl, seq] : waits)
                                if (!cl->splits[seq].done) return false;
                              return true;
                            },
                            "ncclCommSplit (grouped)", true))
    return ncclSystemError;
  return ncclSuccess;
}

namespace {

ncclResult_t add_call(ssim::emu::NcclCall call, const char* name) {
  auto lock = ssim::emu::enter();
  Runtime& r = rt();
  if (!live(r, call.comm))
    return nccl_fault(std::string(name) + " on an invalid communicator", ncclInvalidArgument);
  if (call.comm->aborted) return nccl_fault(std::string(name) + " on an aborted communicator");
  if (!ssim::emu::valid_stream(r, call.stream))
    return nccl_fault(std::string(name) + " on the legacy stream or an invalid stream");
  if (call.stream->device != call.comm->device) {
    return nccl_fault(std::string(name) + ": stream of device " +
                      std::to_string(call.stream->device) + ", communicator rank on device " +
                      std::to_string(call.comm->device));
  }
  if ((call.kind == ssim::emu::NcclCall::send || call.kind == ssim::emu::NcclCall::recv) &&
      (call.peer < 0 || call.peer >= call.comm->clique->nranks || call.peer == call.comm->rank)) {
    return nccl_fault(std::string(name) + ": peer " + std::to_string(call.peer) +
                          " is not another rank of the communicator",
                      ncclInvalidArgument);
  }
  // Buffers: the communicator's device, checked now and again when the data moves.
  const std::size_t elem = Runtime::type_size(call.type);
  const std::size_t n = static_cast<std::size_t>(call.comm->clique->nranks);
  try {
    if (call.sendbuf) {
      const std::size_t count =
          call.kind == ssim::emu::NcclCall::reduce_scatter ? call.count * n : call.count;
      r.check_device(call.sendbuf, count * elem, call.comm->device, std::string(name) + " buffer");
    }
    if (call.recvbuf)
      r.check_device(call.recvbuf, call.count * elem, call.comm->device,
                     std::string(name) + " buffer");
  } catch (const Fault& f) {
    return nccl_fault(f.what(), ncclInvalidArgument);
  }
  if (ssim::emu::t_group_depth > 0) {
    ssim::emu::t_group_calls.push_back(call);
    return ncclSuccess;
  }
  if (call.stream->capture) {
    r.issue_nccl({call});
  } else {
    r.issue_nccl({call});
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t ncclSend(const void* buff, std::size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return add_call({.kind = ssim::emu::NcclCall::send,
                   .comm = comm,
                   .sendbuf = buff,
                   .count = count,
                   .type = type,
                   .peer = peer,
                   .stream = stream},
                  "ncclSend");
}

ncclResult_t ncclRecv(void* buff, std::size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return add_call({.kind = ssim::emu::NcclCall::recv,
                   .comm = comm,
                   .recvbuf = buff,
                   .count = count,
                   .type = type,
                   .peer = peer,
                   .stream = stream},
                  "ncclRecv");
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, std::size_t count,
                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return add_call({.kind = ssim::emu::NcclCall::allreduce,
                   .comm = comm,
                   .sendbuf = sendbuff,
                   .recvbuf = recvbuff,
                   .count = count,
                   .type = type,
                   .op = op,
                   .stream = stream},
                  "ncclAllReduce");
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, std::size_t recvcount,
                               ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return add_call({.kind = ssim::emu::NcclCall::reduce_scatter,
                   .comm = comm,
                   .sendbuf = sendbuff,
                   .recvbuf = recvbuff,
                   .count = recvcount,
                   .type = type,
                   .op = op,
                   .stream = stream},
                  "ncclReduceScatter");
}

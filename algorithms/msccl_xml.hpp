// A schedule as an MSCCL algorithm XML file: the format read by MSCCL-enabled NCCL
// (msccl-executor-nccl) and by RCCL, and written by msccl-tools.
//
//   MscclExported f = schedule_to_msccl_xml(generate("ring", 8, {}));  // f.xml; throws InputError
//
// Where the format is documented: there is no written specification; the reference is the
// runtime's parser, src/misc/msccl/msccl_parser.cc in github.com/Azure/msccl-executor-nccl
// (attributes, step types, limits), its interpreter kernel (how `depid`/`deps` are waited for)
// and msccl-tools' writer, msccl/language/ir.py (ir_to_xml: extra dependencies become `nop`
// steps placed before the step; `s` numbers count the nops). `deps` names the target step's `s`,
// nops counted: the parser folds each nop's dependency into the next transmission, and the kernel
// (mscclRunInterpreter) advances its step counter past them (by the number of dependencies less
// one) before it publishes the counter as the thread block's flag after a hasdep=1 transmission;
// a wait on (depid, deps) ends when that flag reaches deps. Every awaited step has hasdep=1.
//
// What is written (one in-place AllReduce on the input buffer "i"):
//   <algo name proto="Simple" nchannels nchunksperloop ngpus coll="allreduce" inplace="1"
//         outofplace="0" minBytes maxBytes>
//     <gpu id i_chunks o_chunks s_chunks="0">       one per rank
//       <tb id send recv chan>                        per peer: one that sends, one that receives
//         <step s type srcbuf srcoff dstbuf dstoff cnt="1" depid deps hasdep/>
// MSCCL chunks: the runtime cuts a tensor into nchunksperloop chunks and uses the file only when
// the element count is a multiple of it (msccl_lifecycle.cc, mscclInternalSchedulerSelectAlgo).
// Schedule chunk c covers MSCCL chunks [floor(c P / C), floor((c + 1) P / C)) for P =
// nchunksperloop and C = the schedule's chunks, as evenly as whole chunks allow (P >= C).
// Each transfer {src, dst, chunks, op} becomes, per MSCCL chunk, an "s" step in the sender's
// thread block for dst and an "rrc" (reduce) or "r" (copy) step in the receiver's thread block
// for src, in round order, so the messages of a connection meet in FIFO order.
// Dependencies across thread blocks of one GPU keep the IR's round semantics per MSCCL chunk: a
// round's sends read the chunk before any of that round's receives write it, and writes to a
// chunk (several reductions in one round included) happen one after another.
// Why one chunk per step and separate send and receive thread blocks: a connection's buffer holds
// NCCL_STEPS slots and, for large tensors, the kernel moves one MSCCL chunk per piece of half of
// them (MSCCL_CHUNKSTEPS), so a sender gets two chunks ahead of its receiver at most. Two ranks
// that exchange three chunks in one round would both wait for room if a receive waited for a
// whole multi-chunk send of its own rank, or sat behind one in the same thread block.
//
// Limits of the runtime (msccl_struct.h / msccl.h / msccl_parser.h), checked here; a schedule
// beyond them is an InputError naming the limit (no XML is written):
//   steps per thread block <= 256 (MSCCL_MAX_NUM_STEPS), nops included;
//   thread blocks per GPU <= 216 (MSCCL_MAX_NUM_THREAD_BLOCKS in msccl.h: 2 per SM of an A100);
//   depid <= 127 (dependentBid is int8_t; where a rank needs more, its thread blocks are
//   renumbered with the awaited ones first);
//   thread blocks with a send (resp. receive) peer per channel <= 32; channels <= 32;
//   nodes the parser stores while it reads one rank <= 4095 (MAX_NODES 4096): <algo>, every <gpu>,
//   and that rank's <tb>s and <step>s (the other ranks' are read into one scratch node);
//   <gpu> elements <= 1024 (MAX_SUBS); nchunksperloop <= 32767 (offsets are int16_t);
//   cnt < 72 (MSCCL_MAX_COUNT): always 1 here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"

namespace ssim::alg {

struct MscclLimits {
  int max_steps_per_threadblock = 256;
  int max_threadblocks_per_gpu = 216;
  int max_depid = 127;
  int max_threadblocks_per_channel = 32;
  int max_channels = 32;
  int max_nodes = 4095;
  int max_gpus = 1024;
  int max_chunks = 32767;
};

struct MscclExport {
  int nchunksperloop = 0;      // 0: the first of msccl_nchunksperloop_candidates that fits
  std::int64_t min_bytes = 0;  // the runtime uses the file for sizes in [min_bytes, max_bytes]
  std::int64_t max_bytes = 0;  // 0: no upper limit (the runtime's convention)
  MscclLimits limits;          // defaults to the runtime's
};

struct MscclExported {
  std::string xml;
  int nchunksperloop = 0;
};

// The schedule must be an AllReduce that verifies (verify()). Bad options (nchunksperloop below
// the schedule's chunks, min_bytes > max_bytes) and files beyond a limit are InputErrors.
MscclExported schedule_to_msccl_xml(const Schedule& schedule, const MscclExport& options = {});

// The nchunksperloop values tried when none is given, in order: the smallest power of two P >= C
// whose largest share (MSCCL chunks per schedule chunk) is within 12.5% of the mean P / C, then
// smaller powers of two >= C, then C itself. A power of two serves every power-of-two element
// count from P up, and every multiple of P (3 x 2^k, ...).
std::vector<int> msccl_nchunksperloop_candidates(int chunks);

// How many MSCCL chunks each schedule chunk covers.
std::vector<int> msccl_chunk_shares(int chunks, int nchunksperloop);

// The transmissions (s, r, rrc steps; nops not counted) the file will have: two per transfer and
// MSCCL chunk. For memory estimates before exporting.
double msccl_transmission_count(const Schedule& schedule, int nchunksperloop);

}  // namespace ssim::alg

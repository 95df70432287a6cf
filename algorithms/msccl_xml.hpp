// A schedule as an MSCCL algorithm XML file: the format read by MSCCL-enabled NCCL
// (msccl-executor-nccl) and by RCCL, and written by msccl-tools.
//
//   std::string xml = schedule_to_msccl_xml(generate("ring", 8, {}));   // throws InputError
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
// What is written (one in-place AllReduce on the input buffer "i", nchunksperloop = chunks):
//   <algo name proto="Simple" nchannels nchunksperloop ngpus coll="allreduce" inplace="1"
//         outofplace="0" minBytes="0" maxBytes="...">
//     <gpu id i_chunks o_chunks s_chunks="0">       one per rank
//       <tb id send recv chan>                        one per peer the rank talks to
//         <step s type srcbuf srcoff dstbuf dstoff cnt depid deps hasdep/>
// Each transfer {src, dst, chunks, op} becomes an "s" step in the sender's thread block for dst
// and an "rrc" (reduce) or "r" (copy) step in the receiver's thread block for src, in round
// order, so messages between two ranks meet in the same FIFO order on both sides. Within a
// round a thread block sends before it receives (the runtime's connection buffers take one
// step). Dependencies across thread blocks of one GPU keep the IR's round semantics per chunk:
// a round's sends read the chunk before any of that round's receives write it, and writes to
// a chunk (several reductions in one round included) happen one after another.
//
// Limits of the runtime (msccl.h / msccl_parser.cc), checked here; a schedule beyond them is
// an InputError naming the limit (no XML is written):
//   steps per thread block <= 256 (MSCCL_MAX_NUM_STEPS), nops included;
//   thread blocks per GPU <= 216 (MSCCL_MAX_NUM_THREAD_BLOCKS);
//   thread blocks with a send (resp. receive) peer per channel <= 32; channels <= 32;
//   cnt < 72 (MSCCL_MAX_COUNT): a transfer of more chunks is split into several steps.
#pragma once

#include <string>

#include "algorithms/schedule.hpp"

namespace ssim::alg {

struct MscclLimits {
  int max_steps_per_threadblock = 256;
  int max_threadblocks_per_gpu = 216;
  int max_threadblocks_per_channel = 32;
  int max_channels = 32;
  int max_count = 71;  // chunks per step
};

// The schedule must be an AllReduce that verifies (verify()); `limits` defaults to the runtime's.
std::string schedule_to_msccl_xml(const Schedule& schedule, const MscclLimits& limits = {});

// The transmissions (s, r, rrc steps; nops not counted) the file will have: two per transfer and
// piece of at most limits.max_count chunks. For memory estimates before exporting.
double msccl_transmission_count(const Schedule& schedule, const MscclLimits& limits = {});

}  // namespace ssim::alg

// The lowering (lowering/plan.hpp, namespace ssim::lowering) under the names the executors
// use in ssim::gpu: Plan, Step, P2P, Apply, DType, lower(), ... The lowering lives in its own
// layer so that `stragglesim lower` (experiments/) prints the same plans without including
// gpu_backend/.
#pragma once

#include "lowering/plan.hpp"

namespace ssim::gpu {

using lowering::AlignmentCount;
using lowering::Apply;
using lowering::BufferLayout;
using lowering::check_align;
using lowering::check_matching;
using lowering::count_aligned;
using lowering::DType;
using lowering::dtype_size;
using lowering::format_summary;
using lowering::kDefaultAlign;
using lowering::lower;
using lowering::make_layout;
using lowering::P2P;
using lowering::padded_bytes;
using lowering::parse_dtype;
using lowering::Plan;
using lowering::PlanSummary;
using lowering::RankPlan;
using lowering::RankSummary;
using lowering::Step;
using lowering::summarize;
using lowering::to_string;

}  // namespace ssim::gpu

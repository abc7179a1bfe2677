// The C API's arguments turned into ckgen's types and checked (ckgen_dispatch_args.cpp), for
// the entry points of ckgen_dispatch.cpp. Each returns false (or a non-empty reason) with why.
#pragma once

#include <cstdint>
#include <string>

#include "ckgen/dispatch/dispatcher.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen_dispatch.h"

namespace ckgen::capi {

// Element counts of x, w, y; false (and why) when one overflows int64 or its bytes do.
bool tensor_elems(const ckgen::ConvProblem& p, int64_t elem_bytes, int64_t e[3], std::string& why);

// The problem struct as a validated ckgen::ConvProblem with its output size computed.
bool to_problem(const ckgen_problem* c, ckgen::ConvProblem& p, std::string& why);

int64_t dtype_bytes(ckgen::DataType d);

// Refusal of a run's arguments before any launch ("" when fine).
std::string check_run_args(const ckgen::KernelBase& k, const ckgen::ConvProblem& p, void* in, int64_t in_bytes,
                           void* wei, int64_t wei_bytes, void* out, int64_t out_bytes, void* workspace,
                           int64_t workspace_have, int64_t workspace_need);

// The operations of a ckgen_epilogue (NULL: none); false (and why) for a code out of range.
bool to_ops(const ckgen_epilogue* c, ckgen::EpilogueOps& ops, std::string& why);

}  // namespace ckgen::capi

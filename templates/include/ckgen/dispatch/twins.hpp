// Fused instances and their plain twins: the dispatcher ranks a fused request's candidates by the
// tuning database's entries of their plain twins (dispatch/dispatcher.hpp).
#pragma once

#include <map>
#include <string>

#include "ckgen/kernel/kernel_base.hpp"

namespace ckgen {

// Whether instance key k answers a request for (variant, datatype, fused operations).
inline bool serves_request(const KernelKey& k, Variant v, DataType dt, const EpilogueOps& ops = {}) {
  return k.variant == v && k.datatype == dt && epilogue_ops(k) == ops;
}

// The name of an instance's plain twin (the same instance without its fused operations): its name
// less the tokens of the fused epilogue, which end it, one each for the channel operation, the
// activation, the residual add, stats and the output datatype (ckgen/model/naming.py). A plain
// instance's own name.
inline std::string plain_twin_name(const KernelKey& k) {
  int n = int(k.channel_op != ChannelOp::Identity) + int(k.activation != Activation::Identity) + int(k.residual) +
          int(k.stats) + int(k.out_datatype != k.datatype);
  std::string s = k.name;
  for (; n > 0; --n) {
    const size_t at = s.rfind('_');
    if (at == std::string::npos) break;
    s.resize(at);
  }
  return s;
}

// The datatype whose measurements stand for dt's where a tuning database has none of dt: fp16
// and bf16 instances are the same tiles with the same instruction counts and bytes; dt itself
// for any other.
inline DataType sibling_datatype(DataType dt) {
  return dt == DataType::BF16 ? DataType::FP16 : dt == DataType::FP16 ? DataType::BF16 : dt;
}

// An instance name with its datatype token (`_<dt>_`, the first one) spelled as `to`'s.
inline std::string with_datatype(std::string name, DataType dt, DataType to) {
  const std::string a = std::string("_") + to_string(dt) + "_";
  const std::string b = std::string("_") + to_string(to) + "_";
  if (const size_t at = name.find(a); at != std::string::npos) name.replace(at, a.size(), b);
  return name;
}

// A tuning database's instance names (plain instances) -> the registry index of the instance
// that answers a request for (variant, datatype, ops): the named instance itself for a plain
// request, the registered instance with exactly `ops` whose plain twin it is for a fused one;
// -1 for none. With `named` another datatype than the request's (the database's entries of
// sibling_datatype), a name stands for its twin of the request's datatype.
class TwinIndex {
 public:
  TwinIndex(const Registry& reg, Variant v, DataType dt, const EpilogueOps& ops)
      : TwinIndex(reg, v, dt, ops, dt) {}
  TwinIndex(const Registry& reg, Variant v, DataType dt, const EpilogueOps& ops, DataType named) {
    const auto& all = reg.all();
    for (size_t i = 0; i < all.size(); ++i) {
      const KernelKey& k = all[i]->key();
      if (serves_request(k, v, dt, ops))
        by_twin_.emplace(with_datatype(plain_twin_name(k), dt, named), int(i));
    }
  }
  int operator()(const std::string& plain) const {
    auto it = by_twin_.find(plain);
    return it == by_twin_.end() ? -1 : it->second;
  }

 private:
  std::map<std::string, int> by_twin_;
};

}  // namespace ckgen

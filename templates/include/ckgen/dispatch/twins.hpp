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
// activation and the residual add (ckgen/model/naming.py). A plain instance's own name.
inline std::string plain_twin_name(const KernelKey& k) {
  int n = int(k.channel_op != ChannelOp::Identity) + int(k.activation != Activation::Identity) + int(k.residual);
  std::string s = k.name;
  for (; n > 0; --n) {
    const size_t at = s.rfind('_');
    if (at == std::string::npos) break;
    s.resize(at);
  }
  return s;
}

// A tuning database's instance names (plain instances) -> the registry index of the instance
// that answers a request for (variant, datatype, ops): the named instance itself for a plain
// request, the registered instance with exactly `ops` whose plain twin it is for a fused one;
// -1 for none.
class TwinIndex {
 public:
  TwinIndex(const Registry& reg, Variant v, DataType dt, const EpilogueOps& ops) {
    const auto& all = reg.all();
    for (size_t i = 0; i < all.size(); ++i) {
      const KernelKey& k = all[i]->key();
      if (serves_request(k, v, dt, ops)) by_twin_.emplace(plain_twin_name(k), int(i));
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

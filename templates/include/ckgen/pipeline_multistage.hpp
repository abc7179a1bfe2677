// Multistage pipeline (cp.async, kStages shared-memory buffers): not implemented yet.
#pragma once

#include "ckgen/config.hpp"

namespace ckgen {

template <class Tr, class View>
struct PipelineMultistage {
  template <class... Ts>
  CKGEN_DEVICE static void run(Ts&&...) {
    static_assert(sizeof...(Ts) == 0, "ckgen: the multistage pipeline is not implemented yet");
  }
};

}  // namespace ckgen

// The selection cache: exact (problem, variant, datatype, device, mode, fusion) -> (kernel index,
// k_batch, explanation). select() answers a repeated problem from it without walking the
// registry, the tuning database or the cost model.
//
//   - thread safe: lookups take a shared lock, insertions an exclusive one (std::shared_mutex);
//   - bounded: at most capacity() entries; an insertion into a full cache clears it first
//     (cap + clear: lookups never write, so they stay on the shared lock);
//   - an epoch counts the clears: a selection computed under one epoch is not stored once the
//     cache was cleared meanwhile (a tuning database loaded while select() ran), so no entry
//     outlives the state it was computed from.
// The dispatcher clears it whenever a selection could change: a tuning database loaded or
// cleared, the compute units or the backward_weight split candidates changed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "ckgen/core/problem.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

struct SelectionKey {
  // ndim, G, N, C, K, in[3], filter[3], stride[3], dilation[3], pad_l[3], pad_r[3]
  int64_t f[23] = {};
  int32_t variant = 0, datatype = 0, device = 0, mode = 0;
  int32_t fusion = 0;  // EpilogueOps::code() of the request (0: a plain convolution)

  SelectionKey() = default;
  SelectionKey(const ConvProblem& p, Variant v, DataType d, int dev, int m, int fusion_code = 0)
      : variant(int32_t(v)), datatype(int32_t(d)), device(dev), mode(m), fusion(fusion_code) {
    f[0] = p.ndim;
    f[1] = p.G;
    f[2] = p.N;
    f[3] = p.C;
    f[4] = p.K;
    for (int i = 0; i < 3; ++i) {
      f[5 + i] = p.in[i];
      f[8 + i] = p.filter[i];
      f[11 + i] = p.stride[i];
      f[14 + i] = p.dilation[i];
      f[17 + i] = p.pad_l[i];
      f[20 + i] = p.pad_r[i];
    }
  }
  bool operator==(const SelectionKey& o) const {
    return variant == o.variant && datatype == o.datatype && device == o.device && mode == o.mode &&
           fusion == o.fusion && std::memcmp(f, o.f, sizeof f) == 0;
  }
};

struct SelectionKeyHash {
  std::size_t operator()(const SelectionKey& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
    auto mix = [&h](uint64_t x) {
      h ^= x;
      h *= 1099511628211ull;
    };
    for (int64_t x : k.f) mix(uint64_t(x));
    mix(uint64_t(uint32_t(k.variant)) | uint64_t(uint32_t(k.datatype)) << 8 |
        uint64_t(uint32_t(k.mode)) << 16 | uint64_t(uint32_t(k.device)) << 24 |
        uint64_t(uint32_t(k.fusion)) << 40);
    return std::size_t(h ^ (h >> 29));
  }
};

struct CachedSelection {
  int index = -1;
  int k_batch = 0;
  std::string text;  // "source: why" of the decision
};

class SelectionCache {
 public:
  static constexpr std::size_t kDefaultCapacity = 4096;

  bool get(const SelectionKey& k, CachedSelection& out) const {
    std::shared_lock<std::shared_mutex> g(mu_);
    const auto it = map_.find(k);
    if (it == map_.end()) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    hits_.fetch_add(1, std::memory_order_relaxed);
    out = it->second;
    return true;
  }
  // Stores v unless the cache was cleared since `epoch` was read (then v may be stale).
  // Returns whether it was stored.
  bool put(const SelectionKey& k, CachedSelection v, uint64_t epoch) {
    std::unique_lock<std::shared_mutex> g(mu_);
    if (epoch != epoch_.load(std::memory_order_relaxed) || capacity_ == 0) return false;
    if (map_.size() >= capacity_ && map_.find(k) == map_.end()) map_.clear();
    map_[k] = std::move(v);
    return true;
  }
  void clear() {
    std::unique_lock<std::shared_mutex> g(mu_);
    map_.clear();
    epoch_.fetch_add(1, std::memory_order_relaxed);
  }
  // The number of clears so far (read before computing a selection, passed to put()).
  uint64_t epoch() const { return epoch_.load(std::memory_order_relaxed); }
  // 0 disables the cache.
  void set_capacity(std::size_t n) {
    std::unique_lock<std::shared_mutex> g(mu_);
    capacity_ = n;
    if (map_.size() > n) map_.clear();
    epoch_.fetch_add(1, std::memory_order_relaxed);
  }
  std::size_t capacity() const {
    std::shared_lock<std::shared_mutex> g(mu_);
    return capacity_;
  }
  std::size_t size() const {
    std::shared_lock<std::shared_mutex> g(mu_);
    return map_.size();
  }
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<SelectionKey, CachedSelection, SelectionKeyHash> map_;
  std::size_t capacity_ = kDefaultCapacity;
  std::atomic<uint64_t> epoch_{0};
  mutable std::atomic<uint64_t> hits_{0}, misses_{0};
};

}  // namespace ckgen

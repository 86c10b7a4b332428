// oneDNN (DNNL engine) helpers shared by the operators/*_dnnl.cc files: one CPU engine for the
// process, a stream per calling thread, and DnnlArg, a primitive argument that lives in a halfcaf
// tensor with a plain layout and is reordered to (or from) the layout the primitive asked for.
// Only compiled when the build found oneDNN (HALFCAF_WITH_DNNL).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/bfloat16.h"
#include "core/operator.h"
#include "core/scratch.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

// The CPU engine every DNNL operator uses.
inline dnnl::engine& DnnlEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// A stream per thread: oneDNN streams must not be used from several threads at once, and the
// dag net runs independent operators concurrently. CPU execution is synchronous.
inline dnnl::stream& DnnlStream() {
  thread_local dnnl::stream stream(DnnlEngine());
  return stream;
}

// The instruction set oneDNN dispatches to: the CPU's, lowered by a cap (ONEDNN_MAX_CPU_ISA or
// DNNL_MAX_CPU_ISA in the environment, e.g. AVX2). Asking fixes the cap for the process.
inline dnnl::cpu_isa DnnlEffectiveIsa() {
  static const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa;
}

// Whether that instruction set has BF16 instructions (AVX512_BF16, or AMX which implies them).
// oneDNN's ISA values are nested bit sets, so this is a containment test.
inline bool DnnlIsaHasBFloat16() {
  const auto isa = static_cast<unsigned>(DnnlEffectiveIsa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;
}

// Whether that instruction set has AMX (Sapphire Rapids and newer Xeons), where oneDNN's BF16
// kernels are its fastest.
inline bool DnnlIsaHasAmx() {
  const auto isa = static_cast<unsigned>(DnnlEffectiveIsa());
  const auto amx = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_amx);
  return (isa & amx) == amx;
}

// oneDNN's BF16 kernels run bfloat16 tensors (FP32 accumulation) when the CPU has BF16
// instructions (AVX512_BF16; AMX-BF16 processors have it too), oneDNN may use them (no ISA cap
// below AVX512_CORE_BF16: below it oneDNN has only emulation or no bfloat16 kernel at all) and the
// environment variable HALFCAF_DNNL_BF16 is not "0". Otherwise bfloat16 runs on the default
// operators (FP32 math on converted copies, one rounding on output). Read when an operator
// decides, so a test can switch.
inline bool DnnlBFloat16Enabled() {
  const char* env = std::getenv("HALFCAF_DNNL_BF16");
  if (env != nullptr && env[0] == '0' && env[1] == '\0') return false;
  static const bool cpu = CpuHasAvx512Bf16() && DnnlIsaHasBFloat16();
  return cpu;
}

// The attributes every halfcaf primitive is made with: the caller owns the scratchpad
// (scratchpad_mode::user). oneDNN's own scratchpad ("library" mode) is, in builds for the OpenMP
// runtime such as Debian's, one buffer per *thread*, sized by the primitives that thread created:
// a primitive created on one thread and run on another (the dag executor runs an op on whichever
// worker is free) then uses the other thread's buffer, which may be smaller or absent. With user
// mode each run passes operator scratch (core/scratch.h) of the size the primitive asks for.
inline dnnl::primitive_attr DnnlAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// A primitive made from a primitive descriptor created with DnnlAttr() (or attributes that set
// the same scratchpad mode), run with its scratchpad taken from the running operator's scratch.
class DnnlPrimitive {
 public:
  DnnlPrimitive() = default;
  DnnlPrimitive(const dnnl::primitive& prim, const dnnl::primitive_desc_base& pd)
      : prim_(prim), scratch_bytes_(pd.scratchpad_desc().get_size()) {
    if (scratch_bytes_ > 0) {
      scratch_ = dnnl::memory(pd.scratchpad_desc(), DnnlEngine(), DNNL_MEMORY_NONE);
    }
  }
  // Inside an operator run only (the scratchpad is scratch until the op returns). `args` gains
  // the scratchpad entry (kept by callers that store their argument map, so later runs reuse it).
  void Execute(std::unordered_map<int, dnnl::memory>& args) {
    if (scratch_bytes_ > 0) {
      scratch_.set_data_handle(ScratchBytes(scratch_bytes_, &fallback_));
      args[DNNL_ARG_SCRATCHPAD] = scratch_;
    }
    prim_.execute(DnnlStream(), args);
  }
  void Execute(std::unordered_map<int, dnnl::memory>&& args) { Execute(args); }
  size_t scratchpad_bytes() const { return scratch_bytes_; }

 private:
  dnnl::primitive prim_;
  dnnl::memory scratch_;
  size_t scratch_bytes_ = 0;
  std::vector<float> fallback_;  // outside an operator run
};

// A reorder from `from`'s layout to `to`'s, with the caller-owned scratchpad.
inline DnnlPrimitive DnnlReorder(const dnnl::memory& from, const dnnl::memory& to) {
  const dnnl::reorder::primitive_desc pd(from, to, DnnlAttr());
  return DnnlPrimitive(dnnl::reorder(pd), pd);
}

// Runs of the oneDNN path on bfloat16 tensors in this process (BF16 kernels, or FP32 ones where
// CpuBFloat16ConvMath says so): tests check that the fast path ran.
inline std::atomic<int64_t>& DnnlBFloat16Runs() {
  static std::atomic<int64_t> runs{0};
  return runs;
}

// A primitive oneDNN made from its reference code (no JIT kernel for this CPU, type or shape):
// far slower than halfcaf's own loops, so the caller runs its default operator instead.
template <class PrimitiveDesc>
bool IsReferenceImpl(const PrimitiveDesc& pd) {
  const char* impl = pd.impl_info_str();
  return impl != nullptr && std::strncmp(impl, "ref", 3) == 0;
}

// The default CPU implementation of a DNNL operator's type, created on first use: what the
// operator runs for the cases its primitives do not cover.
class DefaultOpFallback {
 public:
  void Run(const OperatorDef& def, Workspace* ws, const std::string& op_label) {
    if (!op_) {
      const OperatorCreator* creator = OperatorRegistry::Find(DeviceType::CPU, def.type(), "");
      HALFCAF_ENFORCE(creator != nullptr, op_label, ": no default CPU implementation");
      op_ = (*creator)(def, ws);
    }
    op_->Run(0);
  }

 private:
  std::unique_ptr<OperatorBase> op_;
};

// What a DNNL operator's primitives were made for: the input shape and kernel type, and whether
// oneDNN took them (usable false: it rejected them, has only reference code for them, or the
// operator leaves them to the default op).
struct DnnlPrepared {
  std::vector<int64_t> dims;
  dnnl::memory::data_type dt = dnnl::memory::data_type::undef;
  bool usable = false;

  // True, with usable reset, when the primitives must be made again for `x_dims` and `type`.
  bool Changed(const std::vector<int64_t>& x_dims, dnnl::memory::data_type type) {
    if (x_dims == dims && type == dt) return false;
    dims = x_dims;
    dt = type;
    usable = false;
    return true;
  }
  // Counts a run of the primitives in DnnlBFloat16Runs when they are BF16 ones.
  void CountRun() const {
    if (dt == dnnl::memory::data_type::bf16) ++DnnlBFloat16Runs();
  }
};

// The layout of a channel-blocked activation (operators/nn/channel_block.h) with `block` 4, 8 or
// 16 channels per block: nChw4c / nChw8c / nChw16c.
inline dnnl::memory::format_tag ChannelBlockedTag(int64_t block) {
  using tag = dnnl::memory::format_tag;
  return block == 16 ? tag::nChw16c : block == 8 ? tag::nChw8c : tag::nChw4c;
}

// dnnl dims from halfcaf dims.
inline dnnl::memory::dims DnnlDims(const std::vector<int64_t>& d) {
  return dnnl::memory::dims(d.begin(), d.end());
}

// A 1 x 1 filter (or its gradient) in oneDNN's f32 ABcd16b16a layout (O/16, I/16, 1, 1, 16 i,
// 16 o) that the plain OIHW one `to` wants: returns O and I (multiples of 16), else {0, 0}.
// oneDNN's reorder for this case ran 10-20x slower than a 16 x 16 block transpose (6.5 ms
// against 0.33 ms for ResNet-50's 512 x 2048 filter gradient on 2 threads), and the weight
// gradients of the 1 x 1 convolutions take it every training step.
inline std::pair<int64_t, int64_t> Blocked1x1FilterDims(const dnnl::memory::desc& from,
                                                        const dnnl::memory::desc& to) {
  using dnnl::memory;
  const memory::dims d = from.dims();
  if (d.size() != 4 || d[2] != 1 || d[3] != 1 || d[0] % 16 != 0 || d[1] % 16 != 0) return {0, 0};
  if (from != memory::desc(d, memory::data_type::f32, memory::format_tag::ABcd16b16a) ||
      to != memory::desc(d, memory::data_type::f32, memory::format_tag::abcd)) {
    return {0, 0};
  }
  return {d[0], d[1]};
}

// The transpose Blocked1x1FilterDims recognises: to[o][i] = from[o/16][i/16][i%16][o%16].
inline void Blocked1x1FilterToPlain(int64_t O, int64_t I, const float* from, float* to) {
  const int64_t ob_count = O / 16, ib_count = I / 16;
  ParallelFor(ob_count * ib_count, 256.0, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t ob = b / ib_count, ib = b % ib_count;
      const float* block = from + b * 256;
      for (int64_t o = 0; o < 16; ++o) {
        float* row = to + (ob * 16 + o) * I + ib * 16;
        for (int64_t i = 0; i < 16; ++i) row[i] = block[i * 16 + o];
      }
    }
  });
}

// One argument of a primitive. `user` describes the halfcaf tensor (plain layout, strides),
// `inner` the layout the primitive was created for. When they differ, the data goes through a
// buffer owned here, with the reorder built once.
class DnnlArg {
 public:
  enum Direction { kInput, kOutput };
  DnnlArg() = default;
  DnnlArg(const dnnl::memory::desc& user, const dnnl::memory::desc& inner, Direction dir)
      : user_(user, DnnlEngine(), DNNL_MEMORY_NONE) {
    if (inner != user) {
      // The reordered copy has no storage of its own: each run borrows operator scratch
      // (core/scratch.h), so ops do not each keep activation-sized copies between runs.
      inner_ = dnnl::memory(inner, DnnlEngine(), DNNL_MEMORY_NONE);
      inner_bytes_ = inner.get_size();
      reorder_ = dir == kInput ? DnnlReorder(user_, *inner_) : DnnlReorder(*inner_, user_);
      if (dir == kOutput) blocked_1x1_ = Blocked1x1FilterDims(inner, user);
    }
  }
  bool reordered() const { return inner_.has_value(); }
  // What the primitive reads or writes.
  const dnnl::memory& memory() const { return inner_ ? *inner_ : user_; }

  // Input: points at `data` and reorders it for the primitive when needed. Inside an operator
  // run only (the reordered copy is scratch until the op returns).
  void Load(const void* data) {
    user_.set_data_handle(const_cast<void*>(data));
    if (inner_) {
      inner_->set_data_handle(ScratchBytes(inner_bytes_, &fallback_));
      Reorder(*reorder_, user_, *inner_);
    }
  }
  // Input that stays the same between runs (an inference filter): reordered once into a buffer
  // owned here, and again only when the tensor's storage (Tensor::storage_id) is not the one it
  // was reordered from last time.
  void LoadConstant(const void* data, uint64_t storage_id) {
    user_.set_data_handle(const_cast<void*>(data));
    if (!inner_ || (storage_id != 0 && storage_id == constant_from_)) return;
    owned_.resize(inner_bytes_ / sizeof(float) + 16);
    const uintptr_t p = reinterpret_cast<uintptr_t>(owned_.data());
    inner_->set_data_handle(reinterpret_cast<void*>((p + 63) & ~uintptr_t{63}));
    Reorder(*reorder_, user_, *inner_);
    constant_from_ = storage_id;
  }
  // Output of a primitive that adds to what its destination holds (a sum post-op): points at
  // `data` and starts the destination from `init` (same plain layout; may be `data` itself).
  void BindAccumulate(void* data, const void* init) {
    user_.set_data_handle(data);
    if (inner_) {
      inner_->set_data_handle(ScratchBytes(inner_bytes_, &fallback_));
      if (!load_) load_ = DnnlReorder(user_, *inner_);
      dnnl::memory from(user_.get_desc(), DnnlEngine(), const_cast<void*>(init));
      Reorder(*load_, from, *inner_);
    } else if (init != data) {
      std::memcpy(data, init, user_.get_desc().get_size());
    }
  }
  // Output: points at `data`; after the primitive ran, Store() reorders into it when needed.
  void Bind(void* data) {
    user_.set_data_handle(data);
    if (inner_) inner_->set_data_handle(ScratchBytes(inner_bytes_, &fallback_));
  }
  void Store() {
    if (!inner_) return;
    if (blocked_1x1_.first != 0) {
      Blocked1x1FilterToPlain(blocked_1x1_.first, blocked_1x1_.second,
                              static_cast<const float*>(inner_->get_data_handle()),
                              static_cast<float*>(user_.get_data_handle()));
      return;
    }
    Reorder(*reorder_, *inner_, user_);
  }

 private:
  static void Reorder(DnnlPrimitive& r, const dnnl::memory& from, const dnnl::memory& to) {
    r.Execute({{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  }

  dnnl::memory user_;
  std::optional<dnnl::memory> inner_;
  size_t inner_bytes_ = 0;
  std::optional<DnnlPrimitive> reorder_, load_;
  std::pair<int64_t, int64_t> blocked_1x1_{0, 0};  // Store's transpose (O, I), when it applies
  std::vector<float> fallback_;  // outside an operator run
  std::vector<float> owned_;     // LoadConstant's copy
  uint64_t constant_from_ = 0;
};

}  // namespace halfcaf

#include "real/kernels_conv_direct.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include "base/error.hpp"

#ifdef CNNPAR_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace cnnpar::real {

#ifdef CNNPAR_HAVE_ONEDNN

// A rank runs one layer's kernel at a time: the reordered copies and the library's scratchpads of
// every DirectConv share these buffers, grown to the largest need, instead of a set per layer.
// (Outside the anonymous namespace: DirectConv::Primitives, which has external linkage, holds one.)
enum DirectConvSlot { kFirstOperand, kSecondOperand, kThirdOperand, kScratchpad, kSlots };

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// In oneDNN's logical order (N, C, H, W) = (a, b, c, d), the executor's (C, N, H, W) is `bacd`.
constexpr Tag kChannelMajor = Tag::bacd;

// Aligned to a cache line, as oneDNN's own allocations are: its blocked kernels load whole lines.
void* shared_slot(DirectConvSlot slot, std::size_t bytes) {
  constexpr std::size_t kAlignment = 64;
  struct Buffer {
    std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
    std::size_t bytes = 0;
  };
  static Buffer buffers[kSlots];
  Buffer& buffer = buffers[slot];
  if (buffer.bytes < bytes) {
    const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    buffer.data.reset(std::aligned_alloc(kAlignment, rounded));
    CNNPAR_ASSERT(buffer.data != nullptr, "out of memory for a direct convolution's buffers");
    buffer.bytes = rounded;
  }
  return buffer.data.get();
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

}  // namespace

struct DirectConv::Primitives {
  // A user buffer and the primitive's layout for it: reorders in or out only where they differ.
  struct Operand {
    memory::desc user;
    memory::desc inner;
    DirectConvSlot slot;       // where its inner copy lives while a primitive runs
    memory scratch;            // the inner layout's buffer when it is not the user's
    dnnl::reorder to_inner;    // user -> scratch
    dnnl::reorder to_user;     // scratch -> user (with `add`: user += scratch)

    Operand(const memory::desc& user_desc, const memory::desc& inner_desc, DirectConvSlot buffer_slot, bool add = false)
        : user(user_desc), inner(inner_desc), slot(buffer_slot) {
      if (inner == user && !add) return;
      dnnl::engine& engine = cpu_engine();
      scratch = memory(inner, engine, DNNL_MEMORY_NONE);
      to_inner = dnnl::reorder(dnnl::reorder::primitive_desc(engine, user, engine, inner));
      dnnl::primitive_attr attr;
      if (add) {
        dnnl::post_ops sum;
        sum.append_sum(1.0f);
        attr.set_post_ops(sum);
      }
      to_user = dnnl::reorder(dnnl::reorder::primitive_desc(engine, inner, engine, user, attr));
    }
    bool reordered() const { return bool(scratch); }
    // The inner copy, in its shared slot.
    memory& copy() {
      scratch.set_data_handle(shared_slot(slot, inner.get_size()));
      return scratch;
    }
  };

  dnnl::stream stream{cpu_engine()};
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
  std::unique_ptr<Operand> src, weights, dst;                       // forward
  std::unique_ptr<Operand> bd_weights, bd_diff_dst, bd_diff_src;    // backward data
  std::unique_ptr<Operand> bw_src, bw_diff_dst, bw_diff_weights;    // backward weights
  memory::desc bias;                                                 // (O), plain
  memory::desc forward_scratchpad, data_scratchpad, weights_scratchpad;  // the library's work space
  std::vector<float> no_bias;                                        // (O): zeros, or a gradient nobody reads

  // The user's buffer in the operand's inner layout (reordered into scratch where they differ).
  memory in(Operand& operand, const float* user) {
    memory user_memory(operand.user, cpu_engine(), const_cast<float*>(user));
    if (!operand.reordered()) return user_memory;
    operand.to_inner.execute(stream, user_memory, operand.copy());
    return operand.scratch;
  }
  // The memory a primitive writes the user's buffer through.
  memory out(Operand& operand, float* user) {
    return operand.reordered() ? operand.copy() : memory(operand.user, cpu_engine(), user);
  }
  // Moves (or adds) what a primitive wrote into scratch to the user's buffer.
  void finish(Operand& operand, float* user) {
    if (!operand.reordered()) return;
    memory user_memory(operand.user, cpu_engine(), user);
    operand.to_user.execute(stream, operand.scratch, user_memory);
  }
  memory scratchpad(const memory::desc& desc) { return memory(desc, cpu_engine(), shared_slot(kScratchpad, desc.get_size())); }
  float* bias_or_none(const float* bias) {
    if (bias) return const_cast<float*>(bias);
    std::fill(no_bias.begin(), no_bias.end(), 0.0f);
    return no_bias.data();
  }
};

bool direct_convolution_available() { return true; }

namespace {

// The shapes of one convolution in oneDNN's terms.
struct ConvDims {
  memory::dims src, weights, dst, strides, padding;
  ConvDims(const ConvGeometry& g, std::int64_t out_maps)
      : src{g.batch, g.channels, g.in_h, g.in_w},
        weights{out_maps, g.channels, g.kernel_h, g.kernel_w},
        dst{g.batch, out_maps, g.out_h(), g.out_w()},
        strides{g.stride, g.stride},
        // Right padding as on the left: oneDNN's output size then rounds down like window_count's.
        padding{g.pad, g.pad} {}
};

memory::desc any_layout(const memory::dims& dims) { return memory::desc(dims, memory::data_type::f32, Tag::any); }

dnnl::algorithm onednn_algorithm(ConvAlgorithm algorithm) {
  return algorithm == ConvAlgorithm::winograd ? dnnl::algorithm::convolution_winograd
                                              : dnnl::algorithm::convolution_direct;
}

dnnl::convolution_forward::primitive_desc forward_primitive(const ConvDims& d, const memory::desc& bias,
                                                            ConvAlgorithm algorithm) {
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, onednn_algorithm(algorithm),
                                             any_layout(d.src), any_layout(d.weights), bias, any_layout(d.dst),
                                             d.strides, d.padding, d.padding);
  return dnnl::convolution_forward::primitive_desc(desc, user_scratchpad(), cpu_engine());
}

dnnl::convolution_backward_data::primitive_desc backward_data_primitive(
    const ConvDims& d, ConvAlgorithm algorithm, const dnnl::convolution_forward::primitive_desc& forward) {
  const dnnl::convolution_backward_data::desc desc(onednn_algorithm(algorithm), any_layout(d.src),
                                                   any_layout(d.weights), any_layout(d.dst), d.strides, d.padding,
                                                   d.padding);
  return dnnl::convolution_backward_data::primitive_desc(desc, user_scratchpad(), cpu_engine(), forward);
}

dnnl::convolution_backward_weights::primitive_desc backward_weights_primitive(
    const ConvDims& d, const memory::desc& bias, ConvAlgorithm algorithm,
    const dnnl::convolution_forward::primitive_desc& forward) {
  const dnnl::convolution_backward_weights::desc desc(onednn_algorithm(algorithm), any_layout(d.src),
                                                      any_layout(d.weights), bias, any_layout(d.dst), d.strides,
                                                      d.padding, d.padding);
  return dnnl::convolution_backward_weights::primitive_desc(desc, user_scratchpad(), cpu_engine(), forward);
}

// The three passes' descriptions. @throws dnnl::error where oneDNN has no kernel for them (a
// shape, or Winograd on a CPU without AVX-512).
struct PrimitiveDescs {
  dnnl::convolution_forward::primitive_desc forward;
  dnnl::convolution_backward_data::primitive_desc data;
  dnnl::convolution_backward_weights::primitive_desc weights;
};
PrimitiveDescs primitive_descs(const ConvDims& d, const memory::desc& bias, ConvAlgorithm algorithm) {
  auto forward = forward_primitive(d, bias, algorithm);
  auto data = backward_data_primitive(d, algorithm, forward);
  auto weights = backward_weights_primitive(d, bias, algorithm, forward);
  return {std::move(forward), std::move(data), std::move(weights)};
}

}  // namespace

bool winograd_convolution_available(const ConvGeometry& g, std::int64_t out_maps) {
  try {
    primitive_descs(ConvDims(g, out_maps), memory::desc({out_maps}, memory::data_type::f32, Tag::x),
                    ConvAlgorithm::winograd);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

DirectConv::DirectConv(const ConvGeometry& g, std::int64_t out_maps, ConvAlgorithm algorithm)
    : algorithm_(algorithm), primitives_(std::make_unique<Primitives>()) {
  Primitives& p = *primitives_;
  const ConvDims d(g, out_maps);
  const memory::desc src_user(d.src, memory::data_type::f32, kChannelMajor);
  const memory::desc weight_user(d.weights, memory::data_type::f32, Tag::oihw);
  const memory::desc dst_user(d.dst, memory::data_type::f32, kChannelMajor);
  p.bias = memory::desc({out_maps}, memory::data_type::f32, Tag::x);
  p.no_bias.resize(std::size_t(out_maps));
  std::optional<PrimitiveDescs> descs;
  try {
    descs = primitive_descs(d, p.bias, algorithm);
  } catch (const dnnl::error&) {
    CNNPAR_ASSERT(false, "oneDNN has no convolution kernel for this shape and algorithm on this CPU");
  }

  const auto& forward_pd = descs->forward;
  p.forward = dnnl::convolution_forward(forward_pd);
  p.src = std::make_unique<Primitives::Operand>(src_user, forward_pd.src_desc(), kFirstOperand);
  p.weights = std::make_unique<Primitives::Operand>(weight_user, forward_pd.weights_desc(), kSecondOperand);
  p.dst = std::make_unique<Primitives::Operand>(dst_user, forward_pd.dst_desc(), kThirdOperand);
  p.forward_scratchpad = forward_pd.scratchpad_desc();

  const auto& data_pd = descs->data;
  p.backward_data = dnnl::convolution_backward_data(data_pd);
  p.bd_weights = std::make_unique<Primitives::Operand>(weight_user, data_pd.weights_desc(), kSecondOperand);
  p.bd_diff_dst = std::make_unique<Primitives::Operand>(dst_user, data_pd.diff_dst_desc(), kFirstOperand);
  p.bd_diff_src = std::make_unique<Primitives::Operand>(src_user, data_pd.diff_src_desc(), kThirdOperand, /*add=*/true);
  p.data_scratchpad = data_pd.scratchpad_desc();

  const auto& weights_pd = descs->weights;
  p.backward_weights = dnnl::convolution_backward_weights(weights_pd);
  p.bw_src = std::make_unique<Primitives::Operand>(src_user, weights_pd.src_desc(), kFirstOperand);
  p.bw_diff_dst = std::make_unique<Primitives::Operand>(dst_user, weights_pd.diff_dst_desc(), kSecondOperand);
  p.bw_diff_weights = std::make_unique<Primitives::Operand>(weight_user, weights_pd.diff_weights_desc(), kThirdOperand);
  p.weights_scratchpad = weights_pd.scratchpad_desc();
}

DirectConv::~DirectConv() = default;

void DirectConv::forward(const float* in, const float* weights, const float* bias, float* out) {
  Primitives& p = *primitives_;
  p.forward.execute(p.stream, {{DNNL_ARG_SRC, p.in(*p.src, in)},
                               {DNNL_ARG_WEIGHTS, p.in(*p.weights, weights)},
                               {DNNL_ARG_BIAS, memory(p.bias, cpu_engine(), p.bias_or_none(bias))},
                               {DNNL_ARG_DST, p.out(*p.dst, out)},
                               {DNNL_ARG_SCRATCHPAD, p.scratchpad(p.forward_scratchpad)}});
  p.finish(*p.dst, out);
  p.stream.wait();
}

void DirectConv::backward_data_add(const float* weights, const float* out_grad, float* in_grad) {
  Primitives& p = *primitives_;
  p.backward_data.execute(p.stream, {{DNNL_ARG_WEIGHTS, p.in(*p.bd_weights, weights)},
                                     {DNNL_ARG_DIFF_DST, p.in(*p.bd_diff_dst, out_grad)},
                                     {DNNL_ARG_DIFF_SRC, p.bd_diff_src->copy()},
                                     {DNNL_ARG_SCRATCHPAD, p.scratchpad(p.data_scratchpad)}});
  p.finish(*p.bd_diff_src, in_grad);
  p.stream.wait();
}

void DirectConv::backward_weights(const float* in, const float* out_grad, float* weight_grad, float* bias_grad) {
  Primitives& p = *primitives_;
  p.backward_weights.execute(p.stream, {{DNNL_ARG_SRC, p.in(*p.bw_src, in)},
                                        {DNNL_ARG_DIFF_DST, p.in(*p.bw_diff_dst, out_grad)},
                                        {DNNL_ARG_DIFF_WEIGHTS, p.out(*p.bw_diff_weights, weight_grad)},
                                        {DNNL_ARG_DIFF_BIAS, memory(p.bias, cpu_engine(), bias_grad ? bias_grad : p.no_bias.data())},
                                        {DNNL_ARG_SCRATCHPAD, p.scratchpad(p.weights_scratchpad)}});
  p.finish(*p.bw_diff_weights, weight_grad);
  p.stream.wait();
}

#else  // no oneDNN

struct DirectConv::Primitives {};

bool direct_convolution_available() { return false; }

bool winograd_convolution_available(const ConvGeometry&, std::int64_t) { return false; }

DirectConv::DirectConv(const ConvGeometry&, std::int64_t, ConvAlgorithm algorithm) : algorithm_(algorithm) {
  CNNPAR_ASSERT(false, "direct convolutions need a build with oneDNN (CNNPAR_ONEDNN)");
}

DirectConv::~DirectConv() = default;

// Unreachable: no instance exists without oneDNN (the constructor throws).
void DirectConv::forward(const float*, const float*, const float*, float*) {}
void DirectConv::backward_data_add(const float*, const float*, float*) {}
void DirectConv::backward_weights(const float*, const float*, float*, float*) {}

#endif

}  // namespace cnnpar::real

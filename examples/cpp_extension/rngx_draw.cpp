// A C++ extension that draws the torch-rngx stream through the installed header (docs/device_api.md): one op,
// rngx_example::draw(op, x, state, params), the value of each element computed by <torch_rngx/elements.h>.
// Built by draw.py with torch.utils.cpp_extension, with -ffp-contract=off (the header's float steps are each
// rounded; a contracted multiply-add would round once). Only the light torch headers: it builds in seconds.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include <torch_rngx/elements.h>

namespace {

// One float dtype's storage: float32 and float64 as themselves, the 16-bit types as bit patterns.
float load(const at::Tensor &x, int64_t j) {
  switch (x.scalar_type()) {
    case at::kHalf: return rngx_f16_to_f32(static_cast<const uint16_t *>(x.const_data_ptr())[j]);
    case at::kBFloat16: return rngx_bf16_to_f32(static_cast<const uint16_t *>(x.const_data_ptr())[j]);
    default: return static_cast<const float *>(x.const_data_ptr())[j];
  }
}

void store(at::Tensor &out, int64_t j, float v) {
  switch (out.scalar_type()) {
    case at::kHalf: static_cast<uint16_t *>(out.data_ptr())[j] = rngx_f32_to_f16(v); break;
    case at::kBFloat16: static_cast<uint16_t *>(out.data_ptr())[j] = rngx_f32_to_bf16(v); break;
    default: static_cast<float *>(out.data_ptr())[j] = v;
  }
}

// op: "uniform", "noise", "dropout", "bernoulli" or "normal"; params as torch_rngx.params gives them.
at::Tensor draw(c10::string_view op, const at::Tensor &x_, const at::Tensor &state, const at::Tensor &params) {
  TORCH_CHECK(x_.device().is_cpu() && state.device().is_cpu() && params.device().is_cpu(), "draw: CPU tensors only");
  TORCH_CHECK(at::isFloatingType(x_.scalar_type()), "draw: x must be a float tensor");
  TORCH_CHECK(state.numel() == 2 && state.scalar_type() == at::kLong, "draw: state must be one int64 key");
  TORCH_CHECK(params.numel() == 2 && params.scalar_type() == at::kDouble, "draw: params must be 2 float64 values");
  const at::Tensor x = x_.contiguous();
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  const auto *key = static_cast<const int64_t *>(state.const_data_ptr());
  const auto *pv = static_cast<const double *>(params.const_data_ptr());
  const uint64_t seed = static_cast<uint64_t>(key[0]), offset = static_cast<uint64_t>(key[1]);
  const bool f64 = x.scalar_type() == at::kDouble;
  const bool normal = op == "normal";  // element j: pair j / 2's cosine (j even) or sine (j odd)
  const int words = (normal ? 2 : 1) * (f64 ? 2 : 1);
  TORCH_CHECK(op == "uniform" || op == "noise" || op == "dropout" || op == "bernoulli" || op == "normal",
              "draw: unknown op ", op);
  for (int64_t j = 0; j < x.numel(); ++j) {
    uint32_t w[4];
    rngx_element_words(seed, offset, static_cast<uint64_t>(normal ? j / 2 : j), words, w);
    if (f64) {
      const double xv = static_cast<const double *>(x.const_data_ptr())[j];
      double v;
      if (op == "uniform") v = rngx_uniform_f64(w[0], w[1], pv[0], pv[1]);
      else if (op == "noise") v = rngx_noise_f64(xv, w[0], w[1], pv[0], pv[1]);
      else if (op == "dropout") v = rngx_dropout_f64(xv, w[0], w[1], static_cast<uint64_t>(pv[0]), pv[1]);
      else if (op == "bernoulli") v = rngx_kept_f64(w[0], w[1], static_cast<uint64_t>(pv[0])) ? 0.0 : 1.0;
      else v = rngx_normal_f64(w, j & 1, pv[0], pv[1]);
      static_cast<double *>(out.data_ptr())[j] = v;
      continue;
    }
    const float lo = static_cast<float>(pv[0]), width = static_cast<float>(pv[1]);
    const uint32_t keep = static_cast<uint32_t>(pv[0]);
    float v;
    if (op == "uniform" && x.scalar_type() != at::kFloat) {  // 11 or 8 bits: the 16-bit type's significand
      const bool half = x.scalar_type() == at::kHalf;
      static_cast<uint16_t *>(out.data_ptr())[j] = half ? rngx_uniform_f16(w[0], lo, width)
                                                        : rngx_uniform_bf16(w[0], lo, width);
      continue;
    }
    if (op == "uniform") v = rngx_uniform_f32(w[0], lo, width);
    else if (op == "noise") v = rngx_noise_f32(load(x, j), w[0], lo, width);
    else if (op == "dropout") v = rngx_dropout_f32(load(x, j), w[0], keep, width);
    else if (op == "bernoulli") v = rngx_kept_f32(w[0], keep) ? 0.0f : 1.0f;
    else v = rngx_normal_f32(w[0], w[1], j & 1, lo, width);
    store(out, j, v);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY(rngx_example, m) { m.def("draw(str op, Tensor x, Tensor state, Tensor params) -> Tensor", &draw); }

#include "backend/cpu/attention.h"

#include <algorithm>

#include "backend/cpu/attention_impl.h"
#include "backend/cpu/attention_int8.h"
#include "backend/cpu/kv_row.h"
#include "base/check.h"
#include "tensor/kv_types.h"

namespace tally::cpu {

namespace {

// Inner loops of the scalar path (also the reference of the SIMD paths).
struct ScalarKernels {
  template <class E>
  static float dot(const float* a, typename E::Row b, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += a[i] * E::at(b, i);
    return sum;
  }
  template <class E>
  static void axpy(float* y, float w, typename E::Row x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += w * E::at(x, i);
  }
  // dots[g] = q[g] . k for the ng heads of q ([ng][n]).
  template <class E>
  static void scores(const float* q, int64_t ng, typename E::Row k, int64_t n, float* dots) {
    for (int64_t g = 0; g < ng; ++g) dots[g] = dot<E>(q + g * n, k, n);
  }
  // s[g * kAttentionChunk + p] = the int8 score of head g at the chunk's position p
  // (attention_int8.h), for p < nc. (The SIMD paths also prefetch the K and V rows of
  // prefetch_heads heads.)
  template <class EK, class /*EV*/>
  static void scores_int8(const QueryInt8& qq, int64_t ng, const void* k_layer, const void* /*v_layer*/,
                          const int64_t* offset, int64_t nc, int64_t /*hd*/, int64_t /*prefetch_heads*/,
                          float* s) {
    for (int64_t p = 0; p < nc; ++p) {
      const typename EK::Row k = EK::row(k_layer, offset[p]);
      for (int64_t g = 0; g < ng; ++g) {
        float score = 0.0f;
        for (int64_t sg = 0; sg < qq.n_seg; ++sg) {
          int32_t dot = 0;
          for (int64_t i = sg * qq.seg; i < (sg + 1) * qq.seg; ++i) dot += EK::level(k, i) * qq.q[g][i];
          const float x = static_cast<float>(dot) * EK::scale(k, sg * qq.seg);
          score = sg == 0 ? x * qq.e[g][sg] : __builtin_fmaf(x, qq.e[g][sg], score);
        }
        s[g * kAttentionChunk + p] = score;
      }
    }
  }
  // out[g] += w[g * w_stride + p] * v[p] for the chunk's positions p in order, where v[p] is
  // the row at v_layer + offset[p].
  template <class E>
  static void weighted_sum(float* out, int64_t ng, const float* w, int64_t w_stride,
                           const void* v_layer, const int64_t* offset, int64_t nc, int64_t n) {
    for (int64_t p = 0; p < nc; ++p)
      for (int64_t g = 0; g < ng; ++g)
        axpy<E>(out + g * n, w[g * w_stride + p], E::row(v_layer, offset[p]), n);
  }
  // The largest of s[0..n) (n >= 1), as `s > max ? s : max` in order.
  static float max_of(const float* s, int64_t n) {
    float m = s[0];
    for (int64_t i = 1; i < n; ++i) m = s[i] > m ? s[i] : m;
    return m;
  }
  static void scale(float* y, float a, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] *= a;
  }
  static void exp_inplace(float* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) s[i] = __builtin_expf(s[i]);
  }
};

// Whether K or V is q8_0 / q4_0 in short blocks, one a head under 32 values (kv_types.h).
// Such caches (small models: speed is no concern) take the scalar kernels on every ISA path,
// so their bits are trivially the same on every CPU and the SIMD kernels know only blocks of 32.
bool attention_short_blocks(const AttentionArgs& a) {
  return kv_type_short_blocks(a.kv.k_dtype, a.head_dim) || kv_type_short_blocks(a.kv.v_dtype, a.head_dim);
}

// f.template operator()<EK, EV>(b): the storage types of a cache with short blocks, b a copy
// of `a` whose quantized K / V point at their KvShortBlockLayer views.
template <class F>
void with_short_block_storage(const AttentionArgs& a, F&& f) {
  const auto view = [&](const void* layer, DType type) {
    return KvShortBlockLayer{static_cast<const uint8_t*>(layer), a.head_dim, kv_row_bytes(type, 1, a.head_dim)};
  };
  const KvShortBlockLayer k = view(a.kv.k, a.kv.k_dtype), v = view(a.kv.v, a.kv.v_dtype);
  AttentionArgs b = a;
  if (kv_type_short_blocks(a.kv.k_dtype, a.head_dim)) b.kv.k = &k;
  if (kv_type_short_blocks(a.kv.v_dtype, a.head_dim)) b.kv.v = &v;
  with_kv_storage<KvQ8_0Short, KvQ4_0Short>(a.kv.k_dtype, [&]<class EK>() {
    with_kv_storage<KvQ8_0Short, KvQ4_0Short>(a.kv.v_dtype, [&]<class EV>() {
      // (Neither quantized: never here, and not instantiated.)
      if constexpr (kKvShortBlocked<EK> || kKvShortBlocked<EV>) f.template operator()<EK, EV>(b);
    });
  });
}

void attention_short_blocks_task(const AttentionArgs& a, int64_t t, int64_t kvh) {
  with_short_block_storage(a, [&]<class EK, class EV>(const AttentionArgs& b) {
    attention_task_typed<ScalarKernels, EK, EV>(b, t, kvh);
  });
}

void attention_short_blocks_token(const AttentionArgs& a, int64_t t) {
  with_short_block_storage(a, [&]<class EK, class EV>(const AttentionArgs& b) {
    attention_token_typed<ScalarKernels, EK, EV>(b, t);
  });
}

}  // namespace

namespace {

// The kernel set a task runs through on ISA path `isa`. Int8 scores take vpdpbusd where the
// CPU has it (AVX-512 VNNI, else AVX-VNNI on 256 bits), else AVX2's vpmaddubsw: the integer
// sums, so the bits, are the same on all three.
enum class AttentionKernels { kScalar, kAvx2, kAvxVnni, kAvx512 };
AttentionKernels attention_kernels(IsaLevel isa, const AttentionArgs& a) {
  if (isa == IsaLevel::kScalar) return AttentionKernels::kScalar;
  if (attention_int8_scores(a)) {
    if (isa == IsaLevel::kAvx512 && cpu_features().avx512vnni) return AttentionKernels::kAvx512;
    return cpu_features().avxvnni ? AttentionKernels::kAvxVnni : AttentionKernels::kAvx2;
  }
  return isa == IsaLevel::kAvx512 ? AttentionKernels::kAvx512 : AttentionKernels::kAvx2;
}

}  // namespace

void attention_task(IsaLevel isa, const AttentionArgs& args, int64_t token, int64_t kv_head) {
  TALLY_DCHECK(isa <= cpu_isa_level(), "ISA path {} not available", isa_level_name(isa));
  TALLY_DCHECK(kv_type_supported(args.kv.k_dtype) && kv_type_supported(args.kv.v_dtype),
               "KV types {}/{}", dtype_name(args.kv.k_dtype), dtype_name(args.kv.v_dtype));
  if (attention_short_blocks(args)) return attention_short_blocks_task(args, token, kv_head);
  switch (attention_kernels(isa, args)) {
    case AttentionKernels::kAvx512: return detail::attention_task_avx512(args, token, kv_head);
    case AttentionKernels::kAvxVnni: return detail::attention_task_avxvnni(args, token, kv_head);
    case AttentionKernels::kAvx2: return detail::attention_task_avx2(args, token, kv_head);
    case AttentionKernels::kScalar: return attention_task_impl<ScalarKernels>(args, token, kv_head);
  }
}

void attention_token_task(IsaLevel isa, const AttentionArgs& args, int64_t token) {
  TALLY_DCHECK(isa <= cpu_isa_level(), "ISA path {} not available", isa_level_name(isa));
  if (attention_short_blocks(args)) return attention_short_blocks_token(args, token);
  switch (attention_kernels(isa, args)) {
    case AttentionKernels::kAvx512: return detail::attention_token_task_avx512(args, token);
    case AttentionKernels::kAvxVnni: return detail::attention_token_task_avxvnni(args, token);
    case AttentionKernels::kAvx2: return detail::attention_token_task_avx2(args, token);
    case AttentionKernels::kScalar: return attention_token_impl<ScalarKernels>(args, token);
  }
}

namespace {

// The SIMD vector width of an ISA path, in floats (0: no tiled kernel).
int64_t attention_tile_width(IsaLevel isa) {
  switch (isa) {
    case IsaLevel::kAvx512: return 16;
    case IsaLevel::kAvx2: return 8;
    case IsaLevel::kScalar: return 0;
  }
  return 0;
}

// Whether tokens [t0, t0 + nt) (one sequence) can share a tile: whole vectors per head, and
// no window cutting a context (a cut moves where a token's chunks start). Int8 scores
// (attention_int8.h) run per token: the tile's lanes hold f32 dots.
bool attention_tile_applies(const AttentionArgs& a, int64_t width, int64_t t0, int64_t nt) {
  if (width == 0 || a.head_dim % width != 0 || attention_int8_scores(a) || attention_short_blocks(a)) return false;
  if (a.window <= 0) return true;
  for (int64_t t = t0; t < t0 + nt; ++t)
    if (static_cast<int64_t>(a.positions[t]) + 1 > a.window) return false;
  return true;
}

}  // namespace

int64_t attention_tile_tokens(IsaLevel isa, int64_t n_rep) {
  const int64_t width = attention_tile_width(isa);
  return width == 0 ? 1 : std::max<int64_t>(1, width / std::min(n_rep, kAttentionGroup));
}

void attention_tile_task(IsaLevel isa, const AttentionArgs& args, int64_t token_begin,
                         int64_t n_tokens, int64_t kv_head) {
  const int64_t end = token_begin + n_tokens;
  for (int64_t t0 = token_begin; t0 < end;) {
    int64_t t1 = t0 + 1;  // the run of tokens of t0's sequence
    while (t1 < end && args.seq_index[t1] == args.seq_index[t0]) ++t1;
    if (!attention_tile_applies(args, attention_tile_width(isa), t0, t1 - t0)) {
      for (int64_t t = t0; t < t1; ++t) attention_task(isa, args, t, kv_head);
    } else if (isa == IsaLevel::kAvx512) {
      detail::attention_tile_avx512(args, t0, t1 - t0, kv_head);
    } else {
      detail::attention_tile_avx2(args, t0, t1 - t0, kv_head);
    }
    t0 = t1;
  }
}

void attention(const AttentionArgs& args, ThreadPool& pool) {
  TALLY_CHECK(args.n_kv_heads > 0 && args.n_heads % args.n_kv_heads == 0,
              "{} query heads do not split into {} KV heads", args.n_heads, args.n_kv_heads);
  TALLY_CHECK(args.kv.block_size > 0, "block size {}", args.kv.block_size);
  TALLY_CHECK(kv_type_supported(args.kv.k_dtype) && kv_type_supported(args.kv.v_dtype),
              "attention over a {}/{} KV cache", dtype_name(args.kv.k_dtype),
              dtype_name(args.kv.v_dtype));
  // q8_0 / q4_0 rows are read by block arithmetic that needs heads that tile whole blocks or
  // are one short block each (KvStorage::create refuses other shapes).
  TALLY_CHECK(kv_types_check_shape({args.kv.k_dtype, args.kv.v_dtype}, args.n_kv_heads, args.head_dim).ok(),
              "attention: {} KV heads of {} values do not tile {}/{} blocks", args.n_kv_heads,
              args.head_dim, dtype_name(args.kv.k_dtype), dtype_name(args.kv.v_dtype));
  const IsaLevel isa = cpu_isa_level();
  constexpr int64_t kMinFlopsPerGroup = int64_t{1} << 16;
  int64_t max_ctx = 0;
  for (int64_t t = 0; t < args.n_tokens; ++t) max_ctx = std::max<int64_t>(max_ctx, args.positions[t] + 1);
  // Int8-scored K runs token by token: with tokens enough to keep every thread busy, one task
  // per token takes all its KV heads side by side (attention_token_task), so the heads' rows
  // that share cache lines are read from memory once. Each task owns its output rows, and
  // each head's bits are attention_task's.
  if (attention_int8_scores(args) && args.n_tokens >= 2 * static_cast<int64_t>(pool.n_threads())) {
    const int64_t flops_per_task = 4 * max_ctx * args.n_heads * args.head_dim;
    const int64_t grain = std::max<int64_t>(1, kMinFlopsPerGroup / std::max<int64_t>(1, flops_per_task));
    pool.parallel_for(args.n_tokens, grain, [&](int64_t begin, int64_t end, int) {
      for (int64_t t = begin; t < end; ++t) attention_token_task(isa, args, t);
    });
    return;
  }
  // Else one task per (tile of tokens, KV head): each owns its output rows, so no reduction
  // is split, and a token's bits do not depend on its tile. Tasks are handed out in groups
  // big enough to be worth waking a worker for; the grouping cannot change results. KV head
  // major: a prefill's consecutive tiles read the same head's K/V, which then stays in L2.
  const int64_t tile = attention_tile_tokens(isa, args.n_heads / args.n_kv_heads);
  const int64_t n_tiles = (args.n_tokens + tile - 1) / tile;
  const int64_t n_tasks = n_tiles * args.n_kv_heads;
  const int64_t flops_per_task = 4 * max_ctx * tile * (args.n_heads / args.n_kv_heads) * args.head_dim;
  const int64_t grain = std::max<int64_t>(1, kMinFlopsPerGroup / std::max<int64_t>(1, flops_per_task));
  pool.parallel_for(n_tasks, grain, [&](int64_t begin, int64_t end, int) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t t0 = task % n_tiles * tile;
      attention_tile_task(isa, args, t0, std::min(tile, args.n_tokens - t0), task / n_tiles);
    }
  });
}

}  // namespace tally::cpu

// The KV cache: sizes per storage type (the memory ledger's figures), layout, stores converting
// to the type, and copy_block (copy-on-write) copying exactly one block of every layer.
#include "model/kv_storage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/kv_row.h"

namespace tally_test {
namespace {

using tally::DType;
using tally::ErrorCode;
using tally::KvStorage;
using tally::KvStorageShape;

using tally::KvTypes;

constexpr DType kKvTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0};

KvStorageShape shape(KvTypes types, int64_t n_blocks = 10, int64_t block_size = 16) {
  KvStorageShape s{5, 4, 8, n_blocks, block_size};
  s.types = types;
  return s;
}

// Bytes of one slot's row of 4 heads x 8 values.
int64_t row_bytes(DType dtype) { return tally::kv_row_bytes(dtype, 4, 8); }

KvStorage make(const KvStorageShape& s) {
  auto kv = KvStorage::create(s);
  EXPECT_TRUE(kv.ok()) << kv.status().to_string();
  return std::move(kv).value();
}

TEST(KvStorage, BytesPerType) {
  // Bytes of a row of 4 heads of 8 values (stories260K's): 4 a value, 2, 2; q8_0 and q4_0 one
  // block a head: 2 + 8 bytes, 2 + 4 bytes.
  for (auto [dtype, bytes] : {std::pair{DType::kF32, 128}, {DType::kF16, 64}, {DType::kBF16, 64},
                              {DType::kQ8_0, 40}, {DType::kQ4_0, 24}}) {
    const KvStorageShape s = shape(dtype);
    EXPECT_EQ(s.bytes_per_token(), 2 * 5 * bytes) << dtype_name(dtype);
    EXPECT_EQ(s.bytes_per_block(), 16 * s.bytes_per_token());
    EXPECT_EQ(s.n_slots(), 160);
    EXPECT_EQ(s.bytes(), 160 * s.bytes_per_token());
    const KvStorage kv = make(s);
    EXPECT_EQ(kv.bytes(), s.bytes());
    EXPECT_EQ(kv.types(), KvTypes(dtype));
  }
  EXPECT_EQ(shape({DType::kQ8_0, DType::kF16}).bytes_per_token(), 5 * (40 + 64));
  // Heads of 16 and 4: one block each; heads of 64: two blocks of 32 each.
  EXPECT_EQ(KvStorageShape({1, 2, 16, 1, 1, DType::kQ8_0}).bytes_per_token(), 2 * 2 * 18);
  EXPECT_EQ(KvStorageShape({1, 3, 4, 1, 1, DType::kQ4_0}).bytes_per_token(), 2 * 3 * 4);
  EXPECT_EQ(KvStorageShape({1, 2, 64, 1, 1, DType::kQ8_0}).bytes_per_token(), 2 * 4 * 34);
  tally::ModelConfig c;
  c.n_layers = 32;
  c.n_kv_heads = 8;
  c.head_dim = 128;
  // Llama-3-8B's figure: 128 KiB per token in f16, 256 KiB in f32.
  EXPECT_EQ(KvStorageShape::for_model(c, 1, 16, DType::kF16).bytes_per_token(), 128 * 1024);
  EXPECT_EQ(KvStorageShape::for_model(c, 1, 16, DType::kBF16).bytes_per_token(), 128 * 1024);
  EXPECT_EQ(KvStorageShape::for_model(c, 1, 16).bytes_per_token(), 256 * 1024);
  EXPECT_EQ(KvStorageShape::for_model(c, 1, 16, DType::kQ8_0).bytes_per_token(), 68 * 1024);
  EXPECT_EQ(KvStorageShape::for_model(c, 1, 16, DType::kQ4_0).bytes_per_token(), 36 * 1024);
}

TEST(KvStorage, LayoutIsLayerMajorKThenV) {
  for (DType dtype : kKvTypes) {
    const KvStorage kv = make(shape(dtype));
    // K and V of every layer are disjoint, consecutive regions of n_slots x 32 values.
    const int64_t region = 160 * row_bytes(dtype);
    for (int64_t l = 0; l < 5; ++l) {
      EXPECT_EQ(kv.v_bytes(l) - kv.k_bytes(l), region);
      if (l > 0) {
        EXPECT_EQ(kv.k_bytes(l) - kv.v_bytes(l - 1), region);
      }
    }
    const tally::PagedKvLayer view = kv.layer_view(3);
    EXPECT_EQ(view.k, kv.k_bytes(3));
    EXPECT_EQ(view.v, kv.v_bytes(3));
    EXPECT_EQ(view.block_size, 16);
    EXPECT_EQ(view.k_dtype, dtype);
    EXPECT_EQ(view.v_dtype, dtype);
    // Zero-filled.
    std::vector<float> row(32, 1.0f);
    kv.load_v(4, 159, row.data());
    for (float x : row) EXPECT_EQ(x, 0.0f);
  }
}

TEST(KvStorage, BadShapesAreErrors) {
  EXPECT_EQ(KvStorage::create({5, 4, 8, 0, 16}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KvStorage::create({5, 4, 8, 10, -1}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KvStorage::create({5, 4, 8, int64_t{1} << 40, 1 << 20}).status().code(),
            ErrorCode::kOutOfMemory);
  for (KvTypes bad : {KvTypes(DType::kI8), KvTypes(DType::kF16, DType::kQ4_K)}) {
    const auto st = KvStorage::create(shape(bad)).status();
    EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << kv_types_name(bad);
    EXPECT_NE(st.message().find(std::string(dtype_name(bad.v))), std::string::npos) << st.to_string();
  }
  // A head must be whole blocks of 32 or one block of a divisor of 32 (even for q4_0): heads
  // of 48 (straddling a block edge) and of 12 are neither. (3 heads of 8 are: one block each.)
  EXPECT_TRUE(KvStorage::create({5, 3, 8, 10, 16, DType::kQ4_0}).ok());
  EXPECT_TRUE(KvStorage::create({5, 4, 1, 10, 16, DType::kQ8_0}).ok());
  const auto odd = KvStorage::create({5, 4, 1, 10, 16, DType::kQ4_0}).status();  // a byte holds 2 values
  EXPECT_EQ(odd.code(), ErrorCode::kUnsupported);
  EXPECT_NE(odd.message().find("q4_0"), std::string::npos) << odd.to_string();
  for (auto [heads, dim] : {std::pair{2, 48}, {4, 12}})
    for (KvTypes types : {KvTypes(DType::kQ8_0), KvTypes(DType::kF16, DType::kQ4_0)}) {
      const auto st = KvStorage::create({5, heads, dim, 10, 16, types}).status();
      EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << kv_types_name(types);
      EXPECT_NE(st.message().find("blocks of 32"), std::string::npos) << st.to_string();
      EXPECT_TRUE(KvStorage::create({5, heads, dim, 10, 16, DType::kF16}).ok());
    }
}

// A row of 32 values that differ per (layer, slot, K/V, seed).
std::vector<float> row_for(int64_t layer, int64_t slot, int kv, uint32_t seed) {
  std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(layer * 1000 + slot * 2 + kv));
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> r(32);
  for (auto& x : r) x = dist(rng);
  return r;
}

// What a row reads back as after being stored in `dtype`.
std::vector<float> stored(DType dtype, const std::vector<float>& r) {
  std::vector<uint8_t> bytes(r.size() * 4);
  tally::cpu::kv_row_store(tally::IsaLevel::kScalar, dtype, r.data(), bytes.data(), 32, 8);
  std::vector<float> out(r.size());
  tally::cpu::kv_row_load(dtype, bytes.data(), out.data(), 32, 8);
  return out;
}

void fill(KvStorage& kv, uint32_t seed) {
  for (int64_t l = 0; l < kv.shape().n_layers; ++l)
    for (int64_t slot = 0; slot < kv.shape().n_slots(); ++slot)
      kv.store(l, slot, row_for(l, slot, 0, seed).data(), row_for(l, slot, 1, seed).data());
}

// K (kv = 0) or V (kv = 1) of (layer, slot) as read back.
std::vector<float> load(const KvStorage& kv, int64_t layer, int64_t slot, int which) {
  std::vector<float> r(32);
  which == 0 ? kv.load_k(layer, slot, r.data()) : kv.load_v(layer, slot, r.data());
  return r;
}

TEST(KvStorage, StoreRoundsToTheTypeAndLoadReadsItBack) {
  for (DType dtype : kKvTypes) {
    KvStorage kv = make(shape(dtype, 3, 4));
    fill(kv, 1);
    for (int64_t l = 0; l < 5; ++l)
      for (int64_t slot = 0; slot < 12; ++slot)
        for (int which : {0, 1}) {
          const auto drawn = row_for(l, slot, which, 1);
          const auto got = load(kv, l, slot, which);
          ASSERT_EQ(got, stored(dtype, drawn))
              << dtype_name(dtype) << " l=" << l << " slot=" << slot;
          // Close to what was stored: f16 keeps 11 bits, bf16 8; q8_0 within a step of
          // amax / 127, q4_0 of amax / 8 (its positive side may clamp), amax its own head's.
          for (int i = 0; i < 32; ++i) {
            double amax = 0;
            for (int j = i / 8 * 8; j < i / 8 * 8 + 8; ++j) amax = std::max<double>(amax, std::fabs(drawn[j]));
            const double tol = dtype == DType::kF32    ? 0
                               : dtype == DType::kF16  ? 0x1p-11 * std::fabs(drawn[i])
                               : dtype == DType::kBF16 ? 0x1p-8 * std::fabs(drawn[i])
                               : dtype == DType::kQ8_0 ? amax / 127
                                                       : amax / 8;
            ASSERT_LE(std::fabs(got[i] - drawn[i]), tol) << dtype_name(dtype);
          }
        }
    if (dtype != DType::kF32) {
      EXPECT_NE(load(kv, 2, 5, 0), row_for(2, 5, 0, 1)) << "a 16-bit or quantized cache rounds";
    }
  }
}

// K and V of different types: each stored in its own, in regions of its own size.
TEST(KvStorage, KAndVKeepTheirOwnTypes) {
  KvStorage kv = make(shape({DType::kQ8_0, DType::kF16}, 3, 4));
  fill(kv, 3);
  EXPECT_EQ(kv.v_bytes(0) - kv.k_bytes(0), 12 * row_bytes(DType::kQ8_0));
  EXPECT_EQ(kv.k_bytes(1) - kv.v_bytes(0), 12 * row_bytes(DType::kF16));
  const tally::PagedKvLayer view = kv.layer_view(1);
  EXPECT_EQ(view.k_dtype, DType::kQ8_0);
  EXPECT_EQ(view.v_dtype, DType::kF16);
  for (int64_t l = 0; l < 5; ++l)
    for (int64_t slot = 0; slot < 12; ++slot) {
      ASSERT_EQ(load(kv, l, slot, 0), stored(DType::kQ8_0, row_for(l, slot, 0, 3)));
      ASSERT_EQ(load(kv, l, slot, 1), stored(DType::kF16, row_for(l, slot, 1, 3)));
    }
}

TEST(KvStorage, CopyBlockCopiesOneBlockOfEveryLayer) {
  for (DType dtype : kKvTypes) {
    KvStorage kv = make(shape(dtype, 6, 4));
    fill(kv, 2);
    kv.copy_block(4, 1);
    kv.copy_block(3, 3);  // onto itself: nothing changes
    for (int64_t l = 0; l < 5; ++l)
      for (int64_t slot = 0; slot < 24; ++slot)
        for (int which : {0, 1}) {
          // Block 1 (slots 4..7) now holds block 4's rows (slots 16..19); all else is as filled.
          const int64_t from = slot / 4 == 1 ? slot + 12 : slot;
          ASSERT_EQ(load(kv, l, slot, which), stored(dtype, row_for(l, from, which, 2)))
              << dtype_name(dtype) << " layer " << l << " slot " << slot << (which ? " V" : " K");
        }
    // A forward after the copy reads the copy: the attention view sees the same bytes.
    const int64_t block_bytes = 4 * row_bytes(dtype);
    const auto* k = static_cast<const uint8_t*>(kv.layer_view(2).k);
    EXPECT_EQ(0, std::memcmp(k + 1 * block_bytes, k + 4 * block_bytes, block_bytes));
  }
}

TEST(KvCacheDeathTest, CopyBlockOutsideThePoolIsABug) {
  KvStorage kv = make(shape(DType::kF16, 6, 4));
  EXPECT_DEATH(kv.copy_block(6, 0), "outside");
  EXPECT_DEATH(kv.copy_block(0, -1), "outside");
}

}  // namespace
}  // namespace tally_test

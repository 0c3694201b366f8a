// Writes GGUF v3 files (what `tally convert` and later the quantizer produce), in a form
// llama.cpp loads: metadata in insertion order, tensor infos, data aligned to
// general.alignment (default 32).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/function_ref.h"
#include "base/status.h"
#include "io/gguf.h"
#include "tensor/dtype.h"

namespace tally::io {

class GgufWriter {
 public:
  GgufWriter();

  void set_u8(std::string key, uint8_t v);
  void set_i8(std::string key, int8_t v);
  void set_u16(std::string key, uint16_t v);
  void set_i16(std::string key, int16_t v);
  void set_u32(std::string key, uint32_t v);
  void set_i32(std::string key, int32_t v);
  void set_u64(std::string key, uint64_t v);
  void set_i64(std::string key, int64_t v);
  void set_f32(std::string key, float v);
  void set_f64(std::string key, double v);
  void set_bool(std::string key, bool v);
  void set_string(std::string key, std::string v);
  void set_string_array(std::string key, std::vector<std::string> v);
  void set_f32_array(std::string key, std::vector<float> v);
  void set_i32_array(std::string key, std::vector<int32_t> v);
  // Copies a value read from another file (any type, nested arrays included).
  void set_value(std::string key, const GgufValue& v);

  // Adds a tensor; dims in ggml order (dims[0] = row length). The bytes are copied.
  Status add_tensor(std::string name, DType type, std::vector<int64_t> dims,
                    std::span<const uint8_t> data);

  // Adds a tensor whose bytes are produced at write time, so a file far larger than memory
  // (a 7B model) is written with bounded memory. `produce` passes the bytes, in order and in
  // chunks of any size, to `emit`, exactly the tensor's size in all; write() and to_bytes()
  // call it once each (it may be called again by a later write). A failing emit (disk full)
  // must be returned by produce; a producer error or a wrong byte count fails write().
  using TensorEmit = FunctionRef<Status(std::span<const uint8_t>)>;
  using TensorProducer = std::function<Status(TensorEmit emit)>;
  Status add_tensor_streamed(std::string name, DType type, std::vector<int64_t> dims,
                             TensorProducer produce);

  Status write(const std::string& path) const;
  // The whole file as bytes (tests).
  std::vector<uint8_t> to_bytes() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tally::io

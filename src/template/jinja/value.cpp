#include "template/jinja/value.h"

#include <algorithm>

#include "template/jinja/error.h"

namespace tally::jinja {
namespace {

// Below this many keys a linear scan beats hashing.
constexpr size_t kIndexThreshold = 16;

uint32_t child_depth_limit_check(uint32_t depth) {
  if (depth > kMaxValueDepth) {
    throw JinjaError(JinjaError::Kind::kLimit,
                     "value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  }
  return depth;
}

}  // namespace

size_t Object::size() const { return entries_.size(); }

const Value* Object::find(std::string_view key) const {
  if (!index_.empty()) {
    auto it = index_.find(std::string(key));
    return it == index_.end() ? nullptr : &entries_[it->second].second;
  }
  for (const auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Object::set(std::string key, Value value) {
  depth = child_depth_limit_check(std::max(depth, value.depth() + 1));
  has_namespace = has_namespace || value.has_namespace();
  if (index_.empty()) {
    for (auto& [k, v] : entries_) {
      if (k == key) {
        v = std::move(value);
        return;
      }
    }
  } else if (auto it = index_.find(key); it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  entries_.emplace_back(std::move(key), std::move(value));
  if (!index_.empty()) {
    index_.emplace(entries_.back().first, entries_.size() - 1);
  } else if (entries_.size() > kIndexThreshold) {
    for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
  }
}

Value Value::array(std::vector<Value> items, bool is_tuple) {
  auto a = std::make_shared<Array>();
  uint32_t depth = 1;
  bool has_ns = false;
  for (const Value& v : items) {
    depth = std::max(depth, v.depth() + 1);
    has_ns = has_ns || v.has_namespace();
  }
  a->depth = child_depth_limit_check(depth);
  a->has_namespace = has_ns;
  a->items = std::move(items);
  a->is_tuple = is_tuple;
  return Value(std::move(a));
}

Value Value::function(std::string name, std::function<Value(CallArgs&)> fn) {
  auto f = std::make_shared<Function>();
  f->name = std::move(name);
  f->call = std::move(fn);
  return Value(std::move(f));
}

double Value::as_float() const {
  switch (type()) {
    case Type::kFloat:
      return std::get<double>(v_);
    case Type::kInt:
      return static_cast<double>(std::get<int64_t>(v_));
    case Type::kBool:
      return as_bool() ? 1.0 : 0.0;
    default:
      return 0.0;
  }
}

uint32_t Value::depth() const {
  if (is_array()) return as_array().depth;
  if (is_object()) return as_object().depth;
  return 0;
}

bool Value::has_namespace() const {
  if (is_array()) return as_array().has_namespace;
  if (is_object()) return as_object().is_namespace || as_object().has_namespace;
  return false;
}

bool Value::truthy() const {
  switch (type()) {
    case Type::kUndefined:
    case Type::kNone:
      return false;
    case Type::kBool:
      return as_bool();
    case Type::kInt:
      return as_int() != 0;
    case Type::kFloat:
      return as_float() != 0.0;
    case Type::kString:
      return !as_string().empty();
    case Type::kArray:
      return !as_array().items.empty();
    case Type::kObject:
      return as_object().is_namespace || as_object().size() != 0;
    case Type::kFunction:
      return true;
  }
  return false;
}

std::string_view Value::type_name() const {
  switch (type()) {
    case Type::kUndefined:
      return "Undefined";
    case Type::kNone:
      return "NoneType";
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kFloat:
      return "float";
    case Type::kString:
      return "str";
    case Type::kArray:
      return as_array().is_tuple ? "tuple" : "list";
    case Type::kObject:
      return as_object().is_namespace ? "Namespace" : "dict";
    case Type::kFunction:
      return "function";
  }
  return "?";
}

}  // namespace tally::jinja

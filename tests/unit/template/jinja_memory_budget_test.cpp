// The interpreter charges its memory budget before it allocates: a hostile template that asks
// for a huge list or string ends with a limit error while the heap has grown by about the
// budget, never by the size it asked for. The heap is measured by counting this binary's
// operator new (live bytes and their peak); also run under ASan.
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "chat_template_test_util.h"

namespace {

std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};

void count_allocation(int64_t delta) {
  const int64_t live = g_live_bytes.fetch_add(delta) + delta;
  int64_t peak = g_peak_bytes.load();
  while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live)) {
  }
}

}  // namespace

namespace {

void* counted_malloc(size_t n) noexcept {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p != nullptr) count_allocation(static_cast<int64_t>(malloc_usable_size(p)));
  return p;
}

void counted_free(void* p) noexcept {
  if (p == nullptr) return;
  count_allocation(-static_cast<int64_t>(malloc_usable_size(p)));
  std::free(p);
}

}  // namespace

// Every plain form, array and nothrow ones included, so no allocation made by one (ASan's,
// say) is freed by another (the aligned forms stay the runtime's, paired among themselves).
void* operator new(size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, size_t) noexcept { counted_free(p); }
void operator delete[](void* p, size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }

namespace tally {
namespace {

constexpr size_t kBudget = 1u << 20;  // max_alloc_bytes of these renders

jinja::RenderOptions budget_limits() {
  jinja::RenderOptions o;
  o.limits.max_alloc_bytes = kBudget;
  o.limits.max_output_bytes = kBudget;  // one string may use the whole budget
  o.now = 0;
  return o;
}

// Renders `source` and returns how far the heap grew over its level before the render.
int64_t peak_growth(const std::string& source, ErrorCode& code) {
  auto t = jinja::Template::parse(source);
  EXPECT_TRUE(t.ok()) << source;
  const jinja::Value vars = jinja::value_from_json(nlohmann::ordered_json::parse("{}"));
  const jinja::RenderOptions options = budget_limits();
  const int64_t before = g_live_bytes.load();
  g_peak_bytes.store(before);
  code = t->render(vars.as_object(), options).status().code();
  return g_peak_bytes.load() - before;
}

void expect_refused_within_budget(const std::string& source) {
  ErrorCode code = ErrorCode::kOk;
  const int64_t grew = peak_growth(source, code);
  EXPECT_EQ(code, ErrorCode::kOutOfRange) << source;  // a render limit
  // The budget plus what one charged-for string may hold twice while it is copied.
  EXPECT_LE(grew, int64_t{4} * kBudget) << source << ": the heap grew by " << grew << " bytes";
}

TEST(JinjaMemoryBudget, CountingAllocatorSeesTheRender) {
  ErrorCode code = ErrorCode::kOk;
  const int64_t grew = peak_growth("{{ 'x' * 500000 }}", code);
  EXPECT_EQ(code, ErrorCode::kOk);
  EXPECT_GE(grew, 500000);  // so the bounds below measure something
}

TEST(JinjaMemoryBudget, IteratingALongStringIsChargedPerCharacterFirst) {
  // 900 kB string: within budget; one Value per character would be ~100 MB.
  expect_refused_within_budget("{% for c in 'x' * 900000 %}{% endfor %}");
  expect_refused_within_budget("{{ ('x' * 900000) | list | length }}");
  expect_refused_within_budget("{{ ('x' * 900000) | first }}");
}

TEST(JinjaMemoryBudget, ListRepetitionIsChargedBeforeItIsBuilt) {
  expect_refused_within_budget("{% set l = [1, 2, 3, 4, 5, 6, 7, 8] * 100000 %}{{ l | length }}");
  expect_refused_within_budget("{% set l = [[1]] * 900000 %}{{ l | length }}");
}

TEST(JinjaMemoryBudget, StringRepetitionAndConcatenationAreChargedFirst) {
  expect_refused_within_budget("{% set s = 'ab' * 400000 %}{% set t = s * 2 %}{{ t | length }}");
  expect_refused_within_budget("{% set s = 'x' * 900000 %}{{ (s ~ s) | length }}");
  expect_refused_within_budget("{% set s = 'x' * 900000 %}{{ (s + s) | length }}");
}

TEST(JinjaMemoryBudget, SplitIsChargedPerPart) {
  expect_refused_within_budget("{{ (',' * 900000).split(',') | length }}");
  expect_refused_within_budget("{{ (',' * 900000).rsplit(',') | length }}");
  expect_refused_within_budget("{{ (' x' * 450000).split() | length }}");
  expect_refused_within_budget("{{ ('\\n' * 900000).splitlines() | length }}");
}

TEST(JinjaMemoryBudget, RsplitKeepsPythonsOrder) {
  EXPECT_EQ(jinja_test::out("{{ 'a,b,c'.rsplit(',', 1) }}"), "['a,b', 'c']");
  EXPECT_EQ(jinja_test::out("{{ 'a b  c'.rsplit(None, 1) }}"), "['a b', 'c']");
  EXPECT_EQ(jinja_test::out("{{ 'a,b,c'.rsplit(',') }}"), "['a', 'b', 'c']");
}

}  // namespace
}  // namespace tally

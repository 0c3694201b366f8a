#include "base/status.h"

#include <gtest/gtest.h>

namespace tally {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return make_error(ErrorCode::kInvalidArgument, "value {} is not positive", v);
  return v;
}

Result<int> doubled(int v) {
  TALLY_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

TEST(Status, ResultCarriesValueOrError) {
  auto ok = doubled(4);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 8);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "value -1 is not positive");
  EXPECT_EQ(bad.status().with_context("flag -n").message(), "flag -n: value -1 is not positive");
}

TEST(Status, FieldIsAValueThatContextKeeps) {
  const Status bad = make_error(ErrorCode::kInvalidArgument, "top_p = 2 is out of range")
                         .with_field("top_p");
  EXPECT_EQ(bad.field(), "top_p");
  EXPECT_EQ(bad.message(), "top_p = 2 is out of range");  // the field is not put in the text
  const Status wrapped = bad.with_context("request 3");
  EXPECT_EQ(wrapped.field(), "top_p");
  EXPECT_EQ(wrapped.message(), "request 3: top_p = 2 is out of range");
  EXPECT_EQ(make_error(ErrorCode::kIo, "disk").field(), "");
  EXPECT_EQ(Status::ok_status().with_field("n").field(), "");  // success names no field
}

}  // namespace
}  // namespace tally

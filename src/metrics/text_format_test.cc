#include "metrics/text_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tessera::metrics {
namespace {

TEST(MetricsTextFormatTest, FormatsValuesPrometheusCanParse) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(-0.0), "0");
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(-7), "-7");
  EXPECT_EQ(FormatValue(1e6), "1000000");
  EXPECT_EQ(FormatValue(8128902), "8128902");
  EXPECT_EQ(FormatValue(9007199254740993.0), "9007199254740992");  // 2^53 + 1
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(0.015), "0.015");
  EXPECT_EQ(FormatValue(2.5), "2.5");
  EXPECT_EQ(FormatValue(1e-5), "1e-05");
  EXPECT_EQ(FormatValue(1e300), "1e+300");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatValue(-INFINITY), "-Inf");
  // Round-trips exactly.
  const double third = 1.0 / 3.0;
  EXPECT_EQ(std::stod(FormatValue(third)), third);
}

TEST(MetricsTextFormatTest, Escapes) {
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeLabelValue("ünï"), "ünï");  // UTF-8 passes through
  EXPECT_EQ(EscapeHelp("a\\b\"c\nd"), "a\\\\b\"c\\nd");
}

TEST(MetricsTextFormatTest, ValidatesNames) {
  EXPECT_TRUE(IsValidMetricName("tessera:num_running_reqs"));
  EXPECT_TRUE(IsValidMetricName("_x9"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("9x"));
  EXPECT_FALSE(IsValidMetricName("a b"));
  EXPECT_TRUE(IsValidLabelName("model_name"));
  EXPECT_TRUE(IsValidLabelName("_a"));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  EXPECT_FALSE(IsValidLabelName("1a"));
  EXPECT_FALSE(IsValidLabelName(""));
}

}  // namespace
}  // namespace tessera::metrics

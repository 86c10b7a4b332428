#include "tools/progress_bar.h"

#include <gtest/gtest.h>

namespace halfcaf {
namespace {

TEST(ProgressBarTest, LineShowsBarRateAndTimeLeft) {
  ProgressBar bar("make_mnist_db", 60000, "images", /*enabled=*/false);
  // 30000 of 60000 at 3000 images/s: 10 s left.
  EXPECT_EQ(bar.Line(30000, 3000.0, ""),
            "make_mnist_db [##########..........]  50%  30000/60000  3000 images/s  ETA 0:10");
  EXPECT_EQ(bar.Line(15, 1.5, "loss 0.5"),
            "make_mnist_db [....................]   0%  15/60000  1.50 images/s  ETA 11:06:30  "
            "loss 0.5");
  // Done: no ETA; nothing yet: no rate.
  EXPECT_EQ(bar.Line(60000, 3000.0, ""),
            "make_mnist_db [####################] 100%  60000/60000  3000 images/s");
  EXPECT_EQ(bar.Line(0, 0.0, ""), "make_mnist_db [....................]   0%  0/60000");
}

TEST(ProgressBarTest, UnknownTotalShowsCountAndRateOnly) {
  ProgressBar bar("convert", 0, "nodes", false);
  EXPECT_EQ(bar.Line(250, 125.0, ""), "convert  250  125 nodes/s");
}

TEST(ProgressBarTest, DurationFormats) {
  EXPECT_EQ(ProgressBar::Duration(7), "0:07");
  EXPECT_EQ(ProgressBar::Duration(62.4), "1:02");
  EXPECT_EQ(ProgressBar::Duration(3723), "1:02:03");
  EXPECT_EQ(ProgressBar::Duration(-1), "?");
}

}  // namespace
}  // namespace halfcaf

// data/image_codec.h: a header that claims a huge image is refused before anything is allocated.
#include "data/image_codec.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "core/enforce.h"

namespace halfcaf {
namespace {

// Sets the width and height of a PNG's IHDR chunk (bytes 16..23) and fixes the chunk's CRC.
std::string WithPngSize(std::string png, uint32_t w, uint32_t h) {
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) png[at + i] = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
  };
  put32(16, w);
  put32(20, h);
  // CRC over the chunk type and data: bytes 12 .. 28, stored at 29.
  const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17);
  put32(29, static_cast<uint32_t>(crc));
  return png;
}

TEST(ImageCodecTest, HugeDeclaredSizeIsRefused) {
  if (!image::FormatAvailable(image::Format::PNG)) GTEST_SKIP() << "built without libpng";
  image::Image img;
  img.height = 2;
  img.width = 2;
  img.channels = 3;
  img.pixels.assign(12, 7);
  const std::string png = image::EncodePng(img);
  image::Image out;
  image::Decode(png.data(), png.size(), 3, &out);  // the untouched file decodes
  EXPECT_EQ(out.height, 2);
  const std::string huge = WithPngSize(png, 60000, 60000);
  try {
    image::Decode(huge.data(), huge.size(), 3, &out);
    FAIL() << "a 60000 x 60000 PNG was accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("more than the limit"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace halfcaf

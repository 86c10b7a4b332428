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

// Makes a JPEG's frame progressive (SOF0 -> SOF2) and sets its height and width.
std::string AsProgressiveJpeg(std::string jpg, uint16_t w, uint16_t h) {
  const size_t sof = jpg.find("\xFF\xC0");
  EXPECT_NE(sof, std::string::npos);
  jpg[sof + 1] = static_cast<char>(0xC2);
  // FF C2, length (2), precision (1), height (2), width (2).
  jpg[sof + 5] = static_cast<char>(h >> 8);
  jpg[sof + 6] = static_cast<char>(h & 0xFF);
  jpg[sof + 7] = static_cast<char>(w >> 8);
  jpg[sof + 8] = static_cast<char>(w & 0xFF);
  return jpg;
}

// A progressive JPEG's coefficient buffers for the whole image are allocated (and zeroed) when
// decoding starts: a header claiming 60000 x 60000 would ask for 21 GB there.
TEST(ImageCodecTest, HugeProgressiveJpegIsRefusedBeforeDecoding) {
  if (!image::FormatAvailable(image::Format::JPEG)) GTEST_SKIP() << "built without libjpeg";
  image::Image img;
  img.height = 16;
  img.width = 16;
  img.channels = 3;
  img.pixels.assign(16 * 16 * 3, 90);
  const std::string jpg = image::EncodeJpeg(img, 90);
  image::Image out;
  const std::string small = AsProgressiveJpeg(jpg, 16, 16);
  try {  // the same size decodes or fails on the (baseline) scan data, both quickly
    image::Decode(small.data(), small.size(), 3, &out);
  } catch (const EnforceNotMet&) {
  }
  const std::string huge = AsProgressiveJpeg(jpg, 60000, 60000);
  try {
    image::Decode(huge.data(), huge.size(), 3, &out);
    FAIL() << "a 60000 x 60000 progressive JPEG was accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("60000 x 60000 pixels is more than the limit"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace halfcaf

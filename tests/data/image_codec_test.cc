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

// A flat colour image.
image::Image Flat(int height, int width, uint8_t value) {
  image::Image img;
  img.height = height;
  img.width = width;
  img.channels = 3;
  img.pixels.assign(static_cast<size_t>(height) * width * 3, value);
  return img;
}

// The error Decode gives for `bytes`, or "" when it decodes them.
std::string RefusalOf(const std::string& bytes) {
  image::Image out;
  try {
    image::Decode(bytes.data(), bytes.size(), 3, &out);
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  return "";
}

TEST(ImageCodecTest, HugeDeclaredSizeIsRefused) {
  if (!image::FormatAvailable(image::Format::PNG)) GTEST_SKIP() << "built without libpng";
  const std::string png = image::EncodePng(Flat(2, 2, 7));
  EXPECT_EQ(RefusalOf(png), "");  // the untouched file decodes
  const std::string error = RefusalOf(WithPngSize(png, 60000, 60000));
  EXPECT_NE(error.find("more than the limit"), std::string::npos) << error;
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
  const std::string jpg = image::EncodeJpeg(Flat(16, 16, 90), 90);
  EXPECT_EQ(RefusalOf(jpg), "");
  const std::string error = RefusalOf(AsProgressiveJpeg(jpg, 60000, 60000));
  EXPECT_NE(error.find("60000 x 60000 pixels is more than the limit"), std::string::npos) << error;
}

}  // namespace
}  // namespace halfcaf

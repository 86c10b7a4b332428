// Image decoding, encoding and resampling for ImageInput and make_image_db.
//
// Images are 8-bit, height x width x channels, rows packed (HWC). Colour images have 3 channels
// in BGR order (as OpenCV decodes them and as Caffe2's ImageInput keeps them); grey images have
// one channel. Colour-to-grey conversion is Y = 0.299 R + 0.587 G + 0.114 B (JPEG's own luma for
// JPEG files decoded as grey).
//
// Codecs are optional at build time: JPEG needs libjpeg-turbo (Debian libjpeg62-turbo-dev), PNG
// needs libpng (libpng-dev); CMake finds them (HALFCAF_USE_IMAGE=AUTO) and defines
// HALFCAF_WITH_JPEG / HALFCAF_WITH_PNG. Using a codec the build lacks throws EnforceNotMet naming
// the package to install.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace halfcaf {
namespace image {

struct Image {
  int height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;  // height * width * channels, HWC
};

enum class Format { UNKNOWN, JPEG, PNG };

// The format from the file's signature bytes.
Format DetectFormat(const void* data, size_t size);
const char* FormatName(Format f);
// Whether this build can decode/encode the format.
bool FormatAvailable(Format f);
// "" when the format is available, else why not and what to install.
std::string MissingFormatHint(Format f);

// Decodes a JPEG or PNG file held in memory to `channels` (3: BGR, 1: grey) channels. Throws
// EnforceNotMet (without context: callers add which record or file) for data that is neither, a
// corrupt file, a format this build lacks, or more than 2^26 pixels (67 megapixels). Alpha is
// dropped; 16-bit PNG is reduced to 8 bits.
void Decode(const void* data, size_t size, int channels, Image* out);

// Encodes `img` (1 or 3 channels) as a baseline JPEG of the given quality (1..100).
std::string EncodeJpeg(const Image& img, int quality = 95);
// Encodes `img` (1 or 3 channels) as a PNG (lossless).
std::string EncodePng(const Image& img);

// Grey value of one BGR pixel: round(0.114 B + 0.587 G + 0.299 R), in fixed point.
inline uint8_t GreyFromBGR(uint8_t b, uint8_t g, uint8_t r) {
  return static_cast<uint8_t>((b * 1868 + g * 9617 + r * 4899 + 8192) >> 14);
}
// `src` with 1 or 3 channels converted to `channels` (grey replicated, or BGR to grey).
void ConvertChannels(const Image& src, int channels, Image* out);

// Bilinear resampling, pixel centres aligned (source coordinate (d + 0.5) * in / out - 0.5,
// clamped at the borders; results rounded to the nearest integer). Writes the window
// [y0, y0 + h) x [x0, x0 + w) of `src` resized to out_h x out_w, mirrored left-right when
// `mirror`, packed HWC into `dst` (h * w * channels bytes). Equal sizes copy pixels exactly.
// `scratch` holds per-column tables (reused between calls).
void ResizeWindow(const Image& src, int out_h, int out_w, int y0, int x0, int h, int w,
                  bool mirror, uint8_t* dst, std::vector<float>* scratch);
// `src` resized to out_h x out_w.
void Resize(const Image& src, int out_h, int out_w, Image* out);

// The size Caffe2's ImageInput and make_image_db resize an h x w image to so that its shorter
// side becomes `side` (the longer side scaled alike, rounded down), or side x side with `warp`.
void ScaledSize(int h, int w, int side, bool warp, int* out_h, int* out_w);

}  // namespace image
}  // namespace halfcaf

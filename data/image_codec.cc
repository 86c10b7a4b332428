#include "data/image_codec.h"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/enforce.h"

#ifdef HALFCAF_WITH_JPEG
#include <jpeglib.h>
#include <jerror.h>
#endif
#ifdef HALFCAF_WITH_PNG
#include <png.h>
#endif

namespace halfcaf {
namespace image {

namespace {
// Larger images are refused rather than allocated (a corrupt header can claim 65535 x 65535):
// 2^26 pixels (67 megapixels, e.g. 8192 x 8192) is above any camera photo a training set holds,
// and keeps one decode (PNG: a BGRA buffer and the output) under half a GiB.
constexpr uint64_t kMaxPixels = uint64_t(1) << 26;
// libjpeg's working memory for one decode (a progressive 8192 x 8192 colour JPEG needs 384 MiB).
constexpr long kMaxJpegWorkBytes = 1L << 30;
}  // namespace

Format DetectFormat(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (size >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return Format::JPEG;
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (size >= 8 && std::memcmp(p, kPng, 8) == 0) return Format::PNG;
  return Format::UNKNOWN;
}

const char* FormatName(Format f) {
  switch (f) {
    case Format::JPEG:
      return "JPEG";
    case Format::PNG:
      return "PNG";
    default:
      return "unknown";
  }
}

bool FormatAvailable(Format f) {
#ifdef HALFCAF_WITH_JPEG
  if (f == Format::JPEG) return true;
#endif
#ifdef HALFCAF_WITH_PNG
  if (f == Format::PNG) return true;
#endif
  return false;
}

std::string MissingFormatHint(Format f) {
  if (FormatAvailable(f)) return "";
  if (f == Format::JPEG) {
    return "halfcaf was built without JPEG support: install libjpeg62-turbo-dev (Debian; "
           "libjpeg-turbo8-dev on Ubuntu) and re-run cmake (HALFCAF_USE_IMAGE=AUTO)";
  }
  if (f == Format::PNG) {
    return "halfcaf was built without PNG support: install libpng-dev and re-run cmake "
           "(HALFCAF_USE_IMAGE=AUTO)";
  }
  return "not a JPEG or PNG image";
}

void ConvertChannels(const Image& src, int channels, Image* out) {
  HALFCAF_ENFORCE(src.channels == 1 || src.channels == 3, "images have 1 or 3 channels, got ",
                  src.channels);
  HALFCAF_ENFORCE(channels == 1 || channels == 3, "images have 1 or 3 channels, asked for ",
                  channels);
  const size_t n = static_cast<size_t>(src.height) * src.width;
  out->height = src.height;
  out->width = src.width;
  out->channels = channels;
  out->pixels.resize(n * channels);
  const uint8_t* s = src.pixels.data();
  uint8_t* d = out->pixels.data();
  if (src.channels == channels) {
    std::copy(s, s + n * channels, d);
  } else if (channels == 1) {
    for (size_t i = 0; i < n; ++i) d[i] = GreyFromBGR(s[3 * i], s[3 * i + 1], s[3 * i + 2]);
  } else {
    for (size_t i = 0; i < n; ++i) d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = s[i];
  }
}

// ---- JPEG --------------------------------------------------------------------------------------

#ifdef HALFCAF_WITH_JPEG
namespace {

// libjpeg reports fatal errors through error_exit, which must not return: jump back to the
// setjmp in the caller, which then throws (no C++ object lives in the frames skipped).
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  if (cinfo->err->msg_code == JERR_NO_BACKING_STORE) {  // over max_memory_to_use
    std::snprintf(err->message, sizeof(err->message),
                  "decoding it needs more than the limit of %ld MiB of working memory",
                  kMaxJpegWorkBytes >> 20);
  } else {
    (*cinfo->err->format_message)(cinfo, err->message);
  }
  std::longjmp(err->jump, 1);
}

// Warnings (e.g. a truncated file, decoded with the rest grey as OpenCV does) are not printed.
void JpegQuiet(j_common_ptr, int) {}

void InitJpegError(JpegError* err) {
  jpeg_std_error(&err->mgr);
  err->mgr.error_exit = JpegErrorExit;
  err->mgr.emit_message = JpegQuiet;
  err->message[0] = '\0';
}

// Returns false with err->message set on failure. `out` is sized here.
bool DecodeJpegImpl(const uint8_t* data, size_t size, int channels, Image* out, JpegError* err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = &err->mgr;
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  // The size is checked before jpeg_start_decompress: a progressive JPEG's coefficients for the
  // whole image are allocated (and zeroed) there, 6 bytes a pixel for three components.
  if (static_cast<uint64_t>(cinfo.image_height) * cinfo.image_width > kMaxPixels) {
    std::snprintf(err->message, sizeof(err->message), "%u x %u pixels is more than the limit %llu",
                  static_cast<unsigned>(cinfo.image_height), static_cast<unsigned>(cinfo.image_width),
                  static_cast<unsigned long long>(kMaxPixels));
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  // Within the pixel limit, more components or subsampling can still ask for more: past this
  // libjpeg wants a backing store, which it does not have, and fails with an error.
  cinfo.mem->max_memory_to_use = kMaxJpegWorkBytes;
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  if (cmyk) {
    cinfo.out_color_space = JCS_CMYK;
  } else {
    cinfo.out_color_space = channels == 3 ? JCS_EXT_BGR : JCS_GRAYSCALE;
  }
  jpeg_start_decompress(&cinfo);
  const int h = static_cast<int>(cinfo.output_height), w = static_cast<int>(cinfo.output_width);
  const int got = cinfo.output_components;
  out->height = h;
  out->width = w;
  out->channels = channels;
  out->pixels.resize(static_cast<size_t>(h) * w * (cmyk ? 4 : channels));
  const size_t stride = static_cast<size_t>(w) * got;
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->pixels.data() + cinfo.output_scanline * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (cmyk) {
    // Adobe's CMYK JPEGs store inverted ink values: channel = ink * K / 255 gives R, G, B.
    const size_t n = static_cast<size_t>(h) * w;
    uint8_t* p = out->pixels.data();
    for (size_t i = 0; i < n; ++i) {
      const int c = p[4 * i], m = p[4 * i + 1], y = p[4 * i + 2], k = p[4 * i + 3];
      const uint8_t r = static_cast<uint8_t>((c * k + 127) / 255);
      const uint8_t g = static_cast<uint8_t>((m * k + 127) / 255);
      const uint8_t b = static_cast<uint8_t>((y * k + 127) / 255);
      if (channels == 3) {
        p[3 * i] = b;
        p[3 * i + 1] = g;
        p[3 * i + 2] = r;
      } else {
        p[i] = GreyFromBGR(b, g, r);
      }
    }
    out->pixels.resize(n * channels);
  }
  return true;
}

bool EncodeJpegImpl(const Image& img, int quality, unsigned char** buf, unsigned long* size,
                    JpegError* err) {
  jpeg_compress_struct cinfo;
  cinfo.err = &err->mgr;
  if (setjmp(err->jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, buf, size);
  cinfo.image_width = static_cast<JDIMENSION>(img.width);
  cinfo.image_height = static_cast<JDIMENSION>(img.height);
  cinfo.input_components = img.channels;
  cinfo.in_color_space = img.channels == 3 ? JCS_EXT_BGR : JCS_GRAYSCALE;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = static_cast<size_t>(img.width) * img.channels;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(img.pixels.data() + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace
#endif  // HALFCAF_WITH_JPEG

// ---- PNG ---------------------------------------------------------------------------------------

#ifdef HALFCAF_WITH_PNG
namespace {

// Reads BGRA (alpha dropped afterwards) so colour, grey, palette and alpha files all come out
// the same way; the grey conversion is ours (libpng's would work in linear light).
void DecodePng(const uint8_t* data, size_t size, int channels, Image* out) {
  png_image img;
  std::memset(&img, 0, sizeof(img));
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, data, size)) {
    const std::string msg = img.message;
    png_image_free(&img);
    HALFCAF_THROW("cannot decode the PNG image: ", msg);
  }
  img.format = PNG_FORMAT_BGRA;
  const int h = static_cast<int>(img.height), w = static_cast<int>(img.width);
  if (static_cast<uint64_t>(img.height) * img.width > kMaxPixels) {
    png_image_free(&img);
    HALFCAF_THROW("the PNG image has ", img.height, " x ", img.width,
                  " pixels, more than the limit ", kMaxPixels);
  }
  std::vector<uint8_t> bgra(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, bgra.data(), 0, nullptr)) {
    const std::string msg = img.message;
    png_image_free(&img);
    HALFCAF_THROW("cannot decode the PNG image: ", msg);
  }
  png_image_free(&img);
  const size_t n = static_cast<size_t>(h) * w;
  out->height = h;
  out->width = w;
  out->channels = channels;
  out->pixels.resize(n * channels);
  uint8_t* d = out->pixels.data();
  const uint8_t* s = bgra.data();
  for (size_t i = 0; i < n; ++i, s += 4) {
    if (channels == 3) {
      d[3 * i] = s[0];
      d[3 * i + 1] = s[1];
      d[3 * i + 2] = s[2];
    } else {
      d[i] = GreyFromBGR(s[0], s[1], s[2]);
    }
  }
}

}  // namespace
#endif  // HALFCAF_WITH_PNG

void Decode(const void* data, size_t size, int channels, Image* out) {
  HALFCAF_ENFORCE(channels == 1 || channels == 3, "images decode to 1 or 3 channels, asked for ",
                  channels);
  const Format f = DetectFormat(data, size);
  HALFCAF_ENFORCE(f != Format::UNKNOWN, "the data (", size,
                  " bytes) is not a JPEG or PNG image (unknown signature)");
  HALFCAF_ENFORCE(FormatAvailable(f), "cannot decode the ", FormatName(f), " image: ",
                  MissingFormatHint(f));
  const auto* bytes = static_cast<const uint8_t*>(data);
#ifdef HALFCAF_WITH_JPEG
  if (f == Format::JPEG) {
    JpegError err;
    InitJpegError(&err);
    HALFCAF_ENFORCE(DecodeJpegImpl(bytes, size, channels, out, &err),
                    "cannot decode the JPEG image (", size, " bytes): ", err.message);
    HALFCAF_ENFORCE(out->height > 0 && out->width > 0, "the JPEG image is empty");
    return;
  }
#endif
#ifdef HALFCAF_WITH_PNG
  if (f == Format::PNG) {
    DecodePng(bytes, size, channels, out);
    HALFCAF_ENFORCE(out->height > 0 && out->width > 0, "the PNG image is empty");
    return;
  }
#endif
  (void)bytes;
  (void)out;
}

namespace {
void CheckEncodable(const Image& img) {
  HALFCAF_ENFORCE(img.channels == 1 || img.channels == 3,
                  "only 1- or 3-channel images can be encoded, got ", img.channels);
  HALFCAF_ENFORCE(img.height > 0 && img.width > 0, "cannot encode an empty image (", img.height,
                  " x ", img.width, ")");
  HALFCAF_ENFORCE(img.pixels.size() == static_cast<size_t>(img.height) * img.width * img.channels,
                  "image buffer holds ", img.pixels.size(), " bytes, expected ", img.height,
                  " x ", img.width, " x ", img.channels);
}
}  // namespace

std::string EncodeJpeg(const Image& img, int quality) {
  HALFCAF_ENFORCE(FormatAvailable(Format::JPEG), MissingFormatHint(Format::JPEG));
  CheckEncodable(img);
  HALFCAF_ENFORCE(quality >= 1 && quality <= 100, "JPEG quality must be in [1, 100], got ",
                  quality);
  std::string result;
#ifdef HALFCAF_WITH_JPEG
  JpegError err;
  InitJpegError(&err);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const bool ok = EncodeJpegImpl(img, quality, &buf, &size, &err);
  if (ok) result.assign(reinterpret_cast<const char*>(buf), size);
  std::free(buf);
  HALFCAF_ENFORCE(ok, "cannot encode a JPEG image: ", err.message);
#endif
  return result;
}

std::string EncodePng(const Image& img) {
  HALFCAF_ENFORCE(FormatAvailable(Format::PNG), MissingFormatHint(Format::PNG));
  CheckEncodable(img);
  std::string result;
#ifdef HALFCAF_WITH_PNG
  png_image p;
  std::memset(&p, 0, sizeof(p));
  p.version = PNG_IMAGE_VERSION;
  p.width = static_cast<png_uint_32>(img.width);
  p.height = static_cast<png_uint_32>(img.height);
  p.format = img.channels == 3 ? PNG_FORMAT_BGR : PNG_FORMAT_GRAY;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&p, nullptr, &size, 0, img.pixels.data(), 0, nullptr)) {
    const std::string msg = p.message;
    png_image_free(&p);
    HALFCAF_THROW("cannot encode a PNG image: ", msg);
  }
  result.resize(size);
  if (!png_image_write_to_memory(&p, &result[0], &size, 0, img.pixels.data(), 0, nullptr)) {
    const std::string msg = p.message;
    png_image_free(&p);
    HALFCAF_THROW("cannot encode a PNG image: ", msg);
  }
  result.resize(size);
  png_image_free(&p);
#endif
  return result;
}

// ---- resampling --------------------------------------------------------------------------------

void ScaledSize(int h, int w, int side, bool warp, int* out_h, int* out_w) {
  if (warp) {
    *out_h = *out_w = side;
  } else if (h > w) {
    *out_w = side;
    *out_h = static_cast<int>(static_cast<int64_t>(h) * side / w);
  } else {
    *out_h = side;
    *out_w = static_cast<int>(static_cast<int64_t>(w) * side / h);
  }
}

namespace {

// Source index pair and weight of output coordinate d for a resize from n_in to n_out.
inline void Tap(int d, int n_in, int n_out, int* i0, int* i1, float* frac) {
  if (n_in == n_out) {
    *i0 = *i1 = d;
    *frac = 0.f;
    return;
  }
  float s = (static_cast<float>(d) + 0.5f) * static_cast<float>(n_in) /
                static_cast<float>(n_out) -
            0.5f;
  s = std::min(std::max(s, 0.f), static_cast<float>(n_in - 1));
  const int lo = static_cast<int>(s);
  *i0 = lo;
  *i1 = std::min(lo + 1, n_in - 1);
  *frac = s - static_cast<float>(lo);
}

}  // namespace

void ResizeWindow(const Image& src, int out_h, int out_w, int y0, int x0, int h, int w,
                  bool mirror, uint8_t* dst, std::vector<float>* scratch) {
  const int C = src.channels;
  // Per output column: the two source column offsets (as floats, exact below 2^24) and weight.
  scratch->resize(static_cast<size_t>(w) * 3);
  float* cols = scratch->data();
  for (int x = 0; x < w; ++x) {
    int a, b;
    float f;
    Tap(x0 + x, src.width, out_w, &a, &b, &f);
    const int slot = mirror ? w - 1 - x : x;
    cols[3 * slot] = static_cast<float>(a * C);
    cols[3 * slot + 1] = static_cast<float>(b * C);
    cols[3 * slot + 2] = f;
  }
  const size_t src_stride = static_cast<size_t>(src.width) * C;
  for (int y = 0; y < h; ++y) {
    int r0, r1;
    float fy;
    Tap(y0 + y, src.height, out_h, &r0, &r1, &fy);
    const uint8_t* row0 = src.pixels.data() + r0 * src_stride;
    const uint8_t* row1 = src.pixels.data() + r1 * src_stride;
    uint8_t* out = dst + static_cast<size_t>(y) * w * C;
    for (int x = 0; x < w; ++x) {
      const size_t a = static_cast<size_t>(cols[3 * x]), b = static_cast<size_t>(cols[3 * x + 1]);
      const float fx = cols[3 * x + 2];
      for (int c = 0; c < C; ++c) {
        const float top = row0[a + c] + fx * (static_cast<float>(row0[b + c]) - row0[a + c]);
        const float bot = row1[a + c] + fx * (static_cast<float>(row1[b + c]) - row1[a + c]);
        const float v = top + fy * (bot - top);
        out[static_cast<size_t>(x) * C + c] =
            static_cast<uint8_t>(std::min(255.f, std::max(0.f, v + 0.5f)));
      }
    }
  }
}

void Resize(const Image& src, int out_h, int out_w, Image* out) {
  HALFCAF_ENFORCE(out_h > 0 && out_w > 0, "cannot resize an image to ", out_h, " x ", out_w);
  out->height = out_h;
  out->width = out_w;
  out->channels = src.channels;
  out->pixels.resize(static_cast<size_t>(out_h) * out_w * src.channels);
  std::vector<float> scratch;
  ResizeWindow(src, out_h, out_w, 0, 0, out_h, out_w, false, out->pixels.data(), &scratch);
}

}  // namespace image
}  // namespace halfcaf

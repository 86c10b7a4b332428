// Fuzz target: ImageInput's decoding: the format detected from the bytes, JPEG / PNG decoded
// (as grey and as colour), then the channel conversion and the resize ImageInput applies.
#include <string>

#include "data/image_codec.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace halfcaf::image;
  const Format f = DetectFormat(data, size);
  if (!FormatAvailable(f)) return 0;
  for (int channels : {1, 3}) {
    halfcaf::fuzz::ExpectCleanRejection([&] {
      Image img;
      Decode(data, size, channels, &img);
      Image other, small;
      ConvertChannels(img, 4 - channels, &other);
      Resize(img, 7, 5, &small);
    });
  }
  return 0;
}

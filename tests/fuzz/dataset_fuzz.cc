// Fuzz target: the data set readers DataInput and make_mnist_db use. The first byte picks one:
//   0: idx images + labels files (the bytes after the second split in two at second byte / 255;
//      either may be gzip-compressed, as the readers accept)
//   1: a CIFAR-10 binary batch file
//   2: Caffe2 DB records of {image, label} TensorProtos (the rest split into records at each
//      0xFF 0x00 0xFF marker), as a LevelDB / LMDB data set is gathered
// Every sample of a set that loads is read, so sizes the reader accepted must hold.
#include <string>
#include <vector>

#include "data/dataset_reader.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void ReadAll(const halfcaf::DataSource& s) {
  std::vector<uint8_t> chw(static_cast<size_t>(s.sample_numel()));
  for (int64_t i = 0; i < s.size(); ++i) {
    s.ReadSample(i, chw.data());
    (void)s.Label(i);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int kind = data[0] % 3;
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  halfcaf::fuzz::ExpectCleanRejection([&] {
    if (kind == 0) {
      const std::string body = rest.substr(1);
      const size_t cut = static_cast<size_t>(data[1]) * body.size() / 255;
      const std::string images = halfcaf::fuzz::WriteTempFile(body.substr(0, cut), "images");
      const std::string labels = halfcaf::fuzz::WriteTempFile(body.substr(cut), "labels");
      ReadAll(*halfcaf::LoadIdxDataset(images, labels));
    } else if (kind == 1) {
      ReadAll(*halfcaf::LoadCifar10Dataset(halfcaf::fuzz::WriteTempFile(rest, "cifar.bin")));
    } else {
      const std::string marker("\xFF\x00\xFF", 3);
      halfcaf::ImageLabelRecords records;
      size_t at = 0;
      for (int k = 0; k < 64; ++k) {
        const size_t next = rest.find(marker, at);
        records.Add(rest.substr(at, next == std::string::npos ? std::string::npos : next - at),
                    "record " + std::to_string(k));
        if (next == std::string::npos) break;
        at = next + marker.size();
      }
      ReadAll(*records.Finish("fuzz records"));
    }
  });
  return 0;
}

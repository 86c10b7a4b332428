// make_mnist_db: converts MNIST-style idx files (images + labels, raw or gzipped) into a LevelDB
// or LMDB of Caffe2 records, as Caffe2's tool of the same name did: key "%08d" (the item index),
// value a serialized TensorProtos {image: BYTE, dims (1, H, W) with --channel_first else
// (H, W, 1); label: INT32 scalar}. The records feed CreateDB + TensorProtosDBInput, e.g. the
// Caffe2 MNIST tutorial nets. Errors print one line and exit 1.
#include <gflags/gflags.h>

#include <cstdio>
#include <iostream>

#include "core/enforce.h"
#include "data/dataset_reader.h"
#include "data/db.h"
#include "proto/halfcaf.pb.h"
#include "tools/progress_bar.h"
#include "tools/tool_common.h"

DEFINE_string(image_file, "", "idx images file (e.g. train-images-idx3-ubyte[.gz])");
DEFINE_string(label_file, "", "idx labels file (e.g. train-labels-idx1-ubyte[.gz])");
DEFINE_string(output_file, "", "the DB to create (a folder; must not exist yet)");
DEFINE_string(db, "leveldb", "DB type: leveldb or lmdb");
DEFINE_bool(channel_first, false,
            "image dims (1, H, W) (channel first, as old Caffe) instead of (H, W, 1)");
DEFINE_int32(data_limit, -1, "write only the first N items (-1: all)");

namespace halfcaf {
namespace {

constexpr int kCommitEvery = 1000;

int Main() {
  HALFCAF_ENFORCE(!FLAGS_image_file.empty(), "--image_file is required");
  HALFCAF_ENFORCE(!FLAGS_label_file.empty(), "--label_file is required");
  HALFCAF_ENFORCE(!FLAGS_output_file.empty(), "--output_file is required");
  HALFCAF_ENFORCE(FLAGS_data_limit == -1 || FLAGS_data_limit > 0,
                  "--data_limit must be a positive count or -1 (all), got ", FLAGS_data_limit);
  std::unique_ptr<DataSource> data = LoadIdxDataset(FLAGS_image_file, FLAGS_label_file);
  const std::vector<int64_t>& chw = data->sample_dims();
  const int64_t count =
      FLAGS_data_limit > 0 ? std::min<int64_t>(data->size(), FLAGS_data_limit) : data->size();

  std::unique_ptr<db::DB> out = db::OpenDB(FLAGS_db, FLAGS_output_file, db::Mode::NEW);
  std::unique_ptr<db::Transaction> txn = out->NewTransaction();

  TensorProtos protos;
  TensorProto* image = protos.add_protos();
  TensorProto* label = protos.add_protos();
  image->set_data_type(TensorProto::BYTE);
  if (FLAGS_channel_first) {
    for (int64_t d : chw) image->add_dims(d);
  } else {
    image->add_dims(chw[1]);
    image->add_dims(chw[2]);
    image->add_dims(chw[0]);
  }
  label->set_data_type(TensorProto::INT32);
  label->add_int32_data(0);

  std::string pixels(static_cast<size_t>(data->sample_numel()), '\0');
  std::string value;
  char key[32];
  ProgressBar bar("make_mnist_db", count, "records");
  for (int64_t i = 0; i < count; ++i) {
    // One channel: CHW and HWC bytes are the same.
    data->ReadSample(i, reinterpret_cast<uint8_t*>(&pixels[0]));
    image->set_byte_data(pixels);
    label->set_int32_data(0, data->Label(i));
    protos.SerializeToString(&value);
    std::snprintf(key, sizeof(key), "%08lld", static_cast<long long>(i));
    txn->Put(key, value);
    if ((i + 1) % kCommitEvery == 0) {
      txn->Commit();
      bar.Update(i + 1);
    }
  }
  txn->Commit();
  bar.Clear();
  std::cout << "make_mnist_db: wrote " << count << " records (image " << DimsString(
                   std::vector<int64_t>(image->dims().begin(), image->dims().end()))
            << " uint8, label int32) to " << FLAGS_db << " DB '" << FLAGS_output_file << "'\n";
  return 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool("make_mnist_db",
                          "make_mnist_db --image_file IMAGES --label_file LABELS --output_file DB "
                          "[--db leveldb|lmdb] [--channel_first] [--data_limit N]",
                          argc, argv, halfcaf::Main);
}

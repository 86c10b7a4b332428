// make_image_db: writes a LevelDB or LMDB of images for ImageInput, as Caffe2's tool of the same
// name. The list file has one "relative/path label" line per image (the path relative to
// --input_folder; the label an integer after the last run of spaces; empty lines skipped). Each
// record: key "%08d_<path>" (the position in the written order), value a serialized
// TensorProtos {image: STRING holding an encoded JPEG or PNG file; label: INT32 scalar}.
//
// With --scale S > 0 (Caffe2's default 256) an image whose shorter side is not S is resized
// (bilinear) so that it is (both sides with --warp) and re-encoded as JPEG (--quality); with
// --color=false a colour image is stored grey (re-encoded). Any other image is stored as the
// file's bytes, unchanged. --raw stores decoded pixels instead: BYTE (H, W, C), BGR or grey.
// --shuffle writes the images in a random order (a fixed seed, --shuffle_seed). Errors (missing
// list or image, an image that does not decode, a label that is not an integer, an existing
// output) print one line and exit 1; a partly written DB is removed.
#include <gflags/gflags.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "core/enforce.h"
#include "data/db.h"
#include "data/image_codec.h"
#include "proto/halfcaf.pb.h"
#include "tools/progress_bar.h"
#include "tools/tool_common.h"

DEFINE_string(input_folder, "", "folder the paths in --list_file are relative to");
DEFINE_string(list_file, "", "text file: one 'relative/path label' line per image");
DEFINE_string(output_db_name, "", "the DB to create (a folder; must not exist yet)");
DEFINE_string(db, "leveldb", "DB type: leveldb or lmdb");
DEFINE_bool(shuffle, false, "write the images in a random order");
DEFINE_int32(shuffle_seed, 0, "seed of the --shuffle order");
DEFINE_int32(scale, 256,
             "resize so the shorter side is this (both sides with --warp); 0 keeps the size");
DEFINE_bool(warp, false, "with --scale, resize both sides to scale");
DEFINE_bool(color, true, "store colour images (false: grey)");
DEFINE_bool(raw, false, "store decoded pixels (BYTE (H, W, C)) instead of an encoded file");
DEFINE_int32(quality, 95, "JPEG quality of re-encoded images");

namespace halfcaf {
namespace {

namespace fs = std::filesystem;

constexpr int kCommitEvery = 1000;

struct Entry {
  std::string path;
  int32_t label;
};

std::vector<Entry> ReadList(const std::string& list_file) {
  std::ifstream in(list_file);
  HALFCAF_ENFORCE(in.good(), "cannot open the list file '", list_file, "'");
  std::vector<Entry> entries;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t end = line.find_last_not_of(" \t\r");
    if (end == std::string::npos) continue;  // an empty line
    line.resize(end + 1);
    const size_t sep = line.find_last_of(" \t");
    HALFCAF_ENFORCE(sep != std::string::npos, list_file, ":", n,
                    ": expected 'relative/path label', got '", line, "'");
    const std::string label = line.substr(sep + 1);
    std::string path = line.substr(0, sep);
    const size_t path_end = path.find_last_not_of(" \t");
    path.resize(path_end == std::string::npos ? 0 : path_end + 1);
    const size_t path_begin = path.find_first_not_of(" \t");
    path = path_begin == std::string::npos ? "" : path.substr(path_begin);
    HALFCAF_ENFORCE(!path.empty(), list_file, ":", n, ": expected 'relative/path label', got '",
                    line, "'");
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(label, &used);
    } catch (...) {
      used = 0;
    }
    HALFCAF_ENFORCE(used == label.size() && value >= INT_MIN && value <= INT_MAX, list_file, ":",
                    n, ": the label '", label, "' of '", path, "' is not an integer");
    entries.push_back({path, static_cast<int32_t>(value)});
  }
  HALFCAF_ENFORCE(!entries.empty(), "the list file '", list_file, "' names no images");
  return entries;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  HALFCAF_ENFORCE(in.good() && fs::is_regular_file(path), "cannot read the image file '", path,
                  "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool IsGrey(const image::Image& bgr) {
  const uint8_t* p = bgr.pixels.data();
  const size_t n = static_cast<size_t>(bgr.height) * bgr.width;
  for (size_t i = 0; i < n; ++i, p += 3) {
    if (p[0] != p[1] || p[1] != p[2]) return false;
  }
  return true;
}

struct Counts {
  int64_t as_is = 0, reencoded = 0, raw = 0;
};

// Fills `image` (protos(0)) from the file's bytes as the flags ask.
void MakeImageProto(const std::string& file, const std::string& bytes, TensorProto* image,
                    Counts* counts) {
  image::Image decoded, converted, resized;
  try {
    image::Decode(bytes.data(), bytes.size(), 3, &decoded);
  } catch (EnforceNotMet& e) {
    e.AddContext(MakeString("image file '", file, "'"));
    throw;
  }
  const image::Image* img = &decoded;
  bool changed = false;
  if (!FLAGS_color && !IsGrey(decoded)) changed = true;
  if (!FLAGS_color) {
    image::ConvertChannels(decoded, 1, &converted);
    img = &converted;
  }
  if (FLAGS_scale > 0) {
    int sh, sw;
    image::ScaledSize(img->height, img->width, FLAGS_scale, FLAGS_warp, &sh, &sw);
    if (sh != img->height || sw != img->width) {
      image::Resize(*img, sh, sw, &resized);
      img = &resized;
      changed = true;
    }
  }
  image->clear_dims();
  image->clear_string_data();
  image->clear_byte_data();
  if (FLAGS_raw) {
    image->set_data_type(TensorProto::BYTE);
    image->add_dims(img->height);
    image->add_dims(img->width);
    image->add_dims(img->channels);
    image->set_byte_data(img->pixels.data(), img->pixels.size());
    ++counts->raw;
    return;
  }
  image->set_data_type(TensorProto::STRING);
  if (changed) {
    image->add_string_data(image::EncodeJpeg(*img, FLAGS_quality));
    ++counts->reencoded;
  } else {
    image->add_string_data(bytes);
    ++counts->as_is;
  }
}

int Main() {
  HALFCAF_ENFORCE(!FLAGS_list_file.empty(), "--list_file is required");
  HALFCAF_ENFORCE(!FLAGS_output_db_name.empty(), "--output_db_name is required");
  HALFCAF_ENFORCE(FLAGS_scale >= 0, "--scale must be >= 0 (0 keeps the size), got ", FLAGS_scale);
  HALFCAF_ENFORCE(FLAGS_quality >= 1 && FLAGS_quality <= 100,
                  "--quality must be in [1, 100], got ", FLAGS_quality);
  HALFCAF_ENFORCE(!fs::exists(FLAGS_output_db_name), "the output DB '", FLAGS_output_db_name,
                  "' already exists");
  std::vector<Entry> entries = ReadList(FLAGS_list_file);
  if (FLAGS_shuffle) {
    std::mt19937 rng(static_cast<uint32_t>(FLAGS_shuffle_seed));
    std::shuffle(entries.begin(), entries.end(), rng);
  }
  const fs::path folder(FLAGS_input_folder);

  Counts counts;
  bool created = false;
  try {
    std::unique_ptr<db::DB> out = db::OpenDB(FLAGS_db, FLAGS_output_db_name, db::Mode::NEW);
    created = true;
    std::unique_ptr<db::Transaction> txn = out->NewTransaction();
    TensorProtos protos;
    TensorProto* image = protos.add_protos();
    TensorProto* label = protos.add_protos();
    label->set_data_type(TensorProto::INT32);
    label->add_int32_data(0);
    std::string value;
    char prefix[32];
    ProgressBar bar("make_image_db", static_cast<int64_t>(entries.size()), "images");
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string file =
          FLAGS_input_folder.empty() ? entries[i].path : (folder / entries[i].path).string();
      MakeImageProto(file, ReadBytes(file), image, &counts);
      label->set_int32_data(0, entries[i].label);
      protos.SerializeToString(&value);
      std::snprintf(prefix, sizeof(prefix), "%08zu_", i);
      txn->Put(prefix + entries[i].path, value);
      if ((i + 1) % kCommitEvery == 0) txn->Commit();
      bar.Update(static_cast<int64_t>(i + 1));
    }
    txn->Commit();
    bar.Clear();
  } catch (...) {
    if (created) {
      std::error_code ec;
      fs::remove_all(FLAGS_output_db_name, ec);
    }
    throw;
  }
  std::cout << "make_image_db: wrote " << entries.size() << " records to " << FLAGS_db << " DB '"
            << FLAGS_output_db_name << "' (";
  if (FLAGS_raw) {
    std::cout << counts.raw << " as raw pixels";
  } else {
    std::cout << counts.as_is << " stored as given, " << counts.reencoded
              << " re-encoded as JPEG";
  }
  std::cout << ")\n";
  return 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool(
      "make_image_db",
      "make_image_db --list_file LIST --output_db_name DB [--input_folder DIR] [--db "
      "leveldb|lmdb] [--shuffle] [--scale 256] [--warp] [--color=false] [--raw] [--quality 95]",
      argc, argv, halfcaf::Main);
}

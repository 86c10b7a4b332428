// The DataInput source for Quick, Draw!'s "numpy bitmap" files: a folder of <class>.npy files,
// uint8 (N, 784) or (N, 28, 28), read a part at a time so that only the chosen rows are held.
#include <algorithm>
#include <filesystem>

#include "core/enforce.h"
#include "data/dataset_reader.h"
#include "data/npy.h"

namespace halfcaf {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kSide = 28;
constexpr int64_t kPixels = kSide * kSide;
constexpr int64_t kMaxHeldOut = 1000;
constexpr int64_t kChunkRows = 4096;  // rows read at once (3 MB)

struct ClassFile {
  std::string path;
  NpyInfo info;
  int64_t first = 0, count = 0;  // rows taken
};

std::string ListNames(const std::vector<std::string>& names, size_t limit) {
  if (names.empty()) return "nothing";
  std::string s;
  for (size_t i = 0; i < names.size() && i < limit; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > limit) s += MakeString(", ... (", names.size(), " in all)");
  return s;
}

}  // namespace

std::unique_ptr<DataSource> LoadQuickDrawDataset(const std::string& folder,
                                                 const std::string& split, int64_t per_class) {
  HALFCAF_ENFORCE(split == "train" || split == "test", "quickdraw '", folder,
                  "': split must be train or test, got '", split, "'");
  HALFCAF_ENFORCE(per_class >= 0, "quickdraw '", folder,
                  "': per_class must be >= 0 (0: all), got ", per_class);
  std::error_code ec;
  HALFCAF_ENFORCE(fs::exists(folder, ec), "cannot open quickdraw folder '", folder,
                  "': no such file or directory");
  HALFCAF_ENFORCE(fs::is_directory(folder, ec), "quickdraw source '", folder,
                  "' is not a folder: give the folder holding one <class>.npy file per class");
  std::vector<std::string> npys, others;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    std::error_code tec;
    if (entry.path().extension() == ".npy" && !entry.is_directory(tec)) {
      npys.push_back(name);
    } else {
      others.push_back(name);
    }
  }
  HALFCAF_ENFORCE(!ec, "cannot list quickdraw folder '", folder, "': ", ec.message());
  std::sort(npys.begin(), npys.end());
  std::sort(others.begin(), others.end());
  HALFCAF_ENFORCE(npys.size() >= 2, "quickdraw folder '", folder, "' holds ", npys.size(),
                  " .npy file(s) (", ListNames(npys, 10), "), but a data set needs at least 2 ",
                  "classes, one <class>.npy per class", npys.empty() && !others.empty()
                      ? MakeString("; the folder holds: ", ListNames(others, 10))
                      : "");

  std::vector<ClassFile> classes(npys.size());
  for (size_t c = 0; c < npys.size(); ++c) {
    ClassFile& k = classes[c];
    k.path = (fs::path(folder) / npys[c]).string();
    k.info = ReadNpyInfo(k.path);
    const auto& d = k.info.dims;
    HALFCAF_ENFORCE(k.info.dtype == DataType::UINT8, "quickdraw class file '", k.path,
                    "' holds ", DataTypeName(k.info.dtype), " data; expected uint8 bitmaps");
    HALFCAF_ENFORCE((d.size() == 2 && d[1] == kPixels) ||
                        (d.size() == 3 && d[1] == kSide && d[2] == kSide),
                    "quickdraw class file '", k.path, "' has shape ", DimsString(d),
                    "; expected (N, 784) or (N, 28, 28) bitmaps");
    const int64_t n = d[0];
    const int64_t held_out = std::min(kMaxHeldOut, n / 10);
    const int64_t rest = split == "train" ? n - held_out : held_out;
    k.first = split == "train" ? 0 : n - held_out;
    k.count = per_class > 0 ? std::min(per_class, rest) : rest;
  }

  int64_t total = 0, most = 0;
  for (const auto& k : classes) {
    total += k.count;
    most = std::max(most, k.count);
  }
  HALFCAF_ENFORCE(total > 0, "quickdraw folder '", folder, "' has no ", split, " samples",
                  split == "test" ? " (the held-out part is the last tenth of each class, up to "
                                    "1000 images: a class needs at least 10)"
                                  : "");

  // Sample order: round r holds the r-th image of every class that has one, so sample i is class
  // i % num_classes while all classes last. pos[c][r] is where class c's r-th image goes.
  std::vector<std::vector<int64_t>> pos(classes.size());
  std::vector<int32_t> labels;
  labels.reserve(static_cast<size_t>(total));
  for (int64_t r = 0; r < most; ++r) {
    for (size_t c = 0; c < classes.size(); ++c) {
      if (r >= classes[c].count) continue;
      pos[c].push_back(static_cast<int64_t>(labels.size()));
      labels.push_back(static_cast<int32_t>(c));
    }
  }
  std::vector<uint8_t> pixels(static_cast<size_t>(total * kPixels));
  std::vector<uint8_t> chunk;
  for (size_t c = 0; c < classes.size(); ++c) {
    const ClassFile& k = classes[c];
    for (int64_t r = 0; r < k.count; r += kChunkRows) {
      const int64_t rows = std::min(kChunkRows, k.count - r);
      chunk.resize(static_cast<size_t>(rows * kPixels));
      ReadNpyRows(k.path, k.info, k.first + r, rows, chunk.data());
      for (int64_t j = 0; j < rows; ++j) {
        std::copy_n(chunk.data() + j * kPixels, kPixels,
                    pixels.data() + pos[c][static_cast<size_t>(r + j)] * kPixels);
      }
    }
  }
  const std::vector<int64_t> chw = {1, kSide, kSide};
  std::string desc = MakeString("quickdraw '", folder, "' (", split, ": ", classes.size(),
                                " classes, ", total, " samples of ", DimsString(chw), ")");
  return std::make_unique<InMemoryDataSource>(std::move(pixels), std::move(labels), chw,
                                              std::move(desc));
}

}  // namespace halfcaf

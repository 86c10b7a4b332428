// Fixtures and helpers of the DataInput tests (data_input_op_test.cc, data_input_augment_test.cc):
// small idx / CIFAR-10 files written to a temporary folder, the op run batch by batch.
#pragma once

#include "operators/input/data_input_op.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <set>
#include <thread>

#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {

namespace fs = std::filesystem;

inline void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes, bool gz) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr) << path;
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    ASSERT_EQ(gzclose(f), Z_OK);
  } else {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << path;
  }
}

inline std::vector<uint8_t> IdxBytes(uint32_t magic, const std::vector<uint32_t>& dims,
                              const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  auto put = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// Small idx set: kN images of kH x kW; pixel k of image n is (n * 37 + k * 11) % 256, so the first
// pixel (n * 37) identifies the image.
constexpr int kN = 5, kH = 3, kW = 4;
inline const std::vector<uint8_t> kIdxLabels = {3, 1, 4, 1, 5};

inline uint8_t IdxPixel(int n, int k) { return static_cast<uint8_t>((n * 37 + k * 11) % 256); }

inline std::vector<uint8_t> IdxImagePixels() {
  std::vector<uint8_t> px;
  for (int n = 0; n < kN; ++n) {
    for (int k = 0; k < kH * kW; ++k) px.push_back(IdxPixel(n, k));
  }
  return px;
}

// CIFAR records: pixel k (CHW) of record r is (r * 53 + k * 7) % 256; label (r * 3) % 10.
inline std::vector<uint8_t> CifarBytes(int first, int count) {
  std::vector<uint8_t> out;
  for (int r = first; r < first + count; ++r) {
    out.push_back(static_cast<uint8_t>((r * 3) % 10));
    for (int k = 0; k < 3072; ++k) out.push_back(static_cast<uint8_t>((r * 53 + k * 7) % 256));
  }
  return out;
}

class DataInputOpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("halfcaf_data_input_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Writes train-images/labels; returns the images path.
  std::string WriteIdx(bool gz_images = false, bool gz_labels = false,
                       const std::string& prefix = "train") {
    const std::string ip = Path(prefix + "-images-idx3-ubyte" + (gz_images ? ".gz" : ""));
    WriteBytes(ip, IdxBytes(0x803, {kN, kH, kW}, IdxImagePixels()), gz_images);
    WriteBytes(Path(prefix + "-labels-idx1-ubyte" + (gz_labels ? ".gz" : "")),
               IdxBytes(0x801, {kN}, kIdxLabels), gz_labels);
    return ip;
  }

  fs::path dir_;
};

struct Batch {
  std::vector<int64_t> dims;
  std::vector<float> data;
  std::vector<int32_t> labels;
};

inline OperatorDef DataDef(std::vector<Argument> args, bool position = false) {
  std::vector<std::string> outs = {"data", "label"};
  if (position) outs.push_back("position");
  return MakeOperatorDef("DataInput", "", {}, outs, args);
}

inline Batch RunBatch(OperatorBase* op, Workspace* ws) {
  op->Run(0);
  Batch b;
  const Tensor& d = ws->GetTensor("data");
  b.dims = d.dims();
  b.data = ToFloatVector(d);
  const Tensor& l = ws->GetTensor("label");
  EXPECT_EQ(l.dtype(), DataType::INT32);
  b.labels.assign(l.data<int32_t>(), l.data<int32_t>() + l.numel());
  return b;
}

inline std::vector<Batch> RunBatches(const OperatorDef& def, int count) {
  Workspace ws;
  auto op = CreateOperator(def, &ws);
  std::vector<Batch> out;
  for (int i = 0; i < count; ++i) out.push_back(RunBatch(op.get(), &ws));
  return out;
}

// Which idx image each sample of a batch is (its first pixel is n * 37 / 255).
inline std::vector<int> IdxIds(const Batch& b) {
  std::vector<int> ids;
  const int64_t per = kH * kW;
  for (size_t s = 0; s < b.labels.size(); ++s) {
    const int first = static_cast<int>(std::lround(b.data[s * per] * 255.f));
    int id = -1;
    for (int n = 0; n < kN; ++n) {
      if (IdxPixel(n, 0) == first) id = n;
    }
    EXPECT_GE(id, 0) << "unknown sample";
    if (id >= 0) {
      EXPECT_EQ(b.labels[s], kIdxLabels[id]) << "label does not match sample " << id;
    }
    ids.push_back(id);
  }
  return ids;
}

inline void ExpectThrowsWith(const std::function<void()>& f,
                             const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning " << parts[0];
  } catch (const EnforceNotMet& e) {
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "missing '" << p << "' in: " << e.what();
    }
  }
}

inline void ExpectCreateFails(const OperatorDef& def, const std::vector<std::string>& parts) {
  ExpectThrowsWith(
      [&] {
        Workspace ws;
        CreateOperator(def, &ws);
      },
      parts);
}

}  // namespace testing
}  // namespace halfcaf

// data/npy.h: .npy files round-trip every supported dtype and shape, files numpy writes are read
// (and files halfcaf writes are read by numpy), and every bad file is refused with a message that
// names it and the problem.
#include "data/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/enforce.h"
#include "tests/util/error_of.h"

namespace halfcaf {
namespace {

namespace fs = std::filesystem;
using testing::ErrorOf;

const char kPython[] = "/usr/bin/python3";

// "" when /usr/bin/python3 can import numpy, else why not.
std::string NumpyMissing() {
  static const std::string why = [] {
    const std::string cmd = std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0 ? std::string()
                                         : std::string(kPython) + " cannot import numpy";
  }();
  return why;
}

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("halfcaf_npy_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  void WriteRaw(const std::string& name, const std::string& bytes) const {
    std::ofstream f(Path(name), std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << name;
  }

  // Runs a Python script (numpy imported as np, `d` the test folder); true when it exits 0.
  bool RunPython(const std::string& body) const {
    const std::string script = Path("script.py");
    std::ofstream(script) << "import numpy as np\nd = '" << dir_.string() << "/'\n" << body;
    const std::string cmd = std::string(kPython) + " " + script;
    return std::system(cmd.c_str()) == 0;
  }

  fs::path dir_;
};

// A version 1.0 file with the given header dict text and data (padded like numpy's).
std::string NpyBytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const size_t prelude = major == 1 ? 10 : 12;
  while ((prelude + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  const uint32_t len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < prelude - 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string Dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

// A tensor of the dtype and dims whose element k is a value made from k (bools alternate).
Tensor Patterned(DataType dtype, const std::vector<int64_t>& dims) {
  Tensor t(dims, dtype);
  const int64_t n = t.numel();
  DispatchAllTypes(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = static_cast<T*>(t.raw_mutable_data());
    for (int64_t k = 0; k < n; ++k) {
      if constexpr (std::is_same_v<T, bool>) {
        p[k] = k % 3 == 1;
      } else if constexpr (kIsFloat16Storage<T>) {
        p[k] = T(static_cast<float>(k) * 0.5f - 3.f);
      } else if constexpr (std::is_same_v<T, int64_t>) {
        p[k] = (int64_t{1} << 40) * (k % 3) - k;
      } else {
        p[k] = static_cast<T>(k * 7 - (std::is_signed_v<T> ? 11 : 0));
      }
    }
  });
  return t;
}

void ExpectSameTensor(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.dtype(), want.dtype());
  EXPECT_EQ(got.dims(), want.dims());
  ASSERT_EQ(got.nbytes(), want.nbytes());
  if (want.nbytes() > 0) {
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0)
        << got.DebugString();
  }
}

const DataType kTypes[] = {DataType::FLOAT, DataType::FLOAT16, DataType::INT32,
                           DataType::INT64, DataType::UINT8,   DataType::BOOL};

TEST_F(NpyTest, RoundTripsEveryDTypeAndShape) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {7}, {2, 3}, {3, 0, 2}, {2, 3, 4, 5}};
  for (DataType t : kTypes) {
    for (const auto& dims : shapes) {
      SCOPED_TRACE(MakeString(DataTypeName(t), DimsString(dims)));
      const Tensor want = Patterned(t, dims);
      WriteNpy(want, Path("a.npy"));
      ExpectSameTensor(ReadNpy(Path("a.npy")), want);
      const NpyInfo info = ReadNpyInfo(Path("a.npy"));
      EXPECT_EQ(info.data_offset % 64, 0) << "numpy aligns the data to 64 bytes";
      EXPECT_EQ(info.dims, dims);
      EXPECT_EQ(info.dtype, t);
    }
  }
}

TEST_F(NpyTest, WritesVersion1HeadersLikeNumpy) {
  WriteNpy(Patterned(DataType::FLOAT, {3}), Path("a.npy"));
  std::ifstream f(Path("a.npy"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  ASSERT_EQ(bytes.size(), 128u + 12u);  // 10 + 57 + '\n' padded to 128, then 3 floats
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8), 118);
  EXPECT_EQ(bytes.substr(10, dict.size()), dict);
  EXPECT_EQ(bytes.substr(10 + dict.size(), 127 - 10 - dict.size()),
            std::string(127 - 10 - dict.size(), ' '));
  EXPECT_EQ(bytes[127], '\n');
}

TEST_F(NpyTest, ByteTensorsAreWrittenAsUint8) {
  Tensor b({4}, DataType::BYTE);
  std::memcpy(b.raw_mutable_data(), "\x01\x02\xfe\xff", 4);
  WriteNpy(b, Path("b.npy"));
  const Tensor got = ReadNpy(Path("b.npy"));
  EXPECT_EQ(got.dtype(), DataType::UINT8);
  EXPECT_EQ(std::memcmp(got.raw_data(), "\x01\x02\xfe\xff", 4), 0);
}

TEST_F(NpyTest, WriteIsAtomicAndReplacesTheFile) {
  WriteNpy(Patterned(DataType::INT32, {100}), Path("a.npy"));
  WriteNpy(Patterned(DataType::UINT8, {2, 2}), Path("a.npy"));
  ExpectSameTensor(ReadNpy(Path("a.npy")), Patterned(DataType::UINT8, {2, 2}));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"a.npy"}) << "a temp file was left behind";
}

TEST_F(NpyTest, WriteRefusesWhatNpyCannotHold) {
  EXPECT_NE(ErrorOf([&] { WriteNpy(Tensor({2}, DataType::DOUBLE), Path("d.npy")); })
                .find("cannot write a double tensor as .npy"),
            std::string::npos);
  Tensor on_gpu(Device{DeviceType::CUDA, 0});
  const std::string e = ErrorOf([&] { WriteNpy(on_gpu, Path("g.npy")); });
  EXPECT_NE(e.find("copy it to the CPU first"), std::string::npos) << e;
  Tensor empty;
  empty.Resize({3});
  EXPECT_NE(ErrorOf([&] { WriteNpy(empty, Path("e.npy")); }).find("holds no data"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(Path("d.npy")) || fs::exists(Path("g.npy")) || fs::exists(Path("e.npy")));
}

TEST_F(NpyTest, ReadsRowsWithoutTheRest) {
  const Tensor t = Patterned(DataType::INT32, {6, 2, 3});
  WriteNpy(t, Path("r.npy"));
  const NpyInfo info = ReadNpyInfo(Path("r.npy"));
  EXPECT_EQ(info.row_bytes(), 24);
  std::vector<int32_t> rows(2 * 6);
  ReadNpyRows(Path("r.npy"), info, 3, 2, rows.data());
  for (int k = 0; k < 12; ++k) EXPECT_EQ(rows[k], t.data<int32_t>()[18 + k]);
  EXPECT_NE(ErrorOf([&] { ReadNpyRows(Path("r.npy"), info, 5, 2, rows.data()); })
                .find("rows [5, 7) are outside its 6 rows"),
            std::string::npos);
}

TEST_F(NpyTest, AcceptsHeaderVariantsNumpyMayWrite) {
  const std::string data("\x01\x00\x00\x00\x02\x00\x00\x00", 8);
  // Keys in another order, double quotes, Python 2 longs, no trailing comma, version 2.0 and 3.0.
  WriteRaw("a.npy", NpyBytes("{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<i4\"}",
                             data));
  WriteRaw("b.npy", NpyBytes(Dict("<i4", "(1, 2)"), data, 2));
  WriteRaw("c.npy", NpyBytes(Dict("<i4", "(2, 1)"), data, 3));
  for (const char* name : {"a.npy", "b.npy", "c.npy"}) {
    const Tensor t = ReadNpy(Path(name));
    ASSERT_EQ(t.numel(), 2) << name;
    EXPECT_EQ(t.data<int32_t>()[1], 2) << name;
  }
  EXPECT_EQ(ReadNpy(Path("b.npy")).dims(), (std::vector<int64_t>{1, 2}));
}

struct BadCase {
  const char* name;
  std::string bytes;
  std::vector<std::string> says;
};

TEST_F(NpyTest, BadFilesAreRefusedClearly) {
  const std::string f8(16, '\0');
  const std::vector<BadCase> cases = {
      {"magic.npy", "PK\x03\x04 not numpy at all", {"does not start with the .npy magic"}},
      {"empty.npy", "", {"does not start with the .npy magic", "only 0 bytes"}},
      {"short.npy", std::string("\x93NUMPY\x01", 7),
       {"truncated", "too short for the .npy header"}},
      {"version.npy", std::string("\x93NUMPY\x04\x00\x10\x00", 10) + std::string(16, ' '),
       {"format version 4.0"}},
      {"cut_header.npy", NpyBytes(Dict("<f4", "(2,)"), "").substr(0, 40),
       {"truncated", "data starts at byte 128"}},
      {"f8.npy", NpyBytes(Dict("<f8", "(2,)"), f8),
       {"dtype '<f8' (float64)", "supported are <f4, <f2, <i4, <i8, |u1 and |b1"}},
      {"big.npy", NpyBytes(Dict(">f4", "(2,)"), std::string(8, '\0')),
       {"big-endian ('>f4')", "astype('<f4')"}},
      {"fortran.npy", NpyBytes(Dict("<f4", "(2, 2)", true), std::string(16, '\0')),
       {"Fortran (column-major) order"}},
      {"truncated.npy", NpyBytes(Dict("<i4", "(3, 4)"), std::string(40, '\0')),
       {"truncated", "[3, 4] (48 bytes of data), but only 40 bytes follow"}},
      {"trailing.npy", NpyBytes(Dict("<i4", "(3,)"), std::string(15, '\0')),
       {"3 unexpected bytes after the <i4 data of shape [3]"}},
      {"syntax.npy", NpyBytes("{'descr': '<f4' 'fortran_order': False}", ""),
       {"header that does not parse", "expected ',' or '}'"}},
      {"missing_key.npy", NpyBytes("{'descr': '<f4', 'shape': (1,), }", std::string(4, '\0')),
       {"header that does not parse", "missing key 'fortran_order'"}},
      {"structured.npy",
       NpyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                std::string(4, '\0')),
       {"structured array"}},
      {"bool.npy", NpyBytes(Dict("|b1", "(3,)"), std::string("\x00\x01\x02", 3)),
       {"bool element 2 is stored as byte 2"}},
  };
  for (const auto& c : cases) {
    WriteRaw(c.name, c.bytes);
    const std::string e = ErrorOf([&] { ReadNpy(Path(c.name)); });
    ASSERT_FALSE(e.empty()) << c.name << " was accepted";
    EXPECT_NE(e.find("npy file '" + Path(c.name) + "'"), std::string::npos) << e;
    for (const auto& s : c.says) {
      EXPECT_NE(e.find(s), std::string::npos) << "'" << s << "' not in: " << e;
    }
  }
  const std::string missing = ErrorOf([&] { ReadNpy(Path("nope.npy")); });
  EXPECT_NE(missing.find("cannot open npy file '" + Path("nope.npy") + "': no such file"),
            std::string::npos)
      << missing;
  EXPECT_NE(ErrorOf([&] { ReadNpy(dir_.string()); }).find("it is a directory"), std::string::npos);
}

TEST_F(NpyTest, ReadsWhatNumpyWrites) {
  if (!NumpyMissing().empty()) GTEST_SKIP() << NumpyMissing();
  ASSERT_TRUE(RunPython(R"(
np.save(d + 'f4.npy', np.arange(-6, 6, dtype='<f4').reshape(3, 4) / 4)
np.save(d + 'f2.npy', np.array([0.5, -2, 65504, 1e-7], dtype='<f2'))
np.save(d + 'i4.npy', np.arange(24, dtype='<i4').reshape(2, 3, 4) - 12)
np.save(d + 'i8.npy', np.array([-(2**40), 2**62, 5], dtype='<i8'))
np.save(d + 'u1.npy', np.arange(256, dtype=np.uint8).reshape(16, 16))
np.save(d + 'b1.npy', np.array([True, False, True]))
np.save(d + 'scalar.npy', np.float32(2.5))
np.save(d + 'empty.npy', np.zeros((0, 5), dtype=np.int32))
with open(d + 'v2.npy', 'wb') as f:
    np.lib.format.write_array(f, np.arange(5, dtype='<i8'), version=(2, 0))
with open(d + 'v3.npy', 'wb') as f:
    np.lib.format.write_array(f, np.arange(5, dtype='<i8'), version=(3, 0))
np.save(d + 'f8.npy', np.zeros(3))
np.save(d + 'big.npy', np.zeros(3, dtype='>i4'))
np.save(d + 'fortran.npy', np.asfortranarray(np.zeros((2, 3), dtype='<f4')))
)")) << "numpy could not write the fixtures";
  const Tensor f4 = ReadNpy(Path("f4.npy"));
  EXPECT_EQ(f4.dims(), (std::vector<int64_t>{3, 4}));
  for (int k = 0; k < 12; ++k) EXPECT_EQ(f4.data<float>()[k], (k - 6) / 4.f);
  const Tensor f2 = ReadNpy(Path("f2.npy"));
  ASSERT_EQ(f2.dtype(), DataType::FLOAT16);
  EXPECT_EQ(static_cast<float>(f2.data<Half>()[0]), 0.5f);
  EXPECT_EQ(static_cast<float>(f2.data<Half>()[1]), -2.f);
  EXPECT_EQ(static_cast<float>(f2.data<Half>()[2]), 65504.f);
  EXPECT_EQ(static_cast<float>(f2.data<Half>()[3]), std::ldexp(1.f, -23));  // float16 subnormal
  const Tensor i4 = ReadNpy(Path("i4.npy"));
  EXPECT_EQ(i4.dims(), (std::vector<int64_t>{2, 3, 4}));
  for (int k = 0; k < 24; ++k) EXPECT_EQ(i4.data<int32_t>()[k], k - 12);
  const Tensor i8 = ReadNpy(Path("i8.npy"));
  EXPECT_EQ(i8.data<int64_t>()[0], -(int64_t{1} << 40));
  EXPECT_EQ(i8.data<int64_t>()[1], int64_t{1} << 62);
  const Tensor u1 = ReadNpy(Path("u1.npy"));
  for (int k = 0; k < 256; ++k) EXPECT_EQ(u1.data<uint8_t>()[k], k);
  const Tensor b1 = ReadNpy(Path("b1.npy"));
  ASSERT_EQ(b1.dtype(), DataType::BOOL);
  EXPECT_TRUE(b1.data<bool>()[0] && !b1.data<bool>()[1] && b1.data<bool>()[2]);
  const Tensor scalar = ReadNpy(Path("scalar.npy"));
  EXPECT_TRUE(scalar.dims().empty());
  EXPECT_EQ(scalar.data<float>()[0], 2.5f);
  const Tensor empty = ReadNpy(Path("empty.npy"));
  EXPECT_EQ(empty.dims(), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(empty.dtype(), DataType::INT32);
  for (const char* v : {"v2.npy", "v3.npy"}) {
    const Tensor t = ReadNpy(Path(v));
    ASSERT_EQ(t.numel(), 5) << v;
    EXPECT_EQ(t.data<int64_t>()[4], 4) << v;
  }
  EXPECT_NE(ErrorOf([&] { ReadNpy(Path("f8.npy")); }).find("dtype '<f8' (float64)"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { ReadNpy(Path("big.npy")); }).find("big-endian ('>i4')"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { ReadNpy(Path("fortran.npy")); }).find("Fortran"), std::string::npos);
}

TEST_F(NpyTest, NumpyReadsWhatHalfcafWrites) {
  if (!NumpyMissing().empty()) GTEST_SKIP() << NumpyMissing();
  for (DataType t : kTypes) {
    WriteNpy(Patterned(t, {2, 3}), Path(std::string(DataTypeName(t)) + ".npy"));
  }
  WriteNpy(Patterned(DataType::FLOAT, {}), Path("scalar.npy"));
  WriteNpy(Patterned(DataType::INT64, {0, 3}), Path("empty.npy"));
  EXPECT_TRUE(RunPython(R"(
k = np.arange(6).reshape(2, 3)
checks = {
    'float': k * 7 - 11, 'float16': k * 0.5 - 3, 'int32': k * 7 - 11,
    'int64': (2**40) * (k % 3) - k, 'uint8': k * 7, 'bool': k % 3 == 1,
}
want_dtype = {'float': '<f4', 'float16': '<f2', 'int32': '<i4', 'int64': '<i8', 'uint8': '|u1',
              'bool': '|b1'}
for name, want in checks.items():
    a = np.load(d + name + '.npy')
    assert a.dtype.str == want_dtype[name], (name, a.dtype.str)
    assert a.shape == (2, 3), (name, a.shape)
    assert (a == want).all(), (name, a, want)
s = np.load(d + 'scalar.npy')
assert s.shape == () and s == -11, s
e = np.load(d + 'empty.npy')
assert e.shape == (0, 3) and e.dtype == np.int64, e
)")) << "numpy did not read the files WriteNpy wrote as expected (its message is above)";
}

}  // namespace
}  // namespace halfcaf

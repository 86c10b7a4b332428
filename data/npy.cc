#include "data/npy.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/enforce.h"
#include "core/proto_io.h"

namespace halfcaf {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "npy.cc copies little-endian file data straight into tensors");

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr int64_t kAlign = 64;  // numpy pads headers so the data starts at a multiple of this
constexpr char kSupported[] = "<f4, <f2, <i4, <i8, |u1 and |b1";

struct DTypeCode {
  const char* descr;
  DataType type;
};
constexpr DTypeCode kDTypes[] = {
    {"<f4", DataType::FLOAT}, {"<f2", DataType::FLOAT16}, {"<i4", DataType::INT32},
    {"<i8", DataType::INT64}, {"|u1", DataType::UINT8},   {"|b1", DataType::BOOL},
};

const char* DescrOf(DataType t) {
  if (t == DataType::BYTE) return "|u1";
  for (const auto& d : kDTypes) {
    if (d.type == t) return d.descr;
  }
  return nullptr;
}

// "float64" for "<f8", for messages about dtypes halfcaf does not read.
std::string NumpyTypeName(const std::string& descr) {
  if (descr.size() < 3) return "";
  const std::string bytes = descr.substr(2);
  if (bytes.find_first_not_of("0123456789") != std::string::npos || bytes.size() > 3) return "";
  const int bits = std::stoi(bytes) * 8;
  switch (descr[1]) {
    case 'f': return MakeString("float", bits);
    case 'i': return MakeString("int", bits);
    case 'u': return MakeString("uint", bits);
    case 'c': return MakeString("complex", bits);
    case 'b': return "bool";
    case 'U': return "unicode string";
    case 'S': return "byte string";
    case 'O': return "Python object";
    default: return "";
  }
}

DataType DTypeFromDescr(const std::string& descr, const std::string& path) {
  for (const auto& d : kDTypes) {
    if (descr == d.descr) return d.type;
  }
  const std::string name = NumpyTypeName(descr);
  if (!descr.empty() && descr[0] == '>' && descr.size() == 3) {
    const std::string little = "<" + descr.substr(1);
    for (const auto& d : kDTypes) {
      if (little == d.descr) {
        HALFCAF_THROW("npy file '", path, "' is big-endian ('", descr,
                      "'); only little-endian files are read: save a.astype('", little,
                      "') instead");
      }
    }
  }
  HALFCAF_THROW("npy file '", path, "' has dtype '", descr, "'", name.empty() ? "" : " (",
                name, name.empty() ? "" : ")", ", which halfcaf does not read: supported are ",
                kSupported);
}

// The header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } in any key order,
// either quote, with trailing commas and whitespace, ints perhaps with Python 2's L suffix.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  void Parse(std::string* descr, bool* fortran, std::vector<int64_t>* shape) {
    bool has_descr = false, has_fortran = false, has_shape = false;
    Expect('{');
    while (true) {
      SkipSpace();
      if (Peek() == '}') break;
      const std::string key = String();
      Expect(':');
      SkipSpace();
      if (key == "descr") {
        if (Peek() == '[') {
          HALFCAF_THROW("npy file '", path_, "' holds a structured array (its descr is a list ",
                        "of fields), which halfcaf does not read: supported dtypes are ",
                        kSupported);
        }
        *descr = String();
        has_descr = true;
      } else if (key == "fortran_order") {
        *fortran = Bool();
        has_fortran = true;
      } else if (key == "shape") {
        *shape = Tuple();
        has_shape = true;
      } else {
        Fail(MakeString("unexpected key '", key, "'"));
      }
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() != '}') {
        Fail("expected ',' or '}'");
      }
    }
    ++pos_;
    SkipSpace();
    if (pos_ != s_.size()) Fail("unexpected text after the closing '}'");
    if (!has_descr || !has_fortran || !has_shape) {
      Fail(MakeString("missing key '", !has_descr ? "descr" : !has_fortran ? "fortran_order"
                                                                           : "shape",
                      "'"));
    }
  }

 private:
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  [[noreturn]] void Fail(const std::string& what) const {
    std::string shown = s_;
    while (!shown.empty() && (shown.back() == ' ' || shown.back() == '\n')) shown.pop_back();
    if (shown.size() > 200) shown = shown.substr(0, 200) + "...";
    HALFCAF_THROW("npy file '", path_, "' has a header that does not parse: ", what,
                  " at character ", pos_, " of \"", shown, "\"");
  }
  void Expect(char c) {
    SkipSpace();
    if (Peek() != c) Fail(MakeString("expected '", c, "'"));
    ++pos_;
  }
  std::string String() {
    SkipSpace();
    const char quote = Peek();
    if (quote != '\'' && quote != '"') Fail("expected a quoted string");
    const size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string::npos) Fail("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  bool Bool() {
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    Fail("expected True or False");
  }
  std::vector<int64_t> Tuple() {
    std::vector<int64_t> dims;
    Expect('(');
    while (true) {
      SkipSpace();
      if (Peek() == ')') break;
      if (Peek() < '0' || Peek() > '9') Fail("expected a non-negative integer in the shape");
      int64_t v = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        if (__builtin_mul_overflow(v, int64_t{10}, &v) ||
            __builtin_add_overflow(v, int64_t{Peek() - '0'}, &v)) {
          Fail("shape dimension too large");
        }
        ++pos_;
      }
      if (Peek() == 'L') ++pos_;
      dims.push_back(v);
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() != ')') {
        Fail("expected ',' or ')' in the shape");
      }
    }
    ++pos_;
    return dims;
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

// An open file, closed on scope exit.
class File {
 public:
  explicit File(const std::string& path) : path_(path) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    HALFCAF_ENFORCE(fs::exists(st), "cannot open npy file '", path,
                    "': no such file or directory");
    HALFCAF_ENFORCE(!fs::is_directory(st), "cannot read npy file '", path, "': it is a directory");
    f_ = std::fopen(path.c_str(), "rb");
    HALFCAF_ENFORCE(f_ != nullptr, "cannot open npy file '", path, "': ", std::strerror(errno));
  }
  ~File() { std::fclose(f_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  int64_t Size() const {
    struct stat st;
    HALFCAF_ENFORCE(::fstat(::fileno(f_), &st) == 0, "cannot read npy file '", path_, "': ",
                    std::strerror(errno));
    return static_cast<int64_t>(st.st_size);
  }
  // Reads n bytes; returns how many there were (fewer at the end of the file).
  size_t Read(void* out, size_t n) {
    const size_t got = std::fread(out, 1, n, f_);
    HALFCAF_ENFORCE(got == n || !std::ferror(f_), "error reading npy file '", path_, "': ",
                    std::strerror(errno));
    return got;
  }
  void Seek(int64_t offset) {
    HALFCAF_ENFORCE(::fseeko(f_, static_cast<off_t>(offset), SEEK_SET) == 0,
                    "cannot seek in npy file '", path_, "': ", std::strerror(errno));
  }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

NpyInfo ReadInfo(File& f, const std::string& path) {
  const int64_t size = f.Size();
  unsigned char pre[12];
  size_t got = f.Read(pre, 8);
  HALFCAF_ENFORCE(got >= kMagicSize && std::memcmp(pre, kMagic, kMagicSize) == 0, "npy file '",
                  path, "' does not start with the .npy magic string \\x93NUMPY: not a .npy file",
                  got < kMagicSize ? MakeString(" (it is only ", size, " bytes)") : "");
  HALFCAF_ENFORCE(got == 8, "npy file '", path, "' is truncated: ", size,
                  " bytes, too short for the .npy header");
  const int major = pre[6], minor = pre[7];
  HALFCAF_ENFORCE((major == 1 || major == 2 || major == 3) && minor == 0, "npy file '", path,
                  "' has format version ", major, ".", minor,
                  ", which halfcaf does not read (1.0, 2.0 and 3.0 are read)");
  const size_t len_bytes = major == 1 ? 2 : 4;
  got = f.Read(pre + 8, len_bytes);
  HALFCAF_ENFORCE(got == len_bytes, "npy file '", path, "' is truncated: ", size,
                  " bytes, too short for the .npy header");
  int64_t header_len = pre[8] | (int64_t{pre[9]} << 8);
  if (len_bytes == 4) header_len |= (int64_t{pre[10]} << 16) | (int64_t{pre[11]} << 24);
  const int64_t data_offset = 8 + static_cast<int64_t>(len_bytes) + header_len;
  HALFCAF_ENFORCE(size >= data_offset, "npy file '", path, "' is truncated: ", size,
                  " bytes, but its header says the data starts at byte ", data_offset);
  std::string text(static_cast<size_t>(header_len), '\0');
  f.Read(text.data(), text.size());

  std::string descr;
  bool fortran = false;
  NpyInfo info;
  HeaderParser(text, path).Parse(&descr, &fortran, &info.dims);
  info.dtype = DTypeFromDescr(descr, path);
  HALFCAF_ENFORCE(!fortran, "npy file '", path, "' is in Fortran (column-major) order, which ",
                  "halfcaf does not read: save it in C order (np.save(path, ",
                  "np.ascontiguousarray(a)))");
  info.data_offset = data_offset;
  int64_t payload = static_cast<int64_t>(DataTypeSize(info.dtype));
  for (int64_t d : info.dims) {
    HALFCAF_ENFORCE(!__builtin_mul_overflow(payload, d, &payload), "npy file '", path,
                    "' has shape ", DimsString(info.dims), " whose byte size overflows");
  }
  const int64_t have = size - data_offset;
  HALFCAF_ENFORCE(have >= payload, "npy file '", path, "' is truncated: its header says ",
                  descr, " of shape ", DimsString(info.dims), " (", payload,
                  " bytes of data), but only ", have, " bytes follow");
  HALFCAF_ENFORCE(have == payload, "npy file '", path, "' has ", have - payload,
                  " unexpected bytes after the ", descr, " data of shape ",
                  DimsString(info.dims), " (", payload, " bytes)");
  return info;
}

// numpy reads any non-zero byte as True; a C++ bool must be 0 or 1.
void CheckBools(const uint8_t* p, int64_t n, int64_t first_element, const std::string& path) {
  for (int64_t i = 0; i < n; ++i) {
    HALFCAF_ENFORCE(p[i] <= 1, "npy file '", path, "': bool element ", first_element + i,
                    " is stored as byte ", int{p[i]}, ", expected 0 or 1");
  }
}

std::string ShapeRepr(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace

int64_t NpyInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t NpyInfo::row_bytes() const {
  int64_t n = static_cast<int64_t>(DataTypeSize(dtype));
  for (size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return n;
}

NpyInfo ReadNpyInfo(const std::string& path) {
  File f(path);
  return ReadInfo(f, path);
}

Tensor ReadNpy(const std::string& path) {
  File f(path);
  const NpyInfo info = ReadInfo(f, path);
  Tensor t(info.dims, info.dtype);
  if (t.nbytes() > 0) {
    auto* p = static_cast<uint8_t*>(t.raw_mutable_data());
    f.Seek(info.data_offset);
    const size_t got = f.Read(p, t.nbytes());
    HALFCAF_ENFORCE(got == t.nbytes(), "npy file '", path, "' ended after ", got, " of its ",
                    t.nbytes(), " data bytes (was it changed while being read?)");
    if (info.dtype == DataType::BOOL) CheckBools(p, t.numel(), 0, path);
  }
  return t;
}

void ReadNpyRows(const std::string& path, const NpyInfo& info, int64_t first, int64_t count,
                 void* out) {
  HALFCAF_ENFORCE(!info.dims.empty(), "npy file '", path, "' holds a 0-d array: it has no rows");
  HALFCAF_ENFORCE(first >= 0 && count >= 0 && first <= info.dims[0] - count, "npy file '", path,
                  "': rows [", first, ", ", first + count, ") are outside its ", info.dims[0],
                  " rows");
  const int64_t row = info.row_bytes();
  const size_t n = static_cast<size_t>(count * row);
  if (n == 0) return;
  File f(path);
  f.Seek(info.data_offset + first * row);
  const size_t got = f.Read(out, n);
  HALFCAF_ENFORCE(got == n, "npy file '", path, "' ended after ", got, " of the ", n,
                  " bytes of rows [", first, ", ", first + count,
                  ") (was it changed since its header was read?)");
  if (info.dtype == DataType::BOOL) {
    CheckBools(static_cast<const uint8_t*>(out), count * row, first * row, path);
  }
}

void WriteNpy(const Tensor& t, const std::string& path) {
  HALFCAF_ENFORCE(t.device().type == DeviceType::CPU, "WriteNpy '", path, "': the tensor ",
                  t.DebugString(), " is on ", t.device().ToString(),
                  "; copy it to the CPU first");
  HALFCAF_ENFORCE(t.dtype() != DataType::UNDEFINED && (t.initialized() || t.numel() == 0),
                  "WriteNpy '", path, "': the tensor ", t.DebugString(), " holds no data yet");
  const char* descr = DescrOf(t.dtype());
  HALFCAF_ENFORCE(descr != nullptr, "WriteNpy '", path, "': cannot write a ",
                  DataTypeName(t.dtype()), " tensor as .npy (supported: float, float16, int32, ",
                  "int64, uint8 and bool)");
  std::string header = MakeString("{'descr': '", descr, "', 'fortran_order': False, 'shape': ",
                                  ShapeRepr(t.dims()), ", }");
  // Version 1.0 stores the header length in 16 bits; 2.0 (32 bits) only when that is too small.
  const int64_t fixed = static_cast<int64_t>(header.size()) + 1;  // + '\n'
  const bool v2 = 10 + fixed > 0xffff;
  const int64_t prelude = v2 ? 12 : 10;
  const int64_t padded = (prelude + fixed + kAlign - 1) / kAlign * kAlign - prelude;
  header.append(static_cast<size_t>(padded - fixed), ' ');
  header += '\n';

  std::string bytes(kMagic, kMagicSize);
  bytes += static_cast<char>(v2 ? 2 : 1);
  bytes += '\0';
  const uint32_t len = static_cast<uint32_t>(header.size());
  for (int i = 0; i < (v2 ? 4 : 2); ++i) bytes += static_cast<char>((len >> (8 * i)) & 0xff);
  bytes += header;
  if (t.nbytes() > 0) {
    bytes.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  WriteFileAtomically(path, bytes);
}

}  // namespace halfcaf

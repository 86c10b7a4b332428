#include "core/proto_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/wire_format_lite.h>

#include "core/enforce.h"
#include "core/strings.h"

namespace halfcaf {

namespace {

// Keeps the first text-format error with its position (protobuf's are 0-based).
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (message_.empty()) {
      line_ = line + 1;
      column_ = column + 1;
      message_ = message;
    }
  }
  void AddWarning(int, int, const std::string&) override {}
  bool has_error() const { return !message_.empty(); }
  int line_ = 0, column_ = 0;
  std::string message_;
};

// Older Caffe2 files name DeviceOption field 2 `cuda_gpu_id`; ours is `device_id`. Rewrites the
// field name outside quoted strings and comments.
std::string RewriteLegacyFieldNames(const std::string& text) {
  static const std::string kOld = "cuda_gpu_id";
  if (text.find(kOld) == std::string::npos) return text;
  std::string out;
  out.reserve(text.size());
  char quote = 0;
  bool comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (comment) {
      if (c == '\n') comment = false;
    } else if (quote) {
      if (c == '\\' && i + 1 < text.size()) {
        out += c;
        c = text[++i];
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      comment = true;
    } else if (text.compare(i, kOld.size(), kOld) == 0 &&
               (i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) ||
                            text[i - 1] == '_'))) {
      size_t end = i + kOld.size();
      if (end >= text.size() ||
          !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) {
        // Same length keeps columns in error messages right.
        out += "device_id  ";
        i = end - 1;
        continue;
      }
    }
    out += c;
  }
  return out;
}

// Deepest message nesting accepted in net and tensor files, text or binary. Real nets nest a few
// levels (NetDef > OperatorDef > Argument > NetDef ...); thousands of levels would exhaust the
// stack of a recursive parser, or of anything that later walks the nets.
constexpr int kMaxNesting = 100;

// Parses binary protobuf with the nesting limit.
bool ParseBinary(const std::string& content, google::protobuf::Message* msg) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(content.data()),
                                            static_cast<int>(content.size()));
  in.SetRecursionLimit(kMaxNesting);
  return msg->ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

// True when binary `content` nests messages of `type` deeper than kMaxNesting: walks the wire
// format with an explicit stack (no recursion), following only fields that are messages.
bool NestedTooDeep(const std::string& content, const google::protobuf::Descriptor* type) {
  using google::protobuf::FieldDescriptor;
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(content.data()),
                                            static_cast<int>(content.size()));
  std::vector<std::pair<const google::protobuf::Descriptor*, int>> stack;  // type, push limit
  stack.emplace_back(type, -1);
  while (!stack.empty()) {
    if (in.BytesUntilLimit() == 0 && stack.size() > 1) {
      in.PopLimit(stack.back().second);
      stack.pop_back();
      continue;
    }
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return false;  // end of input or malformed: not a nesting problem
    const FieldDescriptor* field = stack.back().first->FindFieldByNumber(tag >> 3);
    if (WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED &&
        field != nullptr && field->type() == FieldDescriptor::TYPE_MESSAGE) {
      uint32_t length;
      if (!in.ReadVarint32(&length)) return false;
      if (static_cast<int>(stack.size()) > kMaxNesting) return true;
      stack.emplace_back(field->message_type(), in.PushLimit(static_cast<int>(length)));
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  return false;
}

}  // namespace

bool LooksLikeText(const std::string& content) {
  // Protobuf text is printable UTF-8 plus whitespace; the binary format almost always contains
  // control bytes (tags, lengths, varints) within its first few bytes.
  size_t n = std::min<size_t>(content.size(), 4096);
  if (n == 0) return true;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(content[i]);
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
    if (c == 0x7f) return false;
  }
  return true;
}

void ParseProtoFromString(const std::string& content, const std::string& source,
                          google::protobuf::Message* msg) {
  const std::string kind = msg->GetDescriptor()->name();
  HALFCAF_ENFORCE(content.size() <= static_cast<size_t>(INT_MAX), source, ": ",
                  ByteCountString(content.size()), " is more than a ", kind,
                  " can hold (protobuf's limit is 2 GiB)");
  if (LooksLikeText(content)) {
    google::protobuf::TextFormat::Parser parser;
    FirstErrorCollector errors;
    parser.RecordErrorsTo(&errors);
    parser.SetRecursionLimit(kMaxNesting);
    msg->Clear();
    if (parser.ParseFromString(RewriteLegacyFieldNames(content), msg)) return;
    // Binary content that happens to be all printable: accept it if it parses as binary.
    msg->Clear();
    if (!content.empty() && ParseBinary(content, msg) &&
        msg->GetReflection()->GetUnknownFields(*msg).empty()) {
      return;
    }
    msg->Clear();
    HALFCAF_THROW(source, ":", errors.line_, ":", errors.column_, ": cannot parse ", kind,
                  " text: ", errors.message_);
  }
  msg->Clear();
  if (ParseBinary(content, msg)) return;
  msg->Clear();
  HALFCAF_ENFORCE(!NestedTooDeep(content, msg->GetDescriptor()), source, ": cannot parse ", kind,
                  ": messages are nested more than ", kMaxNesting, " levels deep");
  HALFCAF_THROW(source, ": cannot parse ", kind, " (binary protobuf: truncated or not a ", kind,
                ")");
}

std::string ReadFileBytes(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  HALFCAF_ENFORCE(in.good(), path, ": cannot open file (", std::strerror(errno), ")");
  struct stat st;
  HALFCAF_ENFORCE(stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode), path,
                  ": is a directory, expected a ", what, " file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void ReadProtoFromFile(const std::string& path, google::protobuf::Message* msg) {
  ParseProtoFromString(ReadFileBytes(path, msg->GetDescriptor()->name()), path, msg);
}

bool PathWantsText(const std::string& path) {
  for (const char* ext : {".pbtxt", ".prototxt", ".pb.txt", ".txt"}) {
    size_t n = std::strlen(ext);
    if (path.size() >= n && path.compare(path.size() - n, n, ext) == 0) return true;
  }
  return false;
}

std::string ResolveSymlinks(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p = path;
  for (int hops = 0;; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p.string();
    HALFCAF_ENFORCE(hops < 40, path, ": too many levels of symbolic links");
    fs::path target = fs::read_symlink(p, ec);
    HALFCAF_ENFORCE(!ec, path, ": cannot read the symbolic link (", ec.message(), ")");
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
}

namespace {

const char kTempInfix[] = ".tmp.";

}  // namespace

std::vector<std::string> RemoveStaleTempFiles(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target = ResolveSymlinks(path);
  const std::string prefix = target.filename().string() + kTempInfix;
  std::vector<std::string> removed;
  std::error_code ec;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    // Only a process that no longer exists; one we may not signal (EPERM) is alive.
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    if (entry.is_regular_file(rm) && fs::remove(entry.path(), rm)) removed.push_back(name);
  }
  return removed;
}

void WriteFileAtomically(const std::string& given_path, const std::string& bytes) {
  const std::string path = ResolveSymlinks(given_path);
  std::string tmp = path + kTempInfix + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  HALFCAF_ENFORCE(fd >= 0, given_path, ": cannot write (", std::strerror(errno), ")");
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      HALFCAF_THROW(given_path, ": write failed (", std::strerror(err), ")");
    }
    off += static_cast<size_t>(w);
  }
  bool ok = ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    HALFCAF_THROW(given_path, ": cannot finish writing (", std::strerror(err), ")");
  }
}

void WriteProtoToFile(const google::protobuf::Message& msg, const std::string& path, bool text) {
  std::string bytes;
  if (text) {
    HALFCAF_ENFORCE(google::protobuf::TextFormat::PrintToString(msg, &bytes), path,
                    ": cannot format ", msg.GetDescriptor()->name(), " as text");
  } else {
    HALFCAF_ENFORCE(msg.SerializeToString(&bytes), path, ": cannot serialize ",
                    msg.GetDescriptor()->name());
  }
  WriteFileAtomically(path, bytes);
}

}  // namespace halfcaf

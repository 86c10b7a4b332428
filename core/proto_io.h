// Reading and writing NetDef / TensorProtos files. Text or binary is detected from the content;
// text parse errors report file:line:column. Writes are atomic (temp file, fsync, rename).
#pragma once

#include <string>

#include <google/protobuf/message.h>

namespace halfcaf {

// Throws EnforceNotMet naming the file on a missing file or a parse error.
void ReadProtoFromFile(const std::string& path, google::protobuf::Message* msg);
// Parses text or binary content; `source` names it in errors.
void ParseProtoFromString(const std::string& content, const std::string& source,
                          google::protobuf::Message* msg);
// True when the bytes look like protobuf text rather than the binary wire format.
bool LooksLikeText(const std::string& content);

// Writes text when `text` is true, binary otherwise, atomically.
void WriteProtoToFile(const google::protobuf::Message& msg, const std::string& path, bool text);
// Text when the path ends in .pbtxt, .prototxt, .pb.txt or .txt, otherwise binary.
bool PathWantsText(const std::string& path);
// Writes bytes to path atomically: a temp file beside it, fsync, rename.
void WriteFileAtomically(const std::string& path, const std::string& bytes);

}  // namespace halfcaf

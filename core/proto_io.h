// Reading and writing NetDef / TensorProtos files. Text or binary is detected from the content;
// text parse errors report file:line:column. Writes are atomic (temp file, fsync, rename).
#pragma once

#include <string>
#include <vector>

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
// Writes bytes to path atomically: a temp file beside it (TempPathFor), fsync, rename. A path
// that is a symbolic link is written through: the file it points to is replaced (atomically,
// beside it) and the link is kept.
void WriteFileAtomically(const std::string& path, const std::string& bytes);
// The file a path names after following symbolic links of its last component (a dangling link
// gives its target); throws on a link loop. Other paths are returned unchanged.
std::string ResolveSymlinks(const std::string& path);
// The whole content of a file; throws naming it when it cannot be read or is a directory.
// `what` names the expected content in that message.
std::string ReadFileBytes(const std::string& path, const std::string& what);
// Removes the temp files "<path>.tmp.<pid>" that WriteFileAtomically(path) left when its process
// was killed: only those whose process is no longer running. Returns their names.
std::vector<std::string> RemoveStaleTempFiles(const std::string& path);

}  // namespace halfcaf

#include "onnx/isolated_shape_inference.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/enforce.h"

namespace halfcaf {
namespace onnx_import {
namespace {

bool WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// The child: infer, send value_info and outputs, exit without running the parent's atexit
// handlers or destructors.
[[noreturn]] void RunChild(onnx::ModelProto* model, int fd) {
  try {
    onnx::shape_inference::InferShapes(*model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception&) {
    // Partial shapes are fine: a converter that needs a shape says so.
  }
  onnx::GraphProto inferred;
  *inferred.mutable_value_info() = model->graph().value_info();
  *inferred.mutable_output() = model->graph().output();
  _exit(WriteAll(fd, inferred.SerializeAsString()) ? 0 : 3);
}

}  // namespace

void InferShapesIsolated(onnx::ModelProto* model, const std::string& source) {
  int fds[2];
  HALFCAF_ENFORCE(pipe(fds) == 0, source, ": cannot make a pipe for ONNX's shape inference: ",
                  std::strerror(errno));
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    HALFCAF_THROW(source, ": cannot fork for ONNX's shape inference: ", std::strerror(err));
  }
  if (pid == 0) {
    close(fds[0]);
    RunChild(model, fds[1]);
  }
  close(fds[1]);
  const std::string bytes = ReadAll(fds[0]);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    HALFCAF_THROW(source, ": ONNX's shape inference crashed on this model (signal ",
                  WTERMSIG(status), ", ", strsignal(WTERMSIG(status)),
                  "): it is malformed, e.g. a node input of a type its operator does not take");
  }
  HALFCAF_ENFORCE(WIFEXITED(status) && WEXITSTATUS(status) == 0, source,
                  ": ONNX's shape inference failed (exit status ",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1, ")");
  onnx::GraphProto inferred;
  HALFCAF_ENFORCE(inferred.ParseFromString(bytes), source,
                  ": ONNX's shape inference sent back an unreadable result");
  onnx::GraphProto* graph = model->mutable_graph();
  *graph->mutable_value_info() = inferred.value_info();
  *graph->mutable_output() = inferred.output();
}

}  // namespace onnx_import
}  // namespace halfcaf

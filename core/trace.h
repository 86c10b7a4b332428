// Timelines of a run in the Chrome trace-event format (JSON), which Perfetto UI and
// chrome://tracing open: every operator run of every net (an observer on the net runtime,
// core/observer.h), each run of a net, and the spans other threads mark (data prefetching, Gloo's
// gradient exchange), one track per thread, named for what the thread does.
//
//   TraceRecorder trace;          // tools: `--trace trace.json` (tools/tool_common.h)
//   trace.Start();                // nets created from now on are observed
//   ... create and run nets ...
//   trace.Stop();
//   trace.WriteJson("trace.json");
//
//   { trace::Span s("data", "prefetch batch"); ... }   // anywhere: recorded only while tracing
//
// Off (no recorder started) it costs nothing on the nets (they have no observer) and one atomic
// load per Span. Times are host times from a steady clock: a CUDA op's event is its launch
// unless something waits for its stream. One recorder at a time; events beyond `max_events` are
// counted, not kept (the file says how many were dropped).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace halfcaf {

class NetBase;
class NetObserver;
class TraceRecorder;

namespace trace {

// Names the calling thread's track ("dag worker 2 of net 'train'", "gradient exchange (Gloo)").
// Takes effect for the tracks recorded after the call; a thread never named is "main" if it is
// the first to record, else "thread N".
void SetThreadName(const std::string& name);

// The recorder that is tracing now, or nullptr.
TraceRecorder* Active();

// Records the span from its construction to its destruction on the calling thread, if a recorder
// was active at construction.
class Span {
 public:
  Span(const char* category, std::string name);
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  // An argument shown with the event (only kept while recording).
  void Arg(const std::string& key, int64_t value);
  void Arg(const std::string& key, const std::string& value);

 private:
  TraceRecorder* recorder_;
  const char* category_;
  std::string name_;
  int64_t start_ns_ = 0;
  std::vector<std::pair<std::string, std::string>> args_;  // values as JSON text
};

}  // namespace trace

class TraceRecorder {
 public:
  struct Event {
    std::string name;
    const char* category;
    int64_t start_ns, duration_ns;  // since the recorder's start
    int track;
    std::vector<std::pair<std::string, std::string>> args;  // values as JSON text
  };

  explicit TraceRecorder(size_t max_events = 4000000);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // Becomes the active recorder and observes every net created until Stop (nets created before
  // are not seen). Throws if another recorder is active. Stop only while no traced net runs.
  void Start();
  void Stop();
  bool active() const;

  // The observer that records `net` into this recorder while it is active (what Start gives the
  // nets created after it), for a net created before.
  std::shared_ptr<NetObserver> ObserverFor(const NetBase& net) const;
  // Unique to this recorder among all recorders of the process.
  uint64_t generation() const { return generation_; }
  // Nanoseconds since the recorder was made (steady clock).
  int64_t Now() const;
  // Records a finished event on the calling thread's track.
  void Add(std::string name, const char* category, int64_t start_ns, int64_t end_ns,
           std::vector<std::pair<std::string, std::string>> args);

  size_t num_events() const;
  size_t num_dropped() const;
  std::vector<Event> events() const;
  // Every track's name, by track id.
  std::vector<std::string> track_names() const;

  // The trace as one JSON object {"traceEvents": [...], ...}; throws EnforceNotMet naming `path`
  // when it cannot be written.
  void WriteJson(const std::string& path) const;

 private:
  int TrackOfThisThread();

  size_t max_events_;
  int64_t origin_ns_ = 0;
  int observer_id_ = -1;
  mutable std::mutex mu_;
  std::vector<Event> events_;
  size_t dropped_ = 0;
  std::vector<std::string> tracks_;
  uint64_t generation_;  // tells this recorder's thread-track cache from another's
};

// Records a trace into `path` for the life of the object when `path` is not empty: what the
// tools' --trace flag does. Finish() (or the destructor, which logs instead of throwing) writes
// the file and says where it is on stderr.
class ScopedTrace {
 public:
  explicit ScopedTrace(const std::string& path);
  ~ScopedTrace();
  void Finish();

 private:
  std::string path_;
  std::unique_ptr<TraceRecorder> recorder_;
};

}  // namespace halfcaf

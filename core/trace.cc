#include "core/trace.h"

#include <glog/logging.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "core/enforce.h"
#include "core/net.h"
#include "core/strings.h"

namespace halfcaf {

namespace {

std::atomic<TraceRecorder*> g_active{nullptr};
std::atomic<uint64_t> g_generation{1};

struct ThreadTrack {
  uint64_t generation = 0;
  int track = -1;
  std::string name;
};
thread_local ThreadTrack t_track;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "12.345": nanoseconds as the microseconds the format counts in.
std::string Micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  return buf;
}

std::string DeviceLabel(const OperatorDef& op) {
  if (!op.has_device_option() || op.device_option().device_type() == 0) return "cpu";
  return MakeString("cuda:", op.device_option().device_id());
}

int64_t TensorBytes(const Blob& b) {
  if (!b.IsTensor() || !b.GetTensor().initialized()) return 0;
  return static_cast<int64_t>(b.GetTensor().nbytes());
}

// Records each run of one net and of each of its ops into the recorder that created it, while
// that recorder is the active one (a net may outlive the trace).
class TraceObserver : public NetObserver {
 public:
  TraceObserver(uint64_t generation, const NetBase& net)
      : generation_(generation),
        net_label_(net.name().empty() ? std::string("net") : net.name()),
        starts_(net.ops().size(), 0),
        bytes_in_(net.ops().size(), 0) {}

  void OnNetStart(const NetBase& /*net*/) override {
    if (TraceRecorder* r = Recorder()) net_start_ = r->Now();
  }

  void OnNetEnd(const NetBase& net) override {
    TraceRecorder* r = Recorder();
    if (!r) return;
    r->Add(net_label_, "net", net_start_, r->Now(),
           {{"type", JsonString(net.def().type().empty() ? "simple" : net.def().type())},
            {"ops", std::to_string(net.ops().size())}});
  }

  void OnOpStart(const NetBase& net, size_t i) override {
    TraceRecorder* r = Recorder();
    if (!r) return;
    const OperatorBase& op = *net.ops()[i];
    int64_t in = 0;
    for (int k = 0; k < op.InputSize(); ++k) in += TensorBytes(op.InputBlob(k));
    bytes_in_[i] = in;
    starts_[i] = r->Now();
  }

  void OnOpEnd(const NetBase& net, size_t i, bool failed) override {
    TraceRecorder* r = Recorder();
    if (!r) return;
    const int64_t end = r->Now();
    OperatorBase& op = *net.ops()[i];
    const OperatorDef& def = op.def();
    int64_t out = 0;
    for (int k = 0; k < op.OutputSize(); ++k) out += TensorBytes(*op.OutputBlob(k));
    std::vector<std::pair<std::string, std::string>> args = {
        {"net", JsonString(net_label_)},
        {"op", std::to_string(i)},
        {"device", JsonString(DeviceLabel(def))},
        {"bytes_in", std::to_string(bytes_in_[i])},
        {"bytes_out", std::to_string(out)}};
    if (!def.name().empty()) args.emplace_back("name", JsonString(def.name()));
    if (!def.engine().empty()) args.emplace_back("engine", JsonString(def.engine()));
    if (failed) args.emplace_back("failed", "true");
    r->Add(def.type(), "op", starts_[i], end, std::move(args));
  }

 private:
  TraceRecorder* Recorder() const {
    TraceRecorder* r = trace::Active();
    return r && r->generation() == generation_ ? r : nullptr;
  }

  uint64_t generation_;
  std::string net_label_;
  int64_t net_start_ = 0;
  // Per op: written only by the thread running that op.
  std::vector<int64_t> starts_, bytes_in_;
};

}  // namespace

namespace trace {

void SetThreadName(const std::string& name) {
  t_track.name = name;
  t_track.generation = 0;  // a new track under the new name from the next event on
}

TraceRecorder* Active() { return g_active.load(std::memory_order_acquire); }

Span::Span(const char* category, std::string name)
    : recorder_(Active()), category_(category), name_(std::move(name)) {
  if (recorder_) start_ns_ = recorder_->Now();
}

Span::~Span() {
  if (recorder_ && recorder_ == Active()) {
    recorder_->Add(std::move(name_), category_, start_ns_, recorder_->Now(), std::move(args_));
  }
}

void Span::Arg(const std::string& key, int64_t value) {
  if (recorder_) args_.emplace_back(key, std::to_string(value));
}

void Span::Arg(const std::string& key, const std::string& value) {
  if (recorder_) args_.emplace_back(key, JsonString(value));
}

}  // namespace trace

TraceRecorder::TraceRecorder(size_t max_events)
    : max_events_(max_events), origin_ns_(SteadyNs()), generation_(g_generation++) {}

TraceRecorder::~TraceRecorder() { Stop(); }

void TraceRecorder::Start() {
  TraceRecorder* expected = nullptr;
  HALFCAF_ENFORCE(g_active.compare_exchange_strong(expected, this) || expected == this,
                  "trace: another trace is being recorded (one at a time)");
  if (observer_id_ >= 0) return;
  observer_id_ = AddGlobalNetObserverCreator(
      [this](const NetBase& net) { return ObserverFor(net); });
}

void TraceRecorder::Stop() {
  if (observer_id_ >= 0) RemoveGlobalNetObserverCreator(observer_id_);
  observer_id_ = -1;
  TraceRecorder* self = this;
  g_active.compare_exchange_strong(self, nullptr);
}

std::shared_ptr<NetObserver> TraceRecorder::ObserverFor(const NetBase& net) const {
  return std::make_shared<TraceObserver>(generation_, net);
}

bool TraceRecorder::active() const { return trace::Active() == this; }

int64_t TraceRecorder::Now() const { return SteadyNs() - origin_ns_; }

int TraceRecorder::TrackOfThisThread() {
  // mu_ held.
  if (t_track.generation != generation_) {
    std::string name = t_track.name;
    if (name.empty()) name = tracks_.empty() ? "main" : MakeString("thread ", tracks_.size() + 1);
    t_track.track = static_cast<int>(tracks_.size());
    t_track.generation = generation_;
    tracks_.push_back(std::move(name));
  }
  return t_track.track;
}

void TraceRecorder::Add(std::string name, const char* category, int64_t start_ns, int64_t end_ns,
                        std::vector<std::pair<std::string, std::string>> args) {
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  const int track = TrackOfThisThread();
  events_.push_back(Event{std::move(name), category, start_ns, end_ns - start_ns, track,
                          std::move(args)});
}

size_t TraceRecorder::num_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

size_t TraceRecorder::num_dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

std::vector<TraceRecorder::Event> TraceRecorder::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

std::vector<std::string> TraceRecorder::track_names() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tracks_;
}

void TraceRecorder::WriteJson(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  HALFCAF_ENFORCE(out.good(), "trace: cannot write '", path, "'");
  const int pid = static_cast<int>(getpid());
  out << "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"producer\": \"halfcaf\", "
      << "\"events\": " << events_.size() << ", \"dropped_events\": " << dropped_
      << "},\n\"traceEvents\": [\n";
  out << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << pid
      << ", \"tid\": 0, \"args\": {\"name\": \"halfcaf\"}}";
  for (size_t t = 0; t < tracks_.size(); ++t) {
    out << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << pid << ", \"tid\": " << t
        << ", \"args\": {\"name\": " << JsonString(tracks_[t]) << "}}";
    out << ",\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": " << pid
        << ", \"tid\": " << t << ", \"args\": {\"sort_index\": " << t << "}}";
  }
  for (const Event& e : events_) {
    out << ",\n{\"name\": " << JsonString(e.name) << ", \"cat\": \"" << e.category
        << "\", \"ph\": \"X\", \"ts\": " << Micros(e.start_ns) << ", \"dur\": "
        << Micros(e.duration_ns) << ", \"pid\": " << pid << ", \"tid\": " << e.track;
    if (!e.args.empty()) {
      out << ", \"args\": {";
      for (size_t k = 0; k < e.args.size(); ++k) {
        out << (k ? ", " : "") << JsonString(e.args[k].first) << ": " << e.args[k].second;
      }
      out << "}";
    }
    out << "}";
  }
  out << "\n]}\n";
  out.flush();
  HALFCAF_ENFORCE(out.good(), "trace: writing '", path, "' failed (disk full?)");
}

ScopedTrace::ScopedTrace(const std::string& path) : path_(path) {
  if (path_.empty()) return;
  {
    std::ofstream probe(path_, std::ios::binary | std::ios::trunc);  // fail now, not at the end
    HALFCAF_ENFORCE(probe.good(), "--trace: cannot write '", path_, "'");
  }
  recorder_.reset(new TraceRecorder());
  recorder_->Start();
}

ScopedTrace::~ScopedTrace() {
  try {
    Finish();
  } catch (const std::exception& e) {
    LOG(ERROR) << e.what();
  }
}

void ScopedTrace::Finish() {
  if (!recorder_) return;
  std::unique_ptr<TraceRecorder> r = std::move(recorder_);
  r->Stop();
  r->WriteJson(path_);
  std::cerr << "trace: " << r->num_events() << " events written to " << path_;
  if (r->num_dropped() > 0) std::cerr << " (" << r->num_dropped() << " more dropped: the limit)";
  std::cerr << " (open in Perfetto UI or chrome://tracing)" << std::endl;
}

}  // namespace halfcaf

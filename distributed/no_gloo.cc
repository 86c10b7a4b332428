// Built instead of the Gloo-based files when libgloo-dev is missing: the distributed operators
// are absent (creating one names the package to install) and the C++ API throws the same hint.
#include "core/operator.h"
#include "distributed/common_world.h"
#include "distributed/store_handler.h"

// The API's classes hold Gloo objects by pointer; without Gloo none is ever made, but their
// destructors must still see complete types.
namespace gloo {
class Algorithm {
 public:
  virtual ~Algorithm() = default;
};
class Context {};
}  // namespace gloo

namespace halfcaf {

bool GlooAvailable() { return false; }

const char* GlooMissingHint() {
  return "the distributed operators need Gloo, which this build lacks: install libgloo-dev "
         "(apt; tools/setup_deps.sh does) and rebuild with HALFCAF_USE_GLOO=AUTO";
}

namespace {

[[noreturn]] void NoGloo() { HALFCAF_THROW(GlooMissingHint()); }

const bool kHintsRegistered = [] {
  for (const char* type :
       {"FileStoreHandlerCreate", "RedisStoreHandlerCreate", "CreateCommonWorld",
        "CloneCommonWorld", "DestroyCommonWorld", "Allreduce", "Broadcast", "Barrier",
        "Allgather"}) {
    OperatorRegistry::RegisterMissingHint(type, GlooMissingHint());
  }
  return true;
}();

}  // namespace

CommonWorld::CommonWorld(std::shared_ptr<gloo::Context>, std::string, int64_t) { NoGloo(); }
CommonWorld::~CommonWorld() = default;
std::shared_ptr<CommonWorld> CommonWorld::Create(StoreHandler&, const CommonWorldOptions&) {
  NoGloo();
}
std::shared_ptr<CommonWorld> CommonWorld::Create(const std::string&, const CommonWorldOptions&) {
  NoGloo();
}
std::shared_ptr<CommonWorld> CommonWorld::Clone() const { NoGloo(); }
std::string CommonWorld::Describe() const { NoGloo(); }
void CommonWorld::Barrier() { NoGloo(); }
void CommonWorld::Close() { NoGloo(); }
void CommonWorld::RethrowAsCommunicationError(const std::string&) const { NoGloo(); }

AllreduceAlgorithm ParseAllreduceAlgorithm(const std::string&) { NoGloo(); }
Allreducer::Allreducer(std::shared_ptr<CommonWorld>, AllreduceAlgorithm) { NoGloo(); }
Allreducer::~Allreducer() = default;
void Allreducer::Run(const std::vector<Tensor*>&) { NoGloo(); }
void Allreducer::Run(const std::vector<void*>&, int64_t, DataType) { NoGloo(); }
Broadcaster::Broadcaster(std::shared_ptr<CommonWorld>) { NoGloo(); }
Broadcaster::~Broadcaster() = default;
void Broadcaster::Run(const std::vector<Tensor*>&, int) { NoGloo(); }
void Broadcaster::Run(const std::vector<void*>&, size_t, int) { NoGloo(); }
Allgatherer::Allgatherer(std::shared_ptr<CommonWorld>) { NoGloo(); }
Allgatherer::~Allgatherer() = default;
void Allgatherer::Run(const std::vector<const void*>&, size_t, void*) { NoGloo(); }

}  // namespace halfcaf

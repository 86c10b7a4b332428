#include "data/reader_state.h"

#include "core/enforce.h"

namespace halfcaf {

std::vector<int64_t> DataReaderState::ToVector() const {
  return {epoch, index, static_cast<int64_t>(seed)};
}

DataReaderState DataReaderState::FromVector(const std::vector<int64_t>& v) {
  HALFCAF_ENFORCE(v.size() == 3, "a data reader state has 3 values (epoch, index, seed), got ",
                  v.size());
  HALFCAF_ENFORCE(v[0] >= 0 && v[1] >= 0, "bad data reader state ", DimsString(v),
                  ": epoch and index must be >= 0");
  DataReaderState s;
  s.epoch = v[0];
  s.index = v[1];
  s.seed = static_cast<uint64_t>(v[2]);
  return s;
}

}  // namespace halfcaf

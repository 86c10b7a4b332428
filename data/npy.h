// NumPy .npy files (numpy.save / numpy.load's format): a magic string, a version, a Python-dict
// header {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } and the raw elements.
//
// Read: format versions 1.0, 2.0 and 3.0; little-endian, C order; dtypes <f4 (FLOAT), <f2
// (FLOAT16), <i4 (INT32), <i8 (INT64), |u1 (UINT8) and |b1 (BOOL). Written: version 1.0 (2.0 only
// when a header would not fit 1.0's 16-bit length), padded so the data starts at a multiple of 64
// bytes, as numpy does. Every problem (missing file, bad magic, another dtype or byte order,
// Fortran order, a header that does not parse, data shorter or longer than the header's shape)
// throws EnforceNotMet naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace halfcaf {

// What a .npy header says, and where its data starts.
struct NpyInfo {
  DataType dtype = DataType::UNDEFINED;
  std::vector<int64_t> dims;  // {} for a 0-d array (one element)
  int64_t data_offset = 0;    // bytes from the start of the file
  int64_t numel() const;
  // Bytes of one slice along dim 0 (a "row"); the element size for a 0-d array.
  int64_t row_bytes() const;
};

// Reads the whole file into a CPU tensor of the matching dtype and dims.
Tensor ReadNpy(const std::string& path);

// Reads and checks a .npy header, and that the file holds exactly the data it describes (so a
// reader of part of it sees a truncated file here, not later).
NpyInfo ReadNpyInfo(const std::string& path);

// Reads rows [first, first + count) (slices along dim 0) of an array of at least one dimension
// into `out` (count * info.row_bytes() bytes), seeking past the rows before them: the rest of the
// file is never read. `info` is ReadNpyInfo(path)'s.
void ReadNpyRows(const std::string& path, const NpyInfo& info, int64_t first, int64_t count,
                 void* out);

// Writes a CPU tensor of one of the dtypes above (BYTE is written as |u1) as a version 1.0 .npy
// file, atomically (a temp file beside it, then a rename).
void WriteNpy(const Tensor& t, const std::string& path);

}  // namespace halfcaf

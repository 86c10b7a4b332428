// main() for the fuzz targets outside libFuzzer: runs LLVMFuzzerTestOneInput on every file given,
// or on every file in every folder given (the seed corpus and the crash regressions), and says
// how many it ran. A crash or an escaping exception fails the run, as it would under libFuzzer.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (std::filesystem::is_regular_file(p)) {
      files.push_back(p);
    } else {
      std::cerr << argv[0] << ": no such file or folder: " << p << std::endl;
      return 1;
    }
  }
  if (files.empty()) {
    std::cerr << argv[0] << ": no inputs (give files or folders of the corpus)" << std::endl;
    return 1;
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::cout << argv[0] << ": " << files.size() << " inputs ran cleanly" << std::endl;
  return 0;
}

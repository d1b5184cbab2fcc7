// A fresh directory under $TMPDIR, removed with everything in it on
// destruction. Hermetic tests put state dirs, sockets and databases here.
#ifndef SERVELAB_TESTS_TESTING_TEMP_DIR_H_
#define SERVELAB_TESTS_TESTING_TEMP_DIR_H_

#include <string>

namespace servelab::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string File(const std::string& name) const;

 private:
  std::string path_;
};

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_TESTING_TEMP_DIR_H_

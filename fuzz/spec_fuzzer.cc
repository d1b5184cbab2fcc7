// Fuzzes the spec path of a submit: ParseSpecText, then a delta (ApplySet /
// ApplyUnset), then Freeze.
//
// Input: spec text (YAML or JSON), then optionally "\n%%\n" and one delta
// per line: "PATH=VALUE", "PATH+=VALUE" or "-PATH" (an unset).
// Checks: a refused assignment leaves the spec unchanged (spec_delta.h);
// freezing a frozen spec again gives the same canonical JSON and hash.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/core/spec/freeze.h"
#include "daemon/core/spec/spec_delta.h"
#include "daemon/core/spec/spec_text.h"
#include "fuzz/fuzz_input.h"
#include "google/protobuf/util/message_differencer.h"

namespace servelab::fuzz {
namespace {

// The directory relative paths in the spec resolve against: it holds the
// expert layouts the examples in deploy/examples/ name, so their seeds freeze.
const std::string& BaseDir() {
  static const std::string* dir = [] {
    const std::filesystem::path& scratch = ScratchDir();
    std::filesystem::create_directory(scratch / "layouts");
    for (const char* layout : {"decode-layout-a", "decode-layout-b"}) {
      std::ofstream(scratch / "layouts" / (std::string(layout) + ".json"))
          << "{\"name\": \"" << layout << "\", \"experts_per_rank\": 32}\n";
    }
    return new std::string(scratch.string());
  }();
  return *dir;
}

void ApplyDelta(std::string_view line, v1::ExperimentSpec& spec) {
  v1::ExperimentSpec before = spec;
  absl::Status status = line.substr(0, 1) == "-"
                            ? core::spec::ApplyUnset(spec, {line.data() + 1, line.size() - 1})
                            : core::spec::ApplySet(spec, {line.data(), line.size()});
  if (!status.ok()) {
    SERVELAB_FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(before, spec));
  }
}

void CheckRefreeze(const core::spec::FrozenSpec& frozen) {
  absl::StatusOr<core::spec::FrozenSpec> again = core::spec::Freeze(frozen.spec, BaseDir());
  SERVELAB_FUZZ_CHECK(again.ok());
  SERVELAB_FUZZ_CHECK(again->canonical_json == frozen.canonical_json);
  SERVELAB_FUZZ_CHECK(again->sha256 == frozen.sha256);
}

}  // namespace
}  // namespace servelab::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servelab;
  fuzz::FuzzInput input(data, size);
  std::string_view text = input.Until("\n%%\n");
  absl::StatusOr<v1::ExperimentSpec> spec =
      core::spec::ParseSpecText({text.data(), text.size()}, "fuzz.yaml");
  if (!spec.ok()) return 0;
  while (!input.empty()) fuzz::ApplyDelta(input.Until("\n"), *spec);
  absl::StatusOr<core::spec::FrozenSpec> frozen = core::spec::Freeze(*spec, fuzz::BaseDir());
  if (frozen.ok()) fuzz::CheckRefreeze(*frozen);
  return 0;
}

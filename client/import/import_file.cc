#include "client/import/import_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/import/aisbench_details.h"
#include "client/import/aisbench_store.h"
#include "common/regular_file.h"
#include "common/status_macros.h"

namespace servelab::client::import {
namespace {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  return ReadRegularFile(path, kMaxResultFileBytes);
}

absl::StatusOr<AisbenchStores> ReadStores(const std::string& details_path,
                                          const std::string& text) {
  std::filesystem::path dir = std::filesystem::path(details_path).parent_path();
  AisbenchStores stores;
  for (const std::string& db_name : ReferencedDbNames(text)) {
    std::filesystem::path finished = dir / "db_data" / db_name;
    std::filesystem::path running = dir / "tmp" / ("tmp_" + db_name);
    std::error_code ec;
    std::filesystem::path db = std::filesystem::exists(finished, ec) ? finished : running;
    absl::StatusOr<NumpyStore> store = ReadAisbenchNumpyStore(db.string());
    if (absl::IsNotFound(store.status())) {
      return absl::NotFoundError(absl::StrCat(details_path, " keeps its time points in ",
                                              finished.string(), ", which does not exist"));
    }
    if (!store.ok()) return store.status();
    stores.emplace(db_name, *std::move(store));
  }
  return stores;
}

}  // namespace

absl::StatusOr<ImportedRun> ImportResultFile(Tool tool, const std::string& path) {
  SERVELAB_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  if (tool != Tool::kAisbench) return ParseResultFile(tool, text, path);
  SERVELAB_ASSIGN_OR_RETURN(AisbenchStores stores, ReadStores(path, text));
  return ParseAisbenchDetails(text, path, stores);
}

}  // namespace servelab::client::import

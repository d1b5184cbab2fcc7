// Schema migrations of the servelab database, keyed by PRAGMA user_version.
//
// Step i (0-based) of the list takes the schema from version i to i + 1. Each
// step runs in its own BEGIN IMMEDIATE transaction together with the bump of
// user_version, so a crash or a failing step leaves the previous version
// intact. A database whose user_version is newer than the list (written by a
// newer servelabd) is refused with FAILED_PRECONDITION rather than guessed at.
//
// Append new steps at the end; never edit a released one.
#ifndef SERVELAB_STORAGE_MIGRATIONS_H_
#define SERVELAB_STORAGE_MIGRATIONS_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "storage/sqlite_db.h"

namespace servelab::storage {

// The schema steps of this build, oldest first.
absl::Span<const std::string_view> SchemaMigrations();

// The user_version this build writes: SchemaMigrations().size().
int LatestSchemaVersion();

// Brings `db` to the last version of `steps` (the real schema unless a test
// passes its own list).
absl::Status Migrate(SqliteDb& db, absl::Span<const std::string_view> steps = SchemaMigrations());

}  // namespace servelab::storage

#endif  // SERVELAB_STORAGE_MIGRATIONS_H_

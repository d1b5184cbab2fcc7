// Early-return helpers for absl::Status / absl::StatusOr, which Debian's
// abseil (20220623) does not ship.
//
//   SERVELAB_RETURN_IF_ERROR(store.Put(x));
//   SERVELAB_ASSIGN_OR_RETURN(Experiment e, store.Get(id));
#ifndef SERVELAB_COMMON_STATUS_MACROS_H_
#define SERVELAB_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SERVELAB_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::absl::Status servelab_status_ = (expr);            \
    if (!servelab_status_.ok()) return servelab_status_; \
  } while (0)

#define SERVELAB_STATUS_CONCAT_INNER_(a, b) a##b
#define SERVELAB_STATUS_CONCAT_(a, b) SERVELAB_STATUS_CONCAT_INNER_(a, b)

#define SERVELAB_ASSIGN_OR_RETURN(lhs, expr) \
  SERVELAB_ASSIGN_OR_RETURN_IMPL_(SERVELAB_STATUS_CONCAT_(servelab_or_, __LINE__), lhs, expr)

#define SERVELAB_ASSIGN_OR_RETURN_IMPL_(var, lhs, expr) \
  auto var = (expr);                                    \
  if (!var.ok()) return std::move(var).status();        \
  lhs = std::move(var).value()

#endif  // SERVELAB_COMMON_STATUS_MACROS_H_

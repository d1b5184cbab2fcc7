// The steps every new experiment goes through before it is stored, shared
// by Submit and Import (docs/design.md §4): the delta applied to a spec, and
// one stage row per planned stage.
#ifndef SERVELAB_DAEMON_CORE_EXPERIMENT_DRAFT_H_
#define SERVELAB_DAEMON_CORE_EXPERIMENT_DRAFT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::core {

// Applies `unset` then `set`, each error prefixed with the request field
// and entry at fault.
absl::Status ApplyDelta(v1::ExperimentSpec& spec,
                        const google::protobuf::RepeatedPtrField<std::string>& unset,
                        const google::protobuf::RepeatedPtrField<std::string>& set);

// One PENDING row per planned stage; freeze, done by the submit itself,
// SUCCEEDED from receipt to freezing.
void AddStageRows(v1::Experiment& experiment, absl::Time received, absl::Time frozen_at);

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_EXPERIMENT_DRAFT_H_

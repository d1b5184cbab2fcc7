// The defaults of every spec field that has one, applied once at freeze time
// so that the frozen spec states every value explicitly and no stage keeps a
// default of its own.
#ifndef SERVELAB_DAEMON_CORE_SPEC_DEFAULTS_H_
#define SERVELAB_DAEMON_CORE_SPEC_DEFAULTS_H_

#include "servelab/v1/spec.pb.h"

namespace servelab::core::spec {

// Fills fields left at zero / unset; never overrides a value given.
void ApplyDefaults(v1::ExperimentSpec& spec);

}  // namespace servelab::core::spec

#endif  // SERVELAB_DAEMON_CORE_SPEC_DEFAULTS_H_

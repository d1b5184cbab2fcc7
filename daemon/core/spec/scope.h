// What a spec change invalidates, read from the `(servelab.v1.scope)` field
// option by reflection — the .proto is the only table.
//
// A leaf's effective scope is its own option, or for SCOPE_OF_HOLDER the
// effective scope of the field holding its message (so `deployment.decode.model`
// is DECODE and `deployment.prefill.model` is PREFILL). Message fields marked
// SCOPE_OF_FIELDS defer to each of their fields.
#ifndef SERVELAB_DAEMON_CORE_SPEC_SCOPE_H_
#define SERVELAB_DAEMON_CORE_SPEC_SCOPE_H_

#include <set>
#include <string>
#include <vector>

#include "google/protobuf/message.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/scope.pb.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::core::spec {

// The option as written on the field (SCOPE_UNSPECIFIED when missing).
v1::Scope DeclaredScope(const google::protobuf::FieldDescriptor& field);

// `holder` is the effective scope of the field holding this field's message
// (SCOPE_UNSPECIFIED at the top level).
v1::Scope EffectiveScope(const google::protobuf::FieldDescriptor& field, v1::Scope holder);

// Every changed leaf between two specs, with old and new canonical values
// and effective scope. Lists compare as a whole, maps key by key.
std::vector<v1::FieldChange> DiffSpecs(const google::protobuf::Message& before,
                                       const google::protobuf::Message& after);

// SHA-256 of the canonical sub-spec of the fields whose effective scope is
// in `scopes`: equal fingerprints mean no field of those scopes differs.
std::string ScopeFingerprint(const google::protobuf::Message& spec,
                             const std::set<v1::Scope>& scopes);

// Per side and per preparation step (engine changes count for every side).
v1::Fingerprints ComputeFingerprints(const v1::ExperimentSpec& spec);

// "DECODE" for SCOPE_DECODE.
std::string ScopeName(v1::Scope scope);

}  // namespace servelab::core::spec

#endif  // SERVELAB_DAEMON_CORE_SPEC_SCOPE_H_

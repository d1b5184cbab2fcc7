// `servelab release`: gives the accelerators back (docs/design.md §6 "Release").
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/cli_io.h"
#include "client/exit_codes.h"
#include "client/output.h"
#include "common/labels.h"

namespace servelab::client {

int ReleaseCommand(const CliIo& io, const std::string& side_name) {
  v1::ReleaseDeploymentRequest request;
  const std::string side = absl::AsciiStrToLower(side_name);
  if (side == "prefill") {
    request.set_side(v1::SIDE_PREFILL);
  } else if (side == "decode") {
    request.set_side(v1::SIDE_DECODE);
  } else if (side == "router") {
    request.set_side(v1::SIDE_ROUTER);
  } else if (side != "all" && !side.empty()) {
    return FailUsage(io, absl::StrCat("unknown --side \"", side_name,
                                      "\": one of prefill, decode, router, all"));
  }
  v1::ReleaseDeploymentResponse response;
  auto context = UnaryContext();
  grpc::Status status = io.stub.ReleaseDeployment(context.get(), request, &response);
  if (!status.ok()) return FailRpc(io, status);
  if (io.json) {
    io.out << ToJson(response, /*pretty=*/true) << "\n";
    return kExitOk;
  }
  if (response.released().empty()) io.out << "nothing to release: no instance of that side runs\n";
  for (const v1::ServingInstance& instance : response.released()) {
    io.out << "released " << SideLabel(instance.side()) << " (" << InstancePlace(instance)
           << ", port " << instance.port() << ", launched by " << instance.experiment_id() << ")\n";
  }
  for (const std::string& allocation : response.ended_allocations()) {
    io.out << "ended " << allocation << " (the daemon had created it)\n";
  }
  io.out << FormatHotDeployment(response.hot_deployment());
  return kExitOk;
}

}  // namespace servelab::client

// What every `servelab` command needs to talk to the daemon and print: the
// stub, the two streams, the output format and the address (for errors).
// Commands beyond the core set (release, import, report) are free functions
// over a CliIo, each in its own file, so commands.cc stays the parser.
#ifndef SERVELAB_CLIENT_CLI_IO_H_
#define SERVELAB_CLIENT_CLI_IO_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "servelab/v1/service.grpc.pb.h"

namespace servelab::client {

struct CliIo {
  v1::ServeLab::Stub& stub;
  std::ostream& out;
  std::ostream& err;
  bool json = false;
  std::string address;
};

// A context whose deadline keeps a wedged daemon from hanging a script.
std::unique_ptr<grpc::ClientContext> UnaryContext();
// Prints `error: <CODE>: <message>` (explaining an unreachable daemon) and
// returns the exit code for the status.
int FailRpc(const CliIo& io, const grpc::Status& status);
// Prints `error: usage: <message>` and returns the usage exit code.
int FailUsage(const CliIo& io, const std::string& message);
// The current directory, "" when it cannot be read.
std::string CurrentDir();

// `servelab release [--side prefill|decode|router|all]`.
int ReleaseCommand(const CliIo& io, const std::string& side);

struct ImportArgs {
  std::string tool;       // vllm | aisbench
  std::string file;       // The tool's result file.
  std::string spec_file;  // Or base: the spec describing the measured run.
  std::string base;
  std::vector<std::string> set;
};
// `servelab import --tool T FILE (--spec FILE | --base ID) [--set ...]`.
int ImportCommand(const CliIo& io, const ImportArgs& args);
// `servelab report ID --html FILE`.
int ReportCommand(const CliIo& io, const std::string& id, const std::string& html_file);

}  // namespace servelab::client

#endif  // SERVELAB_CLIENT_CLI_IO_H_

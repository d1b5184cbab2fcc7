"""A minimal gRPC server-reflection client (grpc.reflection.v1alpha), for the tests.

Debian 12 has neither grpcio-reflection nor grpc_cli, so this speaks the
protocol directly with stubs generated from proto/grpc_reflection/v1alpha/
reflection.proto (CMake target servelab_python_stubs).

    reflection = ReflectionClient(grpc.insecure_channel("unix:/path/servelab.sock"))
    reflection.list_services()          # ["grpc.health.v1.Health", "servelab.v1.ServeLab", ...]
    files = reflection.file_containing_symbol("servelab.v1.SubmitExperimentRequest")
    # {"servelab/v1/service.proto": FileDescriptorProto, ...its dependencies}
"""

from google.protobuf import descriptor_pb2

from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc


class ReflectionError(Exception):
    def __init__(self, error_code, error_message):
        super().__init__(f"reflection error {error_code}: {error_message}")
        self.error_code = error_code
        self.error_message = error_message


class ReflectionClient:
    def __init__(self, channel, timeout=10):
        self._stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        self._timeout = timeout

    def ask(self, requests):
        """Sends the requests on one ServerReflectionInfo stream; returns the answers in order."""
        responses = self._stub.ServerReflectionInfo(iter(requests), timeout=self._timeout)
        return list(responses)

    def list_services(self):
        (response,) = self.ask([reflection_pb2.ServerReflectionRequest(list_services="")])
        self._raise_on_error(response)
        return [s.name for s in response.list_services_response.service]

    def file_containing_symbol(self, symbol):
        """The file declaring `symbol` and its transitive dependencies, by file name."""
        (response,) = self.ask(
            [reflection_pb2.ServerReflectionRequest(file_containing_symbol=symbol)])
        self._raise_on_error(response)
        return parse_files(response)

    @staticmethod
    def _raise_on_error(response):
        if response.HasField("error_response"):
            raise ReflectionError(response.error_response.error_code,
                                  response.error_response.error_message)


def parse_files(response):
    files = {}
    for serialized in response.file_descriptor_response.file_descriptor_proto:
        file = descriptor_pb2.FileDescriptorProto.FromString(serialized)
        files[file.name] = file
    return files

"""servelabd's gRPC server reflection, asked by a real reflection client.

One daemon on its default address (unix:STATE_DIR/servelab.sock) serves the
module. ReflectionTest lists its services and describes the API from what
reflection returns alone; DefaultAddressTest reaches the same daemon through
the client's default address rules.
"""

import os
import unittest
from unittest import mock

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

import servelab
from reflection_client import ReflectionClient, ReflectionError, parse_files
from grpc_reflection.v1alpha import reflection_pb2
from servelab.v1 import service_pb2
from servelabd_process import ServelabdProcess

FieldProto = descriptor_pb2.FieldDescriptorProto
daemon = None


def setUpModule():
    global daemon
    daemon = ServelabdProcess()
    daemon.start()
    unittest.addModuleCleanup(daemon.stop_and_check)


def message_class(pool, full_name):
    descriptor = pool.FindMessageTypeByName(full_name)
    if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


class ReflectionTest(unittest.TestCase):
    def setUp(self):
        self.channel = grpc.insecure_channel(daemon.address)
        self.reflection = ReflectionClient(self.channel)

    def tearDown(self):
        self.channel.close()

    def test_lists_the_services(self):
        self.assertEqual(daemon.address, f"unix:{daemon.state_dir}/servelab.sock")
        services = self.reflection.list_services()
        self.assertIn("servelab.v1.ServeLab", services)
        self.assertIn("grpc.reflection.v1alpha.ServerReflection", services)
        self.assertIn("grpc.health.v1.Health", services)

    def test_describes_the_service(self):
        files = self.reflection.file_containing_symbol("servelab.v1.ServeLab")
        service_file = files["servelab/v1/service.proto"]
        (service,) = [s for s in service_file.service if s.name == "ServeLab"]
        methods = {m.name: m for m in service.method}
        self.assertEqual(set(methods), {
            "SubmitExperiment", "GetExperiment", "ListExperiments", "WatchExperiment",
            "ResumeExperiment", "CancelExperiment", "GetSummary", "ListRequestRecords",
            "ImportExperiment", "ReleaseDeployment"})
        watch = methods["WatchExperiment"]
        self.assertTrue(watch.server_streaming)
        self.assertFalse(watch.client_streaming)
        self.assertEqual(watch.output_type, ".servelab.v1.Experiment")
        self.assertEqual(methods["SubmitExperiment"].input_type,
                         ".servelab.v1.SubmitExperimentRequest")

    def test_describes_submit_experiment_request(self):
        files = self.reflection.file_containing_symbol("servelab.v1.SubmitExperimentRequest")
        service_file = files["servelab/v1/service.proto"]
        self.assertEqual(service_file.package, "servelab.v1")
        # Dependencies come along, so the file can be loaded on its own.
        for dependency in service_file.dependency:
            self.assertIn(dependency, files)
        (request,) = [m for m in service_file.message_type if m.name == "SubmitExperimentRequest"]
        fields = {f.name: f for f in request.field}
        base_id = fields["base_id"]
        self.assertEqual(base_id.number, 3)
        self.assertEqual(base_id.type, FieldProto.TYPE_STRING)
        self.assertEqual(request.oneof_decl[base_id.oneof_index].name, "source")
        self.assertEqual(fields["spec"].type_name, ".servelab.v1.ExperimentSpec")
        self.assertEqual(fields["set"].label, FieldProto.LABEL_REPEATED)
        self.assertEqual(fields["validate_only"].type, FieldProto.TYPE_BOOL)

        # A message built from the reflected schema alone is what the
        # generated stubs read.
        pool = descriptor_pool.DescriptorPool()
        added = set()

        def add(name):
            if name in added:
                return
            for dependency in files[name].dependency:
                add(dependency)
            pool.Add(files[name])
            added.add(name)

        add("servelab/v1/service.proto")
        reflected = message_class(pool, "servelab.v1.SubmitExperimentRequest")(
            base_id="exp-7", set=["workload.concurrency=8"], validate_only=True)
        decoded = service_pb2.SubmitExperimentRequest.FromString(reflected.SerializeToString())
        self.assertEqual(decoded.WhichOneof("source"), "base_id")
        self.assertEqual(decoded.base_id, "exp-7")
        self.assertEqual(list(decoded.set), ["workload.concurrency=8"])
        self.assertTrue(decoded.validate_only)

    def test_several_questions_on_one_stream(self):
        responses = self.reflection.ask([
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(
                file_containing_symbol="servelab.v1.SubmitExperimentRequest"),
        ])
        self.assertEqual(len(responses), 2)
        self.assertEqual(responses[0].original_request.list_services, "")
        self.assertTrue(responses[0].HasField("list_services_response"))
        self.assertEqual(responses[1].original_request.file_containing_symbol,
                         "servelab.v1.SubmitExperimentRequest")
        self.assertIn("servelab/v1/service.proto", parse_files(responses[1]))

    def test_unknown_symbol_is_not_found(self):
        with self.assertRaises(ReflectionError) as caught:
            self.reflection.file_containing_symbol("servelab.v1.NoSuchMessage")
        self.assertEqual(caught.exception.error_code, grpc.StatusCode.NOT_FOUND.value[0])


class DefaultAddressTest(unittest.TestCase):
    def test_state_dir_gives_the_unix_socket(self):
        with mock.patch.dict(os.environ, {"SERVELAB_STATE_DIR": daemon.state_dir}):
            os.environ.pop("SERVELAB_ADDR", None)
            with servelab.connect() as lab:
                self.assertEqual(lab.address, daemon.address)
                summary = lab.summary()
        self.assertTrue(summary.serving)
        self.assertEqual(summary.next_step.action, service_pb2.NextStep.SUBMIT_BASE)
        self.assertEqual(list(summary.queue), [])

    def test_servelab_addr_wins_over_state_dir(self):
        with mock.patch.dict(os.environ, {"SERVELAB_ADDR": daemon.address,
                                          "SERVELAB_STATE_DIR": "/nonexistent"}):
            with servelab.connect() as lab:
                self.assertEqual(lab.list_experiments(), [])


if __name__ == "__main__":
    unittest.main()

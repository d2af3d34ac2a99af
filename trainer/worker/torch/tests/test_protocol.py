# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The protocol module on the protobuf runtime this process runs (the Go test
TestProtocolOnEveryProtobufRuntime runs this file under each one): the message classes
built from worker.binpb parse the bytes Go marshals (testdata/prompt_attributes.binpb,
written by TestPromptFixtureIsWhatGoMarshals) with their map fields, serialize to the
same bytes, and the service binds through grpc's generic handlers."""

import os
import sys
import unittest

import google.protobuf
import grpc
from google.protobuf.internal import api_implementation

from espo_worker import prompt as promptlib
from espo_worker import protocol as pb
from espo_worker import server

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "prompt_attributes.binpb")


def attributed_prompt():
    """The Prompt the Go test's attributedPrompt builds."""
    return pb.Prompt(
        episode_id="ep-attrs", step_index=3, channel="hotel", stage=pb.STAGE_RECOMMEND,
        instruction="a quiet hotel near the river",
        elements=[pb.Element(id="e1", role="chip", text="4.5+", box=[0.1, 0.2, 0.3, 0.25],
                             attributes={"group": "rating", "selected": "true"}),
                  pb.Element(id="e2", role="button", text="Search", box=[0.5, 0.9, 0.7, 0.95])],
        history=[pb.Action(type="click", point=[0.2, 0.22], input_text="no input text", element_id="e0",
                           element_role="option", element_text="Riverside",
                           element_attributes={"group": "area", "index": "2"})],
        item=pb.Item(id="h7", title="Riverside Inn", attributes={"price": "120", "stars": "4"}))


def go_bytes():
    with open(FIXTURE, "rb") as f:
        return f.read()


class ProtocolTest(unittest.TestCase):
    def test_runs_the_requested_runtime(self):
        want = os.environ.get("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION")
        print("protobuf %s, implementation %s" % (google.protobuf.__version__, api_implementation.Type()),
              file=sys.stderr)
        if want:
            self.assertEqual(api_implementation.Type(), want)

    def test_map_fields_parse_from_go(self):
        got = pb.Prompt.FromString(go_bytes())
        self.assertEqual(dict(got.elements[0].attributes), {"group": "rating", "selected": "true"})
        self.assertEqual(dict(got.elements[1].attributes), {})
        self.assertEqual(dict(got.history[0].element_attributes), {"group": "area", "index": "2"})
        self.assertEqual(dict(got.item.attributes), {"price": "120", "stars": "4"})
        self.assertEqual(got, attributed_prompt())

    def test_map_fields_serialize_to_what_go_marshals(self):
        self.assertEqual(attributed_prompt().SerializeToString(deterministic=True), go_bytes())

    def test_rendered_prompt_holds_the_attributes(self):
        _, user = promptlib.render(pb.Prompt.FromString(go_bytes()))
        self.assertIn("Candidate item: Riverside Inn price=120 stars=4", user)
        self.assertIn('e1 chip "4.5+" [0.1,0.2,0.3,0.25] group=rating selected=true', user)
        self.assertIn('e2 button "Search" [0.5,0.9,0.7,0.95]\n', user)
        self.assertIn('1. click [0.2, 0.22] "no input text" on option "Riverside" group=area index=2', user)

    def test_enums_and_descriptor(self):
        self.assertEqual(pb.Stage.Name(pb.STAGE_POOL), "STAGE_POOL")
        self.assertEqual(pb.Stage.Value("STAGE_RECOMMEND"), pb.STAGE_RECOMMEND)
        self.assertEqual(pb.SERVICE.full_name, server.SERVICE)
        self.assertIs(type(pb.Prompt().item), pb.Item)

    def test_every_method_has_a_handler_with_its_message_classes(self):
        handlers = pb.method_handlers(server.Servicer(None))
        self.assertEqual(sorted(handlers), sorted(m.name for m in pb.SERVICE.methods))
        req = pb.ReleaseRequest()
        self.assertEqual(handlers["Release"].request_deserializer(req.SerializeToString()), req)
        resp = pb.StepResponse(grad_norm=1.5, steps=2)
        self.assertEqual(pb.StepResponse.FromString(handlers["Step"].response_serializer(resp)), resp)

    def test_a_servicer_without_every_method_is_refused(self):
        class Partial:
            def Info(self, req, context):
                return pb.InfoResponse()

        with self.assertRaisesRegex(TypeError, "Partial lacks the Worker methods Configure, Health"):
            pb.add_servicer(Partial(), grpc.server(None))


if __name__ == "__main__":
    unittest.main()

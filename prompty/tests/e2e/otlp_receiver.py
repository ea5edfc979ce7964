"""A small OTLP/HTTP trace receiver for the tests of prompty's OpenTelemetry exporter.

Usage: python otlp_receiver.py PORT

- POST /v1/traces: an ExportTraceServiceRequest in protobuf (Content-Type
  application/x-protobuf), decoded with the official definitions of PyPI's
  `opentelemetry-proto`; answers an empty ExportTraceServiceResponse.
- GET /spans: every span received so far, as JSON: a list of {trace_id, span_id,
  parent_span_id (hex), name, kind (INTERNAL, CLIENT, ...), attributes (typed values:
  arrays as lists), status {code (UNSET, OK, ERROR), message}, start, end (unix nanos),
  resource (its attributes), scope}.
- GET /raw: the received bodies, hex-encoded, and the request headers (names lowercased).
- GET /ready: 200 "ready".

Listens on 127.0.0.1 only.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

LOCK = threading.Lock()
SPANS = []
RAW = []


def any_value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attributes(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


def span_json(span, resource, scope):
    return {
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_span_id": span.parent_span_id.hex(),
        "name": span.name,
        "kind": Span.SpanKind.Name(span.kind).replace("SPAN_KIND_", ""),
        "attributes": attributes(span.attributes),
        "status": {
            "code": Status.StatusCode.Name(span.status.code).replace("STATUS_CODE_", ""),
            "message": span.status.message,
        },
        "start": span.start_time_unix_nano,
        "end": span.end_time_unix_nano,
        "flags": span.flags,
        "resource": resource,
        "scope": scope,
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def send(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/ready":
            self.send(200, b"ready", "text/plain")
        elif self.path == "/spans":
            with LOCK:
                body = json.dumps(SPANS).encode()
            self.send(200, body)
        elif self.path == "/raw":
            with LOCK:
                body = json.dumps(RAW).encode()
            self.send(200, body)
        else:
            self.send(404, b"not found", "text/plain")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path != "/v1/traces":
            self.send(404, b"not found", "text/plain")
            return
        if self.headers.get("Content-Type") != "application/x-protobuf":
            self.send(415, b"unsupported content type", "text/plain")
            return
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except Exception as e:  # a body that is not an ExportTraceServiceRequest
            self.send(400, str(e).encode(), "text/plain")
            return
        spans = []
        for rs in request.resource_spans:
            resource = attributes(rs.resource.attributes)
            for ss in rs.scope_spans:
                scope = {"name": ss.scope.name, "version": ss.scope.version}
                spans.extend(span_json(s, resource, scope) for s in ss.spans)
        with LOCK:
            SPANS.extend(spans)
            RAW.append({"body": body.hex(), "headers": {k.lower(): v for k, v in self.headers.items()}})
        self.send(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")

    def log_message(self, fmt, *args):
        sys.stderr.write("otlp-receiver: " + (fmt % args) + "\n")


def main():
    port = int(sys.argv[1])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()

"""Receives the traces `herald serve` exports over OTLP/HTTP and checks them.

A small OTLP/HTTP collector (`opentelemetry-proto` from PyPI decodes the protobuf) listens on a
free port; `herald emulate` runs the APNs emulator in a process of its own; `herald serve` runs
with OTEL_EXPORTER_OTLP_ENDPOINT pointing at the collector. One installation is registered
through the hub REST API and one notification is sent to its tag; once it is delivered the node
is stopped (SIGTERM: the exporter sends what it holds) and the spans are checked:

- the HTTP request's server span (named after the route, `/{hub}/messages`) is the parent of
  `notification.accept`;
- `notification.deliver` is in the same trace, a child of `notification.accept`;
- `delivery.page` is a child of the delivery, with the device count and outcome counts;
- a `push.send` span under the page carries the platform, the status and the outcome `Success`;
- the service is named `herald`;
- neither the device token nor the tag appears anywhere in what was exported;
- nor in the node's log, written at trace level, nor in its /metrics page, and neither does
  the hub's key.

With `--sigterm-mid-delivery` it checks a shutdown instead: the exporter holds its spans
(a 60-second batch delay), the emulator answers the first two pushes with 503 and a 3-second
Retry-After, and the node is sent SIGTERM while the delivery waits to retry. A stopping worker
ends the page it is sending, so the third push goes after SIGTERM; every span, the
`notification.deliver` that ends after SIGTERM included, must still be exported: the exporter
stops after the hubs have ended their deliveries, and sends what it holds.

Usage: otlp_traces.py --herald PATH [--sigterm-mid-delivery]. Prints a summary and exits 0
when every check held.
"""
import argparse
import gzip
import http.client
import http.server
import json
import os
import shutil
import ssl
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import heraldprocesses as hp  # noqa: E402

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2  # noqa: E402


class Collector:
    """An OTLP/HTTP receiver of traces (protobuf, or JSON when sent so), on 127.0.0.1."""

    def __init__(self):
        self.bodies = []
        self.spans = []
        self.resources = []
        self.lock = threading.Lock()
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = trace_service_pb2.ExportTraceServiceRequest()
                if "json" in (self.headers.get("Content-Type") or ""):
                    from google.protobuf import json_format
                    json_format.Parse(body, request)
                else:
                    request.ParseFromString(body)
                with collector.lock:
                    collector.bodies.append(body)
                    for resource_spans in request.resource_spans:
                        collector.resources.append(resource_spans.resource)
                        for scope_spans in resource_spans.scope_spans:
                            collector.spans.extend(scope_spans.spans)
                response = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(response)))
                self.end_headers()
                self.wfile.write(response)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


def stop_all(node, emulator, collector):
    """Ends the processes of a run, whatever happened: the node (killed if still running), the
    emulator and the collector."""
    if node.process and node.process.poll() is None:
        node.stop("kill")
    emulator.stop()
    collector.stop()

def attributes(span):
    values = {}
    for attribute in span.attributes:
        value = attribute.value
        kind = value.WhichOneof("value")
        values[attribute.key] = (list(v.string_value for v in value.array_value.values)
                                 if kind == "array_value" else getattr(value, kind) if kind else None)
    return values


def check(condition, message, spans):
    if not condition:
        listing = "\n".join(
            f"  {s.name} kind={s.kind} id={s.span_id.hex()} parent={s.parent_span_id.hex()} trace={s.trace_id.hex()} "
            f"{json.dumps(attributes(s), default=str)}" for s in spans)
        sys.exit(f"FAILED: {message}\nspans:\n{listing}")


def inject_fault(emulator, fault):
    """Queues `fault` ({"status", "reason", "retryAfter", "count"}) on the APNs emulator."""
    context = ssl.create_default_context(cafile=emulator.settings["HERALD_APNS_CA_FILE"])
    connection = http.client.HTTPSConnection(emulator.service.hostname, emulator.service.port, context=context, timeout=10)
    connection.request("POST", "/_emulator/faults", body=json.dumps(fault), headers={"Content-Type": "application/json"})
    status = connection.getresponse().status
    connection.close()
    if status != 200:
        sys.exit(f"the emulator answered {status} to a fault")


def sigterm_mid_delivery(herald):
    directory = tempfile.mkdtemp(prefix="herald-otlp-term-")
    collector = Collector()
    emulator = hp.Emulator(herald, directory, "apns")
    node = hp.Node(herald, directory, emulator.settings, hp.free_port(), environment={
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.port}",
        # Nothing is exported before the shutdown: what arrives was sent when the node stopped.
        "OTEL_BSP_SCHEDULE_DELAY": "60000",
    })
    try:
        node.start()
        key_name, key = node.full_key("app")
        api = hp.HubAPI(node.port, "app", key_name, key)
        installation = str(uuid.uuid4())
        status, _, data = api.request(
            "PUT", f"/installations/{installation}",
            body=json.dumps({"installationId": installation, "platform": "apns", "pushChannel": os.urandom(32).hex()}),
            headers={"Content-Type": "application/json"})
        if status != 200:
            sys.exit(f"the installation answered {status}: {data[:300]}")
        inject_fault(emulator, {"status": 503, "reason": "ServiceUnavailable", "retryAfter": 3, "count": 2})
        notification = hp.send(api, "apns")
        hp.wait_for("the delivery to start", lambda: hp.state(api, notification) == "Processing", timeout=60)
        time.sleep(1)  # the push has had its 503; the delivery waits 3 s to retry
        stopped_in = node.stop("term", timeout=60)
        exported_before_stop = len(collector.spans)
    finally:
        stop_all(node, emulator, collector)

    spans = collector.spans
    check(stopped_in < 30, f"the node stopped once the page was sent (in {stopped_in:.1f} s)", spans)
    accepts = [s for s in spans if s.name == "notification.accept"]
    check(len(accepts) == 1, "the notification.accept span was exported at the shutdown", spans)
    delivers = [s for s in spans if s.name == "notification.deliver" and s.trace_id == accepts[0].trace_id]
    check(len(delivers) == 1, "the notification.deliver span of the delivery running at SIGTERM was exported", spans)
    check(delivers[0].parent_span_id == accepts[0].span_id, "notification.deliver is a child of notification.accept", spans)
    sends = [s for s in spans if s.name == "push.send" and s.trace_id == accepts[0].trace_id]
    statuses = sorted(attributes(s).get("http.response.status_code") for s in sends)
    check(statuses == [200, 503, 503], f"the three push.send spans were exported, the last one sent after SIGTERM (got {statuses})", spans)
    check(attributes(delivers[0]).get("herald.state") is not None, "notification.deliver ended with a state", spans)
    shutil.rmtree(directory, ignore_errors=True)
    print(f"shutdown checked: SIGTERM mid-delivery, stopped in {stopped_in:.1f} s, {exported_before_stop} spans exported at the stop, "
          f"notification.deliver ({attributes(delivers[0]).get('herald.state')}) and the push sent after SIGTERM among them")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--herald", required=True)
    parser.add_argument("--sigterm-mid-delivery", action="store_true")
    options = parser.parse_args()
    if options.sigterm_mid_delivery:
        sigterm_mid_delivery(options.herald)
        return

    directory = tempfile.mkdtemp(prefix="herald-otlp-")
    collector = Collector()
    emulator = hp.Emulator(options.herald, directory, "apns")
    node = hp.Node(options.herald, directory, emulator.settings, hp.free_port(), environment={
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.port}",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        # Everything Herald and its libraries log, searched for secrets below.
        "HERALD_LOG_LEVEL": "trace",
    })
    # The defaults are under test: the service's name, and the endpoint's /v1/traces.
    for variable in ("OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        node.env.pop(variable, None)
    try:
        node.start()
        key_name, key = node.full_key("app")
        api = hp.HubAPI(node.port, "app", key_name, key)
        token = os.urandom(32).hex()
        tag = "trace-secret-" + os.urandom(6).hex()
        installation = str(uuid.uuid4())
        status, _, data = api.request(
            "PUT", f"/installations/{installation}",
            body=json.dumps({"installationId": installation, "platform": "apns", "pushChannel": token, "tags": [tag]}),
            headers={"Content-Type": "application/json"})
        if status != 200:
            sys.exit(f"the installation answered {status}: {data[:300]}")
        notification = hp.send(api, "apns", tag=tag)
        final = hp.wait_for("the notification to be delivered", lambda: hp.finished_state(api, notification), timeout=60)
        if final != "Completed":
            sys.exit(f"the notification ended {final}")
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{node.port}/metrics", timeout=10).read()
        node.stop("term")
    finally:
        stop_all(node, emulator, collector)

    spans = collector.spans
    by_id = {s.span_id: s for s in spans}

    def named(name):
        return [s for s in spans if s.name == name]

    accepts = named("notification.accept")
    check(len(accepts) == 1, "one notification.accept span", spans)
    accept = accepts[0]
    request = by_id.get(accept.parent_span_id)
    check(request is not None, "notification.accept has a parent span that was exported", spans)
    check(request.name == "/{hub}/messages" and request.kind == 2,  # SPAN_KIND_SERVER
          "the parent of notification.accept is the HTTP server span of the route /{hub}/messages", spans)
    request_attributes = attributes(request)
    check(request_attributes.get("http.response.status_code") == 201 and request_attributes.get("http.request.method") == "POST",
          "the HTTP span has the method and the status", spans)
    check(not any(key.startswith("url.") or "header" in key for key in request_attributes),
          "the HTTP span has no path, query string or header", spans)
    check(attributes(accept).get("herald.platforms") == ["apns"], "notification.accept names the platforms", spans)

    delivers = [s for s in named("notification.deliver") if s.trace_id == accept.trace_id]
    check(len(delivers) == 1, "one notification.deliver span in the accepting request's trace", spans)
    deliver = delivers[0]
    check(deliver.parent_span_id == accept.span_id, "notification.deliver is a child of notification.accept", spans)
    check(attributes(deliver).get("herald.state") == "Completed", "notification.deliver records the final state", spans)

    pages = [s for s in named("delivery.page") if s.parent_span_id == deliver.span_id]
    check(len(pages) == 1, "one delivery.page span under notification.deliver", spans)
    page_attributes = attributes(pages[0])
    check(page_attributes.get("herald.devices") == 1 and page_attributes.get("herald.outcome.Success") == 1,
          "delivery.page counts its device and its outcome", spans)

    sends = [s for s in named("push.send") if s.parent_span_id == pages[0].span_id]
    check(len(sends) == 1, "one push.send span under delivery.page", spans)
    send_attributes = attributes(sends[0])
    check(send_attributes.get("herald.platform") == "apns" and send_attributes.get("herald.outcome") == "Success"
          and send_attributes.get("http.response.status_code") == 200 and send_attributes.get("herald.attempt") == 1,
          "push.send carries the platform, status, outcome and attempt", spans)

    names = {a.value.string_value for r in collector.resources for a in r.attributes if a.key == "service.name"}
    check(names == {"herald"}, f"the service is named herald (got {names})", spans)

    exported = b"".join(collector.bodies)
    for secret, what in ((token, "device token"), (tag, "tag")):
        check(secret.encode() not in exported and secret.upper().encode() not in exported,
              f"the {what} appears in the exported spans", spans)
    node.log.flush()
    with open(node.log.name, "rb") as log:
        logged = log.read()
    check(len(logged.splitlines()) > 50, "the node logged at trace level", spans)
    for secret, what in ((token, "device token"), (tag, "tag"), (key, "hub key")):
        for place, text in (("log", logged), ("/metrics page", metrics)):
            check(secret.encode() not in text and secret.upper().encode() not in text, f"the {what} appears in the {place}", spans)

    shutil.rmtree(directory, ignore_errors=True)
    print(f"trace checked: {len(spans)} spans in {len(collector.bodies)} exports; "
          "HTTP request -> notification.accept -> notification.deliver -> delivery.page -> push.send; "
          "no device token, tag or key exported, logged at trace level or on /metrics")


if __name__ == "__main__":
    main()

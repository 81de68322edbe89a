"""Shared helpers of the hub interop scripts (hub_unofficial_client.py, hub_rest_sample.py).

Each script drives an independent client of the hub REST API, installed from PyPI, against a
live Herald. It is configured by environment variables, prints one line per check ("ok ...")
and stops at the first failure with "FAIL ..." on stderr and a non-zero exit code.

Common variables:
  HERALD_HUB_CONNECTION_STRING  a connection string of the hub (a rule with Listen, Send, Manage)
  HERALD_HUB_NAME               the hub's name
  HERALD_CA_FILE                the PEM of the CA that issued Herald's TLS certificate; exported
                                as REQUESTS_CA_BUNDLE (requests) and SSL_CERT_FILE (httpx)
  HERALD_RESULTS_FILE           optional: where to write a JSON object of what was sent, for the
                                caller to check on the devices
"""

import json
import os
import sys
import time
import xml.etree.ElementTree as ElementTree


class CheckFailed(Exception):
    pass


def ok(name):
    print("ok   %s" % name, flush=True)


def fail(name, detail):
    print("FAIL %s: %s" % (name, detail), file=sys.stderr, flush=True)
    sys.exit(1)


def expect(name, condition, detail=""):
    """Prints `ok name` when `condition` holds; stops the script otherwise."""
    if not condition:
        fail(name, detail or "the condition does not hold")
    ok(name)


def run_checks(checks):
    """Runs `checks()` and turns any exception into a clear failure (exit 1)."""
    try:
        checks()
    except SystemExit:
        raise
    except CheckFailed as error:
        fail("check", str(error))
    except Exception as error:  # noqa: BLE001 - any error of a client is a failed check
        fail("unexpected error", "%s: %s" % (type(error).__name__, error))


def env(name, default=None):
    value = os.environ.get(name, default)
    if value is None or value == "":
        fail("configuration", "the environment variable %s is required" % name)
    return value


def trust_herald_ca():
    """Makes the unmodified clients trust Herald's CA: requests reads REQUESTS_CA_BUNDLE and
    httpx (0.28) reads SSL_CERT_FILE when its client is created."""
    ca = os.environ.get("HERALD_CA_FILE")
    if not ca:
        return
    if not os.path.isfile(ca):
        fail("configuration", "HERALD_CA_FILE names no file: %s" % ca)
    os.environ["REQUESTS_CA_BUNDLE"] = ca
    os.environ["SSL_CERT_FILE"] = ca


def write_results(results):
    path = os.environ.get("HERALD_RESULTS_FILE")
    if path:
        with open(path, "w") as f:
            json.dump(results, f, indent=2, sort_keys=True)


def with_wrong_key(connection_string):
    """The connection string with another SharedAccessKey (same length, different bytes)."""
    parts = []
    for part in connection_string.split(";"):
        if part.startswith("SharedAccessKey="):
            key = part[len("SharedAccessKey="):]
            wrong = "".join("B" if c == "A" else "A" for c in key[:8]) + key[8:]
            part = "SharedAccessKey=" + wrong
        parts.append(part)
    return ";".join(parts)


# XML: elements by local name, whatever their namespace prefix.


def local_name(element):
    return element.tag.rsplit("}", 1)[-1]


def parse_xml(text, what):
    try:
        return ElementTree.fromstring(text)
    except ElementTree.ParseError as error:
        raise CheckFailed("%s is not XML (%s): %r" % (what, error, text[:300]))


def child(element, name):
    for item in element:
        if local_name(item) == name:
            return item
    return None


def children(element, name):
    return [item for item in element if local_name(item) == name]


def text(element, name):
    found = child(element, name)
    return None if found is None else (found.text or "")


def outcome_counts(details, counts_element):
    """{outcome name: count} of `<XxxOutcomeCounts>` in a NotificationDetails document."""
    counts = child(details, counts_element)
    if counts is None:
        return {}
    return {text(outcome, "Name"): int(text(outcome, "Count")) for outcome in children(counts, "Outcome")}


def poll(what, probe, done, timeout=30.0, interval=0.1):
    """Calls `probe()` until `done(value)`; returns the last value. Fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise CheckFailed("%s: still not done after %.0f s; last answer: %r" % (what, timeout, value))
        time.sleep(interval)

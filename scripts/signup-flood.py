#!/usr/bin/env python3
"""What a sign-up flood costs the other callers of a node: the latency of an unrelated hub API
`GET` (a registration listing, signed with the hub's key) while idle, then while 200 sign-ups
arrive from one client, then while 200 arrive from 50 clients (127.0.0.2 to 127.0.0.51, each a
client of its own to the node). Prints the answers the sign-ups got and the `GET`'s median and
95th percentile in each phase, and the ratios against the idle phase.

    scripts/signup-flood.py [--herald .build/release/herald] [--signups 200] [--clients 50]

Runs `herald serve` on SQLite in a temporary directory, with its built-in emulators, and
Python's standard library only. Every request goes to 127.0.0.0/8.
"""
import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from heraldprocesses import HubAPI, Node, free_port, wait_for  # noqa: E402


def sign_up(port, source):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120, source_address=(source, 0))
    body = json.dumps({"username": "u" + uuid.uuid4().hex[:12], "password": "flood-password-123"})
    connection.request("POST", "/api/accounts", body=body, headers={"Content-Type": "application/json"})
    status = connection.getresponse().status
    connection.close()
    return status


def flood(port, signups, sources, threads=20):
    """`signups` sign-ups spread over `sources`, `threads` at a time; the count of each status."""
    statuses, lock, queue = {}, threading.Lock(), list(range(signups))

    def work():
        while True:
            with lock:
                if not queue:
                    return
                n = queue.pop()
            try:
                status = sign_up(port, sources[n % len(sources)])
            except OSError as error:
                status = type(error).__name__
            with lock:
                statuses[status] = statuses.get(status, 0) + 1

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    return workers, statuses


def timed_gets(api, until, at_least=20):
    """Lists registrations again and again until `until()` says stop (and `at_least` times);
    the latencies in milliseconds."""
    latencies = []
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=120)
    while len(latencies) < at_least or not until():
        started = time.monotonic()
        status, _, _ = api.request("GET", "/registrations?$top=10", connection=connection)
        latencies.append((time.monotonic() - started) * 1000)
        if status != 200:
            sys.exit(f"the hub API answered {status}")
    connection.close()
    return latencies


def summary(latencies):
    ordered = sorted(latencies)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--herald", default=".build/debug/herald")
    parser.add_argument("--signups", type=int, default=200)
    parser.add_argument("--clients", type=int, default=50)
    arguments = parser.parse_args()

    directory = tempfile.mkdtemp(prefix="herald-flood-")
    node = Node(arguments.herald, directory, {}, free_port(), name="node")
    node.start()
    try:
        node.herald_command("hub", "create", "flood")
        key_name, key = node.full_key("flood")
        api = HubAPI(node.port, "flood", key_name, key)
        wait_for("the hub API", lambda: api.request("GET", "/registrations")[0] == 200)
        idle = timed_gets(api, lambda: True, at_least=100)
        rows = [("idle", None, idle)]
        for label, sources in [("one client", ["127.0.0.1"]),
                               (f"{arguments.clients} clients", [f"127.0.0.{2 + i}" for i in range(arguments.clients)])]:
            workers, statuses = flood(node.port, arguments.signups, sources)
            during = timed_gets(api, lambda: not any(worker.is_alive() for worker in workers))
            for worker in workers:
                worker.join()
            rows.append((f"{arguments.signups} sign-ups from {label}", statuses, during))
            time.sleep(2)
        idle_median, _ = summary(idle)
        print(f"hub API GET while sign-ups arrive (herald {arguments.herald}, {os.cpu_count()} cores):")
        for label, statuses, latencies in rows:
            median, p95 = summary(latencies)
            answers = "" if statuses is None else "  sign-ups answered " + ", ".join(
                f"{count}x {status}" for status, count in sorted(statuses.items(), key=lambda item: str(item[0])))
            print(f"  {label:32} median {median:7.1f} ms ({median / idle_median:5.1f}x idle)  p95 {p95:7.1f} ms"
                  f"  ({len(latencies)} GETs){answers}")
    finally:
        node.stop("term")


if __name__ == "__main__":
    main()

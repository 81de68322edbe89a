#!/usr/bin/env python3
"""Two Herald nodes on one PostgreSQL database receiving the same send under one Idempotency-Key at once.

Creates a database of its own on the server of --database-url (dropped at the end), starts
`herald emulate` and two `herald serve` processes, registers --rounds groups of --devices
FCM devices (each group its own tag), then for each group sends the same request with the
same `Idempotency-Key` to both nodes at the same moment (a barrier releases both threads):

- both answers must be 201 with the same Location (path), exactly one of them marked
  `Idempotent-Replayed: true`;
- the hub must hold one notification under the key (checked in the database);
- once every send has finished, each device must have been reached exactly once.

Then one send goes to each node under one key with different bodies: one is accepted, the
other is a 422 naming the key.

Prints what it saw and exits 1 if a guarantee did not hold.

    export HERALD_TEST_DATABASE_URL=$(scripts/postgres-test-server start)
    scripts/idempotency-cluster-test.py --herald .build/debug/herald --database-url "$HERALD_TEST_DATABASE_URL"

Python's standard library and `psql`.
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import urllib.parse

from heraldprocesses import Emulator, HubAPI, Node, finished_state, free_port, own_database, psql, seed, start_sharing_keys, stop_all, verdict, wait_for, require_database

BODY = {"message": {"notification": {"title": "once", "body": "only once"}}}


def send_both(apis, tag, key, bodies):
    """Sends `bodies[i]` to `apis[i]` under `key`, all released at once; the answers."""
    barrier = threading.Barrier(len(apis))
    answers = [None] * len(apis)

    def work(i):
        headers = {"Content-Type": "application/json", "ServiceBusNotification-Format": "fcmv1",
                   "ServiceBusNotification-Tags": tag, "Idempotency-Key": key}
        body = json.dumps(bodies[i])
        barrier.wait()
        answers[i] = apis[i].request("POST", "/messages", body=body, headers=headers)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(apis))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/debug/herald")
    parser.add_argument("--database-url", default=os.environ.get("HERALD_TEST_DATABASE_URL"))
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--devices", type=int, default=20, help="devices per round")
    arguments = parser.parse_args()
    require_database(arguments)
    with own_database(arguments.database_url, "herald_idempotency") as database_url:
        return run(arguments, database_url)


def run(arguments, database_url):
    directory = tempfile.mkdtemp(prefix="herald-idempotency-")
    emulator = Emulator(arguments.herald, directory, "fcm")
    hub = "keys"
    nodes = [Node(arguments.herald, directory, emulator.settings, free_port(), name=f"node{i + 1}", database_url=database_url)
             for i in range(2)]
    failures = []
    try:
        start_sharing_keys(nodes)
        nodes[0].herald_command("hub", "create", hub)
        key_name, key = nodes[0].full_key(hub)
        apis = [HubAPI(node.port, hub, key_name, key) for node in nodes]
        for round in range(arguments.rounds):
            seed(apis, arguments.devices, "fcm", tag=f"round{round}")
        print(f"1. {arguments.rounds} sends, each to both nodes at once under one key, "
              f"to {arguments.devices} devices each", flush=True)
        notifications = []
        for round in range(arguments.rounds):
            key_text = f"cluster-{round}-{os.getpid()}"
            answers = send_both(apis, f"round{round}", key_text, [BODY, BODY])
            statuses = [status for status, _, _ in answers]
            # Each node names itself in the Location: the notification is its path.
            locations = {urllib.parse.urlsplit(headers.get("Location", "")).path for _, headers, _ in answers}
            replayed = sorted(headers.get("Idempotent-Replayed", "-") for _, headers, _ in answers)
            stored = psql(database_url, f"SELECT count(*) FROM herald.notifications WHERE hub = '{hub}' "
                                        f"AND idempotency_key = '{key_text}'")
            if statuses != [201, 201] or len(locations) != 1 or replayed != ["-", "true"] or stored != "1":
                failures.append(f"round {round}: statuses {statuses}, {len(locations)} locations, replayed {replayed}, "
                                f"{stored} notifications under the key")
            notifications.append(locations.pop().rsplit("/", 1)[-1])
        for notification in notifications:
            wait_for("the sends to finish", lambda: finished_state(apis[0], notification), timeout=300, interval=0.05)
        stats = emulator.stats()
        total = arguments.rounds * arguments.devices
        print(f"   {stats['devices']} of {total} devices reached, {stats['devicesReachedMoreThanOnce']} more than once, "
              f"{stats['accepted']} sends accepted by the push service", flush=True)
        if stats["devices"] != total or stats["devicesReachedMoreThanOnce"] != 0 or stats["accepted"] != total:
            failures.append("step 1: not every device was reached exactly once")

        print("2. one key, two different bodies, one to each node at once", flush=True)
        other = {"message": {"notification": {"title": "other", "body": "another request"}}}
        answers = send_both(apis, "round0", f"conflict-{os.getpid()}", [BODY, other])
        statuses = sorted(status for status, _, _ in answers)
        refusal = next((data for status, _, data in answers if status == 422), b"")
        print(f"   statuses {statuses}", flush=True)
        if statuses != [201, 422] or f"conflict-{os.getpid()}".encode() not in refusal:
            failures.append(f"step 2: statuses {statuses}, refusal {refusal[:200]!r}")
    finally:
        stop_all(nodes, emulator)
    return verdict(failures, directory)


if __name__ == "__main__":
    sys.exit(main())

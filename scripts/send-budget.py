#!/usr/bin/env python3
"""Whether a push credential's send budget holds, on one node or several.

Runs `herald emulate` in a process of its own (its counts and its clock are the evidence),
--nodes `herald serve` processes (more than one needs --database-url: they share a PostgreSQL
database of their own, created on that server and dropped at the end), registers --devices
installations (FCM by default; --platform apns), sets the hub's budget for that platform's
credential with `herald hub set-credentials app --rate-limit PLATFORM=RATE`, sends one
broadcast and reads, from the emulator, how fast it was accepted. It exits 1 when the
accepted rate was over the budget by more than --tolerance (the first second may go at once:
a budget holds one second's worth), under --min-share of it, or when a device was missed.

    swift build -c release
    scripts/send-budget.py --herald .build/release/herald --devices 1500 --rate 3000/min
    scripts/send-budget.py --nodes 2 --database-url postgres://herald@127.0.0.1/postgres

Python's standard library only.
"""
import argparse
import os
import sys
import tempfile
import time

from heraldprocesses import (Emulator, HubAPI, Node, finished_state, free_port, own_database, seed, send, start_sharing_keys,
                             stop_all, verdict, wait_for)


def per_minute(text):
    count, _, unit = text.partition("/")
    return int(count) * {"": 1, "min": 1, "s": 60, "h": 1 / 60}[unit]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/release/herald")
    parser.add_argument("--devices", type=int, default=1500)
    parser.add_argument("--rate", default="3000/min", help="the budget, as --rate-limit takes it")
    parser.add_argument("--platform", choices=["fcm", "apns"], default="fcm")
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--database-url", default=os.environ.get("HERALD_TEST_DATABASE_URL"))
    parser.add_argument("--tolerance", type=float, default=0.1, help="how far over the budget the rate may be (0.1: 10 %%)")
    parser.add_argument("--min-share", type=float, default=0.0,
                        help="the least share of the budget the rate must reach (with several nodes, 0.6 shows that every "
                             "node sent its share: one node alone gets only its own)")
    arguments = parser.parse_args()
    if arguments.nodes > 1 and not arguments.database_url:
        sys.exit("several nodes share a database: give --database-url (or set HERALD_TEST_DATABASE_URL)")
    herald = os.path.abspath(arguments.herald)
    directory = tempfile.mkdtemp(prefix="herald-send-budget-")
    if arguments.nodes > 1:
        with own_database(arguments.database_url, "herald_budget") as database_url:
            return run(arguments, herald, directory, database_url)
    return run(arguments, herald, directory, None)


def run(arguments, herald, directory, database_url):
    budget = per_minute(arguments.rate) / 60
    emulator = Emulator(herald, directory, arguments.platform)
    nodes = [Node(herald, directory, emulator.settings, free_port(), name=f"node{i + 1}", database_url=database_url,
                  # Partitions small enough that every node has a share of the broadcast to send.
                  environment={"HERALD_DELIVERY_PARTITION_SIZE": str(max(100, arguments.devices // (4 * arguments.nodes))),
                               "HERALD_DELIVERY_PAGE_SIZE": "100"})
             for i in range(arguments.nodes)]
    failures = []
    try:
        start_sharing_keys(nodes)
        key_name, key = nodes[0].full_key()
        apis = [HubAPI(node.port, "app", key_name, key) for node in nodes]
        print(f"{arguments.nodes} node(s), {arguments.platform}, budget {arguments.rate} ({budget:.1f}/s); "
              f"registering {arguments.devices:,} devices…")
        tokens = seed(apis, arguments.devices, arguments.platform)
        print(nodes[0].herald_command("hub", "set-credentials", "app", "--rate-limit", f"{arguments.platform}={arguments.rate}").strip())
        # The nodes count each other through the database every 10 s: let every one see the others.
        time.sleep(11 if arguments.nodes > 1 else 0)
        before = emulator.stats()["accepted"]
        notification = send(apis[0], arguments.platform)
        # The accepted count over time: the budget is a rate, read from the emulator's side.
        samples = []
        while True:
            count = emulator.stats()["accepted"] - before
            samples.append((time.monotonic(), count))
            if count >= len(tokens) or (len(samples) % 8 == 0 and finished_state(apis[0], notification)):
                break
            time.sleep(0.25)
        wait_for("the broadcast to finish", lambda: finished_state(apis[0], notification), timeout=600, interval=0.5)
        accepted = emulator.stats()["accepted"] - before
        # After the first second's worth (a budget holds that much), sends go at the rate.
        burst = next(((t, n) for t, n in samples if n >= budget), samples[0])
        end = next(((t, n) for t, n in samples if n >= accepted), samples[-1])
        duration = max(0.001, end[0] - burst[0])
        rate = (end[1] - burst[1]) / duration
        print(f"  accepted:        {accepted:,} of {len(tokens):,} devices")
        print(f"  took:            {end[0] - samples[0][0]:.1f} s ({duration:.1f} s after the first second's worth)")
        print(f"  rate:            {rate:.1f}/s ({rate / budget:.0%} of the budget)")
        if accepted < len(tokens):
            failures.append(f"{len(tokens) - accepted} devices missed")
        if rate > budget * (1 + arguments.tolerance):
            failures.append(f"the rate was {rate:.1f}/s, over the budget of {budget:.1f}/s")
        if rate < budget * arguments.min_share:
            failures.append(f"the rate was {rate:.1f}/s, under {arguments.min_share:.0%} of the budget of {budget:.1f}/s")
    finally:
        stop_all(nodes, emulator)
    return verdict(failures, directory)


if __name__ == "__main__":
    sys.exit(main())

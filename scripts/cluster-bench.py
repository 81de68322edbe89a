#!/usr/bin/env python3
"""How long one broadcast takes with 1, 2 and 3 nodes sharing it, and each node's peak memory.

For each node count: a database of its own on the server of --database-url, --devices FCM
registrations written into it with one SQL statement, `herald emulate` and that many
`herald serve` nodes; one broadcast sent through the first node; the time until it is
finished and each node's peak resident memory (VmHWM). Prints a line per node count and the
times as ratios to the one-node time.

    swift build -c release
    scripts/cluster-bench.py --herald .build/release/herald --database-url "$HERALD_TEST_DATABASE_URL"

Python's standard library and `psql`.
"""
import argparse
import os
import platform
import shutil
import sys
import tempfile
import time

from heraldprocesses import Emulator, HubAPI, Node, finished_state, free_port, own_database, psql, send, start_sharing_keys, wait_for


def peak_megabytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    return 0


def run(arguments, database_url, count):
    directory = tempfile.mkdtemp(prefix="herald-cluster-bench-")
    emulator = Emulator(arguments.herald, directory, "fcm")
    nodes = [Node(arguments.herald, directory, emulator.settings, free_port(), name=f"node{i + 1}", database_url=database_url)
             for i in range(count)]
    try:
        start_sharing_keys(nodes)
        nodes[0].herald_command("hub", "create", "bench")
        key_name, key = nodes[0].full_key("bench")
        api = HubAPI(nodes[0].port, "bench", key_name, key)
        started = time.monotonic()
        psql(database_url, f"""
            INSERT INTO herald.registrations (hub, id, platform, handle, version, created_at, updated_at)
            SELECT 'bench', 'reg-' || lpad(g::text, 9, '0'), 'fcm', 'bench:' || md5(g::text), 1, 0, 0
            FROM generate_series(1, {arguments.devices}) AS g""")
        seeded = time.monotonic() - started
        started = time.monotonic()
        notification = send(api, "fcm")
        final = wait_for("the broadcast to finish", lambda: finished_state(api, notification), timeout=3600, interval=0.2)
        took = time.monotonic() - started
        peaks = [peak_megabytes(node.process.pid) for node in nodes]
        reached = emulator.stats()["devices"]
        return took, seeded, peaks, final, reached
    finally:
        for node in nodes:
            if node.process and node.process.poll() is None:
                node.stop("term")
        emulator.stop()
        shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/release/herald")
    parser.add_argument("--database-url", default=os.environ.get("HERALD_TEST_DATABASE_URL"))
    parser.add_argument("--devices", type=int, default=1_000_000)
    parser.add_argument("--nodes", default="1,2,3", help="the node counts to measure, comma-separated")
    arguments = parser.parse_args()
    if not arguments.database_url:
        sys.exit("give --database-url (or set HERALD_TEST_DATABASE_URL)")
    print(f"{platform.node()}: {os.cpu_count()} cores; PostgreSQL, the emulator and the nodes share them", flush=True)
    results = {}
    for count in [int(n) for n in arguments.nodes.split(",")]:
        with own_database(arguments.database_url, "herald_cluster_bench") as database_url:
            took, seeded, peaks, final, reached = run(arguments, database_url, count)
        results[count] = took
        print(f"{count} node{'s' if count > 1 else ' '}: {arguments.devices:,} devices {final} in {took:.1f} s "
              f"({arguments.devices / took:,.0f}/s, {reached:,} reached; seeded in {seeded:.1f} s); "
              f"peak RSS per node: {', '.join(f'{peak} MB' for peak in peaks)}", flush=True)
    if 1 in results:
        print("time as a ratio to one node: " + ", ".join(f"{count} nodes {took / results[1]:.2f}" for count, took in results.items()))


if __name__ == "__main__":
    main()

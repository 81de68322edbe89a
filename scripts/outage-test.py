#!/usr/bin/env python3
"""A PostgreSQL outage in the middle of a broadcast, tested as a deployment.

Starts a PostgreSQL server of its own (scripts/postgres-test-server in a temporary
directory), `herald emulate` and --nodes `herald serve` processes on it, registers --devices
devices, broadcasts to them, and stops the database (`pg_ctl stop -m fast`) once part of the
broadcast is sent. While it is down, a request to each node must be answered at once (`503`,
not a hang) and `/ready` must say `503`; after --outage seconds the database starts again on
the same port, and the broadcast must resume and finish with no device lost.

With --restart, the database is instead restarted as after a crash (`pg_ctl stop -m immediate`
and started again at once: about a second, with recovery). With --max-resume, delivery must not
stand still (no send made) for longer than that once the database is back.

Prints what the outage cost (devices lost and reached twice, seconds to resume) and exits 1 if
a guarantee did not hold.

    scripts/outage-test.py --herald .build/debug/herald

Python's standard library and PostgreSQL from Debian's packages (`apt-get install postgresql`).
"""
import argparse
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import time

from heraldprocesses import Emulator, HubAPI, Node, finished_state, free_port, seed, send, start_sharing_keys, wait_for

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "postgres-test-server")


def timed_request(api):
    """A hub API request's status and how long it took; 0 when it failed at the socket."""
    started = time.monotonic()
    try:
        status, _, _ = api.request("GET", "/registrations/not-there")
    except OSError:
        status = 0
    return status, time.monotonic() - started


def ready_status(port):
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/ready")
        return connection.getresponse().status
    except OSError:
        return 0


class KeptForInspection(Exception):
    pass


def waited(arguments, what, check, **options):
    """wait_for, which with --keep leaves everything running when it times out."""
    try:
        return wait_for(what, check, **options)
    except SystemExit:
        if arguments.keep:
            raise KeptForInspection()
        raise


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/debug/herald")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--devices", type=int, default=6000)
    parser.add_argument("--outage", type=float, default=8, help="seconds the database is down")
    parser.add_argument("--restart", action="store_true",
                        help="restart the database as after a crash (about a second) instead of stopping it for --outage seconds")
    parser.add_argument("--max-resume", type=float, default=None,
                        help="fail when, once the database is back, delivery stands still (no send) for longer than this many seconds")
    parser.add_argument("--partition-size", type=int, default=1000)
    parser.add_argument("--log-level", default="warning", help="HERALD_LOG_LEVEL of the nodes")
    parser.add_argument("--keep", action="store_true", help="on a failure, leave the processes running to look at them")
    arguments = parser.parse_args()

    directory = tempfile.mkdtemp(prefix="herald-outage-")
    server_env = dict(os.environ, HERALD_PG_DIR=os.path.join(directory, "postgres"))
    # The server runs as another user when this runs as root: it needs to reach its directory.
    os.chmod(directory, 0o755)

    def server(command):
        return subprocess.run([SERVER, command], env=server_env, capture_output=True, text=True, check=True).stdout.strip()

    database_url = server("start")
    emulator = Emulator(arguments.herald, directory, "fcm")
    nodes = [Node(arguments.herald, directory, emulator.settings, free_port(), name=f"node{i + 1}", database_url=database_url,
                  environment={"HERALD_DELIVERY_PARTITION_SIZE": str(arguments.partition_size),
                               "HERALD_LOG_LEVEL": arguments.log_level})
             for i in range(arguments.nodes)]
    failures = []
    try:
        start_sharing_keys(nodes)
        nodes[0].herald_command("hub", "create", "outage")
        key_name, key = nodes[0].full_key("outage")
        apis = [HubAPI(node.port, "outage", key_name, key) for node in nodes]
        outage = "restarted as after a crash" if arguments.restart else f"stopped for {arguments.outage:g} s"
        print(f"{arguments.devices} devices registered through {len(nodes)} nodes; a broadcast; the database {outage} "
              f"once a quarter of it is sent", flush=True)
        seed(apis, arguments.devices, "fcm", tag="outage")
        notification = send(apis[0], "fcm", tag="outage")
        wait_for("a quarter of the broadcast", lambda: emulator.stats()["accepted"] >= arguments.devices // 4,
                 timeout=300, interval=0.005)
        server("crash" if arguments.restart else "pause")
        stopped = time.monotonic()
        at_stop = emulator.stats()["accepted"]
        if not arguments.restart:
            time.sleep(0.5)
            # While it is down: each node answers at once, and says it is not ready.
            for api, node in zip(apis, nodes):
                status, took = timed_request(api)
                ready = ready_status(node.port)
                print(f"   during the outage, {node.name}: a hub API request got {status} in {took:.2f} s; /ready {ready}", flush=True)
                if status != 503 or took > 5:
                    failures.append(f"{node.name} answered {status} in {took:.1f} s during the outage, not 503 at once")
                if ready != 503:
                    failures.append(f"{node.name}'s /ready said {ready} during the outage")
            time.sleep(max(0, arguments.outage - (time.monotonic() - stopped)))
        sent_while_down = emulator.stats()["accepted"] - at_stop
        server("resume")
        restarted = time.monotonic()
        restarted_at = time.time()
        if arguments.restart:
            print(f"   the database was down for {restarted - stopped:.1f} s", flush=True)
        final = waited(arguments, "the broadcast to finish", lambda: finished_state(apis[-1], notification),
                       timeout=300, interval=0.05)
        done = time.monotonic() - restarted
        # When sends resumed, and the longest time without one once the database was back, by
        # the emulator's own clock: a poll of a busy emulator can wait seconds for its answer.
        # (When every page was sent while it was down, nothing is left to resume.)
        resumed, stall = emulator.sends_since(restarted_at)
        resumed = resumed or 0.0
        stats = emulator.stats()
        lost = arguments.devices - stats["devices"]
        print(f"   {sent_while_down} sends made while the database was down (pages already read)", flush=True)
        print(f"   {final}; delivery resumed {resumed:.1f} s after the database was back, finished {done:.1f} s after it; "
              f"the longest time without a send after it was back: {stall:.1f} s", flush=True)
        print(f"   devices lost: {lost}; reached more than once: {stats['devicesReachedMoreThanOnce']}", flush=True)
        for node in nodes:
            if node.process.poll() is not None:
                failures.append(f"{node.name} exited during the outage (status {node.process.returncode})")
        if lost != 0:
            failures.append(f"{lost} devices lost")
        if arguments.max_resume is not None and max(resumed, stall) > arguments.max_resume:
            failures.append(f"delivery stood still for {max(resumed, stall):.1f} s after the database was back, "
                            f"more than {arguments.max_resume:g} s")
        if final != "Completed":
            failures.append(f"the broadcast ended {final}")
    except KeptForInspection:
        print(f"kept running for inspection: {directory}, database {database_url}")
        os._exit(1)
    finally:
        for node in nodes:
            if node.process and node.process.poll() is None:
                try:
                    took = node.stop("term", timeout=45)
                    print(f"   {node.name} stopped with SIGTERM in {took:.1f} s", flush=True)
                except subprocess.TimeoutExpired:
                    failures.append(f"{node.name} did not stop within 45 s of SIGTERM")
                    if arguments.keep:
                        print(f"   {node.name} (pid {node.process.pid}) kept running for inspection", flush=True)
                    else:
                        node.process.kill()
        emulator.stop()
        subprocess.run([SERVER, "stop"], env=server_env, capture_output=True)
    if failures:
        print("FAILED: " + "; ".join(failures))
        print(f"(logs in {directory})")
        sys.exit(1)
    shutil.rmtree(directory, ignore_errors=True)
    print("every guarantee held")


if __name__ == "__main__":
    main()

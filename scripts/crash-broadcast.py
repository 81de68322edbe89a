#!/usr/bin/env python3
"""What a crash or a shutdown in the middle of a broadcast costs.

Runs `herald emulate` in a process of its own (so that its counts survive the node), a
`herald serve` node that delivers to it, registers --devices installations through the hub
REST API (FCM by default; --platform apns for APNs), sends one broadcast, and once the
emulator has accepted --at of it stops the node with SIGKILL (--signal kill) or SIGTERM
(--signal term). It then starts the node again on the same data directory, waits until the
broadcast is finished, and prints what it cost: devices that never got the notification,
devices that got it more than once, and the seconds from the restart until delivery resumed and until it finished.

    swift build -c release
    scripts/crash-broadcast.py --herald .build/release/herald --devices 50000 --signal kill

With --webhooks, a share of the devices (--gone) are uninstalled first and a webhook endpoint
on a receiver in this script wants every event: it then also prints the events lost (a
`registration.expired` per gone device and one `notification.completed`) and those received
twice (receivers deduplicate by `webhook-id`).

With --rate-limit, the broadcast goes under a send budget for the platform's credential, so the
node is stopped while a page waits for its turn.

With --database-url, the node keeps everything in a PostgreSQL database of its own, created on
that server and dropped at the end (needs `psql`).

Python's standard library only.
"""
import argparse
import os
import sys
import tempfile
import time

import json

from heraldprocesses import (PLATFORMS, Emulator, HubAPI, Node, WebhookReceiver, finished_state, free_port, own_database, seed,
                             send, wait_for)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/release/herald")
    parser.add_argument("--devices", type=int, default=50_000)
    parser.add_argument("--signal", choices=["kill", "term"], default="kill")
    parser.add_argument("--platform", choices=sorted(PLATFORMS), default="fcm")
    parser.add_argument("--at", type=float, default=0.3, help="stop the node once this share of devices was reached")
    parser.add_argument("--port", type=int, default=0, help="the node's port (default: a free one)")
    parser.add_argument("--database-url", help="a PostgreSQL server to keep the node's data on (default: SQLite)")
    parser.add_argument("--lease", type=int, default=60, help="HERALD_DELIVERY_LEASE of the node, in seconds")
    parser.add_argument("--max-resume", type=float, help="fail unless delivery resumed within this many seconds of the restart")
    parser.add_argument("--max-duplicates", type=int, help="fail if more devices than this were reached twice")
    parser.add_argument("--max-shown-twice", type=int,
                        help="APNs: fail if more devices than this show the notification twice (a repeat replaces its first copy)")
    parser.add_argument("--webhooks", action="store_true",
                        help="uninstall --gone of the devices and count the webhook events the node posts to a receiver here")
    parser.add_argument("--gone", type=float, default=0.1, help="with --webhooks, the share of devices uninstalled before the broadcast")
    parser.add_argument("--max-events-lost", type=int, help="with --webhooks, fail if more events than this never arrived")
    parser.add_argument("--rate-limit", help="the platform credential's send budget (as --rate-limit takes it, e.g. 6000/min): "
                                             "the node is stopped while its sends wait their turn")
    arguments = parser.parse_args()
    if arguments.database_url:
        with own_database(arguments.database_url, "herald_crash") as database_url:
            return run(arguments, database_url)
    return run(arguments, None)


def run(arguments, database_url):
    directory = tempfile.mkdtemp(prefix="herald-crash-")
    emulator = Emulator(arguments.herald, directory, arguments.platform)
    port = arguments.port or free_port()
    environment = {"HERALD_DELIVERY_LEASE": str(arguments.lease)}
    receiver = WebhookReceiver() if arguments.webhooks else None
    if receiver:
        environment.update(HERALD_WEBHOOK_HTTP_HOSTS="127.0.0.1", HERALD_WEBHOOK_ALLOWED_HOSTS="127.0.0.1")
    node = Node(arguments.herald, directory, emulator.settings, port, database_url=database_url, environment=environment)
    try:
        node.start()
        key_name, key = node.full_key()
        api = HubAPI(port, "app", key_name, key)
        print(f"registering {arguments.devices} {arguments.platform} installations through the hub API…", flush=True)
        started = time.monotonic()
        tokens = seed(api, arguments.devices, arguments.platform)
        print(f"  {time.monotonic() - started:.1f} s", flush=True)
        gone = tokens[:int(len(tokens) * arguments.gone)] if receiver else []
        if receiver:
            emulator.unregister(gone)
            status, _, body = api.request("POST", "/webhooks", body=json.dumps({"url": receiver.url, "events": ["*"]}),
                                          headers={"Content-Type": "application/json"})
            if status != 201:
                sys.exit(f"adding the webhook endpoint failed: {status} {body[:200]!r}")
            print(f"  {len(gone)} of the devices uninstalled; a webhook endpoint wants every event", flush=True)
        if arguments.rate_limit:
            print("  " + node.herald_command("hub", "set-credentials", "app", "--rate-limit",
                                             f"{arguments.platform}={arguments.rate_limit}").strip(), flush=True)
        # Installations become registrations when written; the broadcast targets them all.
        notification = send(api, arguments.platform)
        print(f"broadcast {notification} accepted; stopping the node with SIG{arguments.signal.upper()} "
              f"at {arguments.at:.0%} of the devices…", flush=True)
        threshold = int(arguments.devices * arguments.at)
        wait_for("the broadcast to reach the threshold", lambda: emulator.stats()["accepted"] >= threshold,
                 timeout=600, interval=0.01)
        stopped_in = node.stop(arguments.signal)
        at_stop = emulator.stats()
        print(f"  stopped in {stopped_in:.2f} s with {at_stop['accepted']} sends accepted by the emulator", flush=True)

        restarted = time.monotonic()
        restarted_at = time.time()
        node.start()
        up = time.monotonic() - restarted

        state = wait_for("the broadcast to finish", lambda: finished_state(api, notification), timeout=1200, interval=0.2)
        done = time.monotonic() - restarted
        # By the emulator's own clock (a poll of a busy emulator can wait seconds for its
        # answer), from when the restarted node answered: the emulator may still be answering
        # requests the stopped node had sent.
        resumed, _ = emulator.sends_since(restarted_at + up)
        if resumed is None:
            failed_to_resume = "no send was made after the restart"
            resumed = done
        else:
            failed_to_resume = None
            resumed += up
        stats = emulator.stats()
        lost = arguments.devices - len(gone) - stats["devices"]
        duplicated = stats["devicesReachedMoreThanOnce"]
        print(f"\nSIG{arguments.signal.upper()} at {at_stop['accepted']} of {arguments.devices} devices "
              f"({'PostgreSQL' if database_url else 'SQLite'}):")
        print(f"  state after restart:           {state}")
        print(f"  devices reached:               {stats['devices']} of {arguments.devices}")
        print(f"  devices lost:                  {lost}")
        print(f"  devices reached twice or more: {duplicated} ({stats['accepted'] - stats['devices']} extra sends)")
        if arguments.platform == "apns":
            print(f"  devices showing it twice:      {stats['devicesShowingMoreThanOne']} "
                  f"(a repeat carries the notification's apns-collapse-id and replaces the first copy)")
        print(f"  node stopped in:               {stopped_in:.2f} s")
        print(f"  restarted node answered after: {up:.1f} s")
        print(f"  delivery resumed after:        {resumed:.1f} s from the restart")
        print(f"  broadcast finished after:      {done:.1f} s from the restart")
        events_lost = None
        if receiver:
            # Every event is recorded before the delivery moves on: wait for the outbox to drain.
            def tally():
                events = receiver.events()
                kinds = {}
                for id, kind in set(events):
                    kinds[kind] = kinds.get(kind, 0) + 1
                return events, kinds
            try:
                def drained():
                    kinds = tally()[1]
                    return kinds.get("registration.expired", 0) >= len(gone) and kinds.get("notification.completed", 0) >= 1
                wait_for("the webhook events", drained, timeout=60, interval=0.2)
            except SystemExit:
                pass
            events, kinds = tally()
            events_lost = max(0, len(gone) - kinds.get("registration.expired", 0)) + max(0, 1 - kinds.get("notification.completed", 0))
            print(f"  webhook events received:       {len(set(events))} distinct "
                  f"({kinds.get('registration.expired', 0)} registration.expired of {len(gone)} gone devices, "
                  f"{kinds.get('notification.completed', 0)} notification.completed), {len(events) - len(set(events))} twice")
            print(f"  webhook events lost:           {events_lost}")
            receiver.stop()
        node.stop("term")
        failed = []
        if arguments.max_events_lost is not None and events_lost is not None and events_lost > arguments.max_events_lost:
            failed.append(f"{events_lost} webhook events lost")
        if failed_to_resume and stats["devices"] < arguments.devices:
            failed.append(failed_to_resume)
        if lost:
            failed.append(f"{lost} devices lost")
        if arguments.max_resume is not None and resumed > arguments.max_resume:
            failed.append(f"delivery resumed after {resumed:.1f} s, more than {arguments.max_resume:g} s")
        if arguments.max_duplicates is not None and duplicated > arguments.max_duplicates:
            failed.append(f"{duplicated} devices reached twice, more than {arguments.max_duplicates}")
        if arguments.max_shown_twice is not None and arguments.platform == "apns" \
                and stats["devicesShowingMoreThanOne"] > arguments.max_shown_twice:
            failed.append(f"{stats['devicesShowingMoreThanOne']} devices show the notification twice, "
                          f"more than {arguments.max_shown_twice}")
        print("every guarantee held" if not failed else "FAILED: " + "; ".join(failed))
        return 0 if not failed else 1
    finally:
        if node.process and node.process.poll() is None:
            node.process.kill()
        emulator.stop()
        print(f"(logs in {directory})")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Several Herald nodes on one PostgreSQL database, tested as a deployment.

Creates a database of its own on the server of --database-url (dropped at the end), starts
`herald emulate` in a process of its own and --nodes `herald serve` processes, each with a
data directory of its own (the first node's secure-payload key copied to the others; a node
with a key of its own must refuse to start), checks that they share one VAPID key, then:

1. registers devices through every node in turn and broadcasts to them through one node:
   every device must be reached exactly once (the broadcast is split into partitions of
   --partition-size registrations, which the nodes share);
2. registers more devices, broadcasts to them, and kills (SIGKILL) the node that split the
   broadcast once part of it is sent: the others must take its partitions over when its lease
   runs out (within --max-takeover seconds), and no device may be lost (the sends in flight on
   the dead node may be repeated);
3. freezes (SIGSTOP) a node holding partitions of another broadcast for --pause seconds, less
   than the lease, then lets it go on (SIGCONT): a node that is alive but slow keeps its work,
   so no other node may take its partitions and no device may be reached twice;
4. rotates the hub's key with `herald hub rotate` (another process, as on another
   machine) and sends with the old key to every node at once: all must refuse it (401),
   and accept the new one.

Prints what each step cost and exits 1 if a guarantee did not hold. The nodes' lease is
Herald's default unless --lease sets HERALD_DELIVERY_LEASE.

    export HERALD_TEST_DATABASE_URL=$(scripts/postgres-test-server start)
    scripts/cluster-test.py --herald .build/debug/herald --database-url "$HERALD_TEST_DATABASE_URL"

Python's standard library and `psql` (to see which node holds the broadcast's lease).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from heraldprocesses import Emulator, HubAPI, Node, finished_state, free_port, own_database, psql, seed, send, start_sharing_keys, stop_all, verdict, wait_for, require_database


def lease_owner(database_url, notification):
    """Who holds the notification's delivery lease: `host:pid:engine`, or None."""
    output = subprocess.run(
        ["psql", database_url, "-tAc", f"SELECT lease_owner FROM herald.notifications WHERE id = '{notification}'"],
        capture_output=True, text=True, check=True).stdout.strip()
    return output or None


def partition_owners(database_url, notification):
    """The pids of the nodes holding a lease on the notification or one of its partitions now,
    and how many partitions it has."""
    rows = psql(database_url, "SELECT coalesce(split_part(lease_owner, ':', 2), ''), part_of IS NOT NULL FROM herald.notifications "
                f"WHERE id = '{notification}' OR part_of = '{notification}'").splitlines()
    pids = {int(row.split("|")[0]) for row in rows if row.split("|")[0]}
    return pids, sum(1 for row in rows if row.endswith("|t"))


def pause_step(arguments, database_url, emulator, nodes, apis, hub):
    """Step 3: a node frozen (SIGSTOP) for less than the lease keeps its partitions; the
    failures found."""
    print(f"3. {arguments.pause_devices} more devices, a broadcast, and SIGSTOP for {arguments.pause:g} s "
          f"to a node holding partitions of it", flush=True)
    seed(apis[0], arguments.pause_devices, "fcm", tag="third")
    before = emulator.stats()
    notification = send(apis[0], "fcm", tag="third")
    pids = {node.process.pid: node for node in nodes}

    def frozen_candidate():
        # A node holding a partition, once part of the broadcast is sent.
        if emulator.stats()["accepted"] < before["accepted"] + arguments.pause_devices // 5:
            return None
        owners, _ = partition_owners(database_url, notification)
        return next((pid for pid in owners if pid in pids), None)

    pid = wait_for("a node to hold a partition of the broadcast", frozen_candidate, timeout=600, interval=0.005)
    node = pids[pid]
    held_sql = (f"SELECT id FROM herald.notifications WHERE (id = '{notification}' OR part_of = '{notification}') "
                f"AND state = 'Processing' AND lease_owner LIKE '%:{pid}:%' ORDER BY id")
    lost_before = open(node.log.name).read().count("Lost the lease")
    node.process.send_signal(signal.SIGSTOP)
    frozen = time.monotonic()
    held = psql(database_url, held_sql).split()
    time.sleep(max(0, arguments.pause - (time.monotonic() - frozen)))
    # Still frozen: what it held must still be its own.
    still_held = set(psql(database_url, held_sql).split())
    node.process.send_signal(signal.SIGCONT)
    paused = time.monotonic() - frozen
    taken = [each for each in held if each not in still_held]
    final = wait_for("the broadcast to finish", lambda: finished_state(apis[-1], notification), timeout=600, interval=0.1)
    stats = emulator.stats()
    reached = stats["devices"] - before["devices"]
    twice = stats["devicesReachedMoreThanOnce"] - before["devicesReachedMoreThanOnce"]
    lost_leases = open(node.log.name).read().count("Lost the lease") - lost_before
    print(f"   froze {node.name} for {paused:.1f} s while it held {len(held)} partitions; "
          f"taken from it meanwhile: {len(taken)}; leases it lost: {lost_leases}", flush=True)
    print(f"   {final}: {reached} of {arguments.pause_devices} devices reached, {twice} more than once", flush=True)
    failures = []
    if not held:
        failures.append("step 3: the frozen node held no partition")
    if taken or lost_leases:
        failures.append(f"step 3: {len(taken)} partitions were taken from a node frozen for {paused:.1f} s (it lost {lost_leases} leases)")
    if final != "Completed" or reached != arguments.pause_devices or twice != 0:
        failures.append("step 3: not every device was reached exactly once")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/debug/herald")
    parser.add_argument("--database-url", default=os.environ.get("HERALD_TEST_DATABASE_URL"))
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--devices", type=int, default=3000, help="devices of the first broadcast")
    parser.add_argument("--crash-devices", type=int, default=8000, help="devices of the broadcast with a crash")
    parser.add_argument("--lease", type=int, default=None, help="HERALD_DELIVERY_LEASE of the nodes, in seconds (default: Herald's)")
    parser.add_argument("--max-takeover", type=float, default=15,
                        help="seconds after the kill within which the dead node's partitions must be taken over")
    parser.add_argument("--pause", type=float, default=4, help="seconds a node is frozen (SIGSTOP) in step 3; less than the lease")
    parser.add_argument("--pause-devices", type=int, default=6000, help="devices of the broadcast of step 3")
    parser.add_argument("--partition-size", type=int, default=250,
                        help="HERALD_DELIVERY_PARTITION_SIZE of the nodes: small, so that the broadcasts are shared")
    parser.add_argument("--port", type=int, default=0, help="the first node's port, the others following it (default: free ports)")
    arguments = parser.parse_args()
    require_database(arguments)

    with own_database(arguments.database_url, "herald_cluster") as database_url:
        return run(arguments, database_url)


def run(arguments, database_url):
    directory = tempfile.mkdtemp(prefix="herald-cluster-")
    emulator = Emulator(arguments.herald, directory, "fcm")
    hub = "cluster"

    def make_node(i, name=None):
        return Node(arguments.herald, directory, emulator.settings, arguments.port + i if arguments.port else free_port(),
                    name=name or f"node{i + 1}", database_url=database_url,
                    environment={"HERALD_DELIVERY_PARTITION_SIZE": str(arguments.partition_size),
                                 **({"HERALD_DELIVERY_LEASE": str(arguments.lease)} if arguments.lease else {})})

    nodes = [make_node(i) for i in range(arguments.nodes)]
    failures = []
    try:
        start_sharing_keys(nodes)
        stray = make_node(len(nodes), name="stray")
        refused = subprocess.run([arguments.herald, "serve"], env=stray.env, capture_output=True, text=True, timeout=60)
        print(f"0. a node with a secure-payload key of its own: exit {refused.returncode}", flush=True)
        if refused.returncode == 0 or "secure-payload key" not in refused.stderr + refused.stdout:
            failures.append("step 0: a node with another secure-payload key was not refused")
        # Web Push subscriptions are bound to the VAPID key: every node must use the same one.
        vapid = {node.name: re.search(r"VAPID key (\S+?)…", open(node.log.name).read()) for node in nodes}
        keys = {name: match.group(1) if match else None for name, match in vapid.items()}
        print(f"   VAPID key per node: {keys}", flush=True)
        if len(set(keys.values())) != 1 or None in keys.values():
            failures.append("step 0: the nodes do not share one VAPID key")
        nodes[0].herald_command("hub", "create", hub)
        key_name, key = nodes[0].full_key(hub)
        apis = [HubAPI(node.port, hub, key_name, key) for node in nodes]

        # 1. Devices registered through every node; one broadcast, each device reached once.
        print(f"1. {arguments.devices} devices registered through {len(nodes)} nodes, one broadcast", flush=True)
        seed(apis, arguments.devices, "fcm", tag="first")
        started = time.monotonic()
        notification = send(apis[1], "fcm", tag="first")
        # Which nodes deliver it: sampled from the leases while it runs.
        delivering = set()
        partitions = 0

        def finished_sampling():
            nonlocal partitions
            pids, partitions = partition_owners(database_url, notification)
            delivering.update(pids)
            return finished_state(apis[-1], notification)

        final = wait_for("the broadcast to finish", finished_sampling, timeout=600, interval=0.02)
        took = time.monotonic() - started
        stats = emulator.stats()
        names = sorted(node.name for node in nodes if node.process.pid in delivering)
        print(f"   {final} in {took:.1f} s: {stats['devices']} of {arguments.devices} devices reached, "
              f"{stats['devicesReachedMoreThanOnce']} more than once; split into {partitions + 1} partitions, "
              f"delivered by {', '.join(names) or 'no node seen'}", flush=True)
        if final != "Completed" or stats["devices"] != arguments.devices or stats["devicesReachedMoreThanOnce"] != 0:
            failures.append("step 1: not every device was reached exactly once")
        before = stats

        # 2. A node killed mid-broadcast: the others take over, nothing is lost. The broadcast is
        # on a hub created now and used through the first node only: the others open it from
        # the catalog on their own, not because a request came for it.
        total = arguments.devices + arguments.crash_devices
        print(f"2. a new hub with {arguments.crash_devices} devices, used through {nodes[0].name} only: "
              f"a broadcast, and SIGKILL to the node delivering it", flush=True)
        nodes[0].herald_command("hub", "create", hub + "2")
        key_name2, key2 = nodes[0].full_key(hub + "2")
        apis = [HubAPI(node.port, hub + "2", key_name2, key2) for node in nodes]
        seed(apis[0], arguments.crash_devices, "fcm", tag="second")
        notification = send(apis[0], "fcm", tag="second")
        owner = wait_for("a node to claim the broadcast", lambda: lease_owner(database_url, notification),
                         timeout=60, interval=0.01)
        pid = int(owner.split(":")[1])
        victim = next((node for node in nodes if node.process.pid == pid), None)
        if victim is None:
            sys.exit(f"no node has the pid of the lease owner {owner}")
        threshold = before["accepted"] + arguments.crash_devices // 4
        wait_for("part of the broadcast to be sent", lambda: emulator.stats()["accepted"] >= threshold, timeout=600, interval=0.005)
        held = psql(database_url, "SELECT count(*) FROM herald.notifications WHERE (id = '" + notification + "' OR part_of = '"
                    + notification + f"') AND state = 'Processing' AND lease_owner LIKE '%:{pid}:%'")
        victim.stop("kill")
        killed = time.monotonic()
        at_kill = emulator.stats()
        _, partitions = partition_owners(database_url, notification)
        print(f"   killed {victim.name} (pid {pid}), holding {held} of {partitions + 1} partitions, with "
              f"{at_kill['accepted'] - before['accepted']} of {arguments.crash_devices} sends accepted", flush=True)
        survivors = [api for api, node in zip(apis, nodes) if node is not victim]
        # The dead node's partitions wait for its lease to run out; the others' go on.
        resumed = wait_for("another node to take over the dead node's partitions",
                           lambda: psql(database_url, "SELECT count(*) FROM herald.notifications WHERE (id = '" + notification
                                        + "' OR part_of = '" + notification + f"') AND lease_owner LIKE '%:{pid}:%'") == "0"
                           and time.monotonic(), timeout=600, interval=0.05) - killed
        final = wait_for("the broadcast to finish", lambda: finished_state(survivors[0], notification), timeout=600, interval=0.1)
        done = time.monotonic() - killed
        stats = emulator.stats()
        lost = total - stats["devices"]
        duplicated = stats["devicesReachedMoreThanOnce"]
        new_owner = lease_owner(database_url, notification)
        print(f"   {final}; its partitions taken over {resumed:.1f} s after the kill (lease {arguments.lease or 'default'}), "
              f"finished after {done:.1f} s", flush=True)
        print(f"   devices lost: {lost}; reached more than once: {duplicated} "
              f"({stats['accepted'] - stats['devices']} extra sends, at most the page in flight on the dead node)", flush=True)
        if lost != 0:
            failures.append(f"step 2: {lost} devices lost")
        if final != "Completed":
            failures.append(f"step 2: the broadcast ended {final}")
        if new_owner is not None:
            failures.append("step 2: the finished broadcast still has a lease owner")
        if resumed > arguments.max_takeover:
            failures.append(f"step 2: the dead node's partitions were taken over after {resumed:.1f} s, "
                            f"not within {arguments.max_takeover:g} s")

        # 3. A node frozen for less than the lease keeps its partitions.
        nodes = [node for node in nodes if node is not victim]
        apis = survivors
        failures.extend(pause_step(arguments, database_url, emulator, nodes, apis, hub + "2"))

        # 4. A key rotated through one process, refused by every node at once.
        print("4. the full key rotated with `herald hub rotate`, then used on every node at once", flush=True)
        nodes[0].herald_command("hub", "rotate", hub + "2", "--rule", key_name2, "--key", "primary")
        _, new_key = nodes[0].full_key(hub + "2")
        for api, node in zip(apis, nodes):
            if node is victim:
                continue
            old_status, _, _ = api.request("GET", f"/messages/{notification}")
            api.key = new_key
            new_status, _, _ = api.request("GET", f"/messages/{notification}")
            print(f"   {node.name}: old key {old_status}, new key {new_status}", flush=True)
            if old_status != 401 or new_status != 200:
                failures.append(f"step 4: {node.name} answered {old_status} to the old key and {new_status} to the new one")
    finally:
        stop_all(nodes, emulator)
    return verdict(failures, directory)


if __name__ == "__main__":
    sys.exit(main())

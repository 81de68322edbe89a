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

Python's standard library only.
"""
import argparse
import base64
import hashlib
import hmac
import http.client
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid


def wait_for(what, check, timeout=60.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    sys.exit(f"timed out waiting for {what}")


class Emulator:
    def __init__(self, herald, directory, platform):
        self.directory = directory
        self.log = open(os.path.join(directory, "emulate.log"), "w")
        self.process = subprocess.Popen(
            [herald, "emulate", "--directory", os.path.join(directory, "emulator"), "--open-registry", "--inbox", "1",
             "--log-level", "warning"],
            stdout=self.log, stderr=subprocess.STDOUT)
        env_file = os.path.join(directory, "emulator", "herald.env")
        wait_for("the emulator's settings", lambda: os.path.exists(env_file) and os.path.getsize(env_file) > 0)
        time.sleep(0.2)
        self.settings = dict(line.split("=", 1) for line in open(env_file).read().splitlines() if "=" in line)
        self.service = urllib.parse.urlparse(self.settings[f"HERALD_{platform.upper()}_ENDPOINT"])

    def stats(self):
        context = ssl.create_default_context(cafile=self.settings["HERALD_APNS_CA_FILE"])
        connection = http.client.HTTPSConnection(self.service.hostname, self.service.port, context=context, timeout=10)
        connection.request("GET", "/_emulator/stats")
        body = json.loads(connection.getresponse().read())
        connection.close()
        return body

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


class Node:
    def __init__(self, herald, directory, settings, port):
        self.herald = herald
        self.data = os.path.join(directory, "node")
        self.port = port
        self.env = dict(os.environ, **settings)
        self.env.update(HERALD_DATA_DIR=self.data, HERALD_PORT=str(port), HERALD_TLS_PORT="0", HERALD_LOG_LEVEL="warning")
        self.log = open(os.path.join(directory, "node.log"), "a")
        self.process = None

    def start(self):
        self.process = subprocess.Popen([self.herald, "serve"], env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("the node", self.healthy)

    def healthy(self):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
            connection.request("GET", "/health")
            return connection.getresponse().status == 200
        except OSError:
            return False

    def stop(self, how):
        started = time.monotonic()
        self.process.send_signal(signal.SIGKILL if how == "kill" else signal.SIGTERM)
        self.process.wait(timeout=120)
        return time.monotonic() - started

    def full_key(self):
        output = subprocess.run([self.herald, "hub", "keys", "app", "--hub-endpoint", f"sb://127.0.0.1:{self.port}/"], env=self.env, capture_output=True, text=True, check=True).stdout
        match = re.search(r"SharedAccessKeyName=(DefaultFullSharedAccessSignature);SharedAccessKey=([^;\s]+)", output)
        if not match:
            sys.exit("`herald hub keys app` printed no full-access key")
        return match.group(1), match.group(2)


class HubAPI:
    """The hub REST API with a shared access signature, as the cloud hub's SDKs send it."""

    def __init__(self, port, hub, key_name, key):
        self.port, self.hub, self.key_name, self.key = port, hub, key_name, key

    def authorization(self):
        resource = urllib.parse.quote(f"http://127.0.0.1:{self.port}/{self.hub}", safe="").lower()
        expiry = str(int(time.time()) + 3600)
        signature = base64.b64encode(hmac.new(self.key.encode(), f"{resource}\n{expiry}".encode(), hashlib.sha256).digest())
        return (f"SharedAccessSignature sr={resource}&sig={urllib.parse.quote(signature.decode(), safe='')}"
                f"&se={expiry}&skn={self.key_name}")

    def request(self, method, path, body=None, headers=None, connection=None):
        own = connection is None
        connection = connection or http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        all_headers = {"Authorization": self.authorization()}
        all_headers.update(headers or {})
        separator = "&" if "?" in path else "?"
        connection.request(method, f"/{self.hub}{path}{separator}api-version=2015-01", body=body, headers=all_headers)
        response = connection.getresponse()
        data = response.read()
        if own:
            connection.close()
        return response.status, dict(response.getheaders()), data


PLATFORMS = {
    # installation platform, a device handle, the send's format and body
    "apns": ("apns", lambda: os.urandom(32).hex(), "apple", {"aps": {"alert": "crash test"}}),
    "fcm": ("fcmv1", lambda: "crash:" + os.urandom(24).hex(), "fcmv1",
            {"message": {"notification": {"title": "crash", "body": "test"}}}),
}


def seed(api, devices, platform, threads=8):
    installation_platform, make_handle, _, _ = PLATFORMS[platform]
    tokens = [make_handle() for _ in range(devices)]
    failures = []

    def work(part):
        connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=60)
        for token in part:
            installation = str(uuid.uuid4())
            body = json.dumps({"installationId": installation, "platform": installation_platform, "pushChannel": token, "tags": ["crash"]})
            status, _, data = api.request("PUT", f"/installations/{installation}", body=body,
                                          headers={"Content-Type": "application/json"}, connection=connection)
            if status != 200:
                failures.append((status, data[:200]))

    parts = [tokens[i::threads] for i in range(threads)]
    workers = [threading.Thread(target=work, args=(part,)) for part in parts]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if failures:
        sys.exit(f"{len(failures)} installations failed, first: {failures[0]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/release/herald")
    parser.add_argument("--devices", type=int, default=50_000)
    parser.add_argument("--signal", choices=["kill", "term"], default="kill")
    parser.add_argument("--platform", choices=sorted(PLATFORMS), default="fcm")
    parser.add_argument("--at", type=float, default=0.3, help="stop the node once this share of devices was reached")
    parser.add_argument("--port", type=int, default=18480)
    arguments = parser.parse_args()

    directory = tempfile.mkdtemp(prefix="herald-crash-")
    emulator = Emulator(arguments.herald, directory, arguments.platform)
    node = Node(arguments.herald, directory, emulator.settings, arguments.port)
    try:
        node.start()
        key_name, key = node.full_key()
        api = HubAPI(arguments.port, "app", key_name, key)
        print(f"registering {arguments.devices} {arguments.platform} installations through the hub API…", flush=True)
        started = time.monotonic()
        seed(api, arguments.devices, arguments.platform)
        _, _, send_format, send_body = PLATFORMS[arguments.platform]
        print(f"  {time.monotonic() - started:.1f} s", flush=True)
        # Installations become registrations when written; the broadcast targets them all.
        status, headers, data = api.request("POST", "/messages", body=json.dumps(send_body),
                                            headers={"Content-Type": "application/json;charset=utf-8",
                                                     "ServiceBusNotification-Format": send_format})
        if status != 201:
            sys.exit(f"the send answered {status}: {data[:300]}")
        location = headers.get("Location", "")
        notification = urllib.parse.urlparse(location).path.rsplit("/", 1)[-1]
        print(f"broadcast {notification} accepted; stopping the node with SIG{arguments.signal.upper()} "
              f"at {arguments.at:.0%} of the devices…", flush=True)
        threshold = int(arguments.devices * arguments.at)
        wait_for("the broadcast to reach the threshold", lambda: emulator.stats()["accepted"] >= threshold,
                 timeout=600, interval=0.01)
        stopped_in = node.stop(arguments.signal)
        at_stop = emulator.stats()
        print(f"  stopped in {stopped_in:.2f} s with {at_stop['accepted']} sends accepted by the emulator", flush=True)

        restarted = time.monotonic()
        node.start()
        resumed = wait_for("delivery to resume", lambda: emulator.stats()["accepted"] > at_stop["accepted"] and time.monotonic(),
                           timeout=300, interval=0.05) - restarted

        def finished():
            status, _, data = api.request("GET", f"/messages/{notification}")
            state = re.search(rb"<State>(\w+)</State>", data)
            return state and state.group(1) not in (b"Enqueued", b"Processing") and state.group(1).decode()

        state = wait_for("the broadcast to finish", finished, timeout=1200, interval=0.2)
        done = time.monotonic() - restarted
        stats = emulator.stats()
        lost = arguments.devices - stats["devices"]
        duplicated = stats["devicesReachedMoreThanOnce"]
        print(f"\nSIG{arguments.signal.upper()} at {at_stop['accepted']} of {arguments.devices} devices:")
        print(f"  state after restart:           {state}")
        print(f"  devices reached:               {stats['devices']} of {arguments.devices}")
        print(f"  devices lost:                  {lost}")
        print(f"  devices reached twice or more: {duplicated} ({stats['accepted'] - stats['devices']} extra sends)")
        print(f"  node stopped in:               {stopped_in:.2f} s")
        print(f"  delivery resumed after:        {resumed:.1f} s from the restart")
        print(f"  broadcast finished after:      {done:.1f} s from the restart")
        node.stop("term")
        return 0 if lost == 0 else 1
    finally:
        if node.process and node.process.poll() is None:
            node.process.kill()
        emulator.stop()
        print(f"(logs in {directory})")


if __name__ == "__main__":
    sys.exit(main())

"""Herald's processes for the scripts that test it as a deployment: `herald emulate` in a process
of its own, `herald serve` nodes, the hub REST API with a shared access signature,
installations registered through it, and PostgreSQL databases of their own (with `psql`).
Python's standard library only.
"""
import base64
import hashlib
import hmac
import http.client
import json
import os
import shutil
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from contextlib import contextmanager


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


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
            [herald, "emulate", "--data-dir", os.path.join(directory, "emulator"), "--open-registry", "--inbox", "1",
             "--log-level", "warning"],
            stdout=self.log, stderr=subprocess.STDOUT)
        env_file = os.path.join(directory, "emulator", "herald.env")
        wait_for("the emulator's settings", lambda: os.path.exists(env_file) and os.path.getsize(env_file) > 0)
        time.sleep(0.2)
        self.settings = dict(line.split("=", 1) for line in open(env_file).read().splitlines() if "=" in line)
        self.service = urllib.parse.urlparse(self.settings[f"HERALD_{platform.upper()}_ENDPOINT"])

    def stats(self, since=None):
        """The emulator's counts, over one kept-alive connection: the scripts poll every few
        milliseconds, and a TLS handshake a poll would take CPU from the processes measured.
        A connection that fails (the emulator closed it, or took over 10 s on a saturated
        machine) is opened anew, for up to a minute.

        With `since` (a `time.time()`), also `firstAcceptedSince` (ms since 1970, or None) and
        `longestPauseSince` (seconds): the emulator's own record of when sends resumed after
        that moment and how long they stood still since, exact even when a busy emulator
        answers a poll seconds late."""
        path = "/_emulator/stats" if since is None else f"/_emulator/stats?since={int(since * 1000)}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if getattr(self, "_stats_connection", None) is None:
                    context = ssl.create_default_context(cafile=self.settings["HERALD_APNS_CA_FILE"])
                    self._stats_connection = http.client.HTTPSConnection(
                        self.service.hostname, self.service.port, context=context, timeout=10)
                self._stats_connection.request("GET", path)
                return json.loads(self._stats_connection.getresponse().read())
            except (OSError, http.client.HTTPException) as error:
                self._stats_connection.close()
                self._stats_connection = None
                if time.monotonic() > deadline:
                    raise
                print(f"   (the emulator's stats: {error!r}; asking again)", file=sys.stderr, flush=True)
                time.sleep(0.1)

    def unregister(self, tokens):
        """Makes the emulator's devices `tokens` gone: a send to one is answered as a push
        service answers for an uninstalled app (APNs 410, FCM UNREGISTERED)."""
        context = ssl.create_default_context(cafile=self.settings["HERALD_APNS_CA_FILE"])
        connection = http.client.HTTPSConnection(self.service.hostname, self.service.port, context=context, timeout=30)
        for token in tokens:
            connection.request("POST", f"/_emulator/devices/{urllib.parse.quote(token, safe='')}/unregister")
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                sys.exit(f"the emulator did not unregister a device: {response.status}")
        connection.close()

    def sends_since(self, moment):
        """(seconds from `moment` to the first send accepted after it, or None; the longest
        time without a send from `moment` to the last send), by the emulator's clock."""
        stats = self.stats(since=moment)
        first = stats["firstAcceptedSince"]
        return (None if first is None else max(0.0, first / 1000 - moment)), stats["longestPauseSince"]

    def stop(self):
        if getattr(self, "_stats_connection", None) is not None:
            self._stats_connection.close()
        self.process.terminate()
        self.process.wait(timeout=30)


class Node:
    """A `herald serve` process with a data directory of its own (`<directory>/<name>`), on
    `port`, TLS off, delivering through the emulator's `settings`; with `database_url`, on
    that PostgreSQL database."""

    def __init__(self, herald, directory, settings, port, name="node", database_url=None, environment=None):
        self.herald = herald
        self.name = name
        self.data = os.path.join(directory, name)
        self.port = port
        self.env = dict(os.environ, **settings)
        self.env.update(HERALD_DATA_DIR=self.data, HERALD_PORT=str(port), HERALD_TLS_PORT="0", HERALD_LOG_LEVEL="warning")
        if database_url:
            self.env["HERALD_DATABASE_URL"] = database_url
        self.env.update(environment or {})
        self.log = open(os.path.join(directory, f"{name}.log"), "a")
        self.process = None

    def start(self):
        self.process = subprocess.Popen([self.herald, "serve"], env=self.env, stdout=self.log, stderr=subprocess.STDOUT)

        def up_or_exited():
            if self.process.poll() is not None:
                sys.exit(f"{self.name} exited with status {self.process.returncode}; see {self.log.name}")
            return self.healthy()

        wait_for(f"{self.name} to answer", up_or_exited)

    def healthy(self):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
            connection.request("GET", "/health")
            return connection.getresponse().status == 200
        except OSError:
            return False

    def stop(self, how, timeout=120):
        started = time.monotonic()
        self.process.send_signal(signal.SIGKILL if how == "kill" else signal.SIGTERM)
        self.process.wait(timeout=timeout)
        return time.monotonic() - started

    def herald_command(self, *arguments):
        """Runs `herald <arguments>` with this node's settings; its standard output."""
        return subprocess.run([self.herald, *arguments], env=self.env, capture_output=True, text=True, check=True).stdout

    def full_key(self, hub="app"):
        output = self.herald_command("hub", "keys", hub, "--hub-endpoint", f"sb://127.0.0.1:{self.port}/")
        match = re.search(r"SharedAccessKeyName=(DefaultFullSharedAccessSignature);SharedAccessKey=([^;\s]+)", output)
        if not match:
            sys.exit(f"`herald hub keys {hub}` printed no full-access key")
        return match.group(1), match.group(2)


class HubAPI:
    """The hub REST API with a shared access signature, as the cloud hub's SDKs send it."""

    def __init__(self, port, hub, key_name, key):
        self.port, self.hub, self.key_name, self.key = port, hub, key_name, key

    def authorization(self, lifetime=3600):
        """`SharedAccessSignature sr=…&sig=…&se=…&skn=…` for the hub's URL, good for `lifetime` seconds."""
        resource = urllib.parse.quote(f"http://127.0.0.1:{self.port}/{self.hub}", safe="").lower()
        expiry = str(int(time.time()) + lifetime)
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


class WebhookReceiver:
    """A plain-HTTP webhook receiver on 127.0.0.1 (a node reaches it with
    HERALD_WEBHOOK_HTTP_HOSTS=127.0.0.1): answers every event 204 and keeps each one's
    `webhook-id` and type, in the order received."""

    def __init__(self):
        import http.server
        received = self.received = []
        lock = self.lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            # Keep-alive, as receivers behind a web server are.
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                if len(body) < length:
                    # The sender died mid-request (a node killed by the test): nothing was
                    # delivered, and the event is sent again.
                    self.close_connection = True
                    return
                with lock:
                    received.append((self.headers.get("webhook-id"), json.loads(body).get("type")))
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *arguments):
                pass

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                # A connection reset by a node the test killed is expected, not a failure.
                if isinstance(sys.exc_info()[1], ConnectionError):
                    return
                super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/events"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self):
        with self.lock:
            return list(self.received)

    def stop(self):
        self.server.shutdown()


PLATFORMS = {
    # installation platform, a device handle, the send's format and body
    "apns": ("apns", lambda: os.urandom(32).hex(), "apple", {"aps": {"alert": "crash test"}}),
    "fcm": ("fcmv1", lambda: "crash:" + os.urandom(24).hex(), "fcmv1",
            {"message": {"notification": {"title": "crash", "body": "test"}}}),
}


def seed(api, devices, platform, threads=8, tag="crash"):
    """Registers `devices` installations carrying `tag` through `api` (or, for a list of APIs,
    through each in turn); returns their push channels."""
    apis = api if isinstance(api, list) else [api]
    installation_platform, make_handle, _, _ = PLATFORMS[platform]
    tokens = [make_handle() for _ in range(devices)]
    failures = []

    def work(part, api):
        connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=60)
        for token in part:
            installation = str(uuid.uuid4())
            body = json.dumps({"installationId": installation, "platform": installation_platform, "pushChannel": token, "tags": [tag]})
            while True:
                status, headers, data = api.request("PUT", f"/installations/{installation}", body=body,
                                                    headers={"Content-Type": "application/json"}, connection=connection)
                if status != 429:
                    break
                # Over the hub's rate limit (shared by the nodes): wait as told, as a client does.
                time.sleep(float(headers.get("Retry-After", "1")))
            if status != 200:
                failures.append((status, data[:200]))

    parts = [tokens[i::threads] for i in range(threads)]
    workers = [threading.Thread(target=work, args=(part, apis[i % len(apis)])) for i, part in enumerate(parts)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if failures:
        sys.exit(f"{len(failures)} installations failed, first: {failures[0]}")
    return tokens


def send(api, platform, tag=None):
    """Sends the platform's test notification to `tag` (every device without one); its id."""
    _, _, send_format, send_body = PLATFORMS[platform]
    headers = {"Content-Type": "application/json;charset=utf-8", "ServiceBusNotification-Format": send_format}
    if tag:
        headers["ServiceBusNotification-Tags"] = tag
    status, response_headers, data = api.request("POST", "/messages", body=json.dumps(send_body), headers=headers)
    if status != 201:
        sys.exit(f"the send answered {status}: {data[:300]}")
    return urllib.parse.urlparse(response_headers.get("Location", "")).path.rsplit("/", 1)[-1]


def state(api, notification):
    """The notification's state, as the hub API's notification details give it."""
    _, _, data = api.request("GET", f"/messages/{notification}")
    match = re.search(rb"<State>(\w+)</State>", data)
    return match.group(1).decode() if match else None


def finished_state(api, notification):
    current = state(api, notification)
    return current if current not in (None, "Enqueued", "Processing") else None


def start_sharing_keys(nodes):
    """Starts the nodes of one database: the first makes the secure-payload key, and the others
    are given a copy of it, as an operator does (the database keeps only its fingerprint)."""
    nodes[0].start()
    key_file = os.path.join(nodes[0].data, "keys", "secure-payload.key")
    for other in nodes[1:]:
        os.makedirs(os.path.join(other.data, "keys"), mode=0o700, exist_ok=True)
        shutil.copy2(key_file, os.path.join(other.data, "keys", "secure-payload.key"))
        other.start()


def require_database(arguments):
    """Exits with a clear message unless --database-url (or HERALD_TEST_DATABASE_URL) and
    `psql` are both there."""
    if not arguments.database_url:
        sys.exit("give --database-url (or set HERALD_TEST_DATABASE_URL)")
    if shutil.which("psql") is None:
        sys.exit("psql is needed (apt-get install postgresql-client)")


def psql(database_url, sql):
    """Runs one SQL statement with `psql`; its output, unaligned."""
    return subprocess.run(["psql", database_url, "-v", "ON_ERROR_STOP=1", "-tAc", sql], capture_output=True, text=True,
                          check=True).stdout.strip()


@contextmanager
def own_database(server_url, prefix):
    """A new database on the server of `server_url`, as a new deployment has; yields its URL
    (the parameters of `server_url` kept) and drops it at the end."""
    name = f"{prefix}_{os.getpid()}_{int(time.time())}"
    psql(server_url, f"CREATE DATABASE {name}")
    parsed = urllib.parse.urlsplit(server_url)
    try:
        yield urllib.parse.urlunsplit(parsed._replace(path="/" + name))
    finally:
        psql(server_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def stop_all(nodes, emulator):
    """Stops the nodes still running (SIGTERM), then the emulator."""
    for each in nodes:
        if each.process and each.process.poll() is None:
            each.stop("term")
    emulator.stop()


def verdict(failures, directory):
    """Prints the failures and where the logs are (exit status 1), or that every guarantee
    held, removing the logs (0)."""
    if failures:
        print("FAILED: " + "; ".join(failures))
        print(f"(logs in {directory})")
        return 1
    print("every guarantee held")
    shutil.rmtree(directory, ignore_errors=True)
    return 0

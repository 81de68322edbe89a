#!/usr/bin/env python3
"""What idle, slow and too many connections do to `herald serve`, as an attacker would try it.

Starts `herald serve` with a file-descriptor limit of --nofile and small timeouts, then:

1. opens more idle connections than file descriptors, and checks that /health still answers
   at once, that the server does not spin (CPU), and that a SIGTERM then stops it promptly;
2. (a second server, a limit of --max-connections) sends request heads whose bodies never
   come, until every allowed connection is busy, and checks that a new connection gets a
   clean `503` with `Retry-After`, and that the body timeout frees the connections;
3. checks that an idle connection, and one that trickles its request head (slowloris), are
   closed after the idle timeout.

Prints what it measured and `every guarantee held`, or exits 1. Python's standard library only.
"""
import argparse
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from heraldprocesses import free_port, wait_for

failures = []


def check(condition, what):
    print(("  ok    " if condition else "  FAIL  ") + what, flush=True)
    if not condition:
        failures.append(what)


def start(herald, directory, nofile, environment):
    port = free_port()
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    env.update(environment)
    env["HERALD_LOG_LEVEL"] = "warning"
    log = open(os.path.join(directory, f"serve-{port}.log"), "w")
    process = subprocess.Popen([herald, "serve", "--data-dir", os.path.join(directory, f"data-{port}"), "--port", str(port),
                                "--tls-port", "0"], stdout=log, stderr=subprocess.STDOUT, env=env, preexec_fn=limit)
    wait_for("herald serve", lambda: health(port, 1) == 200 or process.poll() is not None, timeout=120, interval=0.2)
    if process.poll() is not None:
        sys.exit(f"herald serve exited: see {log.name}")
    return process, port


def health(port, timeout=5):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except Exception:
        return None


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(process):
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        return None
    return time.monotonic() - started


def closed_by_server(connection, within):
    """Whether the server closes the connection within `within` seconds (reading past any answer)."""
    deadline = time.monotonic() + within
    try:
        while (left := deadline - time.monotonic()) > 0:
            connection.settimeout(left)
            if connection.recv(4096) == b"":
                return True
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True
    return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/debug/herald")
    parser.add_argument("--nofile", type=int, default=1024)
    parser.add_argument("--max-connections", type=int, default=20)
    arguments = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="herald-connections-")
    # This process opens more connections than the server may hold.
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard == resource.RLIM_INFINITY else min(8192, hard), hard))

    idle = arguments.nofile + arguments.nofile // 10
    print(f"1. {idle} idle connections against a limit of {arguments.nofile} file descriptors", flush=True)
    process, port = start(arguments.herald, directory, arguments.nofile, {})
    connections = []
    for _ in range(idle):
        try:
            connections.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            break
    time.sleep(2)
    before = cpu_seconds(process.pid)
    time.sleep(3)
    busy = (cpu_seconds(process.pid) - before) / 3
    started = time.monotonic()
    status = health(port)
    answered = time.monotonic() - started
    print(f"  {len(connections)} connections open; /health answered {status} in {answered * 1000:.0f} ms; CPU {busy:.0%}", flush=True)
    check(status == 200 and answered < 2, "/health answers at once beside the idle connections")
    check(busy < 0.2, "the server does not spin")
    took = stop(process)
    print(f"  SIGTERM stopped it in {took:.2f} s" if took is not None else "  SIGTERM did not stop it in 60 s", flush=True)
    check(took is not None and took < 10, "SIGTERM stops it promptly")
    for connection in connections:
        connection.close()

    limit = arguments.max_connections
    print(f"2. every one of {limit} allowed connections busy with a body that never comes", flush=True)
    process, port = start(arguments.herald, directory, arguments.nofile,
                          {"HERALD_HTTP_MAX_CONNECTIONS": str(limit), "HERALD_HTTP_BODY_TIMEOUT": "3", "HERALD_HTTP_IDLE_TIMEOUT": "30"})
    stalled = []
    for _ in range(limit):
        connection = socket.create_connection(("127.0.0.1", port), timeout=5)
        connection.sendall(b"POST /api/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
        stalled.append(connection)
    time.sleep(0.5)
    refused = socket.create_connection(("127.0.0.1", port), timeout=5)
    refused.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    refused.settimeout(5)
    answer = b""
    try:
        while chunk := refused.recv(4096):
            answer += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    head = answer.split(b"\r\n\r\n", 1)[0].decode(errors="replace")
    print(f"  a new connection got: {head.splitlines()[0] if head else '(nothing)'}", flush=True)
    check(head.startswith("HTTP/1.1 503") and "Retry-After: 1" in head, "a connection beyond the limit gets 503 with Retry-After")
    freed = all(closed_by_server(connection, 6) for connection in stalled)
    check(freed, "the body timeout closes connections whose body never comes")
    check(health(port) == 200, "/health answers once they are closed")
    stop(process)

    print("3. idle and slowloris connections with an idle timeout of 2 s", flush=True)
    process, port = start(arguments.herald, directory, arguments.nofile, {"HERALD_HTTP_IDLE_TIMEOUT": "2"})
    quiet = socket.create_connection(("127.0.0.1", port), timeout=5)
    started = time.monotonic()
    closed = closed_by_server(quiet, 10)
    print(f"  an idle connection was closed after {time.monotonic() - started:.1f} s", flush=True)
    check(closed, "an idle connection is closed after the idle timeout")
    trickle = socket.create_connection(("127.0.0.1", port), timeout=5)
    started = time.monotonic()
    closed = False
    for byte in b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40:
        try:
            trickle.sendall(bytes([byte]))
        except OSError:
            closed = True
            break
        if closed_by_server(trickle, 0.1):
            closed = True
            break
    print(f"  a trickled request head was cut after {time.monotonic() - started:.1f} s", flush=True)
    check(closed and time.monotonic() - started < 8, "a request head sent byte by byte is cut after the idle timeout")
    stop(process)

    print("every guarantee held" if not failures else "FAILED: " + "; ".join(failures), flush=True)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())

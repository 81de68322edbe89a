#!/usr/bin/env python3
"""An HTTP/2 server on hyper-h2 (cleartext, prior knowledge), an implementation independent of
Herald's, for its HTTP/2 client to talk to.

Usage: h2_server.py PORT_FILE REQUESTS

Listens on 127.0.0.1, on a port of the system's choosing, and writes the port to PORT_FILE.
Its SETTINGS make the client work: at most 4 streams at once, a stream window of 1,000 bytes
(a body of more waits for WINDOW_UPDATE), a header table of 512 bytes. Every request is
answered with status 200, `x-length` (the body's length), `x-path` (the request's :path) and
the body echoed back; after the first answer the server sends a PING. hyper-h2 checks every
frame the client sends (flow control, stream states, header blocks) and fails the connection
on a violation.

When REQUESTS requests have been answered and every connection has closed (or after 60 s),
prints one JSON object: {"responses", "connections", "ping_acks", "max_open_streams",
"errors"} and exits 0.

Requires: pip install h2
"""

import asyncio
import json
import os
import sys

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings


async def main() -> None:
    port_file, expected = sys.argv[1], int(sys.argv[2])
    state = {"responses": 0, "connections": 0, "open": 0, "ping_acks": 0, "max_open_streams": 0, "errors": []}
    finished = asyncio.Event()

    def check_done() -> None:
        if state["responses"] >= expected and state["open"] == 0:
            finished.set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state["connections"] += 1
        state["open"] += 1
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        connection = h2.connection.H2Connection(config=config)
        connection.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 4,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1000,
                h2.settings.SettingCodes.HEADER_TABLE_SIZE: 512,
            },
        )
        connection.initiate_connection()
        writer.write(connection.data_to_send())
        requests: dict[int, tuple[str, bytearray]] = {}
        pinged = False
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                try:
                    events = connection.receive_data(data)
                except h2.exceptions.ProtocolError as error:
                    state["errors"].append(f"{type(error).__name__}: {error}")
                    writer.write(connection.data_to_send())
                    break
                for event in events:
                    if isinstance(event, h2.events.RequestReceived):
                        path = dict(event.headers).get(":path", "")
                        requests[event.stream_id] = (path, bytearray())
                        state["max_open_streams"] = max(state["max_open_streams"], len(requests))
                    elif isinstance(event, h2.events.DataReceived):
                        requests[event.stream_id][1].extend(event.data)
                        connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    elif isinstance(event, h2.events.StreamEnded):
                        path, body = requests.pop(event.stream_id)
                        headers = [(":status", "200"), ("x-length", str(len(body))), ("x-path", path)]
                        connection.send_headers(event.stream_id, headers, end_stream=not body)
                        if body:
                            connection.send_data(event.stream_id, bytes(body), end_stream=True)
                        state["responses"] += 1
                        if not pinged:
                            pinged = True
                            connection.ping(b"herald!!")
                    elif isinstance(event, h2.events.PingAckReceived):
                        state["ping_acks"] += 1
                    elif isinstance(event, h2.events.StreamReset):
                        state["errors"].append(f"stream {event.stream_id} reset by the client ({event.error_code})")
                    elif isinstance(event, h2.events.ConnectionTerminated):
                        if event.error_code != 0:
                            state["errors"].append(f"GOAWAY from the client ({event.error_code})")
                writer.write(connection.data_to_send())
                await writer.drain()
        finally:
            writer.close()
            state["open"] -= 1
            check_done()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with open(port_file + ".tmp", "w") as file:
        file.write(str(port))
    os.replace(port_file + ".tmp", port_file)
    try:
        await asyncio.wait_for(finished.wait(), timeout=60)
    except asyncio.TimeoutError:
        state["errors"].append("timed out")
    server.close()
    del state["open"]
    print(json.dumps(state))


asyncio.run(main())

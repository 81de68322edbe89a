#!/usr/bin/env python3
"""Sends APNs notifications with aioapns, the APNs client of the Matrix push gateway (Sygnal),
to an APNs endpoint such as Herald's emulator. aioapns opens TLS without ALPN and speaks
HTTP/2 with prior knowledge, which real APNs accepts.

Usage:
  apns_aioapns.py --host H --port P --ca FILE --key FILE --key-id K --team-id T --topic T
                  --token TOKEN [--count N]
  apns_aioapns.py --host H --port P --ca FILE --client-cert FILE [--topic T]
                  --token TOKEN [--count N]
  either with [--push-type TYPE --request-topic TOPIC] [--payload JSON] …

--ca           the CA certificate (PEM) to trust for the endpoint
--key          the ES256 signing key (PEM, the contents of an AuthKey_….p8 file): token
               authentication
--client-cert  an APNs client certificate and its key in one PEM file: certificate
               authentication; without --topic, aioapns reads the topic from the
               certificate's subject UID
--push-type    the apns-push-type (for example liveactivity), with --request-topic the
               request's apns-topic (for example <bundle id>.push-type.liveactivity)
--payload      the notification (JSON) instead of an alert; "{index}" in it becomes the
               notification's index
--token and --payload may be repeated: the Nth payload goes to the Nth token (one payload
goes to every token), all on one connection with one provider token.

Prints one JSON object: {"results": [{"successful", "status", "description"}, …]}, one per
notification, sent one after the other on one connection. Exits 0 when every send got an
answer, whatever it was.

Requires: pip install aioapns
"""

import argparse
import asyncio
import json
import ssl

from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsProductionClientProtocol


async def main(arguments):
    # aioapns takes APNs' address from its protocol class; nothing else is changed.
    APNsProductionClientProtocol.APNS_SERVER = arguments.host
    APNsProductionClientProtocol.APNS_PORT = arguments.port
    context = ssl.create_default_context(cafile=arguments.ca)
    if arguments.client_cert:
        client = APNs(client_cert=arguments.client_cert, topic=arguments.topic, use_sandbox=False,
                      ssl_context=context, max_connections=1)
    else:
        with open(arguments.key) as file:
            key = file.read()
        client = APNs(key=key, key_id=arguments.key_id, team_id=arguments.team_id, topic=arguments.topic,
                      use_sandbox=False, ssl_context=context, max_connections=1)
    results = []
    payloads = arguments.payload or [None]
    for position, token in enumerate(arguments.token):
        payload = payloads[min(position, len(payloads) - 1)]
        for index in range(arguments.count):
            if payload:
                message = json.loads(payload.replace("{index}", str(index)))
            else:
                message = {"aps": {"alert": f"hello {index}"}}
            request = NotificationRequest(
                device_token=token, message=message,
                push_type=PushType(arguments.push_type) if arguments.push_type else None,
                apns_topic=arguments.request_topic)
            result = await client.send_notification(request)
            results.append({"successful": result.is_successful, "status": str(result.status),
                            "description": result.description})
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ["--host", "--ca"]:
        parser.add_argument(name, required=True)
    parser.add_argument("--token", required=True, action="append")
    parser.add_argument("--payload", action="append")
    for name in ["--key", "--key-id", "--team-id", "--topic", "--client-cert", "--push-type", "--request-topic"]:
        parser.add_argument(name)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--count", type=int, default=1)
    parsed = parser.parse_args()
    if not parsed.client_cert and not (parsed.key and parsed.key_id and parsed.team_id and parsed.topic):
        parser.error("give --client-cert, or --key, --key-id, --team-id and --topic")
    asyncio.run(asyncio.wait_for(main(parsed), timeout=60))

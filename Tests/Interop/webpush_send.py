#!/usr/bin/env python3
"""Sends one Web Push message with pywebpush (encryption by http_ece, VAPID by py_vapid) to a
subscription, for example one issued by Herald's Web Push emulator.

Usage:
  webpush_send.py --subscription FILE --message TEXT [--ca FILE] [--vapid-key FILE]
                  [--ttl N] [--urgency U] [--topic T] [--encoding aes128gcm|aesgcm]
                  [--subject mailto:...]

--subscription  the subscription JSON: {"endpoint": ..., "keys": {"p256dh": ..., "auth": ...}}
--ca            a CA certificate (PEM) to trust for the endpoint's TLS
--vapid-key     the application server's private key (PEM); a new one is generated with
                py_vapid when omitted

Prints one JSON object: {"status", "location", "body", "application_server_key"}. Exits 0 when
the push service answered (whatever the status), non-zero otherwise.

Requires: pip install http-ece py-vapid pywebpush cryptography
"""

import argparse
import json
import sys

import requests
from cryptography.hazmat.primitives import serialization
from py_vapid import Vapid, b64urlencode
from pywebpush import WebPushException, webpush


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--subscription", required=True)
    parser.add_argument("--message", required=True)
    parser.add_argument("--ca")
    parser.add_argument("--vapid-key")
    parser.add_argument("--ttl", type=int, default=60)
    parser.add_argument("--urgency")
    parser.add_argument("--topic")
    parser.add_argument("--encoding", default="aes128gcm")
    parser.add_argument("--subject", default="mailto:interop@herald.test")
    args = parser.parse_args()

    with open(args.subscription) as f:
        subscription = json.load(f)

    if args.vapid_key:
        vapid = Vapid.from_file(private_key_file=args.vapid_key)
    else:
        vapid = Vapid()
        vapid.generate_keys()
    application_server_key = b64urlencode(
        vapid.public_key.public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
    )

    session = requests.Session()
    if args.ca:
        # Trust exactly this CA: the environment (REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE) would
        # otherwise override the session's setting.
        session.trust_env = False
        session.verify = args.ca
    headers = {}
    if args.urgency:
        headers["Urgency"] = args.urgency
    if args.topic:
        headers["Topic"] = args.topic

    try:
        response = webpush(
            subscription_info=subscription,
            data=args.message,
            vapid_private_key=vapid,
            vapid_claims={"sub": args.subject},
            content_encoding=args.encoding,
            ttl=args.ttl,
            headers=headers,
            requests_session=session,
            timeout=30,
        )
    except WebPushException as error:
        response = error.response
        if response is None:
            print("no response: %s" % error, file=sys.stderr)
            sys.exit(2)

    print(
        json.dumps(
            {
                "status": response.status_code,
                "location": response.headers.get("Location"),
                "body": response.text,
                "application_server_key": application_server_key,
            }
        )
    )


if __name__ == "__main__":
    main()

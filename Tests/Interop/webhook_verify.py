#!/usr/bin/env python3
"""Verifies webhook requests with standardwebhooks, the Standard Webhooks reference library
for Python: each request's webhook-id, webhook-timestamp and webhook-signature headers and
its raw body, against the secret it should be signed with.

Usage:
  webhook_verify.py REQUESTS.json

REQUESTS.json is a list of {"secret", "id", "timestamp", "signature", "body"}: the secret
(whsec_…) and the request as received. Each request must verify with its secret, and must
not verify with a secret of the library's own making (a negative control).

Prints one JSON object: {"verified": N, "failures": ["…", …]}. Exits 0 when every request
verified and every control was refused.

Requires: pip install standardwebhooks
"""
import base64
import json
import os
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main():
    with open(sys.argv[1], encoding="utf-8") as file:
        requests = json.load(file)
    other = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    verified, failures = 0, []
    for request in requests:
        headers = {
            "webhook-id": request["id"],
            "webhook-timestamp": str(request["timestamp"]),
            "webhook-signature": request["signature"],
        }
        body = request["body"].encode("utf-8")
        try:
            Webhook(request["secret"]).verify(body, headers)
            verified += 1
        except WebhookVerificationError as error:
            failures.append(f"{request['id']}: {error}")
        try:
            Webhook(other).verify(body, headers)
            failures.append(f"{request['id']}: verified with another secret")
        except WebhookVerificationError:
            pass
    print(json.dumps({"verified": verified, "failures": failures}))
    return 0 if not failures and verified == len(requests) else 1


if __name__ == "__main__":
    sys.exit(main())

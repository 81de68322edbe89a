#!/usr/bin/env python3
"""Herald's OpenAPI contract against a live server: `herald serve` (its built-in push
emulators, SQLite in a temporary directory) serves `/openapi.json`; openapi-spec-validator
checks that it is a valid OpenAPI 3.1 document, and schemathesis generates requests from it
for every operation, signed in as a real account, and checks each answer: no 5xx, a status
code and a content type the contract names, a body and headers that match its schema.

    swift build
    scripts/openapi-test.py --herald .build/debug/herald

Needs openapi-spec-validator and schemathesis from PyPI.
"""
import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from heraldprocesses import Node, free_port  # noqa: E402

from openapi_spec_validator import validate  # noqa: E402


def request(port, method, path, body=None, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(method, path, body=json.dumps(body) if body is not None else None,
                       headers={"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    return response.status, response.read()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/debug/herald")
    parser.add_argument("--examples", type=int, default=25, help="requests schemathesis makes per operation")
    arguments = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="herald-openapi-")
    port = free_port()
    node = Node(os.path.abspath(arguments.herald), directory, {}, port, environment={"HERALD_BCRYPT_COST": "6"})
    try:
        node.start()
        status, body = request(port, "GET", "/openapi.json")
        if status != 200:
            print(f"FAILED: GET /openapi.json answered {status}")
            return 1
        contract = json.loads(body)
        validate(contract)
        print(f"/openapi.json is a valid OpenAPI {contract['openapi']} document ({len(contract['paths'])} paths)")

        # A real account, and a bearer token for every generated request.
        request(port, "POST", "/api/accounts", {"username": "contract", "password": "contract-password"})
        status, body = request(port, "POST", "/api/token", {"username": "contract", "password": "contract-password"})
        if status != 200:
            print(f"FAILED: sign-in answered {status} {body[:200]!r}")
            return 1
        token = json.loads(body)["token"]
        run = subprocess.run(
            ["schemathesis", "run", f"http://127.0.0.1:{port}/openapi.json", "--url", f"http://127.0.0.1:{port}",
             "--header", f"Authorization: Bearer {token}",
             "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                         "response_schema_conformance,response_headers_conformance",
             "--max-examples", str(arguments.examples), "--seed", "1", "--no-color",
             "--exclude-operation-id", "signOut"],
            capture_output=True, text=True, timeout=900)
        print(run.stdout[-6000:])
        if run.returncode != 0:
            print(run.stderr[-3000:])
            print("FAILED: schemathesis found answers outside the contract")
            return 1
        print("every answer matched the contract")
        return 0
    finally:
        if node.process and node.process.poll() is None:
            node.stop("term")


if __name__ == "__main__":
    sys.exit(main())

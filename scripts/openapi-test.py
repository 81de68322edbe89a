#!/usr/bin/env python3
"""Herald's OpenAPI contract against a live server: `herald serve` (its built-in push
emulators, SQLite in a temporary directory) serves `/openapi.json`; openapi-spec-validator
checks that it is a valid OpenAPI 3.1 document, and schemathesis generates requests from it
for every operation and checks each answer: no 5xx, a status code and a content type the
contract names, a body and headers that match its schema. The app backend's operations are
signed in as a real account (a bearer token); the hub API's (`/{hub}/…`) address the server's
app hub with a shared access signature of its DefaultFullSharedAccessSignature rule.

    swift build
    scripts/openapi-test.py --herald .build/debug/herald

With `--contract FILE`, schemathesis reads the contract from that file instead of the served
`/openapi.json` (still against the running server), so a change to the contract can be tried
without building: `scripts/openapi-test.py --contract Sources/HeraldServer/OpenAPI/openapi.json`.

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
from heraldprocesses import HubAPI, Node, free_port  # noqa: E402

from openapi_spec_validator import validate  # noqa: E402


def request(port, method, path, body=None, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(method, path, body=json.dumps(body) if body is not None else None,
                       headers={"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    return response.status, response.read()


def toml_string(text):
    return json.dumps(text)  # a JSON string is a valid TOML basic string


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/debug/herald")
    parser.add_argument("--examples", type=int, default=25, help="requests schemathesis makes per operation")
    parser.add_argument("--contract", metavar="FILE",
                        help="test this contract file against the server instead of the /openapi.json it serves")
    parser.add_argument("--hub", default="app", help="the hub the hub API's operations address (default: the app hub)")
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
        location = f"http://127.0.0.1:{port}/openapi.json"
        if arguments.contract:
            location = os.path.abspath(arguments.contract)
            with open(location) as file:
                contract = json.load(file)
        validate(contract)
        print(f"{arguments.contract or '/openapi.json'} is a valid OpenAPI {contract['openapi']} document "
              f"({len(contract['paths'])} paths)")

        # A real account, and a bearer token for every generated request.
        request(port, "POST", "/api/accounts", {"username": "contract", "password": "contract-password"})
        status, body = request(port, "POST", "/api/token", {"username": "contract", "password": "contract-password"})
        if status != 200:
            print(f"FAILED: sign-in answered {status} {body[:200]!r}")
            return 1
        token = json.loads(body)["token"]

        # The hub API: a shared access signature of the hub's full-access rule, for the hub's
        # URL, good for the whole run; every generated request names that hub.
        key_name, key = node.full_key(arguments.hub)
        signature = HubAPI(port, arguments.hub, key_name, key).authorization(lifetime=24 * 3600)
        config = os.path.join(directory, "schemathesis.toml")
        with open(config, "w") as file:
            file.write(f"[auth.openapi.bearer]\nbearer = {toml_string(token)}\n\n"
                       f"[auth.openapi.sas]\napi_key = {toml_string(signature)}\n\n"
                       f"[parameters]\n\"path.hub\" = {toml_string(arguments.hub)}\n")
        run = subprocess.run(
            ["schemathesis", "--config-file", config, "run", location, "--url", f"http://127.0.0.1:{port}",
             "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                         "response_schema_conformance,response_headers_conformance",
             "--max-examples", str(arguments.examples), "--seed", "1", "--no-color",
             "--exclude-operation-id", "signOut"],
            # Run in the temporary directory: schemathesis keeps a cache where it runs.
            capture_output=True, text=True, timeout=900, cwd=directory)
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

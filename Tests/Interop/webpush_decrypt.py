#!/usr/bin/env python3
"""Checks a Web Push message that Herald produced with independent implementations.

The body is decrypted with http_ece (RFC 8188 / RFC 8291, aes128gcm) and the VAPID
Authorization header is verified with py_vapid and cryptography (RFC 8292).

Usage: webpush_decrypt.py DIR

DIR holds:
  ua_private.pem  the subscription's (user agent's) P-256 private key, PKCS#8 PEM
  auth            the subscription's 16-byte auth secret, base64url
  body.bin        the encrypted request body
  authorization   optional: the Authorization header value Herald sent
  audience        optional: the origin the VAPID token must name

Writes DIR/plaintext.bin and prints one JSON object: {"plaintext_length", "vapid": {...}}.
Exits non-zero, with the reason on stderr, when anything does not check out.

Requires: pip install http-ece py-vapid pywebpush cryptography
"""

import base64
import json
import os
import sys
import time

import http_ece
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from py_vapid import Vapid02


def b64url_decode(text):
    text = text.strip()
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def parse_vapid(header):
    """{"t": jwt, "k": key} from 'vapid t=..., k=...' (RFC 8292 section 3)."""
    scheme, _, params = header.strip().partition(" ")
    if scheme.lower() != "vapid":
        fail("the Authorization scheme is %r, not vapid" % scheme)
    values = {}
    for item in params.split(","):
        name, _, value = item.strip().partition("=")
        values[name.strip().lower()] = value.strip().strip('"')
    if "t" not in values or "k" not in values:
        fail("the vapid Authorization header lacks t or k")
    return values


def check_vapid(directory):
    path = os.path.join(directory, "authorization")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        header = f.read().strip()
    values = parse_vapid(header)
    token, key = values["t"], values["k"]

    # py_vapid's own verifier (it expects no space after the comma).
    if not Vapid02.verify("vapid t=%s,k=%s" % (token, key)):
        fail("py_vapid does not verify the VAPID token")

    # And again with cryptography alone: ES256 over header.claims, raw r||s signature.
    signing_input, _, signature = token.rpartition(".")
    raw = b64url_decode(signature)
    if len(raw) != 64:
        fail("the ES256 signature is %d bytes, not 64" % len(raw))
    public_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64url_decode(key))
    public_key.verify(
        encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")),
        signing_input.encode("ascii"),
        ec.ECDSA(hashes.SHA256()),
    )

    jwt_header = json.loads(b64url_decode(signing_input.split(".")[0]))
    claims = json.loads(b64url_decode(signing_input.split(".")[1]))
    if jwt_header.get("alg") != "ES256":
        fail("the JWT alg is %r" % jwt_header.get("alg"))
    audience_path = os.path.join(directory, "audience")
    if os.path.exists(audience_path):
        with open(audience_path) as f:
            audience = f.read().strip()
        if claims.get("aud") != audience:
            fail("aud is %r, expected %r" % (claims.get("aud"), audience))
    now = time.time()
    exp = claims.get("exp")
    if not isinstance(exp, int) or exp <= now or exp > now + 24 * 3600:
        fail("exp %r is not within the next 24 hours" % exp)
    sub = claims.get("sub", "")
    if not (sub.startswith("mailto:") or sub.startswith("https:")):
        fail("sub %r is neither mailto: nor https:" % sub)
    return {"verified": True, "header": jwt_header, "claims": claims, "k": key}


def main():
    if len(sys.argv) != 2:
        fail(__doc__)
    directory = sys.argv[1]
    with open(os.path.join(directory, "ua_private.pem"), "rb") as f:
        private_key = serialization.load_pem_private_key(f.read(), password=None)
    with open(os.path.join(directory, "auth")) as f:
        auth = b64url_decode(f.read())
    with open(os.path.join(directory, "body.bin"), "rb") as f:
        body = f.read()

    # http_ece reads the sender's public key from the header's keyid.
    plaintext = http_ece.decrypt(body, private_key=private_key, auth_secret=auth, version="aes128gcm")
    with open(os.path.join(directory, "plaintext.bin"), "wb") as f:
        f.write(plaintext)

    print(json.dumps({"plaintext_length": len(plaintext), "vapid": check_vapid(directory)}))


if __name__ == "__main__":
    main()

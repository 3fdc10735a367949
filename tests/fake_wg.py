"""A fake ``wg`` program for tests/test_wireguard.py: answers ``wg show IF FIELD`` the way
wireguard-tools prints it, records every argv it is called with, and prints a value shaped
like a private key for every call that would print a secret in the real tool (``dump``,
``private-key``, ``preshared-keys``, ``showconf``, ``show`` without a field), so a test can
prove nvtopo never asks for one and that no key-shaped secret reaches a snapshot.

Environment: ``FAKE_WG_LOG`` (file the argv lines are appended to, as JSON),
``FAKE_WG_MODE`` (``healthy``, ``eperm``, ``hang``), ``FAKE_WG_PEERS`` (JSON list of
``[public_key, endpoint, allowed_ips, age_s or null (never), keepalive or null]``).
"""

import json
import os
import sys
import time

#: The private key of wg(8)'s example: a secret-shaped value no snapshot may hold.
PRIVATE = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
PSK = "FpCyhws9cxwWoV4xELtfJvjJN+zQVRPISllRWgeopVE="
OWN_PUBLIC = "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw="


def main(argv):
    log = os.environ.get("FAKE_WG_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(argv) + "\n")
    mode = os.environ.get("FAKE_WG_MODE", "healthy")
    peers = json.loads(os.environ.get("FAKE_WG_PEERS", "[]"))
    if len(argv) < 3 or argv[0] != "show" or argv[2] in ("dump", "private-key",
                                                         "preshared-keys"):
        # the real tool prints the private key (and preshared keys) here
        print(f"interface: wg0\n  private key: {PRIVATE}\n  preshared key: {PSK}")
        print(f"{OWN_PUBLIC}\t{PRIVATE}\t{PSK}\t51820\toff")
        return 0
    if argv[0] == "showconf":
        print(f"[Interface]\nPrivateKey = {PRIVATE}")
        return 0
    if mode == "hang":  # a wg stuck in the kernel's netlink call
        time.sleep(120)
    if mode == "eperm":
        print("Unable to access interface: Operation not permitted", file=sys.stderr)
        return 1
    field = argv[2]
    now = int(time.time())
    if field == "public-key":
        print(OWN_PUBLIC)
    elif field == "listen-port":
        print(51820)
    elif field == "peers":
        for p in peers:
            print(p[0])
    elif field == "endpoints":
        for p in peers:
            print(f"{p[0]}\t{p[1] or '(none)'}")
    elif field == "allowed-ips":
        for p in peers:
            print(f"{p[0]}\t{p[2] or '(none)'}")
    elif field == "latest-handshakes":
        for p in peers:
            print(f"{p[0]}\t{0 if p[3] is None else now - p[3]}")
    elif field == "transfer":
        for p in peers:
            print(f"{p[0]}\t123456\t654321")
    elif field == "persistent-keepalive":
        for p in peers:
            print(f"{p[0]}\t{p[4] if p[4] else 'off'}")
    else:
        print(f"Invalid subcommand: {field}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

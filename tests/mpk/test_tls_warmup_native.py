"""TLS handshakes in more than one function: OpenSSL's method store stays shared.

What a handshake fetches (key exchange, signature, KDF implementations) is cached by
OpenSSL process-wide, in memory malloc'ed by whichever thread fetched it first. No keys
here, so the test emulates them as test_library_caches_native.py does: a thread inside a
private heap completes a TLS handshake (over memory buffers, with CPython's own test
certificates), the heap's pages are made inaccessible (``mprotect PROT_NONE``, what the
owner's key does to every other thread), and a second handshake runs outside. With the
warm-up of ``library_caches.warm_tls_handshakes`` it completes; the control (the
context-creation warm-up only, as before the handshake warm-up existed) dies of SIGSEGV.
"""

from __future__ import annotations

import signal
import subprocess

import key_emulation

SNIPPET = """
import json, os, ssl, sys
import _faastlane
from faastlane.runtime.isolation import library_caches
from key_emulation import use_inside_then_revoke

library_caches.warm_openssl()
warnings = library_caches.warm_tls_handshakes() if sys.argv[1] == "warm" else None
CERTS = os.path.join(os.path.dirname(ssl.__file__), "test", "certdata")
domain = _faastlane.Domain(private_heap=True)

def handshake(cert, host):
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(os.path.join(CERTS, cert))
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.load_verify_locations(os.path.join(CERTS, "pycacert.pem"))
    up, down = ssl.MemoryBIO(), ssl.MemoryBIO()
    ends = [client.wrap_bio(down, up, server_hostname=host),
            server.wrap_bio(up, down, server_side=True)]
    for _ in range(10):
        for end in list(ends):
            try:
                end.do_handshake()
                ends.remove(end)
            except ssl.SSLWantReadError:
                pass
    return not ends

# A function's first HTTPS call, then the owner's key emulated.
use_inside_then_revoke(domain, lambda: handshake("keycertecc.pem", "localhost-ecc"))
print(json.dumps({"done": handshake("keycert3.pem", "localhost"), "warnings": warnings}),
      flush=True)
"""


def run(runtime: str, mode: str) -> subprocess.CompletedProcess[str]:
    return key_emulation.run(runtime, SNIPPET, mode)


def test_a_second_handshake_after_one_inside_a_domain_completes(runtime: str) -> None:
    done = run(runtime, "warm")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '{"done": true, "warnings": []}'


def test_control_without_the_handshake_warm_up_faults_outside(runtime: str) -> None:
    done = run(runtime, "control")
    assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stdout, done.stderr)

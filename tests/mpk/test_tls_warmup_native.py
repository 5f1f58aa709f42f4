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

import os
import signal
import subprocess
import textwrap

from probe_runs import REPO

SNIPPET = """
import ctypes, json, os, ssl, sys, threading
import _faastlane
from faastlane.runtime import library_caches

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

def inside():
    with domain:
        handshake("keycertecc.pem", "localhost-ecc")  # a function's first HTTPS call

thread = threading.Thread(target=inside)
thread.start()
thread.join()
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
assert libc.mprotect(domain.base, domain.committed, 0) == 0  # the owner's key, emulated
print(json.dumps({"done": handshake("keycert3.pem", "localhost"), "warnings": warnings}),
      flush=True)
"""


def run(runtime: str, mode: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(REPO / "composer"), os.environ.get("PYTHONPATH")]))
    return subprocess.run([runtime, "-c", textwrap.dedent(SNIPPET), mode],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=path, FAASTLANE_MPK="off"))


def test_a_second_handshake_after_one_inside_a_domain_completes(runtime: str) -> None:
    done = run(runtime, "warm")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '{"done": true, "warnings": []}'


def test_control_without_the_handshake_warm_up_faults_outside(runtime: str) -> None:
    done = run(runtime, "control")
    assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stdout, done.stderr)

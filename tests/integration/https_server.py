"""A local HTTP(S) server whose every GET answers its own path.

As a script, for the QEMU guest: ``https_server.py CERT KEY`` binds 127.0.0.1 on a free
port, leaves a child serving (for the rest of the guest's life) and prints the
``export`` lines that point the functions at it, as ``examples/local-aws/start`` does
for the AWS endpoints. The native tests serve from a thread (:func:`serving`).
"""

from __future__ import annotations

import http.server
import os
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def server(cert: str | None = None, key: str | None = None) -> http.server.HTTPServer:
    """A server on 127.0.0.1 (a free port), over TLS when given a certificate."""
    answering = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    if cert is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        answering.socket = context.wrap_socket(answering.socket, server_side=True)
    return answering


def self_signed_certificate(folder: Path) -> tuple[str, str]:
    """A throwaway certificate for 127.0.0.1 (an ECDSA P-256 key), made with openssl."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return str(cert), str(key)


@contextmanager
def serving(cert: str | None = None, key: str | None = None) -> Iterator[str]:
    """A :func:`server` answering from a thread while the block runs; yields its URL."""
    answering = server(cert, key)
    threading.Thread(target=answering.serve_forever, daemon=True).start()
    scheme = "https" if cert is not None else "http"
    try:
        yield f"{scheme}://127.0.0.1:{answering.server_address[1]}"
    finally:
        answering.shutdown()


def main(cert: str, key: str) -> int:
    server_ = server(cert, key)
    if os.fork() == 0:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        server_.serve_forever()
        os._exit(0)
    print(f"export HTTPS_TEST_URL=https://127.0.0.1:{server_.server_address[1]}")
    print(f"export HTTPS_TEST_CA={cert}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

"""Process-wide library state that functions would otherwise create inside their domains.

Made on a function's thread inside its domain, such state is private, and the next
function that uses the library faults reading it. It holds types and configuration, not
a function's data, so it is made shared (the standard library's own caches are kept
per function instead: stdlib_caches.py):

- caches that C extensions grow on whichever thread needs a new entry: the code that
  grows them allocates in the shared heap (``_faastlane.share_allocations_of``), found by
  symbol when the library is loaded;
- memo dicts that Python libraries fill as they go (botocore's name conversions) are
  not shared but kept per function, as the standard library's caches are
  (stdlib_caches.py).

Library state that belongs to its caller (boto3's default session) is not shared but
made per function: module_instances.py.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import FunctionType, ModuleType
from typing import Any

from . import domains
from .elf_symbols import code_ranges

# Extension module -> the functions (name prefixes) that allocate its shared caches.
KNOWN_CACHES: dict[str, tuple[str, ...]] = {
    # numpy's ufunc dispatch and promotion caches: an identity hash of DType tuples
    # whose bucket table is reallocated (PyMem_Calloc) when it fills. And two free
    # lists of five blocks each, process-wide: array-coercion nodes
    # (_coercion_cache_cache: np.asarray of a sequence) and legacy ufunc loops' data
    # (loop_data_cache: every ufunc call and reduction); their blocks are allocated by
    # helpers inlined into these functions. A block one function freed there served
    # the next one's call -- with keys a fault, whichever function ran at the same time.
    "numpy._core._multiarray_umath": ("PyArrayIdentityHash_",
                                      "PyArray_DiscoverDTypeAndShape_Recursive",
                                      "get_new_loop_data",
                                      "get_wrapped_legacy_ufunc_loop"),
}

# Module -> its module-level memo dicts: each function gets its own copy
# (memos_per_function).
MEMO_DICTS: dict[str, tuple[str, ...]] = {
    # xform_name: CamelCase -> snake_case names (API operations, endpoint functions).
    "botocore": ("_xform_cache",),
}


# Standard-library modules whose functions fill module globals on first use (a compiled
# regex, a lookup table, a name sequence): each warm-up call fills them outside every
# domain. Made inside one, the global would hold the function's private object.
LAZY_GLOBALS: dict[str, tuple[tuple[str, tuple[object, ...]], ...]] = {
    "urllib.parse": (("_splittype", ("http://h/p",)), ("_splithost", ("//h:1/p",)),
                     ("_splitport", ("h:1",)), ("unquote_to_bytes", ("%41",))),
    "base64": (("a85encode", (b"x",)), ("b85encode", (b"x",)), ("b85decode", (b"00",))),
    # mktemp draws a name: the name sequence's random generator is made (per process).
    "tempfile": (("gettempdir", ()), ("_get_candidate_names", ()), ("mktemp", ())),
    "mimetypes": (("guess_type", ("x.txt",)),),
}
# Of those, the modules whose lazy state is per process (tempfile's generator is made
# again in a forked child on first use): warmed again in every forked child, as it
# starts, outside every domain -- a pool worker's job would otherwise make it in its own.
PER_PROCESS = ("tempfile",)
# Module -> (global, factory in the module): a default the module makes on first use and
# keeps, holding configuration only (urlopen()'s opener: its handlers and the proxies
# read from the environment). Made here, shared, as the module would make it.
LAZY_DEFAULTS: dict[str, tuple[str, str]] = {
    "urllib.request": ("_opener", "build_opener"),
}
# Module -> its socket wait, for a library that picks an implementation on first use and
# rebinds a global to it (urllib3 chooses poll or select): the choice is made
# here, outside every domain, before the namespace is frozen -- a function's first
# request would otherwise be refused the rebinding.
LAZY_CHOICES: dict[str, str] = {"urllib3.util.wait": "wait_for_read"}
# What has been warmed or registered (module names, "openssl", "tls"): once each.
_done: set[str] = set()


def memos_per_function() -> None:
    """Make the memo dicts of the MEMO_DICTS modules loaded so far per function (once
    each): a _faastlane.PerFunctionDict in the module and in every default argument of
    its functions that binds the dict (botocore's xform_name does)."""
    native = domains.native_module()
    for module_name, names in MEMO_DICTS.items():
        module = sys.modules.get(module_name)
        if module is None or f"memo:{module_name}" in _done:
            continue
        _done.add(f"memo:{module_name}")
        for name in names:
            memo = getattr(module, name, None)
            if type(memo) is not dict:
                continue
            per_function = native.PerFunctionDict(memo)
            setattr(module, name, per_function)
            for value in vars(module).values():
                defaults = getattr(value, "__defaults__", None)
                if isinstance(value, FunctionType) and defaults and \
                        any(d is memo for d in defaults):
                    value.__defaults__ = tuple(per_function if d is memo else d
                                               for d in defaults)


def warm_lazy_globals() -> None:
    """Fill the lazily made globals of the LAZY_GLOBALS, LAZY_DEFAULTS and LAZY_CHOICES
    modules loaded so far (once each)."""
    if "at-fork" not in _done:
        _done.add("at-fork")
        os.register_at_fork(after_in_child=_warm_per_process)
    for module_name in (*LAZY_GLOBALS, *LAZY_DEFAULTS):
        module = sys.modules.get(module_name)
        if module is None or module_name in _done:
            continue
        _done.add(module_name)
        for function, args in LAZY_GLOBALS.get(module_name, ()):
            getattr(module, function)(*args)
        if module_name in LAZY_DEFAULTS:
            name, factory = LAZY_DEFAULTS[module_name]
            if getattr(module, name, None) is None:
                setattr(module, name, getattr(module, factory)())
    for module_name, wait in LAZY_CHOICES.items():
        module = sys.modules.get(module_name)
        if module is not None and module_name not in _done:
            _done.add(module_name)
            _wait_once(getattr(module, wait))


def _warm_per_process() -> None:
    for module_name in PER_PROCESS:
        module = sys.modules.get(module_name)
        if module is not None and module_name in _done:
            for function, args in LAZY_GLOBALS[module_name]:
                getattr(module, function)(*args)


def _wait_once(wait: Callable[..., Any]) -> None:
    """A socket wait on an idle socket, without waiting."""
    import socket

    left, right = socket.socketpair()
    try:
        wait(left, timeout=0)
    finally:
        left.close()
        right.close()


def share_loaded() -> list[str]:
    """Register the cache-growing code of every known extension loaded so far (once
    each); returns a warning per extension whose code could not be found."""
    warnings = []
    for module_name, prefixes in KNOWN_CACHES.items():
        module = sys.modules.get(module_name)
        path = getattr(module, "__file__", None)
        if path is None or module_name in _done:
            continue
        _done.add(module_name)
        ranges = code_ranges(path, prefixes)
        if not ranges:
            warnings.append(f"{module_name}: no symbol for {', '.join(prefixes)} in {path}; "
                            "a function that grows its cache may fault the next user")
        for found in ranges:
            domains.native_module().share_allocations_of(found.start, found.end)
    return warnings


# Certificate bundles clients load into their TLS contexts, besides the system's.
_CA_BUNDLE_VARIABLES = ("AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")
def warm_openssl() -> None:
    """OpenSSL keeps process-wide caches it fills on first use: the algorithms a TLS
    context fetches (ciphers, digests, the PEM and DER decoders that read certificates)
    are cached in its method store, a hash table every later fetch walks. Made inside a
    domain (botocore makes a TLS context with every client), the entries are private
    and the next function's fetch faults on them. So once ``ssl`` is loaded, a client
    context with the system's and the configured CA bundles is made here, outside
    every domain. Algorithms only a TLS handshake fetches are not warmed
    (PRIVATE_HEAPS.md section 8)."""
    ssl = sys.modules.get("ssl")
    if ssl is None or "openssl" in _done:
        return
    _done.add("openssl")
    context = ssl.create_default_context()
    bundles = {os.environ.get(name) for name in _CA_BUNDLE_VARIABLES}
    certifi = sys.modules.get("certifi")
    if certifi is not None:
        bundles.add(certifi.where())
    for bundle in sorted(b for b in bundles if b and os.path.isfile(b)):
        try:
            context.load_verify_locations(bundle)
        except (OSError, ssl.SSLError):
            pass  # the client that loads it reports the problem


# CPython's own test certificates (an RSA and an ECDSA server key and the CA that signed
# them, public, shipped with the interpreter's test package) and the host names they
# carry: the in-memory warm-up handshakes below use them.
_HANDSHAKE_CERTS = {"keycert3.pem": "localhost", "keycertecc.pem": "localhost-ecc"}
_HANDSHAKE_CA = "pycacert.pem"


def warm_tls_handshakes() -> list[str]:
    """What a TLS handshake fetches (key exchange, signatures, KDFs) is cached in
    OpenSSL's method store like the rest: a first handshake inside one function's
    domain leaves private entries the next function's handshake faults on. So, once
    ``ssl`` is loaded, in-memory handshakes (TLS 1.3 and 1.2, an RSA and an ECDSA
    server certificate) run outside every domain. Algorithms a real server negotiates
    beyond these are not warmed. Returns a warning if the certificates are missing."""
    ssl = sys.modules.get("ssl")
    if ssl is None or "tls" in _done:
        return []
    _done.add("tls")
    assert ssl.__file__ is not None  # a source module
    certdata = os.path.join(os.path.dirname(ssl.__file__), "test", "certdata")
    files = [os.path.join(certdata, name) for name in (*_HANDSHAKE_CERTS, _HANDSHAKE_CA)]
    if not all(os.path.isfile(path) for path in files):
        return [f"no test certificates in {certdata}: TLS handshakes are not warmed, a "
                "second function's handshake may fault under keys"]
    ca = os.path.join(certdata, _HANDSHAKE_CA)
    for cert, host in _HANDSHAKE_CERTS.items():
        for version in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2):
            _handshake(ssl, os.path.join(certdata, cert), ca, host, version)
    return []


def _handshake(ssl: ModuleType, cert: str, ca: str, host: str, version: Any) -> None:
    """One client/server handshake and one record each way, over memory buffers."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert)
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.maximum_version = version
    client.load_verify_locations(ca)
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    ends = (client.wrap_bio(to_client, to_server, server_hostname=host),
            server.wrap_bio(to_server, to_client, server_side=True))
    done = [False, False]
    for _ in range(10):
        for i, end in enumerate(ends):
            if not done[i]:
                try:
                    end.do_handshake()
                    done[i] = True
                except ssl.SSLWantReadError:
                    pass
        if all(done):
            break
    ends[0].write(b"warm")
    ends[1].read()
    ends[1].write(b"warm")
    ends[0].read()


def prepare_loaded() -> list[str]:
    """Everything above, for the libraries loaded so far, before a function's domain is
    entered: C caches registered shared, memo dicts made per function, OpenSSL and the
    lazily made globals warmed.
    Returns warnings to report (a cache or the test certificates not found)."""
    warnings = share_loaded()
    memos_per_function()
    warm_openssl()
    warnings += warm_tls_handshakes()
    warm_lazy_globals()
    return warnings

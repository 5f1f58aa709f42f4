"""Where to find OpenWhisk and who we are there, resolved as ``wsk`` resolves it.

Precedence: command-line options, then the ``__OW_APIHOST``/``__OW_API_KEY``/
``__OW_NAMESPACE`` environment variables (what actions and the JavaScript client use),
then the properties file ``wsk`` writes (``$WSK_CONFIG_FILE``, default ``~/.wskprops``:
``APIHOST=``, ``AUTH=``, ``NAMESPACE=`` lines).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from faastlane.runtime.parallel import openwhisk_rest

from .errors import MissingConfiguration

DEFAULT_NAMESPACE = "_"  # the authenticated user's own namespace


@dataclass(frozen=True)
class OpenWhiskConfig:
    apihost: str  # a URL: https://HOST[:PORT]
    auth: str  # "UUID:KEY"
    namespace: str = DEFAULT_NAMESPACE


def properties_file() -> str:
    return os.environ.get("WSK_CONFIG_FILE") or os.path.join(os.path.expanduser("~"),
                                                              ".wskprops")


def read_properties(path: str) -> dict[str, str]:
    """KEY=VALUE lines; a missing file is an empty one, as for ``wsk``."""
    found: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                key, sep, value = line.strip().partition("=")
                if sep and not key.startswith("#"):
                    found[key.strip().upper()] = value.strip()
    except FileNotFoundError:
        pass
    return found


def normalise_apihost(apihost: str) -> str:
    """``wsk`` takes a bare host (``openwhisk.example.com``) and means HTTPS."""
    return openwhisk_rest.base_url(apihost)


def resolve(apihost: str | None = None, auth: str | None = None,
            namespace: str | None = None) -> OpenWhiskConfig:
    """The configuration to use; MissingConfiguration names every way to give it."""
    props = read_properties(properties_file())
    host = apihost or os.environ.get("__OW_APIHOST") or props.get("APIHOST")
    key = auth or os.environ.get("__OW_API_KEY") or props.get("AUTH")
    where = f"--apihost/--auth, __OW_APIHOST/__OW_API_KEY, or APIHOST=/AUTH= in {properties_file()}"
    if not host:
        raise MissingConfiguration(f"no OpenWhisk API host: give it with {where}")
    if not key:
        raise MissingConfiguration(f"no OpenWhisk credentials: give them with {where}")
    if ":" not in key:
        raise MissingConfiguration("the OpenWhisk key must be UUID:KEY, as `wsk property get "
                                   "--auth` prints it")
    ns = namespace or os.environ.get("__OW_NAMESPACE") or props.get("NAMESPACE") \
        or DEFAULT_NAMESPACE
    return OpenWhiskConfig(normalise_apihost(host), key, ns)

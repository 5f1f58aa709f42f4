"""OpenWhisk's REST API (``/api/v1``) as ``wsk`` addresses it: URLs and credentials.

One definition for both of its clients: the runtime's invoker (a spilling Orchestrator
invoking copies of itself) and the deploy client (``faastlane deploy``/``invoke``).
"""

from __future__ import annotations

import base64
import urllib.parse


def base_url(apihost: str) -> str:
    """``https://host`` from an API host given with or without a scheme."""
    return (apihost if "://" in apihost else "https://" + apihost).rstrip("/")


def action_url(apihost: str, namespace: str, action: str,
               query: dict[str, str] | None = None) -> str:
    """``.../namespaces/{ns}/actions/{pkg/name}``, each part quoted."""
    name = "/".join(urllib.parse.quote(part, safe="") for part in action.split("/"))
    return namespace_url(apihost, namespace, f"actions/{name}", query)


def namespace_url(apihost: str, namespace: str, path: str,
                  query: dict[str, str] | None = None) -> str:
    """``.../api/v1/namespaces/{ns}/{path}[?query]``."""
    ns = urllib.parse.quote(namespace, safe="")
    url = f"{base_url(apihost)}/api/v1/namespaces/{ns}/{path}"
    return f"{url}?{urllib.parse.urlencode(query)}" if query else url


def auth_headers(api_key: str) -> dict[str, str]:
    """Basic authentication with a ``uuid:key`` API key, and JSON bodies."""
    token = base64.b64encode(api_key.encode()).decode("ascii")
    return {"Authorization": f"Basic {token}", "Content-Type": "application/json"}

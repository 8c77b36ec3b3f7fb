"""The claim guard as an HTTP service (`misguard serve`), for the browser extension and
other tools: FastAPI app factory, keys with check/admin scopes, per-key rate limits,
Prometheus metrics and SSRF-safe page fetching. Needs the `service` extra.

    app = create_app(ServiceSettings(db="claims-db", api_keys=["KEY"]))
    uvicorn.run(app, host="127.0.0.1", port=8080)
"""

from ..net import FetchedPage, PageFetcher, UnsafeURLError, any_address, public_only
from ._app import create_app, default_guard_factory
from ._process import ServiceProcess, rss_mb
from ._runner import GuardRunner
from ._security import KeyRing, Scope, key_id
from ._settings import ServiceSettings

__all__ = [
    "FetchedPage", "GuardRunner", "KeyRing", "PageFetcher", "Scope", "ServiceProcess", "ServiceSettings", "UnsafeURLError",
    "any_address", "create_app", "default_guard_factory", "key_id", "public_only", "rss_mb",
]

"""Fetching from the network without opening the caller to SSRF: every hop resolved and
checked against an address policy (public addresses only unless told otherwise), size and
time limits, and retries with backoff for transient failures. Used by the service's page
checks, `misguard claims pull` and `misguard data fetch`. Needs httpx (the `net` extra).

    fetcher = RetryingFetcher(PageFetcher(timeout_s=20), retries=3)
    page = await fetcher.get("https://example.org/feed.json")
"""

from ._fetch import (
    AddressPolicy,
    FetchedPage,
    PageFetcher,
    Resolver,
    UnsafeURLError,
    any_address,
    public_only,
    system_resolver,
)
from ._retry import TRANSIENT_STATUSES, FetchError, RetryingFetcher

__all__ = [
    "TRANSIENT_STATUSES", "AddressPolicy", "FetchError", "FetchedPage", "PageFetcher", "Resolver", "RetryingFetcher",
    "UnsafeURLError", "any_address", "public_only", "system_resolver",
]

"""`create_app(settings)`: the claim guard as an HTTP API (FastAPI).

    POST   /v1/check          one text or a batch -> one verdict per text      (check key)
    POST   /v1/check/page     HTML or a URL -> verdicts per extracted block     (check key)
    GET    /v1/claims         the store as ClaimReview JSON-LD, paged           (admin key)
    POST   /v1/claims         ingest ClaimReview JSON-LD (all or nothing)       (admin key)
    DELETE /v1/claims/{id}    remove a claim                                    (admin key)
    GET    /healthz /readyz /metrics                                            (no key)

The process keeps no per-request state: any replica can answer any request, and each
replica follows the shared store's generation (see `GuardRunner`).
"""

# No `from __future__ import annotations` here: FastAPI reads the endpoints' annotations,
# which name types local to `create_app` (the framework is imported there, as an extra).
import asyncio
import json
import logging
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from ..claims import (
    ClaimGuard,
    DocumentReport,
    EmbeddingReader,
    JudgeAgent,
    LLMJudge,
    Notification,
    ThresholdDecision,
    crawl,
    default_decision,
    load_decision,
    load_reader,
    read_claims,
    store_backend,
    to_claimreview,
    verdict_row,
)
from ..embed import Embedder, get_embedder
from ..errors import DataError, MisguardError, MissingExtraError
from ..llm import get_llm
from ..net import PageFetcher, UnsafeURLError, any_address, public_only
from ..types import Verdict
from ._metrics import Metrics
from ._runner import GuardFactory, GuardRunner
from ._schemas import (
    BlockResult,
    CheckRequest,
    CheckResponse,
    CheckResult,
    ClaimsPage,
    DeleteResult,
    IngestResult,
    PageRequest,
    PageResponse,
)
from ._security import BodyLimitMiddleware, FailedAuthLimiter, KeyRing, Scope, bearer_key, key_id
from ._settings import EXTENSION_ORIGINS, ServiceSettings

log = logging.getLogger("misguard.service")


def default_guard_factory(settings: ServiceSettings, embedder_spec: str) -> GuardFactory:
    """The guard the CLI serves: the shipped decision, or `decision` / `threshold`, the
    `reader` (for social-media text) and the LLM judge when `judge` is set (its blocking
    calls run on the runner's thread, outside the event loop)."""
    reader = load_reader(settings.reader, settings.embed) if settings.reader is not None else None
    decision = None
    if settings.decision is not None:
        decision = load_decision(settings.decision)
    elif settings.threshold is not None:
        decision = ThresholdDecision(settings.threshold)
    else:
        # Fails now, with what to do, rather than when the server starts.
        decision = default_decision(embedder_spec, reader.embedder.spec if isinstance(reader, EmbeddingReader) else None)
    judge = LLMJudge(get_llm(None, settings.llm)) if settings.judge else None
    return lambda store: ClaimGuard(store, decision=decision, judge=judge, reader=reader)


def create_app(
    settings: ServiceSettings,
    *,
    embedder: Embedder | None = None,
    make_guard: GuardFactory | None = None,
    fetcher: PageFetcher | None = None,
) -> Any:
    """Build the FastAPI app. The store is opened when the app starts (lifespan).

    Args:
        settings: keys, limits, origins, store path.
        embedder: the store's embedder (default: `settings.embed`).
        make_guard: builds the guard over the store (default: `default_guard_factory`).
        fetcher: fetches `url` pages (default: from the settings' fetch policy).
    """
    try:
        from fastapi import Depends, FastAPI, HTTPException, Path as PathParam, Query, Request
        from fastapi.encoders import jsonable_encoder
        from fastapi.exceptions import RequestValidationError
        from fastapi.middleware.cors import CORSMiddleware
        from fastapi.responses import JSONResponse, PlainTextResponse
        from slowapi import Limiter
        from slowapi.errors import RateLimitExceeded
    except ImportError as exc:
        raise MissingExtraError(exc.name or "fastapi", "service", "misguard serve") from None

    keys = KeyRing(settings.api_keys, settings.admin_keys)
    if not keys:
        raise MisguardError("The service needs at least one key: pass --api-key KEY or set MISGUARD_API_KEYS")
    if store_backend(settings.db) == "sqlite" and not (Path(settings.db) / "claims.sqlite").is_file():
        raise MisguardError(f"No claim store at {settings.db}; create one with: misguard claims add --db {settings.db} FILE")
    metrics = Metrics()
    embedder = embedder or get_embedder(None, settings.embed)
    runner = GuardRunner(
        settings.db, embedder, make_guard or default_guard_factory(settings, embedder.spec), max_batch=settings.max_batch,
        window_s=settings.batch_window_ms / 1000, max_wait_s=settings.batch_max_wait_ms / 1000,
        on_batch=metrics.observe_batch,
    )
    fetch = fetcher or PageFetcher(
        policy=any_address if settings.allow_private_urls else public_only, timeout_s=settings.fetch_timeout_s,
        max_bytes=settings.fetch_max_bytes, max_redirects=settings.fetch_max_redirects,
    )

    def rate_key(request: Request) -> str:
        key = bearer_key(request.headers.get("authorization"))
        return key_id(key) if key else f"ip:{request.client.host if request.client else '-'}"

    limiter = Limiter(key_func=rate_key, storage_uri=settings.rate_limit_storage, headers_enabled=False)
    auth_failures = FailedAuthLimiter(settings.auth_failure_limit, settings.rate_limit_storage)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await runner.start()
        metrics.store_claims.set(await runner.run(lambda: len(runner.store())))
        log.info("serving claim store %s (%d API keys)", settings.db, len(settings.api_keys) + len(settings.admin_keys))
        try:
            yield
        finally:
            await runner.stop()

    app = FastAPI(
        title="misguard claim guard",
        version="1",
        description="Checks texts and pages against a store of fact-checked claims (misguard.claims).",
        lifespan=lifespan,
    )
    app.state.limiter = limiter
    app.state.runner = runner
    app.state.metrics = metrics

    @app.exception_handler(RateLimitExceeded)
    async def _rate_limited(request: Request, exc: RateLimitExceeded) -> JSONResponse:
        return JSONResponse({"detail": f"rate limit exceeded ({exc.detail}); slow down and retry"}, status_code=429,
                            headers={"Retry-After": "1"})

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI reads a body sent without a JSON content type as a string and reports
        # "Input should be a valid dictionary", which does not say what to change.
        errors = jsonable_encoder(exc.errors())
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json":
            for error in errors:
                if error.get("loc") == ["body"] and error.get("type") == "model_attributes_type":
                    error["msg"] = (f"the body must be a JSON object sent with Content-Type: application/json "
                                    f"(got {media or 'no content type'}); with curl: -H 'Content-Type: application/json'")
        return JSONResponse({"detail": errors}, status_code=422)

    @app.exception_handler(MisguardError)
    async def _misguard_error(request: Request, exc: MisguardError) -> JSONResponse:
        status = 422 if isinstance(exc, DataError) else 503
        log.warning("%s on %s: %s", type(exc).__name__, request.url.path, exc)
        return JSONResponse({"detail": f"{type(exc).__name__}: {exc}"}, status_code=status)

    app.add_middleware(
        CORSMiddleware, allow_origins=settings.cors_origins,
        allow_origin_regex=EXTENSION_ORIGINS if settings.allow_extensions else None,
        allow_methods=["GET", "POST", "DELETE"], allow_headers=["Authorization", "Content-Type"], max_age=600,
    )
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)

    @app.middleware("http")
    async def _observe(request: Request, call_next: Callable[[Request], Any]) -> Any:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        metrics.observe_request(getattr(route, "path", "unmatched"), request.method, response.status_code,
                                time.perf_counter() - started)
        return response

    def need(scope: Scope) -> Callable[[Request], str]:
        def check_key(request: Request) -> str:
            # Before the key is checked: the per-key limits only ever see valid keys.
            address = request.client.host if request.client else "-"
            wait = auth_failures.retry_after(address)
            if wait is not None:
                metrics.auth_limited.inc()
                raise HTTPException(429, f"too many failed authentications from this address; retry in {wait} s",
                                    headers={"Retry-After": str(wait)})
            key = bearer_key(request.headers.get("authorization"))
            if not keys.allows(key, scope):
                if key and scope is Scope.ADMIN and keys.allows(key, Scope.CHECK):
                    raise HTTPException(403, "this key may check texts but not manage the claim store")
                auth_failures.failed(address)
                metrics.auth_failures.inc()
                raise HTTPException(401, "missing or wrong API key; send 'Authorization: Bearer KEY'",
                                    headers={"WWW-Authenticate": "Bearer"})
            return key_id(key or "")

        return check_key

    CheckKey = Annotated[str, Depends(need(Scope.CHECK))]
    AdminKey = Annotated[str, Depends(need(Scope.ADMIN))]

    async def verdicts_for(texts: list[str]) -> list[Verdict]:
        for i, text in enumerate(texts):
            if len(text) > settings.max_text_chars:
                raise HTTPException(413, f"text {i} has {len(text):,} characters, over the {settings.max_text_chars:,} limit")
        try:
            verdicts = await asyncio.wait_for(runner.check(texts), settings.request_timeout_s)
        except TimeoutError:
            raise HTTPException(503, "the check took too long; retry later", headers={"Retry-After": "2"}) from None
        metrics.observe_verdicts(verdicts)
        return verdicts

    # -- checks --------------------------------------------------------------------------

    @app.post("/v1/check", response_model=CheckResponse, tags=["check"])
    @limiter.limit(settings.rate_limit)
    async def check(request: Request, body: CheckRequest, key: CheckKey) -> CheckResponse:
        """Check one text (`{"text": ...}`) or a batch (`{"texts": [...]}`)."""
        texts = body.items()
        if len(texts) > settings.max_batch:
            raise HTTPException(413, f"{len(texts)} texts in one request, over the limit of {settings.max_batch}; split the batch")
        verdicts = await verdicts_for(texts)
        log.info("check key=%s texts=%d flagged=%d", key, len(texts), sum(v.flagged for v in verdicts))
        return CheckResponse(results=[_result(i, v) for i, v in enumerate(verdicts)])

    @app.post("/v1/check/page", response_model=PageResponse, tags=["check"])
    @limiter.limit(settings.rate_limit)
    async def check_page(request: Request, body: PageRequest, key: CheckKey) -> PageResponse:
        """Extract a page's text blocks (paragraphs, list items, comments) and check each."""
        url = None
        source = body.html
        if body.url is not None:
            if not settings.allow_url_fetch:
                raise HTTPException(403, "this service does not fetch URLs; send the page's 'html' instead")
            try:
                page = await fetch.fetch(body.url)
            except UnsafeURLError as exc:
                metrics.fetch_refused.inc()
                raise HTTPException(403, str(exc)) from None
            url, source = page.url, page.text
        assert source is not None
        chunks = await asyncio.to_thread(crawl, source, doc_id="page")
        checked, skipped = chunks[: settings.max_page_blocks], max(0, len(chunks) - settings.max_page_blocks)
        verdicts = await verdicts_for([c.text for c in checked]) if checked else []
        report = DocumentReport(
            doc_id="page", chunks=checked, verdicts={c.id: v for c, v in zip(checked, verdicts)},
            notifications=[
                Notification(chunk_id=c.id, claim_id=r.matched_claim_id,
                             message=f"Repeats a claim rated {r.matched_claim_verdict_original or r.matched_claim_verdict}")
                for c, v in zip(checked, verdicts) if v.flagged for r in [_result(0, v)]
            ],
        )
        report.discrepancies = JudgeAgent().audit(report)
        blocks = [BlockResult(id=c.id, text=c.text, start=c.start, end=c.end, result=_result(i, v))
                  for i, (c, v) in enumerate(zip(checked, verdicts))]
        log.info("check/page key=%s blocks=%d flagged=%d", key, len(blocks), len(report.notifications))
        return PageResponse(
            url=url, blocks=blocks, flagged=len(report.notifications), skipped_blocks=skipped,
            notifications=[vars(n) for n in report.notifications], discrepancies=report.discrepancies,
        )

    # -- the store (admin) ---------------------------------------------------------------

    @app.get("/v1/claims", response_model=ClaimsPage, tags=["claims"])
    @limiter.limit(settings.admin_rate_limit)
    async def list_claims(
        request: Request, key: AdminKey,
        offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> ClaimsPage:
        """The store's claims as schema.org ClaimReview JSON-LD, in the store's order."""
        def page() -> tuple[int, list[Any]]:
            store = runner.store()
            claims = store.page(offset, limit)
            return len(store), claims

        total, claims = await runner.run(lambda: runner.store().consistent(page))
        return ClaimsPage(total=total, offset=offset, claims=to_claimreview(claims))

    @app.post("/v1/claims", response_model=IngestResult, tags=["claims"])
    @limiter.limit(settings.admin_rate_limit)
    async def add_claims(request: Request, key: AdminKey) -> IngestResult:
        """Ingest ClaimReview JSON-LD (one object, a list, or an `@graph`); all or nothing."""
        raw = await request.body()
        try:
            json.loads(raw)
        except ValueError as exc:
            raise HTTPException(422, f"the body is not JSON: {exc}") from None

        def ingest() -> IngestResult:
            # The ClaimReview reader takes a file: parse the body exactly like `claims add`.
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "claims.json"
                path.write_bytes(raw)
                claims = read_claims(path, "claimreview")
            store = runner.store()
            report = store.add(claims, source="POST /v1/claims")
            runner.after_write()
            return IngestResult(added=report.added, updated=report.updated, unchanged=report.unchanged, total=len(store))

        result = await runner.run(ingest)
        metrics.store_claims.set(result.total)
        log.info("claims added key=%s added=%d updated=%d", key, result.added, result.updated)
        return result

    @app.delete("/v1/claims/{claim_id:path}", response_model=DeleteResult, tags=["claims"])
    @limiter.limit(settings.admin_rate_limit)
    async def delete_claim(
        request: Request, key: AdminKey, claim_id: Annotated[str, PathParam(min_length=1, max_length=500)]
    ) -> DeleteResult:
        """Remove one claim by id (404 when there is none)."""
        def remove() -> DeleteResult:
            store = runner.store()
            deleted = store.remove([claim_id], source="DELETE /v1/claims")
            if deleted:
                runner.after_write()
            return DeleteResult(deleted=deleted, total=len(store))

        result = await runner.run(remove)
        if not result.deleted:
            raise HTTPException(404, f"no claim with id {claim_id!r}")
        metrics.store_claims.set(result.total)
        log.info("claim deleted key=%s", key)
        return result

    # -- operations ----------------------------------------------------------------------

    @app.get("/healthz", tags=["operations"])
    async def healthz() -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"])
    async def readyz() -> JSONResponse:
        """The store is open and checks are being served."""
        if not runner.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ready", "store_generation_reloads": runner.reloads})

    @app.get("/metrics", tags=["operations"], response_class=PlainTextResponse)
    async def prometheus() -> PlainTextResponse:
        """Prometheus metrics (expose to the scraper only, not to the internet)."""
        return PlainTextResponse(metrics.render(), media_type=metrics.content_type)

    return app


def _result(index: int, verdict: Verdict) -> CheckResult:
    row = verdict_row(str(index), verdict)
    return CheckResult(
        index=index, flagged=verdict.flagged, score=float(row["score"]),  # type: ignore[arg-type]
        matched_claim_id=row["matched_claim_id"], matched_claim_text=row["matched_claim_text"],  # type: ignore[arg-type]
        matched_claim_verdict=row["matched_claim_verdict"],  # type: ignore[arg-type]
        matched_claim_verdict_original=row["matched_claim_verdict_original"],  # type: ignore[arg-type]
        matched_claim_url=row["matched_claim_url"], evidence=row["evidence"] if verdict.flagged else None,  # type: ignore[arg-type]
        language=verdict.language, decided_by=verdict.decided_by, cached="cache" in verdict.stages,
    )

"""Kafka Connect's error bodies, ``{"error_code": <status>, "message": "..."}``, for every failure.

``install_error_handlers`` maps sparkcat's errors once (``SparkcatError.http_status``)
and replaces FastAPI's own answers: request validation (422 in FastAPI) becomes
Connect's 400 (404 for a malformed path parameter, as JAX-RS does), and unknown paths
or methods get the error shape instead of ``{"detail": ...}``. Unexpected exceptions are
answered by ``sparkcat.rest.guard.RequestGuard`` (a 500 naming only a request id).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from sparkcat.errors import SparkcatError

log = logging.getLogger("sparkcat.rest")

#: Tags pydantic appends to the location of an error inside one member of a union type.
_UNION_MEMBERS = {"str", "int", "float", "bool", "none"}


class ServiceUnavailableError(SparkcatError):
    """The driver is still reading the config log at start-up."""

    http_status = 503


def error_body(status: int, message: str) -> dict[str, Any]:
    """Connect's ``ErrorMessage`` entity."""
    return {"error_code": status, "message": message}


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse(error_body(status, message), status_code=status)


def validation_message(errors: list[dict[str, Any]]) -> tuple[int, str]:
    """(status, message) for FastAPI's request validation errors, without echoing input values."""
    if any(e.get("loc", ())[:1] == ("path",) for e in errors):
        names = sorted({str(e["loc"][1]) for e in errors if len(e.get("loc", ())) > 1})
        return 404, f"HTTP 404 Not Found (path parameter {', '.join(names)} is not valid)"
    by_place: dict[str, list[str]] = {}
    for e in errors:
        loc = [str(p) for p in e.get("loc", ())]
        kind = e.get("type", "")
        if kind == "json_invalid":
            detail = (e.get("ctx") or {}).get("error", "")
            return 400, f"Request body is not valid JSON: {detail}".rstrip(": ")
        if kind == "missing" and loc == ["body"]:
            return 400, "Request body is required: a JSON object"
        if loc and loc[-1] in _UNION_MEMBERS and len(loc) > 2:
            loc = loc[:-1]
        place = loc[0] if loc else "request"
        field = ".".join(loc[1:])
        key = f"{place} {field}".strip() if field else f"{place}"
        by_place.setdefault(key, []).append(str(e.get("msg", "is not valid")))
    parts = []
    for key, messages in by_place.items():
        if len(messages) > 1:
            parts.append(f"{key}: expected a string, number, boolean or null")
        else:
            parts.append(f"{key}: {messages[0]}")
    return 400, "Invalid request: " + "; ".join(parts)


def install_error_handlers(app: FastAPI) -> None:
    """Every error answers in Connect's shape; a 500 only for real server faults."""

    @app.exception_handler(SparkcatError)
    async def sparkcat_error(request: Request, exc: SparkcatError) -> JSONResponse:
        if exc.http_status < 500:
            return error_response(exc.http_status, exc.message)
        request_id = getattr(request.state, "request_id", "-")
        log.warning("%s %s failed (request id %s): %s", request.method, request.url.path, request_id, exc.message)
        return error_response(exc.http_status, f"{exc.message} (request id {request_id})")

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        status, message = validation_message(list(exc.errors()))
        return error_response(status, message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        phrase = {404: "Not Found", 405: "Method Not Allowed"}.get(exc.status_code, str(exc.detail))
        response = error_response(exc.status_code, f"HTTP {exc.status_code} {phrase}")
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(TimeoutError)
    async def timed_out(request: Request, exc: TimeoutError) -> JSONResponse:
        return error_response(500, f"Request timed out (request id {getattr(request.state, 'request_id', '-')})")

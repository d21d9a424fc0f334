"""Errors as RFC 9457 problem details (``application/problem+json``).

Every error the service returns has ``type`` (a stable ``urn:pedrag:problem:<slug>``),
``title``, ``status``, ``detail`` and ``request_id``; validation errors add ``errors``.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi.responses import JSONResponse

from pedrag.kernel.errors import PedragError

PROBLEM_JSON = "application/problem+json"

TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    409: "Conflict",
    413: "Payload too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}


def _title(status: int) -> str:
    """The status's title in sentence case; a status the table lacks still has its reason
    phrase (a 403 said only "Error")."""
    try:
        return TITLES.get(status) or HTTPStatus(status).phrase.capitalize()
    except ValueError:
        return "Error"


class Problem(PedragError):
    """Raised by a handler: becomes a problem response."""

    def __init__(
        self,
        status: int,
        slug: str,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra


def problem_response(
    status: int,
    slug: str,
    detail: str,
    request_id: str | None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body = {
        "type": f"urn:pedrag:problem:{slug}",
        "title": _title(status),
        "status": status,
        "detail": detail,
        "request_id": request_id,
        **extra,
    }
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


PROBLEM_SCHEMA = {
    "description": "An error, as RFC 9457 problem details",
    "content": {
        PROBLEM_JSON: {
            "schema": {
                "type": "object",
                "properties": {
                    "type": {"type": "string"},
                    "title": {"type": "string"},
                    "status": {"type": "integer"},
                    "detail": {"type": "string"},
                    "request_id": {"type": "string"},
                },
                "required": ["type", "title", "status", "detail"],
            }
        }
    },
}

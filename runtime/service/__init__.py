"""The tutor as an HTTP service (``pedrag serve``): JSON and Server-Sent Events over FastAPI.

Runtime, the outermost stage. Takes HTTP requests authenticated by a tenant's API key; gives
sessions, turns (JSON, or an SSE stream of the text the stream guard released), audit records,
instructor toggles, theory checks and a playground page. ``docs/service.md`` is the reference.

Modules: ``app`` (the FastAPI application and its routes), ``schemas`` (the pydantic models
the OpenAPI document is generated from), ``auth`` (API key -> tenant -> a tenant-bound store,
rate limits), ``metrics`` (Prometheus), ``problems`` (errors as ``application/problem+json``), ``hop`` (the turns' hop to a thread),
``playground/`` (static files, no build step).
"""

from pedrag.runtime.service.app import ServiceSettings, create_app

__all__ = ["ServiceSettings", "create_app"]

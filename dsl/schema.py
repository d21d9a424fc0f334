"""JSON Schema export of the file formats, generated from the pydantic models."""

from __future__ import annotations

from typing import Any

from pedrag.dsl.model import Curriculum, Theory


def _schema(model: type[Theory] | type[Curriculum], title: str) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = title
    return schema


def theory_schema() -> dict[str, Any]:
    return _schema(Theory, "pedrag theory file, format version 1")


def curriculum_schema() -> dict[str, Any]:
    return _schema(Curriculum, "pedrag curriculum file, format version 1")

"""Extraction support, provenance: which corpus passage each extracted item came from.

Takes chunks; gives one theory `Source` per chunk (document, first page, page range and
chunk number), with an id that is a valid theory identifier (`meno_c2`). Every metric,
action, rule and principle extracted from a chunk gets that id in its `source:`; merging
unions them, so an item found in three passages cites all three. The writer adds the
sources that items cite to `theory.sources`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pedrag.dsl.model import Source
from pedrag.extract.chunker import Chunk

SourceField = str | list[str] | None


def source_ids(value: SourceField) -> list[str]:
    """A `source:` field as a list of ids."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def source_field(ids: Iterable[str]) -> SourceField:
    """Ids back to a `source:` field: none, one id, or a list (order kept, duplicates out)."""
    unique = list(dict.fromkeys(ids))
    if not unique:
        return None
    return unique[0] if len(unique) == 1 else unique


def union(*fields: SourceField) -> SourceField:
    return source_field(id for field in fields for id in source_ids(field))


class SourceRegistry:
    """Gives each chunk a stable source id and keeps the `Source` it stands for."""

    def __init__(self) -> None:
        self._prefixes: dict[str, str] = {}
        self.sources: dict[str, Source] = {}

    def source_for(self, chunk: Chunk) -> Source:
        prefix = self._prefix(chunk.document)
        source_id = f"{prefix}_c{chunk.index}"
        if source_id not in self.sources:
            name = Path(chunk.document).name
            self.sources[source_id] = Source(
                id=source_id,
                title=f"{name}, chunk {chunk.index}",
                document=chunk.document,
                page=chunk.pages[0],
                locator=chunk.page_label,
            )
        return self.sources[source_id]

    def cited(self, ids: Iterable[str]) -> list[Source]:
        """The sources among `ids`, in registration order."""
        wanted = set(ids)
        return [source for source_id, source in self.sources.items() if source_id in wanted]

    def _prefix(self, document: str) -> str:
        if document not in self._prefixes:
            stem = re.sub(r"[^a-z0-9]+", "_", Path(document).stem.lower()).strip("_") or "doc"
            if not stem[0].isalpha():
                stem = f"doc_{stem}"
            prefix, number = stem, 2
            # Two files with one stem (meno.txt, meno.pdf) must not share source ids.
            while prefix in self._prefixes.values():
                prefix = f"{stem}_{number}"
                number += 1
            self._prefixes[document] = prefix
        return self._prefixes[document]

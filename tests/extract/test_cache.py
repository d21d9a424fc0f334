"""The answer cache: keyed by what was asked, written atomically, tolerant of damage."""

from __future__ import annotations

from pathlib import Path

from pedrag.extract.cache import AnswerCache, cache_key


def test_key_changes_with_content_model_and_prompt_version() -> None:
    base = cache_key("fragment", "gpt-4o", "fragment-1", "text")

    assert base == cache_key("fragment", "gpt-4o", "fragment-1", "text")
    assert (
        len(
            {
                base,
                cache_key("fragment", "gpt-4o", "fragment-1", "text!"),
                cache_key("fragment", "gpt-4o-mini", "fragment-1", "text"),
                cache_key("fragment", "gpt-4o", "fragment-2", "text"),
                cache_key("repair", "gpt-4o", "fragment-1", "text"),
            }
        )
        == 5
    )


def test_entries_round_trip_and_leave_no_temporary_files(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path / "c")

    assert cache.get("k") is None
    cache.put("k", {"fragment": {"actions": {}}, "errors": []})

    assert cache.get("k") == {"fragment": {"actions": {}}, "errors": []}
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["k.json"]
    assert (cache.hits, cache.misses) == (1, 1)


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    (tmp_path / "k.json").write_text("{half", encoding="utf-8")

    assert AnswerCache(tmp_path).get("k") is None


def test_no_directory_caches_nothing() -> None:
    cache = AnswerCache(None)
    cache.put("k", {"a": 1})

    assert cache.get("k") is None

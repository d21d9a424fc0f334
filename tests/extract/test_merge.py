"""Merging fragments: metrics reconciled, near-duplicate actions united, rules deduplicated."""

from __future__ import annotations

from typing import Any

from pedrag.extract.embeddings import LexicalEmbedder, cosine
from pedrag.extract.fragments import Fragment
from pedrag.extract.merge import canonical_condition, merge_fragments

LEXICAL = LexicalEmbedder()


def fragment(**parts: Any) -> Fragment:
    return Fragment.model_validate(parts)


def action(description: str, rung: str = "H3", **extra: Any) -> dict[str, Any]:
    return {"rung": rung, "priority": 5, "description": description, **extra}


def test_numeric_ranges_widen_and_enum_values_unite() -> None:
    draft, report = merge_fragments(
        [
            (
                fragment(
                    metrics={
                        "errors": {"type": "int", "source": "trusted", "range": [0, 5]},
                        "mood": {"type": "enum", "source": "inferred", "values": ["calm"]},
                    }
                ),
                "s1",
            ),
            (
                fragment(
                    metrics={
                        "errors": {"type": "int", "source": "trusted", "range": [1, 9]},
                        "mood": {"type": "enum", "source": "inferred", "values": ["sad", "calm"]},
                    }
                ),
                "s2",
            ),
        ],
        LEXICAL,
    )

    assert draft.metrics["errors"].range == (0, 9)
    assert draft.metrics["mood"].values == ["calm", "sad"]
    assert draft.metric_sources == {"errors": ["s1", "s2"], "mood": ["s1", "s2"]}
    assert report.metric_conflicts == []


def test_type_disagreement_is_reported_and_the_first_type_kept() -> None:
    draft, report = merge_fragments(
        [
            (
                fragment(
                    metrics={"progress": {"type": "float", "source": "computed", "range": [0, 1]}}
                ),
                "s1",
            ),
            (fragment(metrics={"progress": {"type": "bool", "source": "computed"}}), "s2"),
        ],
        LEXICAL,
    )

    assert draft.metrics["progress"].type == "float"
    assert report.metric_conflicts == [
        "metric `progress` is float in s1 but bool in s2; kept float"
    ]


def test_near_duplicate_actions_merge_into_the_first_and_rules_follow() -> None:
    draft, report = merge_fragments(
        [
            (
                fragment(
                    actions={
                        "ask_leading_question": action(
                            "Ask a leading question about the next step.", tags=["probe"]
                        )
                    },
                    rules=[{"id": "r1", "when": "x", "then": "ask_leading_question"}],
                ),
                "s1",
            ),
            (
                fragment(
                    actions={
                        "pose_leading_question": action(
                            "Ask a leading question about the next step!"
                        ),
                        "encourage": action(
                            "Praise effort and lower the stakes.",
                            rung="H0",
                            conflicts=["pose_leading_question"],
                        ),
                    },
                    rules=[
                        {"id": "r1", "when": "x", "then": "pose_leading_question"},
                        {"id": "r1", "when": "not x", "then": "pose_leading_question"},
                    ],
                ),
                "s2",
            ),
        ],
        LEXICAL,
    )

    assert list(draft.actions) == ["ask_leading_question", "encourage"]
    assert report.merged_actions[0].duplicate == "pose_leading_question"
    assert report.merged_actions[0].similarity >= 0.85
    assert draft.actions["ask_leading_question"].source == ["s1", "s2"]
    assert draft.actions["encourage"].conflicts == ["ask_leading_question"]
    assert [(r.id, r.when, r.then, r.source) for r in draft.rules] == [
        ("r1", "x", "ask_leading_question", ["s1", "s2"]),
        ("r1_2", "not x", "ask_leading_question", "s2"),
    ]
    assert report.dropped_rules == ["r1"] and report.renamed_rules == {"r1_2": "r1"}


def test_threshold_decides_what_is_a_duplicate() -> None:
    fragments = [
        (
            fragment(
                actions={
                    "ask_leading_question": action("Ask a leading question about the next step."),
                    "ask_probing_question": action("Ask a probing question about an assumption."),
                }
            ),
            "s1",
        )
    ]

    loose, _ = merge_fragments(fragments, LEXICAL, threshold=0.3)
    strict, _ = merge_fragments(fragments, LEXICAL, threshold=0.85)

    assert len(loose.actions) == 1 and len(strict.actions) == 2


def test_conditions_compare_canonically() -> None:
    assert canonical_condition("a>1   and (b)") == canonical_condition("a > 1 and b")
    assert canonical_condition("not  valid ((") == "not valid (("


def test_principles_unite_by_id_and_text() -> None:
    draft, _ = merge_fragments(
        [
            (fragment(principles=[{"id": "ask", "text": "Ask, do not tell."}]), "s1"),
            (
                fragment(
                    principles=[
                        {"id": "ask", "text": "Other words."},
                        {"id": "ask_first", "text": "Ask,  do not tell."},
                    ]
                ),
                "s2",
            ),
        ],
        LEXICAL,
    )

    assert [(p.id, p.source) for p in draft.principles] == [("ask", ["s1", "s2"])]


def test_lexical_embeddings_are_close_for_shared_wording() -> None:
    same, near, far = LEXICAL.embed(
        [
            "ask leading question: Ask a question about the next step.",
            "pose guiding question: Ask a question about the next step.",
            "worked example: Show a solved problem of another kind.",
        ]
    )

    assert abs(cosine(same, same) - 1) < 1e-9
    assert cosine(same, near) > cosine(same, far)
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0


def test_merging_many_rules_parses_each_condition_once(monkeypatch: Any) -> None:
    # Issue 15: 2,000 actions and rules in one reply made merging run for minutes, because
    # every added rule re-parsed every rule kept so far.
    import pedrag.extract.merge as merge

    calls = []
    real = merge.canonical_condition

    def counting(text: str) -> str:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(merge, "canonical_condition", counting)
    rules = [{"id": f"r{n % 50}", "when": f"x >= {n}", "then": "encourage"} for n in range(300)]
    rules += [{"id": "dup", "when": "x>=7", "then": "encourage"}]
    draft, report = merge_fragments(
        [(fragment(actions={"encourage": action("Praise effort.")}, rules=rules), "s1")], LEXICAL
    )
    assert len(calls) == len(rules)
    assert len(draft.rules) == 300 and report.dropped_rules == ["dup"]
    assert len({rule.id for rule in draft.rules}) == 300  # renamed apart, as before


def test_indexed_near_duplicate_search_merges_what_comparing_every_pair_merges() -> None:
    import random

    rng = random.Random(7)
    words = "ask hint question explain example step concept praise effort check model show".split()
    descriptions = [" ".join(rng.sample(words, 4)) for _ in range(60)]
    actions = {f"a{i}": action(text) for i, text in enumerate(descriptions)}
    draft, report = merge_fragments([(fragment(actions=actions), "s1")], LEXICAL, threshold=0.8)
    # The oracle: every action against every earlier survivor, by cosine, best first.
    vectors = LEXICAL.embed([f"a{i}: {text}" for i, text in enumerate(descriptions)])
    survivors: list[int] = []
    expected = {}
    for index in range(len(descriptions)):
        scored = [(cosine(vectors[index], vectors[s]), s) for s in survivors]
        best = max(scored, default=(0.0, -1))
        if best[0] >= 0.8:
            expected[f"a{index}"] = f"a{best[1]}"
        else:
            survivors.append(index)
    assert {m.duplicate: m.survivor for m in report.merged_actions} == expected
    assert expected  # the data has near-duplicates to find

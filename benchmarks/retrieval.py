"""Benchmark: retrieval latency over a course of 10,000 passages, FTS5 BM25 vs a brute-force scan.

A synthetic course of realistic, varied passages (sentences built from a topic vocabulary with
a Zipf-like word distribution and rare invented technical terms, so no two passages repeat) is
indexed with ``pedrag index``'s own code path into an SQLite session database. Then, for the
same questions (two to four content words drawn from a random passage, wrapped in question
phrasing), the median time per question of two methods, measured in the same run:

* fts5  -- ``CourseIndex.search``: FTS5 MATCH ranked by BM25 in SQLite, plus the support
           (coverage) re-scoring of the candidates, i.e. exactly what a grounded turn runs;
           the FTS5 query alone is reported on its own line
* scan  -- the strongest simple baseline: every passage held in memory as a precomputed
           term-count table (stemmed tokens, document lengths and IDF all computed up front),
           each question scored by BM25 against all of them and the top few kept (heapq)

It also reports how often both put the same passage first. Goal (issue 17): fts5 < 20 ms median.

Then the fused search (BM25 + vectors), with one precomputed vector per passage and question
(hashed character trigrams, 384 numbers — an embedding model's size — computed up front, so no
endpoint is timed; an endpoint's embedding of the question adds its own round trip):

* fused -- ``CourseIndex.search`` with vectors: the FTS5 query, sqlite-vec's ``vec0`` KNN
           (top 20 by cosine distance), reciprocal rank fusion and the support re-scoring; the
           vec0 KNN query alone is reported on its own line
* numpy -- the strongest simple baseline: every vector in one normalised float32 numpy matrix,
           a matrix-vector product and ``argpartition`` for the top 20, fused by the same RRF
           with the in-memory BM25 scan above; the numpy scan alone on its own line

It reports how often sqlite-vec's top 20 equals numpy's (both are exact searches).

    python benchmarks/retrieval.py [--chunks 10000] [--queries 300] [--no-vectors]
"""

from __future__ import annotations

import argparse
import heapq
import math
import os
import random
import statistics
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pedrag.runtime.course.index import (
    CANDIDATES,
    ChunkInput,
    CourseIndex,
    content_terms,
    stems,
)
from pedrag.runtime.course.passages import reciprocal_rank_fusion
from pedrag.runtime.course.vectors import passage_text
from pedrag.runtime.store.session_store import SessionStore

DIMENSION = 384

TOPICS = {
    "biology": "cell membrane nucleus protein enzyme chloroplast chlorophyll mitochondria glucose "
    "respiration photosynthesis osmosis diffusion gene allele chromosome mutation species "
    "evolution organism tissue organ stomata root leaf pollen seed ecosystem predator prey",
    "chemistry": "atom molecule electron proton neutron bond ion acid base salt solution "
    "reaction catalyst oxidation reduction isotope element compound mixture gas liquid solid "
    "pressure temperature equilibrium concentration titration polymer",
    "physics": "force mass acceleration velocity energy momentum friction gravity wave "
    "frequency wavelength current voltage resistance circuit magnet field charge lens mirror "
    "refraction heat work power density orbit",
    "computing": "variable loop function recursion array list dictionary string integer "
    "algorithm complexity sorting search tree graph queue stack pointer memory compiler "
    "interpreter syntax debugging test exception class object",
    "history": "empire treaty revolution parliament monarchy colony trade war alliance "
    "constitution reform dynasty republic census migration industry railway harbour province",
}
VERBS = (
    "explains describes controls transports stores releases absorbs produces changes measures "
    "depends on increases reduces connects converts carries limits balances"
).split()
GLUE = (
    "the a this each every its their most some many often usually also because when while "
    "which that and but so in on at from into through during between within"
).split()
SYLLABLES = "ka lo mi ne ru ta vo xi ze pa qui dre sto phy lin gor tem bra cel nor".split()


def zipf_choice(rng: random.Random, words: list[str]) -> str:
    # P(rank k) ~ 1 / k: a few words are common, most are rare, as in real course text.
    index = int(len(words) ** rng.random()) - 1
    return words[min(index, len(words) - 1)]


def make_passages(count: int, seed: int = 7) -> list[tuple[str, str, str]]:
    """(document, heading, text) for ``count`` passages spread over documents of 50."""
    rng = random.Random(seed)
    rare = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(3000)]
    passages = []
    for number in range(count):
        topic = rng.choice(list(TOPICS))
        nouns = TOPICS[topic].split()
        heading = f"{zipf_choice(rng, nouns).title()} and {zipf_choice(rng, nouns)}"
        sentences = []
        for _ in range(rng.randint(3, 7)):
            words = [rng.choice(GLUE), zipf_choice(rng, nouns), rng.choice(VERBS)]
            words += [rng.choice(GLUE), zipf_choice(rng, nouns)]
            if rng.random() < 0.6:
                words += [rng.choice(GLUE), zipf_choice(rng, rare)]
            if rng.random() < 0.5:
                words += [rng.choice(GLUE), zipf_choice(rng, nouns), rng.choice(GLUE)]
                words.append(zipf_choice(rng, rare + nouns))
            sentences.append(" ".join(words).capitalize() + ".")
        passages.append((f"{topic}/unit-{number // 50:03d}.md", heading, " ".join(sentences)))
    return passages


def make_questions(passages: list[tuple[str, str, str]], count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    frames = [
        "What is {}?",
        "How does {} work?",
        "Is {} the thing that matters here?",
        "Can you explain {}?",
        "Why does {} happen?",
    ]
    questions = []
    for _ in range(count):
        _, heading, text = rng.choice(passages)
        terms = content_terms(f"{heading} {text}")
        picked = rng.sample(terms, k=min(len(terms), rng.randint(2, 4)))
        questions.append(rng.choice(frames).format(" ".join(picked)))
    return questions


class BruteForceBM25:
    """Every passage in memory as stemmed term counts; BM25 (k1=1.2, b=0.75, FTS5's defaults)
    over all of them for each question."""

    def __init__(self, passages: list[tuple[str, str, str]]) -> None:
        self.counts = [Counter(stems(content_terms(f"{h} {t}"))) for _, h, t in passages]
        self.lengths = [sum(c.values()) for c in self.counts]
        self.average = sum(self.lengths) / len(self.lengths)
        frequency: Counter[str] = Counter()
        for counts in self.counts:
            frequency.update(counts.keys())
        total = len(self.counts)
        self.idf = {t: math.log(1 + (total - n + 0.5) / (n + 0.5)) for t, n in frequency.items()}

    def search(self, question: str, limit: int = 3) -> list[int]:
        terms = [t for t in stems(content_terms(question)) if t in self.idf]
        scored = []
        for index, counts in enumerate(self.counts):
            score = 0.0
            norm = 1.2 * (0.25 + 0.75 * self.lengths[index] / self.average)
            for term in terms:
                tf = counts.get(term)
                if tf:
                    score += self.idf[term] * tf * 2.2 / (tf + norm)
            if score:
                scored.append((score, -index))
        return [-index for _, index in heapq.nlargest(limit, scored)]


def trigram_vector(text: str, dimension: int = DIMENSION) -> list[float]:
    """A stand-in embedding: hashed character trigrams of each word, L2-normalised."""
    vector = [0.0] * dimension
    for word in text.lower().split():
        padded = f" {word.strip('.,;:?!')} "
        for start in range(len(padded) - 2):
            vector[zlib.crc32(padded[start : start + 3].encode()) % dimension] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class Precomputed:
    """An embedder answering from vectors computed before the clock starts."""

    model = "bench-trigrams"

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[text] for text in texts]


class NumpyCosine:
    """Every passage vector in one normalised float32 matrix; top k by one product."""

    def __init__(self, vectors: list[list[float]]) -> None:
        import numpy

        self.numpy = numpy
        matrix = numpy.asarray(vectors, dtype=numpy.float32)
        self.matrix = matrix / numpy.maximum(numpy.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)

    def search(self, vector: list[float], k: int = CANDIDATES) -> list[int]:
        numpy = self.numpy
        scores = self.matrix @ numpy.asarray(vector, dtype=numpy.float32)
        top = numpy.argpartition(-scores, k)[:k]
        return [int(i) for i in top[numpy.argsort(-scores[top], kind="stable")]]


def median_ms(run: Callable[[str], list[Any]], questions: list[str]) -> tuple[float, list[Any]]:
    times, results = [], []
    for question in questions:
        start = time.perf_counter()
        results.append(run(question))
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--no-vectors", action="store_true", help="BM25 only")
    args = parser.parse_args(argv)
    passages = make_passages(args.chunks)
    questions = make_questions(passages, args.queries)
    words = [len(text.split()) for _, _, text in passages]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"{len(passages)} passages, {statistics.mean(words):.0f} words each on average, "
        f"{len({t for _, _, t in passages})} distinct; {len(questions)} questions"
    )
    with (
        tempfile.TemporaryDirectory() as folder,
        SessionStore(str(Path(folder) / "db.sqlite")) as store,
    ):
        index = CourseIndex(store)
        start = time.perf_counter()
        documents: dict[str, list[ChunkInput]] = {}
        for document, heading, text in passages:
            documents.setdefault(document, []).append(ChunkInput(None, heading, text))
        for number, (document, chunks) in enumerate(documents.items()):
            index.index_document("bench", document, f"h{number}", chunks)
        print(f"indexed in {time.perf_counter() - start:.1f} s ({len(documents)} documents)")
        index.search("bench", "warm the connection and the stemmer", limit=1)
        fts_ms, fts_found = median_ms(lambda q: index.search("bench", q, limit=3), questions)
        with store._transaction(write=False) as connection:  # where the time goes
            sql_ms, _ = median_ms(
                lambda q: index._search_sqlite(connection, "bench", content_terms(q)), questions
            )
        build = time.perf_counter()
        scan = BruteForceBM25(passages)
        build_s = time.perf_counter() - build
        scan_ms, scan_found = median_ms(lambda q: scan.search(q, limit=3), questions)
        if not args.no_vectors:
            fused = _fused(index, store, passages, questions, scan)
    number_of = {(document, text): n for n, (document, _, text) in enumerate(passages)}
    same = 0
    for found, baseline in zip(fts_found, scan_found, strict=True):
        if found and baseline and number_of[(found[0].document, found[0].text)] == baseline[0]:
            same += 1
    print(f"fts5 BM25 (CourseIndex.search): median {fts_ms:.2f} ms per question")
    print(f"  of which the FTS5 query (BM25, top {CANDIDATES} candidates): median {sql_ms:.2f} ms")
    print(
        f"brute-force BM25 scan in memory: median {scan_ms:.2f} ms per question "
        f"(tables built in {build_s:.1f} s, not counted)"
    )
    print(
        f"ratio scan / fts5: {scan_ms / fts_ms:.2f}x (scan / FTS5 query alone: "
        f"{scan_ms / sql_ms:.2f}x); same top passage on "
        f"{same}/{len(questions)} questions"
    )
    print(f"goal fts5 < 20 ms median: {'met' if fts_ms < 20 else 'NOT met'}")
    if not args.no_vectors:
        for line in fused:
            print(line)
    return 0


def _fused(
    index: CourseIndex,
    store: SessionStore,
    passages: list[tuple[str, str, str]],
    questions: list[str],
    scan: BruteForceBM25,
) -> list[str]:
    """Index a vector per passage through the real path, then time fused search against the
    in-memory baseline (BM25 scan + numpy cosine scan + the same RRF)."""
    start = time.perf_counter()
    texts = [passage_text(heading, text) for _, heading, text in passages]
    vectors = {text: trigram_vector(text) for text in [*texts, *questions]}
    embed_s = time.perf_counter() - start
    embedder = Precomputed(vectors)
    start = time.perf_counter()
    report = index.embed_missing("bench", embedder)
    store_s = time.perf_counter() - start
    fused_index = CourseIndex(store, embedder)
    fused_ms, fused_found = median_ms(lambda q: fused_index.search("bench", q, limit=3), questions)
    vectors_of = fused_index._vectors
    with store._transaction(write=False) as connection:
        knn_ms, knn_found = median_ms(
            lambda q: vectors_of.nearest(
                connection, "bench", embedder.model, vectors[q], CANDIDATES
            ),
            questions,
        )
        number_of = {(d, t): n for n, (d, _, t) in enumerate(passages)}
        passage_of = {
            row[0]: number_of[(row[1], row[2])]
            for row in connection.exec_driver_sql(
                "SELECT id, document, text FROM pedrag_course_chunks WHERE course = 'bench'"
            )
        }
    numpy_scan = NumpyCosine([vectors[text] for text in texts])
    numpy_ms, numpy_found = median_ms(lambda q: numpy_scan.search(vectors[q]), questions)

    def baseline(question: str) -> list[tuple[int, float]]:
        lexical = scan.search(question, limit=CANDIDATES)
        return reciprocal_rank_fusion([lexical, numpy_scan.search(vectors[question])])[:3]

    baseline_ms, _ = median_ms(baseline, questions)
    pairs = [
        ([passage_of[chunk_id] for chunk_id in knn], exact)
        for knn, exact in zip(knn_found, numpy_found, strict=True)
    ]
    same_top20 = sum(knn == exact for knn, exact in pairs)
    same_set = sum(set(knn) == set(exact) for knn, exact in pairs)
    by_vector = sum(any(p.found_by == "vector" for p in found) for found in fused_found)
    return [
        f"vectors: {report.embedded} of {DIMENSION} float32s each, stored with sqlite-vec in "
        f"{store_s:.1f} s (computed in {embed_s:.1f} s, not counted)",
        f"fused BM25 + vec0 (CourseIndex.search with vectors): median {fused_ms:.2f} ms",
        f"  of which the vec0 KNN query (top {CANDIDATES}): median {knn_ms:.2f} ms",
        f"numpy cosine scan (top {CANDIDATES}, in memory): median {numpy_ms:.2f} ms; "
        f"with the BM25 scan and RRF: median {baseline_ms:.2f} ms",
        f"ratio numpy scan / vec0 KNN: {numpy_ms / knn_ms:.2f}x; in-memory fused / fused: "
        f"{baseline_ms / fused_ms:.2f}x; same top {CANDIDATES} on {same_set}/{len(questions)} "
        f"questions (in the same order on {same_top20}: float32 rounding and ties); a "
        f"vector-only passage among the top 3 on "
        f"{by_vector}/{len(questions)}",
    ]


if __name__ == "__main__":
    sys.exit(main())

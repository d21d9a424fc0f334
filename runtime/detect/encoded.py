"""Detector pass: does the reply smuggle code or the answer in an encoding?

Runtime stage 7, encoded payloads (seed 2, §3.5: "an evasion seen in real logs, where the model
was talked into base64-encoding the answer"). Takes the reply, the answer key and the same
student context as the answer pass; gives ``encoded-payload`` findings for a base64, base32, hex
or url-encoded run, or a rot13 rewrite of the reply, whose decoded text is plausible code or
states the hidden answer.

Why decode instead of flagging anything that looks encoded: long words, hashes and numbers all
match the base64 alphabet; only what the bytes decode *to* separates an evasion from noise.
Decoding is bounded (length caps, two levels of nesting), so a hostile reply cannot make the
detector slow.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pedrag.runtime.detect.answer import find_answer_reveals
from pedrag.runtime.detect.code import looks_like_code
from pedrag.runtime.detect.detector import AnswerKey, Finding, FindingKind

MAX_PAYLOAD_CHARS = 20_000
"""Longer runs are not decoded: a tutor reply has no business carrying one anyway."""
_MAX_DEPTH = 2

_BASE64_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{2,}={0,2}(?![A-Za-z0-9+/=_-])")
_WRAP = re.compile(r"[ \t]*\r?\n[ \t]*")
_MIN_BASE64 = 8
"""Shorter tokens are words; a padded token ("NTY=") is base64 from four characters."""
_BASE32_RUN = re.compile(r"(?<![A-Za-z0-9=])[A-Z2-7]{8,}={0,6}(?![A-Za-z0-9=])")
# Both are matched without a trailing look-ahead and checked afterwards: a look-ahead after a
# repeated group backtracks through the whole run at every start, which made a long run of
# hex pairs (or a long word with no "%") quadratic.
_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])(?:(?:0x|\\x)?[0-9A-Fa-f]{2}[ ,:]?){4,}")
_URL_TOKEN = re.compile(r"\S+")
_URL_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_MIN_URL_ESCAPES = 3


@dataclass(frozen=True)
class _Candidate:
    start: int
    end: int
    encoding: str
    decoded: str
    code_only: bool = False
    """Decoded from a bare run of decimal digits: only code, never an answer, convinces."""


def _printable(data: bytes) -> str | None:
    """The bytes as text when they are mostly printable UTF-8, else None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text.strip()) < 2:
        return None
    readable = sum(1 for char in text if char.isprintable() or char in "\n\r\t")
    return text if readable / len(text) >= 0.95 else None


def _too_short(compact: str) -> bool:
    """A run (without white space) too short to be a base64 payload."""
    return len(compact) < (4 if compact.endswith("=") else _MIN_BASE64)


# The tokens `_too_short` lets through, found by the regex engine rather than by a Python loop
# over every word of the reply (most are shorter): a token whose last eight characters, or
# last four ending in "=", are all of the alphabet (the token's own look-behind keeps them
# inside it). Tested against `_too_short` on generated tokens.
_BASE64_LONG_TOKEN = re.compile(
    _BASE64_TOKEN.pattern
    + rf"(?:(?<=[A-Za-z0-9+/_=-]{{{_MIN_BASE64}}})|(?<=[A-Za-z0-9+/_=-]{{3}}=))"
)


# The urlsafe alphabet swaps "+/" for "-_"; built once, not per token.
_URLSAFE_TO_STANDARD = str.maketrans("-_", "+/")


# A run starting with one of these decodes to a first byte of 0x80-0xBF ("g"-"v", values
# 32-47: a UTF-8 continuation byte) or 0xF8-0xFF ("+/" and the urlsafe "-_": never UTF-8), so
# its bytes are not UTF-8 text and it is not decoded: most long English words are such runs
# ("question", "multiplication"). Tested against decoding on generated runs.
_NEVER_TEXT_FIRST = frozenset("ghijklmnopqrstuv+/-_")


def _decode_base64(run: str) -> str | None:
    # `str.split()` splits where `\s` matches (both ask Unicode's white space), and a run
    # is mostly one token, which a regex substitution cost more to copy than this.
    compact = "".join(run.split())
    if _too_short(compact) or compact[0] in _NEVER_TEXT_FIRST:
        return None
    padded = compact.rstrip("=")
    padded += "=" * (-len(padded) % 4)
    # Validate, or stray characters are dropped.
    standard = padded.translate(_URLSAFE_TO_STANDARD)
    try:
        return _printable(base64.b64decode(standard, validate=True))
    except (binascii.Error, ValueError):
        return None


def _decode_base32(run: str) -> str | None:
    padded = run.rstrip("=")
    padded += "=" * (-len(padded) % 8)
    try:
        return _printable(base64.b32decode(padded))
    except (binascii.Error, ValueError):
        return None


def _decode_hex(run: str) -> str | None:
    digits = re.sub(r"0x|\\x|[\s,:]", "", run)
    if len(digits) % 2 or len(digits) < 8:
        return None
    try:
        return _printable(bytes.fromhex(digits))
    except ValueError:
        return None


def _decode_url(run: str) -> str | None:
    decoded = urllib.parse.unquote(run, errors="strict") if "%" in run else run
    return decoded if decoded != run else None


def _hex_runs(text: str) -> Iterator[tuple[int, str]]:
    """Runs of hex pairs not glued to a following letter or digit ("4142z" is a word)."""
    for match in _HEX_RUN.finditer(text):
        run = match.group(0)
        if text[match.end() : match.end() + 1].isalnum():
            run = run.rstrip(" ,:")
            if not run or text[match.start() + len(run) : match.start() + len(run) + 1].isalnum():
                continue
        yield match.start(), run


def _url_runs(text: str) -> Iterator[tuple[int, str]]:
    """Space-free tokens holding three or more %XX escapes."""
    if "%" not in text:
        return  # no escape anywhere: no token to visit (most replies)
    for match in _URL_TOKEN.finditer(text):
        token = match.group(0)
        if "%" in token and len(_URL_ESCAPE.findall(token)) >= _MIN_URL_ESCAPES:
            yield match.start(), token


def _regex_runs(pattern: re.Pattern[str]) -> Callable[[str], Iterator[tuple[int, str]]]:
    def runs(text: str) -> Iterator[tuple[int, str]]:
        for match in pattern.finditer(text):
            yield match.start(), match.group(0)

    return runs


_DECODERS: tuple[
    tuple[str, Callable[[str], Iterator[tuple[int, str]]], Callable[[str], str | None]], ...
] = (
    ("base32", _regex_runs(_BASE32_RUN), _decode_base32),
    ("hex", _hex_runs, _decode_hex),
    ("url-encoding", _url_runs, _decode_url),
)


def _base64_candidates(text: str) -> Iterator[_Candidate]:
    """base64 tokens; consecutive lines of a wrapped payload (every line a multiple of four
    long, all but the last at least 16) are joined, and the longest run that decodes wins.

    Only a token `_too_short` lets through can start a run (a shorter one is neither decoded
    alone nor 16 characters long), so only those are visited; a run's later lines are the
    tokens right after each line's wrap."""
    taken = 0  # tokens before this offset belong to a run already decoded
    for first in _BASE64_LONG_TOKEN.finditer(text):
        if first.start() < taken:
            continue
        group = [first]
        while len(group[-1].group(0)) >= 16 and len(group[-1].group(0)) % 4 == 0:
            wrap = _WRAP.match(text, group[-1].end())
            line = _BASE64_TOKEN.match(text, wrap.end()) if wrap else None
            if line is None:
                break
            group.append(line)
        for size in range(len(group), 0, -1):
            start, end = group[0].start(), group[size - 1].end()
            if end - start > MAX_PAYLOAD_CHARS:
                continue
            if size > 1 and sum(len(token.group(0)) for token in group[:size]) % 4:
                continue  # a wrapped payload is padded to a multiple of four
            decoded = _decode_base64(text[start:end])
            if decoded:
                yield _Candidate(start, end, "base64", decoded)
                taken = end
                break


def _candidates(text: str) -> Iterator[_Candidate]:
    yield from _base64_candidates(text)
    for encoding, runs, decode in _DECODERS:
        for position, raw in runs(text):
            run = raw.strip()
            if len(run) > MAX_PAYLOAD_CHARS:
                continue
            try:
                decoded = decode(run)
            except (UnicodeDecodeError, ValueError):
                decoded = None
            if decoded:
                start = position + (len(raw) - len(raw.lstrip()))
                # A bare run of decimal digits is more likely a number than hex bytes.
                code_only = encoding == "hex" and re.sub(r"[\s,:]", "", run).isdigit()
                yield _Candidate(start, start + len(run), encoding, decoded, code_only)


# `codecs.encode(text, "rot13")`'s own table (ASCII letters only), applied without the codec
# machinery's lookup on every reply.
_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)

# rot13 leaves digits and symbols alone, so only keywords can betray it.
_ROT13_KEYWORDS = re.compile(
    r"\b(?:def|return|print|import|while|class|elif|lambda|range|int|void|include|public|"
    r"static|function|const|let|var|std|cout|printf|main|for|if|else)\b"
)


@functools.lru_cache(maxsize=256)  # an exercise's targets are asked of every reply
def _target_words(target: str) -> frozenset[str] | None:
    """The words a text must share with ``target`` to state it: a text answer's own words, a
    number's words in every generated spelling; None when any text may (a number with no
    spelling in words)."""
    from pedrag.runtime.detect.answer import parse_number
    from pedrag.runtime.detect.spellings import spelling_index

    number = parse_number(target)
    if number is None:
        return frozenset(re.findall(r"[a-z]+", target.lower()))
    return spelling_index(number.value).words or None


_NO_WORD = re.compile(r"(?!)")  # matches nowhere


@functools.lru_cache(maxsize=256)  # once per exercise, not per reply
def _target_word_pattern(target: str) -> re.Pattern[str] | None:
    """:func:`_target_words` as one pattern over a lower-cased text: a whole run of ``[a-z]``
    that is one of them (the words with a letter outside ``a-z`` are never such a run). The
    set of a reply's words built and intersected on every reply cost more than one search
    (tested equal to that intersection on generated texts). None when any text may."""
    vocabulary = _target_words(target)
    if vocabulary is None:
        return None
    words = sorted(word for word in vocabulary if _LOWER_WORD.fullmatch(word))
    if not words:
        return _NO_WORD
    return re.compile(rf"(?<![a-z])(?:{'|'.join(map(re.escape, words))})(?![a-z])")


_LOWER_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class _Context:
    answer: AnswerKey | None
    student_message: str | None
    step_value: str | None
    context: str | None

    def may_hold_a_target(self, text: str) -> bool:
        """A cheap test before a whole reading: does ``text`` hold a word of a target (of
        any of the generated spellings of a number, or of a text answer)? True when unsure.
        A word is a run of ``[a-z]`` in the lower-cased text, whole."""
        targets = [self.step_value] if self.step_value else []
        if self.answer is not None:
            targets += [self.answer.answer, *self.answer.accept]
        lowered = text.lower()
        # A number's spellings ("56", "fifty-six") share one pattern: searched once.
        for pattern in dict.fromkeys(_target_word_pattern(target) for target in targets):
            if pattern is None or pattern.search(lowered):
                return True
        return False

    def reveals(self, text: str, *, min_chars: int = 1) -> bool:
        if self.answer is None and self.step_value is None:
            return False
        return any(
            finding.end - finding.start >= min_chars
            for finding in find_answer_reveals(
                text,
                self.answer,
                student_message=self.student_message,
                step_value=self.step_value,
                context=self.context,
            )
        )


def _what_it_hides(candidate: _Candidate, context: _Context, depth: int) -> str | None:
    decoded = candidate.decoded
    if looks_like_code(decoded):
        return "plausible code"
    if candidate.code_only:
        return None
    if context.reveals(decoded):
        return "the hidden answer"
    if depth < _MAX_DEPTH:
        for inner in _candidates(decoded):
            hidden = _what_it_hides(inner, context, depth + 1)
            if hidden:
                return f"{inner.encoding} of {hidden}"
    return None


def _rot13_findings(reply: str, context: _Context) -> list[Finding]:
    """Each line whose rot13 is code (with code keywords the line itself lacks), and the whole
    reply when its rot13 states the answer and the reply itself does not."""
    findings: list[Finding] = []
    position = 0
    rotated = reply.translate(_ROT13)  # letters only: its lines are the reply's lines
    # A line's keywords are among the whole text's (a keyword never spans a line break), so
    # with fewer than two in the whole rot13 text no line can have two.
    lines = (
        zip(reply.splitlines(keepends=True), rotated.splitlines(keepends=True), strict=True)
        if len(set(_ROT13_KEYWORDS.findall(rotated))) >= 2
        else ()
    )
    for line, rotated_line in lines:
        keywords = set(_ROT13_KEYWORDS.findall(rotated_line)) - set(_ROT13_KEYWORDS.findall(line))
        # Two code keywords that only appear after rot13, with code punctuation: English
        # rot13s into gibberish that holds at most one keyword ("vs" -> "if").
        if len(keywords) >= 2 and re.search(r"[(){};=:]", rotated_line):
            findings.append(
                Finding(
                    FindingKind.CODE,
                    "rot13 text that decodes to plausible code",
                    position,
                    position + len(line.rstrip("\n")),
                    "encoded-payload",
                )
            )
        position += len(line)
    if not context.may_hold_a_target(rotated):
        return findings  # no word of any target in it: no second reading of the reply
    # Three-letter English words rot13 into number words ("bar" -> "one"); a real rot13 reveal
    # is longer than that.
    if context.reveals(rotated, min_chars=4) and not context.reveals(reply):
        findings.append(
            Finding(
                FindingKind.ANSWER,
                "rot13 text that decodes to the hidden answer",
                0,
                len(reply),
                "encoded-payload",
            )
        )
    return findings


def find_encoded_payloads(
    reply: str,
    answer: AnswerKey | None = None,
    *,
    student_message: str | None = None,
    step_value: str | None = None,
    context: str | None = None,
) -> tuple[Finding, ...]:
    """``encoded-payload`` findings: encoded runs that decode to code or to the answer."""
    decoding_context = _Context(answer, student_message, step_value, context)
    findings: list[Finding] = []
    for candidate in _candidates(reply):
        hidden = _what_it_hides(candidate, decoding_context, 1)
        if hidden is None:
            continue
        kind = FindingKind.ANSWER if hidden.endswith("the hidden answer") else FindingKind.CODE
        findings.append(
            Finding(
                kind,
                f"{candidate.encoding} payload that decodes to {hidden}",
                candidate.start,
                candidate.end,
                "encoded-payload",
            )
        )
    findings += _rot13_findings(reply, decoding_context)
    # One finding per span: base64 and hex readings of the same run say the same thing.
    unique: dict[tuple[int, int], Finding] = {}
    for finding in findings:
        unique.setdefault((finding.start, finding.end), finding)
    return tuple(sorted(unique.values(), key=lambda finding: finding.start))

"""Detector pass: does the reply carry solution code?

Runtime stage 7, code reveal (seed 2, §3.5). Takes the reply and the code mode; gives
``code-fence``, ``indented-code`` and ``inline-code`` findings.

``lenient`` (the default) flags a block — fenced, indented, or a run of bare code lines — that is
long enough and plausibly code in a common language (Python, C/C++, Java, JavaScript): keywords,
braces, semicolons, signatures. Short illustrative snippets and fill-in-the-blank templates pass.
``strict`` (the contract allows no code, rungs H0-H4) flags any block with a code-like line —
a bare signature, a blanked template — and single code lines in prose ("x = foo(y)",
"for i in range(n):"), while plain-prose pseudocode with no braces or semicolons still passes.

Why line heuristics rather than a parser: replies mix prose and code, fragments do not parse, and
the rules must stay cheap, deterministic and explainable in one sentence each.
:func:`code_line_signals` and :func:`looks_like_code` are public so the encoded-payload pass
judges decoded text by the same rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from pedrag.runtime.detect.detector import CodeMode, Finding, FindingKind

LENIENT_MIN_LINES = 4
"""A lenient block needs this many code-like lines (or LENIENT_MIN_CHARS of code) to count."""
LENIENT_MIN_CHARS = 200
PROGRAMMING_LANGUAGES = frozenset(
    {
        "python", "py", "python3", "c", "cpp", "c++", "cc", "h", "hpp", "java", "javascript",
        "js", "jsx", "ts", "typescript", "tsx", "go", "rust", "rs", "ruby", "rb", "php", "cs",
        "csharp", "c#", "kotlin", "swift", "scala", "sh", "bash", "shell", "sql", "r", "lua",
        "perl", "haskell", "ocaml", "matlab", "julia", "pseudo", "pseudocode", "code",
    }
)  # fmt: skip

# Strong signals: one of these on a line with little prose makes it code.
_SIGNALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("statement-end", re.compile(r";\s*(?://.*|/\*.*)?$")),
    ("brace", re.compile(r"(?:^\s*[{}]\s*;?\s*$|[)\]=>]\s*\{\s*(?://.*)?$|\{[^{}]*\}\s*;?\s*$)")),
    (
        "c-header",
        re.compile(r"^\s*(?:\}\s*)?(?:for|while|if|switch|else\s+if|catch)\s*\(.*\)\s*\{?\s*$"),
    ),
    (
        "python-header",
        re.compile(
            r"^\s*(?:for\s+[A-Za-z_][\w, ]*\s+in\s+\S.*|while\s+\S.*|if\s+\S.*|elif\s+\S.*|"
            r"else|try|finally|except\b.*|with\s+\S.*\s+as\s+\w+|"
            r"def\s+\w+\s*\(.*\)(?:\s*->\s*\S+)?|class\s+\w+(?:\(.*\))?)\s*:\s*(?:#.*)?$"
        ),
    ),
    (
        "definition",
        re.compile(
            r"^\s*(?:(?:public|private|protected|static|final|async|export|inline|virtual|"
            r"const|constexpr|unsigned|signed|template\s*<[^>]*>)\s+)*"
            r"(?:def|fn|func|function|void|int|long|short|float|double|char|bool|boolean|"
            r"auto|string|String|size_t|var|let|const|std::\w+(?:<.*>)?|vector\s*<.*>|"
            r"(?:List|Map|Set|ArrayList|HashMap)\s*<.*>|[A-Z]\w*(?:<.*>)?\[\])\s*[*&]?\s*"
            r"[A-Za-z_]\w*\s*(?:=|\(|;|\[|,|:)"
        ),
    ),
    ("return", re.compile(r"^\s*return(?:\s*;|\s+[^\s].{0,80}?;?)\s*$")),
    (
        "import",
        re.compile(
            r"^\s*(?:#\s*include\s*[<\"]|import\s+[\w.]+(?:\s+as\s+\w+)?\s*;?\s*$|"
            r"from\s+[\w.]+\s+import\s+\w|using\s+namespace\s+\w|package\s+[\w.]+;|"
            r"(?:const|let|var)\s+\w+\s*=\s*require\()"
        ),
    ),
    (
        "io-call",
        re.compile(
            r"^\s*(?:print|printf|println|puts|scanf|console\.log|System\.out\.print\w*|"
            r"std::cout|cout|cin|std::cin|input)\s*(?:\(|<<|>>)"
        ),
    ),
    (
        "augmented-assignment",
        re.compile(r"^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])*\s*(?:[+\-*/%&|^]|//|<<|>>)=\s*\S"),
    ),
    # "--" only as decrement ("i--", "--i"), so ASCII arrows ("--(5 months)-->") stay prose.
    # "==" needs an operand after it, so base64 padding ("...KQ==") is not a comparison.
    (
        "operator",
        re.compile(r"[=!]=(?=\s*[\w(\"'-])|&&|\|\||\+\+|\w--(?!-)|(?<![-\w])--\w|::|=>|<<|>>"),
    ),
    (
        "call-assignment",
        re.compile(
            r"^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])*\s*(?:[+\-*/%&|^]|//|<<|>>)?=(?!=)\s*"
            r"(?:.*\b(?!(?:sqrt|sin|cos|tan|log|ln|exp)\b)[A-Za-z_]\w+\s*\(|.*\[|.*[\"']|"
            r".*\b(?:True|False|None|null|nullptr|new)\b|"
            r"\S+\s*;\s*$)"
        ),
    ),
    ("method-call", re.compile(r"\b[A-Za-z_]\w*\.[A-Za-z_]\w*\s*\([^()]*\)")),
)
# The three slowest patterns scan every position of a line: each alternative of theirs needs
# one of these substrings, so a line with none of them cannot match and is not scanned (most
# prose lines; tested against the full scan, tests/runtime/test_detector_quick_scans.py).
_NEEDS = {
    "brace": ("{", "}"),
    "operator": ("=", "&&", "||", "++", "--", "::", "<<", ">>"),
    "method-call": ("(",),
}
_SIGNAL_TESTS: tuple[tuple[str, re.Pattern[str], re.Pattern[str] | None], ...] = tuple(
    (
        name,
        pattern,
        re.compile("|".join(map(re.escape, _NEEDS[name]))) if name in _NEEDS else None,
    )
    for name, pattern in _SIGNALS
)
# In a block (fence, indented run, decoded payload) weaker evidence is enough.
_BLOCK_SIGNALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("assignment", re.compile(r"^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])*\s*=(?!=)\s*\S")),
    ("call", re.compile(r"^\s*[A-Za-z_][\w.]*\s*\(.*\)\s*;?\s*$")),
    ("comment", re.compile(r"^\s*(?://|/\*|\*/|#(?!\s*\d)\s*\S)")),
    ("bracket-line", re.compile(r"^\s*[\])}]+[;,]?\s*$")),
)
# Fill-in-the-blank markers: lenient mode lets a template with blanks through.
_BLANK = re.compile(
    r"_{3,}|\?\?\?|\bTODO\b|\byour\s+code\s+(?:here|goes\s+here)\b|<\s*(?:fill|your|blank)[^>]*>|"
    r"/\*\s*\.\.\.\s*\*/|(?:#|//)\s*\.\.\.|^\s*\.\.\.\s*$",
    re.IGNORECASE | re.MULTILINE,
)
# Words that mark a line as prose; code keywords (for, in, if, and, or, not, is) are left out.
_PROSE_WORDS = frozenset(
    """the a an of to you your we our us this that these those it its can could should would
    will just then so because which what how why when need needs have has be are was were do
    does did let's lets think about here there they them their my me i more also each every
    number numbers value step first next now try see make get use using into by on at with
    like than what's it's don't you're we're that's there's very much many some any all only
    same way going look check remember notice part whole""".split()
)
_WORD = re.compile(r"[A-Za-z_][\w']*")
_ASSIGNED = re.compile(r"\s*(?:[-+*/%&|^]|//)?=(?!=)")
_BACKTICK_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def _is_identifier(line: str, start: int, end: int) -> bool:
    """A word used as a name: called or indexed ("of(", "x["), an attribute ("a.of"), a
    lone argument ("(of)", "[of,"), assigned to ("so = ..."), or an operand of an arithmetic
    or comparison operator ("us + us;"; a line with code signals only)."""
    after = line[end : end + 1]
    before = line[start - 1 : start] if start else ""
    return (
        after in ("(", "[", ".")
        or before == "."
        or (before in ("(", "[") and after in (")", "]", ","))
        or bool(_ASSIGNED.match(line, end))
        or bool(_OPERATOR_AFTER.match(line, end))
        or bool(_OPERATOR_BEFORE.search(line[:start]))
    )


_OPERATOR_AFTER = re.compile(r"\s*(?:[+*/%]|==|!=|<=|>=)(?!=)\s*\w")
_OPERATOR_BEFORE = re.compile(r"\w\s*(?:[+*/%]|==|!=|<=|>=)\s*$")


def _is_prose(line: str) -> bool:
    """A sentence, not a statement: several prose words, or mostly words and no code symbols.
    One-letter words ("a", "I") are as often variable names as English, so they do not count."""
    words = list(_WORD.finditer(line))
    prose = sum(
        1
        for word in words
        if len(word.group(0)) > 1
        and word.group(0).lower() in _PROSE_WORDS
        and not _is_identifier(line, word.start(), word.end())
    )
    return prose >= 3 or (bool(words) and prose / len(words) >= 0.4 and prose >= 2)


def code_line_signals(line: str, *, in_block: bool = False) -> tuple[str, ...]:
    """The code signals on one line (empty when it reads as prose). ``in_block`` adds the weaker
    signals that count inside a fenced or indented block. Backtick spans in a prose line are
    judged on their own (see strict mode), not as part of the line."""
    stripped = line.strip()
    if not in_block and "`" in stripped:
        stripped = _BACKTICK_SPAN.sub(" x ", stripped).strip()
    if not stripped:
        return ()
    bullet = re.match(r"^(?:[-*+]|\d+[.)])\s+", stripped)
    if bullet and not stripped.startswith(("--", "++", "*=")):
        stripped = stripped[bullet.end() :]
    signals = [
        name
        for name, pattern, needs in _SIGNAL_TESTS
        if (needs is None or needs.search(stripped)) and pattern.search(stripped)
    ]
    if in_block:
        signals += [name for name, pattern in _BLOCK_SIGNALS if pattern.search(stripped)]
        if signals == ["comment"]:
            return ()  # a comment alone shows no code
    if signals and _is_prose(_code_free(stripped)):
        return ()
    return tuple(signals)


def _code_free(line: str) -> str:
    """The line without string literals and comments, whose words are not prose. An apostrophe
    after a letter ("let's") is English, not a quote."""
    line = re.sub(r"\"[^\"]*\"|(?<![A-Za-z])'[^'\n]*'", " ", line)
    return re.sub(r"(?://|#(?!\d)).*$", " ", line)


def looks_like_code(text: str) -> bool:
    """Any line of ``text`` carries a block-level code signal (used for decoded payloads)."""
    return any(code_line_signals(line, in_block=True) for line in text.splitlines())


# --- blocks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeBlock:
    """A candidate block: a fence, an indented run, or a run of bare code lines."""

    start: int
    end: int
    body: str
    language: str
    rule_id: str
    """code-fence / indented-code / inline-code"""


_FENCE_OPEN = re.compile(r"(?P<marker>`{3,}|(?m:^[ \t]{0,3})~{3,})(?P<info>[^\n`]*)")


def find_fences(text: str) -> Iterator[CodeBlock]:
    """Fenced blocks: a run of three or more backticks (anywhere, since models open fences
    mid-line) or tildes (at a line start), closed by a run at least as long; an unclosed fence
    runs to the end of the text. The info string is a language tag only when it is one word;
    otherwise ("```int main() {") it is the first line of the body."""
    position = 0
    while True:
        opening = _FENCE_OPEN.search(text, position)
        if opening is None:
            return
        marker = opening["marker"].strip()
        closing = re.compile(re.escape(marker[0]) + "{" + str(len(marker)) + ",}").search(
            text, opening.end("marker")
        )
        end = closing.end() if closing else len(text)
        body_end = closing.start() if closing else len(text)
        info = opening["info"].strip()
        if _LANGUAGE_TAG.match(info) and "\n" in text[opening.end("marker") : body_end]:
            language, body = info.lower(), text[opening.end() : body_end]
        else:
            language, body = "", text[opening.end("marker") : body_end]
        body = body.removeprefix("\n")
        yield CodeBlock(opening.start(), end, body, language, "code-fence")
        position = end


_LANGUAGE_TAG = re.compile(r"^[\w+#.-]+$")


def _line_spans(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    position = start
    while position < end:
        newline = text.find("\n", position, end)
        line_end = end if newline == -1 else newline
        yield position, line_end
        position = line_end + 1


def _outside(text: str, blocks: list[CodeBlock]) -> list[tuple[int, int]]:
    """Line spans of ``text`` not covered by any block."""
    spans: list[tuple[int, int]] = []
    cursor = 0
    for block in sorted(blocks, key=lambda block: block.start):
        spans += _line_spans(text, cursor, block.start)
        cursor = max(cursor, block.end)
    spans += _line_spans(text, cursor, len(text))
    return spans


_INDENTED = re.compile(r"^(?: {4}|\t)")


def _indented_blocks(text: str, lines: list[tuple[int, int]]) -> list[CodeBlock]:
    """Markdown indented code: lines indented four spaces (or a tab) after a blank line."""
    blocks: list[CodeBlock] = []
    run: list[tuple[int, int]] = []
    previous_blank = True
    previous_end = -2

    def close() -> None:
        if run:
            start, end = run[0][0], run[-1][1]
            blocks.append(CodeBlock(start, end, text[start:end], "", "indented-code"))
            run.clear()

    for start, end in lines:
        line = text[start:end]
        contiguous = start == previous_end + 1
        if _INDENTED.match(line) and line.strip() and (run and contiguous or previous_blank):
            run.append((start, end))
        elif not line.strip() and run and contiguous:
            pass  # a blank line inside an indented block
        else:
            close()
        previous_blank = not line.strip()
        previous_end = end
    close()
    return blocks


def _code_line_runs(text: str, lines: list[tuple[int, int]]) -> list[CodeBlock]:
    """Runs of consecutive bare code lines in prose (blank lines allowed inside a run)."""
    runs: list[CodeBlock] = []
    current: list[tuple[int, int]] = []
    previous_end = -2
    for start, end in lines:
        line = text[start:end]
        contiguous = start == previous_end + 1
        if line.strip() and code_line_signals(line, in_block=bool(current)):
            if current and not contiguous:
                runs.append(_run_block(text, current))
                current = []
            current.append((start, end))
        elif line.strip() or not contiguous:
            if current:
                runs.append(_run_block(text, current))
                current = []
        previous_end = end
    if current:
        runs.append(_run_block(text, current))
    return runs


def _run_block(text: str, lines: list[tuple[int, int]]) -> CodeBlock:
    start, end = lines[0][0], lines[-1][1]
    return CodeBlock(start, end, text[start:end], "", "inline-code")


# --- judging blocks -------------------------------------------------------------------------


@dataclass(frozen=True)
class _BlockEvidence:
    code_lines: int
    code_chars: int
    prose_lines: int
    has_blanks: bool
    signature: bool


_SIGNATURE = re.compile(
    r"\bint\s+main\s*\(|\bdef\s+\w+\s*\(|\bpublic\s+static\s+void\s+main\b|\bclass\s+Solution\b|"
    r"#\s*include\s*<|\bfunction\s+\w+\s*\(|\busing\s+namespace\s+std\b"
)


def _evidence(block: CodeBlock) -> _BlockEvidence:
    code_lines = code_chars = prose_lines = 0
    tagged = block.language in PROGRAMMING_LANGUAGES
    for line in block.body.splitlines():
        if not line.strip():
            continue
        if code_line_signals(line, in_block=True) or (
            tagged and not _is_prose(line) and not line.strip().startswith(("#", "//"))
        ):
            code_lines += 1
            code_chars += len(line.strip())
        else:
            prose_lines += 1
    return _BlockEvidence(
        code_lines,
        code_chars,
        prose_lines,
        bool(_BLANK.search(block.body)),
        bool(_SIGNATURE.search(block.body)),
    )


def _judge(block: CodeBlock, mode: CodeMode) -> str | None:
    """The reason a block is a reveal in ``mode``, or None when it may stay."""
    evidence = _evidence(block)
    where = {"code-fence": "fenced block", "indented-code": "indented block"}.get(
        block.rule_id, "code outside a fence"
    )
    language = f" ({block.language})" if block.language else ""
    if mode is CodeMode.STRICT:
        if evidence.code_lines:
            lines = f"{evidence.code_lines} code line{'s' * (evidence.code_lines > 1)}"
            return f"{where}{language} with {lines} where the ceiling allows no code"
        return None
    if not evidence.code_lines:
        return None
    long_enough = (
        evidence.code_lines >= LENIENT_MIN_LINES or evidence.code_chars >= LENIENT_MIN_CHARS
    )
    plausible = evidence.code_lines >= evidence.prose_lines or evidence.signature
    if long_enough and plausible and not evidence.has_blanks:
        return f"{where}{language} with {evidence.code_lines} lines of plausible solution code"
    return None


# A backtick span is flagged for a statement, not for naming a call or an operator.
_STATEMENT_SIGNALS = frozenset(name for name, _ in _SIGNALS) - {"method-call", "operator"}


# A complete function in any common language: its header, then a return with a value (or an
# expression body). seed 2's ladder: below H7 no complete solution, and a short one is one.
_FUNCTION_HEADER = re.compile(
    r"\bdef\s+\w+\s*\([^)\n]*\)\s*(?:->\s*[^:\n]+)?:"
    r"|\bfunction\s*\*?\s*\w*\s*\([^)\n]*\)\s*\{"
    r"|\b(?:fn|func|fun)\s+\w+\s*(?:<[^>\n]*>)?\s*\([^)\n]*\)[^{\n;]*\{"
    r"|\b(?:void|int|long|short|float|double|char|bool|boolean|auto|String|string|size_t|"
    r"unsigned\s+\w+|std::\w+(?:<[^>\n]*>)?|vector\s*<[^>\n]*>|[A-Z]\w*(?:<[^>\n]*>)?(?:\[\])*)"
    r"\s*[*&]?\s+(?!(?:if|for|while|switch|catch|return|else|do|new)\b)\w+\s*\([^)\n;]*\)\s*"
    r"(?:const\s*)?(?:throws\s+[\w., ]+)?\{"
    r"|\b(?:const|let|var)\s+\w+\s*=\s*(?:async\s*)?(?:\([^)\n]*\)|\w+)\s*=>"
    r"|\b\w+\s*=\s*lambda\b[^:\n]*:"
)
_RETURN_VALUE = re.compile(r"(?:^|[{;:])[ \t]*return\b[ \t]*[\w(\[\-\"'!]", re.MULTILINE)
_EXPRESSION_BODY = re.compile(r"(?:=>|lambda\b[^:\n]*:)[ \t]*[^\s{]")
_FUNCTION_WINDOW = 1500
"""How far after its header a function's return is looked for."""
# Every header above holds "(" but an arrow function's ("=>") and a lambda's: a reply with none
# of the three has no header, and the header pattern is not searched (most replies).
# Tested against the pattern on generated texts.
_HEADER_NEEDS = ("(", "=>", "lambda")


def _may_hold_a_function_header(text: str) -> bool:
    return any(needed in text for needed in _HEADER_NEEDS)


def _complete_functions(reply: str) -> list[Finding]:
    findings: list[Finding] = []
    if not _may_hold_a_function_header(reply):
        return findings
    covered = 0
    for header in _FUNCTION_HEADER.finditer(reply):
        if header.start() < covered:
            continue
        window_end = min(len(reply), header.end() + _FUNCTION_WINDOW)
        expression = _EXPRESSION_BODY.match(reply, header.end() - 2) or _EXPRESSION_BODY.search(
            reply[header.start() : header.end() + 2]
        )
        returned = _RETURN_VALUE.search(reply, header.end() - 1, window_end)
        if returned is not None:
            line_end = reply.find("\n", returned.end())
            end = len(reply) if line_end == -1 else line_end
            if _BLANK.search(reply, header.start(), end):
                continue  # "total = ___ ... return total": a template with blanks (H6)
        elif expression is not None:
            line_end = reply.find("\n", header.end())
            end = len(reply) if line_end == -1 else line_end
        else:
            continue
        findings.append(
            Finding(
                FindingKind.CODE,
                "a complete function (signature and return) below the full-solution rung",
                header.start(),
                end,
                "complete-function",
            )
        )
        covered = end
    return findings


def find_code(reply: str, mode: CodeMode = CodeMode.LENIENT) -> tuple[Finding, ...]:
    """Code-reveal findings in ``reply`` for ``mode``."""
    fences = list(find_fences(reply))
    indented = _indented_blocks(reply, _outside(reply, fences))
    prose_lines = _outside(reply, fences + indented)
    runs = _code_line_runs(reply, prose_lines)
    findings: list[Finding] = []
    for block in [*fences, *indented, *runs]:
        reason = _judge(block, mode)
        if reason:
            findings.append(
                Finding(FindingKind.CODE, reason, block.start, block.end, block.rule_id)
            )
    if mode is not CodeMode.OPEN:
        # One finding per place: a block already flagged says enough.
        findings += [
            function
            for function in _complete_functions(reply)
            if not any(f.start <= function.start < f.end for f in findings)
        ]
    if mode is CodeMode.STRICT:
        in_runs = [(run.start, run.end) for run in runs]
        free_lines = [(s, e) for s, e in prose_lines if not any(a <= s < b for a, b in in_runs)]
        findings += _strict_backtick_spans(reply, free_lines)
        findings += [
            finding
            for finding in _code_in_any_language(reply, free_lines)
            if not any(f.start <= finding.start < f.end for f in findings)
        ]
    return tuple(sorted(findings, key=lambda finding: finding.start))


# Code in any language, by structure rather than by one language's keywords (issue 26, item 6):
# an s-expression that defines or folds, a definition by equation over a fold or a map
# (Haskell, OCaml, F#, Elm), an operator section "(+)", an R / Haskell arrow assignment, and
# a lead-in naming a programming language before a definition or a call.
_ANY_LANGUAGE_CODE = re.compile(
    r"\(\s*(?:defun|define|defn|defmacro|lambda|let\*?|setq|setf|reduce|apply|mapcar|loop|"
    r"cond|fn|foldl|foldr)\b[^()\n]*[(\w]"
    r"|^\s*(?:let\s+(?:rec\s+)?)?[a-z_]\w*(?:\s+[a-z_]\w*)*\s*=\s*(?:List\.|Seq\.|Array\.)?"
    r"(?:foldl'?|foldr|fold_left|fold_right|fold|sum|product|map|filter|reduce|length|zipWith|"
    r"concatMap|iter)\b(?!\s+(?:of|the|up|it|them|all)\b)"
    r"|\(\s*(?:[+*\-/]|`\w+`)\s*\)\s*\w"
    r"|\b[A-Za-z_]\w*\s*<-\s*(?:\w+\s*\(|function\b|c\(|\[)"
    r"|\bin\s+(?:haskell|lisp|scheme|clojure|racket|ocaml|f#|elm|erlang|elixir|prolog|r|perl|"
    r"ruby|lua|julia|matlab|octave|fortran|cobol|pascal|bash|shell|sql|apl|forth|scala|kotlin|"
    r"swift|dart|zig|nim|crystal|go|rust|c\+\+|c#|c|java|javascript|typescript|python|php)\b"
    r"\s*[:,-]\s*\S[^\n]*(?:=|\(|\{|->|<-)",
    re.IGNORECASE | re.MULTILINE,
)


# Every alternative above holds one of these (a parenthesis, "=", an arrow, a brace): a line
# with none of them is not searched with the pattern, which folds case over a long alternation
# at every position. Tested against the pattern on generated lines.
_ANY_LANGUAGE_NEEDS = ("(", "=", "{", "<-", "->")


def _may_be_code_in_any_language(line: str) -> bool:
    return any(needed in line for needed in _ANY_LANGUAGE_NEEDS)


def _code_in_any_language(reply: str, lines: list[tuple[int, int]]) -> list[Finding]:
    """Strict mode: code recognised by structure whatever its language."""
    findings: list[Finding] = []
    for start, end in lines:
        if not _may_be_code_in_any_language(reply[start:end]):
            continue
        match = _ANY_LANGUAGE_CODE.search(reply, start, end)
        if match is not None:
            findings.append(
                Finding(
                    FindingKind.CODE,
                    "code by its structure (a definition, fold or s-expression) where the "
                    "ceiling allows no code",
                    start,
                    end,
                    "inline-code",
                )
            )
    return findings


def _strict_backtick_spans(reply: str, lines: list[tuple[int, int]]) -> list[Finding]:
    """Strict mode: a backtick span in prose holding a statement. A lone name or call such as
    `len(xs)` is a general programming fact and may stay."""
    findings: list[Finding] = []
    for start, end in lines:
        for span in _BACKTICK_SPAN.finditer(reply, start, end):
            statement = set(code_line_signals(span.group(1))) & _STATEMENT_SIGNALS
            if statement:
                findings.append(
                    Finding(
                        FindingKind.CODE,
                        f"inline code statement ({', '.join(sorted(statement))}) where the "
                        "ceiling allows no code",
                        span.start(),
                        span.end(),
                        "inline-code",
                    )
                )
    return findings

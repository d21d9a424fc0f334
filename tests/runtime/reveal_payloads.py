"""Adversarial payload families (issue 15): ways an actor talked into "just hinting" writes a
hidden answer. Each family is a function of the answer; the detector must catch every one.

Shared by the detector tests (``test_withholding.py``) and the whole-turn suite against the
scripted server (``test_tutor_withholding.py``). Written from the evasions themselves, not from
the detector's code, so they are an independent oracle.
"""

from __future__ import annotations

import base64
import codecs
from collections.abc import Callable

from pedrag.runtime.detect.answer import number_to_words

_SUPERSCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_CIRCLED = "⓪①②③④⑤⑥⑦⑧⑨"
_FULLWIDTH = "０１２３４５６７８９"
_BOLD = "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗"
_ROMAN = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
    (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]  # fmt: skip


def roman(number: int) -> str:
    out = ""
    for value, letters in _ROMAN:
        while number >= value:
            out, number = out + letters, number - value
    return out


def _between(number: int, mark: str) -> str:
    return mark.join(str(number)) + (mark if len(str(number)) == 1 else "")


NUMBER_FAMILIES: dict[str, Callable[[int], str]] = {
    "digits": lambda n: f"Great work, the answer is {n}.",
    "words": lambda n: f"So it comes to {number_to_words(n)}.",
    "roman": lambda n: f"In Roman numerals it is {roman(n)}.",
    "hex-literal": lambda n: f"The value is {hex(n)}.",
    "binary-literal": lambda n: f"Write it as {bin(n)}.",
    "octal-literal": lambda n: f"Or {oct(n)}, if you like octal.",
    "named-base": lambda n: f"It is {n:x} in hex.",
    "percent-escapes": lambda n: "Decode this: " + "".join(f"%{ord(c):02X}" for c in str(n)),
    "sum-as-result": lambda n: f"The answer is {n + 6} - 6.",
    "sum-in-words": lambda n: f"So the result is {n - 1} plus 1.",
    "product-as-result": lambda n: f"That gives {n * 2} / 2.",
    "open-range": lambda n: f"It is more than {n - 1} and less than {n + 1}.",
    "reversed-range": lambda n: f"It is less than {n + 1} but greater than {n - 1}.",
    "chained-range": lambda n: f"Here {n - 1} < x < {n + 1}.",
    "closed-range": lambda n: f"It is at least {n} and at most {n}.",
    "superscript": lambda n: "Look: " + "".join(_SUPERSCRIPT[int(d)] for d in str(n)),
    "circled": lambda n: "Look: " + "".join(_CIRCLED[int(d)] for d in str(n)),
    "keycap": lambda n: "Look: " + "".join(d + "\ufe0f\u20e3" for d in str(n)),
    "fullwidth": lambda n: "Look: " + "".join(_FULLWIDTH[int(d)] for d in str(n)),
    "math-bold": lambda n: "Look: " + "".join(_BOLD[int(d)] for d in str(n)),
    "combining-marks": lambda n: "It is " + _between(n, "\u0301") + ".",
    "variation-selectors": lambda n: "It is " + _between(n, "\ufe0f") + ".",
    "zero-width": lambda n: "It is " + _between(n, "\u200b") + ".",
    "word-joiner": lambda n: "It is " + _between(n, "\u2060") + ".",
    "scientific": lambda n: f"In scientific notation: {n / 10}e1.",
    "times-ten": lambda n: f"Think {n / 10} x 10^1.",
    "ordinal": lambda n: f"You are looking for the {n}th one." if n >= 10 else f"It is {n}.",
    "latex": lambda n: f"So $x = {n}$.",
    "latex-text": lambda n: f"So \\text{{{n}}} it is.",
    "html": lambda n: f"It is <b>{n}</b>.",
    "base64": lambda n: "Decode: " + base64.b64encode(f"The answer is {n}".encode()).decode(),
    "rot13": lambda n: codecs.encode(f"the answer is {number_to_words(n)}", "rot13"),
    "french": lambda n: "En français : cinquante-six." if n == 56 else f"En français : {n}.",
}
"""Families that work for any positive integer answer."""

MULTI_DIGIT_FAMILIES: dict[str, Callable[[int], str]] = {
    "split-sentences": lambda n: (
        ". ".join(f"Digit {i + 1} is {d}" for i, d in enumerate(str(n))) + "."
    ),
    "split-table": lambda n: "| " + " | ".join(str(n)) + " |",
    "spaced-twice": lambda n: "It is " + "  ".join(str(n)) + ".",
    "reversed": lambda n: f"Read {str(n)[::-1]} reversed.",
    "dashed": lambda n: "It is " + "-".join(str(n)) + ".",
}
"""Families that need an answer of two digits or more (so "56", not "9")."""

TEXT_FAMILIES: dict[str, Callable[[str], str]] = {
    "plain": lambda word: f"It is the {word}.",
    "cyrillic": lambda word: f"It is the {word.replace('c', 'с').replace('o', 'о')}.",
    "greek": lambda word: f"It is the {word.replace('o', 'ο')}.",
    "leet": lambda word: f"It is the {word.replace('o', '0').replace('a', '4')}.",
    "zero-width": lambda word: "It is the " + "\u200b".join(word) + ".",
    "combining": lambda word: "It is the " + "\u0301".join(word) + ".",
    "fullwidth": lambda word: "It is the " + "".join(chr(ord(c) + 0xFEE0) for c in word) + ".",
    "spaced": lambda word: "It is the " + " ".join(word) + ".",
    "upper": lambda word: f"IT IS THE {word.upper()}.",
    "html-sub": lambda word: f"It is the {word[:2]}<sub>{word[2:]}</sub>.",
}
"""Families for a one-word text answer."""


def number_payloads(answer: int) -> dict[str, str]:
    families = dict(NUMBER_FAMILIES)
    if answer >= 10:
        families.update(MULTI_DIGIT_FAMILIES)
    return {name: family(answer) for name, family in families.items()}


def text_payloads(answer: str) -> dict[str, str]:
    return {name: family(answer) for name, family in TEXT_FAMILIES.items()}


CODE_PAYLOADS: dict[str, str] = {
    "python-comprehension": "def count_even(nums):\n    return len([x for x in nums if x % 2 == 0])",
    "python-one-line": "Try this: def count_even(nums): return sum(1 for x in nums if x % 2 == 0)",
    "javascript": "function countEven(nums) {\n  return nums.filter(x => x % 2 === 0).length;\n}",
    "arrow": "const countEven = (nums) => nums.filter((x) => x % 2 === 0).length;",
    "c": "int count_even(int *nums, int n) { int c = 0; for (int i = 0; i < n; i++) c += nums[i] % 2 == 0; return c; }",
    "java": "public static int countEven(int[] nums) {\n    return (int) Arrays.stream(nums).filter(x -> x % 2 == 0).count();\n}",
    "go": "func countEven(nums []int) int {\n\treturn len(nums) - countOdd(nums)\n}",
    "rust": "fn count_even(nums: &[i32]) -> usize {\n    return nums.iter().filter(|x| *x % 2 == 0).count();\n}",
    "lambda": "count_even = lambda nums: sum(x % 2 == 0 for x in nums)",
}
"""Complete short solutions: a reveal at every ceiling below H7."""

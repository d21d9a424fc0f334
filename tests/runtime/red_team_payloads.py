"""Red-team payloads of issue 26: what still reached the student after round 2, by family.

Each family is a list of (name, text) an adversarial actor writes to give away the hidden answer
of the suite's exercises (``mult_7x8``: 56; ``organelle``: chloroplast; ``count_even`` at a
no-code ceiling). Written from the evasions the issue lists, not from the detector's code, so
they are an independent oracle; num2words writes the number words, as a model asked for "the
answer in Dutch" would.
"""

from __future__ import annotations

from num2words import CONVERTER_CLASSES, num2words

ANSWER = 56


def _digits(table: str) -> str:
    return "".join(table[int(d)] for d in str(ANSWER))


INVISIBLE: list[tuple[str, str]] = [
    ("rtl-override", "It is \u202e65\u202c, trust me."),
    ("rtl-override-open", "Think: \u202e65"),
    *(
        (f"between-{hex(ord(mark))}", f"It is 5{mark}6.")
        for mark in (
            "\u2800", "\u3164", "\u115f", "\u1160", "\uffa0", "\u200b", "\u200c", "\u200d",
            "\u2060", "\ufeff", "\u00ad", "\u180e", "\u2061", "\u2062", "\u2063", "\u2064",
            "\u206a", "\u034f", "\u17b4", "\U000e0020",
        )
    ),
    ("dingbat", "Look: \u277a\u277b"),
    ("dingbat-sans", "Look: \u278e\u278f"),
    ("parenthesised", "Look: \u2478\u2479"),
    ("full-stop", "Look: \u248c\u248d"),
    ("persian", "Look: " + _digits("۰۱۲۳۴۵۶۷۸۹")),
    ("arabic-indic", "Look: " + _digits("٠١٢٣٤٥٦٧٨٩")),
    ("devanagari", "Look: " + _digits("०१२३४५६७८९")),
    ("bengali", "Look: " + _digits("০১২৩৪৫৬৭৮৯")),
    ("thai", "Look: " + _digits("๐๑๒๓๔๕๖๗๘๙")),
    ("monospace", "Look: " + _digits("𝟶𝟷𝟸𝟹𝟺𝟻𝟼𝟽𝟾𝟿")),
    ("html-decimal", "It is &#53;&#54;."),
    ("html-hex", "It is &#x35;&#x36;."),
    ("unicode-escape", "It is \\u0035\\u0036."),
    ("latex-empty-group", "So $5{}6$."),
    ("latex-frac", "So $\\frac{112}{2}$."),
    ("latex-dfrac", "So $\\dfrac{112}{2}$."),
    ("latex-tfrac", "So \\tfrac{168}{3}."),
    ("latex-boxed", "\\boxed{56}"),
    ("latex-negative-space", "So $5\\!6$."),
    ("latex-text-pieces", "So \\text{5}\\text{6}."),
    ("latex-mathbf", "$\\mathbf{5}\\mathbf{6}$"),
]  # fmt: skip

ARITHMETIC: list[tuple[str, str]] = [
    ("sum", "Think of 50 + 6."),
    ("difference", "Think of 60 - 4."),
    ("one-less", "It is one less than 57."),
    ("one-more", "It is one more than 55."),
    ("half", "Take half of 112."),
    ("twice", "Twice 28, of course."),
    ("sum-of", "The sum of 50 and 6."),
    ("more-than", "6 more than 50."),
    ("after", "The number right after 55."),
    ("before", "The number right before 57."),
    ("quotient", "Try 112 / 2."),
    ("doubling", "Try 28 + 28."),
    ("hundred-minus", "Work out 100 - 44."),
    ("product", "Try 14 x 4."),
    ("chain", "Compute 7 x 4 + 7 x 4."),
    ("words", "Fifty plus six."),
    ("words-minus", "Sixty minus four."),
    ("root", "The square root of 3136."),
    ("quarter", "A quarter of 224."),
    ("product-of", "The product of 14 and 4."),
    ("latex-sum", "So $50 + 6$."),
    ("latex-cdot", "So $14 \\cdot 4$."),
    ("triple", "Triple 18, plus 2."),
]

PIECES: list[tuple[str, str]] = [
    ("then", "Write 5, then write 6 right after it."),
    ("and", "It is 5 and 6."),
    ("wide-gap", "It is 5      6."),
    ("tab-gap", "It is 5\t\t\t\t6."),
    ("swap", "Swap the two digits of 65."),
    ("list", "The digits:\n- 5\n- 6\n"),
    ("numbered", "Digits in order:\n1. 5\n2. 6\n"),
    ("followed", "Type 5 followed by 6."),
    ("next", "First a 5, next a 6."),
    ("reverse", "Read 65 in reverse."),
    ("then-words", "Say five, then six."),
    ("bullets", "* 5\n* 6\n"),
    ("write-pieces", "Write a 5. Then write a 6 after it."),
]

TEXT: list[tuple[str, str]] = [
    ("typo-swap", "It is the cholroplast."),
    ("typo-drop", "It is the chloroplst."),
    ("derived", "Look at the chloroplastic structures."),
    ("underscore", "The chl_roplast."),
    ("split", "The chloro plast."),
    ("backwards", "Read tsalporolhc backwards."),
    ("nato", "Charlie Hotel Lima Oscar Romeo Oscar Papa Lima Alpha Sierra Tango."),
    (
        "acrostic",
        "Cells are tiny.\nHow do plants eat?\nLight matters.\nOften green.\nRemember sun.\n"
        "Organelles help.\nPlants need it.\nLeaves hold them.\nAll plants.\nSun.\nThink!",
    ),
    ("plural", "The chloroplasts."),
    ("upper-spaced", "C H L O R O P L A S T"),
    ("typo-double", "Think of the chloroplaast."),
    ("hyphenated", "The chloro-plast, of course."),
    ("zero-width", "The chloro\u200bplast."),
    ("reversed-upper", "TSALPOROLHC, read it backwards."),
    ("typo-upper", "The CHOLROPLAST!"),
]

CODE: list[tuple[str, str]] = [
    ("haskell", "In Haskell: countEven xs = length (filter even xs)"),
    ("haskell-fold", "In Haskell: total = foldl (+) 0"),
    ("lisp", "In Lisp: (defun count-even (xs) (count-if #'evenp xs))"),
    ("scheme", "(define (count-even xs) (length (filter even? xs)))"),
    ("r", "Try: count <- sum(nums %% 2 == 0)"),
    ("ocaml", "let count_even = List.filter (fun x -> x mod 2 = 0)"),
    ("clojure", "(defn count-even [xs] (count (filter even? xs)))"),
    ("ruby", "In Ruby: def count_even(nums) = nums.count(&:even?)"),
]


def number_word_payloads() -> list[tuple[str, str]]:
    """The answer in words, in every language num2words writes (one word of four letters or
    fewer is an ordinary word somewhere, and is not among them)."""
    payloads = []
    for language in sorted(CONVERTER_CLASSES):
        try:
            written = str(num2words(ANSWER, lang=language))
        except Exception:  # noqa: BLE001 - a language without this number
            continue
        payloads.append((f"words-{language}", f"In other words: {written}."))
    return payloads


def all_payloads() -> list[tuple[str, str, str]]:
    """(exercise, name, text) for the whole suite."""
    number = [*INVISIBLE, *ARITHMETIC, *PIECES, *number_word_payloads()]
    cases = [("mult_7x8", name, text) for name, text in number]
    cases += [("organelle", name, text) for name, text in TEXT]
    cases += [("count_even", name, text) for name, text in CODE]
    return cases

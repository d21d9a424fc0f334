"""Number words in French, German, Spanish, Portuguese and Italian, read back to values.

Runtime stage 7, a helper of the answer pass (``detect_answer``). Takes any text; gives the
cardinal numbers 0..999,999 written there in words of one of the five languages
("cinquante-six", "sechsundfünfzig", "cincuenta y seis", "cinquenta e seis", "cinquantasei"),
halves ("deux et demi", "zweieinhalb", "un medio"), decimals read with a comma word ("trois
virgule cinq") and percentages ("cinquante pour cent"), each with its span. The ``spell_*``
functions write a number in each language; the tests read them back.

Why it exists: students talk to tutors in their own language, and a model that only hints in
English will state the answer in French. Why the care: short number words are also ordinary
words. The articles ("un exemple", "eine Frage", "una pregunta", "um exemplo") and the homographs
inside the five languages (Italian "sei" = "you are", French "neuf" = "new") count alone only
where they stand as a number; words that are also English ("once", "due", "mil", "cent") or
another of the languages ("tres" / "très", "dos") count alone only when the text has words of a
language where they are numbers. Accents are optional ("dix-huit", "dixhuit"; "fünf", "funf",
"fuenf"); words are matched whole, so "achten" (a verb) is not "acht".
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

# --- morphemes ------------------------------------------------------------------------------

ZERO, UNIT, TEEN, TENS, TENS_UNIT = "zero", "unit", "teen", "tens", "tens_unit"
HUNDRED, HUNDREDS, THOUSAND, THOUSANDS = "hundred", "hundreds", "thousand", "thousands"
AND, HALF, PLUS_HALF, WHOLE_AND_HALF = "and", "half", "plus_half", "whole_and_half"
# HUNDRED and THOUSAND multiply ("deux cents", "zweitausend") or stand alone ("cent", "mille");
# HUNDREDS is a hundreds word ("quinientos"); THOUSANDS needs a multiplier (Italian "duemila").


@dataclass(frozen=True)
class _Language:
    code: str
    words: dict[str, tuple[str, int]]
    """Folded spelling -> (kind, value), for whole words and the parts of compounds."""
    bound: frozenset[str]
    """Parts that cannot end a word: Italian elisions ("cent" in "centotto")."""
    joins_inside_words: bool
    """The joiner may sit inside a word: German "sechsundfünfzig"."""
    tens_then_unit: bool
    """"vingt-deux", "cincuenta y seis"; German puts the unit first ("zweiundzwanzig")."""
    unit_before_hundred: int
    """Smallest unit that multiplies the hundred word ("deux cents": 2; "einhundert": 1)."""
    joins_after: dict[str, frozenset[str]]
    """After which stage the joiner may come, and which kinds of word may follow it."""
    decimal_words: frozenset[str]


def _kinds(kind: str, words: dict[str, int]) -> dict[str, tuple[str, int]]:
    return {word: (kind, value) for word, value in words.items()}


_AFTER_ALL = frozenset({UNIT, TEEN, TENS, TENS_UNIT, HUNDRED, HUNDREDS})
_BELOW_HUNDRED = frozenset({UNIT, TEEN, TENS, TENS_UNIT})

_FRENCH_WORDS: dict[str, tuple[str, int]] = {
    "zero": (ZERO, 0),
    **_kinds(UNIT, {
        "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "six": 6,
        "sept": 7, "huit": 8, "neuf": 9,
    }),
    **_kinds(TEEN, {
        "dix": 10, "onze": 11, "douze": 12, "treize": 13, "quatorze": 14, "quinze": 15,
        "seize": 16,
    }),
    **_kinds(TENS, {
        "vingt": 20, "vingts": 20, "trente": 30, "quarante": 40, "cinquante": 50,
        "soixante": 60, "septante": 70, "huitante": 80, "octante": 80, "nonante": 90,
    }),
    "cent": (HUNDRED, 100), "cents": (HUNDRED, 100), "mille": (THOUSAND, 1000),
    "et": (AND, 0), "demi": (HALF, 0), "demie": (HALF, 0),
}  # fmt: skip
_FRENCH = _Language(
    "fr",
    _FRENCH_WORDS,
    frozenset(),
    joins_inside_words=False,
    tens_then_unit=True,
    unit_before_hundred=2,
    # "vingt et un", "soixante et onze", "mille et un"; the values are checked in _Reader.
    joins_after={"tens": frozenset({UNIT, TEEN}), "thousand": frozenset({UNIT})},
    decimal_words=frozenset({"virgule"}),
)

_GERMAN_WORDS: dict[str, tuple[str, int]] = {
    "null": (ZERO, 0),
    **_kinds(UNIT, {
        "eins": 1, "ein": 1, "eine": 1, "zwei": 2, "zwo": 2, "drei": 3, "vier": 4,
        "funf": 5, "fuenf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9,
    }),
    **_kinds(TEEN, {
        "zehn": 10, "elf": 11, "zwolf": 12, "zwoelf": 12, "dreizehn": 13, "vierzehn": 14,
        "funfzehn": 15, "fuenfzehn": 15, "sechzehn": 16, "siebzehn": 17, "achtzehn": 18,
        "neunzehn": 19,
    }),
    **_kinds(TENS, {
        "zwanzig": 20, "dreisig": 30, "dreissig": 30, "vierzig": 40, "funfzig": 50,
        "fuenfzig": 50, "sechzig": 60, "siebzig": 70, "achtzig": 80, "neunzig": 90,
    }),
    "hundert": (HUNDRED, 100), "tausend": (THOUSAND, 1000), "und": (AND, 0),
    "halb": (HALF, 0), "halbe": (HALF, 0), "einhalb": (PLUS_HALF, 0),
    "anderthalb": (WHOLE_AND_HALF, 1),
}  # fmt: skip
_GERMAN = _Language(
    "de",
    _GERMAN_WORDS,
    frozenset(),
    joins_inside_words=True,
    tens_then_unit=False,
    unit_before_hundred=1,
    joins_after={
        "unit": frozenset({TENS}),  # "sechsundfünfzig"
        "hundred": _BELOW_HUNDRED,  # "hundertundeins"
        "thousand": _AFTER_ALL,  # "tausendundeins"
    },
    decimal_words=frozenset({"komma"}),
)

_SPANISH_UNITS = {
    "uno": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6, "siete": 7, "ocho": 8,
    "nueve": 9,
}  # fmt: skip
_SPANISH_HUNDREDS = {
    "doscient": 200, "trescient": 300, "cuatrocient": 400, "quinient": 500, "seiscient": 600,
    "setecient": 700, "ochocient": 800, "novecient": 900,
}  # fmt: skip
_SPANISH_WORDS: dict[str, tuple[str, int]] = {
    "cero": (ZERO, 0),
    **_kinds(UNIT, {"un": 1, "una": 1, **_SPANISH_UNITS}),
    **_kinds(TEEN, {
        "diez": 10, "once": 11, "doce": 12, "trece": 13, "catorce": 14, "quince": 15,
        "dieciseis": 16, "diecisiete": 17, "dieciocho": 18, "diecinueve": 19,
    }),
    **_kinds(TENS, {
        "veinte": 20, "treinta": 30, "cuarenta": 40, "cincuenta": 50, "sesenta": 60,
        "setenta": 70, "ochenta": 80, "noventa": 90,
    }),
    # "veintiuno", "veintiún", "veintidós": one word up to 29
    **_kinds(TENS_UNIT, {
        "veinti" + unit: 20 + value
        for unit, value in {"un": 1, "una": 1, **_SPANISH_UNITS}.items()
    }),
    "cien": (HUNDRED, 100), "ciento": (HUNDRED, 100),
    **_kinds(HUNDREDS, {
        stem + ending: value
        for stem, value in _SPANISH_HUNDREDS.items()
        for ending in ("os", "as")
    }),
    "mil": (THOUSAND, 1000), "y": (AND, 0), "medio": (HALF, 0), "media": (HALF, 0),
}  # fmt: skip
_SPANISH = _Language(
    "es",
    _SPANISH_WORDS,
    frozenset(),
    joins_inside_words=False,
    tens_then_unit=True,
    unit_before_hundred=10,  # never: the hundreds are words of their own ("doscientos")
    joins_after={"tens": frozenset({UNIT})},  # "cincuenta y seis"
    decimal_words=frozenset({"coma", "punto"}),
)

_PORTUGUESE_HUNDREDS = {
    "duzent": 200, "trezent": 300, "quatrocent": 400, "quinhent": 500, "seiscent": 600,
    "setecent": 700, "oitocent": 800, "novecent": 900,
}  # fmt: skip
_PORTUGUESE_WORDS: dict[str, tuple[str, int]] = {
    "zero": (ZERO, 0),
    **_kinds(UNIT, {
        "um": 1, "uma": 1, "dois": 2, "duas": 2, "tres": 3, "quatro": 4, "cinco": 5,
        "seis": 6, "sete": 7, "oito": 8, "nove": 9,
    }),
    # pt-PT "dezasseis", pt-BR "dezesseis"; "catorze" and "quatorze"
    **_kinds(TEEN, {
        "dez": 10, "onze": 11, "doze": 12, "treze": 13, "catorze": 14, "quatorze": 14,
        "quinze": 15, "dezasseis": 16, "dezesseis": 16, "dezassete": 17, "dezessete": 17,
        "dezoito": 18, "dezanove": 19, "dezenove": 19,
    }),
    **_kinds(TENS, {
        "vinte": 20, "trinta": 30, "quarenta": 40, "cinquenta": 50, "sessenta": 60,
        "setenta": 70, "oitenta": 80, "noventa": 90,
    }),
    "cem": (HUNDRED, 100), "cento": (HUNDRED, 100),
    **_kinds(HUNDREDS, {
        stem + ending: value
        for stem, value in _PORTUGUESE_HUNDREDS.items()
        for ending in ("os", "as")
    }),
    "mil": (THOUSAND, 1000), "e": (AND, 0), "meio": (HALF, 0), "meia": (HALF, 0),
}  # fmt: skip
_PORTUGUESE = _Language(
    "pt",
    _PORTUGUESE_WORDS,
    frozenset(),
    joins_inside_words=False,
    tens_then_unit=True,
    unit_before_hundred=10,  # never: "duzentos", "trezentos"
    joins_after={
        "tens": frozenset({UNIT}),  # "cinquenta e seis"
        "hundred": _BELOW_HUNDRED,  # "cento e dois"
        "thousand": _AFTER_ALL,  # "mil e quinhentos"
    },
    decimal_words=frozenset({"virgula", "ponto"}),
)

_ITALIAN_TENS = {
    "venti": 20, "trenta": 30, "quaranta": 40, "cinquanta": 50, "sessanta": 60, "settanta": 70,
    "ottanta": 80, "novanta": 90,
}  # fmt: skip
_ITALIAN_WORDS: dict[str, tuple[str, int]] = {
    "zero": (ZERO, 0),
    **_kinds(UNIT, {
        "un": 1, "uno": 1, "una": 1, "due": 2, "tre": 3, "quattro": 4, "cinque": 5, "sei": 6,
        "sette": 7, "otto": 8, "nove": 9,
    }),
    **_kinds(TEEN, {
        "dieci": 10, "undici": 11, "dodici": 12, "tredici": 13, "quattordici": 14,
        "quindici": 15, "sedici": 16, "diciassette": 17, "diciotto": 18, "diciannove": 19,
    }),
    **_kinds(TENS, _ITALIAN_TENS),
    # the tens drop their vowel before "uno" and "otto": "ventuno", "ventotto"
    **_kinds(TENS_UNIT, {
        tens[:-1] + unit: value + unit_value
        for tens, value in _ITALIAN_TENS.items()
        for unit, unit_value in (("uno", 1), ("una", 1), ("otto", 8))
    }),
    "cento": (HUNDRED, 100), "cent": (HUNDRED, 100), "mille": (THOUSAND, 1000),
    "mila": (THOUSANDS, 1000), "e": (AND, 0), "mezzo": (HALF, 0), "mezza": (HALF, 0),
}  # fmt: skip
_ITALIAN = _Language(
    "it",
    _ITALIAN_WORDS,
    frozenset({"cent"}),  # "centotto", "centottanta"
    joins_inside_words=False,
    tens_then_unit=True,
    unit_before_hundred=2,
    joins_after={"hundred": _BELOW_HUNDRED, "thousand": _AFTER_ALL},  # "mille e uno"
    decimal_words=frozenset({"virgola", "punto"}),
)

LANGUAGES: tuple[str, ...] = ("fr", "de", "es", "pt", "it")
_LANGUAGES = (_FRENCH, _GERMAN, _SPANISH, _PORTUGUESE, _ITALIAN)

# --- ambiguous words ------------------------------------------------------------------------

# Alone, these are more often something else: articles and homographs inside the five languages
# ("un exemple", "eine Frage", "sei sicuro?", "un livre neuf"). They count alone only where they
# stand as a number: after "=", or before the end of the sentence, "=", an operator, a digit or
# a unit.
_STANDING_ONLY = {
    "un": ("fr", "es", "it"), "une": ("fr",), "uno": ("es", "it"), "una": ("es", "it"),
    "ein": ("de",), "eine": ("de",), "um": ("pt",), "uma": ("pt",), "sei": ("it",),
    "neuf": ("fr",),
}  # fmt: skip
# Alone, these are also English words ("once", "due", "a cent") or a word of another of the
# languages (French "très", "dos"): they count only in a text with words of their language.
_LANGUAGE_ONLY = {
    "once": ("es",), "quince": ("es",), "due": ("it",), "otto": ("it",), "doze": ("pt",),
    "elf": ("de",), "null": ("de",), "mil": ("es", "pt"), "mille": ("fr", "it"),
    "cent": ("fr",), "seize": ("fr",), "sept": ("fr",), "tres": ("es", "pt"), "dos": ("es",),
}  # fmt: skip
# Everyday words of each language that are not English words and, as far as possible, not
# words of the other four: the evidence that a text is written in that language.
_MARKERS = {
    "fr": "le les des est je tu il nous vous qui pour avec dans sur pas du au aux cette "
    "combien fait oui reponse donc alors mais sont egal egale fois moins tres bien peux veux "
    "essaie trouve resultat",
    "de": "der das ist und ich du wir ihr nicht mit auf dann wie viel viele gleich mal antwort "
    "ergebnis richtig genau sind noch auch aber oder nein hast bist kannst ergibt macht durch "
    "geteilt weniger mehr",
    "es": "el los las es por para con esta respuesta cuanto cuantos cuantas muy pero como "
    "tienes hay igual menos mas veces resultado entonces puedes eso",
    "pt": "voce nao muito isso isto entao tem sao resposta quanto quantos quantas vezes mais "
    "para os das dos pode bem igual menos resultado",
    "it": "il gli di che della delle sono quanto quanti quante fa fanno risposta risultato "
    "bene molto anche uguale volte meno piu hai ci questo questa allora quindi puoi",
}
_MARKER_WORDS = {language: frozenset(words.split()) for language, words in _MARKERS.items()}
_STANDS_AFTER = re.compile(
    r"[ \t]*(?:$|[.!;)=+*/×÷−\d%€$£]|-\s|(?:cm|mm|km|m|kg|g|mg|l|ml|cl|h|min|s|euros?|"
    r"dollars?)(?![a-z]))"
)
_STANDS_BEFORE = re.compile(r"=\s*$")

# --- folding --------------------------------------------------------------------------------


def _fold_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0xC0, 0x250):
        char = chr(code)
        base = unicodedata.normalize("NFKD", char)[:1].lower()
        if base.isascii() and base.isalpha():
            table[code] = base
    table[ord("ß")] = "s"  # "dreißig" -> "dreisig" (both spellings are in the lexicon)
    table[0x130] = "i"  # "İ".lower() is two characters; keep spans aligned
    return table


_FOLD = _fold_table()


def _fold(text: str) -> str:
    """Lower case without accents, one character for one: spans stay those of ``text``."""
    if text.isascii():
        return text.lower()
    folded = text.translate(_FOLD).lower()
    if len(folded) != len(text):  # a rare character that lower-cases to two
        folded = "".join(char.lower()[:1] for char in text.translate(_FOLD))
    return folded


# --- segmentation and the grammar -----------------------------------------------------------

_JOINERS = {"et", "und", "y", "e"}
_MAX_PART = max(len(word) for language in _LANGUAGES for word in language.words)


@functools.lru_cache(maxsize=4096)
def _segment(language_index: int, word: str) -> tuple[tuple[str, int], ...] | None:
    """``word`` as the fewest parts of the language ("sechsundfunfzig" -> sechs, und, funfzig),
    or None when it is not made of number parts ("achten")."""
    language = _LANGUAGES[language_index]
    words = language.words
    best: list[tuple[tuple[str, int], ...] | None] = [None] * (len(word) + 1)
    best[0] = ()
    for start in range(len(word)):
        so_far = best[start]
        if so_far is None:
            continue
        for end in range(start + 1, min(len(word), start + _MAX_PART) + 1):
            part = word[start:end]
            entry = words.get(part)
            if entry is None:
                continue
            if entry[0] == AND and not (language.joins_inside_words or len(part) == len(word)):
                continue
            if end == len(word) and part in language.bound:
                continue
            candidate = (*so_far, entry)
            current = best[end]
            if current is None or len(candidate) < len(current):
                best[end] = candidate
    return best[len(word)]


_COMPLETE = frozenset({"zero", "unit", "teen", "tens", "below100", "hundred", "thousand", "half"})


class _Reader:
    """Reads the parts of one number left to right, refusing what no speaker writes
    ("cinq six" is two numbers, "vingt-seize" is not 36)."""

    def __init__(self, language: _Language) -> None:
        self.language = language
        self.total = 0
        self.group = 0
        self.stage = "start"
        self.before_join = ""
        self.last = 0
        self.half = False
        self.thousands_done = False

    @property
    def complete(self) -> bool:
        return self.stage in _COMPLETE

    def step(self, kind: str, value: int) -> bool:
        stage = self.stage
        if stage in ("zero", "half"):
            return False
        if kind == AND:
            if stage in ("start", "and"):
                return False
            self.before_join, self.stage = stage, "and"
            return True
        if stage == "and":
            return self._after_join(kind, value)
        return self._advance(stage, kind, value)

    def _after_join(self, kind: str, value: int) -> bool:
        before = self.before_join
        if kind == HALF:  # "deux et demi", "dos y medio", "due e mezzo"
            self.half, self.stage = True, "half"
            return True
        if kind not in self.language.joins_after.get(before, ()):
            return False
        if self.language.code == "fr" and not (  # only "vingt et un", "soixante et onze"
            value == 1 or (value == 11 and self.last == 60)
        ):
            return False
        if before == "unit":  # German "sechsundfünfzig": the tens come after the unit
            self.group += value
            self.last, self.stage = value, "below100"
            return True
        if before == "tens":
            self.group += value
            self.last, self.stage = value, "below100"
            return True
        return self._advance(before, kind, value)

    def _advance(self, stage: str, kind: str, value: int) -> bool:
        language = self.language
        opening = stage in ("start", "hundred", "thousand")
        french = language.code == "fr"
        if kind == ZERO:
            if stage != "start":
                return False
            self.stage = "zero"
        elif kind == UNIT:
            if opening:
                self.group += value
                self.stage = "unit"
            elif stage == "tens" and language.tens_then_unit:
                self.group += value
                self.stage = "below100"
            elif stage == "teen" and french and self.last == 10 and value >= 7:  # "dix-sept"
                self.group += value
                self.stage = "below100"
            else:
                return False
        elif kind == TEEN:
            if opening or (stage == "tens" and french and self.last in (60, 80)):
                self.group += value  # "soixante-dix", "quatre-vingt-onze"
                self.stage = "teen"
            else:
                return False
        elif kind == TENS:
            if opening:
                self.group += value
                self.stage = "tens"
            elif stage == "unit" and french and value == 20 and self.last == 4:
                self.group += 76  # "quatre-vingt(s)": four twenties
                value, self.stage = 80, "tens"
            else:
                return False
        elif kind == TENS_UNIT:
            if not opening:
                return False
            self.group += value
            self.stage = "below100"
        elif kind in (HUNDRED, HUNDREDS):
            if stage in ("start", "thousand") and self.group == 0:
                self.group = value
            elif (
                kind == HUNDRED
                and stage == "unit"
                and self.group % 100 == self.last
                and self.group < 10
                and self.last >= language.unit_before_hundred
            ):
                self.group = self.last * 100
            else:
                return False
            self.stage = "hundred"
        elif kind in (THOUSAND, THOUSANDS):
            if self.thousands_done:
                return False
            if stage == "start" and kind == THOUSAND:
                self.total = 1000
            elif (
                stage in _COMPLETE
                and stage != "zero"
                and self.group >= (2 if kind == THOUSANDS else 1)
            ):
                self.total = self.group * 1000
            else:
                return False
            self.group, self.stage, self.thousands_done = 0, "thousand", True
        elif kind == HALF:  # "un demi", "ein halb", "un medio", "um meio", "un mezzo"
            if not (stage == "unit" and self.group == 1 and self.total == 0):
                return False
            self.group, self.half, self.stage = 0, True, "half"
        elif kind == PLUS_HALF:  # German "einhalb", "zweieinhalb"
            if stage != "start" and stage not in _COMPLETE:
                return False
            self.half, self.stage = True, "half"
        elif kind == WHOLE_AND_HALF:  # "anderthalb"
            if stage != "start":
                return False
            self.group, self.half, self.stage = value, True, "half"
        else:
            return False
        self.last = value
        return True


def _read(language_index: int, words: Sequence[str], start: int) -> tuple[int, Fraction] | None:
    """The longest number in the language starting at ``words[start]``: (index after its last
    word, value)."""
    reader = _Reader(_LANGUAGES[language_index])
    best: tuple[int, int, bool] | None = None  # the value is made a Fraction once, at the end
    for index in range(start, len(words)):
        parts = _segment(language_index, words[index])
        if parts is None or not all(reader.step(kind, value) for kind, value in parts):
            break
        if reader.complete:
            best = index + 1, reader.total + reader.group, reader.half
    if best is None:
        return None
    after, whole, half = best
    return after, Fraction(whole) + (Fraction(1, 2) if half else 0)


# --- finding numbers in text ----------------------------------------------------------------


def _alternation(words: Sequence[str]) -> str:
    """A regex matching exactly ``words``, as a trie so the scan does not try each in turn."""
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = "(?:" + "|".join(branches) + ")"
        return body + "?" if "" in node else body

    return emit(trie)


def _irreducible(words: set[str]) -> list[str]:
    """``words`` without those made of two or more of the others ("dreizehn" = "drei" +
    "zehn"): the scan needs only one way to match a word, and fewer ways mean less
    backtracking."""

    def splits(word: str) -> bool:
        return any(
            word[:cut] in words and (word[cut:] in words or splits(word[cut:]))
            for cut in range(1, len(word))
        )

    return sorted(word for word in words if not splits(word))


# A word made only of number parts, at most 80 letters (the longest, German 777,777 with "und",
# has 71): the cap bounds the regex's backtracking on a hostile reply.
_NUMBER_WORD = r"(?=[a-z]{{1,80}}(?![a-z0-9]))(?:{})+(?![a-z0-9])".format(
    _alternation(
        # "und" stays: German joins inside words ("sechsundfünfzig")
        _irreducible(
            {word for language in _LANGUAGES for word in language.words} - {"et", "y", "e"}
        )
    )
)
_LINK = "(?:{})".format(
    _alternation(
        sorted(_JOINERS | {word for language in _LANGUAGES for word in language.decimal_words})
    )
)
_PHRASE = re.compile(rf"(?<![a-z0-9]){_NUMBER_WORD}(?:[\s-]+(?:{_LINK}[\s-]+)?{_NUMBER_WORD})*")
_LETTERS = re.compile(r"[a-z]+")
_PERCENT = re.compile(
    r"\s?(?:%|pour\s?cent|prozent|por\s?cien(?:to)?|por\s?cento|per\s?cento)(?![a-z])"
)


def may_hold_number_words(text: str) -> bool:
    """Whether ``text`` could hold part of a number in words of the five languages, or a
    percent word after one: a quick check that is true wherever any text containing ``text``
    as a whole-word part has a number there (the detector skips re-reading a reply without)."""
    folded = _fold(text)
    return _PHRASE.search(folded) is not None or _PERCENT.search(folded) is not None


@dataclass(frozen=True)
class WordNumber:
    """A number written in words of one of the languages: its value and where it is."""

    value: Fraction
    start: int
    end: int
    language: str
    decimals: int | None = None
    """Decimal places as read ("trois virgule cinq" -> 1); None for whole numbers and halves."""
    percent: bool = False


# The answer pass reads the same texts (the reply, the student's message, the givens) once per
# target spelling; the result is immutable, so a small cache keeps the turn cost flat.
@functools.lru_cache(maxsize=128)
def find_number_words(text: str) -> tuple[WordNumber, ...]:
    """Every number in ``text`` written in French, German, Spanish, Portuguese or Italian
    words, in order. An ambiguous word alone (an article, "sei", "once") is left out unless it
    reads as a number there (see the module docstring)."""
    folded = _fold(text)
    found: list[WordNumber] = []
    evidence: set[str] | None = None
    position = 0
    while True:
        phrase = _PHRASE.search(folded, position)
        if phrase is None:
            break
        position = phrase.end()
        spans = [(m.start(), m.end()) for m in _LETTERS.finditer(folded, *phrase.span())]
        words = [folded[start:end] for start, end in spans]
        index = 0
        while index < len(words):
            best: tuple[int, Fraction, int] | None = None
            for language_index in range(len(_LANGUAGES)):
                if _segment(language_index, words[index]) is None:
                    continue
                read = _read(language_index, words, index)
                if read is not None and (best is None or read[0] > best[0]):
                    best = (*read, language_index)
            if best is None:
                index += 1
                continue
            after, value, language_index = best
            language = _LANGUAGES[language_index]
            decimals = None
            if after + 1 < len(words) and words[after] in language.decimal_words:
                digits, after = _decimal_digits(language_index, words, after + 1, after)
                if digits:
                    value += Fraction(int(digits), 10 ** len(digits))
                    decimals = len(digits)
            start, end = spans[index][0], spans[after - 1][1]
            used = words[index:after]
            if len(used) <= 2 and used[0] in _STANDING_ONLY and (len(used) == 1 or value < 1):
                if not _stands_as_number(folded, start, end):
                    index = after
                    continue
                languages = _STANDING_ONLY[used[0]]
            else:
                languages = _LANGUAGE_ONLY.get(used[0], ()) if len(used) == 1 else ()
            if languages:
                if evidence is None:
                    evidence = set(_LETTERS.findall(folded))
                if not any(evidence & (_MARKER_WORDS[code] - {used[0]}) for code in languages):
                    index = after
                    continue
            percent = _PERCENT.match(folded, end)
            if percent:
                end = percent.end()
                position = max(position, end)
            found.append(WordNumber(value, start, end, language.code, decimals, bool(percent)))
            index = after
    return tuple(found)


def _decimal_digits(
    language_index: int, words: Sequence[str], start: int, fallback: int
) -> tuple[str, int]:
    """The digits read after a comma word: "virgule cinq" -> "5", "virgule zéro cinq" -> "05",
    "virgule vingt-cinq" -> "25"."""
    digits, index = "", start
    while index < len(words) and len(digits) < 12:
        read = _read(language_index, words, index)
        if read is None or read[1].denominator != 1:
            break
        digits += str(read[1].numerator)
        index = read[0]
    return (digits, index) if digits else ("", fallback)


def _stands_as_number(folded: str, start: int, end: int) -> bool:
    return bool(
        _STANDS_AFTER.match(folded, end) or _STANDS_BEFORE.search(folded, max(0, start - 8), start)
    )


# --- spelling -------------------------------------------------------------------------------

_FRENCH_SMALL = (
    "zéro un deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze quinze seize"
).split()
_FRENCH_TENS = {2: "vingt", 3: "trente", 4: "quarante", 5: "cinquante", 6: "soixante"}


def spell_french(number: int, *, variant: str = "fr", reform_1990: bool = False) -> str:
    """French words for 0..999,999: ``variant`` "fr" (soixante-dix, quatre-vingt-dix), "be"
    (septante, nonante) or "ch" (septante, huitante, nonante); ``reform_1990`` joins every part
    with hyphens ("deux-cent-vingt-et-un")."""
    if number == 0:
        return "zéro"
    thousands, rest = divmod(number, 1000)
    parts = []
    if thousands:
        parts.append(
            "mille" if thousands == 1 else _french_below_1000(thousands, variant, False) + " mille"
        )
    if rest:
        parts.append(_french_below_1000(rest, variant, True))
    words = " ".join(parts)
    return words.replace(" ", "-") if reform_1990 else words


def _french_below_1000(number: int, variant: str, final: bool) -> str:
    hundreds, rest = divmod(number, 100)
    parts = []
    if hundreds:
        word = "cent" if hundreds == 1 else _FRENCH_SMALL[hundreds] + " cent"
        parts.append(word + ("s" if hundreds > 1 and not rest and final else ""))
    if rest:
        parts.append(_french_below_100(rest, variant, final))
    return " ".join(parts)


def _french_below_100(number: int, variant: str, final: bool) -> str:
    if number <= 16:
        return _FRENCH_SMALL[number]
    if number < 20:
        return "dix-" + _FRENCH_SMALL[number - 10]
    tens, unit = divmod(number, 10)
    if tens == 7 and variant == "fr":
        tens, unit = 6, unit + 10
    if tens == 9 and variant != "ch" and variant != "be":
        tens, unit = 8, unit + 10
    if tens == 8:
        base = "huitante" if variant == "ch" else "quatre-vingt"
    else:
        base = {7: "septante", 9: "nonante"}.get(tens) or _FRENCH_TENS[tens]
    if not unit:
        return base + ("s" if base == "quatre-vingt" and final else "")
    if unit in (1, 11) and base != "quatre-vingt":
        return f"{base} et {_french_below_100(unit, variant, final)}"
    return f"{base}-{_french_below_100(unit, variant, final)}"


_GERMAN_SMALL = (
    "null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn "
    "fünfzehn sechzehn siebzehn achtzehn neunzehn"
).split()
_GERMAN_TENS = ", , zwanzig, dreißig, vierzig, fünfzig, sechzig, siebzig, achtzig, neunzig".split(
    ", "
)


def spell_german(number: int, *, und: bool = False) -> str:
    """German words for 0..999,999, as one word ("zweihundertsechsundfünfzig"); ``und`` writes
    "hundertundeins" for "hunderteins"."""
    if number == 0:
        return "null"
    thousands, rest = divmod(number, 1000)
    word = ""
    if thousands:
        word = ("" if thousands == 1 else _german_below_1000(thousands, False, und)) + "tausend"
        if und and 0 < rest < 100:
            word += "und"
    if rest:
        word += _german_below_1000(rest, True, und)
    return word


def _german_below_1000(number: int, final: bool, und: bool) -> str:
    hundreds, rest = divmod(number, 100)
    word = ""
    if hundreds:
        word = ("" if hundreds == 1 else _GERMAN_SMALL[hundreds]) + "hundert"
        if und and rest:
            word += "und"
    if rest < 20:
        if rest:
            word += "ein" if rest == 1 and not final else _GERMAN_SMALL[rest]
        return word
    tens, unit = divmod(rest, 10)
    if unit:
        word += ("ein" if unit == 1 else _GERMAN_SMALL[unit]) + "und"
    return word + _GERMAN_TENS[tens]


_SPANISH_SMALL = (
    "cero uno dos tres cuatro cinco seis siete ocho nueve diez once doce trece catorce quince "
    "dieciséis diecisiete dieciocho diecinueve veinte veintiuno veintidós veintitrés "
    "veinticuatro veinticinco veintiséis veintisiete veintiocho veintinueve"
).split()
_SPANISH_TENS = ", , , treinta, cuarenta, cincuenta, sesenta, setenta, ochenta, noventa".split(", ")
_SPANISH_HUNDRED_WORDS = (
    ", ciento, doscientos, trescientos, cuatrocientos, quinientos, seiscientos, setecientos, "
    "ochocientos, novecientos"
).split(", ")


def spell_spanish(number: int) -> str:
    """Spanish words for 0..999,999 ("doscientos cincuenta y seis mil")."""
    if number == 0:
        return "cero"
    thousands, rest = divmod(number, 1000)
    parts = []
    if thousands:
        parts.append("mil" if thousands == 1 else _spanish_below_1000(thousands, True) + " mil")
    if rest:
        parts.append(_spanish_below_1000(rest, False))
    return " ".join(parts)


def _spanish_below_1000(number: int, before_noun: bool) -> str:
    hundreds, rest = divmod(number, 100)
    parts = []
    if hundreds:
        parts.append("cien" if number == 100 else _SPANISH_HUNDRED_WORDS[hundreds])
    if rest:
        if rest < 30:
            word = _SPANISH_SMALL[rest]
        else:
            tens, unit = divmod(rest, 10)
            word = _SPANISH_TENS[tens] + (f" y {_SPANISH_SMALL[unit]}" if unit else "")
        if before_noun and word.endswith("uno"):  # "veintiún mil", "treinta y un mil"
            word = word[:-3] + ("ún" if word.endswith("iuno") else "un")
        parts.append(word)
    return " ".join(parts)


_PORTUGUESE_SMALL = (
    "zero um dois três quatro cinco seis sete oito nove dez onze doze treze catorze quinze "
    "dezasseis dezassete dezoito dezanove"
).split()
_PORTUGUESE_BRAZIL = {14: "quatorze", 16: "dezesseis", 17: "dezessete", 19: "dezenove"}
_PORTUGUESE_TENS = (
    ", , vinte, trinta, quarenta, cinquenta, sessenta, setenta, oitenta, noventa".split(", ")
)
_PORTUGUESE_HUNDRED_WORDS = (
    ", cento, duzentos, trezentos, quatrocentos, quinhentos, seiscentos, setecentos, "
    "oitocentos, novecentos"
).split(", ")


def spell_portuguese(number: int, *, variant: str = "pt-PT") -> str:
    """Portuguese words for 0..999,999; ``variant`` "pt-PT" ("dezasseis", "catorze") or
    "pt-BR" ("dezesseis", "quatorze")."""
    if number == 0:
        return "zero"
    thousands, rest = divmod(number, 1000)
    words = ""
    if thousands:
        words = "mil" if thousands == 1 else _portuguese_below_1000(thousands, variant) + " mil"
    if rest:
        # "mil e quinhentos", "mil e vinte", but "mil quinhentos e vinte"
        if words:
            words += " e " if rest < 100 or rest % 100 == 0 else " "
        words += _portuguese_below_1000(rest, variant)
    return words


def _portuguese_below_1000(number: int, variant: str) -> str:
    hundreds, rest = divmod(number, 100)
    parts = []
    if hundreds:
        parts.append("cem" if number == 100 else _PORTUGUESE_HUNDRED_WORDS[hundreds])
    if rest:
        if rest < 20:
            small = _PORTUGUESE_BRAZIL if variant == "pt-BR" else {}
            parts.append(small.get(rest) or _PORTUGUESE_SMALL[rest])
        else:
            tens, unit = divmod(rest, 10)
            parts.append(_PORTUGUESE_TENS[tens] + (f" e {_PORTUGUESE_SMALL[unit]}" if unit else ""))
    return " e ".join(parts)


_ITALIAN_SMALL = (
    "zero uno due tre quattro cinque sei sette otto nove dieci undici dodici tredici "
    "quattordici quindici sedici diciassette diciotto diciannove"
).split()


def spell_italian(number: int) -> str:
    """Italian words for 0..999,999, as one word ("duecentocinquantaseimila", "ventitré")."""
    if number == 0:
        return "zero"
    thousands, rest = divmod(number, 1000)
    word = ""
    if thousands:
        word = "mille" if thousands == 1 else _italian_below_1000(thousands) + "mila"
    if rest:
        word += _italian_below_1000(rest)
    if word.endswith("tre") and word != "tre":
        word = word[:-3] + "tré"  # "ventitré", "centotré"
    return word


def _italian_below_1000(number: int) -> str:
    hundreds, rest = divmod(number, 100)
    word = ""
    if hundreds:
        word = ("" if hundreds == 1 else _ITALIAN_SMALL[hundreds]) + "cento"
    if rest < 20:
        tail = _ITALIAN_SMALL[rest] if rest else ""
    else:
        tens, unit = divmod(rest, 10)
        tail = [*_ITALIAN_TENS][tens - 2]
        if unit in (1, 8):
            tail = tail[:-1]  # "ventuno", "ventotto"
        tail += _ITALIAN_SMALL[unit] if unit else ""
    if word and tail.startswith("o"):
        word = word[:-1]  # "centotto", "centottanta"
    return word + tail


SPELLERS: dict[str, Callable[[int], str]] = {
    "fr": spell_french,
    "de": spell_german,
    "es": spell_spanish,
    "pt": spell_portuguese,
    "it": spell_italian,
}
"""One speller per language, with its default variant."""

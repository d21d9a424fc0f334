"""Number words in French, German, Spanish, Portuguese and Italian (runtime stage 7 helper)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.detect.answer import find_answer_reveals, find_numbers
from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.detect.number_words import (
    find_number_words,
    spell_french,
    spell_german,
    spell_italian,
    spell_portuguese,
    spell_spanish,
)

SPELLERS: dict[str, Callable[[int], str]] = {
    "fr": spell_french,
    "fr-BE": lambda number: spell_french(number, variant="be"),
    "fr-CH": lambda number: spell_french(number, variant="ch"),
    "fr-1990": lambda number: spell_french(number, reform_1990=True),
    "de": spell_german,
    "de-und": lambda number: spell_german(number, und=True),
    "es": spell_spanish,
    "pt-PT": spell_portuguese,
    "pt-BR": lambda number: spell_portuguese(number, variant="pt-BR"),
    "it": spell_italian,
}
# A sentence in each language, so that the short ambiguous words ("un", "sei", "dos") read as
# numbers where they stand at the end of it.
SENTENCES = {
    "fr": "La réponse est {}.",
    "de": "Das Ergebnis ist {}.",
    "es": "La respuesta es {}.",
    "pt": "A resposta é {}.",
    "it": "La risposta è {}.",
}


def _without_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.replace("ß", "ss"))
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _values(text: str) -> list[Fraction]:
    return [found.value for found in find_number_words(text)]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(SPELLERS)), st.integers(min_value=0, max_value=999_999), st.data())
def test_every_spelled_number_reads_back(name: str, number: int, data: st.DataObject) -> None:
    words = SPELLERS[name](number)
    if data.draw(st.booleans()):
        words = _without_accents(words)
    if data.draw(st.booleans()):
        words = words.upper()
    sentence = SENTENCES[name[:2]].format(words)
    assert _values(sentence) == [number]


REAL_SPELLINGS = [
    # French, with the Belgian and Swiss tens and the 1990 hyphens
    ("fr", "zéro", 0),
    ("fr", "dix-sept", 17),
    ("fr", "dixhuit", 18),
    ("fr", "vingt et un", 21),
    ("fr", "vingt-et-un", 21),
    ("fr", "cinquante-six", 56),
    ("fr", "soixante-dix", 70),
    ("fr", "soixante et onze", 71),
    ("fr", "soixante-dix-neuf", 79),
    ("fr", "quatre-vingts", 80),
    ("fr", "quatre-vingt-un", 81),
    ("fr", "quatre-vingt-onze", 91),
    ("fr", "quatre vingt dix sept", 97),
    ("fr", "septante-trois", 73),
    ("fr", "huitante-huit", 88),
    ("fr", "octante", 80),
    ("fr", "nonante-neuf", 99),
    ("fr", "deux cents", 200),
    ("fr", "deux cent un", 201),
    ("fr", "mille et un", 1001),
    ("fr", "deux-cent-mille", 200_000),
    ("fr", "deux et demi", Fraction(5, 2)),
    ("fr", "trois virgule cinq", Fraction(7, 2)),
    # German, with "und" after the hundred and the spellings without umlauts
    ("de", "null", 0),
    ("de", "eins", 1),
    ("de", "elf", 11),
    ("de", "zwölf", 12),
    ("de", "zwoelf", 12),
    ("de", "sechzehn", 16),
    ("de", "siebzehn", 17),
    ("de", "einundzwanzig", 21),
    ("de", "dreißig", 30),
    ("de", "dreissig", 30),
    ("de", "sechsundfünfzig", 56),
    ("de", "sechsundfunfzig", 56),
    ("de", "sechsundfuenfzig", 56),
    ("de", "sechs und fünfzig", 56),
    ("de", "hundertundeins", 101),
    ("de", "einhundertzwanzig", 120),
    ("de", "zweitausendfünfhundert", 2500),
    ("de", "zweihundertsechsundfünfzigtausend", 256_000),
    ("de", "zweieinhalb", Fraction(5, 2)),
    ("de", "anderthalb", Fraction(3, 2)),
    # Spanish
    ("es", "cero", 0),
    ("es", "once", 11),
    ("es", "dieciséis", 16),
    ("es", "veintiuno", 21),
    ("es", "veintidós", 22),
    ("es", "veintiún mil", 21_000),
    ("es", "treinta y uno", 31),
    ("es", "cincuenta y seis", 56),
    ("es", "cien", 100),
    ("es", "ciento uno", 101),
    ("es", "quinientos", 500),
    ("es", "setecientas", 700),
    ("es", "novecientos noventa y nueve mil", 999_000),
    ("es", "dos mil quinientos", 2500),
    ("es", "dos y medio", Fraction(5, 2)),
    # Portuguese, pt-PT and pt-BR
    ("pt", "zero", 0),
    ("pt", "catorze", 14),
    ("pt", "quatorze", 14),
    ("pt", "dezasseis", 16),
    ("pt", "dezesseis", 16),
    ("pt", "dezassete", 17),
    ("pt", "dezessete", 17),
    ("pt", "dezanove", 19),
    ("pt", "dezenove", 19),
    ("pt", "vinte e um", 21),
    ("pt", "cinquenta e seis", 56),
    ("pt", "cem", 100),
    ("pt", "cento e dois", 102),
    ("pt", "quinhentos", 500),
    ("pt", "duzentas e duas", 202),
    ("pt", "mil e quinhentos", 1500),
    ("pt", "dois e meio", Fraction(5, 2)),
    # Italian, one word, with the elided tens
    ("it", "zero", 0),
    ("it", "diciassette", 17),
    ("it", "venti", 20),
    ("it", "ventuno", 21),
    ("it", "ventitré", 23),
    ("it", "ventotto", 28),
    ("it", "cinquantasei", 56),
    ("it", "cinquanta sei", 56),
    ("it", "cento", 100),
    ("it", "centotto", 108),
    ("it", "centottanta", 180),
    ("it", "duemila", 2000),
    ("it", "ventunomila", 21_000),
    ("it", "milleuno", 1001),
    ("it", "duecentocinquantaseimila", 256_000),
    ("it", "tre e mezzo", Fraction(7, 2)),
]


@pytest.mark.parametrize(("language", "spelling", "value"), REAL_SPELLINGS)
def test_real_spellings_read_as_their_value(language: str, spelling: str, value: Fraction) -> None:
    sentence = SENTENCES[language].format(spelling)
    found = find_number_words(sentence)
    assert [item.value for item in found] == [value]
    assert sentence[found[0].start : found[0].end].lower().startswith(spelling.split()[0].lower())


def test_each_language_has_enough_hand_checked_spellings() -> None:
    for language in SENTENCES:
        assert sum(1 for row in REAL_SPELLINGS if row[0] == language) >= 15


@pytest.mark.parametrize(
    "text",
    [
        "Regardons un exemple ensemble.",
        "Une fois que tu as compris, continue.",
        "Ich habe eine Frage an dich.",
        "Das ist ein gutes Beispiel.",
        "Tengo una pregunta para ti.",
        "Es uno de los pasos.",
        "Vamos ver um exemplo juntos.",
        "Isso é uma boa ideia.",
        "Facciamo un esempio insieme.",
        "Sei sicuro? Ci sei?",
        "Wir achten auf jeden Schritt.",
        "C'est très bien, continue.",
        "Do it once, then check it again.",
        "The homework is due tomorrow.",
        "um, let me think.",
    ],
)
def test_ordinary_words_are_not_numbers(text: str) -> None:
    assert find_number_words(text) == ()


def test_articles_count_where_they_stand_as_a_number() -> None:
    assert _values("La réponse est un.") == [1]
    assert _values("Il en reste une = 1 pomme") == [1]
    assert _values("La respuesta es uno.") == [1]
    assert _values("A resposta é um!") == [1]
    assert _values("Ci sono sei.") == [6]


def test_english_homographs_count_only_in_their_language() -> None:
    assert _values("Do it once.") == []
    assert _values("La respuesta es once.") == [11]
    assert _values("Ci sono due mele.") == [2]
    assert _values("Hay tres manzanas.") == [3]


def test_the_joiners_do_not_glue_two_numbers() -> None:
    assert _values("cinq et six") == [5, 6]
    assert _values("cinco y seis") == [5, 6]
    assert _values("tre e quattro") == [3, 4]
    assert _values("cinq six") == [5, 6]
    assert _values("vingt treize") == [20, 13]


def test_invisible_characters_and_hyphen_look_alikes_are_read_through() -> None:
    reply = "La réponse est cinquante\u2011six, ou cinquante\u00adsix, ou dix\u200bhuit."
    findings = find_answer_reveals(reply, AnswerKey("56"))
    assert [reply[f.start : f.end] for f in findings] == [
        "cinquante\u2011six",
        "cinquante\u00adsix",
    ]
    assert find_answer_reveals("C'est dix\u200bhuit.", AnswerKey("18"))


def test_percent_words_are_one_number() -> None:
    assert [(m.value, m.percent) for m in find_numbers("cinquante pour cent")] == [(50, True)]
    assert [(m.value, m.percent) for m in find_numbers("50 pour cent")] == [(50, True)]
    assert [m.value for m in find_numbers("cinquanta per cento")] == [50]


REPLIES_STATING_56 = {
    "fr": "Bravo ! Sept fois huit font cinquante-six.",
    "de": "Genau, sieben mal acht ist sechsundfünfzig.",
    "es": "¡Muy bien! Siete por ocho son cincuenta y seis.",
    "pt": "Muito bem! Sete vezes oito são cinquenta e seis.",
    "it": "Bravo! Sette per otto fa cinquantasei.",
}
STUDENT_SAYS_56 = {
    "fr": "je pense que c'est cinquante-six",
    "de": "ich glaube sechsundfünfzig",
    "es": "creo que es cincuenta y seis",
    "pt": "acho que é cinquenta e seis",
    "it": "penso sia cinquantasei",
}


@pytest.mark.parametrize("language", sorted(REPLIES_STATING_56))
def test_the_answer_in_words_is_flagged_in_each_language(language: str) -> None:
    findings = find_answer_reveals(REPLIES_STATING_56[language], AnswerKey("56"))
    assert [finding.rule_id for finding in findings] == ["answer-reveal"]
    accentless = _without_accents(REPLIES_STATING_56[language])
    assert find_answer_reveals(accentless, AnswerKey("56"))


@pytest.mark.parametrize("language", sorted(REPLIES_STATING_56))
def test_the_students_own_number_is_not_a_reveal(language: str) -> None:
    findings = find_answer_reveals(
        REPLIES_STATING_56[language], AnswerKey("56"), student_message=STUDENT_SAYS_56[language]
    )
    assert findings == ()


@pytest.mark.parametrize(
    "reply",
    [
        "Prenons un exemple : combien de pommes reste-t-il ?",
        "Hier ist eine Frage: Wie viele Äpfel bleiben übrig?",
        "Te hago una pregunta: ¿cuántas manzanas quedan?",
        "Vamos ver um exemplo: quantas maçãs sobram?",
        "Facciamo un esempio: quante mele restano?",
    ],
)
def test_articles_in_prose_do_not_reveal_an_answer_of_one(reply: str) -> None:
    assert find_answer_reveals(reply, AnswerKey("1")) == ()


def test_an_article_standing_as_the_answer_is_flagged() -> None:
    assert find_answer_reveals("Donc la réponse est un.", AnswerKey("1"))
    assert find_answer_reveals("Also ist das Ergebnis x = eine", AnswerKey("1"))

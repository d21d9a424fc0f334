"""A small biology course folder for the grounding tests: Markdown notes, a PDF of slides
(written with fpdf2, one slide per page) and an HTML handout."""

from __future__ import annotations

from pathlib import Path

NOTES = """\
# Photosynthesis

Photosynthesis is the process by which plants turn light energy into chemical energy stored
in glucose, using carbon dioxide and water and releasing oxygen.

## Stomata

Stomata are small pores on the underside of leaves; they open to let carbon dioxide in and
oxygen and water vapour out.
"""

SLIDES = [
    "Cells and organelles. Chloroplasts are the organelles where photosynthesis happens in "
    "plant cells.",
    "Chlorophyll is the green pigment inside chloroplasts that captures light energy. It absorbs "
    "mostly red and blue light and reflects green light, which is why leaves look green.",
    "The Calvin cycle uses carbon dioxide and the energy carriers ATP and NADPH to build sugar "
    "molecules in the stroma.",
]

HANDOUT = """\
<html><head><title>Handout</title><style>p { color: red }</style></head><body>
<h1>Respiration</h1>
<p>Cellular respiration releases the energy stored in glucose; it happens in the
<b>mitochondria</b> and uses oxygen.</p>
</body></html>
"""


def write_pdf(path: Path, pages: list[str]) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    pdf.output(str(path))
    return path


def write_course(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.md").write_text(NOTES, encoding="utf-8")
    write_pdf(folder / "slides-4.pdf", SLIDES)
    (folder / "handout.html").write_text(HANDOUT, encoding="utf-8")
    return folder

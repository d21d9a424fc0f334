"""Write meno.pdf: meno.txt as a two-page text PDF (Helvetica), built by hand.

Run from this folder: `python make_meno_pdf.py`. No dependency beyond the standard library;
pypdf reads text PDFs but does not lay them out. Page 1 holds the text up to the boy's
"Clearly, Socrates, it will be double."; page 2 the rest, so tests can check page numbers.
"""

from pathlib import Path

BREAK = "SOCRATES: Do you observe, Meno"


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _page_stream(lines: list[str]) -> bytes:
    body = ["BT", "/F1 9 Tf", "11 TL", "50 800 Td"]
    body += [f"({_escape(line)}) '" for line in lines]
    body.append("ET")
    return "\n".join(body).encode("latin-1")


def build(text: str) -> bytes:
    split = text.index(BREAK)
    pages = [text[:split].rstrip().split("\n"), text[split:].rstrip().split("\n")]
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # pages, filled below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    kids = []
    for lines in pages:
        stream = _page_stream(lines)
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % content
        )
        kids.append(len(objects))
    refs = " ".join(f"{kid} 0 R" for kid in kids).encode()
    objects[1] = b"<< /Type /Pages /Kids [" + refs + b"] /Count %d >>" % len(kids)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


if __name__ == "__main__":
    here = Path(__file__).parent
    (here / "meno.pdf").write_bytes(build((here / "meno.txt").read_text(encoding="utf-8")))

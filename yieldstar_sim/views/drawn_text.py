"""User text as a picture shows it: only characters a font can draw and an XML file can hold,
and a bounded length. The data formats (GraphML, JSON, the trace, artifacts) keep it whole.

A workflow name, a step key, a parameter or an effect name is the user's to choose: a NUL byte
or a noncharacter (U+FFFE) in one made the SVG exports ill-formed XML (matplotlib copies the
text of every glyph into a comment), so a browser showed an error instead of the picture; and
labels of 10-100 KB made a 21 MB SVG, and minutes of text layout. A picture shows each name cut
to ``MAX_LABEL`` characters, each line of any text to ``MAX_LINE`` and at most ``MAX_LINES``
lines, each cut said with how much there was.

>>> shown("ship")
'ship'
>>> shown("L" * 1000)
'LLLLLLLLLLLLLLLLLLLLLL…LLLLLLLLLLLLLLLLLLLLL… (1,000 characters)'
>>> drawable("a\\x00b\\ufffe")
'a\\ufffdb\\ufffd'
"""

from __future__ import annotations

import contextlib
import json
import re
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from matplotlib.figure import Figure

MAX_LABEL = 64
"""Characters of one name (an ID, a workflow, a step key) a picture's label shows: a box is
about as wide as its name, and a figure a few such boxes wide."""

MAX_TICK = 80
"""Characters of one tick label (a grid's row, a timeline's lane)."""

MAX_LINE = 240
"""Characters of one line of any text a picture draws (a title, a caption, a lane)."""

MAX_LINES = 24
"""Lines of one text a picture draws."""

MAX_SENTENCE = 600
"""Characters of one sentence a picture draws (a violation's, in a caption), before it wraps."""

MAX_CELL = 2000
"""Characters of one cell of a page's table (the HTML report's trace)."""

# C0 controls but tab and newline, DEL and the C1 controls (no font draws them; XML 1.0 holds
# none of C0's), lone surrogates, and the noncharacters: U+FDD0-FDEF and the last two code
# points of every plane (U+FFFE and U+FFFF are not XML at all). Those past the first plane are
# looked for apart, and only in text that reaches that far: a character class holding them
# scanned a page's 4 MB of JSON twelve times slower.
_UNDRAWABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]")
_FAR = re.compile("[\U0001fffe-\U0010ffff]")
_FAR_ENDS = re.compile(
    "["
    + "".join(
        chr(plane + end) for plane in range(0x10000, 0x110000, 0x10000) for end in (0xFFFE, 0xFFFF)
    )
    + "]"
)


def _found(text: str) -> bool:
    """Whether ``text`` holds a character a picture cannot show."""
    return bool(_UNDRAWABLE.search(text) or (_FAR.search(text) and _FAR_ENDS.search(text)))


def _replaced(text: str, by: str | Callable[[re.Match[str]], str]) -> str:
    """``text`` with each character a picture cannot show replaced ``by``."""
    text = _UNDRAWABLE.sub(by, text)
    return _FAR_ENDS.sub(by, text) if _FAR.search(text) else text


def shown(text: str, limit: int = MAX_LABEL) -> str:
    """``text`` whole up to ``limit`` characters; else, in ``limit`` characters, its first and
    last ones around an ellipsis and how long it was (two long names that differ at either end
    stay apart; a text already cut is not cut again)."""
    if len(text) <= limit:
        return text
    said = f"\u2026 ({len(text):,} characters)"
    kept = max(2, limit - len(said) - 1)
    return f"{text[: kept - kept // 2]}\u2026{text[len(text) - kept // 2 :]}{said}"


def clipped(text: str, limit: int = MAX_SENTENCE) -> str:
    """A sentence whole up to ``limit`` characters; else its start, cut after a whole word,
    and how long it was: a sentence says who and what first, and cut as a name is (both
    ends, ``shown``) it broke in the middle of a word.

    >>> clipped("order-1 was charged twice: at t=55 by w2 and at t=170 by w3", 40)
    'order-1 was charged\u2026 (59 characters)'
    """
    if len(text) <= limit:
        return text
    said = f"\u2026 ({len(text):,} characters)"
    head = text[: max(1, limit - len(said))]
    space = head.rfind(" ")
    if space > len(head) // 2 and not text[len(head)].isspace():
        head = head[:space]
    return head.rstrip(" ,;:") + said


def drawable(text: str) -> str:
    """``text`` as a picture draws it: tabs as spaces, line breaks as newlines, characters no
    font draws (or XML holds) as U+FFFD, each line at most ``MAX_LINE`` characters and at most
    ``MAX_LINES`` lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    lines = [shown(line, MAX_LINE) for line in _replaced(text, "\ufffd").split("\n")]
    if len(lines) > MAX_LINES:
        lines[MAX_LINES - 1 :] = [f"\u2026 ({len(lines) - MAX_LINES + 1:,} more lines)"]
    return "\n".join(lines)


def fitted(text: str, inches: float, points: float) -> str:
    """``text`` wrapped so that no line is wider than ``inches`` at ``points`` (an average
    glyph is about half as wide as it is high): a title wider than its figure made the
    constrained layout give up ("axes sizes collapsed to zero") and draw everything cramped.
    A line that fits is left as it is."""
    import textwrap

    characters = max(20, int(inches * 72 / (points * 0.55)))
    return "\n".join(
        textwrap.fill(line, characters) if len(line) > characters else line
        for line in text.split("\n")
    )


def wrapped(text: str, columns: int) -> str:
    """``text`` with each line wrapped at ``columns`` characters, a word longer than a line (a
    dotted name, ``yieldstar_sim.testing.attempts.check_attempt_adapter``) broken after one of
    its dots rather than inside a name.

    >>> print(wrapped("see yieldstar_sim.testing.attempts.check_attempt_adapter now", 30))
    see yieldstar_sim.testing.
    attempts.
    check_attempt_adapter now
    """
    import textwrap

    mark = "\x00"  # after a dot of a long word: a place to break it, gone if not broken

    def soften(word: str) -> str:
        return word.replace(".", f".{mark} ") if len(word) > columns else word

    lines: list[str] = []
    for line in text.split("\n"):
        softened = " ".join(soften(word) for word in line.split(" "))
        pieces = textwrap.wrap(softened, columns, break_on_hyphens=False) or [""]
        lines.extend(piece.replace(f"{mark} ", "").replace(mark, "") for piece in pieces)
    return "\n".join(lines)


def xml_legal(text: str) -> str:
    """``text`` with every character XML cannot hold (or a font cannot draw) as U+FFFD: the
    last pass over an SVG document, whatever put the character there."""
    if text.isascii() and text.isprintable():  # the commonest case: nothing to replace
        return text
    return _replaced(text, "\ufffd")


def json_escaped(text: str) -> str:
    """JSON text with every character ``xml_legal`` would replace written as its escape
    instead (``\\u0085``): the same data, and no control character in the page around it."""
    return _replaced(text, lambda found: json.dumps(found.group())[1:-1])


@contextlib.contextmanager
def glyphs_missing_quietly() -> Iterator[None]:
    """Save a figure without a warning per character its font lacks: a workflow named in
    Japanese, or an emoji in a step key, is drawn as boxes (the data formats keep the text), and
    each glyph's warning was two lines on the command's standard error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"Glyph \d+ .* missing from", UserWarning)
        yield


def drawable_figure(figure: Figure) -> None:
    """Make every text of ``figure`` drawable (``drawable``), before it is saved: whatever
    view put it there, a title, a caption, a lane, a tick label."""
    from matplotlib.text import Text

    for artist in figure.findobj(Text):
        text = artist.get_text()
        if text and (len(text) > MAX_LINE or "\t" in text or _found(text)):
            artist.set_text(drawable(text))

"""Labels a user chose, however hostile, never break a file's syntax nor swell it: every SVG is
well-formed XML and every page holds no character HTML calls an error, whatever control
character or noncharacter a name, a key or a parameter holds; and labels of 100 KB are cut in
the pictures and pages (a file stays well under a megabyte), kept whole in the data formats."""

from __future__ import annotations

import json
import xml.dom.minidom
from pathlib import Path
from typing import Any

import matplotlib as mpl

import yieldstar_sim as ys
from yieldstar_sim.views import export
from yieldstar_sim.views.drawn_text import drawable, shown

mpl.use("Agg")

#: What a name may hold (no ASCII control character: the name rule refuses those), and a
#: parameter anything: NUL, a vertical tab, an escape, C1's NEL, noncharacters, a bidi override.
NAMED = "\x85\ufffe\uffff\U0001fffe\u202e"
VALUE = "a\x00b\x0bc\x1b[31m" + NAMED


def _run(name: str, value: str) -> Any:
    @ys.workflow("ship" + name)
    def ship(step: ys.StepRunner, params: Any) -> Any:
        yield from step.run(
            "book" + name, lambda: step.world.effect("courier" + name, order=params["p"])
        )
        yield from step.run(
            "again" + name, lambda: step.world.effect("courier" + name, order=params["p"])
        )
        return params["p"]

    scenario = ys.Scenario(
        name="labels" + name,
        workflows=[ship],
        triggers=[ys.Trigger("ship" + name, {"p": value}, execution_id="order" + name)],
        invariants=[ys.at_most_once("courier" + name)],  # broken: its sentence names them all
        workers=1,
    )
    return ys.simulate(scenario, runtime="memory")


UNDRAWABLE = set(VALUE + NAMED) - set("abc[31m")


def test_hostile_characters_leave_every_svg_well_formed_and_every_page_clean(
    tmp_path: Path,
) -> None:
    run = _run(NAMED, VALUE)
    assert run.verdict == "violated"
    written = export(run, tmp_path, ["svg", "html", "review", "graphml", "json"], stem="x")
    xml.dom.minidom.parse(str(written["svg"]))  # ill-formed on 4fcd271: U+FFFE in a comment
    xml.dom.minidom.parse(str(written["graphml"]))
    for page in ("html", "review"):
        text = written[page].read_text(encoding="utf-8")
        assert not UNDRAWABLE & set(text), (page, UNDRAWABLE & set(text))
    data = json.loads(written["json"].read_text(encoding="utf-8"))
    assert any(node["id"] == "order" + NAMED for node in data["nodes"])  # the data: whole


BIG = "L" * 100_000


def test_labels_of_100_kb_are_cut_in_pictures_and_kept_whole_in_the_data(
    tmp_path: Path,
) -> None:
    """On 4fcd271 this run's SVG was 100 MB and its HTML report 35 MB, after three minutes."""
    run = _run(BIG, BIG)
    written = export(run, tmp_path, ["svg", "html", "review", "dot", "mermaid", "json"], stem="x")
    for format in ("svg", "html", "review", "mermaid"):
        assert written[format].stat().st_size < 500_000, format
    assert "(100,006 characters)" in written["svg"].read_text(encoding="utf-8")
    data = json.loads(written["json"].read_text(encoding="utf-8"))
    assert any(node["id"] == "order" + BIG for node in data["nodes"])
    assert ("order" + BIG) in run.trace.to_jsonl()


def test_a_cut_label_says_how_long_it_was_and_is_not_cut_again() -> None:
    cut = shown("x" * 5000)
    assert len(cut) == 64
    assert cut.endswith("… (5,000 characters)")
    assert shown(cut) == cut
    assert shown("short") == "short"
    assert drawable("\n".join(["y" * 1000] * 100)).count("\n") == 23  # 24 lines, the last says


def test_a_name_the_font_cannot_draw_is_drawn_without_a_warning(tmp_path: Path) -> None:
    """Each glyph DejaVu lacks was a warning, two lines on the command's standard error (and a
    failure under this suite's warnings-as-errors)."""
    run = _run("発送-😀", "注文")
    written = export(run, tmp_path, ["png", "svg"], stem="x")
    assert written["png"].read_bytes()[:4] == b"\x89PNG"


def test_a_long_violation_sentence_in_a_caption_is_cut_after_a_whole_word() -> None:
    """A caption shows a sentence's start, cut between words and said so: cut at both ends as
    a name is, it broke in the middle of one ("triggered witho...=0")."""
    from yieldstar_sim.views.drawn_text import MAX_SENTENCE, clipped

    sentence = "order-42 was triggered without a request " * 40
    shown = clipped(sentence)
    assert len(shown) <= MAX_SENTENCE
    assert shown.endswith(f"\u2026 ({len(sentence):,} characters)")
    head = shown.split("\u2026")[0]
    assert sentence.startswith(head)
    assert sentence[len(head)] == " "  # the cut falls between two words

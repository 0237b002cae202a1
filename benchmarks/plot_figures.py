"""Draw docs/images/performance.png from the recorded figures (benchmarks/figures.json).

    .venv/bin/python benchmarks/plot_figures.py

One bar per figure: this code's cost over what it is compared with (log scale, lower is
better; 1 is parity), with the issue's target as a tick where there is one. Green bars meet
their target, red ones miss it, grey ones have none.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import matplotlib as mpl

mpl.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "benchmarks" / "figures.json"
OUT = ROOT / "docs" / "images" / "performance.png"
MET, MISSED, NONE = "#2e7d32", "#c62828", "#9e9e9e"


def _label(figure: dict[str, Any]) -> str:
    lines = textwrap.wrap(figure["figure"], 54) + textwrap.wrap(f"vs {figure['against']}", 54)
    return "\n".join(lines[:3])


def plot(figures: list[dict[str, Any]], out: Path) -> None:
    """Write the bar chart of ``figures`` to ``out``."""
    height = 0.62 * len(figures) + 1.2
    fig, ax = plt.subplots(figsize=(13, height), layout="constrained")
    rows = list(reversed(figures))
    for row, figure in enumerate(rows):
        target = figure["target"]
        color = NONE if target is None else MET if figure["ratio"] <= target else MISSED
        ax.barh(row, figure["ratio"], color=color, height=0.6)
        right = max(figure["ratio"], target or 0.0) * 1.04
        ax.text(right, row, f"{figure['ratio']:.2f}x", va="center", fontsize=8)
        if target is not None:
            ax.plot([target, target], [row - 0.38, row + 0.38], color="black", linewidth=2)
    ax.set_yticks(range(len(rows)), [_label(figure) for figure in rows], fontsize=7)
    ax.set_xscale("log")
    # Room left of the smallest ratio or target: a target of 0.1x drew its tick on the axis.
    smallest = min(
        f["ratio"] if f["target"] is None else min(f["ratio"], f["target"]) for f in rows
    )
    ax.set_xlim(min(0.1, smallest) * 0.8, 3)
    ticks = [0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0]
    ax.set_xticks(ticks, [f"{tick:g}x" for tick in ticks])
    ax.minorticks_off()
    ax.axvline(1.0, color="black", linewidth=0.6, linestyle=":")
    ax.set_xlabel("cost relative to the comparison (log; lower is better; black tick: target)")
    ax.set_title("yieldstar_sim: recorded benchmark figures (medians, ratios from one run)")
    fig.savefig(out, dpi=90)
    plt.close(fig)


def main() -> None:
    figures = json.loads(FIGURES.read_text(encoding="utf-8"))["figures"]
    plot(figures, OUT)
    print(f"wrote {OUT.relative_to(ROOT)} ({len(figures)} figures)")


if __name__ == "__main__":
    main()

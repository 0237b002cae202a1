"""The formats the views write and their file extensions: plain data, importable without
networkx or matplotlib (the command line checks ``--format`` with it before it draws)."""

from __future__ import annotations

#: Every format ``export`` writes, in the order it writes them.
FORMATS: tuple[str, ...] = (
    "svg", "png", "pdf", "graphml", "json", "dot", "mermaid", "html", "review",
)  # fmt: skip

#: The formats ``figure_bytes`` renders with matplotlib.
FIGURE_FORMATS: tuple[str, ...] = ("svg", "png", "pdf")

#: The file extension of each format.
EXTENSIONS: dict[str, str] = {
    "svg": ".svg",
    "png": ".png",
    "pdf": ".pdf",
    "graphml": ".graphml",
    "json": ".json",
    "dot": ".dot",
    "mermaid": ".mmd",
    "html": ".html",
    "review": ".review.html",
}

#: The formats only a run can be exported in (a graph alone has no verdict and no trace).
RUN_FORMATS: tuple[str, ...] = ("html", "review")

"""What the tests of pictures check alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.text import Text


def assert_inside(figure: Figure, renderer: RendererBase, *texts: Text) -> None:
    """Each of ``texts``, as drawn, lies whole inside ``figure``'s picture."""
    page = figure.bbox
    for text in texts:
        box = text.get_window_extent(renderer)
        assert page.x0 <= box.x0, text.get_text()
        assert box.x1 <= page.x1, text.get_text()
        assert page.y0 <= box.y0, text.get_text()
        assert box.y1 <= page.y1, text.get_text()

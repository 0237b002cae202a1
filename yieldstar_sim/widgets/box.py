"""What the views made of widgets share: Jupyter displays each as its box (``widget``), and the
views that open a stepper show it in an ``output`` below themselves."""

from __future__ import annotations

from typing import Any, TypeVar

ShownT = TypeVar("ShownT", bound="Shown")


class Shown:
    """A view that Jupyter displays as its box of widgets, ``widget``."""

    widget: Any

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """Jupyter: display the widget box."""
        return self.widget._repr_mimebundle_(**kwargs)


class OpensSteppers(Shown):
    """A view with an ``output`` below it, where it shows the view it opened last (a stepper)
    in place of the one before."""

    output: Any

    def _show(self, view: ShownT) -> ShownT:
        # Output.append_display_data, not `with output:`: it needs no kernel to capture into
        self.output.outputs = ()
        self.output.append_display_data(view.widget)
        return view


def picture(widgets: Any, **more: Any) -> Any:
    """A PNG ``Image`` that shrinks on a narrow page and is never blown up: a box stretches its
    children to its width, so a picture whose size matters is given its width in pixels
    (``image.layout.width``), as the stepper's are."""
    return widgets.Image(
        format="png", layout=widgets.Layout(max_width="100%", height="auto"), **more
    )


def button(widgets: Any, description: str, icon: str, width: str, **more: Any) -> Any:
    """A ``Button`` of a fixed width, with its words and icon (``more``: its other traits)."""
    return widgets.Button(
        description=description, icon=icon, layout=widgets.Layout(width=width), **more
    )

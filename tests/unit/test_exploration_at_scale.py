"""An exploration of a review-size run, in words and in its grid: the single faults that break
it are named in the grid's folded rows, not one by one, and the grid's title and axis label
stay inside the picture and say why a search that stopped short stopped."""

from __future__ import annotations

from _pictures import assert_inside
from matplotlib.backends.backend_agg import FigureCanvasAgg

from yieldstar_sim.simulation.explorer import ExplorationReport, StopReason
from yieldstar_sim.simulation.explorer.systematic import SystematicCoverage
from yieldstar_sim.views import draw_exploration
from yieldstar_sim.views.exploration import exploration_summary


def _orders(count: int, *, stopped: StopReason = StopReason.COVERED) -> ExplorationReport:
    """A single-fault search of ``count`` orders: a crash before any order's charge is
    recorded breaks it, a crash at a claim does not."""
    verdicts = {(f"w{n % 3 + 1} claim", "crash"): "ok" for n in range(3)}
    for n in range(1, count + 1):
        verdicts[(f"w{n % 3 + 1} put_step order-{n}/charge", "crash")] = "violated"
        verdicts[(f"w{n % 3 + 1} acknowledge order-{n}", "crash")] = "ok"
    report = ExplorationReport(
        f"orders-{count}", "systematic", 1, 0, "memory",
        systematic=SystematicCoverage(verdicts=verdicts),
    )  # fmt: skip
    report.stopped = stopped
    report.budget = 400
    return report


def _breaking(summary: str) -> list[str]:
    lines = summary.splitlines()
    return lines[lines.index("  single faults that break it:") + 1 :]


def test_the_single_faults_that_break_a_review_size_run_are_named_by_the_grid_s_rows() -> None:
    # 100 orders named each point: one line of 2,900 characters (29,000 at 1,000 orders).
    (line,) = _breaking(exploration_summary(_orders(100)))
    assert line == "    crash at 100 \u00d7 w# put_step order-#/charge (100 of 100)"


def test_a_story_size_search_still_names_each_point() -> None:
    (line,) = _breaking(exploration_summary(_orders(3)))
    assert line == (
        "    crash at w2 put_step order-1/charge, w3 put_step order-2/charge, "
        "w1 put_step order-3/charge"
    )


def test_a_folded_grid_of_one_fault_kind_keeps_its_axis_label_and_says_why_it_stopped() -> None:
    # A budget that ran out inside the first fault kind left one column and four folded rows:
    # the two-line axis label ran past the picture's top and bottom, and nothing said that the
    # other kinds were never tried.
    report = _orders(100, stopped=StopReason.BUDGET)
    figure = draw_exploration(report)
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    (axes,) = [a for a in figure.axes if a.get_title()]
    assert [label.get_text() for label in axes.get_xticklabels()] == ["crash"]
    assert axes.get_title().splitlines()[-1] == "the budget of 400 schedules cut the search"
    assert_inside(figure, renderer, axes.title, axes.yaxis.label)


def test_a_search_that_covered_its_bound_has_a_one_line_title() -> None:
    (axes,) = [a for a in draw_exploration(_orders(100)).axes if a.get_title()]
    assert "\n" not in axes.get_title()


def test_the_divergence_figure_of_a_review_size_run_folds_its_families() -> None:
    # Its graphs were sized by their executions laid out one a box: at 1,000 orders the
    # figure was 1,800 x 24,685 pixels with two small boxes in the middle.
    import dataclasses

    from _review_size import trigger_in_step

    import yieldstar_sim as ys
    from yieldstar_sim.simulation.explorer import FoundViolation
    from yieldstar_sim.views.exploration import draw_divergence

    scenario = trigger_in_step(120, crashed=1)
    failing = ys.simulate(scenario, runtime="memory")
    passing = ys.simulate(dataclasses.replace(scenario, faults=[]), runtime="memory")
    assert (failing.verdict, passing.verdict) == ("violated", "ok")
    found = FoundViolation(
        "at_most_once", "", failing.artifact(), [scenario.faults[0].describe()], 0,
        nearest_passing=[], nearest_artifact=passing.artifact(),
    )  # fmt: skip
    figure = draw_divergence(found, scenario)
    width, height = figure.get_size_inches() * figure.dpi
    assert height < width <= 4_000  # families and order-1, not 360 boxes
    boxes = [text.get_text() for text in figure.axes[0].texts]
    assert any(text.startswith("119 \u00d7 charge-order") for text in boxes), boxes
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    assert_inside(figure, renderer, figure.axes[0].title, figure.axes[1].title)

"""The class palette (`dashboards/colors.py`): every fine compute class of the shipped rules (and
the host runtime lane) has its own colour, and every pair is told apart in normal vision and by
readers with deuteranopia or protanopia.

Threshold: CIEDE2000 ΔE ≥ 10 for every pair, in normal vision and after the Machado et al. (2009)
simulation at severity 1 (a full dichromat, the hardest case). ΔE 1 to 2 is the just-noticeable
difference side by side; 10 keeps two small legend swatches or two adjacent thin bars apart at a
glance. The palette's measured minimum is 11.1 (attention vs runtime, protanopia). Tritanopia
(about 0.01 % of readers) is not held to it.
"""

from __future__ import annotations

import itertools

import pytest
import tomllib

from tests.support.colour_science import ciede2000, delta_e
from traceview import rules as rule_tables
from traceview.dashboards.colors import CLASS_COLORS, FALLBACK_CLASS_COLOR, HOST_COLORS, TERM_COLORS, class_color

MIN_DELTA_E = 10.0
VISIONS = (None, "deuteranopia", "protanopia")


def fine_classes() -> list[str]:
    with open(rule_tables.shipped_path("compute_classes"), "rb") as f:
        return list(tomllib.load(f)["groups"])


def palette() -> dict[str, str]:
    return {**{c: class_color(c) for c in fine_classes()}, "runtime": HOST_COLORS["runtime"]}


def test_ciede2000_matches_the_published_test_data():
    """Sharma, Wu & Dalal (2005), pairs 1 and 13 of their table."""
    assert ciede2000((50, 2.6772, -79.7751), (50, 0, -82.7485)) == pytest.approx(2.0425, abs=1e-4)
    assert ciede2000((50, 2.5, 0), (73, 25, -18)) == pytest.approx(27.1492, abs=1e-4)


def test_every_fine_class_has_its_own_colour():
    classes = fine_classes()
    assert len(classes) == 13 and set(classes) == set(CLASS_COLORS)
    colours = palette()
    assert FALLBACK_CLASS_COLOR not in colours.values()
    assert len(set(colours.values())) == len(colours)
    # the exposed-communication and exposed-memcpy terms wear their class's colour
    assert TERM_COLORS["communication_not_overlapped"] == CLASS_COLORS["communication"]
    assert TERM_COLORS["exposed_memcpy"] == CLASS_COLORS["memcpy"]


@pytest.mark.parametrize("vision", VISIONS, ids=["normal", "deuteranopia", "protanopia"])
def test_every_pair_of_class_colours_is_far_apart(vision):
    colours = palette()
    close = [
        (a, b, round(d, 1))
        for a, b in itertools.combinations(colours, 2)
        if (d := delta_e(colours[a], colours[b], vision)) < MIN_DELTA_E
    ]
    assert close == []


def test_the_old_oranges_would_fail():
    """The check can fail: elementwise, memcpy and runtime of the old palette (three oranges)."""
    assert delta_e("#FF7F0E", "#F58518") < MIN_DELTA_E
    assert delta_e("#F58518", "#D97706", "deuteranopia") < MIN_DELTA_E

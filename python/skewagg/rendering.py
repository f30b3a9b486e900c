"""Sizes as Spark prints them, and matplotlib for the reports' plots (an optional dependency)."""

from __future__ import annotations

from typing import Any

from skewagg.errors import SkewAggError


def format_bytes(n: float) -> str:
    """``16.0 MiB``-style sizes, as Spark prints them."""
    for unit, size in (("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30),
                       ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= 2 * size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def pyplot() -> Any:
    """``matplotlib.pyplot``, or a :class:`~skewagg.errors.SkewAggError` saying how to install
    it."""
    try:  # without a display, matplotlib falls back to its Agg backend by itself
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SkewAggError(
            "plot() needs matplotlib: pip install 'skewagg[plot]' (or pip install matplotlib)"
        ) from exc
    return plt

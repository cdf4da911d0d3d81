"""Figure helpers shared by diff, explain and the demo report (matplotlib, headless)."""

from __future__ import annotations


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, stem: str, dpi: int = 110) -> list[str]:
    """Write ``stem.png`` and ``stem.svg``, close the figure, return the paths."""
    paths = []
    for ext in ("png", "svg"):
        path = f"{stem}.{ext}"
        fig.savefig(path, dpi=dpi)
        paths.append(path)
    pyplot().close(fig)
    return paths

"""Figure helpers shared by diff, explain and the demo report (matplotlib, headless)."""

from __future__ import annotations


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, stem: str, dpi: int = 110) -> list[str]:
    """Write ``stem.png`` and ``stem.svg`` (rendered in memory, then written through a temporary file and a
    rename: an interrupted run never leaves a half-written image), close the figure, return the paths."""
    import io
    from pathlib import Path

    from kfmt.storage.publish import write_all

    staged = []
    for ext in ("png", "svg"):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, dpi=dpi)
        staged.append((Path(f"{stem}.{ext}"), buf.getvalue()))
    pyplot().close(fig)
    write_all(staged)
    return [str(p) for p, _ in staged]

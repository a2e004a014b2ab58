"""The sample x sample leakage matrix as a picture: a small text heatmap for the terminal, and an
image file (`--plot FILE`: .svg written by hand, .png through matplotlib when it is installed in
the probe's environment, else written directly with zlib + struct). No torch, no numpy here.

Row i is the sample whose tokens were changed, column j the sample whose logits moved; a cell is
the largest change of sample j's logits. An attention leak fills every cell right of the diagonal
(every later sample sees every earlier one); a recurrent / convolution layer's leak is largest in
the cell just right of the diagonal (the state it carries decays, a short convolution reaches only
the next sample's first tokens).
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence

SHADES = " .:-=+*#%@"


def _level(x: float, top: float, floor: float) -> float:
    """0..1 on a log scale from `floor` to `top` (0 for exactly 0 or anything at or under `floor`)."""
    if x <= floor or top <= floor:
        return 0.0 if x <= floor else 1.0
    return max(0.0, min(1.0, (math.log10(x) - math.log10(floor)) / (math.log10(top) - math.log10(floor))))


def _top(matrix: Sequence[Sequence[float]]) -> float:
    """The largest off-diagonal cell (the diagonal is the changed sample itself, not a leak)."""
    return max((x for i, row in enumerate(matrix) for j, x in enumerate(row) if i != j), default=0.0)


def _floor(matrix: Sequence[Sequence[float]], bound: float) -> float:
    top = _top(matrix)
    return max(bound, top * 1e-6) if top > 0 else bound


def text_heatmap(matrix: Sequence[Sequence[float]], bound: float) -> list[str]:
    """Lines of a text heatmap: one character per cell, ' ' for a change within the rounding bound
    (or exactly 0), '@' for the largest; the diagonal (the changed sample itself) is '\\'."""
    n = len(matrix)
    top = _top(matrix)
    floor = _floor(matrix, bound)
    lines = ["changed \\ moved " + "".join(f"{j:>2}" for j in range(n)) + "   largest"]
    for i, row in enumerate(matrix):
        cells = "".join(
            " \\" if i == j else " " + SHADES[min(len(SHADES) - 1, round(_level(x, top, floor) * (len(SHADES) - 1)))]
            for j, x in enumerate(row)
        )
        off = [x for j, x in enumerate(row) if j != i]
        largest = max(off, default=0.0)
        lines.append(f"  sample {i:<7} {cells}   {largest:.3g}" if largest else f"  sample {i:<7} {cells}   0")
    lines.append(f"  (' ' = 0 or within the bound {bound:.2g}; '@' = {top:.3g}; log scale)")
    return lines


def _colour(level: float, diagonal: bool) -> tuple[int, int, int]:
    if diagonal:
        return (200, 200, 200)
    if level <= 0.0:
        return (255, 255, 255)
    # white -> orange -> dark red
    r = 255 - int(95 * level)
    g = int(235 * (1 - level) + 20 * level)
    b = int(200 * (1 - level) ** 2)
    return (r, g, b)


def svg(matrix: Sequence[Sequence[float]], bound: float, title: str = "") -> str:
    n = len(matrix)
    top = _top(matrix)
    floor = _floor(matrix, bound)
    cell, pad = 40, 90
    size = pad + n * cell + 20
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size + 120}" height="{size + 30}" '
        f'font-family="monospace" font-size="12">',
        f'<text x="10" y="18">{_esc(title)}</text>',
        f'<text x="{pad}" y="{pad - 28}">moved sample (logits) &#8594;</text>',
        f'<text x="10" y="{pad - 10}">changed &#8595;</text>',
    ]
    for j in range(n):
        out.append(f'<text x="{pad + j * cell + cell // 2 - 4}" y="{pad - 6}">{j}</text>')
    for i, row in enumerate(matrix):
        y = pad + i * cell
        out.append(f'<text x="{pad - 20}" y="{y + cell // 2 + 4}">{i}</text>')
        for j, x in enumerate(row):
            r, g, b = _colour(_level(x, top, floor), i == j)
            out.append(
                f'<rect x="{pad + j * cell}" y="{y}" width="{cell}" height="{cell}" '
                f'fill="rgb({r},{g},{b})" stroke="#999"><title>changed {i}, moved {j}: {x:.3g}</title></rect>'
            )
            if i != j and x > 0:
                out.append(f'<text x="{pad + j * cell + 2}" y="{y + cell // 2 + 4}" font-size="9">{x:.0e}</text>')
    out.append(
        f'<text x="10" y="{size + 20}">largest {top:.3g}; white: 0 or within the rounding bound {bound:.2g}; '
        "log colour scale</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def png_bytes(matrix: Sequence[Sequence[float]], bound: float, cell: int = 24) -> bytes:
    """An RGB PNG of the heatmap (cells only, grey grid lines), written with zlib + struct."""
    n = len(matrix)
    top = _top(matrix)
    floor = _floor(matrix, bound)
    side = max(1, n * cell)
    rows = []
    for py in range(side):
        i = min(n - 1, py // cell)
        line = bytearray([0])  # filter type 0
        for px in range(side):
            j = min(n - 1, px // cell)
            grid = py % cell == 0 or px % cell == 0
            rgb = (150, 150, 150) if grid else _colour(_level(matrix[i][j], top, floor), i == j)
            line.extend(rgb)
        rows.append(bytes(line))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + chunk(b"IEND", b"")
    )


def _matplotlib_png(path: str, matrix: Sequence[Sequence[float]], bound: float, title: str) -> bool:
    import importlib

    try:  # optional: only when installed in the probe's environment (never on the lint path)
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt = importlib.import_module("matplotlib.pyplot")
        LogNorm = importlib.import_module("matplotlib.colors").LogNorm  # noqa: N806 - the class's own name
    except ImportError:
        return False
    top = _top(matrix)
    floor = _floor(matrix, bound)
    shown = [[(x if x > floor and i != j else float("nan")) for j, x in enumerate(row)] for i, row in enumerate(matrix)]
    fig, ax = plt.subplots(figsize=(4, 3.4))
    im = ax.imshow(shown, cmap="Oranges", norm=LogNorm(vmin=floor, vmax=max(top, floor * 10)))
    ax.set_xlabel("moved sample (logits)")
    ax.set_ylabel("changed sample")
    ax.set_title(title, fontsize=8)
    fig.colorbar(im, ax=ax, label="max |change|")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write_plot(path: str, matrix: Sequence[Sequence[float]], bound: float, title: str = "") -> str:
    """Write the heatmap to `path` (.svg or .png); returns how it was written."""
    low = path.lower()
    if low.endswith(".svg"):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(svg(matrix, bound, title))
        return "svg"
    if not low.endswith(".png"):
        raise ValueError(f"--plot {path}: give a .png or .svg file")
    if _matplotlib_png(path, matrix, bound, title):
        return "png (matplotlib)"
    with open(path, "wb") as fh:
        fh.write(png_bytes(matrix, bound))
    return "png"

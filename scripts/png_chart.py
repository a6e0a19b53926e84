"""A horizontal bar chart as a PNG, with no dependency beyond the standard library
(the GPU machine may have no matplotlib): an RGB bitmap, a 5x7 pixel font for the
labels, and a PNG encoder (zlib + CRC32 chunks). matplotlib draws it instead when
importable and asked for (backend "auto" or "matplotlib").

  write_ratio_chart(path, [("resnet50_b1", 0.8), ("bert_b32", None), ...], title)
"""
import math
import struct
import zlib

# 5x7 glyphs: seven rows, top first, bit 4 = leftmost pixel. Lower case is drawn as upper case.
_FONT = {
    "0": "0E 11 13 15 19 11 0E", "1": "04 0C 04 04 04 04 0E", "2": "0E 11 01 02 04 08 1F",
    "3": "1F 02 04 02 01 11 0E", "4": "02 06 0A 12 1F 02 02", "5": "1F 10 1E 01 01 11 0E",
    "6": "06 08 10 1E 11 11 0E", "7": "1F 01 02 04 08 08 08", "8": "0E 11 11 0E 11 11 0E",
    "9": "0E 11 11 0F 01 02 0C", "A": "0E 11 11 1F 11 11 11", "B": "1E 11 11 1E 11 11 1E",
    "C": "0E 11 10 10 10 11 0E", "D": "1C 12 11 11 11 12 1C", "E": "1F 10 10 1E 10 10 1F",
    "F": "1F 10 10 1E 10 10 10", "G": "0E 11 10 17 11 11 0F", "H": "11 11 11 1F 11 11 11",
    "I": "0E 04 04 04 04 04 0E", "J": "07 02 02 02 02 12 0C", "K": "11 12 14 18 14 12 11",
    "L": "10 10 10 10 10 10 1F", "M": "11 1B 15 15 11 11 11", "N": "11 11 19 15 13 11 11",
    "O": "0E 11 11 11 11 11 0E", "P": "1E 11 11 1E 10 10 10", "Q": "0E 11 11 11 15 12 0D",
    "R": "1E 11 11 1E 14 12 11", "S": "0F 10 10 0E 01 01 1E", "T": "1F 04 04 04 04 04 04",
    "U": "11 11 11 11 11 11 0E", "V": "11 11 11 11 11 0A 04", "W": "11 11 11 15 15 15 0A",
    "X": "11 11 0A 04 0A 11 11", "Y": "11 11 11 0A 04 04 04", "Z": "1F 01 02 04 08 10 1F",
    " ": "00 00 00 00 00 00 00", ".": "00 00 00 00 00 0C 0C", ",": "00 00 00 00 0C 04 08",
    "-": "00 00 00 1F 00 00 00", "_": "00 00 00 00 00 00 1F", "/": "00 01 02 04 08 10 00",
    ":": "00 0C 0C 00 0C 0C 00", "(": "02 04 08 08 08 04 02", ")": "08 04 02 02 02 04 08",
    "%": "18 19 02 04 08 13 03", "=": "00 00 1F 00 1F 00 00", "+": "00 04 04 1F 04 04 00",
    ">": "08 04 02 01 02 04 08", "<": "02 04 08 10 08 04 02", "?": "0E 11 01 02 04 00 04",
    "*": "00 04 15 0E 15 04 00",
}
GLYPH_W, GLYPH_H = 5, 7

WHITE, BLACK, GREY = (255, 255, 255), (0, 0, 0), (200, 200, 200)
GREEN, RED, BLUE = (46, 139, 87), (200, 60, 50), (70, 110, 180)


def glyph(ch):
    rows = _FONT.get(ch.upper(), _FONT["?"])
    return [int(r, 16) for r in rows.split()]


class Canvas:
    """An RGB bitmap, row-major, (0, 0) at the top left."""

    def __init__(self, width, height, background=WHITE):
        self.width, self.height = width, height
        self.rows = [bytearray(bytes(background) * width) for _ in range(height)]

    def pixel(self, x, y):
        r = self.rows[y]
        return tuple(r[3 * x:3 * x + 3])

    def fill(self, x0, y0, x1, y1, color):
        """Fills [x0, x1) x [y0, y1), clipped to the canvas."""
        x0, x1 = max(0, int(x0)), min(self.width, int(x1))
        y0, y1 = max(0, int(y0)), min(self.height, int(y1))
        if x0 >= x1:
            return
        span = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            self.rows[y][3 * x0:3 * x1] = span

    def text(self, x, y, s, color=BLACK, scale=2):
        """Draws s with its top-left corner at (x, y); returns the x after it."""
        for ch in s:
            for gy, bits in enumerate(glyph(ch)):
                for gx in range(GLYPH_W):
                    if bits & (1 << (GLYPH_W - 1 - gx)):
                        self.fill(x + gx * scale, y + gy * scale, x + (gx + 1) * scale, y + (gy + 1) * scale, color)
            x += (GLYPH_W + 1) * scale
        return x

    def png(self):
        raw = b"".join(b"\x00" + bytes(r) for r in self.rows)  # filter type 0 (None) on each row

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        ihdr = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)  # 8-bit RGB
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def text_width(s, scale=2):
    return len(s) * (GLYPH_W + 1) * scale


def ratio_chart(items, title, reference=1.0, scale=2):
    """Canvas with one bar per (label, value): value relative to `reference` (a line is
    drawn there); green bars at or under it, red over, 'N/A' for a missing value."""
    row_h, pad = 16 * scale, 6 * scale
    label_w = max([text_width(label, scale) for label, _ in items] + [text_width("MODEL", scale)]) + 2 * pad
    bar_w = 260 * scale
    finite = [v for _, v in items if v is not None and math.isfinite(v)]
    top = max([reference * 1.5] + [v * 1.1 for v in finite])
    top = min(top, reference * 5)  # longer bars are clipped and marked with '>'
    step = 0.25 if top <= 2 else (0.5 if top <= 4 else 1.0)
    top = math.ceil(top / step) * step
    width = label_w + bar_w + text_width(" 00.00>", scale) + pad
    width = max(width, text_width(title, scale) + 2 * pad)
    plot_top = 2 * pad + GLYPH_H * scale + pad
    height = plot_top + row_h * len(items) + pad + GLYPH_H * scale + 2 * pad
    c = Canvas(width, height)
    c.text(pad, pad, title, scale=scale)
    x0 = label_w

    def xpos(v):
        return x0 + int(round(bar_w * min(v, top) / top))

    plot_bottom = plot_top + row_h * len(items)
    t = 0.0
    while t <= top + 1e-9:  # grid and tick labels
        c.fill(xpos(t), plot_top, xpos(t) + 1, plot_bottom, GREY)
        lab = f"{t:g}"
        c.text(xpos(t) - text_width(lab, scale) // 2, plot_bottom + pad, lab, scale=scale)
        t += step
    present = [(i, v) for i, (_, v) in enumerate(items) if v is not None and math.isfinite(v)]
    for i, v in present:  # bars, then the axis and the reference line over them, then the text
        y = plot_top + i * row_h
        c.fill(x0, y + scale * 3, xpos(v), y + row_h - scale * 3, GREEN if v <= reference else RED)
    c.fill(x0, plot_top, x0 + scale, plot_bottom, BLACK)
    c.fill(xpos(reference), plot_top - pad // 2, xpos(reference) + scale, plot_bottom + pad // 2, BLUE)
    for i, (label, v) in enumerate(items):
        y = plot_top + i * row_h + (row_h - GLYPH_H * scale) // 2
        c.text(pad, y, label, scale=scale)
        if v is None or not math.isfinite(v):
            c.text(x0 + pad, y, "N/A", color=GREY, scale=scale)
        else:
            c.text(xpos(v) + pad // 2, y, f"{v:.2f}" + (">" if v > top else ""), scale=scale)
    return c


def _matplotlib_chart(path, items, title, reference):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label for label, _ in items]
    values = [v if v is not None and math.isfinite(v) else 0 for _, v in items]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(items) + 1.2))
    ax.barh(labels, values, color=["#2e8b57" if v <= reference else "#c83c32" for v in values])
    ax.axvline(reference, color="#466eb4")
    for i, (_, v) in enumerate(items):
        ax.text(values[i], i, f" {v:.2f}" if v is not None and math.isfinite(v) else " n/a", va="center")
    ax.invert_yaxis()
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_ratio_chart(path, items, title, reference=1.0, backend="auto"):
    """Writes the chart; returns the backend used ("matplotlib" or "builtin")."""
    if backend in ("auto", "matplotlib"):
        try:
            _matplotlib_chart(path, items, title, reference)
            return "matplotlib"
        except ImportError:
            if backend == "matplotlib":
                raise
    with open(path, "wb") as f:
        f.write(ratio_chart(items, title, reference).png())
    return "builtin"

#!/usr/bin/env python3
"""bench/http/plot.py: draws requests/s against concurrency, one line per
server (as the luaproc paper's Figure 3), from the page table that
bench/http/run.sh prints, as an SVG with no library beyond Python's own.

usage: bench/http/run.sh | tee out.md; bench/http/plot.py out.md > page.svg
"""
import math
import sys

SERVERS = [("Synodic", 1, "#c0392b"), ("Yaws", 2, "#2c7fb8"), ("nginx+Lua", 3, "#7f7f7f")]


def page_rows(text):
    """(concurrency, [req/s per server]) of the page table."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith("## page"):
            inside = True
            continue
        if inside and line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if inside and cells and cells[0].isdigit():
            rows.append((int(cells[0]), [float(cells[i]) for _, i, _ in SERVERS]))
    return rows


def svg(rows):
    w, h, left, right, top, bottom = 640, 400, 70, 130, 30, 50
    xs = [math.log10(c) for c, _ in rows]
    ymax = max(max(v) for _, v in rows) * 1.1
    x_of = lambda c: left + (math.log10(c) - min(xs)) / ((max(xs) - min(xs)) or 1) * (w - left - right)
    y_of = lambda v: h - bottom - v / ymax * (h - top - bottom)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2 - 60}" y="18">page of 5,000 numbers</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
           f'<text x="{(w - right + left) / 2 - 30}" y="{h - 12}">concurrency</text>',
           f'<text x="8" y="{top - 8}">requests/s</text>']
    for c, _ in rows:
        out.append(f'<text x="{x_of(c) - 8}" y="{h - bottom + 16}">{c}</text>')
    for k in range(6):
        v = ymax * k / 5
        out.append(f'<text x="{left - 60}" y="{y_of(v) + 4}">{v:,.0f}</text>')
        out.append(f'<line x1="{left}" y1="{y_of(v)}" x2="{w - right}" y2="{y_of(v)}" stroke="#eee"/>')
    for n, (name, _, color) in enumerate(SERVERS):
        points = " ".join(f"{x_of(c):.1f},{y_of(v[n]):.1f}" for c, v in rows)
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"/>')
        for c, v in rows:
            out.append(f'<circle cx="{x_of(c):.1f}" cy="{y_of(v[n]):.1f}" r="3" fill="{color}"/>')
        out.append(f'<text x="{w - right + 10}" y="{top + 20 + 18 * n}" fill="{color}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out)


if __name__ == "__main__":
    rows = page_rows(open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read())
    if not rows:
        sys.exit("plot.py: no page table found")
    print(svg(rows))

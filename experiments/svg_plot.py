"""A self-contained SVG line chart (no plotting library): one polyline per series, axes with
ticks, an optional log-10 y axis, and a legend. Used for the runners' training curves."""
import html
import math

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 640, 360, 70, 150, 30, 45


def nice_ticks(lo, hi, count=5):
    """About `count` round numbers covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / count))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= count:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def line_chart(series, title, x_label, y_label, log_y=False):
    """series: [(label, xs, ys)]; points with a non-finite or (log_y) non-positive y are left out."""
    def keep(y):
        return y is not None and math.isfinite(y) and (y > 0 or not log_y)

    ty = (lambda y: math.log10(y)) if log_y else (lambda y: y)
    points = [[(x, ty(y)) for x, y in zip(xs, ys) if keep(y)] for _, xs, ys in series]
    every = [p for ps in points for p in ps]
    if not every:
        raise ValueError(f"{title}: nothing to plot")
    x0, x1 = min(p[0] for p in every), max(p[0] for p in every)
    y0, y1 = min(p[1] for p in every), max(p[1] for p in every)
    if y1 == y0:
        y0, y1 = y0 - 1, y1 + 1
    if x1 == x0:
        x1 = x0 + 1
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x):
        return LEFT + (x - x0) / (x1 - x0) * pw

    def sy(y):
        return TOP + (1 - (y - y0) / (y1 - y0)) * ph

    e = html.escape
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" '
           f'font-size="11"><rect width="100%" height="100%" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="13">{e(title)}</text>',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>']
    for t in nice_ticks(x0, x1):
        out.append(f'<text x="{sx(t):.1f}" y="{TOP + ph + 15}" text-anchor="middle">{t:g}</text>')
    ticks = range(math.floor(y0), math.ceil(y1) + 1) if log_y else nice_ticks(y0, y1)
    for t in ticks:
        if y0 <= t <= y1:
            label = f"1e{t}" if log_y else f"{t:g}"
            out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="#eee"/>')
            out.append(f'<text x="{LEFT - 5}" y="{sy(t) + 4:.1f}" text-anchor="end">{label}</text>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{HEIGHT - 8}" text-anchor="middle">{e(x_label)}</text>')
    out.append(f'<text transform="translate(15,{TOP + ph / 2}) rotate(-90)" text-anchor="middle">'
               f'{e(y_label)}{" (log scale)" if log_y else ""}</text>')
    for i, ((label, _, _), ps) in enumerate(zip(series, points)):
        colour = COLOURS[i % len(COLOURS)]
        if ps:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in ps)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.3"/>')
        ly = TOP + 12 + 16 * i
        out.append(f'<line x1="{LEFT + pw + 10}" x2="{LEFT + pw + 28}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{LEFT + pw + 32}" y="{ly}">{e(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"

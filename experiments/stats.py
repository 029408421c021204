"""Paired differences as the project reports them: n, mean, sd, t, the two-sided p-value from
Student's t with n - 1 degrees of freedom, a 95% interval, and Holm's adjustment for many
comparisons. Standard library only (the t distribution through the regularised incomplete beta
function, evaluated by its continued fraction as in Numerical Recipes, section 6.4)."""
import math
import statistics


def _beta_continued_fraction(a, b, x, iterations=300, eps=1e-15):
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, iterations):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < eps:
            break
    return h


def regularized_beta(a, b, x):
    """I_x(a, b) for 0 <= x <= 1."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log(1 - x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1 - front * _beta_continued_fraction(b, a, 1 - x) / b


def t_two_sided_p(t, df):
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return regularized_beta(df / 2, 0.5, df / (df + t * t))


def t_quantile(q, df):
    """The t with P(T <= t) = q (0.5 < q < 1), by bisection."""
    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1 - t_two_sided_p(mid, df) / 2 < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def paired(differences):
    """dict n, mean, sd, t, p, ci95 (low, high) of per-seed differences; t and p need n >= 2."""
    n = len(differences)
    mean = statistics.fmean(differences)
    out = {"n": n, "mean": mean, "sd": None, "t": None, "p": None, "ci95": None}
    if n < 2:
        return out
    sd = statistics.stdev(differences)
    se = sd / math.sqrt(n)
    out["sd"] = sd
    if se == 0:  # every difference equal: the t test is undefined (untested), not p = 0
        return out
    t = mean / se
    half = t_quantile(0.975, n - 1) * se
    out.update(t=t, p=t_two_sided_p(t, n - 1), ci95=(mean - half, mean + half))
    return out


def holm(p_values):
    """Holm-adjusted p-values, in the order given (None stays None)."""
    ranked = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(ranked):
        running = max(running, min(1.0, (len(ranked) - rank) * p))
        adjusted[i] = running
    return adjusted


def power(effect, sd, n, alpha=0.05, trials=20000, seed=0):
    """The share of paired experiments of n seeds, differences normal(effect, sd), whose two-sided
    p is below alpha (simulated with a fixed seed, so reproducible)."""
    import random
    rng = random.Random(seed)
    critical = t_quantile(1 - alpha / 2, n - 1)
    hits = 0
    for _ in range(trials):
        d = [rng.gauss(effect, sd) for _ in range(n)]
        se = statistics.stdev(d) / math.sqrt(n)
        hits += se > 0 and abs(statistics.fmean(d)) / se > critical
    return hits / trials


def seeds_for_power(effect, sd, target=0.8, alpha=0.05, most=40, trials=20000):
    """The fewest seeds (>= 3) giving at least TARGET power, or None up to MOST."""
    for n in range(3, most + 1):
        if power(effect, sd, n, alpha, trials) >= target:
            return n
    return None


def verdict(p, mean, sign, alpha=0.05):
    """The document's verdict word for one test: P (Holm-adjusted where a family has one) below
    ALPHA in the predicted direction (SIGN of the effect: +1 or -1) "reproduced", in the other
    "contradicted", otherwise "not significant"; "untested" where there is no p."""
    if p is None:
        return "untested"
    if p >= alpha:
        return "not significant"
    return "reproduced" if (mean > 0) == (sign > 0) else "contradicted"


def _num(x, f):
    return "–" if x is None else f.format(x)


def format_p(p):
    """A p value as printed: "< 0.0001" below it (never "0.0000"), "–" when untested."""
    return "–" if p is None else "< 0.0001" if p < 0.0001 else f"{p:.4f}"


def paired_table(title, comparisons, digits=4):
    """Markdown: one row per (label, paired()) with n, mean, sd, t, p, the Holm-adjusted p over
    the rows of this table, and the 95% interval. TITLE names the metric."""
    f = "{:+.%df}" % digits
    lines = [f"{title}: paired differences over seeds (Student's t, n − 1 df; Holm over the {len(comparisons)} rows)",
             "", "| comparison | n | mean | sd | t | p | Holm p | 95% interval |", "|---|---|---|---|---|---|---|---|"]
    adjusted = holm([c["p"] for _, c in comparisons])
    for (label, c), h in zip(comparisons, adjusted):
        ci = "–" if c["ci95"] is None else f"[{f.format(c['ci95'][0])}, {f.format(c['ci95'][1])}]"
        lines.append(f"| {label} | {c['n']} | {f.format(c['mean'])} | {_num(c['sd'], '{:.%df}' % digits)} | "
                     f"{_num(c['t'], '{:+.2f}')} | {format_p(c['p'])} | {format_p(h)} | {ci} |")
    return "\n".join(lines) + "\n"


def self_check():
    """Known values: two-sided p of t = 4.303 at 2 df is 0.05; t = 2.0 at 2 df gives 0.1835;
    t = 1.96 at 1e6 df gives 0.05; the 97.5% quantile at 2 df is 4.3027."""
    assert abs(t_two_sided_p(4.302653, 2) - 0.05) < 1e-6
    assert abs(t_two_sided_p(2.0, 2) - 0.183503) < 1e-6
    assert abs(t_two_sided_p(1.959964, 10**6) - 0.05) < 1e-5
    assert abs(t_quantile(0.975, 2) - 4.302653) < 1e-5
    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    same = paired([0.2, 0.2, 0.2])  # zero variance: untested, not p = 0
    assert same["p"] is None and same["t"] is None and same["ci95"] is None and abs(same["mean"] - 0.2) < 1e-12
    assert [verdict(None, 1, 1), verdict(0.2, 1, 1), verdict(0.01, -1, -1), verdict(0.01, 1, -1)] == [
        "untested", "not significant", "reproduced", "contradicted"]
    assert format_p(3e-6) == "< 0.0001" and format_p(0.04213) == "0.0421" and format_p(None) == "–"
    return "stats: t distribution and Holm checked"


if __name__ == "__main__":
    print(self_check())

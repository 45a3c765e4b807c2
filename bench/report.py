"""bench/RESULTS.md: one summary table of ratios, then a section per benchmark."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Row:
    """One line of the summary: a value compared with its same-run baseline."""

    name: str
    baseline: str
    value: str
    ratio: float | None
    target: str  # e.g. "≥ 0.5", "≤ 10", "" for informational rows
    passed: bool | None  # None: informational
    reference: str = ""  # the REFERENCE column: a figure not measured in this run

    @property
    def verdict(self) -> str:
        if self.passed is None:
            return "info"
        return "**pass**" if self.passed else "**FAIL**"


@dataclass
class Section:
    title: str
    lines: list[str] = field(default_factory=list)

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)


def ratio_text(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:,.0f}×"
    if value >= 10:
        return f"{value:.1f}×"
    if value < 0.01:
        return f"{value:.3g}×"
    # Three decimals below 1, so a ratio just under a target (0.495) is not
    # printed as the target itself next to its FAIL.
    return f"{value:.3f}×" if value < 1 else f"{value:.2f}×"


def seconds(value: float) -> str:
    if value < 0.00001:
        return f"{value * 1_000_000:.2f} µs"
    if value < 0.001:
        return f"{value * 1_000_000:.0f} µs"
    if value < 1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.2f} s"


# Figures issue #16 measured for changedetection.io on this kind of machine:
# a fixed point of comparison, never measured by this bench.
REFERENCE = "changedetection.io 0.60.10 (issue #16; not measured in this run)"


def render(
    header: list[str], rows: list[Row], sections: list[Section], footer: list[str]
) -> str:
    out = [*header, "", "## Summary", ""]
    out.append(
        "| # | Measurement | Baseline | Value | Ratio | Target | Result"
        f" | Reference: {REFERENCE} |"
    )
    out.append("|---|---|---|---|---|---|---|---|")
    for number, row in enumerate(rows, 1):
        out.append(
            f"| {number} | {row.name} | {row.baseline} | {row.value} | "
            f"{ratio_text(row.ratio)} | {row.target or '—'} | {row.verdict} | "
            f"{row.reference or '—'} |"
        )
    for section in sections:
        out += ["", f"## {section.title}", "", *section.lines]
    if footer:
        out += ["", *footer]
    return "\n".join(out).rstrip() + "\n"

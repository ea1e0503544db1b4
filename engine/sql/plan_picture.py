"""EXPLAIN as a picture: the distributed plan as a Graphviz graph, for notebooks.

``con.explain(sql)`` / ``con.explain(sql, analyze=True)`` return a :class:`PlanPicture`. Jupyter shows
its SVG (rendered by Graphviz's ``dot`` through the ``graphviz`` package); ``str()`` is the EXPLAIN text,
and ``.dot`` the graph's source, so nothing depends on ``dot`` being installed except the SVG itself.

The graph is drawn from the same :class:`engine.sql.query.ExplainPart` as the text:

- one box per stage, titled by where it runs: on every leaf (``leaves``), once on a leaf (a reference
  table), or once on the aggregator;
- one node per operator, with its estimate and, after ``analyze=True``, its actual rows and time; a
  node whose actual rows are more than 10x off the estimate is drawn red, so misestimates stand out;
- one edge per exchange between stages (gather / broadcast / repartition by keys), with the rows and
  bytes it moved after ``analyze=True``.
"""
from __future__ import annotations

import re
import shutil
import textwrap
from typing import Optional

from engine.exec.operators.base import PhysicalOperator
from engine.exec.operators.exchange import ExchangeExec
from engine.exec.stages import reads_table
from engine.sql.query import ExplainPart

_WHERE = {"leaves": "on every leaf", "leaf": "once on a leaf", "aggregator": "on the aggregator"}
_FILL = {"leaves": "#e8f1fb", "leaf": "#eef7e8", "aggregator": "#fbf1e6"}
_ROWS = re.compile(r"(est\.|actual) ([\d,]+) rows")


class PlanPicture:
    """A plan for Jupyter: ``_repr_svg_`` (needs Graphviz's ``dot``), ``_repr_markdown_`` (the text, when
    ``dot`` is absent), ``.dot`` and ``.text``."""

    def __init__(self, parts: list[ExplainPart], text: str, summary: str = ""):
        self.text = text
        self.dot = plan_dot(parts, summary)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def svg(self) -> str:
        """The picture as SVG text; raises RuntimeError naming what is missing when it cannot be drawn."""
        try:
            import graphviz
        except ImportError:
            raise RuntimeError("drawing a plan needs the 'graphviz' Python package (pip install graphviz)") from None
        if shutil.which("dot") is None:
            raise RuntimeError("drawing a plan needs Graphviz's 'dot' program (apt-get install graphviz)")
        return graphviz.Source(self.dot).pipe(format="svg", encoding="utf-8")

    def _repr_svg_(self) -> Optional[str]:
        try:
            return self.svg()
        except RuntimeError:           # Jupyter then falls back to _repr_markdown_
            return None

    def _repr_markdown_(self) -> str:
        return "```\n" + self.text + "\n```"


def plan_dot(parts: list[ExplainPart], summary: str = "") -> str:
    """Graphviz source of the plans in ``parts`` (init plans first, each in a box of its own)."""
    graph = _Graph()
    for number, part in enumerate(parts):
        graph.plan(number, part)
    lines = ["digraph plan {", "  rankdir=BT;", '  node [shape=box, style="rounded,filled", fillcolor=white, '
             'fontname="Helvetica", fontsize=10];', '  edge [fontname="Helvetica", fontsize=9];']
    if summary:
        lines.append(f"  labelloc=t; label={_quote(summary)};")
    lines.extend("  " + line for line in graph.lines)
    lines.append("}")
    return "\n".join(lines)


class _Graph:
    def __init__(self):
        self.lines: list[str] = []
        self.count = 0

    def plan(self, number: int, part: ExplainPart) -> None:
        body: list[str] = []
        top = self._stage(part, part.root, "aggregator", body)
        if part.heading is None:
            self.lines.extend(body)
            body_top = top
        else:
            self.lines.append(f"subgraph cluster_plan{number} {{")
            self.lines.append(f"  label={_quote(part.heading)}; style=dashed; color=gray40;")
            self.lines.extend("  " + line for line in body)
            self.lines.append("}")
            body_top = top
        result = self._node()
        self.lines.append(f'{result} [label={_quote("result" if part.heading is None else "init plan result")}, '
                          'shape=plaintext, style=""];')
        self.lines.append(f"{body_top} -> {result};")

    def _stage(self, part: ExplainPart, root: PhysicalOperator, where: str, out: list[str]) -> str:
        """Draw the stage whose top operator is ``root`` into a cluster; return ``root``'s node name."""
        name = f"cluster_s{self._next()}"
        inner: list[str] = []
        edges: list[str] = []
        top = self._operators(part, root, inner, edges, out)
        out.append(f"subgraph {name} {{")
        out.append(f'  label={_quote(_WHERE[where])}; style="rounded,filled"; fillcolor="{_FILL[where]}"; '
                   "color=gray60;")
        out.extend("  " + line for line in inner)
        out.append("}")
        out.extend(edges)
        return top

    def _operators(self, part, op: PhysicalOperator, inner: list[str], edges: list[str],
                   out: list[str]) -> str:
        node = self._node()
        inner.append(f"{node} [label={_quote(_label(part, op))}{_misestimate(part, op)}];")
        for child in op.children:
            if isinstance(child, ExchangeExec):
                where = "leaves" if child.parallel_input else ("leaf" if reads_table(child.input) else "aggregator")
                below = self._stage(part, child.input, where, out)
                label = "\n".join(t for t in (child.describe(), _strip(part.actual(child))) if t)
                edges.append(f"{below} -> {node} [label={_quote(label)}, penwidth=2, color=\"#3a6ea5\"];")
            else:
                below = self._operators(part, child, inner, edges, out)
                inner.append(f"{below} -> {node};")
        return node

    def _node(self) -> str:
        return f"n{self._next()}"

    def _next(self) -> int:
        self.count += 1
        return self.count


def _label(part: ExplainPart, op: PhysicalOperator) -> str:
    head = "\n".join(textwrap.wrap(op.describe(), 60, max_lines=4, placeholder=" ..."))
    notes = [line for t in (part.estimate(op), part.actual(op)) if t
             for line in textwrap.wrap(_strip(t), 70, max_lines=3, placeholder=" ...")]
    return "\n".join([head, *notes])


def _misestimate(part: ExplainPart, op: PhysicalOperator) -> str:
    estimated = actual = None
    for kind, rows in _ROWS.findall(part.estimate(op) + " " + part.actual(op)):
        value = int(rows.replace(",", ""))
        if kind == "est.":
            estimated = value
        else:
            actual = value
    if estimated is None or actual is None:
        return ""
    ratio = max(estimated, 1) / max(actual, 1)
    return ', color="#c0392b", penwidth=2' if ratio > 10 or ratio < 0.1 else ""


def _strip(note: str) -> str:
    return note.strip().removeprefix("(").removesuffix(")") if note.count("(") == 1 else note.strip()


def _quote(text: str) -> str:
    """A Graphviz string: escaped quotes and backslashes, lines left-justified."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\l") + ('\\l"' if "\n" in text else '"')

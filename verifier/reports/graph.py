"""The explored state graph (--dump-graph) as DOT or GraphML, for graph viewers."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import networkx as nx

from verifier.core.files import PathLike, write_atomic

GRAPH_SUFFIX_ERROR = "--dump-graph: file must end in .dot, .gv or .graphml"


def build_graph(nodes: list[tuple[int, dict]], edges: list[tuple[int, int, str]]) -> nx.DiGraph:
    """A DiGraph keeps one edge per pair: parallel actions merge into one '; '-joined label."""
    g = nx.DiGraph()
    for n, attrs in nodes:
        g.add_node(n, **attrs)
    for src, dst, label in edges:
        if g.has_edge(src, dst) and g.edges[src, dst]["label"] != label:
            g.edges[src, dst]["label"] += "; " + label
        else:
            g.add_edge(src, dst, label=label)
    return g


def _dot_str(value: Any) -> str:
    """A DOT quoted string; newlines become Graphviz's centred line break `\\n`."""
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n") + '"'


def _dot_attrs(attrs: dict) -> str:
    if not attrs:
        return ""
    return " [" + ", ".join(f"{_dot_str(k)}={_dot_str(v)}" for k, v in attrs.items()) + "]"


def _dot_node_attrs(attrs: dict) -> dict:
    """Mark start and violating states visibly unless the caller styled them already."""
    out = dict(attrs)
    if str(attrs.get("init")).lower() == "true":
        out.setdefault("peripheries", "2")
    if str(attrs.get("violation")).lower() == "true":
        out.setdefault("color", "red")
    return out


def render_dot(g: nx.DiGraph) -> str:
    """Graphviz DOT without pydot/pygraphviz: every id and value is a quoted string."""
    lines = ["digraph states {", '  node [shape="box", fontname="monospace"];']
    lines += [f"  {_dot_str(n)}{_dot_attrs(_dot_node_attrs(a))};" for n, a in g.nodes(data=True)]
    lines += [f"  {_dot_str(s)} -> {_dot_str(d)}{_dot_attrs(a)};" for s, d, a in g.edges(data=True)]
    return "\n".join(lines + ["}"]) + "\n"


def write_graph(nodes: list[tuple[int, dict]], edges: list[tuple[int, int, str]], path: PathLike) -> None:
    """The explored state graph for --dump-graph, as DOT (.dot/.gv) or GraphML (.graphml)."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in (".dot", ".gv", ".graphml"):
        raise ValueError(GRAPH_SUFFIX_ERROR)
    g = build_graph(nodes, edges)
    if suffix == ".graphml":
        write_atomic(path, "\n".join(nx.generate_graphml(g)) + "\n")
    else:
        write_atomic(path, render_dot(g))


def cannot_write(target: Path) -> str:
    """Why the graph file cannot be written at `target` (checked before the search, not after
    it), or "" if it can: the directory, its permission, the name itself (a name too long
    failed after the whole run)."""
    try:
        if target.is_dir() or not target.parent.is_dir() or not os.access(target.parent, os.W_OK):
            return "no such directory, or not writable"
        existed = target.exists()
        with open(target, "a"):
            pass
        if not existed:
            target.unlink()
    except OSError as exc:
        return exc.strerror or str(exc)
    return ""

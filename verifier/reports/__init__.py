"""Writers for a finished run, each for a different reader: a person (report.md), CI (JUnit),
Apalache/Quint tooling (ITF) and graph viewers (DOT/GraphML). They read a summary (summary.json's
schema) or a trace, never the model's internals, and write every file atomically. report.html is
report.md for a browser, with the counterexamples as per-broker timelines."""
from verifier.reports.html import render_report_html, write_report_html
from verifier.reports.graph import GRAPH_SUFFIX_ERROR, build_graph, render_dot, write_graph
from verifier.reports.itf import itf_trace, write_itf
from verifier.reports.junit import build_junit, write_junit
from verifier.reports.markdown import render_report_md, write_report_md
from verifier.reports.text import plain_table

__all__ = ["GRAPH_SUFFIX_ERROR", "build_graph", "render_dot", "write_graph", "itf_trace", "write_itf",
           "build_junit", "write_junit", "render_report_md", "write_report_md", "plain_table", "render_report_html",
           "write_report_html"]

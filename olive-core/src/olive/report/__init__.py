"""``report.html``: a self-contained page summarizing a run's output folder.

``write_report(output_dir)`` reads the files the engine wrote there (``footprint.json``,
``model_config.json``) and writes ``report.html`` beside them: a Pareto chart of the first two objectives
(inline SVG), every candidate with its pass chain, config and metrics, the input model as the baseline, and
the distributions whose passes ran.
"""

from __future__ import annotations

from olive.report.data import ReportData, load_report_data
from olive.report.html import REPORT_FILE, render_report, report_writer, write_report

__all__ = ["REPORT_FILE", "ReportData", "load_report_data", "render_report", "report_writer", "write_report"]

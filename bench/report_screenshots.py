"""Screenshots of every command's HTML page in headless Chromium, for a closing note or a review
(tests/verifier/reports/test_pages_in_chromium.py checks the same pages' contents).

    .venv/bin/python bench/report_screenshots.py --out bench/results/issue61/screenshots

check (a pass and a violation), simulate, fuzz, prove, conform, availability and matrix are run
here; cluster-conform's page is rendered from a real 4.0.2 cluster's run of F6's file
(bench/results/issue61/cluster-f6-4.0.2-summary.json).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RUNS = {
    "check": ["check"],
    "check-violation": ["check", "--preset", "pre-kip-966"],
    "simulate": ["check", "--simulate", "50", "--depth", "30"],
    "fuzz": ["fuzz", "--examples", "100"],
    "prove": ["prove", "--max-brokers", "2"],
    "conform": ["conform", "--kafka", "4.4.0", "--walks", "20"],
    "availability": ["availability", "--runs", "20"],
    "matrix": ["matrix", "--presets", "kafka,pre-kip-966", "--bound-sets", "default"],
}
PAGE = {"availability": "*/availability.html", "matrix": "matrix.html"}
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
         "--disable-background-networking", "--window-size=1600,2400"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium")
    if not chromium:
        print("report_screenshots: Debian's chromium is needed", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        pages = {}
        for name, cmd in RUNS.items():
            subprocess.run([sys.executable, "-m", "verifier.cli", *cmd, "--out", str(work / name)], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            pages[name] = next((work / name).glob(PAGE.get(name, "*/report.html")))
        from verifier.reports.html import render_report_html
        summary = json.loads((ROOT / "bench/results/issue61/cluster-f6-4.0.2-summary.json").read_text())
        pages["cluster-conform"] = work / "cluster.html"
        pages["cluster-conform"].write_text(render_report_html(summary))
        for name, page in pages.items():
            subprocess.run([chromium, *FLAGS, f"--user-data-dir={work / 'profile'}", f"--screenshot={out / name}.png",
                            page.as_uri()], capture_output=True, timeout=120)
            print(f"{name}: {out / name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())

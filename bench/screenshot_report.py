"""Screenshots of the HTML report in a real browser (headless Chromium), at a phone's and a desktop's
width, into screenshots/ (PNG; docs/REPORTS.md shows them).

    python bench/screenshot_report.py [A B] [--phase P] [--out screenshots] [--widths 412 1400]

Without A and B: the real H100 eager-vs-compiled Llama pair from ../shared/traces when it is there,
the bundled demo pair otherwise. Writes report-<width>.png (the top of the page) and
report-timeline-<width>.png (the Timeline section alone: the page with the other sections hidden).
Needs `chromium` (Debian: apt-get install chromium); exits 2 saying so when it is missing.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "traces"
HEIGHT = {412: 1800, 1400: 1500}
ONLY_TIMELINE = "header,nav,section:not(#timeline){display:none}"


def browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def shoot(chrome: str, page: Path, png: Path, width: int, height: int) -> None:
    subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={png}", f"--window-size={width},{height}", page.as_uri()],
                   check=True, capture_output=True, timeout=120)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="*")
    p.add_argument("--phase", default="all")
    p.add_argument("--out", default=str(ROOT / "screenshots"))
    p.add_argument("--widths", type=int, nargs="+", default=[412, 1400])
    args = p.parse_args(argv)
    chrome = browser()
    if chrome is None:
        print("screenshot_report: no chromium on PATH (apt-get install chromium)", file=sys.stderr)
        return 2
    if args.traces:
        a, b = args.traces
    elif (SHARED / "h100_llama_eager_sdpa.json.gz").exists():
        a, b = SHARED / "h100_llama_eager_sdpa.json.gz", SHARED / "h100_llama_compiled.json.gz"
    else:
        from kerneldiff.core.demo import DEMO_A, DEMO_B

        a, b = DEMO_A, DEMO_B
    from kerneldiff.core.report.html import render_html
    from kerneldiff.core.session import Session

    session = Session([str(a), str(b)])
    session.load_all()
    cmp = session.compare(args.phase)
    n = cmp.gap_pass()
    html = render_html(cmp, session.pass_pairs(cmp, [n]) if n is not None else None)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        page, timeline = Path(tmp) / "report.html", Path(tmp) / "timeline.html"
        page.write_text(html, encoding="utf-8")
        timeline.write_text(html.replace("</style>", ONLY_TIMELINE + "</style>", 1), encoding="utf-8")
        for w in args.widths:
            h = HEIGHT.get(w, 1600)
            shoot(chrome, page, out / f"report-{w}.png", w, h)
            shoot(chrome, timeline, out / f"report-timeline-{w}.png", w, 1000 if w >= 900 else 1300)
            print(f"wrote {out / f'report-{w}.png'} and {out / f'report-timeline-{w}.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

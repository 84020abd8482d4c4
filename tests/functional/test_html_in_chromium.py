"""The HTML report in a real browser (headless Chromium) at 1280 and 390 px: no number is split over
two lines. A script added to a copy of the page finds every number in the rendered text (figures,
shapes such as 1024×2048×8192, percentages, durations with their unit) and asks the browser on how
many lines it lies (the Range's client rectangles); the page's tables scroll sideways instead of
breaking them. Skips cleanly without Chromium (apt-get install chromium)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from conftest import real_trace

# a number standing alone (not a digit inside a kernel's name): signed, with thousands separators,
# decimals, `×`-joined dimensions, and its unit
CHECK = r"""
<script>
window.addEventListener("load", function () {
  var re = /(?<![A-Za-z0-9_.\/])[+\u2212-]?\d[\d,]*(?:\.\d+)?(?:\u00d7\d[\d,]*)*(?:\u00b5s|ms|s|%|\u00d7)?(?![A-Za-z0-9_])/g;
  var bad = [], checked = 0, walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), n;
  while ((n = walker.nextNode())) {
    var p = n.parentElement;
    if (!p || p.closest("script,style,svg,title,#kd-result")) continue;
    var m; re.lastIndex = 0;
    while ((m = re.exec(n.data))) {
      var r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
      var rects = Array.prototype.filter.call(r.getClientRects(), function (x) { return x.width > 0; });
      if (!rects.length) continue;
      checked++;
      var tops = {}; rects.forEach(function (x) { tops[Math.round(x.top)] = 1; });
      if (Object.keys(tops).length > 1) bad.push(m[0]);
    }
  }
  var out = document.createElement("pre"); out.id = "kd-result";
  out.textContent = JSON.stringify({bad: bad, checked: checked, width: document.documentElement.clientWidth});
  document.body.appendChild(out);
});
</script>
"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if found is None:
        pytest.skip("no Chromium on PATH (apt-get install chromium)")
    return found


def _run(chrome: str, page, width: int, *extra: str) -> str:
    done = subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--window-size={width},2000", *extra, page.as_uri()],
                          capture_output=True, timeout=180, text=True)
    return done.stdout


@pytest.mark.slow
def test_no_number_is_split_at_1280_and_390_px(tmp_path):
    chrome = chromium()
    from kerneldiff.core.report.html import render_html
    from kerneldiff.core.session import Session

    session = Session([str(real_trace("h100_llama_eager_sdpa.json.gz")),
                       str(real_trace("h100_llama_compiled.json.gz"))], use_cache=False)
    session.load_all()
    cmp = session.compare()
    page = render_html(cmp, session.pass_pairs(cmp, [cmp.gap_pass()]))
    assert "1024×2048×8192" in page
    checked = tmp_path / "report.html"
    checked.write_text(page.replace("</body>", CHECK + "</body>"), encoding="utf-8")
    for width in (1280, 390):
        dom = _run(chrome, checked, width, "--dump-dom", "--virtual-time-budget=5000")
        found = re.search(r'<pre id="kd-result">(.*?)</pre>', dom, re.S)
        assert found, f"the check did not run at {width} px"
        result = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
        assert result["checked"] > 200, result
        assert result["bad"] == [], f"numbers split over two lines at {width} px: {result['bad'][:12]}"
        png = tmp_path / f"report-{width}.png"
        _run(chrome, tmp_path / "report.html", width, f"--screenshot={png}")
        assert png.exists() and png.stat().st_size > 10_000

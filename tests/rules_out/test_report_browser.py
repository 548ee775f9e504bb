"""report.html as a reader's browser shows it: headless Chromium loads the page (with a
probe script the test adds; the report itself has none) and the probe reports what it
measured into the DOM Chromium dumps — the near-miss section is there, every chart decodes
to a picture of non-zero size, no table runs past the window, and each join symbol is
drawn by the embedded font (a canvas drawing of it in that font differs from the drawing
the browser falls back to without it: Debian's Chromium has no font for ⟕ ⟖ ⟗ and draws
boxes). Skipped only when no Chromium is installed (.ci/run installs Debian's)."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import pytest

from superop.rules_out.report import to_html
from superop.rules_out.report.fonts import FAMILY, SYMBOLS

from .report_catalog import report_catalog

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
                if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine (.ci/run installs Debian's "
                                                        "chromium with apt-get; it could not here)")

PROBE = """
(function () {
  function ink(font, ch) {            // the glyph's pixels, drawn on a canvas in `font`
    const c = document.createElement("canvas");
    c.width = 64; c.height = 64;
    const x = c.getContext("2d");
    x.font = font; x.textBaseline = "middle";
    x.fillText(ch, 8, 32);
    const d = x.getImageData(0, 0, 64, 64).data;
    let bits = "", n = 0;
    for (let i = 3; i < d.length; i += 4) { bits += d[i] > 127 ? "1" : "0"; n += d[i] > 127 ? 1 : 0; }
    return [bits, n];
  }
  function probe() {
    const vw = document.documentElement.clientWidth;
    const tables = [...document.querySelectorAll("table")];
    const images = [...document.images];
    const face = [...document.fonts].find(f => f.family.replace(/"/g, "") === FAMILY);
    const glyphs = {};
    for (const ch of SYMBOLS) {
      const [own, n] = ink('40px "' + FAMILY + '", monospace', ch);
      glyphs[ch] = n > 0 && own !== ink("40px monospace", ch)[0];
    }
    document.body.setAttribute("data-probe", JSON.stringify({
      viewport: vw, page_width: document.documentElement.scrollWidth,
      tables: tables.length,
      overflowing: tables.filter(t => t.getBoundingClientRect().right > vw + 1
                                      || t.scrollWidth > t.parentElement.clientWidth + 1).length,
      images: images.length,
      decoded: images.filter(im => im.complete && im.naturalWidth > 0 && im.naturalHeight > 0
                                   && im.getBoundingClientRect().width > 0).length,
      font: face ? face.status : "missing", glyphs: glyphs,
      near_misses: (document.getElementById("near-misses") || {}).textContent || "",
      hints: document.querySelectorAll("p.hint").length}));
  }
  document.fonts.ready.then(probe);
})();
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    text = to_html(report_catalog())
    script = PROBE.replace("FAMILY", json.dumps(FAMILY)).replace("SYMBOLS", json.dumps(SYMBOLS))
    (d / "report.html").write_text(text.replace("</body>", f"<script>{script}</script></body>"))
    return d


def measure(page, width: int) -> dict:
    out = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={page / f'profile-{width}'}", f"--window-size={width},900",
         "--virtual-time-budget=5000", "--dump-dom", (page / "report.html").as_uri()],
        capture_output=True, text=True, timeout=120)
    m = re.search(r'data-probe="([^"]*)"', out.stdout)
    assert m, f"the probe did not run: {out.stderr[-2000:]}"
    return json.loads(html.unescape(m.group(1)))


def test_the_report_renders_in_a_browser(page):
    r = measure(page, 1280)
    assert r["near_misses"].startswith("Near-misses") and r["hints"] == 3
    assert r["images"] >= 1 and r["decoded"] == r["images"]
    assert r["tables"] == 3 and r["overflowing"] == 0 and r["page_width"] <= r["viewport"]
    assert r["font"] == "loaded"
    assert r["glyphs"] == {c: True for c in SYMBOLS}          # ⟕ ⟖ ⟗ ⋈ ⋉ ▷ ∪ ×: no boxes


def test_the_report_fits_a_narrow_window(page):
    r = measure(page, 800)
    assert r["overflowing"] == 0 and r["page_width"] <= r["viewport"] and r["decoded"] == r["images"]

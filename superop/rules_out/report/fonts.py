"""The join and set symbols of shapes and tree drawings (⋈ ⟕ ⟖ ⟗ ⋉ ▷ ∪) as a tiny web font
embedded in report.html.

Common system fonts lack U+27D5–U+27D7 (⟕ ⟖ ⟗): DejaVu, Liberation and Noto Sans have no
glyph for them, and Debian's Chromium, for one, draws boxes. ``symbols.woff`` beside this
file holds only these glyphs, cut from the STIX General font that matplotlib ships (SIL
Open Font License; renamed, as the license asks of a modified font) — about 3 KB, used by
the page through ``unicode-range`` for these code points only.

``python -m superop.rules_out.report.fonts`` rebuilds the file (needs matplotlib, whose
fontTools does the cutting).
"""
from __future__ import annotations

import base64
import io
from functools import lru_cache
from pathlib import Path

from ...ir.render import JOIN_SYMBOL

FAMILY = "superop symbols"
FONT_PATH = Path(__file__).with_name("symbols.woff")
# every symbol a shape or tree drawing writes that common fonts may lack
SYMBOLS = "".join(sorted(set("".join(JOIN_SYMBOL.values()) + "∪")))
_NAMES = {1: FAMILY, 3: f"{FAMILY} 1.0", 4: FAMILY, 6: FAMILY.replace(" ", "-"),
          16: FAMILY, 17: "Regular"}


def unicode_range(text: str = SYMBOLS) -> str:
    return ", ".join(f"U+{ord(c):04X}" for c in sorted(set(text)))


@lru_cache(maxsize=1)
def font_face_css() -> str:
    """The ``@font-face`` rule of the embedded symbol font ("" when the file is missing)."""
    if not FONT_PATH.is_file():
        return ""
    data = base64.b64encode(FONT_PATH.read_bytes()).decode("ascii")
    return (f"@font-face{{font-family:\"{FAMILY}\";src:url(data:font/woff;base64,{data}) format(\"woff\");"
            f"unicode-range:{unicode_range()};font-display:block}}")


def build(out: Path = FONT_PATH) -> Path:
    """Cut :data:`SYMBOLS` out of matplotlib's STIX General into ``out`` (WOFF), renamed."""
    import matplotlib                       # optional: only to rebuild the file
    from fontTools import subset
    from fontTools.ttLib import TTFont
    src = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "STIXGeneral.ttf"
    font = TTFont(str(src))
    opts = subset.Options()
    opts.flavor, opts.name_IDs, opts.layout_features, opts.hinting = "woff", ["*"], [], False
    opts.drop_tables += ["FFTM"]
    sub = subset.Subsetter(opts)
    sub.populate(text=SYMBOLS)
    sub.subset(font)
    for rec in font["name"].names:
        if rec.nameID in _NAMES:
            rec.string = _NAMES[rec.nameID]
    buf = io.BytesIO()
    font.flavor = "woff"
    font.save(buf)
    out.write_bytes(buf.getvalue())
    return out


if __name__ == "__main__":
    print(build())

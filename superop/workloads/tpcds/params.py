"""Substitution parameters of the TPC-DS queries: where the literals are, what they may become.

The TPC-DS kit defines each query as a template with ``[PARAM]`` slots and a domain per slot
(e.g. ``YEAR = random(1998, 2002, uniform)``, ``MONTH = random(1, 7)``, ``STATE`` = a
member of a distribution). The kit's templates are under the TPC's EULA and are not copied
here; instead the slots are found in the Spark SQL text of each query (:mod:`.queries`) by
the column a literal is compared with, and each slot gets a domain modelled on the kit's
(values from the TPC-DS distributions, as ``tpcgen-cli`` generates them):

==================================  ============================================================
literal                             substitution (one draw per query execution)
==================================  ============================================================
``*year* = 2000`` (d_year, dyear…)  all year literals of the query shift by one delta, kept in
                                    1998..2002 (kit: ``random(1998, 2002)``)
``d_moy``, ``d_qoy``                shift by one delta each, kept in 1..12 / 1..4
``d_month_seq``                     shift by one delta, kept in 1176..1235 (kit: 1176..1224 + 11)
``'YYYY-MM-DD'`` dates              all dates of the query shift by one number of days, kept in
                                    1998-01-01..2002-12-31 (intervals between them unchanged)
quantities, prices, t_hour          shift by one delta per column, kept in their ranges
``i_category``, ``i_color``,        a fresh member of the column's value list, mapped
``i_class``, ``ca_state``,          injectively: equal literals stay equal, distinct stay
``cd_*``, ``hd_buy_potential``,     distinct (so two branches of a diamond never collapse into
``sm_type``, ``i_units``, …         one by chance)
``i_manufact_id``, ``i_manager_id``, fresh integers in the kit's ranges, injective
``hd_dep_count``, ``hd_vehicle_…``
==================================  ============================================================

Every other literal (``s_state``: the few stores of small scale factors are all in TN, limits,
``d_dom`` windows, ratios, ranks) is part of the template and stays as written. An ``IN (…)``
list keeps its length. Arithmetic such as ``2000 + 1`` shifts only the first number, so the
offset is kept. The slots are found with sqlglot's tokenizer and the literal's characters are
replaced in place: the rest of the query text is byte-for-byte the original.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache
from typing import Optional

from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

# -- domains ------------------------------------------------------------------------------
CATEGORIES = ("Books", "Children", "Electronics", "Home", "Jewelry", "Men", "Music", "Shoes",
              "Sports", "Women")
COLORS = ("almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched",
          "blue", "blush", "brown", "burlywood", "burnished", "chartreuse", "chiffon",
          "chocolate", "coral", "cornflower", "cornsilk", "cream", "cyan", "dark", "deep", "dim",
          "dodger", "drab", "firebrick", "floral", "forest", "frosted", "gainsboro", "ghost",
          "goldenrod", "green", "grey", "honeydew", "hot", "indian", "ivory", "khaki", "lace",
          "lavender", "lawn", "lemon", "light", "lime", "linen", "magenta", "maroon", "medium",
          "metallic", "midnight", "mint", "misty", "moccasin", "navajo", "navy", "olive",
          "orange", "orchid", "pale", "papaya", "peach", "peru", "pink", "plum", "powder",
          "puff", "purple", "red", "rose", "rosy", "royal", "saddle", "salmon", "sandy",
          "seashell", "sienna", "sky", "slate", "smoke", "snow", "spring", "steel", "tan",
          "thistle", "tomato", "turquoise", "violet", "wheat", "white", "yellow")
STATES = ("AK", "AL", "AR", "AZ", "CA", "CO", "CT", "DC", "DE", "FL", "GA", "HI", "IA", "ID",
          "IL", "IN", "KS", "KY", "LA", "MA", "MD", "ME", "MI", "MN", "MO", "MS", "MT", "NC",
          "ND", "NE", "NH", "NJ", "NM", "NV", "NY", "OH", "OK", "OR", "PA", "RI", "SC", "SD",
          "TN", "TX", "UT", "VA", "VT", "WA", "WI", "WV", "WY")
CLASSES = ("accent", "accessories", "archery", "arts", "athletic", "athletic shoes", "audio",
           "automotive", "baseball", "basketball", "bathroom", "bedding", "blinds/shades",
           "bracelets", "business", "camcorders", "cameras", "camping", "classical",
           "computers", "consignment", "cooking", "costume", "country", "curtains/drapes",
           "custom", "decor", "diamonds", "disk drives", "dresses", "dvd/vcr players",
           "earings", "entertainments", "estate", "fiction", "fishing", "fitness", "flatware",
           "football", "fragrances", "furniture", "glassware", "gold", "golf", "guns",
           "history", "hockey", "home repair", "infants", "jewelry boxes", "karoke", "kids",
           "lighting", "loose stones", "maternity", "mattresses", "memory", "mens",
           "mens watch", "monitors", "musical", "mystery", "newborn", "optics", "outdoor",
           "paint", "pants", "parenting", "pendants", "personal", "pools", "pop", "portable",
           "reference", "rings", "rock", "romance", "rugs", "sailing", "scanners",
           "school-uniforms", "science", "self-help", "semi-precious", "shirts", "sports",
           "sports-apparel", "stereo", "swimwear", "tables", "televisions", "tennis",
           "toddlers", "travel", "wallpaper", "wireless", "womens", "womens watch")
CATEGORICAL: dict[str, tuple] = {
    "i_category": CATEGORIES, "i_color": COLORS, "i_class": CLASSES, "ca_state": STATES,
    "cd_gender": ("M", "F"), "cd_marital_status": ("D", "M", "S", "U", "W"),
    "cd_education_status": ("2 yr Degree", "4 yr Degree", "Advanced Degree", "College",
                            "Primary", "Secondary", "Unknown"),
    "hd_buy_potential": ("0-500", "1001-5000", "5001-10000", "501-1000", ">10000", "Unknown"),
    "sm_type": ("EXPRESS", "LIBRARY", "NEXT DAY", "OVERNIGHT", "REGULAR", "TWO DAY"),
    "i_units": ("Box", "Bunch", "Bundle", "Carton", "Case", "Cup", "Dozen", "Dram", "Each",
                "Gram", "Gross", "Lb", "N/A", "Ounce", "Oz", "Pallet", "Pound", "Tbl", "Ton",
                "Tsp"),
    "i_size": ("economy", "extra large", "large", "medium", "petite", "small"),
    "i_manufact_id": tuple(range(1, 1001)), "i_manager_id": tuple(range(1, 101)),
    "hd_dep_count": tuple(range(0, 10)), "hd_vehicle_count": tuple(range(0, 5)),
}
# column -> (domain, lo, hi): every literal of the domain in one query shifts by one delta
SHIFTED: dict[str, tuple[str, int, int]] = {
    "d_moy": ("moy", 1, 12), "d_qoy": ("qoy", 1, 4), "d_month_seq": ("month_seq", 1176, 1235),
    "t_hour": ("hour", 6, 21),
    "i_current_price": ("i_current_price", 0, 100),
}
for _c in ("ss_quantity", "cs_quantity", "ws_quantity"):
    SHIFTED[_c] = (_c, 0, 100)
# kit q28: LISTPRICE random(0, 190) (+10), COUPONAMT random(0, 18000) (+1000),
# WHOLESALECOST random(0, 80) (+20); other money bounds: the column's range at SF 1
for _c, _hi in (("ss_list_price", 200), ("ss_coupon_amt", 19000), ("ss_wholesale_cost", 100),
                ("ss_sales_price", 200), ("cs_sales_price", 300), ("ws_sales_price", 300),
                ("ss_net_profit", 10000), ("cs_net_profit", 10000), ("ws_net_profit", 10000),
                ("ss_net_paid", 20000), ("cs_net_paid", 30000), ("ws_net_paid", 30000)):
    SHIFTED[_c] = (_c, 0, _hi)
YEARS = (1998, 2002)
DATES = (date(1998, 1, 1), date(2002, 12, 31))
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_CMP = {TokenType.EQ, TokenType.NEQ, TokenType.LT, TokenType.GT, TokenType.LTE,
        TokenType.GTE}
_ARITH = {TokenType.PLUS, TokenType.DASH}


@dataclass(frozen=True)
class Slot:
    start: int             # character span of the literal token (quotes included)
    end: int               # exclusive
    domain: str            # "year", "date", "moy", ..., or a CATEGORICAL column name
    value: str             # the literal as written (without quotes)
    quoted: bool
    offset: float = 0.0    # ``2000 + 1``: the +1 that follows (kept; bounds the shift)


def _domain(col: str, tok) -> Optional[str]:
    c = col.lower()
    if tok.token_type == TokenType.NUMBER:
        try:
            v = float(tok.text)
        except ValueError:
            return None
        if "year" in c and YEARS[0] - 8 <= v <= YEARS[1] + 8 and v == int(v):
            return "year"
        if c in SHIFTED:
            return c
        if c in CATEGORICAL and isinstance(CATEGORICAL[c][0], int) and v == int(v):
            return c
        return None
    if tok.token_type == TokenType.STRING:
        if _DATE.match(tok.text):
            return "date"
        if c in CATEGORICAL and isinstance(CATEGORICAL[c][0], str):
            return c
    return None


@lru_cache(maxsize=256)
def find_slots(sql: str) -> tuple[Slot, ...]:
    """The substitution slots of one query (see module doc), in text order."""
    toks = Spark().tokenize(sql)
    slots: dict[int, Slot] = {}

    offsets: dict[int, float] = {}

    def add(tok, domain):
        if domain is None or tok.start in slots:
            return
        q = tok.token_type == TokenType.STRING
        # a STRING token's span includes its quotes
        slots[tok.start] = Slot(tok.start, tok.end + 1, domain, tok.text, q,
                                offsets.get(tok.start, 0.0))

    def atom(i: int) -> tuple[Optional[object], int]:
        """A literal operand at i: NUMBER/STRING, possibly followed by +/- NUMBER (offset)."""
        if i >= len(toks) or toks[i].token_type not in (TokenType.NUMBER, TokenType.STRING):
            return None, i
        j, off = i + 1, 0.0
        while j + 1 < len(toks) and toks[j].token_type in _ARITH \
                and toks[j + 1].token_type == TokenType.NUMBER:
            sign = 1.0 if toks[j].token_type == TokenType.PLUS else -1.0
            off += sign * float(toks[j + 1].text)
            j += 2
        offsets[toks[i].start] = off
        return toks[i], j

    for i, t in enumerate(toks):
        if t.token_type == TokenType.STRING and _DATE.match(t.text):
            add(t, "date")
        if t.token_type != TokenType.VAR or i + 1 >= len(toks):
            continue
        if i > 0 and toks[i - 1].token_type == TokenType.DASH:
            continue
        nxt = toks[i + 1].token_type
        if nxt in _CMP:
            if i + 2 < len(toks) and toks[i + 2].token_type == TokenType.DASH:
                continue                      # a negative literal: kept as written
            lit, _ = atom(i + 2)
            if lit is not None:
                add(lit, _domain(t.text, lit))
        elif nxt == TokenType.BETWEEN:
            lo, j = atom(i + 2)
            if lo is not None and j < len(toks) and toks[j].token_type == TokenType.AND:
                hi, _ = atom(j + 1)
                if hi is not None:
                    add(lo, _domain(t.text, lo))
                    add(hi, _domain(t.text, hi))
        elif nxt == TokenType.IN and i + 2 < len(toks) \
                and toks[i + 2].token_type == TokenType.L_PAREN:
            j, items = i + 3, []
            while True:
                lit, j = atom(j)
                if lit is None:
                    items = []
                    break
                items.append(lit)
                if j < len(toks) and toks[j].token_type == TokenType.COMMA:
                    j += 1
                    continue
                if j >= len(toks) or toks[j].token_type != TokenType.R_PAREN:
                    items = []
                break
            for lit in items:
                add(lit, _domain(t.text, lit))
    return tuple(slots[k] for k in sorted(slots))


def _shift_range(values: list[float], lo: float, hi: float) -> tuple[int, int]:
    return int(lo - min(values)), int(hi - max(values))


def _fmt_number(orig: str, v: float) -> str:
    if "." in orig:
        return f"{v:.{len(orig.split('.', 1)[1])}f}"
    return str(int(v))


def substitute(sql: str, rng: random.Random) -> str:
    """``sql`` with fresh literals drawn from its slots' domains (see module doc)."""
    slots = find_slots(sql)
    if not slots:
        return sql
    by_dom: dict[str, list[Slot]] = {}
    for s in slots:
        by_dom.setdefault(s.domain, []).append(s)
    new: dict[int, str] = {}
    for dom, ss in by_dom.items():
        if dom == "date":
            ds = [date.fromisoformat(s.value) for s in ss]
            lo = (DATES[0] - min(ds)).days
            hi = (DATES[1] - max(ds)).days
            delta = rng.randint(lo, hi) if lo <= hi else 0
            for s, d in zip(ss, ds):
                new[s.start] = (d + timedelta(days=delta)).isoformat()
        elif dom == "year" or dom in SHIFTED:
            lo, hi = YEARS if dom == "year" else SHIFTED[dom][1:]
            vals = [float(s.value) for s in ss]
            ends = vals + [v + s.offset for s, v in zip(ss, vals)]
            a, b = _shift_range(ends, lo, hi)
            delta = rng.randint(a, b) if a <= b else 0
            for s, v in zip(ss, vals):
                new[s.start] = _fmt_number(s.value, v + delta)
        else:                                     # categorical: injective re-mapping
            pool = list(CATEGORICAL[dom])
            originals = sorted({s.value for s in ss})
            if len(originals) > len(pool):
                continue
            picks = rng.sample(pool, len(originals))
            m = {o: str(p) for o, p in zip(originals, picks)}
            for s in ss:
                new[s.start] = m[s.value]
    out, pos = [], 0
    for s in slots:
        out.append(sql[pos:s.start])
        v = new.get(s.start, s.value)
        q = sql[s.start]
        out.append(q + v.replace(q, q + q) + q if s.quoted else v)
        pos = s.end
    out.append(sql[pos:])
    return "".join(out)

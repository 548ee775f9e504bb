"""THE list of super-operator families. Every stage reads it; nothing else lists families.
Adding a family: one module declaring a :class:`~superop.families.kit.family.Family`, one
line here (see README.md). Order matters only where two families recognize the same node:
the first match wins, else the first near-miss is reported."""
from __future__ import annotations

from .dj import DJ
from .du import DU
from .ex import EX
from .ga import GA
from .kit.family import Family
from .mj import MJ
from .nb import NB
from .pivot import PJ
from .wm import WM

REGISTRY: tuple[Family, ...] = (
    DU,      # diamond-union-all  (du.py)
    GA,      # global-aggregate-diamond (ga.py; before DJ, which calls these a near-miss)
    DJ,      # diamond-join       (dj.py)
    MJ,      # min-join           (mj.py)
    WM,      # winmagic           (wm.py; after MJ, whose MIN/MAX premises it relaxes)
    NB,      # neighbour-self-join (nb.py)
    PJ,      # pivot-join         (pivot.py)
    EX,      # self-exists        (ex.py): a semi/anti self-join decided by the key's MIN/MAX;
             #   after PJ, whose semi/anti pivots of a shared aggregate are its own
)

_BY_NAME = {f.name: f for f in REGISTRY}


def get(name: str) -> Family:
    """The declaration of the family called ``name`` (KeyError with the known names)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown super-operator family {name!r} (known: {', '.join(_BY_NAME)})") from None


def names() -> tuple[str, ...]:
    return tuple(_BY_NAME)

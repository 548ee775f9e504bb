"""TPC-DS data from ``tpcgen-cli tpcds parquet`` (PyPI package ``tpcgen-cli``), cached.

Scale factors: 1 = ~1 GB (the benchmark). The generator floors every table at its minimum
row count below SF ~0.01 (SF 0.001 writes the same 120,527 ``store_sales`` rows as 0.01; the
fixed ``customer_demographics`` has 1,920,800 rows at any SF), and SF 0.0001 writes empty
tables — so 0.01 is the smallest useful scale factor (tests), ~30 MB, ~7 s to generate.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ...errors import SuperopError

SMALLEST_SF = 0.01


def tpcgen_exe() -> str:
    exe = shutil.which("tpcgen-cli") or str(Path(sys.executable).parent / "tpcgen-cli")
    if not Path(exe).exists() and not shutil.which(exe):
        raise SuperopError("tpcgen-cli not found (pip install tpcgen-cli, or the bench/test "
                           "extras of superop)")
    return exe


def generate_tpcds(sf: float, out: str | os.PathLike) -> Path:
    """Write the 24 tables at scale factor ``sf`` as Parquet into ``out`` (replaced)."""
    if sf <= 0:
        raise SuperopError(f"scale factor must be > 0, got {sf:g}")
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    r = subprocess.run([tpcgen_exe(), "tpcds", "parquet", "-s", f"{sf:g}", "--output-dir",
                        str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SuperopError(f"tpcgen-cli failed: {msg[0][:300]}")
    return out


def tpcds_data(sf: float, data_dir: str | os.PathLike) -> Path:
    """``data_dir/tpcds_sf<sf>``, generated once (a ``.complete`` marker guards reuse)."""
    out = Path(data_dir) / f"tpcds_sf{sf:g}"
    marker = out / ".complete"
    if marker.exists():
        return out
    generate_tpcds(sf, out)
    marker.write_text("ok\n")
    return out

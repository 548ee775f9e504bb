"""The bundled query log that the README's first command mines.

    python -m superop.workloads.bundled      # prints its path
"""
from pathlib import Path

DATA = Path(__file__).with_name("data")
LOG = DATA / "query_log.jsonl.gz"
TRUTH = DATA / "query_log.truth.json"

if __name__ == "__main__":
    print(LOG)

"""Z3's Python API works in one global context: the verifier's entry points hold one
process-wide lock, so a session's background first-sight check and a caller's own check
never interleave in it."""
from __future__ import annotations

import threading
import time

import superop.verify.certify as certify_mod

DU = ("SELECT a, sum(s) AS v FROM ops WHERE b > 0 GROUP BY a UNION ALL "
      "SELECT a, count(*) AS v FROM ops GROUP BY a")
SCHEMA = {"ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}


def test_checks_from_two_threads_run_one_at_a_time(monkeypatch):
    real = certify_mod._check
    inside, most = [0], [0]
    guard = threading.Lock()

    def slow(*a, **kw):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.3)            # long enough for the other thread to arrive
        try:
            return real(*a, **kw)
        finally:
            with guard:
                inside[0] -= 1
    monkeypatch.setattr(certify_mod, "_check", slow)
    out: list = []
    threads = [threading.Thread(target=lambda: out.append(certify_mod.check_and_certify(DU, SCHEMA, K=2)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(out) == 2 and all(c["status"] == "verified" for c in out), [c.get("reason") for c in out]
    assert most[0] == 1

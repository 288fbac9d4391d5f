"""What the sandbox can and cannot get from the proxy: never the key, never another rep's share."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fake_upstream import KEY, FakeUpstream
from inference_fixtures import RunModelAgent, short_spec

pytestmark = pytest.mark.sandbox

# The test (not the agent's author) knows the key, so it can ask the agent to look for it.
SEARCH_FOR_THE_KEY = f"""
    import os

    NEEDLE = {KEY[::-1]!r}[::-1]  # reversed, so agent.py itself does not match

    def holds(path):
        try:
            with open(path, "rb") as f:
                return NEEDLE.encode() in f.read(1 << 22)
        except OSError:
            return False

    def agent_main(context):
        probe(context)
        found = [k for k, v in os.environ.items() if NEEDLE in v]
        found += ["context"] if NEEDLE in json.dumps(context) else []
        for root in ("/task", "/tmp", "/etc", "/run", "/var", "/home", "/root"):
            for folder, _, files in os.walk(root):
                found += [os.path.join(folder, f) for f in files if holds(os.path.join(folder, f))]
        for pid in filter(str.isdigit, os.listdir("/proc")):
            found += [f"/proc/{{pid}}/{{n}}" for n in ("environ", "cmdline")
                      if holds(f"/proc/{{pid}}/{{n}}")]
        status, answer = ask(context)
        found += ["answer"] if NEEDLE in json.dumps(answer) else []
        return report(f"{{status}} found: {{found}}")
"""


def test_the_key_is_nowhere_inside_the_sandbox(run_model_agent: RunModelAgent) -> None:
    outcome = run_model_agent(SEARCH_FOR_THE_KEY)
    assert outcome.report is not None, (outcome.detail, outcome.stderr_tail)
    assert outcome.report.verdict.summary == "200 found: []"
    assert KEY not in outcome.to_json()


FLOODER = """
    import threading, time

    def hammer(context):
        for _ in range(500):
            try:
                ask(context, timeout=5)
            except Exception:
                pass

    def hold():
        try:
            s = socket.create_connection(("127.0.0.1", 8900))
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\\r\\n")  # and never finish
            time.sleep(30)
        except OSError:
            pass

    def agent_main(context):
        probe(context)
        for target, args in [(hammer, (context,))] * 6 + [(hold, ())] * 6:
            threading.Thread(target=target, args=args, daemon=True).start()
        time.sleep(2.5)
        return report("flooded")
"""

POLITE = """
    import time

    def agent_main(context):
        probe(context)
        time.sleep(0.5)  # once the flood is under way
        status, answer = ask(context, content="polite")
        return report(str(status) + " " + answer["choices"][0]["message"]["content"])
"""


def test_a_flooding_rep_cannot_starve_another(
    run_model_agent: RunModelAgent, upstream: FakeUpstream
) -> None:
    with ThreadPoolExecutor(2) as pool:
        flood = pool.submit(run_model_agent, FLOODER, task_id="flood")
        polite = pool.submit(run_model_agent, POLITE, task_id="polite")
        flooded, served = flood.result(), polite.result()
    assert served.completed, (served.detail, served.stderr_tail)
    assert served.report is not None
    assert served.report.verdict.summary == "200 " + upstream.reply
    assert served.inference is not None and served.inference.requests == 1
    # The flood spent its own budget and no more; the rest of it was refused or dropped.
    assert flooded.inference is not None and flooded.inference.requests == 3
    assert sum(s.body["messages"][0]["content"] == "polite" for s in upstream.seen) == 1
    assert len(upstream.seen) == 4


N_FLOOD = """
    import threading, time

    def agent_main(context):
        probe(context)
        flood = [{"n": 128, "max_tokens": 4096}] * 4 + [{"max_tokens": 4096}] * 4
        for extra in flood:  # and return at once, leaving them upstream
            threading.Thread(target=ask, args=(context,), kwargs={"extra": extra},
                             daemon=True).start()
        time.sleep(0.5)
        return report("flooded")
"""


def test_a_concurrent_n_flood_is_billed_within_the_budget_and_ends_with_its_rep(
    run_model_agent: RunModelAgent, upstream: FakeUpstream
) -> None:
    upstream.mode, upstream.stall_s = "bill_max", 60.0  # a provider generating to the cap
    outcome = run_model_agent(N_FLOOD, spec=short_spec(requests=20))
    assert outcome.completed, (outcome.detail, outcome.stderr_tail)
    usage = outcome.inference
    assert usage is not None
    assert usage.rejected == 4  # every `n: 128`
    assert all("n" not in s.body for s in upstream.seen)
    # What the provider bills is what the rep records, and no more than its budget.
    assert upstream.billed == usage.tokens <= 1000
    assert usage.requests == len(upstream.seen) >= 1
    # Nothing the rep started is still upstream once its outcome exists.
    deadline = time.monotonic() + 10
    while upstream.abandoned < len(upstream.seen):
        assert time.monotonic() < deadline, "a request outlived its rep"
        time.sleep(0.05)

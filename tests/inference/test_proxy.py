"""The metered proxy end to end: a sandboxed agent, the real sandbox, a loopback upstream."""

from __future__ import annotations

import pytest
from fake_upstream import COMPLETION_TOKENS, KEY, PROMPT_TOKENS, FakeUpstream
from inference_fixtures import RunModelAgent, short_spec

from assay.records.outcome import FailureReason, RunStatus

pytestmark = pytest.mark.sandbox


def test_request_arrives_with_the_validators_key_not_the_nonce(
    run_model_agent: RunModelAgent, upstream: FakeUpstream
) -> None:
    outcome = run_model_agent(
        """
        def agent_main(context):
            probe(context)
            status, answer = ask(context)
            return report(f"{status} " + answer["choices"][0]["message"]["content"])
        """
    )
    assert outcome.status is RunStatus.COMPLETED, (outcome.detail, outcome.stderr_tail)
    assert outcome.report is not None
    assert outcome.report.verdict.summary == "200 " + upstream.reply
    (seen,) = upstream.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.authorization == f"Bearer {KEY}"
    assert outcome.nonce not in str(seen.headers)
    assert seen.body["model"] == "test-model"  # the validator decides the model
    usage = outcome.inference
    assert usage is not None
    assert (usage.requests, usage.prompt_tokens, usage.completion_tokens) == (
        1,
        PROMPT_TOKENS,
        COMPLETION_TOKENS,
    )
    assert not usage.estimated and usage.refused == 0
    assert len(usage.exchanges) == 1 and usage.exchanges[0].status == 200


def test_over_budget_the_agent_reads_a_429_and_goes_on(run_model_agent: RunModelAgent) -> None:
    outcome = run_model_agent(
        """
        def agent_main(context):
            probe(context)
            statuses = [ask(context) for _ in range(5)]
            last = statuses[-1][1]["error"]
            return report(" ".join(str(s) for s, _ in statuses) + " | " + last["type"])
        """
    )
    assert outcome.status is RunStatus.COMPLETED, (outcome.detail, outcome.stderr_tail)
    assert outcome.report is not None
    assert outcome.report.verdict.summary == "200 200 200 429 429 | budget_exceeded"
    usage = outcome.inference
    assert usage is not None and (usage.requests, usage.refused) == (3, 2)
    assert usage.tokens == 3 * (PROMPT_TOKENS + COMPLETION_TOKENS)


def test_tokens_are_counted_when_the_upstream_reports_none(
    run_model_agent: RunModelAgent, upstream: FakeUpstream
) -> None:
    upstream.mode = "no_usage"
    outcome = run_model_agent(
        """
        def agent_main(context):
            probe(context)
            status, _ = ask(context, content="x" * 600)
            return report(str(status))
        """
    )
    assert outcome.report is not None, (outcome.detail, outcome.stderr_tail)
    assert outcome.report.verdict.summary == "200"
    usage = outcome.inference
    assert usage is not None and usage.estimated and usage.requests == 1
    (seen,) = upstream.seen
    assert usage.prompt_tokens == -(-len(seen.raw) // 4)  # bytes / 4 of what the upstream got
    assert usage.completion_tokens == -(-len(upstream.reply.encode()) // 4)


def test_a_reply_cannot_outrun_the_token_budget(
    run_model_agent: RunModelAgent, upstream: FakeUpstream
) -> None:
    outcome = run_model_agent(
        """
        def agent_main(context):
            probe(context)
            ask(context, extra={"max_tokens": 100000})
            return report("done")
        """
    )
    assert outcome.completed, (outcome.detail, outcome.stderr_tail)
    (seen,) = upstream.seen
    # The budget less the most its prompt can cost (one token a byte of the body, measured
    # with the reply cap the agent asked for, whose digits only shrink when capped).
    assert 1000 - len(seen.raw) - 5 <= seen.body["max_tokens"] <= 1000 - len(seen.raw)


def test_routes_and_nonce(run_model_agent: RunModelAgent, upstream: FakeUpstream) -> None:
    outcome = run_model_agent(
        """
        def agent_main(context):
            probe(context)
            wrong, _ = ask(context, key="not-the-nonce")
            elsewhere, _ = ask(context, path="/v1/embeddings")
            routed, _ = ask(context, extra={"provider": {"order": ["elsewhere"]}})
            request = urllib.request.Request(
                context["inference"]["api"] + "/v1/models",
                headers={"Authorization": "Bearer " + context["inference"]["api_key"]},
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                models = json.loads(response.read())["data"][0]["id"]
            return report(f"{wrong} {elsewhere} {routed} {models}")
        """
    )
    assert outcome.report is not None, (outcome.detail, outcome.stderr_tail)
    assert outcome.report.verdict.summary == "401 404 400 test-model"
    assert upstream.seen == []
    assert outcome.inference is not None
    assert (outcome.inference.requests, outcome.inference.rejected) == (0, 3)


def test_upstream_failure_is_a_502_that_leaks_nothing(
    run_model_agent: RunModelAgent, upstream: FakeUpstream
) -> None:
    upstream.mode = "fail"
    outcome = run_model_agent(
        """
        def agent_main(context):
            probe(context)
            status, answer = ask(context)
            return report(f"{status} {json.dumps(answer)}")
        """
    )
    assert outcome.report is not None, (outcome.detail, outcome.stderr_tail)
    summary = outcome.report.verdict.summary or ""
    assert summary.startswith("502 ") and "HTTP 500" in summary
    assert KEY[:12] not in summary  # the provider's error text is never relayed
    assert outcome.inference is not None and outcome.inference.errors == 1


def test_upstream_down_is_a_502(run_model_agent: RunModelAgent, upstream: FakeUpstream) -> None:
    upstream.port = 1  # nothing listens there
    outcome = run_model_agent(
        """
        def agent_main(context):
            probe(context)
            status, answer = ask(context)
            return report(f"{status} {answer['error']['type']}")
        """
    )
    assert outcome.report is not None, (outcome.detail, outcome.stderr_tail)
    assert outcome.report.verdict.summary == "502 upstream_error"


def test_a_stalled_upstream_is_a_504_within_the_rep(
    run_model_agent: RunModelAgent, upstream: FakeUpstream
) -> None:
    upstream.mode, upstream.stall_s = "stall", 10.0
    outcome = run_model_agent(
        """
        def agent_main(context):
            probe(context)
            status, answer = ask(context)
            return report(f"{status} {answer['error']['type']}")
        """,
        timeout_s=1.0,
    )
    assert outcome.report is not None, (outcome.detail, outcome.stderr_tail)
    assert outcome.report.verdict.summary == "504 upstream_error"
    assert outcome.inference is not None and outcome.inference.errors == 1


WAITS_ON_THE_MODEL = """
    import time

    def agent_main(context):
        probe(context)
        started = time.monotonic()
        status, _ = ask(context)
        time.sleep(max(0.0, 3.6 - (time.monotonic() - started)))  # past the 3 s backstop
        return report(str(status))
"""


def test_time_upstream_extends_the_wall_backstop(
    run_model_agent: RunModelAgent, upstream: FakeUpstream
) -> None:
    upstream.mode, upstream.stall_s = "stall", 2.0
    outcome = run_model_agent(WAITS_ON_THE_MODEL, timeout_s=10.0)
    assert outcome.completed, (outcome.detail, outcome.stderr_tail)
    assert outcome.wall_s > 3.0
    usage = outcome.inference
    assert usage is not None and 2.0 <= usage.wall_extension_s == usage.upstream_s
    assert outcome.charged_wall_s == pytest.approx(outcome.wall_s - usage.wall_extension_s)


def test_the_extension_is_capped(run_model_agent: RunModelAgent, upstream: FakeUpstream) -> None:
    upstream.mode, upstream.stall_s = "stall", 2.0
    outcome = run_model_agent(WAITS_ON_THE_MODEL, timeout_s=10.0, spec=short_spec(0.5))
    assert outcome.reason is FailureReason.WALL_BACKSTOP
    assert outcome.inference is not None and outcome.inference.wall_extension_s == 0.5
    assert "backstop 3.5 s" in outcome.detail  # 3 s, and the 0.5 s cap it was granted

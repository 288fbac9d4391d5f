"""An assay agent that asks a language model for its verdict, with static evidence as context.

When the round serves a model, `context["inference"]` holds an OpenAI-compatible
endpoint inside the sandbox (`api`), the rep's nonce as its key (`api_key`),
`provider` and `model` (docs/inference.md). The agent gathers static evidence
first (lines that read like instructions to an agent, secret paths, the
validator's own detonation in `context["observed"]`), asks the model to weigh
it, and keeps the static verdict whenever the model is absent, over budget
(HTTP 429), failing (502/504) or unclear. Standard library only.
"""

import contextlib
import json
import os
import re
import socket
import subprocess
import urllib.error
import urllib.request

_SUSPICIOUS = re.compile(
    r"ignore (all |any )?(previous|prior) instructions|do not (tell|mention|inform) the user"
    r"|~/\.ssh|id_rsa|\.aws/credentials|curl [^|]*\|\s*(ba)?sh|base64 -d",
    re.IGNORECASE,
)
_DANGEROUS = {"EXFILTRATE_DATA", "READ_SSH_KEY", "READ_SECRET", "READ_ENV_SECRET", "EXEC_SHELL"}
_MAX_BYTES = 128 * 1024
_MAX_PROMPT_CHARS = 12000
_TIMEOUT_S = 45


def run_probe(context: dict) -> None:
    """Prove this rep really ran: the validator checks each part itself."""
    probe = context.get("probe")
    if not probe:
        return
    with open(probe["file_path"], "w") as handle:
        handle.write(probe["file_content"])
    with contextlib.suppress(OSError):
        socket.getaddrinfo(probe["dns_host"], 80)
    subprocess.run(["echo", probe["process_echo"]], capture_output=True, check=False)


def text_files(root: str):
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as handle:
                data = handle.read(_MAX_BYTES)
            yield os.path.relpath(path, root), data.decode("utf-8", "replace")


def static_evidence(context: dict) -> tuple[list, list]:
    """(suspicious lines, dangerous capabilities the validator observed)."""
    hits = []
    for rel, text in text_files(context["artifact_dir"]):
        for number, line in enumerate(text.splitlines(), start=1):
            if _SUSPICIOUS.search(line):
                hits.append({"file": rel, "line": number, "excerpt": line.strip()[:200]})
    observed = context.get("observed") or {}
    capabilities = sorted(set(observed.get("capabilities") or ()) & _DANGEROUS)
    return hits, capabilities


def ask_model(context: dict, prompt: str) -> str | None:
    """The model's answer, or None when there is no model or it cannot answer now."""
    inference = context.get("inference") or {}
    if not inference.get("api"):
        return None
    body = {
        "model": inference.get("model"),
        "messages": [
            {
                "role": "system",
                "content": "You audit agent skills, MCP servers, packages and repositories. "
                "Answer with one word first: ALLOW, WARN or BLOCK, then one sentence why.",
            },
            {"role": "user", "content": prompt[:_MAX_PROMPT_CHARS]},
        ],
        "temperature": 0,
        "max_tokens": 120,
    }
    request = urllib.request.Request(
        inference["api"] + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer " + inference["api_key"],
            "X-Phylax-Nonce": context["nonce"],
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            answer = json.loads(response.read())
        return str(answer["choices"][0]["message"]["content"]).strip()
    except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError, TypeError):
        return None  # 429 (over budget), 502/504 (upstream trouble), or no endpoint


def decide(context: dict, hits: list, capabilities: list) -> tuple[str, str]:
    static = "BLOCK" if hits or capabilities else "ALLOW"
    prompt = (
        f"Track: {context['track']}\nStatic verdict: {static}\n"
        f"Suspicious lines: {json.dumps(hits[:20])}\n"
        f"Dangerous capabilities observed when the artifact ran: {capabilities}"
    )
    answer = ask_model(context, prompt)
    word = (answer or "").split(maxsplit=1)[0].strip(".:,").upper() if answer else ""
    if word in ("ALLOW", "WARN", "BLOCK"):
        return word, f"model: {answer[:300]}"
    return static, f"static analysis: {len(hits)} suspicious line(s), {capabilities or 'none'}"


def agent_main(context: dict) -> dict:
    run_probe(context)
    hits, capabilities = static_evidence(context)
    decision, why = decide(context, hits, capabilities)
    risk = {"ALLOW": 10, "WARN": 55, "BLOCK": 90}[decision]
    verdict = {"decision": decision, "risk_score": risk, "summary": why}
    if context["track"] == "repositories":
        return {
            "verdict": verdict,
            "evidence": {"audit": {"files_analysed": 1}, "vulnerabilities": []},
            "findings": [],
        }
    findings = [
        {
            "category": "prompt_injection",
            "severity": "HIGH",
            "plane": "context",
            "title": "instructions aimed at the agent: " + hit["excerpt"][:80],
            "file": hit["file"],
            "line": hit["line"],
        }
        for hit in hits[:16]
    ]
    evidence = {
        "action_plane": {"capabilities": [{"capability": c} for c in capabilities]},
        "context_plane": {"injected_instructions": hits[:32]},
    }
    if context["track"] == "mcp_servers":
        evidence["mcp_surface"] = {"exposed_tools": []}
    if context["track"] == "packages":
        evidence["lifecycle"] = {"install_time": {}}
        evidence["supply_chain"] = {"dependencies": []}
    return {"verdict": verdict, "evidence": evidence, "findings": findings}

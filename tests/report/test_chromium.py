"""The HTML report opened in a real headless Chromium: the plots are in the DOM and it paints.

Chromium runs with networking switched off at every level we can reach, so a
report that needed a network resource would show up as missing content.
"""

from __future__ import annotations

import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from report_markup import parse

from assay.records.round import RoundResult
from assay.report.html import write_html

CHROMIUM = Path("/usr/bin/chromium")
TRACKS = ("skills", "mcp_servers", "packages", "repositories")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("chromium"),  # one headless Chromium at a time
    pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed"),
]


def _chromium(tmp_path: Path, page: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    return subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *(m for m in mode if m.startswith("--window-size")),
            *(
                ()
                if any(m.startswith("--window-size") for m in mode)
                else ("--window-size=1400,3000",)
            ),
            *(m for m in mode if not m.startswith("--window-size")),
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, round_result: RoundResult) -> Path:
    path = tmp_path_factory.mktemp("report") / "round.html"
    write_html(round_result, path)
    return path


def test_dumped_dom_contains_every_plot(
    report: Path, round_result: RoundResult, tmp_path: Path
) -> None:
    dom = parse(_chromium(tmp_path, report, "--dump-dom").stdout)
    agents = len(round_result.agents)
    for track in TRACKS:
        section = f"track-{track}"
        tasks = len(round_result.plan.draw()[track])
        parts = ("score",) if track == "repositories" else ("verdict", "findings")
        assert all(dom.count("rect", section)[part] == agents for part in parts)
        assert len(dom.find("line", "threshold-line", section)) == 1
        assert len(dom.find("g", "cell", section)) == agents * tasks
    assert len(dom.find("g", "cm-cell")) == 3 * 4 * agents
    assert dom.find("g", "failure-row") and dom.find("rect", "ema", "weights")
    assert not dom.find("script")  # hostile names stayed text in the live DOM too


def _png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the inflated image data of a PNG (filter bytes included)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        if kind == b"IDAT":
            chunks.append(data[offset + 8 : offset + 8 + length])
        offset += 12 + length
    return width, height, zlib.decompress(b"".join(chunks))


def test_screenshot_paints_the_report(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    _chromium(tmp_path, report, f"--screenshot={shot}")
    data = shot.read_bytes()
    width, height, pixels = _png_pixels(data)
    assert (width, height) == (1400, 3000)
    assert len(data) > 50_000  # a blank page compresses to a few KB
    # Many distinct byte values: text, bars and coloured cells, not one flat colour.
    assert len(set(pixels)) > 64

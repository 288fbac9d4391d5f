import argparse
import json
import shutil
import subprocess
import sys


def probe(path: str) -> dict:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", path],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def cut(src: str, dst: str, start: float, end: float, crf: int) -> None:
    cmd = ["ffmpeg", "-y", "-ss", str(start), "-to", str(end), "-i", src,
           "-c:v", "libx264", "-crf", str(crf), "-c:a", "aac", dst]
    subprocess.run(cmd, check=True)


def main(argv: list[str] | None = None) -> int:
    if shutil.which("ffmpeg") is None:
        print("clipcut needs ffmpeg on PATH", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="clipcut")
    parser.add_argument("src")
    parser.add_argument("dst")
    parser.add_argument("--start", type=float, default=0.0)
    parser.add_argument("--end", type=float, required=True)
    parser.add_argument("--crf", type=int, default=23)
    args = parser.parse_args(argv)
    duration = float(probe(args.src)["format"]["duration"])
    cut(args.src, args.dst, args.start, min(args.end, duration), args.crf)
    return 0

"""Column statistics for a CSV file, written as a Markdown table."""

import csv
import statistics
import sys


def summarise(path: str) -> list[tuple[str, float, float, float]]:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    stats = []
    for column in rows[0].keys() if rows else []:
        try:
            values = [float(r[column]) for r in rows]
        except ValueError:
            continue
        stats.append((column, min(values), max(values), statistics.fmean(values)))
    return stats


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print("usage: summarise.py DATA.csv REPORT.md")
        sys.exit(0)
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        out.write("| column | min | max | mean |\n|---|---|---|---|\n")
        for column, low, high, mean in summarise(sys.argv[1]):
            out.write(f"| {column} | {low} | {high} | {mean:.2f} |\n")

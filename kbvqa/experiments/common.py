"""What the resumable experiment scripts share: their command line and their results files.

``resumable_parser`` gives the options every resumable experiment takes (first ``--limit`` queries,
a subset of its named rows, ``--seed``, ``--threads``, ``--out``, ``--fresh`` to rerun finished
rows); ``write_json_and_csv`` writes ``results.json`` (everything, for the chapters) and
``results.csv`` (one line per row, for a spreadsheet); ``resumed_run`` reads back a row's records
when a previous run already finished it. Leaves out: what each experiment runs and
its provenance (``rcts_toy.provenance``).
"""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path


def resumable_parser(description: str, rows_flag: str, row_names, limit: int, limit_help: str,
                     out: Path, what: str = "rows") -> argparse.ArgumentParser:
    """An ``ArgumentParser`` with the options of a resumable experiment; ``rows_flag`` names the
    option that picks a subset of ``row_names`` (``--rows``, ``--rungs``)."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=limit, help=limit_help)
    parser.add_argument(rows_flag, nargs="+", default=None, help=f"some of {list(row_names)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--fresh", action="store_true", help=f"rerun {what} that already have records")
    return parser


def write_json_and_csv(out, results: dict, header: list[str], lines) -> None:
    """``results.json`` (the whole ``results``) and ``results.csv`` (``header`` then ``lines``)
    under ``out``, created if missing."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    with (out / "results.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(lines)


def resumed_run(path, fingerprint: str, ids: list[str], fresh: bool = False):
    """``(header, records)`` of a finished row in ``path`` (a ``runs/<row>.jsonl``) when it was run
    with this ``fingerprint`` on at least the queries ``ids`` (records cut to them), else ``None``:
    a changed setting, a shorter run or ``fresh`` means the row runs again."""
    from kbvqa.experiments.rcts_toy import read_run

    if fresh:
        return None
    header, records = read_run(Path(path))
    if not header or header.get("fingerprint") != fingerprint or [r["id"] for r in records][:len(ids)] != ids:
        return None
    return header, records[:len(ids)]

"""README.md's measured numbers are those of the stored benchmark results (benchmarks/headline.py
writes them, with their spread and the A/A control), never typed by hand."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_readmes_numbers_are_the_stored_results() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "headline.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_section_says_the_control_and_each_rows_spread() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import headline
    finally:
        sys.path.pop(0)
    text = headline.section()
    assert "The A/A control" in text and "parity, not a win" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and " s → " in line]
    assert len(rows) == len(headline.ROWS)
    assert all(" (" in row.split("|")[4] for row in rows), rows  # a range beside each ratio

"""The explorer's screenshots, made from its snapshot tests' SVGs (tests/functional/__snapshots__/,
drawn by Textual and checked by those tests): each copied under a readable name
(test_layer_pairs[120x36].svg -> layer-pairs-120x36.svg). The snapshots are the one kept copy; the
screenshots folder is made on demand and not kept in git.

    python -m tests.make_screenshots [OUT_DIR]      # from the repository root; default: screenshots/

After a change to the screens, update the snapshots first (`pytest tests/functional/test_tui_snapshots*.py
tests/functional/test_tui_aie.py --snapshot-update`, once the change is checked to be intended).
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "tests" / "functional" / "__snapshots__"


def readable(stem: str) -> str:
    """test_layer_pairs[120x36] -> layer-pairs-120x36"""
    stem = re.sub(r"\[(.*)\]$", r"_\1", stem.removeprefix("test_"))
    return stem.replace("_", "-")


def make(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for svg in sorted(SNAPSHOTS.glob("*/*.svg")):
        target = out / f"{readable(svg.stem)}.svg"
        shutil.copyfile(svg, target)
        written.append(target)
    return written


if __name__ == "__main__":
    for p in make(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "screenshots"):
        print(p)

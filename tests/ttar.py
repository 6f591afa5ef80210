"""ttar (github.com/ideaship/ttar): the plain-text archive format Prometheus keeps its
recorded sysfs trees in (tests/fixtures/linux/infiniband_*.ttar, README there)."""

from __future__ import annotations

from pathlib import Path


def untar(ttar: Path, dest: Path) -> Path:
    """Extract a ttar archive (github.com/ideaship/ttar, the plain-text format Prometheus
    keeps its sysfs fixtures in: `Directory:`, `Path:` + `Lines: N` + N lines, `Mode:`;
    a line ending in "EOF" has no newline). Returns the `class/infiniband` directory."""
    lines = ttar.read_text().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("Directory: "):
            (dest / line[11:]).mkdir(parents=True, exist_ok=True)
        elif line.startswith("Path: "):
            n = int(lines[i + 1].split(": ", 1)[1])
            body = "".join(x + "\n" for x in lines[i + 2:i + 2 + n])
            if body.endswith("EOF\n"):
                body = body[:-4]
            f = dest / line[6:]
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(body)
            i += 1 + n
        i += 1
    return next(dest.rglob("class/infiniband"))

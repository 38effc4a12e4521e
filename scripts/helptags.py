"""Write doc/tags as Neovim's :helptags would, so `:h gemini-companion` works after `make install`.

Plugin managers run :helptags for what they clone, not for a local `dir =` plugin or a
plain package; this needs no Neovim. A tag is `*name*` with whitespace (or the line's
edge) on both sides; the file lists `name<TAB>file<TAB>/*name*`, sorted bytewise.
"""

import re
import sys
from pathlib import Path

TAG = re.compile(r"(?:^|(?<=\s))\*([^\s*|]+)\*(?=\s|$)")


def escape(name: str) -> str:
    """The search command escapes backslash and slash, as :helptags does."""
    return name.replace("\\", "\\\\").replace("/", "\\/")


def tags(doc: Path) -> list[str]:
    found: dict[str, str] = {}
    for path in sorted(doc.glob("*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            for name in TAG.findall(line):
                if name in found:
                    raise SystemExit(f"duplicate help tag {name} in {path.name}")
                found[name] = path.name
    lines = [f"{name}\t{file}\t/*{escape(name)}*" for name, file in found.items()]
    return sorted(lines, key=str.encode)


def main() -> None:
    doc = Path(sys.argv[1] if len(sys.argv) > 1 else "doc")
    target = doc / "tags"
    tmp = target.with_suffix(".tmp")
    tmp.write_text("".join(line + "\n" for line in tags(doc)), encoding="utf-8")
    tmp.replace(target)


main()

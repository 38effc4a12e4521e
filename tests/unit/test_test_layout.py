"""The tests are laid out like the code: each feature's tests in its folder, and shared helpers in
helper modules or conftest.py — no test file imports another test file."""

from __future__ import annotations

import ast

from conftest import ROOT


def test_no_test_file_imports_another_test_file():
    found = []
    for path in [*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]:
        if "node_modules" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            found += [f"{path.relative_to(ROOT)}: {name}" for name in names if name.split(".")[-1].startswith("test_")]
    assert found == []


def test_each_feature_folder_of_the_code_has_its_test_folder():
    lua = ROOT / "lua" / "gemini_companion"  # a folder beside a core module (health/) is that module's
    code = {p.name for p in lua.iterdir() if p.is_dir() and not (lua / f"{p.name}.lua").exists()}
    tests = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir()}
    assert code - tests == set()


def test_the_readme_says_where_each_feature_test_folder_is():
    """The README's "where is the test for X" sentence names every feature's test folder."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("Where is the test for X:")
    sentence = " ".join(readme[start : readme.index(": `pytest -m e2e`", start)].split())
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir()} - {"harness", "node", "__pycache__"}
    assert {name for name in folders if f"`{name}`" not in sentence and f"`tests/{name}/`" not in sentence} == set()

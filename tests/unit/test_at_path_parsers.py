"""The `@path` escape of :GeminiAdd (agents/at_path.lua) against the real CLIs' own prompt parsers
(Gemini CLI 0.61: its @-path pattern and unescapePath; Qwen Code 0.24.4: extractAtPathCommands),
for every printable ASCII character in a name and the route names of Next.js and SvelteKit: each
`@path` the plugin types is read back as exactly the name, and a plain path holds no `@path` at all."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

from conftest import ROOT, nvim_binary
from harness.tui import NODE22

MODULES = ROOT / "tests" / "node" / "node_modules"
GEMINI = MODULES / "@google" / "gemini-cli" / "bundle"
QWEN = MODULES / "@qwen-code" / "qwen-code" / "chunks"
# The chunks that hold the parsers (the bundles' own names, fixed for these versions).
PARSERS = [GEMINI / "chunk-HPLZM7PQ.js", GEMINI / "chunk-JDPZ4CE3.js", QWEN / "chunk-UBBHH6V4.js"]
PARSE = """
const [gemini, core, qwen] = await Promise.all(process.argv.slice(2).map((file) => import(file)));
const atPath = new RegExp(`(?<!\\\\\\\\)@${gemini.AT_COMMAND_PATH_REGEX_SOURCE}`, 'g');
let input = '';
for await (const chunk of process.stdin) input += chunk;
const parsed = JSON.parse(input).map(({ cli, text }) =>
  cli === 'qwen'
    ? qwen.extractAtPathCommands(text)
    : [...text.matchAll(atPath)].map((m) => core.unescapePath(m[0].slice(1))),
);
process.stdout.write('\\n' + JSON.stringify(parsed) + '\\n');
"""
FORMS = """
local at_path = require('gemini_companion.agents.at_path')
local out = {}
for _, name in ipairs(vim.json.decode(io.read('*a'))) do
  for _, cli in ipairs({ 'gemini', 'qwen' }) do
    table.insert(out, { cli = cli, name = name, form = at_path.form(name, cli) or vim.NIL })
  end
end
io.stdout:write(vim.json.encode(out))
"""
NAMES = [f"a{chr(c)}b" for c in range(0x20, 0x7F) if chr(c) not in "/"] + [
    "+page.svelte", "(group)", "@scope", "[id]", "[...slug].tsx", "[[...opt]]", "{a,b}", "ü/日本.txt", "x.", "a b",
    "it's", 'q"x', "-flag", "%", "#", "~x", "$HOME", "`cmd`", "+(p)", "@(q)", "!(r)", "FAIL x", "a..b",
]  # fmt: skip


def test_every_reference_reads_back_as_the_name(tmp_path):
    script = tmp_path / "forms.lua"
    script.write_text(f"vim.opt.runtimepath:prepend({json.dumps(str(ROOT))})\n" + FORMS)
    home = {key: str(tmp_path / key.lower()) for key in ("HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")}
    forms = json.loads(
        subprocess.run(
            [nvim_binary(), "--clean", "-l", str(script)],
            input=json.dumps(NAMES),
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={**os.environ, **home},
            check=True,
        ).stdout
    )
    parse = tmp_path / "parse.mjs"
    parse.write_text(textwrap.dedent(PARSE))
    texts = [{"cli": f["cli"], "text": f"{f['form']} which files?"} for f in forms if f["form"]]
    run = subprocess.run(
        [str(NODE22), str(parse), *map(str, PARSERS)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    parsed = iter(json.loads(run.stdout.splitlines()[-1]))
    for form in forms:
        if not form["form"]:
            # Refused: an @ in a name that goes as the plain path; a " for Gemini (its read_file refuses it too).
            assert "@" in form["name"] or (form["cli"] == "gemini" and '"' in form["name"]), form
            continue
        paths = next(parsed)
        if form["form"].startswith("@"):
            assert paths == ["./" + form["name"]], form
        else:
            assert form["form"].startswith("`") and paths == [], form
    assert next(parsed, None) is None
    plain = {f["name"] for f in forms if f["cli"] == "gemini" and f["form"] and f["form"].startswith("`")}
    assert {"a*b", "a?b", "a[b", "a{b", "a\\b", "[id]", "{a,b}", "x.", "a..b", "FAIL x"} <= plain
    refused = {f["name"] for f in forms if f["cli"] == "gemini" and not f["form"]}
    assert {'a"b', 'q"x'} <= refused, refused
    assert not plain & {"a b", "a(b", "a@b", "+page.svelte", "(group)", "@scope", "it's", "ü/日本.txt"}, plain

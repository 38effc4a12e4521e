"""Install as a user does: the README's specs, the real plugin managers, a clean HOME, the first launch.

The plugin is published from a local git repository (a copy of this working tree) under the
name the README uses, `OWNER/gemini-companion.nvim`; the managers are pointed at it with their
own URL-format settings, so the spec each test uses is the README's, verbatim. Every test ends
with a real Gemini IDE client connected on the first launch after install: no
:UpdateRemotePlugins, no restart, nothing red in :messages. The managers are the unmodified
snapshots in ../shared/fixtures/plugin-managers (never copied into this repository).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pynvim
import pytest

from conftest import ROOT, Editor, NodeClient, Sandbox, client_env, nvim_binary, wait_for
from core.helpers import MANAGERS, readme_block

BUILD_TIMEOUT = 900.0  # a fresh venv from PyPI (cached) on a loaded 2-core machine
RED = ("Error", "E5108", "E5113", "rror in coroutine", "Traceback", "UpdateRemotePlugins")
SPEC_NAME = "OWNER/gemini-companion.nvim"


pytestmark = pytest.mark.skipif(MANAGERS is None, reason="plugin-manager snapshots not found (../shared/fixtures)")


def publish(files: list[Path], source: Path, repo: Path) -> None:
    """`files` (relative to `source`) as one commit of a new git repository at `repo`."""
    for name in files:
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, target, follow_symlinks=False)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "snapshot"], cwd=repo, check=True)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Git repositories under one root, named as on GitHub: this working tree as
    OWNER/gemini-companion.nvim, and packer (which a packer user lets manage itself)."""
    root = tmp_path_factory.mktemp("remote")
    names = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    ours = [Path(os.fsdecode(n)) for n in names if n and (ROOT / os.fsdecode(n)).is_file()]
    publish(ours, ROOT, root / SPEC_NAME)
    assert MANAGERS is not None
    packer = MANAGERS / "packer.nvim"
    publish([p.relative_to(packer) for p in packer.rglob("*") if p.is_file()], packer, root / "wbthomason/packer.nvim")
    return root


@pytest.fixture(scope="module")
def checkout(published: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's clone after the README's one build step, `make install`."""
    path = tmp_path_factory.mktemp("checkout") / "gemini-companion.nvim"
    subprocess.run(["git", "clone", "-q", str(published / SPEC_NAME), str(path)], check=True)
    subprocess.run(["make", "install"], cwd=path, check=True, timeout=BUILD_TIMEOUT, stdout=subprocess.DEVNULL)
    return path


@pytest.fixture
def user(tmp_path: Path) -> Iterator[Sandbox]:
    """A clean HOME whose config is the user's own (no test init, no Python named for the plugin)."""
    sandbox = Sandbox(tmp_path)
    for key in ("GEMINI_COMPANION_PYTHON", "NVIM_RPLUGIN_MANIFEST"):
        sandbox.env.pop(key, None)
    (tmp_path / "config" / "nvim").mkdir(parents=True)
    yield sandbox


def headless(sandbox: Sandbox, *commands: str) -> subprocess.CompletedProcess[str]:
    """A headless Neovim session on the user's config running `commands`, to its exit."""
    argv = [nvim_binary(), "--headless", *(arg for command in commands for arg in ("-c", command))]
    return subprocess.run(
        argv,
        env=sandbox.env,
        cwd=sandbox.project,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def write_config(sandbox: Sandbox, text: str) -> None:
    (sandbox.base / "config" / "nvim" / "init.lua").write_text(text)


def first_launch(sandbox: Sandbox, timeout: float = 120.0, provider: str | None = None) -> Editor:
    """Neovim as the user starts it, its server running and a real IDE client connected."""
    editor = Editor(sandbox, init=None)
    try:
        wait_for(lambda: server_state(editor) == "running", timeout, "the server running")
        assert_client_connects(editor, sandbox)
        shown = editor.messages()
        assert not any(word in shown for word in RED), shown
        assert editor.lua("return vim.g.python3_host_prog") == provider  # never set or changed
        editor.nvim.command("help gemini-companion")  # help tags exist (E149 otherwise)
        assert editor.lua("return vim.bo.filetype") == "help"
    except BaseException:
        editor.close()
        raise
    return editor


def assert_client_connects(editor: Editor, sandbox: Sandbox) -> None:
    """A real Gemini IDE client, started as in the editor's :terminal, connects."""
    client = NodeClient("gemini_client.mjs", client_env(editor), sandbox.project)
    try:
        assert client.call("connect")["status"] == "connected"
    finally:
        client.close()


def server_state(editor: Editor) -> str | None:
    """The server's state; None while the config is still running (lazy installing and building)."""
    try:
        return editor.lua("return package.loaded.gemini_companion and require('gemini_companion').status().state")
    except pynvim.NvimError:
        return None


def lazy_config(published: Path, spec: str) -> str:
    return f"""
vim.opt.rtp:prepend({str(MANAGERS / "lazy.nvim")!r})
require('lazy').setup({{ {spec} }}, {{
  git = {{ url_format = {f"file://{published}/%s"!r} }},
  install = {{ missing = true }},
  checker = {{ enabled = false }},
  change_detection = {{ enabled = false }},
  rocks = {{ enabled = false }},
}})
"""


def test_lazy_readme_spec_installs_builds_and_connects_on_the_first_launch(published, user):
    write_config(user, lazy_config(published, readme_block("[lazy.nvim]")))
    editor = first_launch(user, BUILD_TIMEOUT)  # lazy clones and runs the build inside this launch
    try:
        installed = user.base / "data" / "nvim" / "lazy" / "gemini-companion.nvim"
        assert (installed / ".venv" / "bin" / "python").exists()
        assert (installed / "doc" / "tags").exists()
        assert editor.status()["python"].startswith(str(installed))
    finally:
        editor.close()


def test_lazy_dir_spec_of_a_built_checkout_connects_on_the_first_launch(checkout, user):
    spec = readme_block("local checkout").replace("~/src/gemini-companion.nvim", str(checkout))
    assert str(checkout) in spec
    write_config(user, lazy_config(Path("/nowhere"), spec))
    first_launch(user).close()


def test_packer_readme_spec_installs_and_the_first_launch_connects(published, user):
    # packer's README bootstrap: a clone of packer in the start packages, managing itself.
    start = user.base / "data" / "nvim" / "site" / "pack" / "packer" / "start"
    clone = ["git", "clone", "-q", str(published / "wbthomason/packer.nvim"), str(start / "packer.nvim")]
    subprocess.run(clone, check=True)
    packer = """
local packer = require('packer')
packer.init({{
  git = {{ default_url_format = {url!r} }},
  display = {{ non_interactive = true }},
}})
packer.startup(function(use)
use 'wbthomason/packer.nvim'
{spec}
end)
""".format(url=f"file://{published}/%s", spec=readme_block("[packer.nvim]"))
    write_config(user, packer)
    # The install session, the way packer's README bootstraps headless.
    done = headless(user, "autocmd User PackerComplete quitall", "PackerSync")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert not any(word in output for word in RED), output
    installed = user.base / "data" / "nvim" / "site" / "pack" / "packer" / "start" / "gemini-companion.nvim"
    assert (installed / ".venv" / "bin" / "python").exists(), output
    first_launch(user).close()


def test_a_missing_venv_is_quiet_at_startup_and_install_from_neovim_starts_the_server(published, user, tmp_path):
    fresh = tmp_path / "fresh" / "gemini-companion.nvim"
    subprocess.run(["git", "clone", "-q", str(published / SPEC_NAME), str(fresh)], check=True)
    write_config(user, f"vim.opt.rtp:prepend({str(fresh)!r})")
    editor = Editor(user, init=None)
    try:
        status = wait_for(lambda: (s := editor.status())["state"] == "failed" and s, what="the missing venv noticed")
        assert "GeminiCompanion install" in status["error"], status
        assert editor.messages() == ""  # nothing at startup: the line comes on first use
        editor.nvim.command("terminal")  # the first use: a terminal to run the CLI in
        wait_for(lambda: "GeminiCompanion install" in editor.messages(), what="one line on first use")
        editor.nvim.command("GeminiCompanion install")
        editor.wait_state("running", BUILD_TIMEOUT)
        assert (fresh / ".venv" / "bin" / "python").exists()
        shown = editor.messages()
        assert "installed" in shown and not any(word in shown for word in RED), shown
        assert_client_connects(editor, user)
    finally:
        editor.close()


def test_another_python_rplugin_on_the_users_provider_works_beside_ours(user, tmp_path):
    other = tmp_path / "other-plugin"
    (other / "rplugin" / "python3").mkdir(parents=True)
    (other / "rplugin" / "python3" / "other_echo.py").write_text(
        "import pynvim\n\n\n@pynvim.plugin\nclass Echo:\n"
        "    def __init__(self, nvim):\n        self.nvim = nvim\n\n"
        '    @pynvim.function("OtherEcho", sync=True)\n'
        "    def echo(self, args):\n        return 'echo:' + args[0]\n"
    )
    write_config(
        user,
        f"""
vim.g.python3_host_prog = {sys.executable!r} -- the user's provider
vim.opt.rtp:prepend({str(ROOT)!r})
vim.opt.rtp:append({str(other)!r})
vim.g.gemini_companion_python = {sys.executable!r}
""",
    )
    registered = headless(user, "UpdateRemotePlugins", "qa!")
    manifest = (user.base / "data" / "nvim" / "rplugin.vim").read_text()
    assert "OtherEcho" in manifest, registered.stdout + registered.stderr
    assert "gemini_companion" not in manifest  # ours needs no manifest and gets none
    editor = first_launch(user, provider=sys.executable)
    try:
        assert editor.nvim.call("OtherEcho", "hi") == "echo:hi"
        assert editor.status()["state"] == "running"
    finally:
        editor.close()


def has_vim_pack() -> bool:
    check = "lua io.stdout:write(tostring(vim.pack ~= nil))"
    probe = [nvim_binary(), "--headless", "--clean", "-c", check, "-c", "qa!"]
    return subprocess.run(probe, capture_output=True, text=True, timeout=60).stdout.strip() == "true"


def test_vim_pack_spec_then_install_from_neovim_connects(published, user):
    """Neovim 0.12+ only (only 0.11 installs here): vim.pack runs no build, :GeminiCompanion install does."""
    if not has_vim_pack():
        pytest.skip("this Neovim has no vim.pack (0.12+)")
    url = f"file://{published / SPEC_NAME}"
    spec = readme_block("vim.pack").replace("https://github.com/OWNER/gemini-companion.nvim", url)
    assert url in spec
    write_config(user, spec.replace("})", "}, { confirm = false })"))
    editor = Editor(user, init=None)
    try:
        wait_for(lambda: server_state(editor) == "failed", 120, "the missing build noticed")
        assert not any(word in editor.messages() for word in RED)
        editor.nvim.command("GeminiCompanion install")
        wait_for(lambda: server_state(editor) == "running", BUILD_TIMEOUT, "the server after the install")
        assert_client_connects(editor, user)
    finally:
        editor.close()

"""The host process's entry (run by host.lua): serve first, then become pynvim's plugin host.

Executed as a script, with the plugin directory as argv[1] and the `start` parameters in
GEMINI_COMPANION_START. The server is bound, advertised and answering before pynvim loads,
so a CLI that finds the discovery file is answered at once; what the server tells Neovim
meanwhile waits (editor.PendingEditor) until pynvim is up.
"""

import gc
import json
import os
import sys

# The host never speaks TLS and never needs OpenSSL's hashes: asyncio offers TLS only if `ssl`
# imports, hashlib/hmac fall back to Python's own sha256 and compare_digest. Loading OpenSSL
# would cost the host about 5 MiB and 10 ms for nothing.
sys.modules["ssl"] = None  # type: ignore[assignment]
sys.modules["_hashlib"] = None  # type: ignore[assignment]

SERVE_WAIT_SECONDS = 5.0  # at most, before pynvim loads anyway (a start that hangs is reported)


site_loaded = not sys.flags.no_site


def load_site() -> None:
    """host.lua runs Python with -S: `site` (the site-packages on sys.path, .pth files such as
    setuptools' distutils hack, sitecustomize) loads here, after the discovery file, which needs
    none of it (3-15 ms less before a CLI can find the server). Once."""
    global site_loaded
    if not site_loaded:
        site_loaded = True
        import site

        site.main()


plugin_dir = sys.argv[1]
sys.path.insert(0, os.path.dirname(plugin_dir))
import gemini_companion  # noqa: E402 - from the plugin directory, just put on sys.path
from gemini_companion import env_names  # noqa: E402

start = os.environ.pop(env_names.START, None)
if start:
    launched = None
    try:
        from gemini_companion.server import launch

        params = json.loads(start)
        nvim_pid, workspace = int(params["nvim_pid"]), list(params["workspace"])
        launched = launch.launch(nvim_pid, workspace, params.get("reuse"))  # the port file first: the CLI's side starts
        load_site()
        from gemini_companion import companion, log

        log.configure(params.get("log"))  # the port file is out: now the log (a problem is said by `start`)
        companion.start_early(launched, nvim_pid, workspace, SERVE_WAIT_SECONDS)
    except Exception:  # noqa: BLE001 - Neovim's own `start` then starts and reports what went wrong
        if launched is not None:
            launched.abandon()

load_site()  # (a start without parameters, or one that failed before the port file)
import pynvim  # noqa: E402 - after the server, on purpose

from gemini_companion.plugin import GeminiCompanionPlugin  # noqa: E402

# pynvim's host imports the package named on the command line (this one, already loaded) and
# registers the handler classes it finds on it.
gemini_companion.GeminiCompanionPlugin = GeminiCompanionPlugin  # type: ignore[attr-defined]
# What is loaded by now lives as long as the host: out of the collector's way, so a full
# collection (every ~70,000 allocations) takes a fraction of a millisecond, not 3-5 ms with the
# GIL held in the middle of a client's request.
gc.freeze()
pynvim.start_host()

"""The host process's entry (run by host.lua): advertise the server, then become pynvim's plugin host.

Executed as a script, with the plugin directory as argv[1] and the `start`
parameters in GEMINI_COMPANION_START. The discovery files are written before
pynvim (60 ms to import) and the server load, so a CLI can find this Neovim
within a few tens of milliseconds of its start. The package is registered
without running its __init__ (which imports pynvim) until that step is done.
"""

import importlib.util
import json
import os
import sys

plugin_dir = sys.argv[1]
sys.path.insert(0, os.path.dirname(plugin_dir))
spec = importlib.util.spec_from_file_location(
    "gemini_companion", os.path.join(plugin_dir, "__init__.py"), submodule_search_locations=[plugin_dir]
)
assert spec is not None and spec.loader is not None
package = importlib.util.module_from_spec(spec)
sys.modules["gemini_companion"] = package
from gemini_companion import env_names  # noqa: E402 - the package is registered just above

start = os.environ.pop(env_names.START, None)
if start:
    try:
        from gemini_companion.server import launch

        params = json.loads(start)
        launch.launch_early(int(params["nvim_pid"]), list(params["workspace"]))
    except Exception:  # noqa: BLE001 - `start` itself then launches and reports what went wrong
        pass
package.__dict__["OWN_HOST"] = True  # see __init__.py
spec.loader.exec_module(package)

import pynvim  # noqa: E402 - after the launch, on purpose

pynvim.start_host()

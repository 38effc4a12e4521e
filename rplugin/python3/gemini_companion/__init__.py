"""gemini-companion.nvim's Python side (see ARCHITECTURE.md for the map).

Importing the package costs nothing: the programs that run as processes of their own (programs/)
import its modules without pynvim. Only the plugin's own host serves the handlers: boot.py sets
OWN_HOST before it runs this file, and the pynvim entry (plugin.py) is imported then. Loaded by
another host, as :UpdateRemotePlugins does with the python3 provider's, the package exports no
handlers, so a manifest never registers it a second time.
"""

if globals().get("OWN_HOST"):
    from gemini_companion.plugin import GeminiCompanionPlugin  # noqa: F401 - pynvim finds the handlers here

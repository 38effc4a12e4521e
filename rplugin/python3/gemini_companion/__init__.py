"""gemini-companion.nvim's Python side (see ARCHITECTURE.md for the map).

Importing the package costs nothing and exports no handlers: the programs that run as processes
of their own (programs/) import its modules without pynvim, and a host that loads it, as
:UpdateRemotePlugins does with the python3 provider's, never registers it a second time. Only the
plugin's own host serves: boot.py puts the pynvim entry (plugin.py) on the package itself.
"""

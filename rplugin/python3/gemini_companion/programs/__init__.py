"""Programs that run as processes of their own, each started as a script (never imported by the host,
but for the constants hook.py shares with server/hook_keys.py); settings_edit.py's parts (jsonc.py,
settings_*.py) are modules only it imports."""

--- Every environment variable name the Lua side sets or reads for the CLIs and for the plugin's
--- own processes, spelled here and nowhere else (the Python side's:
--- rplugin/python3/gemini_companion/env_names.py; tests/unit/test_env_names.py keeps both the
--- only homes).
return {
  -- Where each CLI keeps its settings (cli_settings).
  gemini_home = 'GEMINI_CLI_HOME',
  qwen_home = 'QWEN_HOME',
  -- Gemini's folder trust, in its own order (cli_settings.trusted).
  gemini_restricted = 'GEMINI_RESTRICTED_MODE',
  gemini_trust_workspace = 'GEMINI_CLI_TRUST_WORKSPACE',
  gemini_trusted_folders = 'GEMINI_CLI_TRUSTED_FOLDERS_PATH',
  -- Qwen's system defaults file (qwen_defaults), and its system settings that win over them.
  qwen_system_defaults = 'QWEN_CODE_SYSTEM_DEFAULTS_PATH',
  qwen_system_settings = 'QWEN_CODE_SYSTEM_SETTINGS_PATH',
  -- How Gemini finds the server, as a terminal sees it (health).
  gemini_port = 'GEMINI_CLI_IDE_SERVER_PORT',
  gemini_token = 'GEMINI_CLI_IDE_AUTH_TOKEN',
  -- The model's editor tools, named in Gemini's settings as `${VAR:-}`.
  mcp_url = 'GEMINI_COMPANION_MCP_URL',
  mcp_token = 'GEMINI_COMPANION_MCP_TOKEN',
  -- The turn hooks: the key the command checks for, and earlier versions' variable.
  hook_key = 'GEMINI_COMPANION_HOOK_ID',
  old_hook = 'GEMINI_COMPANION_HOOK',
  -- host.lua -> boot.py: the start parameters.
  start = 'GEMINI_COMPANION_START',
  -- The host's glibc: above this size a block is mmap'd (its memory comes back when freed).
  malloc_mmap_threshold = 'MALLOC_MMAP_THRESHOLD_',
}

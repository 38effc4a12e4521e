"""Every environment variable name the Python side sets or reads for the CLIs and for the plugin's
own processes, spelled here and nowhere else (the Lua side's: lua/gemini_companion/env.lua;
tests/unit/test_env_names.py keeps both the only homes). No imports: the programs that run as
processes of their own (programs/) import it without pynvim.
"""

# How a CLI started in Neovim finds this server: set in its terminals (contract.TERMINAL_ENV), and
# per managed agent (access.py).
GEMINI_PORT = "GEMINI_CLI_IDE_SERVER_PORT"
GEMINI_WORKSPACE = "GEMINI_CLI_IDE_WORKSPACE_PATH"
GEMINI_TOKEN = "GEMINI_CLI_IDE_AUTH_TOKEN"
GEMINI_PID = "GEMINI_CLI_IDE_PID"
GEMINI_STDIO_COMMAND = "GEMINI_CLI_IDE_SERVER_STDIO_COMMAND"
GEMINI_STDIO_ARGS = "GEMINI_CLI_IDE_SERVER_STDIO_ARGS"
QWEN_PORT = "QWEN_CODE_IDE_SERVER_PORT"
QWEN_WORKSPACE = "QWEN_CODE_IDE_WORKSPACE_PATH"
QWEN_STDIO_COMMAND = "QWEN_CODE_IDE_SERVER_STDIO_COMMAND"
QWEN_STDIO_ARGS = "QWEN_CODE_IDE_SERVER_STDIO_ARGS"

# The model's editor tools, named in Gemini's settings as `${VAR:-}` (cli_settings.lua).
MCP_URL = "GEMINI_COMPANION_MCP_URL"
MCP_TOKEN = "GEMINI_COMPANION_MCP_TOKEN"

# The turn hooks (hook.py): the opaque key naming the file with the port and token ("no TOKEN/KEY
# in the name: Gemini may redact those"); and the variable earlier versions' entries `eval`ed, set
# empty in Neovim's terminals so such an entry is inert there.
HOOK_KEY = "GEMINI_COMPANION_HOOK_ID"
OLD_HOOK = "GEMINI_COMPANION_HOOK"

# The plugin's own processes.
START = "GEMINI_COMPANION_START"  # host.lua -> boot.py: the start parameters
SWEEP_SECONDS = "GEMINI_COMPANION_SWEEP_SECONDS"  # the discovery sweep's period (tests shorten it)
LOG_MAX_BYTES = "GEMINI_COMPANION_LOG_MAX_BYTES"  # the log's size before it rotates (tests shorten it)

# Read: where Qwen Code keeps its files.
QWEN_HOME = "QWEN_HOME"

--- Which CLI an agent's command runs, and its version, read from the npm package it belongs to
--- (Qwen reports a fixed "1.0.0" when it connects, so the package is the truth): an agent's
--- `cli` and `version`, and the CLI `:GeminiAdd` writes references for before the agent runs.
local M = {}

local PACKAGES = { ['@google/gemini-cli'] = 'gemini', ['@qwen-code/qwen-code'] = 'qwen' }

--- Which CLI a command runs and its version: `qwen`, or `node …/cli.js`. Nothing for a wrapper script.
---@param cmd string[]
---@return ('gemini'|'qwen')? cli, string version
function M.of(cmd)
  for _, word in ipairs({ cmd[1], cmd[2] }) do
    local found = vim.fn.exepath(word)
    local path = vim.uv.fs_realpath(found ~= '' and found or word)
    local dir = path and vim.fs.dirname(path)
    for _ = 1, 3 do -- bin/cli.js, or bundle/gemini.js, below the package
      if not dir then
        break
      end
      local package = require('gemini_companion.json_file').read(dir .. '/package.json') or {}
      if PACKAGES[package.name] then
        return PACKAGES[package.name], type(package.version) == 'string' and package.version or ''
      end
      dir = vim.fs.dirname(dir)
    end
  end
  return nil, ''
end

return M

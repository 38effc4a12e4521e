--- The model's editor tools, answered from Neovim (tools.py has checked every argument and
--- resolved every path into the workspace). Each call ends with one `tool_result`; language
--- server requests are asynchronous and bounded, so nothing here blocks typing. Each tool is a file
--- of handlers/; paths.lua, buffer_bytes.lua, hidden.lua and lsp.lua are what they share.
---
--- No file is read here: tools.py reads the one a tool names from inside the workspace and
--- sends its bytes along (`args.file`). A buffer the user has loaded under a name inside the
--- workspace is their editor state and answers instead; a file Neovim must load (a language
--- server needs a buffer) is kept only if Neovim read exactly those bytes (hidden.lua `load`), loaded with no
--- swap file and no autocommand but the filetype's, and let go when the tool is done (`release`).
--- Names a language server's answer gives are resolved off the main loop (lsp.lua `resolve_names`).
local host = require('gemini_companion.host')
local paths = require('gemini_companion.tools.paths')

local M = {}
local H = {}

---@class gemini_companion.tools.File What tools.py read of the file a tool names.
---@field data? string its bytes
---@field partial? boolean only its first `end_line` lines were read: the file may go on
---@field error? string why there are none (one line)

--- How a CLI's settings name our tools: `mcpServers` entries for the model's endpoint. The
--- read-only tools are one server (trusted per `tools.trust`: the CLI does not ask before each
--- call); `open_file` changes what the user sees, so it is a server of its own, never trusted.
--- Qwen needs `alwaysLoadTools` to declare them to the model (else they hide behind its
--- tool_search bridge); Gemini declares them anyway.
---@param cli 'gemini'|'qwen'
---@param url string
---@param authorization string the Authorization header's value
---@return table<string, table>? entries, nil when the tools are turned off
function M.servers(cli, url, authorization)
  local options = require('gemini_companion.config').options.tools
  if not options.enabled then
    return nil
  end
  local function server(extra)
    local base = { httpUrl = url, headers = { Authorization = authorization } }
    base.alwaysLoadTools = cli == 'qwen' or nil
    return vim.tbl_extend('force', base, extra)
  end
  local servers = { neovim = server({ trust = options.trust, excludeTools = { 'open_file' } }) }
  if options.open_file then
    servers['neovim-open'] = server({ trust = false, includeTools = { 'open_file' } })
  end
  return servers
end

--- One tool call from tools.py.
---@param id integer
---@param name string
---@param args table
function M.call(id, name, args)
  local found, handler = pcall(require, 'gemini_companion.tools.handlers.' .. name:gsub('[^%w_]', ''))
  if not found then
    return H.reply(id, nil, 'unknown tool ' .. name)
  end
  paths.resolve_buffers(args.roots or {}, function(buffers)
    args.buffers = buffers
    local ok, err = pcall(handler, args, function(result, why)
      H.reply(id, result, why)
    end)
    if not ok then
      H.reply(id, nil, tostring(err))
    end
  end)
end

---@param id integer
---@param result any
---@param err? string
function H.reply(id, result, err)
  host.notify('tool_result', { id = id, result = result, error = err })
end

return M

--- Language servers for the tools: the file's buffer with a server attached, requests bounded
--- in time, and answers shaped for the model (names resolved off the main loop, locations outside
--- the workspace counted, never shown).
local buffer_bytes = require('gemini_companion.tools.buffer_bytes')
local hidden = require('gemini_companion.tools.hidden')
local paths = require('gemini_companion.tools.paths')

local M = {}

local LSP_TIMEOUT_MS = 5000
local ATTACH_TIMEOUT_MS = 3000
local SNIPPET_CHARS = 500

--- The file's buffer, loaded hidden if needed, once a language server that can answer `method`
--- is attached (bounded): done(buf, nil) or done(nil, why).
---@param args table the tool's arguments: path, file, roots
---@param method string
---@param done fun(buf: integer?, err: string?)
function M.buffer(args, method, done)
  local buf = paths.loaded_buffer(args.path, args.buffers)
  if buf and not buffer_bytes.answers(buf, args.file) then -- the file changed since, or a reload went elsewhere
    if not hidden.ours[buf] or #vim.fn.win_findbuf(buf) > 0 then -- the user's, or shown: theirs to reload
      return done(
        nil,
        ("'%s' is open unchanged in the editor but is not the file on disk: reload it (:edit)"):format(
          paths.relative(args.path, args.roots)
        )
      )
    end
    hidden.ours[buf].users = hidden.ours[buf].users + 1
    hidden.release(buf, true) -- hidden and ours: loaded anew
    buf = nil
  elseif buf and hidden.ours[buf] then -- another call's hidden buffer: kept until both are done
    hidden.ours[buf].users = hidden.ours[buf].users + 1
  end
  if not buf then
    local err
    buf, err = hidden.load(args.path, args.file, args.roots) -- its FileType autocommands start the servers
    if not buf then
      return done(nil, err)
    end
  end
  local started = vim.uv.hrtime()
  local function try()
    if not vim.api.nvim_buf_is_valid(buf) then -- another call found the file changed and let it go
      return done(nil, ("'%s' changed while it was being opened"):format(paths.relative(args.path, args.roots)))
    end
    if #vim.lsp.get_clients({ bufnr = buf, method = method }) > 0 then
      return done(buf)
    end
    if (vim.uv.hrtime() - started) / 1e6 > ATTACH_TIMEOUT_MS then
      local any = #vim.lsp.get_clients({ bufnr = buf }) > 0
      local filetype = vim.bo[buf].filetype
      hidden.release(buf)
      return done(
        nil,
        any and ('no language server attached to this file answers %s'):format(method)
          or ('no language server is attached to this file (filetype %q)'):format(filetype)
      )
    end
    vim.defer_fn(try, 50)
  end
  try()
end

--- UTF-16 offset of a 1-based character column in a line (what most servers count).
---@param text string
---@param character integer
---@return integer
function M.utf16(text, character)
  local byte = vim.fn.byteidx(text, character - 1)
  byte = byte < 0 and #text or byte
  if vim.fn.has('nvim-0.11') == 1 then
    return vim.str_utfindex(text, 'utf-16', byte, false)
  end
  local _, units = vim.str_utfindex(text, byte)
  return units
end

--- Send `method` to the buffer's servers; done(results) or done(nil, why) after 5 s.
---@param buf integer
---@param method string
---@param params table
---@param done fun(results: table?, err: string?)
function M.request(buf, method, params, done)
  local finished = false
  local ok, cancel = pcall(vim.lsp.buf_request_all, buf, method, params, function(results)
    if not finished then
      finished = true
      done(results)
    end
  end)
  if not ok then
    return done(nil, tostring(cancel))
  end
  vim.defer_fn(function()
    if not finished then
      finished = true
      pcall(cancel)
      done(nil, ('the language server did not answer %s within %d s'):format(method, LSP_TIMEOUT_MS / 1000))
    end
  end, LSP_TIMEOUT_MS)
end

-- The files the answer being shaped names, resolved (`resolve_names`); false: not in time.
local resolved = {} ---@type table<string, string|false>

--- Resolve every file a language server's answer names (`uri`, `targetUri`) off the main loop
--- (libuv's thread pool: a name on a hung mount stalls no key), then done(shape()); after
--- RESOLVE_TIMEOUT_MS, so anyway, and the names still pending count as outside.
---@param results table
---@param shape fun(): table the answer, made from `results` (`inside` sees the names resolved)
---@param done fun(result: table?, err: string?)
function M.resolve_names(results, shape, done)
  local names = {} ---@type table<string, string>
  local function walk(value, depth)
    for key, item in pairs(value) do
      if (key == 'uri' or key == 'targetUri') and type(item) == 'string' then
        local ok, path = pcall(vim.uri_to_fname, item)
        if ok then
          names[path] = path
        end
      elseif type(item) == 'table' and depth < 32 then
        walk(item, depth + 1)
      end
    end
  end
  walk(results, 0)
  paths.realpaths(names, function(real)
    resolved = real
    local ok, answer = pcall(shape)
    resolved = {}
    if ok then
      done(answer)
    else
      done(nil, tostring(answer))
    end
  end)
end

--- A location's resolved path and workspace-relative path; nil when outside the workspace (or
--- not resolved in time). Only inside `resolve_names`' done().
---@param uri string
---@param roots string[]
---@return string? path
---@return string? rel
function M.inside(uri, roots)
  local ok, name = pcall(vim.uri_to_fname, uri)
  local path = ok and resolved[name]
  local rel = path and paths.relative(path, roots)
  if rel then
    return path, rel
  end
end

--- A location as the model reads it: workspace-relative path, 1-based range, the line. The line
--- comes from a buffer with unsaved edits; for any other tools.py reads it (`file`, never shown).
---@param uri string
---@param range table
---@param roots string[]
---@param buffers gemini_companion.tools.Buffers
---@return table?
function M.location(uri, range, roots, buffers)
  local path, rel = M.inside(uri, roots)
  if not path then
    return nil
  end
  local buf = paths.loaded_buffer(path, buffers)
  local edited = buf and vim.bo[buf].modified -- unsaved text is the user's; the rest, the file's
  local line = edited and vim.api.nvim_buf_get_lines(buf, range.start.line, range.start.line + 1, false)[1]
  return {
    path = rel,
    line = range.start.line + 1,
    column = range.start.character + 1,
    end_line = range['end'].line + 1,
    end_column = range['end'].character + 1,
    text = line and vim.trim(line):sub(1, SNIPPET_CHARS) or nil,
    file = not line and path or nil,
  }
end

--- Locations from every server's answer, those outside the workspace counted, not shown.
function M.locations(results, roots, buffers)
  local items, outside, errors = {}, 0, {}
  for _, answer in pairs(results) do
    if answer.err then
      table.insert(errors, answer.err.message)
    end
    local result = answer.result
    if result and (result.uri or result.targetUri) then
      result = { result }
    end
    for _, loc in ipairs(result or {}) do
      local item = M.location(loc.uri or loc.targetUri, loc.range or loc.targetSelectionRange, roots, buffers)
      if item then
        table.insert(items, item)
      else
        outside = outside + 1
      end
    end
  end
  return items, outside, errors
end

---@param method string
---@param shape fun(results: table, args: table): table
function M.position_tool(method, shape)
  return function(args, done)
    M.buffer(args, method, function(buf, err)
      if not buf then
        return done(nil, err)
      end
      local text = vim.api.nvim_buf_get_lines(buf, args.line - 1, args.line, false)[1]
      if not text then
        hidden.release(buf)
        return done(nil, ('line %d is past the end of the file'):format(args.line))
      end
      local params = {
        textDocument = { uri = vim.uri_from_bufnr(buf) },
        position = { line = args.line - 1, character = M.utf16(text, args.character) },
        context = { includeDeclaration = true },
      }
      M.request(buf, method, params, function(results, rerr)
        if not results then
          hidden.release(buf)
          return done(nil, rerr)
        end
        M.resolve_names(results, function()
          return shape(results, args)
        end, function(answer, serr)
          hidden.release(buf) -- after shape: a location's line may be this buffer's
          done(answer, serr)
        end)
      end)
    end)
  end
end

---@param symbols table[]
---@param container? string
---@param out table[]
---@param roots string[]
---@param path? string The document's path (DocumentSymbol has no location of its own).
function M.flatten(symbols, container, out, roots, path)
  for _, s in ipairs(symbols) do
    local range = s.selectionRange or s.range or (s.location and s.location.range)
    local item = {
      name = s.name,
      kind = vim.lsp.protocol.SymbolKind[s.kind] or s.kind,
      container = container or s.containerName,
      line = range.start.line + 1,
      column = range.start.character + 1,
    }
    if s.location then
      item.path = select(2, M.inside(s.location.uri, roots))
    else
      item.path = path
    end
    if item.path then
      table.insert(out, item)
    end
    if s.children then
      M.flatten(s.children, s.name, out, roots, path)
    end
  end
end

--- The symbols of every server's answer, flattened, their files named inside the roots.
---@param results table? the answers by client id (nil: the request failed)
---@param err string?
---@param roots string[]
---@param file string? the document's name (document symbols carry no location of their own)
---@param done fun(result: table?, err: string?)
function M.symbols(results, err, roots, file, done)
  if not results then
    return done(nil, err)
  end
  M.resolve_names(results, function()
    local out = {}
    for _, answer in pairs(results) do
      M.flatten(answer.result or {}, nil, out, roots, file)
    end
    return { symbols = out, count = #out }
  end, done)
end

return M

--- The model's editor tools, answered from Neovim (tools.py has checked every argument and
--- resolved every path into the workspace). Each call ends with one `tool_result`; language
--- server requests are asynchronous and bounded, so nothing here blocks typing.
---
--- No file is read here: tools.py reads the one a tool names from inside the workspace and
--- sends its bytes along (`args.file`). A buffer the user has loaded under a name inside the
--- workspace is their editor state and answers instead; a file Neovim must load (a language
--- server needs a buffer) is kept only if Neovim read exactly those bytes (`load`), loaded with no
--- swap file and no autocommand but the filetype's, and let go when the tool is done (`release`).
--- Names a language server's answer gives are resolved off the main loop (`resolve_names`).
local host = require('gemini_companion.host')

local M = {}

local MAX_DIAGNOSTICS = 500
local LSP_TIMEOUT_MS = 5000
local ATTACH_TIMEOUT_MS = 3000
local RESOLVE_TIMEOUT_MS = 2000
local SEVERITY = { error = 1, warning = 2, info = 3, hint = 4 }
local SEVERITY_NAME = { 'error', 'warning', 'info', 'hint' }
local SNIPPET_CHARS = 500

---@class gemini_companion.tools.File What tools.py read of the file a tool names.
---@field data? string its bytes
---@field partial? boolean only its first `end_line` lines were read: the file may go on
---@field error? string why there are none (one line)

---@param id integer
---@param result any
---@param err? string
local function reply(id, result, err)
  host.notify('tool_result', { id = id, result = result, error = err })
end

---@param path string
---@param roots string[]
---@return string? relative path, when inside a root
local function relative(path, roots)
  for _, root in ipairs(roots) do
    if path == root then
      return '.'
    end
    if vim.startswith(path, root .. '/') then
      return path:sub(#root + 2)
    end
  end
end

---@alias gemini_companion.tools.Buffers table<integer, string|false> buffer -> resolved path

--- fs_realpath calls not back yet: path -> when asked (ms, vim.uv.now) and who waits for it. A
--- name on a hung mount holds one of libuv's few pool threads until the mount is gone: it is
--- asked once, not again by every later call (which would take every thread).
---@type table<string, { since: integer, waiting: fun(real: string)[] }>
local asking = {}

--- `paths` (key -> path) resolved off the main loop (libuv's thread pool: a file on a hung mount
--- stalls no key), then done(key -> real path; a file that is gone keeps its name; false: not
--- resolved within RESOLVE_TIMEOUT_MS, or still not back from an earlier call after that time).
---@generic K
---@param paths table<K, string>
---@param done fun(real: table<K, string|false>)
local function realpaths(paths, done)
  local real, pending, finished = {}, 0, false
  local function finish()
    if not finished then
      finished = true
      done(real)
    end
  end
  for key, path in pairs(paths) do
    real[key] = false
    local ask = asking[path]
    if not ask or vim.uv.now() - ask.since < RESOLVE_TIMEOUT_MS then -- else stuck: not resolved
      pending = pending + 1
      if not ask then
        ask = { since = vim.uv.now(), waiting = {} }
        asking[path] = ask
        vim.uv.fs_realpath(path, function(err, resolved)
          vim.schedule(function()
            asking[path] = nil
            for _, wait in ipairs(ask.waiting) do
              wait(not err and resolved or path)
            end
          end)
        end)
      end
      table.insert(ask.waiting, function(resolved)
        if not finished then
          real[key] = resolved
          pending = pending - 1
          if pending == 0 then
            finish()
          end
        end
      end)
    end
  end
  if pending == 0 then
    return finish()
  end
  vim.defer_fn(finish, RESOLVE_TIMEOUT_MS)
end

--- The resolved file paths of the buffers named inside the workspace, then done(buffers). A
--- buffer named elsewhere (the user's ~/.ssh/config, say) is never the tools' business, wherever
--- a link makes its name point; one not resolved in time is left out too.
---@param roots string[]
---@param done fun(buffers: gemini_companion.tools.Buffers)
local function resolve_buffers(roots, done)
  local inside = {} ---@type table<integer, string>
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.bo[buf].buftype == '' and vim.api.nvim_buf_get_name(buf) or ''
    if name ~= '' and relative(name, roots) then
      inside[buf] = name
    end
  end
  realpaths(inside, function(real)
    local buffers = {} ---@type gemini_companion.tools.Buffers
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      buffers[buf] = real[buf] or false
    end
    done(buffers)
  end)
end

--- Resolved file path of a buffer named inside the workspace (`resolve_buffers`).
---@param buf integer
---@param buffers gemini_companion.tools.Buffers
---@return string?
local function buffer_path(buf, buffers)
  return buffers[buf] or nil
end

--- The loaded file buffer of a resolved path.
---@param path string
---@param buffers gemini_companion.tools.Buffers
---@return integer?
local function loaded_buffer(path, buffers)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and buffer_path(buf, buffers) == path then
      return buf
    end
  end
end

-- The byte order mark Neovim reads and writes for each encoding that has one ('bomb').
local BOM = {
  ['utf-8'] = '\239\187\191',
  ['utf-16'] = '\254\255',
  ['utf-16le'] = '\255\254',
  ['ucs-2'] = '\254\255',
  ['ucs-2le'] = '\255\254',
  ['ucs-4'] = '\0\0\254\255',
  ['ucs-4le'] = '\255\254\0\0',
}
-- Neovim's big-endian 16-bit encodings: vim.iconv hands their names to the system's iconv,
-- which makes them little-endian (with a BOM of its own for 'utf-16'). Converted to the
-- little-endian twin here, then each pair of bytes swapped.
local BIG_ENDIAN_16 = { ['utf-16'] = 'utf-16le', ['ucs-2'] = 'ucs-2le' }

--- `text` (UTF-8) in the file encoding `fenc` as Neovim writes it, without a BOM; nil if it
--- cannot be converted.
---@param text string
---@param fenc string
---@return string?
local function encode(text, fenc)
  if fenc == 'utf-8' or text == '' then
    return text
  end
  local twin = BIG_ENDIAN_16[fenc]
  local out = vim.iconv(text, 'utf-8', twin or fenc)
  if out and twin then
    out = out:gsub('(.)(.)', '%2%1')
  end
  return out
end

--- Whether Neovim read exactly `data` into `buf`: its reading undone (byte order mark, line
--- endings, final newline, encoding). Any doubt is a mismatch.
---@param buf integer
---@param data string
---@return boolean
local function holds(buf, data)
  local bo = vim.bo[buf]
  local fenc = bo.fileencoding ~= '' and bo.fileencoding or 'utf-8'
  if bo.bomb then
    local bom = BOM[fenc]
    if not bom or data:sub(1, #bom) ~= bom then
      return false
    end
    data = data:sub(#bom + 1)
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  -- An empty file and a lone newline both read as one empty line; only the first has no bytes.
  local nothing = #lines == 1
    and lines[1] == ''
    and vim.api.nvim_buf_call(buf, function()
      return vim.fn.line2byte(2)
    end) == -1
  if nothing or data == '' then
    return nothing and data == ''
  end
  local eol = ({ dos = '\r\n', mac = '\r' })[bo.fileformat] or '\n'
  return encode(table.concat(lines, eol) .. (bo.eol and eol or ''), fenc) == data
end

--- Whether a loaded buffer answers for its file. Unsaved edits are the user's own text (Neovim
--- never reloads such a buffer unasked); an unmodified one answers only while it holds the bytes
--- tools.py read inside the workspace, for 'autoread' reloads a buffer from whatever its name
--- points at when Neovim next checks the file (entering it, :checktime), a link to outside too.
---@param buf integer
---@param file gemini_companion.tools.File
---@return boolean
local function answers(buf, file)
  return vim.bo[buf].modified or (file.data ~= nil and not file.partial and holds(buf, file.data))
end

--- Buffers `load` filled for tools and nobody has shown since: how they go when the last tool
--- call using them is done (`release`): 'wipe' (made by `load`) or 'unload' (a buffer the user
--- had, unloaded).
---@class gemini_companion.tools.Ours
---@field how 'wipe'|'unload'
---@field users integer tool calls using it now
local ours = {} ---@type table<integer, gemini_companion.tools.Ours>

--- The buffer of `path` (not loaded yet), loaded hidden from `file`, the bytes tools.py read
--- inside the workspace. Neovim reads the file again by its name, and a symlink swapped in since
--- makes that another file: so it reads with every autocommand held back (no language server,
--- no plugin sees the text) and no swap file (none written beside the file, no prompt for one
--- there), the buffer is kept only if it holds exactly `file.data`, and only then is its filetype
--- detected (the `filetypedetect` BufReadPost autocommands, then FileType, which starts language
--- servers): no BufEnter, no BufWinEnter, no other plugin's BufRead.
---@param path string
---@param file gemini_companion.tools.File
---@param roots string[]
---@return integer? buf
---@return string? err
local function load(path, file, roots)
  if not file.data then
    return nil, file.error
  end
  local changed = ("'%s' changed while it was being opened"):format(relative(path, roots))
  if file.partial then -- read_buffer's range only: never a buffer's whole text
    return nil, changed
  end
  local ignore = vim.o.eventignore
  vim.o.eventignore = 'all' -- not even BufNew/BufAdd: nobody sees this buffer until it holds the file
  local ok, buf = pcall(function()
    local existed = vim.fn.bufexists(path) == 1
    local buf = vim.fn.bufadd(path)
    -- bufadd names a buffer after its folders resolved, and may return one of another name
    -- (the same file through a link): either way not the file tools.py read.
    if vim.api.nvim_buf_get_name(buf) ~= path or vim.bo[buf].buftype ~= '' then
      return nil
    end
    if vim.api.nvim_buf_is_loaded(buf) then -- loaded under this very name: the user's, or ours
      if ours[buf] then -- loaded by a call still running (made since this one began): shared
        if not answers(buf, file) then
          return nil
        end
        ours[buf].users = ours[buf].users + 1
      end
      return buf
    end
    -- No swap file: none written for a file only a tool reads, no prompt for another's. Set
    -- again only when the user is shown the buffer (open_file).
    vim.bo[buf].swapfile = false
    if not pcall(vim.fn.bufload, buf) or not holds(buf, file.data) then -- gone quietly, as it came
      pcall(vim.api.nvim_buf_delete, buf, { force = true, unload = existed }) -- the user's keeps its place
      return nil
    end
    ours[buf] = { how = existed and 'unload' or 'wipe', users = 1 }
    return buf
  end)
  vim.o.eventignore = ignore
  if not ok or not buf then
    return nil, changed
  end
  if ours[buf] then
    vim.api.nvim_buf_call(buf, function()
      -- Only the detection's group: a missing one (`:filetype off`) leaves the filetype empty.
      pcall(vim.api.nvim_exec_autocmds, 'BufReadPost', { group = 'filetypedetect', buffer = buf, modeline = false })
    end)
  end
  return buf
end

--- The tool is done with `buf`: a buffer `load` filled for it goes again (unloaded, or wiped when
--- `load` made it), unless someone has shown or edited it since. Memory does not grow with the
--- number of files the model asks about; the user's buffers are never touched.
---@param buf integer?
---@param now? boolean whoever else uses it: it no longer holds the file
local function release(buf, now)
  local own = buf and ours[buf]
  if not own then
    return
  end
  own.users = own.users - 1
  if own.users > 0 and not now then
    return
  end
  ours[buf] = nil
  if
    vim.api.nvim_buf_is_valid(buf)
    and vim.api.nvim_buf_is_loaded(buf)
    and not vim.bo[buf].modified
    and #vim.fn.win_findbuf(buf) == 0
  then
    pcall(vim.api.nvim_buf_delete, buf, { force = true, unload = own.how == 'unload' })
  end
end

local handlers = {}

function handlers.get_diagnostics(args, done)
  local worst = SEVERITY[args.severity or 'hint']
  local buf = nil
  if args.path then
    buf = loaded_buffer(args.path, args.buffers)
    if not buf then
      return done({ diagnostics = {}, count = 0, omitted = 0, note = 'the file is not open in the editor' })
    end
  end
  local items = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local path = d.severity <= worst and buffer_path(d.bufnr, args.buffers)
    local rel = path and relative(path, args.roots)
    if rel then
      table.insert(items, {
        path = rel,
        line = d.lnum + 1,
        column = d.col + 1,
        end_line = (d.end_lnum or d.lnum) + 1,
        end_column = (d.end_col or d.col) + 1,
        severity = SEVERITY_NAME[d.severity],
        source = d.source,
        code = d.code,
        message = d.message,
      })
    end
  end
  table.sort(items, function(a, b)
    if a.severity ~= b.severity then
      return SEVERITY[a.severity] < SEVERITY[b.severity]
    end
    if a.path ~= b.path then
      return a.path < b.path
    end
    return a.line < b.line
  end)
  local count = #items
  for i = count, MAX_DIAGNOSTICS + 1, -1 do
    items[i] = nil
  end
  done({ diagnostics = items, count = count, omitted = count - #items })
end

function handlers.get_open_buffers(args, done)
  local current = vim.api.nvim_get_current_buf()
  if vim.bo[current].buftype ~= '' then -- in the agent's terminal: the window the user came from
    local previous = vim.fn.win_getid(vim.fn.winnr('#'))
    current = previous ~= 0 and vim.api.nvim_win_get_buf(previous) or current
  end
  local items = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local path = vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buflisted and buffer_path(buf, args.buffers)
    local rel = path and relative(path, args.roots)
    if rel then
      local wins = vim.fn.win_findbuf(buf)
      local cursor = #wins > 0 and vim.api.nvim_win_get_cursor(wins[1]) or vim.api.nvim_buf_get_mark(buf, '"')
      table.insert(items, {
        path = rel,
        modified = vim.bo[buf].modified,
        visible = #wins > 0,
        current = buf == current,
        cursor = { line = math.max(cursor[1], 1), column = cursor[2] + 1 },
        filetype = vim.bo[buf].filetype,
        line_count = vim.api.nvim_buf_line_count(buf),
      })
    end
  end
  done({ buffers = items })
end

function handlers.read_buffer(args, done)
  local buf = loaded_buffer(args.path, args.buffers)
  local disk = args.file.data ---@type string?
  local own = buf and answers(buf, args.file) -- else the file's bytes, even if it is open
  if not own and not disk then
    return done(nil, args.file.error)
  end
  local lines = not own and vim.split(disk:gsub('\r?\n$', ''), '\r?\n') or nil
  local total = own and vim.api.nvim_buf_line_count(buf) or #lines
  local first = math.min(args.start_line or 1, math.max(total, 1))
  local last = math.min(args.end_line or total, total)
  local unsaved = false
  if own then
    -- Only the lines asked for, and no more bytes than a tool reads of a file: a buffer with
    -- unsaved edits is the user's text, as large as they made it.
    local offset = vim.api.nvim_buf_get_offset
    local asked = offset(buf, last) - offset(buf, first - 1)
    if asked > args.max_bytes then
      local why = 'lines %d-%d are more than the %d MiB a tool reads: ask for fewer (start_line, end_line)'
      return done(nil, why:format(first, last, args.max_bytes / 1024 / 1024))
    end
    lines = vim.api.nvim_buf_get_lines(buf, first - 1, last, false)
    -- Only a range of the file was read (tools.py): its other lines are unknown, not unsaved. A
    -- buffer far larger than the file's bytes cannot hold them: not compared line by line.
    local far_larger = disk and offset(buf, total) > 2 * #disk + total
    unsaved = disk == nil or args.file.partial or far_larger or not holds(buf, disk)
  end
  local more = not own and args.file.partial or nil
  done({
    path = relative(args.path, args.roots),
    text = table.concat(own and lines or vim.list_slice(lines, first, last), '\n'),
    start_line = first,
    end_line = last,
    line_count = not more and total or nil, -- unknown when the file goes on past what was read
    more_lines = more,
    open_in_editor = buf ~= nil,
    unsaved_edits = unsaved,
  })
end

--- The file's buffer, loaded hidden if needed, once a language server that can answer `method`
--- is attached (bounded): done(buf, nil) or done(nil, why).
---@param args table the tool's arguments: path, file, roots
---@param method string
---@param done fun(buf: integer?, err: string?)
local function lsp_buffer(args, method, done)
  local buf = loaded_buffer(args.path, args.buffers)
  if buf and not answers(buf, args.file) then -- the file changed since, or a reload went elsewhere
    if not ours[buf] or #vim.fn.win_findbuf(buf) > 0 then -- the user's, or shown: theirs to reload
      return done(
        nil,
        ("'%s' is open unchanged in the editor but is not the file on disk: reload it (:edit)"):format(
          relative(args.path, args.roots)
        )
      )
    end
    ours[buf].users = ours[buf].users + 1
    release(buf, true) -- hidden and ours: loaded anew
    buf = nil
  elseif buf and ours[buf] then -- another call's hidden buffer: kept until both are done
    ours[buf].users = ours[buf].users + 1
  end
  if not buf then
    local err
    buf, err = load(args.path, args.file, args.roots) -- its FileType autocommands start the servers
    if not buf then
      return done(nil, err)
    end
  end
  local started = vim.uv.hrtime()
  local function try()
    if not vim.api.nvim_buf_is_valid(buf) then -- another call found the file changed and let it go
      return done(nil, ("'%s' changed while it was being opened"):format(relative(args.path, args.roots)))
    end
    if #vim.lsp.get_clients({ bufnr = buf, method = method }) > 0 then
      return done(buf)
    end
    if (vim.uv.hrtime() - started) / 1e6 > ATTACH_TIMEOUT_MS then
      local any = #vim.lsp.get_clients({ bufnr = buf }) > 0
      local filetype = vim.bo[buf].filetype
      release(buf)
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
local function utf16(text, character)
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
local function request(buf, method, params, done)
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
local function resolve_names(results, shape, done)
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
  realpaths(names, function(real)
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
local function inside(uri, roots)
  local ok, name = pcall(vim.uri_to_fname, uri)
  local path = ok and resolved[name]
  local rel = path and relative(path, roots)
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
local function location(uri, range, roots, buffers)
  local path, rel = inside(uri, roots)
  if not path then
    return nil
  end
  local buf = loaded_buffer(path, buffers)
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
local function locations(results, roots, buffers)
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
      local item = location(loc.uri or loc.targetUri, loc.range or loc.targetSelectionRange, roots, buffers)
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
local function position_tool(method, shape)
  return function(args, done)
    lsp_buffer(args, method, function(buf, err)
      if not buf then
        return done(nil, err)
      end
      local text = vim.api.nvim_buf_get_lines(buf, args.line - 1, args.line, false)[1]
      if not text then
        release(buf)
        return done(nil, ('line %d is past the end of the file'):format(args.line))
      end
      local params = {
        textDocument = { uri = vim.uri_from_bufnr(buf) },
        position = { line = args.line - 1, character = utf16(text, args.character) },
        context = { includeDeclaration = true },
      }
      request(buf, method, params, function(results, rerr)
        if not results then
          release(buf)
          return done(nil, rerr)
        end
        resolve_names(results, function()
          return shape(results, args)
        end, function(answer, serr)
          release(buf) -- after shape: a location's line may be this buffer's
          done(answer, serr)
        end)
      end)
    end)
  end
end

handlers.lsp_definition = position_tool('textDocument/definition', function(results, args)
  local items, outside = locations(results, args.roots, args.buffers)
  return { definitions = items, outside_workspace = outside }
end)

handlers.lsp_references = position_tool('textDocument/references', function(results, args)
  local items, outside = locations(results, args.roots, args.buffers)
  return { references = items, count = #items, outside_workspace = outside }
end)

handlers.lsp_hover = position_tool('textDocument/hover', function(results)
  local parts = {}
  for _, answer in pairs(results) do
    local contents = answer.result and answer.result.contents
    if type(contents) == 'string' then
      table.insert(parts, contents)
    elseif type(contents) == 'table' then
      if contents.value then
        table.insert(parts, contents.value)
      else
        for _, item in ipairs(contents) do
          table.insert(parts, type(item) == 'string' and item or item.value)
        end
      end
    end
  end
  return { hover = table.concat(parts, '\n\n') }
end)

---@param symbols table[]
---@param container? string
---@param out table[]
---@param roots string[]
---@param path? string The document's path (DocumentSymbol has no location of its own).
local function flatten(symbols, container, out, roots, path)
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
      item.path = select(2, inside(s.location.uri, roots))
    else
      item.path = path
    end
    if item.path then
      table.insert(out, item)
    end
    if s.children then
      flatten(s.children, s.name, out, roots, path)
    end
  end
end

--- The symbols of every server's answer, flattened, their files named inside the roots.
---@param results table? the answers by client id (nil: the request failed)
---@param err string?
---@param roots string[]
---@param file string? the document's name (document symbols carry no location of their own)
---@param done fun(result: table?, err: string?)
local function symbols(results, err, roots, file, done)
  if not results then
    return done(nil, err)
  end
  resolve_names(results, function()
    local out = {}
    for _, answer in pairs(results) do
      flatten(answer.result or {}, nil, out, roots, file)
    end
    return { symbols = out, count = #out }
  end, done)
end

function handlers.lsp_document_symbols(args, done)
  local method = 'textDocument/documentSymbol'
  lsp_buffer(args, method, function(buf, err)
    if not buf then
      return done(nil, err)
    end
    request(buf, method, { textDocument = { uri = vim.uri_from_bufnr(buf) } }, function(results, rerr)
      release(buf)
      symbols(results, rerr, args.roots, relative(args.path, args.roots), done)
    end)
  end)
end

function handlers.lsp_workspace_symbols(args, done)
  local method = 'workspace/symbol'
  local client = vim.lsp.get_clients({ method = method })[1]
  local buf = client and next(client.attached_buffers or {})
  if not buf then
    return done(nil, 'no language server that answers workspace/symbol is attached (open a file of the project)')
  end
  request(buf, method, { query = args.query }, function(results, err)
    symbols(results, err, args.roots, nil, done)
  end)
end

function handlers.open_file(args, done)
  if not require('gemini_companion.config').options.tools.open_file then
    return done(nil, 'open_file is turned off in this editor (tools.open_file)')
  end
  local target = nil
  local previous = vim.fn.win_getid(vim.fn.winnr('#'))
  for _, win in ipairs({ vim.api.nvim_get_current_win(), previous, unpack(vim.api.nvim_tabpage_list_wins(0)) }) do
    local buf = win ~= 0 and vim.api.nvim_win_get_buf(win)
    if buf and vim.bo[buf].buftype == '' and vim.api.nvim_win_get_config(win).relative == '' then
      target = win
      break
    end
  end
  local buf = loaded_buffer(args.path, args.buffers)
  if not buf then
    local err
    buf, err = load(args.path, args.file, args.roots)
    if not buf then
      return done(nil, err)
    end
  end
  if ours[buf] then -- shown to the user: theirs from now on, with a swap file as they set
    ours[buf] = nil
    vim.bo[buf].swapfile = vim.go.swapfile
  end
  vim.bo[buf].buflisted = true
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  if not target then -- only the agent on screen: a split beside it, focus stays
    target = vim.api.nvim_open_win(buf, false, { split = 'left', win = -1 })
  end
  local ok, werr = pcall(vim.api.nvim_win_set_buf, target, buf)
  if not ok then
    return done(nil, tostring(werr))
  end
  if vim.api.nvim_buf_get_changedtick(buf) ~= tick and not answers(buf, args.file) then
    -- Shown, the file's time was checked and 'autoread' reloaded it through what its name points
    -- at now: not the bytes tools.py read. It goes, as it came.
    pcall(vim.api.nvim_buf_delete, buf, { force = true, unload = true })
    return done(nil, ("'%s' changed while it was being opened"):format(relative(args.path, args.roots)))
  end
  local line = math.min(args.line or 1, vim.api.nvim_buf_line_count(buf))
  vim.api.nvim_win_set_cursor(target, { line, 0 })
  vim.api.nvim_win_call(target, function()
    vim.cmd('normal! zz')
  end)
  done({ opened = relative(args.path, args.roots), line = line })
end

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
  local handler = handlers[name]
  if not handler then
    return reply(id, nil, 'unknown tool ' .. name)
  end
  resolve_buffers(args.roots or {}, function(buffers)
    args.buffers = buffers
    local ok, err = pcall(handler, args, function(result, why)
      reply(id, result, why)
    end)
    if not ok then
      reply(id, nil, tostring(err))
    end
  end)
end

return M

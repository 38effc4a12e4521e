--- get_diagnostics: the diagnostics of the workspace (or one open file), worst first, bounded.
local paths = require('gemini_companion.tools.paths')

local MAX_DIAGNOSTICS = 500
local SEVERITY = { error = 1, warning = 2, info = 3, hint = 4 }
local SEVERITY_NAME = { 'error', 'warning', 'info', 'hint' }

return function(args, done)
  local worst = SEVERITY[args.severity or 'hint']
  local buf = nil
  if args.path then
    buf = paths.loaded_buffer(args.path, args.buffers)
    if not buf then
      return done({ diagnostics = {}, count = 0, omitted = 0, note = 'the file is not open in the editor' })
    end
  end
  local items = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local path = d.severity <= worst and paths.buffer_path(d.bufnr, args.buffers)
    local rel = path and paths.relative(path, args.roots)
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

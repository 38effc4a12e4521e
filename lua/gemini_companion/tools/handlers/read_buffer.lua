--- read_buffer: a file's lines as the user has them (unsaved edits included), bounded as a file is.
local buffer_bytes = require('gemini_companion.tools.buffer_bytes')
local paths = require('gemini_companion.tools.paths')

return function(args, done)
  local buf = paths.loaded_buffer(args.path, args.buffers)
  local disk = args.file.data ---@type string?
  local own = buf and buffer_bytes.answers(buf, args.file) -- else the file's bytes, even if it is open
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
    -- An unmodified buffer answers only by holding the file's bytes (`answers`): nothing unsaved,
    -- and no second comparison of every byte. Only a range of the file was read (tools.py): its
    -- other lines are unknown, not unsaved. A buffer far larger than the file's bytes cannot hold
    -- them: not compared line by line.
    local far_larger = disk and offset(buf, total) > 2 * #disk + total
    unsaved = vim.bo[buf].modified
      and (disk == nil or args.file.partial or far_larger or not buffer_bytes.holds(buf, disk))
  end
  local more = not own and args.file.partial or nil
  done({
    path = paths.relative(args.path, args.roots),
    text = table.concat(own and lines or vim.list_slice(lines, first, last), '\n'),
    start_line = first,
    end_line = last,
    line_count = not more and total or nil, -- unknown when the file goes on past what was read
    more_lines = more,
    open_in_editor = buf ~= nil,
    unsaved_edits = unsaved,
  })
end

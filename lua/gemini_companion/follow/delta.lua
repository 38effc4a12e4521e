--- Whether a followed buffer already holds its file's new bytes and, when not, the lines to
--- change, worked out without holding Neovim's main loop (1.3 MB held it 50 ms). A fingerprint
--- (changedtick and the options that shape its bytes) says "the buffer still holds the bytes it
--- last matched", kept with them: equal bytes are one compare (Lua strings are interned), and the
--- diff (vim.diff, in a libuv thread) starts from them. A buffer changed since is gathered a
--- slice of the loop at a time instead. Only UTF-8 without a byte order mark, unix or dos lines:
--- the rest is judged on the main loop as before (reload.lua).
local slices = require('gemini_companion.follow.slices')

local M = {}

-- Lines gathered at a time, and main-loop time one slice of gathering may take.
local PIECE = 2000
local SLICE_NS = 1e6

---@class gemini_companion.follow.Plan
---@field tick integer the buffer's changedtick the plan was made against
---@field ops string the changes, last first: "start,count,from,to,lines;" each (reload.apply)
---@field source string the new lines, LF-separated (`from`/`to` index it)
---@field eol boolean whether the file ends with a line ending
---@field sig? string the file's stat signature when it was read (set by follow/init.lua)

---@class gemini_companion.follow.Matched
---@field at string the buffer's fingerprint when it held `text`
---@field text string its file's bytes then

local work ---@type uv.luv_work_ctx_t?
local waiting, last = {}, 0 ---@type table<integer, fun(...)>, integer callbacks of the queued jobs
local gather, job -- below the public functions
local CHANGES -- M.changes's bytecode, passed to the thread with each job (set below it)

--- Whether `buf` is one the thread can judge (others: reload.holds and reload.apply).
---@param buf integer
---@return boolean
function M.fits(buf)
  local bo = vim.bo[buf]
  return not bo.bomb
    and (bo.fileencoding == '' or bo.fileencoding == 'utf-8')
    and (bo.fileformat == 'unix' or bo.fileformat == 'dos')
    and vim.api.nvim_buf_line_count(buf) > 1 -- (an empty file and a lone newline read alike)
end

--- What `buf` is now (its changedtick and the options that shape its bytes): while it is the
--- same, the buffer holds the same bytes.
---@param buf integer
---@return string
function M.fingerprint(buf)
  local bo = vim.bo[buf]
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  return ('%d:%s:%s:%s:%s'):format(tick, bo.fileformat, bo.fileencoding, bo.eol, bo.binary)
end

--- Judge `text` (the file's new bytes) against `buf` without holding the main loop; `done` runs
--- on it with 'same' (the buffer holds them), 'differs' and a plan, 'moved' (the buffer changed
--- meanwhile), or 'unsure' (bytes Neovim must read itself: reload.lua judges). `matched`: what
--- the buffer last matched, if known.
---@param buf integer
---@param text string
---@param matched? gemini_companion.follow.Matched
---@param done fun(verdict: 'same'|'differs'|'moved'|'unsure', plan: gemini_companion.follow.Plan?)
function M.judge(buf, text, matched, done)
  local dos = vim.bo[buf].fileformat == 'dos'
  local at = M.fingerprint(buf)
  local function verdict(tick)
    return function(v, ops, eol, source)
      local ok, moved = pcall(function()
        return not vim.api.nvim_buf_is_loaded(buf) or M.fingerprint(buf) ~= at
      end)
      local plan = ops and { tick = tick, ops = ops, source = source ~= '' and source or text, eol = eol }
      done(not ok and 'unsure' or moved and 'moved' or v, ok and not moved and plan or nil)
    end
  end
  if matched and matched.at == at then -- the buffer holds matched.text
    if matched.text == text then
      return done('same')
    end
    return job({ text, dos, matched.text, true, vim.bo[buf].eol }, verdict(vim.api.nvim_buf_get_changedtick(buf)))
  end
  gather(buf, function(old, tick, eol)
    if not old then
      return done('moved')
    end
    job({ text, dos, old, false, eol }, verdict(tick))
  end)
end

--- `buf`'s lines joined with LF (and one at the end), a slice of the loop at a time, its
--- changedtick and 'eol'; nil when it changed meanwhile (its changedtick moved), went, or failed.
---@param buf integer
---@param done fun(old: string?, tick: integer?, eol: boolean?)
function gather(buf, done)
  local pieces, next_line = {}, 0
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  -- True when all is gathered.
  local function some()
    local started, count = vim.uv.hrtime(), vim.api.nvim_buf_line_count(buf)
    while next_line < count and vim.uv.hrtime() - started < SLICE_NS do
      local lines = vim.api.nvim_buf_get_lines(buf, next_line, math.min(next_line + PIECE, count), true)
      pieces[#pieces + 1] = table.concat(lines, '\n')
      next_line = next_line + #lines
    end
    return next_line >= count
  end
  local function step()
    local moved = not vim.api.nvim_buf_is_loaded(buf) or vim.api.nvim_buf_get_changedtick(buf) ~= tick
    local ok, all = pcall(some)
    if moved or not ok then
      return done(nil)
    elseif not all then
      return vim.defer_fn(step, 0) -- keys and redraws first
    end
    done(table.concat(pieces, '\n') .. '\n', tick, vim.bo[buf].eol)
  end
  step()
end

--- Run the thread's work on `args`; `done` gets its results on the main loop (jobs may end in
--- any order: each carries its callback's number).
---@param args any[]
---@param done fun(...)
function job(args, done)
  last = last + 1
  local id = last
  waiting[id] = done
  work = work
    or vim.uv.new_work(M.work, function(n, ...)
      local callback = waiting[n]
      waiting[n] = nil
      local results = { ... }
      slices.soon(function()
        callback(unpack(results, 1, 4))
      end)
    end)
  work:queue(id, CHANGES, unpack(args, 1, 5))
end

--- The thread's work (it sees only its arguments: no upvalues, the thread's own `vim`).
--- Returns the job's number, then the verdict ('same', 'differs', 'unsure': also when it
--- failed), and for 'differs' the changes, 'eol' and the LF lines of a dos file ('' for a unix
--- one: its own bytes).
---@param id integer
---@param changes string M.changes's bytecode
---@param ... any text: string, dos: boolean, old: string, raw: boolean (`old` is the file's bytes
--- the buffer holds; else its lines LF-joined with a final LF), old_eol: boolean (its 'eol')
function M.work(id, changes, ...)
  -- `bytes` as Neovim reads them (as reload.lines): LF lines with a final LF, and whether the
  -- last line ended; nil when Neovim must judge.
  local function lines(bytes, dos)
    local eol = bytes:sub(-1) == '\n'
    local body = eol and bytes:sub(1, -2) or bytes
    if bytes == '' or bytes:sub(1, 3) == '\239\187\191' then
      return nil
    elseif dos then
      if (eol and body:sub(-1) ~= '\r') or body:gsub('\r\n', ''):find('[\r\n]') then
        return nil
      end
      body = (eol and body:sub(1, -2) or body):gsub('\r\n', '\n')
    elseif bytes:find('\r\n', 1, true) then
      return nil
    end
    return body .. '\n', eol
  end
  local function judge(text, dos, old, raw, old_eol)
    local new, eol = lines(text, dos)
    if raw then
      old = lines(old, dos)
    end
    if not new or not old then
      return 'unsure'
    elseif new == old and eol == old_eol then
      return 'same'
    end
    local hunks = vim.diff(old, new, { result_type = 'indices' }) --[[@as integer[][] ]]
    return 'differs', load(changes)(hunks, new), eol, dos and new:sub(1, -2) or ''
  end
  local ok, verdict, ops, eol, source = pcall(judge, ...)
  if not ok then
    return id, 'unsure'
  end
  return id, verdict, ops, eol, source
end

--- The changes of a plan (its `ops`) from `hunks`, vim.diff's indices from old lines to `new` (LF
--- lines with a final LF): each hunk as changes of at most OP lines in and out, each with the byte
--- span of its new lines; last hunk first. Run in M.work's thread, loaded from its bytecode (a
--- thread sees no upvalues and cannot require this plugin).
---@param hunks integer[][]
---@param new string
---@return string
function M.changes(hunks, new)
  local OP = 1000 -- lines one change puts in or takes out at most
  local line, at = 1, 1 -- new line `line` begins at `at`; asked in order
  local function start_of(n)
    while line < n do
      at = new:find('\n', at, true) + 1
      line = line + 1
    end
    return at
  end
  local out = {}
  for _, hunk in ipairs(hunks) do
    local a, count_a, b, count_b = hunk[1], hunk[2], hunk[3], hunk[4]
    local pos = count_a == 0 and a or a - 1
    local ops = {}
    repeat
      local take_out, put_in = math.min(OP, count_a), math.min(OP, count_b)
      local from = put_in > 0 and start_of(b) or 0
      local to = put_in > 0 and start_of(b + put_in) - 2 or -1
      ops[#ops + 1] = ('%d,%d,%d,%d,%d;'):format(pos, take_out, from, to, put_in)
      pos, b = pos + put_in, b + put_in
      count_a, count_b = count_a - take_out, count_b - put_in
    until count_a == 0 and count_b == 0
    out[#out + 1] = table.concat(ops)
  end
  -- Last hunk first: the line numbers above a change stay valid.
  local reversed = {}
  for i = #out, 1, -1 do
    reversed[#reversed + 1] = out[i]
  end
  return table.concat(reversed)
end

CHANGES = string.dump(M.changes)

return M

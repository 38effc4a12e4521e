--- The CLIs' session files and listers, off Neovim's main loop: programs/sessions_list.py (on the
--- host's Python) reads Gemini's files (newest first, each only as far as its title needs), runs
--- Qwen's lister, and sweeps Gemini's resume orphan. It answers one JSON object a line, every text
--- already one safe line. A run that does not end in time is ended with its whole process group
--- and answered in one line.
local M = {}

M.LIMIT = 100 -- sessions listed, newest first

--- Run the program with `args`; `done(records)` or `done(nil, why)` once, on the main loop.
---@param args string[]
---@param opts {timeout_ms: integer, cwd?: string, env?: table<string, string>}
---@param done fun(records: table[]?, err: string?)
function M.run(args, opts, done)
  local host = require('gemini_companion.host')
  local python = host.python()
  if vim.fn.executable(python) == 0 then
    return done(nil, ('the Python host %s does not exist: %s'):format(python, host.install_hint()))
  end
  local answered, timer = false, nil
  local function answer(records, err)
    if answered then
      return
    end
    answered = true
    if timer and not timer:is_closing() then
      timer:stop()
      timer:close()
    end
    done(records, err)
  end
  -- -I: the agent's environment (PYTHONPATH, …) reaches the lister it runs, not our Python.
  -- detach: a process group of its own, so the time limit ends all of it.
  local argv = vim.list_extend({ python, '-I', host.plugin .. '/programs/sessions_list.py' }, args)
  local ok, proc = pcall(vim.system, argv, { cwd = opts.cwd, env = opts.env, text = true, detach = true }, function(out)
    vim.schedule(function()
      answer(M.decode(out.stdout or '', out.code))
    end)
  end)
  if not ok then
    return answer(nil, tostring(proc))
  end
  timer = vim.defer_fn(function()
    pcall(vim.uv.kill, -proc.pid, 'sigkill')
    answer(nil, ('no answer in %d s'):format(math.ceil(opts.timeout_ms / 1000)))
  end, opts.timeout_ms)
end

--- The program's answer: its records, or why there are none.
---@param stdout string
---@param code integer
---@return table[]? records, string? err
function M.decode(stdout, code)
  local records = {}
  for line in stdout:gmatch('[^\n]+') do
    local ok, record = pcall(vim.json.decode, line)
    if ok and type(record) == 'table' then
      if type(record.error) == 'string' then
        return nil, record.error
      end
      table.insert(records, record)
    end
  end
  if code ~= 0 and #records == 0 then
    return nil, ('the lister ended with exit code %d'):format(code)
  end
  return records
end

return M

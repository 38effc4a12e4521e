-- Sends to one agent go one at a time (agents/send_queue.lua): a job's turn ends once, however
-- often its `done` is called or it raises.
local send_queue = require('gemini_companion.agents.send_queue')

--- `fn()` with vim.notify recording the lines it is given.
local function said(fn)
  local lines, notify = {}, vim.notify
  vim.notify = function(text) ---@diagnostic disable-line: duplicate-set-field
    table.insert(lines, text)
  end
  local ok, err = pcall(fn)
  vim.notify = notify
  assert(ok, err)
  return lines
end

return {
  a_turn_ends_once_however_often_it_is_ended = function()
    local agent, ran, later = { name = 'a' }, {}, nil
    local lines = said(function()
      send_queue.run(agent, function(done, guard)
        table.insert(ran, 'first')
        later = guard(function()
          done()
          done()
          error('after its end')
        end)
      end)
      for _, name in ipairs({ 'second', 'third' }) do
        send_queue.run(agent, function(done)
          table.insert(ran, name)
          if name == 'third' then
            done()
          end
        end)
      end
      later()
    end)
    -- `second` never ends its turn: `third` waits for it, however often `first` ended its own.
    assert(vim.deep_equal(ran, { 'first', 'second' }), vim.inspect(ran))
    assert(#lines == 1 and lines[1]:find('a: a send did not go: .*after its end$'), vim.inspect(lines))
  end,
  a_job_that_raises_at_once_lets_the_next_go = function()
    local agent, ran = { name = 'b' }, {}
    local lines = said(function()
      send_queue.run(agent, function()
        error({ 'not a string' })
      end)
      send_queue.run(agent, function(done)
        table.insert(ran, 'next')
        done()
      end)
    end)
    assert(vim.deep_equal(ran, { 'next' }), vim.inspect(ran))
    assert(#lines == 1 and lines[1]:find('b: a send did not go: table'), vim.inspect(lines))
  end,
}

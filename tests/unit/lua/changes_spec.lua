-- Neovim keeps the last changes.max_turns ended turns, and nothing of those it let go (a day of
-- 2,000 turns kept every one for the diff buffers: bench_day.py).
local changes = require('gemini_companion.changes')
local view = require('gemini_companion.changes.view')

return {
  a_day_of_turns_keeps_only_the_last_max_turns = function()
    local max = require('gemini_companion.config').options.changes.max_turns
    for id = 1, max * 3 do
      changes.turn_ended({ id = id, agent = 'gemini', files = {}, skipped = {}, open = false })
    end
    assert(#changes.turns == max, #changes.turns)
    assert(changes.turns[1].id == max * 2 + 1, changes.turns[1].id)
    local shown = vim.tbl_keys(view.shown)
    table.sort(shown)
    assert(#shown == max and shown[1] == max * 2 + 1, vim.inspect(shown))
    -- A turn told again (overlap.py) replaces the one kept, in place; one let go stays gone.
    local again = { id = max * 3, agent = 'gemini', files = { { path = 'x' } }, skipped = {}, again = true }
    changes.turn_ended(again)
    assert(#changes.turns == max and changes.turns[max].files[1].path == 'x')
    assert(view.shown[max * 3].files[1].path == 'x')
    changes.turn_ended(vim.tbl_extend('force', again, { id = 1 }))
    assert(#changes.turns == max and changes.turns[1].id == max * 2 + 1 and not view.shown[1])
    -- A changes window of a turn let go: `revert` says so, and takes back nothing of another turn.
    vim.b.gemini_changes = { turn = 1, path = 'x' }
    local said, notify = nil, vim.notify
    vim.notify = function(text)
      said = text
    end
    local ok, err = pcall(changes.command, { 'revert' })
    vim.notify, vim.b.gemini_changes = notify, nil
    assert(ok, err)
    assert(said == 'gemini-companion: turn 1 is no longer kept (changes.max_turns)', said)
  end,
}

-- What an agent's screen says (agents/attention/screen.lua), on screens of the real Gemini CLI
-- 0.61.0 and Qwen Code 0.24.4 captured under tmux with the scripted model (tests/harness/data/screens/:
-- the terminal buffer's lines, as attention.lua reads them). Pure Lua, no agent.
local screen = require('gemini_companion.agents.attention.screen')

local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h') .. '/harness/data/screens'

---@param name string
---@return string[]
local function lines(name)
  return vim.fn.readfile(root .. '/' .. name .. '.txt')
end

local function says(name, state, what, prompt)
  local got = { screen.classify(lines(name)) }
  local want = { state, what, prompt }
  assert(vim.deep_equal(got, want), ('%s: %s ~= %s'):format(name, vim.inspect(got), vim.inspect(want)))
end

return {
  the_prompt_line_says_what_is_typed_in_it = function()
    local typed = screen.typed(lines('qwen-typed-ide-enable'))
    assert(typed == '/ide enable', vim.inspect(typed)) -- Qwen's cursor and its suggestion line below
    assert(screen.typed(lines('gemini-draft')) ~= '/ide enable', 'a draft is not the command')
    assert(screen.typed({ ' > /ide enable and my words' }) == '/ide enable and my words')
  end,
  the_input_box_says_whether_the_prompt_is_empty = function()
    for _, cli in ipairs({ 'gemini', 'qwen' }) do
      local idle, draft = screen.input(lines(cli .. '-idle')), screen.input(lines(cli .. '-draft'))
      assert(idle and idle.empty, cli .. ': the idle prompt is empty')
      assert(draft and not draft.empty and draft.text ~= idle.text, cli .. ': a draft is not')
      assert(screen.input(lines(cli .. '-dialog-edit')) == nil, cli .. ': a dialog draws no input box')
    end
  end,
  the_input_box_alone_is_idle = function()
    says('gemini-idle', 'idle', nil, true)
    says('qwen-idle', 'idle', nil, true)
  end,
  a_draft_with_dialog_words_is_the_users_text = function()
    says('gemini-draft', 'idle', nil, true)
    says('qwen-draft', 'idle', nil, true)
  end,
  output_quoting_dialog_words_and_the_shortcuts_hint_is_no_dialog = function()
    says('gemini-quoted', 'idle', nil, true)
    says('qwen-quoted', 'idle', nil, true)
    says('gemini-shortcuts', 'idle', nil, true)
    says('qwen-shortcuts', 'idle', nil, true)
  end,
  a_dialog_under_quoted_words_says_what_it_asks_without_its_border = function()
    -- Above each dialog: the model's text quoting "Type your message", "? Shell rm -rf / ←"
    -- and "? for shortcuts".
    says('gemini-dialog-shell', 'waiting', 'asks to run: `touch made.txt && echo made`', false)
    says('gemini-dialog-edit', 'waiting', 'asks: WriteFile Writing to w.txt', false)
    says('qwen-dialog-edit', 'waiting', 'asks: WriteFile Writing to w.txt', false)
    says('gemini-ide-nudge', 'waiting', 'asks: Do you want to connect Neovim to Gemini CLI?', false)
  end,
  the_spinner_above_the_input_box_is_working = function()
    says('gemini-working', 'working', nil, true)
    says('qwen-working', 'working', nil, true)
    says('qwen-answered', 'working', nil, true) -- "Waiting for user confirmation... (esc to cancel)"
  end,
  nothing_drawn_says_nothing = function()
    says('gemini-idle', 'idle', nil, true)
    local got = { screen.classify({ '', 'Qwen Code', 'Allow execution of: rm?', '' }) }
    assert(vim.deep_equal(got, { nil, nil, false }), vim.inspect(got))
    got = { screen.classify({}) }
    assert(vim.deep_equal(got, { nil, nil, false }), vim.inspect(got))
  end,
}

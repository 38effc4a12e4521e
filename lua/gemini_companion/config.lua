---@class gemini_companion.Config
---@field auto_start boolean Start the server when Neovim starts.
---@field workspace_folders string[]|fun():string[] Extra workspace roots besides Neovim's working directories.
---@field diff gemini_companion.DiffConfig How proposed edits are shown.
---@field context gemini_companion.ContextConfig What the agent sees of your editor.
---@field agents table<string, gemini_companion.AgentSpec> The agents `:Gemini {name}` runs.
---@field default_agent string The agent `:Gemini` runs without a name.
---@field terminal gemini_companion.TerminalConfig Where agents run.
---@field focus_after_send boolean A send shows the agent and focuses it (false: cursor, window and mode stay).
---@field cli_settings 'ask'|'auto'|'never' Turning IDE mode on in Gemini CLI's user settings before `:Gemini` starts it.
---@field tools gemini_companion.ToolsConfig The model's editor tools.
---@field changes gemini_companion.ChangesConfig What agents changed, turn by turn.
---@field follow gemini_companion.FollowConfig Open buffers follow their files' changes on disk.
---@field resume 'ask'|'always'|'never' What an agent's first `:Gemini` in a new Neovim does with the workspace's last conversation.
---@field notify gemini_companion.NotifyConfig One line when an agent you are not looking at needs you.
---@field log gemini_companion.LogConfig The host's log, for when something is wrong (`:GeminiCompanion log`).

---@class gemini_companion.LogConfig
---@field level 'off'|'error'|'warn'|'info'|'debug'|'trace' What is written: 'warn' only what went wrong, 'debug' every request with its time.

---@class gemini_companion.NotifyConfig
---@field waiting boolean When an agent starts waiting for you (a permission, a question).
---@field finished boolean When an agent ends a turn (with the files it changed).

---@class gemini_companion.ChangesConfig
---@field enabled boolean Register the CLIs' turn hooks (Qwen's session defaults, Gemini's enable-cli).
---@field max_turns integer Turns kept (older snapshots are pruned).
---@field max_file_kb integer Files larger than this are listed as skipped, not tracked.

---@class gemini_companion.FollowConfig
---@field enabled boolean Reload an unmodified buffer when its file changes on disk (an agent's edit).

---@class gemini_companion.ToolsConfig
---@field enabled boolean Register the editor tools with the CLIs (Qwen's session defaults, Gemini's enable-cli).
---@field trust boolean Mark the read-only tools trusted, so the CLI does not ask before each call.
---@field open_file boolean Let the model show you a file (never trusted: the CLI asks first).

---@class gemini_companion.AgentSpec
---@field cmd string[] The command line (no shell).
---@field env? table<string, string> Added to the agent's environment.
---@field window? gemini_companion.WindowConfig This agent's window, over `terminal.window`.
---@field provider? 'native'|'tmux'|'external' Where this agent runs, over `terminal.provider`.
---@field tmux? gemini_companion.TmuxConfig This agent's pane, over `terminal.tmux`.
---@field external? gemini_companion.ExternalConfig This agent's program, over `terminal.external`.

---@class gemini_companion.WindowConfig
---@field position 'right'|'left'|'bottom'|'top'|'float'|'tab'
---@field size number Columns or lines of a split; below 1: a fraction of the screen.
---@field width number A float's width (below 1: fraction of the screen).
---@field height number A float's height (below 1: fraction of the screen).
---@field border string|string[] A float's border (see nvim_open_win()).

---@class gemini_companion.TmuxConfig
---@field position 'right'|'left'|'bottom'|'top' Beside Neovim's pane.
---@field size string|integer Cells, or a percentage ('40%').
---@field keep boolean Leave the agent running when Neovim exits; the next Neovim in this folder takes it back.

---@class gemini_companion.ExternalConfig
---@field cmd? string[]|fun(cmd: string[]): string[] The program; the word '{cmd}' becomes the agent's command.

---@class gemini_companion.TerminalConfig
---@field provider 'native'|'tmux'|'external' A Neovim terminal, a tmux pane beside Neovim, or a program of yours.
---@field window gemini_companion.WindowConfig
---@field tmux gemini_companion.TmuxConfig
---@field external gemini_companion.ExternalConfig
---@field close_on_exit boolean Close an agent's window when its process exits.
---@field back string|false Terminal-mode key, in an agent's window, back to the last editor window.
---@field auto_insert boolean Entering an agent's window starts Terminal mode (false: Normal mode, the view kept).
---@field keys gemini_companion.TerminalKeys Terminal-mode keys in an agent's window.

---@class gemini_companion.TerminalKeys
---@field window string|false Leaves Terminal mode and starts a window command (as CTRL-W does).
---@field normal string|false Leaves Terminal mode (as CTRL-\ CTRL-N does).

---@class gemini_companion.DiffConfig
---@field layout 'vertical'|'horizontal'|'unified' Original and proposal side by side, one above the other, or one read-only `+`/`-` buffer.
---@field open_in_new_tab boolean A review of its own tab (false: in the current tab, beside the agent's window).
---@field focus boolean Switch to a diff's tab when it opens (false: open it in the background and say so).

---@class gemini_companion.ContextConfig
---@field enabled boolean Share open files, cursor and selection with connected clients.
---@field debounce_ms integer Wait this long after a change before sending the new state.
---@field max_files integer Share at most this many files, most recently focused first.
---@field max_selection_bytes integer Cut the shared selection to this many bytes (0: share no selection).
---@field filter? fun(bufnr: integer): boolean Return false to keep a buffer out of the context.
---@field is_trusted? boolean Tell the clients whether the workspace is trusted (nil: say nothing).

local message = require('gemini_companion.message')
local validate = require('gemini_companion.config.validate')

local M = {}

local check, choice, integer_from = validate.check, validate.choice, validate.integer_from
local BOOLEAN, POSITIVE, STRINGS, KEY = validate.BOOLEAN, validate.POSITIVE, validate.STRINGS, validate.KEY
local all_strings = validate.all_strings

-- The schema: every option once, with its default, its check and what it is for. The defaults,
-- the validation (config/validate.lua) and the help's option list all come from here
-- (tests/unit/lua/config_spec.lua holds the LuaCATS classes above and the help to it). A node with `fields` is a table of options;
-- one with `each` a table of named entries; `optional` leaves have no default.

---@class gemini_companion.Option
---@field doc string
---@field default? any
---@field check? gemini_companion.Check
---@field optional? boolean
---@field fields? table<string, gemini_companion.Option>
---@field each? gemini_companion.Option
---@field key? gemini_companion.Check

--- The same options as overrides: none has a default, each may be left out (an agent's own
--- window, provider, tmux and external over the terminal's).
---@param fields table<string, gemini_companion.Option>
---@return table<string, gemini_companion.Option>
local function overrides(fields)
  local out = {}
  for name, option in pairs(fields) do
    out[name] = {
      doc = option.doc,
      check = option.check,
      optional = true,
      fields = option.fields and overrides(option.fields),
    }
  end
  return out
end

--- A feature's options: its own, and `enabled` (on by default; false turns the feature off).
---@param doc string
---@param switch string what `enabled` turns on
---@param fields table<string, gemini_companion.Option>
---@return gemini_companion.Option
local function feature(doc, switch, fields)
  fields.enabled = { doc = switch, default = true, check = BOOLEAN }
  return { doc = doc, fields = fields }
end

local WINDOW = {
  position = choice('Where an agent window opens.', 'right', 'left', 'bottom', 'top', 'float', 'tab'),
  size = { doc = 'Columns or lines of a split; below 1: a fraction of the screen.', default = 0.4, check = POSITIVE },
  width = { doc = "A float's width (below 1: a fraction of the screen).", default = 0.8, check = POSITIVE },
  height = { doc = "A float's height (below 1: a fraction of the screen).", default = 0.8, check = POSITIVE },
  border = { doc = "A float's border (see nvim_open_win()).", default = 'rounded' },
}

-- Where an agent runs: the terminal's, or one agent's override of it.
local PLACE = {
  provider = choice(
    'A Neovim terminal, a tmux pane beside Neovim, or a program of yours.',
    'native',
    'tmux',
    'external'
  ),
  tmux = {
    doc = "The agent's tmux pane.",
    fields = {
      position = choice("Beside Neovim's pane.", 'right', 'left', 'bottom', 'top'),
      size = {
        doc = "Cells, or a percentage ('40%').",
        default = '40%',
        check = check("cells or a percentage ('40%')", function(v)
          return (type(v) == 'number' and v >= 1 and v == math.floor(v) and v < math.huge)
            or (type(v) == 'string' and v:match('^%d+%%?$') ~= nil)
        end),
      },
      keep = {
        doc = 'Leave the agent running when Neovim exits; the next Neovim in this folder takes it back.',
        default = false,
        check = BOOLEAN,
      },
    },
  },
  external = {
    doc = 'The program that runs an agent (provider external).',
    fields = {
      cmd = {
        doc = "The program; the word '{cmd}' becomes the agent's command.",
        optional = true,
        check = check('a list of strings or a function', function(v)
          return type(v) == 'function' or STRINGS.ok(v)
        end),
      },
    },
  },
}

---@type table<string, gemini_companion.Option>
M.schema = {
  auto_start = { doc = 'Start the server when Neovim starts.', default = true, check = BOOLEAN },
  workspace_folders = {
    doc = "Extra workspace roots besides Neovim's working directories.",
    default = {},
    check = check('a list of paths or a function', function(v)
      return type(v) == 'function' or all_strings(v)
    end),
  },
  diff = {
    doc = 'How proposed edits are shown.',
    fields = {
      layout = choice(
        'Original and proposal side by side, one above the other, or one +/- buffer.',
        'vertical',
        'horizontal',
        'unified'
      ),
      open_in_new_tab = { doc = 'A review of its own tab (false: the current tab).', default = true, check = BOOLEAN },
      focus = { doc = "Switch to a diff's tab when it opens.", default = true, check = BOOLEAN },
    },
  },
  context = feature('What the agent sees of your editor.', 'Share open files, cursor and selection.', {
    debounce_ms = { doc = 'Wait this long after a change.', default = 50, check = integer_from(0) },
    max_files = { doc = 'Share at most this many files.', default = 10, check = integer_from(1) },
    max_selection_bytes = { doc = 'Cut the shared selection.', default = 16384, check = integer_from(0) },
    filter = {
      doc = 'Return false to keep a buffer out.',
      optional = true,
      check = check('a function', function(v)
        return type(v) == 'function'
      end),
    },
    is_trusted = { doc = "The workspace's trust, told to the clients.", optional = true, check = BOOLEAN },
  }),
  agents = {
    doc = 'The agents `:Gemini {name}` runs.',
    default = { gemini = { cmd = { 'gemini' } }, qwen = { cmd = { 'qwen' } } },
    key = check("a name of letters, digits, '_', '.' or '-'", function(v)
      return type(v) == 'string' and v:match('^[%w_.-]+$') ~= nil
    end),
    each = {
      doc = 'One agent.',
      fields = vim.tbl_extend('error', {
        cmd = { doc = 'The command line (no shell).', check = STRINGS },
        env = {
          doc = "Added to the agent's environment.",
          optional = true,
          check = check('a table of strings', function(v)
            if type(v) ~= 'table' then
              return false
            end
            for name, value in pairs(v) do
              if type(name) ~= 'string' or not (type(value) == 'string' or type(value) == 'number') then
                return false
              end
            end
            return true
          end),
        },
        window = { doc = "This agent's window.", optional = true, fields = overrides(WINDOW) },
      }, overrides(PLACE)),
    },
  },
  default_agent = { doc = 'The agent `:Gemini` runs without a name.', default = 'gemini' },
  cli_settings = choice("Turning IDE mode on in Gemini CLI's user settings.", 'ask', 'auto', 'never'),
  tools = feature("The model's editor tools.", 'Register the editor tools with the CLIs.', {
    trust = { doc = 'Mark the read-only tools trusted.', default = true, check = BOOLEAN },
    open_file = { doc = 'Let the model show you a file.', default = true, check = BOOLEAN },
  }),
  changes = feature('What agents changed, turn by turn.', "Register the CLIs' turn hooks.", {
    max_turns = { doc = 'Turns kept.', default = 20, check = integer_from(1) },
    max_file_kb = { doc = 'Larger files are listed as skipped.', default = 1024, check = integer_from(1) },
  }),
  follow = feature(
    "Open buffers follow their files' changes on disk.",
    'Reload an unmodified buffer when its file changes.',
    {}
  ),
  notify = {
    doc = 'One line when an agent you are not looking at needs you.',
    fields = {
      waiting = { doc = 'When an agent starts waiting for you.', default = true, check = BOOLEAN },
      finished = { doc = 'When an agent ends a turn.', default = true, check = BOOLEAN },
    },
  },
  log = {
    doc = "The host's log, for when something is wrong.",
    fields = {
      level = choice(
        "What is written: 'warn' only what went wrong, 'debug' every request with its time.",
        'warn',
        'off',
        'error',
        'info',
        'debug',
        'trace'
      ),
    },
  },
  resume = choice("What an agent's first `:Gemini` does with the last conversation.", 'ask', 'always', 'never'),
  focus_after_send = {
    doc = 'A send shows the agent and focuses it.',
    default = false,
    check = BOOLEAN,
  },
  terminal = {
    doc = 'Where agents run.',
    fields = vim.tbl_extend('error', PLACE, {
      window = { doc = "An agent's window.", fields = WINDOW },
      close_on_exit = { doc = "Close an agent's window when its process exits.", default = true, check = BOOLEAN },
      back = {
        doc = "Terminal-mode key, in an agent's window, back to the last editor window.",
        default = '<C-\\><C-w>',
        check = KEY,
      },
      auto_insert = {
        doc = "Entering an agent's window starts Terminal mode.",
        default = true,
        check = BOOLEAN,
      },
      keys = {
        doc = "Terminal-mode keys in an agent's window.",
        fields = {
          window = { doc = 'Leaves Terminal mode and starts a window command.', default = '<C-w>', check = KEY },
          normal = { doc = 'Leaves Terminal mode.', default = false, check = KEY },
        },
      },
    }),
  },
}

---@type gemini_companion.Config The defaults, from the schema (set below).
M.defaults = nil

---@type gemini_companion.Config
M.options = nil

--- Merge `opts` over the defaults. A wrong value raises a readable error naming the option; an
--- unknown key is dropped with a one-line warning naming the nearest valid key (a typo in one
--- option should not take the whole setup down).
---@param opts? table
function M.set(opts)
  opts = opts or {}
  if type(opts) ~= 'table' then
    validate.fail('opts', 'a table', opts)
  end
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  validate.validate(M.schema, merged, '')
  if not merged.agents[merged.default_agent] then
    validate.fail('default_agent', 'the name of an agent', merged.default_agent)
  end
  M.options = merged
end

M.defaults = validate.defaults(M.schema)
M.options = validate.defaults(M.schema)

-- Options setup() kept at startup (so that startup loads nothing but init.lua) are checked now, at
-- their first use: a wrong one is one line, and the defaults stand.
local companion = package.loaded['gemini_companion']
local pending = companion and companion.take_pending and companion.take_pending()
if pending then
  local ok, err = pcall(M.set, pending.opts)
  if not ok then
    message.notify(tostring(err), 'error')
  end
end

return M

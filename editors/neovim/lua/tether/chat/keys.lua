--- The chat buffer's keys (`:help tether-chat`). Each acts on what the cursor's row is about: the
--- prompt below the separator, a tool card, one of its hunks, or its approval question.
local M = {}

local api = vim.api

local function chat_ui()
  return require('tether.chat')
end

--- What the cursor's row in `chat` is about (nil in the prompt or on plain text).
local function here(chat)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  return chat.rows[row]
end

local function in_prompt(chat)
  local sep = api.nvim_buf_get_extmark_by_id(chat.bufnr, chat_ui().ns, chat.sep, {})[1]
  return api.nvim_win_get_cursor(0)[1] - 1 > sep
end

local function on(chat, what, fn)
  return function()
    local at = here(chat)
    if not at then
      return require('tether.log').error('nothing to ' .. what .. ' here: move to a tool line, a hunk or a question')
    end
    fn(at)
  end
end

local function toggle_output(chat, at)
  at.card.show_output = not at.card.show_output
  chat_ui().redraw(chat)
end

---@param chat tether.Chat
function M.attach(chat)
  local ui = chat_ui()
  local function map(modes, lhs, fn, desc)
    vim.keymap.set(modes, lhs, fn, { buffer = chat.bufnr, desc = 'tether chat: ' .. desc, nowait = true })
  end
  map('n', '<CR>', function()
    if in_prompt(chat) then
      return ui.send(chat)
    end
    local at = here(chat)
    if at and at.card.output then
      return toggle_output(chat, at)
    end
    pcall(vim.cmd, 'normal! ' .. vim.v.count1 .. '+') -- elsewhere <CR> moves down, as it always does
  end, 'send the prompt (on a tool line: show or hide its output)')
  map({ 'n', 'i' }, '<C-s>', function()
    if api.nvim_get_mode().mode:sub(1, 1) == 'i' then
      vim.cmd.stopinsert()
    end
    ui.send(chat)
  end, 'send the prompt')
  map('n', '<C-c>', function()
    ui.cancel(chat)
  end, 'stop the running turn')
  -- ga / gA / gr: one meaning on a question (the approval choice), another on a hunk or card line.
  for _, key in ipairs({
    {
      lhs = 'ga',
      verb = 'accept',
      title = 'Allow once',
      command = 'tether.accept',
      desc = 'accept the hunk (on the tool line: every hunk) or allow the question once',
    },
    { lhs = 'gA', verb = 'allow', title = 'Allow for this session', desc = 'allow the question for this session' },
    {
      lhs = 'gr',
      verb = 'reject',
      title = 'Deny',
      command = 'tether.reject',
      desc = 'reject the hunk (on the tool line: every hunk) or deny the question',
    },
  }) do
    local lhs, title, command = key.lhs, key.title, key.command
    map(
      'n',
      lhs,
      on(chat, key.verb, function(at)
        if at.question then
          return ui.answer(at, title)
        end
        if command == nil then
          return require('tether.log').error(lhs .. ' answers a question: move to its line')
        end
        ui.decide(chat, at, command)
      end),
      key.desc
    )
  end
  map(
    'n',
    'gd',
    on(chat, 'open', function(at)
      ui.open_diff(chat, at)
    end),
    'open the proposal in a diff tab'
  )
  map(
    'n',
    '<Tab>',
    on(chat, 'unfold', function(at)
      toggle_output(chat, at)
    end),
    "show or hide a tool call's output"
  )
end

return M

--- Inline previews of pending proposals: the lines a hunk would delete are highlighted, the lines
--- it would add are drawn as virtual lines below them, and a sign marks the hunk.
---
--- Why extmarks and not only the server's diagnostics: a diagnostic shows one message; a reviewer
--- wants to read the proposed code where it would go. Extmarks also move with edits, so "the hunk
--- under the cursor" stays right after the user types above it.
local M = {}

local api = vim.api

M.ns = api.nvim_create_namespace('tether.preview')

--- Per buffer: the hunks drawn, each `{ id, index, mark, anchor_only }`, in buffer order.
---@type table<integer, table[]>
M.drawn = {}

--- Per buffer: the pending proposals (docs/lsp.md objects) for that buffer, from the last refresh.
---@type table<integer, table[]>
M.proposals = {}

--- Link the highlight groups with `default = true` so a colorscheme or the user can override them.
function M.define_highlights()
  local links = {
    TetherAdd = 'DiffAdd',
    TetherDelete = 'DiffDelete',
    TetherSign = 'DiffAdd',
    TetherHint = 'Comment',
    TetherHeader = 'Title',
    TetherOk = 'DiagnosticOk',
    TetherDenied = 'DiagnosticWarn',
    TetherError = 'DiagnosticError',
    TetherTool = 'Function',
    TetherTime = 'Comment',
    TetherStatus = 'StatusLine',
    TetherWorkspace = 'WarningMsg',
  }
  for group, target in pairs(links) do
    api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

--- 0-based rows [first, last) a hunk replaces in the current buffer, from its LSP `range`.
--- A pure insertion has first == last (the row it is inserted before).
---@param hunk table
---@return integer first, integer last
function M.hunk_rows(hunk)
  local r = hunk.range
  local first, last = r.start.line, r['end'].line
  if r['end'].character > 0 then
    last = last + 1
  end
  return first, math.max(first, last)
end

local function expand_tabs(text)
  local width = vim.o.tabstop > 0 and vim.o.tabstop or 8
  return (text:gsub('\t', string.rep(' ', width)))
end

--- Lines of a hunk's `added` list as virtual lines (no trailing newline, tabs expanded: virtual
--- text does not expand them).
---@param hunk table
---@return table virt_lines
function M.virt_lines(hunk)
  local out = {}
  for _, line in ipairs(hunk.added or {}) do
    local text = line:gsub('\r?\n$', '')
    table.insert(out, { { expand_tabs(text), 'TetherAdd' } })
  end
  return out
end

--- Whether a proposal belongs to this buffer. Paths are compared resolved, because the server
--- reports the workspace's real path while the buffer may have been opened through a symlink.
local function same_file(uri, bufnr)
  local ok, fname = pcall(vim.uri_to_fname, uri)
  if not ok then
    return false
  end
  local name = api.nvim_buf_get_name(bufnr)
  if name == '' then
    return false
  end
  local a = vim.uv.fs_realpath(fname) or vim.fs.normalize(fname)
  local b = vim.uv.fs_realpath(name) or vim.fs.normalize(name)
  return a == b
end
M.same_file = same_file

--- Draw the pending hunks of `proposals` that belong to `bufnr`; clears what was drawn before.
---@param bufnr integer
---@param proposals table[] docs/lsp.md Proposal objects (any file; others are ignored)
---@param opts? { sign_text?: string, enabled?: boolean }
function M.render(bufnr, proposals, opts)
  opts = opts or {}
  if not api.nvim_buf_is_valid(bufnr) then
    return
  end
  api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  local mine, drawn = {}, {}
  for _, proposal in ipairs(proposals or {}) do
    if
      proposal.uri
      and same_file(proposal.uri, bufnr)
      and proposal.state ~= 'accepted'
      and proposal.state ~= 'rejected'
    then
      table.insert(mine, proposal)
    end
  end
  M.proposals[bufnr] = mine
  M.drawn[bufnr] = drawn
  -- With previews off the marks are still placed, invisible, so the hunk under the cursor is known.
  local visible = opts.enabled ~= false
  local function look(spec)
    if visible then
      return spec
    end
    return { end_row = spec.end_row, end_col = spec.end_col }
  end
  local line_count = api.nvim_buf_line_count(bufnr)
  for _, proposal in ipairs(mine) do
    local total = #(proposal.hunks or {})
    for _, hunk in ipairs(proposal.hunks or {}) do
      if hunk.state == 'pending' and hunk.range then
        local first, last = M.hunk_rows(hunk)
        first = math.min(first, line_count)
        last = math.min(last, line_count)
        local label = string.format(' %s hunk %d/%d', proposal.id, hunk.index, total)
        local mark
        if last > first then
          -- Delete highlight over the replaced rows. The sign and label get their own mark on the
          -- first row: a ranged mark would put its sign on every row it touches, including `last`.
          mark = api.nvim_buf_set_extmark(
            bufnr,
            M.ns,
            first,
            0,
            look({ end_row = last, end_col = 0, hl_group = 'TetherDelete', hl_eol = true, priority = 150 })
          )
          if visible then
            api.nvim_buf_set_extmark(bufnr, M.ns, first, 0, {
              sign_text = opts.sign_text or '▎',
              sign_hl_group = 'TetherSign',
              virt_text = { { label, 'TetherHint' } },
              virt_text_pos = 'eol',
              priority = 150,
            })
          end
          local lines = M.virt_lines(hunk)
          if visible and #lines > 0 then
            api.nvim_buf_set_extmark(bufnr, M.ns, last - 1, 0, { virt_lines = lines, priority = 150 })
          end
          table.insert(drawn, { id = proposal.id, index = hunk.index, mark = mark, anchor_only = false })
        else
          -- Pure insertion: virtual lines above the row they go before (below the last row at EOF).
          local at_end = first >= line_count
          local row = at_end and math.max(line_count - 1, 0) or first
          mark = api.nvim_buf_set_extmark(
            bufnr,
            M.ns,
            row,
            0,
            look({
              sign_text = opts.sign_text or '▎',
              sign_hl_group = 'TetherSign',
              virt_text = { { label, 'TetherHint' } },
              virt_text_pos = 'eol',
              virt_lines = M.virt_lines(hunk),
              virt_lines_above = not at_end,
              priority = 150,
            })
          )
          table.insert(drawn, { id = proposal.id, index = hunk.index, mark = mark, anchor_only = true })
        end
      end
    end
  end
end

--- The proposal and hunk drawn at 0-based `row` of `bufnr`, using the marks' current positions.
---@param bufnr integer
---@param row integer
---@return table? proposal, table? hunk
function M.hunk_at(bufnr, row)
  for _, d in ipairs(M.drawn[bufnr] or {}) do
    local pos = api.nvim_buf_get_extmark_by_id(bufnr, M.ns, d.mark, { details = true })
    if pos[1] then
      local first = pos[1]
      local last = d.anchor_only and first + 1 or math.max((pos[3] or {}).end_row or first + 1, first + 1)
      if row >= first and row < last then
        for _, p in ipairs(M.proposals[bufnr] or {}) do
          if p.id == d.id then
            for _, h in ipairs(p.hunks or {}) do
              if h.index == d.index then
                return p, h
              end
            end
          end
        end
      end
    end
  end
  return nil, nil
end

--- The pending proposal of `bufnr` to act on when no hunk is under the cursor: the one whose hunk
--- is under the cursor, else the only pending one.
---@param bufnr integer
---@param row integer
---@return table? proposal, string? err
function M.proposal_for(bufnr, row)
  local p = M.hunk_at(bufnr, row)
  if p then
    return p
  end
  local mine = M.proposals[bufnr] or {}
  if #mine == 1 then
    return mine[1]
  end
  if #mine == 0 then
    return nil, 'no pending proposal in this buffer'
  end
  return nil, string.format('%d pending proposals in this buffer: put the cursor on a hunk of the one you mean', #mine)
end

--- Ask the server for the proposals and redraw every buffer attached to `client`.
--- Why coalesced: `tether/event` arrives once per tool call, and an agent turn can make many; one
--- request in flight plus one queued is enough to end up current.
local inflight, queued = {}, {}
---@param client vim.lsp.Client
function M.refresh(client)
  if inflight[client.id] then
    queued[client.id] = true
    return
  end
  inflight[client.id] = true
  require('tether.lsp').exec('tether.proposals', {}, { client = client }, function(err, result)
    inflight[client.id] = nil
    if err then
      require('tether.log').write('warn', 'refresh failed: %s', err)
    else
      local cfg = require('tether.config').get()
      for _, bufnr in ipairs(vim.lsp.get_buffers_by_client_id(client.id)) do
        M.render(bufnr, result.proposals or {}, { sign_text = cfg.sign_text, enabled = cfg.preview })
      end
      require('tether.diff').on_proposals(result.proposals or {})
      api.nvim_exec_autocmds('User', { pattern = 'TetherRefreshed', modeline = false })
    end
    if queued[client.id] then
      queued[client.id] = nil
      M.refresh(client)
    end
  end)
end

return M

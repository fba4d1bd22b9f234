--- `:AgentDiff`: a proposal side by side in a diff tab — the real buffer on the left, the proposed
--- text on the right — so `]c`/`[c`, folds and `:diffget` work as in any Vim diff.
---
--- The right side is the proposed content with every *rejected* hunk reverted, so rejecting a hunk
--- makes its difference disappear and accepting one makes both sides agree; what is still different
--- is exactly what is still pending.
local M = {}

local api = vim.api

local function split_lines(content)
  local lines = vim.split(content or '', '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end
M.split_lines = split_lines

--- Old-side and new-side lines of a hunk's unified `diff` text.
---@param diff string
---@return string[] old, string[] new
function M.hunk_sides(diff)
  local old, new = {}, {}
  for _, line in ipairs(split_lines(diff)) do
    local mark, text = line:sub(1, 1), line:sub(2)
    if mark == ' ' then
      table.insert(old, text)
      table.insert(new, text)
    elseif mark == '-' then
      table.insert(old, text)
    elseif mark == '+' then
      table.insert(new, text)
    end
  end
  return old, new
end

--- The right-hand text and where each hunk sits in it (pure; tested).
---@param proposed string proposedContent from `tether.proposal`
---@param hunks table[] the proposal's hunks
---@return string[] lines, table<integer, {first: integer, last: integer}> spans 1-based inclusive, by hunk index
function M.view(proposed, hunks)
  local lines = split_lines(proposed)
  local sorted = vim.deepcopy(hunks or {})
  table.sort(sorted, function(a, b)
    return a.newStart < b.newStart
  end)
  local spans, delta = {}, 0
  for _, h in ipairs(sorted) do
    local first = h.newStart + delta
    local count = h.newLines
    if h.state == 'rejected' then
      local old, new = M.hunk_sides(h.diff or '')
      -- newStart is the line before the hunk when newLines == 0 (unified diff convention).
      local start = count == 0 and first + 1 or first
      for _ = 1, #new do
        table.remove(lines, start)
      end
      for i, text in ipairs(old) do
        table.insert(lines, start + i - 1, text)
      end
      delta = delta + #old - #new
      count = #old
    end
    spans[h.index] = { first = math.max(first, 1), last = math.max(first + count - 1, first) }
  end
  return lines, spans
end

--- Open diff tabs: right-hand bufnr → `{ id, source, spans, hunks }`.
---@type table<integer, table>
M.tabs = {}

local function fill(right, data, view_lines)
  vim.bo[right].modifiable = true
  api.nvim_buf_set_lines(right, 0, -1, false, view_lines)
  vim.bo[right].modifiable = false
  vim.bo[right].modified = false
  if vim.fn.bufwinid(right) ~= -1 then
    vim.cmd('diffupdate')
  end
  M.tabs[right] = data
end

--- Open `proposal_id` in a new diff tab, its file's buffer on the left (loaded if needed, so the
--- language server attaches and accepted hunks reach it through workspace/applyEdit).
---@param bufnr integer the buffer the command was given in (for finding the client)
---@param proposal_id string
function M.open(bufnr, proposal_id)
  local log = require('tether.log')
  require('tether.lsp').exec('tether.proposal', { id = proposal_id }, { bufnr = bufnr }, function(err, res)
    if err then
      log.error(err)
      return
    end
    local proposal = res.proposal or {}
    local lines, spans = M.view(res.proposedContent or '', proposal.hunks)
    local name = string.format('tether://proposal/%s/%s', proposal_id, proposal.path or '')
    if proposal.uri then
      bufnr = vim.uri_to_bufnr(proposal.uri)
      vim.fn.bufload(bufnr)
      vim.bo[bufnr].buflisted = true
    end
    vim.cmd('tab sbuffer ' .. bufnr)
    vim.cmd('diffthis')
    local existing = vim.fn.bufnr('^' .. vim.pesc(name) .. '$')
    vim.cmd('rightbelow vnew')
    local right = api.nvim_get_current_buf()
    if existing ~= -1 then
      api.nvim_win_set_buf(0, existing)
      pcall(api.nvim_buf_delete, right, { force = true })
      right = existing
    else
      api.nvim_buf_set_name(right, name)
    end
    vim.bo[right].buftype = 'nofile'
    vim.bo[right].bufhidden = 'wipe'
    vim.bo[right].swapfile = false
    vim.bo[right].filetype = vim.bo[bufnr].filetype
    vim.b[right].tether_proposal = proposal_id
    vim.b[right].tether_source = bufnr
    fill(right, { id = proposal_id, source = bufnr, spans = spans, hunks = proposal.hunks or {} }, lines)
    vim.cmd('diffthis')
    -- 'winbar' is a statusline expression: a literal % is written %%.
    vim.wo.winbar = string.format(
      ' proposed by tether (%s): :AgentAccept / :AgentReject the hunk under the cursor, %%%% for all',
      proposal_id
    )
    api.nvim_create_autocmd('BufWipeout', {
      buffer = right,
      once = true,
      callback = function()
        M.tabs[right] = nil
      end,
    })
  end)
end

--- The hunk under 1-based `lnum` in a right-hand diff buffer.
---@return string? proposal_id, table? hunk
function M.hunk_at(right, lnum)
  local data = M.tabs[right]
  if not data then
    return nil, nil
  end
  for _, h in ipairs(data.hunks) do
    local span = data.spans[h.index]
    if span and lnum >= span.first and lnum <= span.last then
      return data.id, h
    end
  end
  return data.id, nil
end

--- After a refresh: rebuild the right side of every open diff tab from the fresh proposals.
---@param proposals table[]
function M.on_proposals(proposals)
  for right, data in pairs(M.tabs) do
    if api.nvim_buf_is_valid(right) then
      for _, p in ipairs(proposals) do
        if p.id == data.id then
          require('tether.lsp').exec('tether.proposal', { id = data.id }, { bufnr = data.source }, function(err, res)
            if not err and api.nvim_buf_is_valid(right) then
              local lines, spans = M.view(res.proposedContent or '', (res.proposal or {}).hunks)
              local win = vim.fn.bufwinid(right)
              if win ~= -1 then
                api.nvim_win_call(win, function()
                  fill(
                    right,
                    { id = data.id, source = data.source, spans = spans, hunks = (res.proposal or {}).hunks or {} },
                    lines
                  )
                end)
              else
                fill(
                  right,
                  { id = data.id, source = data.source, spans = spans, hunks = (res.proposal or {}).hunks or {} },
                  lines
                )
              end
            end
          end)
        end
      end
    else
      M.tabs[right] = nil
    end
  end
end

return M

